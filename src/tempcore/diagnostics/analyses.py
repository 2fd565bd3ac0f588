"""The TempCore paper's analyses (§5–7, appendices B–D), each a pure function returning a table.

Every function takes the tidy predictions table (a pyarrow Table, or an
:class:`~tempcore.diagnostics.EncodedPredictions` to share the encoding across calls) and, where
it needs per-sample scores, the :class:`~tempcore.diagnostics.Diagnosis` from
:func:`tempcore.diagnostics.diagnose`. Each returns a
:class:`~tempcore.diagnostics.accuracy.ResultTable` whose ``rows`` are dicts; accuracies, gaps
and fractions are fractions (``to_text`` shows them as percentages).

Conventions shared by the accuracy comparisons (Tables 1, 12, 17, 18, 20–22):

* Correctness is the paper's 0/1 (``correct``; rotation 0 only). A condition is a strategy, a
  text mode (``None``: any mode, for strategies that ignore scores) and equality filters such as
  ``{"k": 32}``; rows mixing several values of k / encoder / fps / seed / variant are an error
  unless filtered (never silently pooled).
* Window oracle correctness of a (sample, model) is 1 when any window is right (paper §3.2); when
  every observed window is wrong but the model has fewer windows than the most any model has for
  that sample, the cell is missing (a cut-short run is not a miss).
* Per-model rows (``level="model"``) use the samples on which that model has a result under every
  compared condition (paired); ``unpaired`` counts the samples it has under some but not all.
  Model-average rows (``level="mean"``, the paper's "8-model average") use the samples on which
  every model of the benchmark's panel has every condition; the panel is the models (within
  ``models``) with at least one result under each condition for that benchmark. Group rows
  (``level="group"``) average a model's per-benchmark figures over the benchmarks of a group
  (short / long / all) that it has; ``n`` is then the summed sample count and no interval is given.
* Differences ``<b>_minus_<a>`` carry a seeded paired percentile bootstrap interval over samples
  (:func:`tempcore.diagnostics.stats.bootstrap_mean`), ``n_boot`` replicates, same ``seed`` for
  every cell (reruns are identical).

Conventions shared by the per-sample analyses (Tables 2, 7, 14, Figs. 6, 9, 10, human validation):

* Per-sample oracle gap = mean over the models that have both a window-oracle and a uniform result
  for the sample of (oracle correctness - uniform correctness); samples with no such model are
  left out and counted (``meta``). A category's gap is the mean of its samples' gaps (with a
  complete panel this equals the model-averaged accuracy difference).
* Samples are matched to the Diagnosis on (benchmark, sample_id); samples the Diagnosis lacks or
  marks incomplete have no FSS category and are reported as ``incomplete`` rows / counts.
* Positions and coverage (Tables 7, 14) use L, the number of decoded (= scored) frames of the
  sample's video or segment at the run's fps, from the predictions' ``n_frames`` column; a table
  without it is an error naming the column, never a fallback to assumed positions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tempcore.diagnostics.accuracy import ResultTable
from tempcore.diagnostics.core import (
    FSS_CATEGORIES,
    INCOMPLETE,
    fss_categories,
    summarize,
    taxonomy,
)
from tempcore.diagnostics.stats import (
    DEFAULT_BOOTSTRAP,
    bootstrap_mean,
    mann_whitney_greater,
    mean_sd_se,
    point_biserial,
    precision_recall_f1,
    spearman,
)
from tempcore.diagnostics.table import DiagnosticsError, EncodedPredictions

#: The paper's benchmark groups (§4.2): short <= 3 min, long > 5 min. Keys are loader names.
DEFAULT_GROUPS: dict[str, tuple[str, ...]] = {
    "short": ("mvbench", "nextqa", "egoschema"),
    "long": ("mlvu", "longvideobench", "videomme"),
}
#: K/L bin edges of Table 14. The paper names only the "<0.10" bin (and a "highest coverage bin" that
#: only MVBench reaches); the other edges are our choice: [0, .10), [.10, .25), [.25, .50),
#: [.50, 1.00) and [1.00, inf) -- the last holds videos with no more frames than the budget.
DEFAULT_COVERAGE_EDGES: tuple[float, ...] = (0.10, 0.25, 0.50, 1.00)
DEFAULT_TAUS: tuple[float, ...] = (0.0, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.40, 0.50)
DEFAULT_LAMBDAS: tuple[float, ...] = (0.25, 0.375, 0.5, 0.625, 0.75)


class AnalysisError(DiagnosticsError):
    """An analysis cannot run on the given inputs (missing condition, bad ratings file...)."""


# --- conditions and matrices -------------------------------------------------------------------


@dataclass(frozen=True)
class Cond:
    """A condition to compare: strategy, text mode (``None`` = any) and equality filters."""

    strategy: str
    mode: str | None = None
    filters: Mapping[str, Any] = field(default_factory=dict)
    label: str | None = None

    @property
    def name(self) -> str:
        return self.label or self.strategy

    def describe(self) -> str:
        parts = [self.strategy] + ([f"mode={self.mode}"] if self.mode else [])
        parts += [f"{k}={v}" for k, v in self.filters.items() if v is not None]
        return " ".join(parts)


def _encode(table: Any) -> EncodedPredictions:
    return table if isinstance(table, EncodedPredictions) else EncodedPredictions.from_table(table)


def _num(x: Any) -> Any:
    if isinstance(x, (np.floating, float)):
        return None if math.isnan(float(x)) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    return x


def oracle_matrix(enc: EncodedPredictions, mask: np.ndarray) -> np.ndarray:
    """(samples x models) window-oracle correctness from the masked oracle rows (module doc rule)."""
    rows = np.flatnonzero(mask & (enc.rotations() == 0))
    n_s, n_m = enc.n_samples, len(enc.models)
    out = np.full(n_s * n_m, np.nan)
    if rows.size == 0:
        return out.reshape(n_s, n_m)
    correct = enc.table.column("correct").to_numpy(zero_copy_only=False).astype(np.float64)[rows]
    window = enc.table.column("window").to_numpy(zero_copy_only=False).astype(np.float64)[rows]
    window = np.nan_to_num(window, nan=-1.0).astype(np.int64) + 1
    cell = enc.sample_code[rows] * n_m + enc.model_code[rows]
    solved = np.bincount(cell, weights=correct, minlength=n_s * n_m) > 0
    span = int(window.max()) + 1
    pairs = np.unique(cell * span + window)
    n_windows = np.bincount(pairs // span, minlength=n_s * n_m)
    expected = n_windows.reshape(n_s, n_m).max(axis=1)
    has = n_windows > 0
    complete = solved | (n_windows == np.repeat(expected, n_m))
    ok = has & complete
    out[ok] = solved[ok].astype(np.float64)
    return out.reshape(n_s, n_m)


def condition_matrix(enc: EncodedPredictions, cond: Cond) -> np.ndarray:
    """(samples x models) 0/1 correctness under ``cond``; NaN where a model has no result.

    A condition without any row is an :class:`AnalysisError` (a table that cannot be made is
    reported, not returned empty).
    """
    filters = dict(cond.filters)
    mask = enc.rows(cond.strategy, cond.mode, filters)
    enc.check_unambiguous(mask, cond.describe(), filters)
    if not mask.any():
        raise AnalysisError(f"no predictions for condition {cond.describe()!r}")
    if cond.strategy == "oracle":
        return oracle_matrix(enc, mask)
    return enc.values(mask, "hard", cond.describe())


def _bench_rows(enc: EncodedPredictions, benchmarks: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    names = np.array(enc.sample_benchmark, dtype=object)
    out = {}
    for b in sorted(set(enc.sample_benchmark)):
        if benchmarks is None or b in benchmarks:
            out[b] = np.flatnonzero(names == b)
    if benchmarks is not None:
        unknown = sorted(set(benchmarks) - set(out))
        if unknown:
            raise AnalysisError(f"no predictions for benchmark(s) {unknown}; the table has {sorted(set(names))}")
    return out


def _model_columns(enc: EncodedPredictions, models: Sequence[str] | None) -> np.ndarray:
    if models is None:
        return np.arange(len(enc.models))
    unknown = sorted(set(models) - set(enc.models))
    if unknown:
        raise AnalysisError(f"unknown model(s) {unknown}; the predictions have {enc.models}")
    return np.array([j for j, m in enumerate(enc.models) if m in set(models)], dtype=np.int64)


# --- multi-condition accuracy engine ----------------------------------------------------------


def _delta_cols(a: str, b: str) -> list[str]:
    base = f"{b}_minus_{a}"
    return [base, f"{base}_ci_low", f"{base}_ci_high"]


def compare_conditions(
    table: Any,
    conditions: Sequence[Cond],
    comparisons: Sequence[tuple[str, str]] = (),
    *,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    groups: Mapping[str, Sequence[str]] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    confidence: float = 0.95,
    name: str = "compare_conditions",
    title: str = "Accuracy under several conditions",
) -> ResultTable:
    """Accuracy of each model under each condition, per benchmark, with paired differences.

    ``comparisons`` are pairs of condition names ``(a, b)``; each adds ``<b>_minus_<a>`` and its
    bootstrap interval. ``groups`` maps a group name to benchmark names: each adds group-average
    rows (plus ``all`` over every benchmark present). The rules are in the module docstring.
    """
    enc = _encode(table)
    labels = [c.name for c in conditions]
    if len(set(labels)) != len(labels):
        raise AnalysisError(f"condition names must differ: {labels}")
    for a, b in comparisons:
        if a not in labels or b not in labels:
            raise AnalysisError(f"comparison ({a!r}, {b!r}) names an unknown condition; known: {labels}")
    mats = [condition_matrix(enc, c) for c in conditions]
    allowed = _model_columns(enc, models)
    acc_cols = [f"acc_{lab}" for lab in labels]
    rows: list[dict[str, Any]] = []
    for bench, srows in _bench_rows(enc, benchmarks).items():
        sub = [m[srows][:, allowed] for m in mats]  # (samples x allowed models) each
        have = np.stack([~np.isnan(s) for s in sub])  # (conditions, samples, models)
        every = have.all(axis=0)
        some = have.any(axis=0)
        panel = [j for j in range(allowed.size) if have[:, :, j].any(axis=1).all()]
        for j in range(allowed.size):
            keep = every[:, j]
            n = int(keep.sum())
            if n == 0:
                continue
            vals = [s[keep, j] for s in sub]
            row = {"benchmark": bench, "model": enc.models[allowed[j]], "level": "model", "n": n,
                   "unpaired": int((some[:, j] & ~every[:, j]).sum())}
            row.update(_acc_and_deltas(vals, labels, comparisons, n_boot, seed, confidence))
            rows.append(row)
        if panel:
            keep = every[:, panel].all(axis=1)
            n = int(keep.sum())
            if n:
                vals = [s[keep][:, panel].mean(axis=1) for s in sub]
                row = {"benchmark": bench, "model": "mean", "level": "mean", "n": n,
                       "unpaired": int((some[:, panel].any(axis=1) & ~keep).sum()), "n_models": len(panel)}
                row.update(_acc_and_deltas(vals, labels, comparisons, n_boot, seed, confidence))
                rows.append(row)
    value_cols = acc_cols + [c for a, b in comparisons for c in _delta_cols(a, b)]
    if groups is not None:
        rows += _group_rows(rows, groups, acc_cols + [_delta_cols(a, b)[0] for a, b in comparisons])
    columns = ["benchmark", "model", "level", "n", "unpaired", "n_models", *value_cols]
    for r in rows:
        r.setdefault("n_models", 1 if r["level"] == "model" else r.get("n_models"))
    notes = [f"{lab}: {c.describe()}" for lab, c in zip(labels, conditions)]
    if comparisons:
        notes.append(
            f"differences: paired percentile bootstrap over samples, {confidence:.0%}, {n_boot} replicates, seed {seed}"
        )
    return ResultTable(name=name, title=title, columns=columns, rows=rows, notes=notes, percent=tuple(value_cols),
                       meta={"conditions": {lab: c.describe() for lab, c in zip(labels, conditions)}})


def _acc_and_deltas(
    vals: list[np.ndarray],
    labels: list[str],
    comparisons: Sequence[tuple[str, str]],
    n_boot: int,
    seed: int,
    confidence: float,
) -> dict[str, Any]:
    out: dict[str, Any] = {f"acc_{lab}": float(v.mean()) for lab, v in zip(labels, vals)}
    index = {lab: i for i, lab in enumerate(labels)}
    for a, b in comparisons:
        res = bootstrap_mean(vals[index[b]] - vals[index[a]], n_boot=n_boot, confidence=confidence, seed=seed)
        names = _delta_cols(a, b)
        out.update({names[0]: res.estimate, names[1]: res.low, names[2]: res.high})
    return out


def _group_rows(
    rows: list[dict[str, Any]], groups: Mapping[str, Sequence[str]], value_cols: list[str]
) -> list[dict[str, Any]]:
    benches = sorted({r["benchmark"] for r in rows})
    all_groups = {**{g: tuple(b) for g, b in groups.items()}, "all": tuple(benches)}
    out = []
    models = []
    for r in rows:
        if r["model"] not in models:
            models.append(r["model"])
    for model in models:
        for gname, members in all_groups.items():
            mine = [r for r in rows if r["model"] == model and r["benchmark"] in members]
            if not mine:
                continue
            row: dict[str, Any] = {"benchmark": gname, "model": model, "level": "group",
                                   "n": sum(r["n"] for r in mine), "unpaired": sum(r["unpaired"] for r in mine),
                                   "n_benchmarks": len(mine)}
            for c in value_cols:
                vals = [r[c] for r in mine if r.get(c) is not None]
                row[c] = float(np.mean(vals)) if vals else None
            out.append(row)
    return out


# --- §5: does frame selection work? ------------------------------------------------------------


def _distinct(enc: EncodedPredictions, mask: np.ndarray, column: str) -> list[Any]:
    """The distinct non-null values of ``column`` among the masked rows, sorted."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if column not in enc.table.column_names:
        return []
    col = enc.table.column(column).take(pa.array(np.flatnonzero(mask)))
    return sorted(pc.unique(col).drop_null().to_pylist(), key=lambda v: (str(type(v)), v))


