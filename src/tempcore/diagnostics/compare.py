"""The engine of the paper's comparisons: which rows stand for a condition, the (samples x models)
correctness matrices, and the multi-condition accuracy table with paired bootstrap differences.

The paper tables built on it live by section: :mod:`~tempcore.diagnostics.selection_analyses`
(§5), :mod:`~tempcore.diagnostics.oracle_gaps` (Table 2, 7, Figs. 6, 9, 10),
:mod:`~tempcore.diagnostics.profiles` (§6–7, Table 14), :mod:`~tempcore.diagnostics.validation`
(Tables 8–11) and :mod:`~tempcore.diagnostics.contamination` (Tables 15, 16);
:mod:`tempcore.diagnostics.analyses` re-exports all of them.

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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.diagnostics.accuracy import ResultTable
from tempcore.diagnostics.core import INCOMPLETE
from tempcore.diagnostics.stats import DEFAULT_BOOTSTRAP, bootstrap_mean
from tempcore.diagnostics.table import DiagnosticsError, EncodedPredictions

if TYPE_CHECKING:
    import pyarrow as pa

    from tempcore.diagnostics import Diagnosis

#: The paper's benchmark groups (§4.2): short <= 3 min, long > 5 min. Keys are loader names.
DEFAULT_GROUPS: dict[str, tuple[str, ...]] = {
    "short": ("mvbench", "nextqa", "egoschema"),
    "long": ("mlvu", "longvideobench", "videomme"),
}


class AnalysisError(DiagnosticsError):
    """An analysis cannot run on the given inputs (missing condition, bad ratings file...)."""


# --- conditions and matrices -------------------------------------------------------------------


@dataclass(frozen=True)
class ConditionQuery:
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


def _encode(table: pa.Table | EncodedPredictions) -> EncodedPredictions:
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


def condition_matrix(enc: EncodedPredictions, cond: ConditionQuery) -> np.ndarray:
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
    table: pa.Table | EncodedPredictions,
    conditions: Sequence[ConditionQuery],
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
        have: np.ndarray = np.stack([~np.isnan(s) for s in sub])  # (conditions, samples, models)
        every = np.asarray(have.all(axis=0))
        some = np.asarray(have.any(axis=0))
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
            keep = np.asarray(every[:, panel].all(axis=1))
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



def _diagnosis_index(enc: EncodedPredictions, diagnosis: Diagnosis) -> np.ndarray:
    """For each encoded sample, its index in ``diagnosis`` (-1 when the diagnosis lacks it)."""
    pos = {(str(b), str(s)): i for i, (b, s) in enumerate(zip(diagnosis.benchmark, diagnosis.sample_id))}
    return np.array([pos.get((b, s), -1) for b, s in zip(enc.sample_benchmark, enc.sample_id)], dtype=np.int64)


def _aligned(enc: EncodedPredictions, diagnosis: Diagnosis) -> tuple[np.ndarray, np.ndarray]:
    """(FSS, FSS category) per encoded sample; missing from the diagnosis -> NaN / incomplete."""
    idx = _diagnosis_index(enc, diagnosis)
    found = idx >= 0
    f = np.full(enc.n_samples, np.nan)
    cat = np.full(enc.n_samples, INCOMPLETE, dtype=object)
    f[found] = np.asarray(diagnosis.fss, dtype=np.float64)[idx[found]]
    cat[found] = np.asarray(diagnosis.fss_category, dtype=object)[idx[found]]
    return f, cat



def _per_benchmark(diagnosis: Diagnosis) -> dict[str, np.ndarray]:
    b = np.asarray(diagnosis.benchmark, dtype=object)
    return {str(name): b == name for name in sorted(set(b.tolist()))}


def _frac(count: int, total: int) -> float | None:
    return count / total if total else None



def frame_counts_from_table(table: pa.Table | EncodedPredictions, column: str = "n_frames") -> dict[tuple[str, str], int]:
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


__all__ = [
    "AnalysisError",
    "ConditionQuery",
    "DEFAULT_GROUPS",
    "compare_conditions",
    "condition_matrix",
    "frame_counts_from_table",
    "oracle_matrix",
    "shared_k",
]
