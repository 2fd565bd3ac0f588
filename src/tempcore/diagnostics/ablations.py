"""TVBench's time and vision ablations as findings: the ablation table, answer agreement between
conditions, and (from :mod:`tempcore.diagnostics.ordering`) per-sample order sensitivity (TVBench,
"Lost in Time"; the order sensitivity per sample is ours, beyond the papers).

Pure, vectorised functions over the tidy predictions table (pyarrow + numpy; see
:mod:`tempcore.tidy.table`), arranged by :func:`tempcore.diagnostics.ablation_arrays.prepare` (which
also states the rows used). A *condition* is a ``strategy`` of the table: the video condition (a
base strategy, default ``uniform``) and the ablations ``textonly`` (no image at all), ``noframe``
(grey images), ``single`` (one random frame), ``shuffled`` and ``reversed`` (the base strategy's
frames reordered). Correctness is the paper's 0/1 ``correct`` (a parse failure is wrong).

Definitions, to the letter of the paper where it has one (each in full in the docstring of the
function that implements it):

* **Accuracy** per model x benchmark x task x condition with a Wilson interval, the **drop** from
  video with a paired bootstrap interval, and the **benchmark average** the way TVBench reports it
  (the unweighted mean over tasks), with ``micro``, ``chance`` and ``gain``: :func:`ablation_table`.
* **Answer agreement** of two conditions for one model (the paper's undefined "agreement between
  the correct responses", by its *inferred definition*, with ``symmetric``, ``same_option`` and
  Cohen's ``kappa`` beside it): :func:`agreement`, :func:`agreement_measures`.
* **Order sensitivity** (ours): :func:`tempcore.diagnostics.ordering.order_sensitivity`.

:func:`audit_ablations` is all of ``tempcore audit ablations``; :func:`result_tables` its sections
as the report renders them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.diagnostics.ablation_arrays import (  # noqa: F401  (importable from here as before the split)
    _BUILT_IN_CONDITIONS,
    ABLATIONS,
    REORDERINGS,
    Prepared,
    _prepare_by_chunk,
    _strategies_canonical,
    encode,
    prepare,
)
from tempcore.diagnostics.kernel import cpu_count as _cpu_count
from tempcore.diagnostics.ordering import OrderSensitivity, order_sensitivity, taxonomy_of
from tempcore.diagnostics.stats import DEFAULT_BOOTSTRAP, wilson_interval
from tempcore.diagnostics.table import DiagnosticsError

if TYPE_CHECKING:
    import pyarrow as pa

    from tempcore.diagnostics.table import EncodedPredictions


def _num(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x




# --- the ablation table -----------------------------------------------------------------------


def _bootstrap_from_counts(counts: np.ndarray, values: np.ndarray, n_boot: int, confidence: float,
                           seed: int) -> tuple[float, float, float]:
    """Exactly :func:`tempcore.diagnostics.stats.bootstrap_mean` of a sample holding ``counts[j]``
    copies of ``values[j]`` (same seed, same draws), without materialising the sample."""
    estimate, means = _bootstrap_means(counts, values, n_boot, seed)
    if means is None:
        return math.nan, math.nan, math.nan
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return estimate, float(low), float(high)


def _bootstrap_means(counts: np.ndarray, values: np.ndarray, n_boot: int,
                     seed: int) -> tuple[float, np.ndarray | None]:
    """The estimate and the ``n_boot`` resampled means of :func:`_bootstrap_from_counts` (``None``
    for an empty sample); the quantiles of many such rows are taken in one call by the caller."""
    present = counts > 0
    distinct, cnt = values[present], counts[present]
    n = int(cnt.sum())
    if n == 0:
        return math.nan, None
    estimate = float((distinct * cnt).sum() / n)
    rng = np.random.default_rng(seed)
    if distinct.size == 1:
        means = np.full(n_boot, distinct[0])
    else:
        draws = rng.multinomial(n, cnt / n, size=n_boot)
        means = draws @ distinct / n
    return estimate, means


def _bootstrap_block(part: Sequence[np.ndarray], values: np.ndarray, n_boot: int, confidence: float,
                     seed: int) -> list[tuple[float, float, float]]:
    """:func:`_bootstrap_from_counts` of each of ``part`` (the same numbers: every row draws from its
    own ``default_rng(seed)``, and the quantiles of the block are taken in one call, the same linear
    interpolation along each row as one call per row)."""
    alpha = (1.0 - confidence) / 2.0
    drawn = [_bootstrap_means(c, values, n_boot, seed) for c in part]
    means = [m for _, m in drawn if m is not None]
    qs = np.quantile(np.stack(means), [alpha, 1.0 - alpha], axis=1).tolist() if means else [[], []]
    out, at = [], 0
    for est, m in drawn:
        if m is None:
            out.append((est, math.nan, math.nan))
        else:
            out.append((est, qs[0][at], qs[1][at]))
            at += 1
    return out


def _bootstrap_start(counts: Sequence[np.ndarray], values: np.ndarray, n_boot: int, confidence: float,
                     seed: int) -> Callable[[], list[tuple[float, float, float]]]:
    """Start :func:`_bootstrap_block` over ``counts`` and return the function that waits for its
    results (in the order of ``counts``). With more than one CPU and enough rows, blocks of rows run
    in background threads (numpy's multinomial draws and partitions release the GIL) while the
    caller goes on with the other analyses; the numbers do not depend on the split."""
    workers = min(len(counts) // 32, _cpu_count() - 1, 4)  # the caller keeps one CPU
    if workers < 1:
        done = _bootstrap_block(counts, values, n_boot, confidence, seed)
        return lambda: done
    from concurrent.futures import ThreadPoolExecutor

    cuts = np.linspace(0, len(counts), workers + 1).astype(int).tolist()
    pool = ThreadPoolExecutor(workers, thread_name_prefix="tempcore-bootstrap")
    futures = [pool.submit(_bootstrap_block, counts[a:b], values, n_boot, confidence, seed)
               for a, b in zip(cuts[:-1], cuts[1:])]
    pool.shutdown(wait=False)
    return lambda: [r for f in futures for r in f.result()]


def _count_runs(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``np.add.reduceat(mask, starts, axis=0)`` of a boolean (rows, columns) array: the True count
    of each run of rows, summed over the bytes as integers (the same counts, without the boolean
    add loop)."""
    return np.add.reduceat(mask.view(np.uint8), starts, axis=0, dtype=np.int64)


def ablation_table(
    prep: Prepared,
    *,
    video: str = "uniform",
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``models`` rows (accuracy, Wilson interval, drop from video with a paired bootstrap
    interval) and the ``averages`` rows (macro, micro, chance, gain).

    * **Accuracy** per model x benchmark x task x condition: correct / n over that condition's
      rows, with a Wilson interval (:func:`tempcore.diagnostics.stats.wilson_interval`).
    * **Drop** from video: ``acc(video) - acc(condition)`` over the samples answered under both (the
      pairs), with a seeded percentile paired bootstrap interval
      (:func:`tempcore.diagnostics.stats.paired_bootstrap`; resampling questions). The video row
      itself has no drop. A positive drop is accuracy lost without the video.
    * **Benchmark average** the way TVBench reports it: the *unweighted mean over tasks* of the task
      accuracies (``macro``, "TVBench Average"); the pooled figure over all questions (``micro``)
      beside it. ``chance`` is the mean of the per-task chance levels (a task's chance level: the
      mean of ``1 / n_options`` over its questions; 33.3% for TVBench; ``None`` when an option count
      is unknown) and ``gain = macro - chance``.
    """
    rows, averages, complete = _ablation_table(prep, video=video, n_boot=n_boot, confidence=confidence, seed=seed)
    complete()
    return rows, averages


def _ablation_table(
    prep: Prepared,
    *,
    video: str,
    n_boot: int,
    confidence: float,
    seed: int,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Callable[[], None]]:
    """:func:`ablation_table` with the drop intervals still being drawn: the rows get them (``drop``,
    ``drop_ci_low``, ``drop_ci_high``) when the returned function is called."""
    conds = prep.conditions
    if video not in conds:
        raise DiagnosticsError(f"the video condition {video!r} is not among the conditions {conds}")
    vi = conds.index(video)
    n_c, n_s, n_m = prep.correct.shape
    benches = prep.benchmarks
    bench_names = sorted(set(benches.tolist()))
    bench_code = np.zeros(n_s, dtype=np.int64)
    for i, b in enumerate(bench_names[1:], 1):  # a few benchmarks: one comparison each
        bench_code[benches == b] = i
    n_t = len(prep.tasks)
    group = bench_code * n_t + prep.task_code  # (S,) benchmark x task
    n_g = len(bench_names) * n_t
    # sums over the samples of each group: samples sorted by group once, then contiguous reduceat
    order = np.argsort(group, kind="stable")
    g_sorted = group[order]
    starts = np.searchsorted(g_sorted, np.arange(n_g))
    nonempty = np.bincount(group, minlength=n_g) > 0
    n = np.zeros((n_c, n_g, n_m), dtype=np.int64)
    correct = np.zeros((n_c, n_g, n_m), dtype=np.int64)
    p_sorted: list[np.ndarray] = []  # per condition, (S, M) in group order: present, right
    r_sorted: list[np.ndarray] = []
    at = starts[nonempty]
    if n_s:
        for ci in range(n_c):
            c_sorted = prep.correct[ci][order]  # one gather per condition (no (C, S, M) mask)
            p_sorted.append(c_sorted == c_sorted)  # present: not NaN
            n[ci][nonempty] = _count_runs(p_sorted[ci], at)
            r_sorted.append(c_sorted > 0.5)  # right (NaN > 0.5 is False: a right answer is a present one)
            correct[ci][nonempty] = _count_runs(r_sorted[ci], at)
    low, high = wilson_interval(correct, n, confidence)
    # chance per (benchmark, task): mean of 1 / n_options over the task's samples (NaN if any unknown)
    inv = 1.0 / prep.n_options
    g_n = np.bincount(group, minlength=n_g)
    g_sum = np.bincount(group, weights=np.nan_to_num(inv, nan=0.0), minlength=n_g)
    g_unknown = np.bincount(group, weights=np.isnan(inv).astype(np.float64), minlength=n_g)
    with np.errstate(invalid="ignore", divide="ignore"):
        chance = np.where((g_n > 0) & (g_unknown == 0), g_sum / np.maximum(g_n, 1), np.nan)
    # drops: counts of the paired differences (-1, 0, 1) per (c, g, m)
    # (correctness is 0 / 1: video - condition is +1 when only the video is right, -1 when only the
    # condition is, 0 otherwise), summed over the group-sorted samples like the accuracies
    diff_values = np.array([-1.0, 0.0, 1.0])
    rows: list[dict[str, Any]] = []
    drop_counts = np.zeros((n_c, n_g, n_m, 3), dtype=np.int64)
    for ci in range(n_c):
        if ci == vi or not n_s:
            continue
        both = p_sorted[ci] & p_sorted[vi]
        only_video = r_sorted[vi] & ~r_sorted[ci] & both
        only_condition = r_sorted[ci] & ~r_sorted[vi] & both
        n_both = _count_runs(both, at)
        n_plus = _count_runs(only_video, at)
        n_minus = _count_runs(only_condition, at)
        drop_counts[ci][nonempty] = np.stack([n_minus, n_both - n_plus - n_minus, n_plus], axis=-1)
    # the resampled means of every drop, then their quantiles in one call (the same numbers as one
    # np.quantile per row: the same linear interpolation along each row)
    has_drop = drop_counts.sum(axis=3) > 0  # never for the video itself
    # the rows with a drop, in the order of the rows below (model, group, condition)
    boot_cells = np.argwhere(has_drop.transpose(2, 1, 0)).tolist()
    finish = _bootstrap_start([drop_counts[ci, gi, mi] for mi, gi, ci in boot_cells], diff_values, n_boot,
                              confidence, seed)
    boot_rows: list[dict[str, Any]] = []
    n_list, c_list = n.tolist(), correct.tolist()
    low_list, high_list = low.tolist(), high.tolist()
    for mi, model in enumerate(prep.models):
        for gi in range(n_g):
            bench, task = bench_names[gi // n_t], prep.tasks[gi % n_t]
            for ci, cname in enumerate(conds):
                nn = n_list[ci][gi][mi]
                if nn == 0:
                    continue
                row = {
                    "model": model, "benchmark": bench, "task": task, "condition": cname,
                    "n": int(nn), "correct": int(c_list[ci][gi][mi]),
                    "accuracy": float(c_list[ci][gi][mi] / nn),
                    "ci_low": _num(low_list[ci][gi][mi]), "ci_high": _num(high_list[ci][gi][mi]),
                    "drop": None, "drop_ci_low": None, "drop_ci_high": None,
                }
                if ci != vi and has_drop[ci, gi, mi]:
                    boot_rows.append(row)
                rows.append(row)

    def complete() -> None:
        for row, (est, lo, hi) in zip(boot_rows, finish(), strict=True):
            row.update(drop=_num(est), drop_ci_low=_num(lo), drop_ci_high=_num(hi))
    averages: list[dict[str, Any]] = []
    for mi, model in enumerate(prep.models):
        for bi, bench in enumerate(bench_names):
            gs = np.arange(bi * n_t, (bi + 1) * n_t)
            for ci, cname in enumerate(conds):
                nn = n[ci, gs, mi]
                used = gs[nn > 0]
                if used.size == 0:
                    continue
                accs = correct[ci, used, mi] / n[ci, used, mi]
                macro = float(accs.mean())
                micro = float(correct[ci, used, mi].sum() / n[ci, used, mi].sum())
                ch = chance[used]
                ch_mean = None if np.isnan(ch).any() else float(ch.mean())
                averages.append({
                    "model": model, "benchmark": bench, "condition": cname, "macro": macro, "micro": micro,
                    "chance": ch_mean, "gain": None if ch_mean is None else macro - ch_mean,
                })
    return rows, averages, complete


# --- answer agreement -------------------------------------------------------------------------


def agreement(prep: Prepared) -> list[dict[str, Any]]:
    """Answer agreement per model and pair of conditions (a before b in ``prep.conditions``), pooled
    over every benchmark of the table: ``conditional``, ``symmetric``, ``same_option``, ``kappa``
    and ``n`` (questions answered under both). Vectorised over models; :func:`agreement_measures`
    is the same for one pair of vectors.

    The paper's "agreement between the correct responses" (e.g. "91.0% between image and video")
    is never defined in its text; the only reading consistent with its own marginals is the
    *inferred definition* ``conditional = |C_b ∩ C_a| / |C_b|`` with ``a`` the video: of the
    questions answered correctly under condition b, the share also answered correctly with the full
    video. Beside it: ``symmetric`` (share of questions with the same correctness), ``same_option``
    (share with the same chosen option; a parse failure matches nothing) and Cohen's ``kappa`` of
    the two 0/1 correctness vectors (``(p_o - p_e) / (1 - p_e)``; undefined, ``None``, when
    ``p_e = 1``). Pairs are taken in the order of the conditions (the video first), so ``a`` is the
    video for every pair involving it.
    """
    out: list[dict[str, Any]] = []
    conds = prep.conditions
    n_c, n_s, n_m = prep.correct.shape
    # every pair's counts at once, as products of 0/1 matrices per model (exact: integer sums below
    # 2**24 in float32, else float64): both[a, b] = P_a.P_b, right under a among both = R_a.P_b
    # (a right answer is a present one), under b = P_a.R_b, under both = R_a.R_b
    ftype = np.float32 if n_s < 2**24 else np.float64
    gram = np.empty((n_m, 2 * n_c, 2 * n_c), dtype=np.int64)
    x = np.empty((2 * n_c, n_s), dtype=ftype)  # one model's 0/1 matrix, P then R, rewritten per model
    for mi in range(n_m):
        c = prep.correct[:, :, mi]
        np.equal(c, c, out=x[:n_c])  # present: not NaN
        np.greater(c, 0.5, out=x[n_c:])  # right
        gram[mi] = np.rint(np.matmul(x, x.T))
    pp, rp, rr = gram[:, :n_c, :n_c], gram[:, n_c:, :n_c], gram[:, n_c:, n_c:]  # (M, C, C)
    for ai in range(len(conds)):
        for bi in range(ai + 1, len(conds)):
            n, n_a, n_b, n_ab = pp[:, ai, bi], rp[:, ai, bi], rp[:, bi, ai], rr[:, ai, bi]
            n_same = n - n_a - n_b + 2 * n_ab  # both right + both wrong
            xa = prep.answer[ai]
            n_opt = ((xa == prep.answer[bi]) & (xa >= 0)).sum(axis=0)  # an option >= 0 under both: both present
            for mi, model in enumerate(prep.models):
                nn = int(n[mi])
                if nn == 0:
                    continue
                pa, pb, po = n_a[mi] / nn, n_b[mi] / nn, n_same[mi] / nn
                pe = pa * pb + (1 - pa) * (1 - pb)
                out.append({
                    "model": model, "a": conds[ai], "b": conds[bi],
                    "conditional": float(n_ab[mi] / n_b[mi]) if n_b[mi] else None,
                    "symmetric": float(po), "same_option": float(n_opt[mi] / nn),
                    "kappa": None if abs(1.0 - pe) < 1e-15 else float((po - pe) / (1.0 - pe)), "n": nn,
                })
    out.sort(key=lambda r: (prep.models.index(str(r["model"])), conds.index(str(r["a"])), conds.index(str(r["b"]))))
    return out


def agreement_measures(ca: np.ndarray, cb: np.ndarray, xa: np.ndarray | None = None,
                       xb: np.ndarray | None = None) -> dict[str, Any]:
    """The agreement measures of two paired 0/1 correctness vectors (and chosen options, -1 = none):
    ``conditional = |C_b ∩ C_a| / |C_b|`` (the inferred definition, see :func:`agreement`),
    ``symmetric``, ``same_option`` and Cohen's ``kappa`` (``None`` when ``p_e = 1``)."""
    ca = np.asarray(ca, dtype=bool)
    cb = np.asarray(cb, dtype=bool)
    n = int(ca.size)
    n_b = int(cb.sum())
    conditional = float((ca & cb).sum() / n_b) if n_b else None
    po = float((ca == cb).mean()) if n else math.nan
    pa, pb = float(ca.mean()) if n else math.nan, float(cb.mean()) if n else math.nan
    pe = pa * pb + (1 - pa) * (1 - pb)
    kappa = None if not n or abs(1.0 - pe) < 1e-15 else (po - pe) / (1.0 - pe)
    same = None
    if xa is not None and xb is not None and n:
        xa, xb = np.asarray(xa), np.asarray(xb)
        same = float(((xa == xb) & (xa >= 0)).mean())
    return {"conditional": conditional, "symmetric": _num(po), "same_option": same, "kappa": _num(kappa), "n": n}


# --- everything of `tempcore audit ablations` -------------------------------------------------


def _audit(
    table: pa.Table | EncodedPredictions,
    *,
    video: str,
    conditions: Sequence[str],
    by: str | None,
    task_of_sample: Mapping[tuple[str, str], Any] | None,
    n_options_of_sample: Mapping[tuple[str, str], int] | None,
    tau: float,
    lam: float,
    n_boot: int,
    confidence: float,
    seed: int,
    filters: Mapping[str, Mapping[str, Any]] | None,
) -> dict[str, Any]:
    """:func:`audit_ablations` with ``order`` still an :class:`OrderSensitivity`."""
    names = [video] + [c for c in conditions if c != video]
    prep = prepare(table, names, by=by, task_of_sample=task_of_sample, n_options_of_sample=n_options_of_sample,
                   filters=filters)
    have = [c for i, c in enumerate(prep.conditions) if c == video or not np.isnan(prep.correct[i]).all()]
    if np.isnan(prep.correct[0]).all():
        raise DiagnosticsError(f"the predictions have no rows of the video condition {video!r}")
    if len(have) < len(prep.conditions):
        keep = [prep.conditions.index(c) for c in have]
        prep = Prepared(prep.enc, have, prep.correct[keep], prep.answer[keep], prep.task_code, prep.tasks,
                        prep.n_options)
    # the drop intervals are drawn (in background threads where there are CPUs) while the other
    # analyses run; complete() waits for them
    rows, averages, complete = _ablation_table(prep, video=video, n_boot=n_boot, confidence=confidence, seed=seed)
    category = taxonomy_of(prep, tau=tau, lam=lam) if any(c in have for c in REORDERINGS) else None
    order = order_sensitivity(prep, video=video, tau=tau, category=category)
    agree = agreement(prep)
    complete()
    return {"models": rows, "averages": averages, "agreement": agree, "order": order}


def audit_ablations(
    table: pa.Table | EncodedPredictions,
    *,
    video: str = "uniform",
    conditions: Sequence[str] = ABLATIONS,
    by: str | None = None,
    task_of_sample: Mapping[tuple[str, str], Any] | None = None,
    n_options_of_sample: Mapping[tuple[str, str], int] | None = None,
    tau: float = 0.15,
    lam: float = 0.5,
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = 0,
    filters: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The JSON object of ``tempcore audit ablations --json``: ``models``, ``averages`` (:func:`ablation_table`),
    ``agreement`` (:func:`agreement`), ``order`` (:func:`~tempcore.diagnostics.ordering.order_sensitivity`).
    Conditions without rows are left out."""
    out = _audit(table, video=video, conditions=conditions, by=by, task_of_sample=task_of_sample,
                 n_options_of_sample=n_options_of_sample, tau=tau, lam=lam, n_boot=n_boot,
                 confidence=confidence, seed=seed, filters=filters)
    out["order"] = out["order"].to_json()
    return out


def audit_ablations_json(
    table: pa.Table | EncodedPredictions,
    *,
    video: str = "uniform",
    conditions: Sequence[str] = ABLATIONS,
    by: str | None = None,
    task_of_sample: Mapping[tuple[str, str], Any] | None = None,
    n_options_of_sample: Mapping[tuple[str, str], int] | None = None,
    tau: float = 0.15,
    lam: float = 0.5,
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = 0,
    filters: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """The text ``tempcore audit ablations --json`` prints: ``json.dumps(audit_ablations(...))``
    byte for byte (the same arguments), with the per-sample order rows written column-wise by
    :meth:`OrderSensitivity.samples_json` instead of one dict per sample."""
    import json

    out = _audit(table, video=video, conditions=conditions, by=by, task_of_sample=task_of_sample,
                 n_options_of_sample=n_options_of_sample, tau=tau, lam=lam, n_boot=n_boot,
                 confidence=confidence, seed=seed, filters=filters)
    order: OrderSensitivity = out.pop("order")
    # json.dumps of an object is "{" + its members "key: value" joined by ", " + "}": the members
    # are written from the data, the order samples last (column-wise), in the order of audit_ablations
    members = [f"{json.dumps(key)}: {json.dumps(value)}" for key, value in out.items()]
    members.append(f'"order": {{"benchmarks": {json.dumps(order.benchmarks)}, "samples": ')
    return order.samples_json("{" + ", ".join(members), "}}")


def result_tables(result: Mapping[str, Any]) -> dict[str, Any]:
    """The sections of an :func:`audit_ablations` result as :class:`~tempcore.diagnostics.accuracy.ResultTable`
    objects (``ablation_table``, ``ablation_averages``, ``answer_agreement``, ``order_sensitivity``), the
    form the report renders; fractions stay fractions (shown as percentages)."""
    from tempcore.diagnostics.accuracy import ResultTable

    order_rows = [{"benchmark": b, **v} for b, v in result["order"]["benchmarks"].items()]
    return {
        "ablation_table": ResultTable(
            "ablation_table", "Accuracy per condition and drop from video (TVBench; paired bootstrap 95% CI)",
            ["model", "benchmark", "task", "condition", "n", "correct", "accuracy", "ci_low", "ci_high", "drop",
             "drop_ci_low", "drop_ci_high"], list(result["models"]),
            percent=("accuracy", "ci_low", "ci_high", "drop", "drop_ci_low", "drop_ci_high")),
        "ablation_averages": ResultTable(
            "ablation_averages", "Benchmark averages: macro (unweighted over tasks, TVBench's), micro, chance, gain",
            ["model", "benchmark", "condition", "macro", "micro", "chance", "gain"], list(result["averages"]),
            percent=("macro", "micro", "chance", "gain")),
        "answer_agreement": ResultTable(
            "answer_agreement", "Answer agreement between conditions",
            ["model", "a", "b", "n", "conditional", "symmetric", "same_option", "kappa"], list(result["agreement"]),
            notes=["conditional = |C_b ∩ C_a| / |C_b|: the inferred definition of TVBench's undefined agreement"],
            percent=("conditional", "symmetric", "same_option")),
        "order_sensitivity": ResultTable(
            "order_sensitivity", "Order-sensitive samples (OS > tau under shuffled or reversed)",
            ["benchmark", "n", "order_sensitive", "order_sensitive_among_temporally_sensitive"], order_rows,
            percent=("order_sensitive", "order_sensitive_among_temporally_sensitive")),
    }


__all__ = [
    "ABLATIONS",
    "REORDERINGS",
    "OrderSensitivity",
    "Prepared",
    "ablation_table",
    "agreement",
    "agreement_measures",
    "audit_ablations",
    "audit_ablations_json",
    "order_sensitivity",
    "prepare",
    "result_tables",
    "taxonomy_of",
]