def shared_k(
    enc: EncodedPredictions, strategy: str, modes: Sequence[str], filters: Mapping[str, Any]
) -> int | None:
    """The one frame budget K shared by the ``strategy`` rows of every mode in ``modes``.

    The paper compares conditions at its one K (K = 32 throughout, §4.1; the K ablation of Table 12
    is Q-mode MaxProb only). On a table that also holds a K ablation the K of the comparison is
    the one K that every compared mode has; several shared K, or none, is an :class:`AnalysisError`
    listing the K values of each mode (choose one with ``filters={"k": ...}`` / ``--k``). ``None``
    when a mode has no such rows at all (the comparison then reports the missing condition).
    """
    per_mode = {m: _distinct(enc, enc.rows(strategy, m, filters), "k") for m in modes}
    if not all(per_mode.values()):
        return None
    common = sorted(set.intersection(*(set(v) for v in per_mode.values()))) if per_mode else []
    have = "; ".join(f"{m}-mode has K {v}" for m, v in per_mode.items())
    if len(common) == 1:
        return int(common[0])
    if not common:
        raise AnalysisError(f"{strategy}: no frame budget K is shared by the {'/'.join(modes)}-mode rows ({have})")
    raise AnalysisError(
        f"{strategy}: the {'/'.join(modes)}-mode rows share several K {common} ({have}); choose one "
        f"(e.g. --k {32 if 32 in common else common[0]})"
    )


def q_vs_qa_maxprob(
    table: Any,
    *,
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    groups: Mapping[str, Sequence[str]] | None = DEFAULT_GROUPS,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Tables 1 and 20: MaxProb accuracy with Q-mode vs QA-mode frame scoring, per model and benchmark.

    ``qa_minus_q`` is the paper's Delta = QA-mode - Q-mode. Model-average rows give Table 1,
    per-model rows Table 20. ``filters`` pins e.g. ``{"k": 32, "encoder": "siglip2"}``.

    K: both modes at the same frame budget, the paper's one K. Unless ``filters`` pins ``k``, the
    K is the one shared by the Q- and the QA-mode MaxProb rows (:func:`shared_k`), so a table that
    also holds a Q-mode K ablation (Table 12) still gives this table; several shared K, or none,
    is an error listing each mode's K. The K used and how it was chosen are in the notes and in
    ``meta["k"]`` / ``meta["k_choice"]`` (``"given"`` or ``"shared"``).
    """
    enc = _encode(table)
    f = dict(filters or {})
    if f.get("k") is None:
        f["k"] = shared_k(enc, "maxprob", ("q", "qa"), f)
        how = "shared"
        note = f"K = {f['k']}: the frame budget shared by the Q- and QA-mode MaxProb rows"
        if f["k"] is None:
            del f["k"]
    else:
        how = "given"
        note = f"K = {f['k']} (given)"
    res = compare_conditions(
        enc, [Cond("maxprob", "q", f, "q"), Cond("maxprob", "qa", f, "qa")], [("q", "qa")],
        models=models, benchmarks=benchmarks, groups=groups, n_boot=n_boot, seed=seed,
        name="q_vs_qa_maxprob", title="MaxProb accuracy, Q-mode vs QA-mode (Tables 1, 20)",
    )
    res.notes.insert(0, note)
    res.meta.update(k=f["k"], k_choice=how)
    return res


def maxprob_vs_minprob(
    table: Any,
    *,
    mode: str = "qa",
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    groups: Mapping[str, Sequence[str]] | None = DEFAULT_GROUPS,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Fig. 2 and Table 21: MaxProb vs MinProb accuracy per model, with short / long averages.

    ``maxprob_minus_minprob`` per model and benchmark; ``level="group"`` rows average it over the
    short and long benchmark groups (default: the paper's §4.2 split, configurable) and over all.
    Model-average rows per benchmark are Fig. 2's bars. Text mode QA by default (the paper's
    default scoring mode).
    """
    f = dict(filters or {})
    return compare_conditions(
        table, [Cond("maxprob", mode, f), Cond("minprob", mode, f)], [("minprob", "maxprob")],
        models=models, benchmarks=benchmarks, groups=groups, n_boot=n_boot, seed=seed,
        name="maxprob_vs_minprob", title=f"MaxProb vs MinProb accuracy, {mode}-mode (Fig. 2, Table 21)",
    )


def uniform_vs_oracle(
    table: Any,
    *,
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    groups: Mapping[str, Sequence[str]] | None = DEFAULT_GROUPS,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Table 22 (and Fig. 3): uniform-sampling vs window-oracle accuracy; ``oracle_minus_uniform`` is the gap.

    Both on the samples that have both results (per model; all panel models for the mean row).
    """
    f = dict(filters or {})
    return compare_conditions(
        table, [Cond("uniform", None, f), Cond("oracle", None, f)], [("uniform", "oracle")],
        models=models, benchmarks=benchmarks, groups=groups, n_boot=n_boot, seed=seed,
        name="uniform_vs_oracle", title="Uniform vs window-oracle accuracy (Table 22, Fig. 3)",
    )


def strategy_baselines(
    table: Any,
    *,
    mode: str = "qa",
    strategies: Sequence[str] = ("maxprob", "random", "uniform", "minprob"),
    comparisons: Sequence[tuple[str, str]] = (("random", "maxprob"), ("minprob", "random")),
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Table 17: MaxProb, Random, Uniform and MinProb accuracy on the samples complete under all four.

    ``mode`` applies to the score-based strategies (maxprob, minprob); the others ignore scores.
    Default differences: MaxProb - Random and Random - MinProb, the paper's two claims.
    """
    f = dict(filters or {})
    conds = [Cond(s, mode if s in ("maxprob", "minprob") else None, f) for s in strategies]
    return compare_conditions(
        table, conds, comparisons, models=models, benchmarks=benchmarks, groups=None, n_boot=n_boot,
        seed=seed, name="strategy_baselines", title="Random and Uniform baselines (Table 17)",
    )


def accuracy_by_setting(
    table: Any,
    column: str,
    *,
    strategy: str = "maxprob",
    mode: str | None = "q",
    values: Sequence[Any] | None = None,
    reference: Any = None,
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    name: str = "accuracy_by_setting",
    title: str | None = None,
) -> ResultTable:
    """Accuracy of one strategy across the values of a condition column (k, encoder, fps...).

    ``values`` default to every value the strategy's rows take; ``reference`` (default: the
    first value) is compared with each other value (``<value>_minus_<reference>`` columns, labels
    ``<column>=<value>``). Samples: those complete under every value (module doc).
    """
    enc = _encode(table)
    if column not in enc.table.column_names:
        raise AnalysisError(f"the predictions have no {column!r} column")
    if values is None:
        import pyarrow as pa
        import pyarrow.compute as pc

        mask = enc.rows(strategy, mode, filters)
        col = enc.table.column(column).take(pa.array(np.flatnonzero(mask)))
        values = sorted(pc.unique(col).drop_null().to_pylist(), key=lambda v: (str(type(v)), v))
    values = list(values)
    if not values:
        raise AnalysisError(f"no {strategy} rows" + (f" in {mode}-mode" if mode else "") + f" with a {column}")
    ref = values[0] if reference is None else reference
    if ref not in values:
        raise AnalysisError(f"reference {column}={ref!r} is not among the values {values}")
    base = dict(filters or {})
    conds = [Cond(strategy, mode, {**base, column: v}, f"{column}={v}") for v in values]
    comps = [(f"{column}={ref}", f"{column}={v}") for v in values if v != ref]
    return compare_conditions(
        table if isinstance(table, EncodedPredictions) else enc, conds, comps, models=models,
        benchmarks=benchmarks, groups=None, n_boot=n_boot, seed=seed, name=name,
        title=title or f"{strategy} accuracy by {column}",
    )


def k_ablation(
    table: Any,
    *,
    strategy: str = "maxprob",
    mode: str = "q",
    ks: Sequence[int] | None = None,
    reference_k: int | None = 32,
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Table 12: MaxProb (Q-mode) accuracy across frame budgets K, differences against K = 32.

    When the table has no rows with ``reference_k`` the smallest K is the reference.
    """
    enc = _encode(table)
    if ks is None:
        import pyarrow as pa
        import pyarrow.compute as pc

        mask = enc.rows(strategy, mode, filters)
        ks = sorted(pc.unique(enc.table.column("k").take(pa.array(np.flatnonzero(mask)))).drop_null().to_pylist())
    ks = sorted(ks)
    ref = reference_k if reference_k in ks else (ks[0] if ks else None)
    return accuracy_by_setting(
        enc, "k", strategy=strategy, mode=mode, values=ks, reference=ref, filters=filters, models=models,
        benchmarks=benchmarks, n_boot=n_boot, seed=seed, name="k_ablation",
        title=f"{strategy} accuracy ({mode}-mode) by frame budget K (Table 12)",
    )


def encoder_comparison(
    table: Any,
    *,
    strategy: str = "maxprob",
    mode: str = "q",
    encoders: Sequence[str] | None = None,
    reference: str | None = None,
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Table 18: MaxProb (Q-mode) accuracy with each frame-text encoder, differences against ``reference``."""
    return accuracy_by_setting(
        table, "encoder", strategy=strategy, mode=mode, values=encoders, reference=reference, filters=filters,
        models=models, benchmarks=benchmarks, n_boot=n_boot, seed=seed, name="encoder_comparison",
        title=f"{strategy} accuracy ({mode}-mode) by encoder (Table 18)",
    )


# --- per-sample oracle gaps (Table 2, Figs. 6, 9, 10) and window centroids (Table 7) ----------


def _diagnosis_index(enc: EncodedPredictions, diagnosis: Any) -> np.ndarray:
    """For each encoded sample, its index in ``diagnosis`` (-1 when the diagnosis lacks it)."""
    pos = {(str(b), str(s)): i for i, (b, s) in enumerate(zip(diagnosis.benchmark, diagnosis.sample_id))}
    return np.array([pos.get((b, s), -1) for b, s in zip(enc.sample_benchmark, enc.sample_id)], dtype=np.int64)


def _aligned(enc: EncodedPredictions, diagnosis: Any) -> tuple[np.ndarray, np.ndarray]:
    """(FSS, FSS category) per encoded sample; missing from the diagnosis -> NaN / incomplete."""
    idx = _diagnosis_index(enc, diagnosis)
    found = idx >= 0
    f = np.full(enc.n_samples, np.nan)
    cat = np.full(enc.n_samples, INCOMPLETE, dtype=object)
    f[found] = np.asarray(diagnosis.fss, dtype=np.float64)[idx[found]]
    cat[found] = np.asarray(diagnosis.fss_category, dtype=object)[idx[found]]
    return f, cat


@dataclass
class SampleGaps:
    """Per-sample oracle gaps (samples with at least one model having both results)."""

    benchmark: np.ndarray
    sample_id: np.ndarray
    fss: np.ndarray
    fss_category: np.ndarray
    gap: np.ndarray
    uniform: np.ndarray
    oracle: np.ndarray
    n_models: np.ndarray
    excluded: dict[str, int]


def sample_oracle_gaps(
    table: Any,
    diagnosis: Any,
    *,
    uniform: Cond | None = None,
    oracle: Cond | None = None,
    models: Sequence[str] | None = None,
) -> SampleGaps:
    """Per-sample oracle gap (module doc), with the sample's FSS and FSS category."""
    enc = _encode(table)
    u = condition_matrix(enc, uniform or Cond("uniform"))
    o = condition_matrix(enc, oracle or Cond("oracle"))
    cols = _model_columns(enc, models)
    u, o = u[:, cols], o[:, cols]
    both = ~np.isnan(u) & ~np.isnan(o)
    n_models = both.sum(axis=1)
    keep = n_models > 0
    with np.errstate(invalid="ignore"):
        um = np.where(both, u, 0.0).sum(axis=1) / np.maximum(n_models, 1)
        om = np.where(both, o, 0.0).sum(axis=1) / np.maximum(n_models, 1)
    f, cat = _aligned(enc, diagnosis)
    bench = np.array(enc.sample_benchmark, dtype=object)
    excluded: dict[str, int] = {}
    for b in np.unique(bench[~keep]):
        excluded[str(b)] = int(((bench == b) & ~keep).sum())
    return SampleGaps(
        benchmark=bench[keep], sample_id=np.array(enc.sample_id, dtype=object)[keep], fss=f[keep],
        fss_category=cat[keep], gap=(om - um)[keep], uniform=um[keep], oracle=om[keep],
        n_models=n_models[keep], excluded=excluded,
    )


def oracle_gap_per_sample(table: Any, diagnosis: Any, **kwargs: Any) -> ResultTable:
    """Per-sample rows (benchmark, sample_id, fss, abs_fss, fss_category, gap, n_models): Fig. 10's scatter."""
    g = sample_oracle_gaps(table, diagnosis, **kwargs)
    rows = [
        {"benchmark": str(b), "sample_id": str(s), "fss": _num(f), "abs_fss": _num(abs(f)), "fss_category": str(c),
         "gap": float(x), "n_models": int(n)}
        for b, s, f, c, x, n in zip(g.benchmark, g.sample_id, g.fss, g.fss_category, g.gap, g.n_models)
    ]
    return ResultTable("oracle_gap_per_sample", "Per-sample oracle gap (Fig. 10 scatter)",
                       ["benchmark", "sample_id", "fss", "abs_fss", "fss_category", "gap", "n_models"], rows,
                       percent=("gap",), meta={"excluded_no_pair": g.excluded})


def oracle_gap_by_fss_category(
    table: Any,
    diagnosis: Any,
    *,
    uniform: Cond | None = None,
    oracle: Cond | None = None,
    models: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Table 2: oracle gap (oracle - uniform) per benchmark and FSS category, on samples with both results.

    Rows per benchmark for ``key``, ``non_key``, ``anti_key``, ``all`` (the complete ones) and, if
    any, ``incomplete`` (samples without an FSS); ``gap`` with a bootstrap interval over samples.
    """
    g = sample_oracle_gaps(table, diagnosis, uniform=uniform, oracle=oracle, models=models)
    rows = []
    for bench in sorted(set(g.benchmark)):
        in_b = g.benchmark == bench
        for cat in (*FSS_CATEGORIES, "all", INCOMPLETE):
            if cat == "all":
                sel = in_b & (g.fss_category != INCOMPLETE)
            else:
                sel = in_b & (g.fss_category == cat)
            n = int(sel.sum())
            if n == 0:
                continue
            res = bootstrap_mean(g.gap[sel], n_boot=n_boot, seed=seed)
            rows.append({"benchmark": bench, "fss_category": cat, "n": n,
                         "acc_uniform": float(g.uniform[sel].mean()), "acc_oracle": float(g.oracle[sel].mean()),
                         "gap": res.estimate, "gap_ci_low": res.low, "gap_ci_high": res.high})
    return ResultTable(
        "oracle_gap_by_fss_category", "Oracle gap by FSS category (Table 2)",
        ["benchmark", "fss_category", "n", "acc_uniform", "acc_oracle", "gap", "gap_ci_low", "gap_ci_high"], rows,
        notes=["gap = mean over samples of (model-mean oracle correctness - model-mean uniform correctness)"],
        percent=("acc_uniform", "acc_oracle", "gap", "gap_ci_low", "gap_ci_high"),
        meta={"excluded_no_pair": g.excluded},
    )


def _quantise(values: np.ndarray, width: float | None) -> np.ndarray:
    if width is None:
        return np.round(values, 9)
    if width <= 0:
        raise AnalysisError(f"bin width must be positive, not {width!r}")
    return np.round(np.round(values / width) * width, 9)


def oracle_gap_by_fss_bin(
    table: Any,
    diagnosis: Any,
    *,
    bin_width: float | None = None,
    min_samples: int = 5,
    uniform: Cond | None = None,
    oracle: Cond | None = None,
    models: Sequence[str] | None = None,
) -> ResultTable:
    """Figs. 6 and 9: mean oracle gap per quantised FSS value (the U-shape).

    Bins: with ``bin_width=None`` every distinct FSS value is a bin — with 0/1 scoring FSS takes
    the values k/|M|, the paper's quantisation; with soft scores pass a width (a bin is centred on
    a multiple of it). Per benchmark, bins with fewer than ``min_samples`` samples are omitted
    (Fig. 9). Rows with ``benchmark="all"`` are Fig. 6: per bin, the mean over benchmarks of the
    per-benchmark means (``gap``) and their standard deviation across benchmarks (``gap_sd``,
    population SD, the shaded band), over the benchmarks that keep the bin.
    """
    g = sample_oracle_gaps(table, diagnosis, uniform=uniform, oracle=oracle, models=models)
    ok = ~np.isnan(g.fss)
    bins = np.full(g.fss.shape, np.nan)
    bins[ok] = _quantise(g.fss[ok], bin_width)
    rows = []
    per_bin: dict[float, list[float]] = {}
    per_bin_n: dict[float, int] = {}
    omitted = 0
    for bench in sorted(set(g.benchmark)):
        sel = (g.benchmark == bench) & ok
        for value in np.unique(bins[sel]):
            in_bin = sel & (bins == value)
            n = int(in_bin.sum())
            if n < min_samples:
                omitted += 1
                continue
            mean = float(g.gap[in_bin].mean())
            rows.append({"benchmark": bench, "fss_bin": float(value), "n": n, "gap": mean, "gap_sd": None,
                         "n_benchmarks": 1})
            per_bin.setdefault(float(value), []).append(mean)
            per_bin_n[float(value)] = per_bin_n.get(float(value), 0) + n
    for value in sorted(per_bin):
        means = np.array(per_bin[value])
        rows.append({"benchmark": "all", "fss_bin": value, "n": per_bin_n[value], "gap": float(means.mean()),
                     "gap_sd": float(means.std()), "n_benchmarks": int(means.size)})
    return ResultTable(
        "oracle_gap_by_fss_bin", "Oracle gap by FSS bin (Figs. 6, 9)",
        ["benchmark", "fss_bin", "n", "gap", "gap_sd", "n_benchmarks"], rows,
        notes=[f"bins with fewer than {min_samples} samples omitted ({omitted} per-benchmark bin(s))"],
        percent=("gap", "gap_sd"), meta={"excluded_no_pair": g.excluded, "omitted_bins": omitted},
    )


def oracle_gap_vs_abs_fss(
    table: Any,
    diagnosis: Any,
    *,
    n_bins: int = 10,
    min_samples: int = 1,
    uniform: Cond | None = None,
    oracle: Cond | None = None,
    models: Sequence[str] | None = None,
) -> ResultTable:
    """Fig. 10: binned means of the per-sample oracle gap against |FSS|.

    ``n_bins`` equal-width bins over [0, 1] (the last one closed), per benchmark and pooled
    (``benchmark="all"``: every sample of every benchmark, as the scatter pools them). The Spearman
    correlation of |FSS| and gap per benchmark and pooled is in ``meta["spearman"]``.
    """
    if n_bins < 1:
        raise AnalysisError(f"n_bins must be positive, not {n_bins!r}")
    g = sample_oracle_gaps(table, diagnosis, uniform=uniform, oracle=oracle, models=models)
    ok = ~np.isnan(g.fss)
    a = np.abs(g.fss)
    idx = np.full(a.shape, -1, dtype=np.int64)
    idx[ok] = np.minimum((a[ok] * n_bins + 1e-9).astype(np.int64), n_bins - 1)
    rows = []
    rho: dict[str, dict[str, Any]] = {}
    for bench in [*sorted(set(g.benchmark)), "all"]:
        sel = ok & ((g.benchmark == bench) if bench != "all" else True)
        r, p = spearman(a[sel], g.gap[sel])
        rho[bench] = {"rho": _num(r), "p": _num(p), "n": int(sel.sum())}
        for b in range(n_bins):
            in_bin = sel & (idx == b)
            n = int(in_bin.sum())
            if n < max(min_samples, 1):
                continue
            rows.append({"benchmark": bench, "bin_low": b / n_bins, "bin_high": (b + 1) / n_bins, "n": n,
                         "mean_abs_fss": float(a[in_bin].mean()), "gap": float(g.gap[in_bin].mean())})
    return ResultTable(
        "oracle_gap_vs_abs_fss", "Oracle gap against |FSS|, binned means (Fig. 10)",
        ["benchmark", "bin_low", "bin_high", "n", "mean_abs_fss", "gap"], rows, percent=("gap",),
        meta={"spearman": rho, "excluded_no_pair": g.excluded},
    )


#: How :func:`correct_window_centroids` learns a sample's length L (see its docstring).
CENTROID_LENGTHS = ("n_frames", "oracle_windows")


def _json_indices(text: Any) -> list[int] | None:
    import json

    if text is None:
        return None
    try:
        values = json.loads(text) if isinstance(text, str) else list(text)
    except (TypeError, ValueError):
        return None
    if not isinstance(values, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return None
    return values


def _index_stats(column: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of a ``frame_indices`` column (JSON lists of ints): (mean, min, max, known).

    Vectorised (pyarrow string kernels + numpy reduceat); a null, empty or malformed list is
    not ``known``. Falls back to parsing row by row only when the fast path meets a malformed one.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks else pa.array([], type=pa.string())
    n = len(column)
    mean, lo, hi = np.full(n, np.nan), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    known = np.zeros(n, dtype=bool)
    if n == 0:
        return mean, lo, hi, known
    try:
        text = pc.utf8_trim(column.cast(pa.string()), " []")
        ok = pc.fill_null(pc.greater(pc.utf8_length(text), 0), False).to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(ok)
        if rows.size:
            parts = pc.split_pattern(text.take(pa.array(rows)), ",")
            lens = pc.list_value_length(parts).to_numpy(zero_copy_only=False).astype(np.int64)
            flat = pc.utf8_trim_whitespace(pc.list_flatten(parts))
            vals = flat.cast(pa.int64()).to_numpy(zero_copy_only=False)
            starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
            mean[rows] = np.add.reduceat(vals, starts) / lens
            lo[rows] = np.minimum.reduceat(vals, starts)
            hi[rows] = np.maximum.reduceat(vals, starts)
            known[rows] = True
        return mean, lo, hi, known
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        for i, t in enumerate(column.to_pylist()):
            idx = _json_indices(t)
            if idx:
                mean[i], lo[i], hi[i], known[i] = float(np.mean(idx)), min(idx), max(idx), True
        return mean, lo, hi, known


def correct_window_centroids(
    table: Any,
    diagnosis: Any,
    *,
    oracle: Cond | None = None,
    models: Sequence[str] | None = None,
    n_frames: Mapping[Any, int] | None = None,
    length: str = "n_frames",
) -> ResultTable:
    """Table 7: where in the video the correctly answered oracle windows sit, by FSS category.

    The paper: "Distribution of correct-window centroids across video thirds (Begin: [0,1/3),
    Middle: [1/3,2/3), End: [2/3,1]). Std is the standard deviation of centroid position". So
    positions are positions in the video (or the sample's segment), from the frames each window
    row really showed (``frame_indices``), never from the window's rank among the windows (the
    window layout starts at frame 0, aligns the last window to the end and subsamples between,
    so ranks are not evenly spaced positions). Choices:

    * Frame i of a video of L decoded frames sits at ``(i + 0.5) / L``, the centre of its 1/L
      slot (so L equal windows tiling the video have centres ``(w + 0.5) / W``). A window's
      position is the mean position of its frames; a sample's centroid is the mean position of
      its correctly answered (model, window) pairs. Indices are those of the FrameSet: decoded
      frames of the sample's video, or of its segment when it has start / end, at the run's fps.
    * L, the number of decoded frames of the sample's video or segment at the run's fps:
      ``length="n_frames"`` (default) reads it from ``n_frames`` (a mapping ``(benchmark,
      sample_id)`` or ``sample_id`` -> L) or, when not given, from the table's ``n_frames`` column
      (:func:`frame_counts_from_table`); a table without that column is an :class:`AnalysisError`
      naming it, never a fallback to assumed positions. ``length="oracle_windows"`` derives L as
      1 + the largest frame index among the sample's oracle rows: exact for tempcore's window
      layout, whose last window ends on the last frame (:mod:`tempcore.selection.windows`), and
      named in the notes; use it only for tables made that way.
    * A window row needs its ``frame_indices`` (the column missing is an error naming it); a
      frame index outside ``[0, L)`` is an error (L and the frames disagree). Samples whose L or
      whose correct windows' frames are unknown are left out and counted (``no_length``,
      ``no_frames`` in ``meta`` and the notes); samples with no correct window are counted in
      ``no_correct_window``.

    Per benchmark and category: the fractions of centroids in Begin [0, 1/3), Middle [1/3, 2/3),
    End [2/3, 1], and the centroids' mean and standard deviation (population SD).
    """
    if length not in CENTROID_LENGTHS:
        raise AnalysisError(f"unknown length {length!r}; choose one of {', '.join(CENTROID_LENGTHS)}")
    enc = _encode(table)
    cond = oracle or Cond("oracle")
    mask = enc.rows(cond.strategy, cond.mode, dict(cond.filters))
    enc.check_unambiguous(mask, cond.describe(), dict(cond.filters))
    if "frame_indices" not in enc.table.column_names:
        raise AnalysisError(
            "correct-window centroids need each window's frames: the predictions have no 'frame_indices' column"
        )
    if length == "n_frames" and n_frames is None:
        if "n_frames" not in enc.table.column_names:
            raise AnalysisError(
                "correct-window centroids need each sample's length L (decoded frames of its video or segment): "
                "the predictions have no 'n_frames' column (pass n_frames=..., or length='oracle_windows' to "
                "take L from the last frame of tempcore's oracle windows)"
            )
        n_frames = frame_counts_from_table(enc)
    allowed = np.zeros(len(enc.models), dtype=bool)
    allowed[_model_columns(enc, models)] = True
    rows_all = np.flatnonzero(mask & (enc.rotations() == 0) & allowed[enc.model_code])
    sample = enc.sample_code[rows_all]
    correct = enc.table.column("correct").to_numpy(zero_copy_only=False)[rows_all].astype(bool)
    import pyarrow as pa

    mean_idx, lo, hi, known = _index_stats(enc.table.column("frame_indices").take(pa.array(rows_all, type=pa.int64())))
    L = np.full(enc.n_samples, np.nan)
    if length == "n_frames":
        assert n_frames is not None
        for i, (b, sid) in enumerate(zip(enc.sample_benchmark, enc.sample_id)):
            v = n_frames.get((str(b), str(sid)), n_frames.get(str(sid)))
            if v is not None:
                if int(v) <= 0:
                    raise AnalysisError(f"sample {sid!r} of {b!r}: n_frames must be positive, not {v!r}")
                L[i] = float(v)
    else:
        last = np.full(enc.n_samples, -1, dtype=np.int64)
        np.maximum.at(last, sample[known], hi[known])
        L[last >= 0] = (last[last >= 0] + 1).astype(np.float64)
    no_frames = np.zeros(enc.n_samples, dtype=bool)
    no_frames[sample[correct & ~known]] = True
    use = correct & known & ~np.isnan(L[sample])
    bad = use & ((lo < 0) | (hi >= np.nan_to_num(L[sample], nan=0.0)))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        s_ = int(sample[j])
        raise AnalysisError(
            f"sample {enc.sample_id[s_]!r} of {enc.sample_benchmark[s_]!r}: oracle window shows frames "
            f"{int(lo[j])}..{int(hi[j])}, outside its {int(L[s_])} frames"
        )
    pos = (mean_idx[use] + 0.5) / L[sample[use]]
    total = np.bincount(sample[use], weights=pos, minlength=enc.n_samples)
    count = np.bincount(sample[use], minlength=enc.n_samples)
    has_rows = np.bincount(sample, minlength=enc.n_samples) > 0
    has_correct = np.bincount(sample[correct], minlength=enc.n_samples) > 0
    no_length = has_correct & np.isnan(L)
    placed = has_correct & ~no_length & ~no_frames
    with np.errstate(invalid="ignore", divide="ignore"):
        centroid = np.where(placed, total / np.maximum(count, 1), np.nan)
    _, cat = _aligned(enc, diagnosis)
    bench = np.array(enc.sample_benchmark, dtype=object)
    rows = []
    meta: dict[str, Any] = {"length": length, "no_length": {}, "no_frames": {}}
    for b in sorted(set(bench[has_rows])):
        in_b = (bench == b) & has_rows
        meta["no_length"][b] = int((in_b & no_length).sum())
        meta["no_frames"][b] = int((in_b & no_frames & ~no_length).sum())
        for c in (*FSS_CATEGORIES, INCOMPLETE):
            sel = in_b & (cat == c)
            if not sel.any():
                continue
            cen = centroid[sel & placed]
            n = int(cen.size)
            row = {"benchmark": b, "fss_category": c, "n": n, "no_correct_window": int((sel & ~has_correct).sum()),
                   "begin": None, "middle": None, "end": None, "mean": None, "std": None}
            if n:
                row.update(begin=float((cen < 1 / 3).mean()), middle=float(((cen >= 1 / 3) & (cen < 2 / 3)).mean()),
                           end=float((cen >= 2 / 3).mean()), mean=float(cen.mean()), std=float(cen.std()))
            rows.append(row)
    source = ("L from the n_frames column" if length == "n_frames" else
              "L = 1 + the last frame index of the sample's oracle windows (tempcore's layout ends on the last frame)")
    notes = [f"position of frame i = (i + 0.5) / L, {source}; window = mean of its frames; "
             "thirds: Begin [0,1/3), Middle [1/3,2/3), End [2/3,1]"]
    left_out = {k: sum(v.values()) for k, v in (("no_length", meta["no_length"]), ("no_frames", meta["no_frames"]))}
    if left_out["no_length"]:
        notes.append(f"{left_out['no_length']} sample(s) with correct windows but no L left out (no_length)")
    if left_out["no_frames"]:
        notes.append(f"{left_out['no_frames']} sample(s) with a correct window without frame_indices left out")
    return ResultTable(
        "correct_window_centroids", "Correct-window centroids by FSS category (Table 7)",
        ["benchmark", "fss_category", "n", "no_correct_window", "begin", "middle", "end", "mean", "std"], rows,
        notes=notes, percent=("begin", "middle", "end"), meta=meta,
    )


# --- §6–7: distributions, taxonomy, TPI --------------------------------------------------------


def _per_benchmark(diagnosis: Any) -> dict[str, np.ndarray]:
    b = np.asarray(diagnosis.benchmark, dtype=object)
    return {str(name): b == name for name in sorted(set(b.tolist()))}


def _frac(count: int, total: int) -> float | None:
    return count / total if total else None


def key_antikey_fractions(diagnosis: Any) -> ResultTable:
    """Table 3: Key, Non-key and Anti-key fractions per benchmark and the Key / Anti-key ratio.

    Fractions of the samples with an FSS (``n``); ``incomplete`` counts the others. The ratio is
    ``None`` when a benchmark has no Anti-key sample.
    """
    fc = np.asarray(diagnosis.fss_category, dtype=object)
    rows = []
    for bench, sel in _per_benchmark(diagnosis).items():
        counts = {c: int((fc[sel] == c).sum()) for c in FSS_CATEGORIES}
        n = sum(counts.values())
        rows.append({"benchmark": bench, "n": n, "incomplete": int((fc[sel] == INCOMPLETE).sum()),
                     **counts, **{f"{c}_fraction": _frac(counts[c], n) for c in FSS_CATEGORIES},
                     "key_to_anti_key": counts["key"] / counts["anti_key"] if counts["anti_key"] else None})
    return ResultTable(
        "key_antikey_fractions", f"Key / Anti-key fractions (Table 3, tau={diagnosis.params.get('tau')})",
        ["benchmark", "n", "incomplete", "key", "non_key", "anti_key", "key_fraction", "non_key_fraction",
         "anti_key_fraction", "key_to_anti_key"], rows,
        percent=("key_fraction", "non_key_fraction", "anti_key_fraction"),
    )


def benchmark_profiles(diagnosis: Any) -> ResultTable:
    """Table 4: the taxonomy per benchmark (counts and fractions of the complete samples) and TPI.

    From ``Diagnosis.benchmarks``; TPI = TempSens / (N - Trivial), ``None`` when undefined.
    """
    rows = []
    cats = ("trivial", "frame_agnostic", "visual_bias", "temporally_grounded", "temporally_sensitive")
    for bench, s in sorted(diagnosis.benchmarks.items()):
        complete = int(s["n"]) - int(s["incomplete"])
        row = {"benchmark": bench, "n": complete, "incomplete": int(s["incomplete"])}
        for c in cats:
            row[c] = int(s[c])
            row[f"{c}_fraction"] = _frac(int(s[c]), complete)
        row["tpi"] = s["tpi"]
        rows.append(row)
    columns = ["benchmark", "n", "incomplete", *cats, *[f"{c}_fraction" for c in cats], "tpi"]
    p = diagnosis.params
    return ResultTable(
        "benchmark_profiles", f"Benchmark quality profiles (Table 4, tau={p.get('tau')}, lambda={p.get('lambda')})",
        columns, rows, percent=tuple(f"{c}_fraction" for c in cats),
    )


def lis_fss_spearman(diagnosis: Any) -> ResultTable:
    """§7.1: Spearman correlation of LIS and FSS per benchmark (complete samples)."""
    f = np.asarray(diagnosis.fss, dtype=np.float64)
    li = np.asarray(diagnosis.lis, dtype=np.float64)
    rows = []
    for bench, sel in _per_benchmark(diagnosis).items():
        ok = sel & ~np.isnan(f) & ~np.isnan(li)
        rho, p = spearman(f[ok], li[ok])
        rows.append({"benchmark": bench, "n": int(ok.sum()), "rho": _num(rho), "p": _num(p)})
    return ResultTable("lis_fss_spearman", "LIS-FSS Spearman correlation (§7.1)", ["benchmark", "n", "rho", "p"],
                       rows, notes=["undefined (None) with fewer than 3 samples or a constant score"])


def threshold_sweep(
    diagnosis: Any,
    *,
    taus: Sequence[float] = DEFAULT_TAUS,
    lambdas: Sequence[float] | None = None,
) -> ResultTable:
    """tau / lambda sweep: the taxonomy counts and TPI per benchmark for each (tau, lambda).

    ``lambdas`` default to the diagnosis's lambda only (pass e.g. ``DEFAULT_LAMBDAS`` to sweep).
    Thresholds compare as in :mod:`tempcore.diagnostics.core` (ties at tau are Non-key).
    """
    lams = list(lambdas) if lambdas is not None else [float(diagnosis.params.get("lambda", 0.5))]
    f = np.asarray(diagnosis.fss, dtype=np.float64)
    li = np.asarray(diagnosis.lis, dtype=np.float64)
    per = _per_benchmark(diagnosis)
    rows = []
    for tau in taus:
        fc = fss_categories(f, tau)
        for lam in lams:
            cat = taxonomy(f, li, tau, lam)
            for bench, sel in per.items():
                s = summarize(fc[sel], cat[sel])
                rows.append({"benchmark": bench, "tau": float(tau), "lambda": float(lam),
                             **{k: s[k] for k in ("n", "incomplete", "key", "non_key", "anti_key", "trivial",
                                                  "frame_agnostic", "temporally_grounded", "visual_bias",
                                                  "temporally_sensitive", "tpi")}})
    return ResultTable(
        "threshold_sweep", "tau / lambda sweep", ["benchmark", "tau", "lambda", "n", "incomplete", "key", "non_key",
                                                 "anti_key", "trivial", "frame_agnostic", "temporally_grounded",
                                                 "visual_bias", "temporally_sensitive", "tpi"], rows,
    )


def frame_counts_from_table(table: Any, column: str = "n_frames") -> dict[tuple[str, str], int]:
    """{(benchmark, sample_id): L} from a predictions column (first non-null value per sample).

    Two different values for one sample are an error.
    """
    import pyarrow.compute as pc

    t = table.table if isinstance(table, EncodedPredictions) else table
    if column not in t.column_names:
        raise AnalysisError(f"the predictions have no {column!r} column; pass the frame counts instead")
    sub = t.select(["benchmark", "sample_id", column]).filter(pc.is_valid(t.column(column))).unify_dictionaries()
    agg = sub.group_by(["benchmark", "sample_id"], use_threads=False).aggregate(
        [(column, "min"), (column, "max")]
    )
    lo, hi = agg.column(f"{column}_min").to_pylist(), agg.column(f"{column}_max").to_pylist()
    b, s = agg.column("benchmark").to_pylist(), agg.column("sample_id").to_pylist()
    out = {}
    for bb, ss, a, z in zip(b, s, lo, hi):
        if a != z:
            raise AnalysisError(f"sample {ss!r} of {bb!r} has several {column} values ({a} and {z})")
        out[(str(bb), str(ss))] = int(a)
    return out


def abs_fss_by_coverage(
    diagnosis: Any,
    n_frames: Mapping[Any, int],
    *,
    k: int = 32,
    edges: Sequence[float] = DEFAULT_COVERAGE_EDGES,
) -> ResultTable:
    """Table 14: mean |FSS| per benchmark for samples binned by frame coverage K / L.

    The paper: "mean |FSS| binned by frame coverage K/L, the ratio of the frame budget to the
    number of scored frames" (K = 32; the cell is the panel-average |FSS| of the bin's samples).
    ``n_frames`` maps ``(benchmark, sample_id)`` or ``sample_id`` to L, the number of scored
    frames: the frames decoded from the sample's video (or its segment, when it has start / end)
    at the run's fps, which every frame was scored on (see :func:`frame_counts_from_table`). K is
    the budget, not the frames shown, so a video shorter than K has K / L > 1.

    Bins (the paper names only "< 0.10"; the others are our choice, ``edges``):
    ``[0, e0)``, ``[e0, e1)``, ..., ``[e_last, inf)``, labelled ``<0.10``, ``0.10-0.25``, ...,
    ``>=1.00`` with the default edges (0.10, 0.25, 0.50, 1.00); a K / L on an edge goes to the bin
    above it. Empty bins are absent (the paper's "–"). Samples without an FSS or an L are counted
    in ``meta`` (``no_fss``, ``no_frame_count``).
    """
    e = [float(x) for x in edges]
    if any(b <= a for a, b in zip(e, e[1:])) or any(x <= 0 for x in e):
        raise AnalysisError(f"coverage edges must be positive and increasing: {list(edges)}")
    if k <= 0:
        raise AnalysisError(f"k must be positive, not {k!r}")
    labels = [f"<{e[0]:.2f}"] + [f"{a:.2f}-{b:.2f}" for a, b in zip(e, e[1:])] + [f">={e[-1]:.2f}"]
    f = np.asarray(diagnosis.fss, dtype=np.float64)
    L = np.full(f.shape, np.nan)
    for i, (b, s) in enumerate(zip(diagnosis.benchmark, diagnosis.sample_id)):
        v = n_frames.get((str(b), str(s)), n_frames.get(str(s)))
        if v is not None:
            if int(v) <= 0:
                raise AnalysisError(f"sample {s!r} of {b!r}: frame count must be positive, not {v!r}")
            L[i] = float(v)
    ok = ~np.isnan(f) & ~np.isnan(L)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = k / L
    bins = np.digitize(cov, e)  # 0 = below e0
    rows = []
    meta: dict[str, Any] = {"k": k, "no_frame_count": {}, "no_fss": {}}
    for bench, sel in _per_benchmark(diagnosis).items():
        meta["no_frame_count"][bench] = int((sel & np.isnan(L)).sum())
        meta["no_fss"][bench] = int((sel & np.isnan(f) & ~np.isnan(L)).sum())
        for i, label in enumerate(labels):
            in_bin = sel & ok & (bins == i)
            if in_bin.any():
                rows.append({"benchmark": bench, "coverage": label, "n": int(in_bin.sum()),
                             "mean_abs_fss": float(np.abs(f[in_bin]).mean())})
    spans = [f"[0, {e[0]:g})"] + [f"[{a:g}, {b:g})" for a, b in zip(e, e[1:])] + [f"[{e[-1]:g}, inf)"]
    notes = [f"K/L bins {', '.join(spans)}; the paper names only '<0.10', the other edges are tempcore's choice"]
    meta["edges"] = e
    return ResultTable("abs_fss_by_coverage", f"|FSS| by frame coverage K/L, K={k} (Table 14)",
                       ["benchmark", "coverage", "n", "mean_abs_fss"], rows, notes=notes, percent=("mean_abs_fss",),
                       meta=meta)


def frame_coverage(
    table: Any,
    diagnosis: Any,
    *,
    k: int | None = None,
    edges: Sequence[float] = DEFAULT_COVERAGE_EDGES,
) -> ResultTable:
    """Table 14 straight from a predictions table: L from its ``n_frames`` column, K from its rows.

    L per sample comes from :func:`frame_counts_from_table` (a table without ``n_frames`` is an
    :class:`AnalysisError` naming the column). K: ``k`` if given, else the diagnosis' ``k``
    filter, else the one K of the MaxProb / MinProb rows in the diagnosis' FSS mode (several K
    is an error listing them). The K used is in the title, the notes and ``meta["k"]``.
    """
    enc = _encode(table)
    params = getattr(diagnosis, "params", {}) or {}
    how = "given"
    if k is None:
        k = (params.get("filters") or {}).get("k")
        how = "the diagnosis' k"
    if k is None:
        mode = params.get("fss_mode", "qa")
        ks = sorted(set(_distinct(enc, enc.rows("maxprob", mode), "k")) | set(_distinct(enc, enc.rows("minprob", mode),
                                                                                          "k")))
        if len(ks) != 1:
            raise AnalysisError(f"MaxProb / MinProb ({mode}-mode) rows have K values {ks}; choose one (--k)")
        k = int(ks[0])
        how = f"the K of the MaxProb / MinProb {mode}-mode rows"
    res = abs_fss_by_coverage(diagnosis, frame_counts_from_table(enc), k=int(k), edges=edges)
    res.notes.insert(0, f"K = {k} ({how}); L = the n_frames column (decoded frames of the video or segment)")
    return res


# --- human validation (Tables 8–10, Figs. 7, 8) ------------------------------------------------


def _records(data: Any) -> list[dict[str, Any]]:
    if hasattr(data, "to_pylist") and hasattr(data, "column_names"):
        return list(data.to_pylist())
    return [dict(r) for r in data]


@dataclass
class RatedSamples:
    """Ratings joined to a diagnosis: one entry per rated sample with an FSS."""

    benchmark: np.ndarray
    sample_id: np.ndarray
    rating: np.ndarray  # mean rating when a sample was rated several times
    fss: np.ndarray
    lis: np.ndarray
    excluded_incomplete: int


def join_ratings(diagnosis: Any, ratings: Any) -> RatedSamples:
    """Join human ratings (rows with ``sample_id``, ``benchmark``, ``rating`` in 1..5) to a diagnosis.

    ``ratings`` is a pyarrow Table or an iterable of mappings. Several ratings of one sample are
    averaged. A rating outside 1..5, a missing field, or a sample the diagnosis lacks is an error
    (naming the row, 1 = first); rated samples without an FSS are excluded and counted.
    """
    pos = {(str(b), str(s)): i for i, (b, s) in enumerate(zip(diagnosis.benchmark, diagnosis.sample_id))}
    sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    for i, r in enumerate(_records(ratings), start=1):
        missing = [k for k in ("sample_id", "benchmark", "rating") if r.get(k) is None or r.get(k) == ""]
        if missing:
            raise AnalysisError(f"ratings row {i}: missing {', '.join(missing)}")
        try:
            value = float(r["rating"])
        except (TypeError, ValueError) as exc:
            raise AnalysisError(f"ratings row {i}: rating {r['rating']!r} is not a number") from exc
        if not 1.0 <= value <= 5.0:
            raise AnalysisError(f"ratings row {i}: rating {value:g} outside 1..5")
        key = (str(r["benchmark"]), str(r["sample_id"]))
        if key not in pos:
            raise AnalysisError(f"ratings row {i}: sample {key[1]!r} of {key[0]!r} is not in the diagnosis")
        j = pos[key]
        sums[j] = sums.get(j, 0.0) + value
        counts[j] = counts.get(j, 0) + 1
    idx = np.array(sorted(sums), dtype=np.int64)
    rating = np.array([sums[j] / counts[j] for j in idx.tolist()], dtype=np.float64)
    f = np.asarray(diagnosis.fss, dtype=np.float64)[idx] if idx.size else np.array([])
    keep = ~np.isnan(f)
    li = np.asarray(diagnosis.lis, dtype=np.float64)[idx] if idx.size else np.array([])
    return RatedSamples(
        benchmark=np.asarray(diagnosis.benchmark, dtype=object)[idx][keep],
        sample_id=np.asarray(diagnosis.sample_id, dtype=object)[idx][keep],
        rating=rating[keep], fss=f[keep], lis=li[keep], excluded_incomplete=int((~keep).sum()),
    )


def human_metric_correlations(diagnosis: Any, ratings: Any, *, threshold: float = 4.0) -> ResultTable:
    """Table 8 (Fig. 7): Spearman rho of FSS, |FSS| and LIS with the human temporal score, and the
    point-biserial r of each against the binary "temporal" label (rating >= ``threshold``)."""
    rs = join_ratings(diagnosis, ratings)
    temporal = (rs.rating >= threshold).astype(np.float64)
    rows = []
    for metric, values in (("fss", rs.fss), ("abs_fss", np.abs(rs.fss)), ("lis", rs.lis)):
        rho, p = spearman(values, rs.rating)
        r, pr = point_biserial(temporal, values)
        rows.append({"metric": metric, "n": int(np.sum(~np.isnan(values))), "spearman_rho": _num(rho),
                     "spearman_p": _num(p), "point_biserial_r": _num(r), "point_biserial_p": _num(pr)})
    return ResultTable(
        "human_metric_correlations", f"Metric correlations with human temporal scores (Table 8, >= {threshold:g})",
        ["metric", "n", "spearman_rho", "spearman_p", "point_biserial_r", "point_biserial_p"], rows,
        meta={"excluded_incomplete": rs.excluded_incomplete},
    )


def _rated_categories(diagnosis: Any, rs: RatedSamples, tau: float | None) -> np.ndarray:
    t = float(diagnosis.params.get("tau", 0.15)) if tau is None else float(tau)
    return fss_categories(rs.fss, t)


def human_scores_by_category(
    diagnosis: Any, ratings: Any, *, tau: float | None = None, threshold: float = 4.0
) -> ResultTable:
    """Table 9 (Fig. 8): human scores per FSS category: n, mean, SD (ddof 1), SE, share rated >= ``threshold``.

    Categories at ``tau`` (default: the diagnosis's): Key, Non-key, Anti-key, Temporally Sensitive
    (Key + Anti-key), and all rated samples.
    """
    rs = join_ratings(diagnosis, ratings)
    cat = _rated_categories(diagnosis, rs, tau)
    groups = {
        "key": cat == "key", "non_key": cat == "non_key", "anti_key": cat == "anti_key",
        "temporally_sensitive": (cat == "key") | (cat == "anti_key"), "all": np.ones(cat.shape, dtype=bool),
    }
    rows = []
    for name, sel in groups.items():
        mean, sd, se = mean_sd_se(rs.rating[sel])
        n = int(sel.sum())
        rows.append({"category": name, "n": n, "mean": _num(mean), "sd": _num(sd), "se": _num(se),
                     "temporal_fraction": _frac(int((rs.rating[sel] >= threshold).sum()), n)})
    return ResultTable(
        "human_scores_by_category", "Human temporal scores by FSS category (Table 9, Fig. 8)",
        ["category", "n", "mean", "sd", "se", "temporal_fraction"], rows, percent=("temporal_fraction",),
        meta={"excluded_incomplete": rs.excluded_incomplete},
    )


def human_category_tests(diagnosis: Any, ratings: Any, *, tau: float | None = None) -> ResultTable:
    """§B.2: one-sided Mann–Whitney U tests that a category's human scores exceed Non-key's.

    Comparisons: Temporally Sensitive (Key + Anti-key) vs Non-key, Anti-key vs Non-key, Key vs Non-key.
    """
    rs = join_ratings(diagnosis, ratings)
    cat = _rated_categories(diagnosis, rs, tau)
    non_key = rs.rating[cat == "non_key"]
    groups = {
        "temporally_sensitive": rs.rating[(cat == "key") | (cat == "anti_key")],
        "anti_key": rs.rating[cat == "anti_key"],
        "key": rs.rating[cat == "key"],
    }
    rows = []
    for name, x in groups.items():
        u, p = mann_whitney_greater(x, non_key)
        rows.append({"group": name, "versus": "non_key", "n": int(x.size), "n_versus": int(non_key.size),
                     "mean": _num(float(x.mean())) if x.size else None,
                     "mean_versus": _num(float(non_key.mean())) if non_key.size else None,
                     "u": _num(u), "p_one_sided": _num(p)})
    return ResultTable(
        "human_category_tests", "One-sided Mann-Whitney tests against Non-key (§B.2)",
        ["group", "versus", "n", "n_versus", "mean", "mean_versus", "u", "p_one_sided"], rows,
        meta={"excluded_incomplete": rs.excluded_incomplete},
    )


def human_tau_sweep(
    diagnosis: Any, ratings: Any, *, taus: Sequence[float] = DEFAULT_TAUS, threshold: float = 4.0
) -> ResultTable:
    """Table 10: Key-only (FSS > tau) vs Key + Anti-key (|FSS| > tau) as classifiers of "temporal"
    (human rating >= ``threshold``): TP, FP, FN, precision, recall, F1 per tau."""
    rs = join_ratings(diagnosis, ratings)
    truth = rs.rating >= threshold
    rows = []
    for tau in taus:
        cat = fss_categories(rs.fss, tau)
        for method, pred in (("key_only", cat == "key"), ("key_anti_key", (cat == "key") | (cat == "anti_key"))):
            c = precision_recall_f1(pred, truth)
            rows.append({"tau": float(tau), "method": method, "n": int(truth.size), "tp": c.tp, "fp": c.fp,
                         "fn": c.fn, "precision": _num(c.precision), "recall": _num(c.recall), "f1": _num(c.f1)})
    return ResultTable(
        "human_tau_sweep", "tau sweep against human labels (Table 10)",
        ["tau", "method", "n", "tp", "fp", "fn", "precision", "recall", "f1"], rows,
        meta={"excluded_incomplete": rs.excluded_incomplete},
    )


# --- external correlation (Table 11) -----------------------------------------------------------


def _external_scores(external: Any) -> dict[str, dict[str, float]]:
    """{external benchmark: {model: score}} from a mapping or rows with model / benchmark / score."""
    if isinstance(external, Mapping):
        return {str(b): {str(m): float(v) for m, v in scores.items()} for b, scores in external.items()}
    out: dict[str, dict[str, float]] = {}
    for i, r in enumerate(_records(external), start=1):
        bench = r.get("external", r.get("benchmark"))
        if r.get("model") is None or bench is None or r.get("score") is None:
            raise AnalysisError(f"external scores row {i}: needs model, benchmark (or external) and score")
        try:
            out.setdefault(str(bench), {})[str(r["model"])] = float(r["score"])
        except (TypeError, ValueError) as exc:
            raise AnalysisError(f"external scores row {i}: score {r['score']!r} is not a number") from exc
    return out


def external_ranking_correlation(
    table: Any,
    diagnosis: Any,
    external: Any,
    *,
    condition: Cond | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
) -> ResultTable:
    """Table 11: Spearman rho between models' Key-subset / Non-key-subset accuracy and external scores.

    Per video benchmark, each model's accuracy under ``condition`` (default MaxProb, QA-mode) on
    its Key samples and on its Non-key samples — Non-key *including* Anti-key, i.e. every complete
    sample that is not Key, as the paper's Table 11 does — is rank-correlated across models with
    each external benchmark's scores (models present in both). ``external`` is
    ``{benchmark: {model: score}}`` or rows with ``model``, ``benchmark`` (or ``external``), ``score``.
    ``external="mean"`` rows average the rhos of a benchmark.
    """
    enc = _encode(table)
    ext = _external_scores(external)
    cond = condition or Cond("maxprob", "qa")
    mat = condition_matrix(enc, cond)
    _, cat = _aligned(enc, diagnosis)
    cols = _model_columns(enc, models)
    rows = []
    for bench, srows in _bench_rows(enc, benchmarks).items():
        sub = mat[srows][:, cols]
        c = cat[srows]
        key = c == "key"
        non_key = (c != "key") & (c != INCOMPLETE)
        with np.errstate(invalid="ignore"):
            acc_key = np.nanmean(np.where(key[:, None], sub, np.nan), axis=0) if key.any() else np.full(cols.size, np.nan)
            acc_non = (np.nanmean(np.where(non_key[:, None], sub, np.nan), axis=0) if non_key.any()
                       else np.full(cols.size, np.nan))
        names = [enc.models[j] for j in cols]
        bench_rows = []
        for ext_name, scores in sorted(ext.items()):
            common = [i for i, m in enumerate(names) if m in scores]
            s = np.array([scores[names[i]] for i in common], dtype=np.float64)
            rk, pk = spearman(acc_key[common], s)
            rn, pn = spearman(acc_non[common], s)
            bench_rows.append({"benchmark": bench, "external": ext_name,
                               "n_models": int(np.sum(~np.isnan(acc_key[common]) | ~np.isnan(acc_non[common]))),
                               "rho_key": _num(rk), "p_key": _num(pk), "rho_non_key": _num(rn), "p_non_key": _num(pn)})
        rows += bench_rows
        rk = [r["rho_key"] for r in bench_rows if r["rho_key"] is not None]
        rn = [r["rho_non_key"] for r in bench_rows if r["rho_non_key"] is not None]
        if bench_rows:
            rows.append({"benchmark": bench, "external": "mean", "n_models": None,
                         "rho_key": float(np.mean(rk)) if rk else None, "p_key": None,
                         "rho_non_key": float(np.mean(rn)) if rn else None, "p_non_key": None})
    return ResultTable(
        "external_ranking_correlation", "Key vs Non-key model-ranking correlation with external benchmarks (Table 11)",
        ["benchmark", "external", "n_models", "rho_key", "p_key", "rho_non_key", "p_non_key"], rows,
        notes=[f"accuracy under {cond.describe()}; Non-key includes Anti-key"],
    )


# --- contamination probes (Tables 15, 16) ------------------------------------------------------


def noframe_only_models(table: Any) -> list[str]:
    """The models with no-frame rows but no MaxProb / MinProb row (any mode): text-only LLM probes.

    They are outside the diagnosis' panel by default (:mod:`tempcore.diagnostics.core`): the
    contamination probe (:func:`text_only_probe`, Table 15) is where they are reported.
    """
    enc = _encode(table)
    scored = enc.rows("maxprob", None) | enc.rows("minprob", None)
    noframe = enc.rows("noframe", None)
    has_scored = np.bincount(enc.model_code[scored], minlength=len(enc.models)) > 0
    has_noframe = np.bincount(enc.model_code[noframe], minlength=len(enc.models)) > 0
    return sorted(m for j, m in enumerate(enc.models) if has_noframe[j] and not has_scored[j])


def text_only_probe(
    table: Any,
    *,
    vlm_models: Sequence[str] | None = None,
    text_models: Sequence[str] | None = None,
    condition: Cond | None = None,
    text_condition: Cond | None = None,
    benchmarks: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Table 15: mean no-frame accuracy of the VLM panel vs the panel plus text-only LLMs.

    Per benchmark, on the samples where every model of both lists has a result (the LLM probes
    usually cover a subset): ``acc_panel`` (mean over the VLMs), ``acc_panel_plus_text`` (mean over
    all models) and the shift with a bootstrap interval over samples; ``level="model"`` rows give
    each model's accuracy on the same samples. ``condition`` defaults to ``noframe`` (any mode) for
    the VLMs; ``text_condition`` (default: the same) for the text-only models.

    Default models: ``text_models`` the models with only no-frame rows
    (:func:`noframe_only_models`, the probes the diagnosis leaves out of its LIS panel);
    ``vlm_models`` the models with MaxProb / MinProb rows (the diagnosis' panel).
    """
    enc = _encode(table)
    if text_models is None:
        text_models = noframe_only_models(enc)
    if vlm_models is None:
        scored = enc.rows("maxprob", None) | enc.rows("minprob", None)
        vlm_models = sorted({enc.models[j] for j in np.unique(enc.model_code[scored])})
    if not vlm_models or not text_models:
        raise AnalysisError("the probe needs at least one VLM and one text-only model")
    overlap = sorted(set(vlm_models) & set(text_models))
    if overlap:
        raise AnalysisError(f"model(s) {overlap} listed both as VLM and as text-only")
    cond = condition or Cond("noframe")
    tcond = text_condition or cond
    vcols = _model_columns(enc, vlm_models)
    tcols = _model_columns(enc, text_models)
    full = condition_matrix(enc, cond)
    mv = full[:, vcols]
    mt = (full if tcond == cond else condition_matrix(enc, tcond))[:, tcols]
    rows = []
    for bench, srows in _bench_rows(enc, benchmarks).items():
        v, t = mv[srows], mt[srows]
        keep = ~np.isnan(v).any(axis=1) & ~np.isnan(t).any(axis=1)
        n = int(keep.sum())
        if n == 0:
            continue
        panel = v[keep].mean(axis=1)
        plus = np.concatenate([v[keep], t[keep]], axis=1).mean(axis=1)
        res = bootstrap_mean(plus - panel, n_boot=n_boot, seed=seed)
        rows.append({"benchmark": bench, "level": "panel", "model": None, "n": n, "acc_panel": float(panel.mean()),
                     "acc_panel_plus_text": float(plus.mean()), "shift": res.estimate, "shift_ci_low": res.low,
                     "shift_ci_high": res.high, "accuracy": None})
        for j, col in enumerate(vcols):
            rows.append({"benchmark": bench, "level": "model", "model": enc.models[col], "kind": "vlm", "n": n,
                         "accuracy": float(v[keep, j].mean())})
        for j, col in enumerate(tcols):
            rows.append({"benchmark": bench, "level": "model", "model": enc.models[col], "kind": "text", "n": n,
                         "accuracy": float(t[keep, j].mean())})
    return ResultTable(
        "text_only_probe", "No-frame accuracy: VLM panel vs panel + text-only LLMs (Table 15)",
        ["benchmark", "level", "model", "kind", "n", "accuracy", "acc_panel", "acc_panel_plus_text", "shift",
         "shift_ci_low", "shift_ci_high"], rows,
        notes=[f"VLMs: {cond.describe()}; text-only: {tcond.describe()}; samples every model answered"],
        percent=("accuracy", "acc_panel", "acc_panel_plus_text", "shift", "shift_ci_low", "shift_ci_high"),
    )


def same_backbone_control(
    table: Any,
    *,
    text_model: str,
    vlm_model: str,
    condition: Cond | None = None,
    text_condition: Cond | None = None,
    benchmarks: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Table 16: no-frame accuracy of a text-only LLM and the VLM built on it, on identical samples.

    ``vlm_minus_text`` (the upper bound on what video post-training adds) with a paired bootstrap
    interval over the samples both models answered.
    """
    enc = _encode(table)
    cond = condition or Cond("noframe")
    tcond = text_condition or cond
    (ti,) = _model_columns(enc, [text_model])
    (vi,) = _model_columns(enc, [vlm_model])
    t = condition_matrix(enc, tcond)[:, ti]
    v = condition_matrix(enc, cond)[:, vi]
    rows = []
    for bench, srows in _bench_rows(enc, benchmarks).items():
        keep = ~np.isnan(t[srows]) & ~np.isnan(v[srows])
        n = int(keep.sum())
        if n == 0:
            continue
        a, b = t[srows][keep], v[srows][keep]
        res = bootstrap_mean(b - a, n_boot=n_boot, seed=seed)
        rows.append({"benchmark": bench, "n": n, "acc_text": float(a.mean()), "acc_vlm": float(b.mean()),
                     "vlm_minus_text": res.estimate, "vlm_minus_text_ci_low": res.low,
                     "vlm_minus_text_ci_high": res.high})
    return ResultTable(
        "same_backbone_control", f"Same-backbone control: {text_model} vs {vlm_model} (Table 16)",
        ["benchmark", "n", "acc_text", "acc_vlm", "vlm_minus_text", "vlm_minus_text_ci_low",
         "vlm_minus_text_ci_high"], rows,
        percent=("acc_text", "acc_vlm", "vlm_minus_text", "vlm_minus_text_ci_low", "vlm_minus_text_ci_high"),
    )


__all__ = [
    "CENTROID_LENGTHS",
    "DEFAULT_COVERAGE_EDGES",
    "DEFAULT_GROUPS",
    "DEFAULT_LAMBDAS",
    "DEFAULT_TAUS",
    "AnalysisError",
    "Cond",
    "RatedSamples",
    "SampleGaps",
    "abs_fss_by_coverage",
    "accuracy_by_setting",
    "benchmark_profiles",
    "compare_conditions",
    "condition_matrix",
    "correct_window_centroids",
    "encoder_comparison",
    "external_ranking_correlation",
    "frame_counts_from_table",
    "frame_coverage",
    "human_category_tests",
    "human_metric_correlations",
    "human_scores_by_category",
    "human_tau_sweep",
    "join_ratings",
    "k_ablation",
    "key_antikey_fractions",
    "lis_fss_spearman",
    "maxprob_vs_minprob",
    "noframe_only_models",
    "oracle_gap_by_fss_bin",
    "oracle_gap_by_fss_category",
    "oracle_gap_per_sample",
    "oracle_gap_vs_abs_fss",
    "oracle_matrix",
    "q_vs_qa_maxprob",
    "same_backbone_control",
    "sample_oracle_gaps",
    "shared_k",
    "strategy_baselines",
    "text_only_probe",
    "threshold_sweep",
]
