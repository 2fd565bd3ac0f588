"""Per-sample oracle gaps against FSS (Table 2, Figs. 6, 9, 10) and the positions of the correct
oracle windows (Table 7).

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
* Table 7 needs every window of the oracle: rows of an early-stopped oracle (condition variant
  ``early_stop``, :func:`tempcore.run.config.early_stop_mode`: windows asked until the first correct
  one) are refused with an error saying it needs ``early_stop: false``
  (:func:`early_stopped_oracle_rows`). The oracle gaps (Table 2, Figs. 6, 9, 10) need only the
  oracle correctness (any window correct), which early stop leaves unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.diagnostics.accuracy import ResultTable
from tempcore.diagnostics.compare import (
    AnalysisError,
    ConditionQuery,
    _aligned,
    _encode,
    _model_columns,
    _num,
    condition_matrix,
    frame_counts_from_table,
)
from tempcore.diagnostics.core import FSS_CATEGORIES, INCOMPLETE
from tempcore.diagnostics.stats import DEFAULT_BOOTSTRAP, bootstrap_mean, spearman

if TYPE_CHECKING:
    import pyarrow as pa

    from tempcore.diagnostics import Diagnosis
    from tempcore.diagnostics.table import EncodedPredictions


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
    table: pa.Table | EncodedPredictions,
    diagnosis: Diagnosis,
    *,
    uniform: ConditionQuery | None = None,
    oracle: ConditionQuery | None = None,
    models: Sequence[str] | None = None,
) -> SampleGaps:
    """Per-sample oracle gap (module doc), with the sample's FSS and FSS category."""
    enc = _encode(table)
    u = condition_matrix(enc, uniform or ConditionQuery("uniform"))
    o = condition_matrix(enc, oracle or ConditionQuery("oracle"))
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


def oracle_gap_per_sample(table: pa.Table | EncodedPredictions, diagnosis: Diagnosis, **kwargs: Any) -> ResultTable:
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
    table: pa.Table | EncodedPredictions,
    diagnosis: Diagnosis,
    *,
    uniform: ConditionQuery | None = None,
    oracle: ConditionQuery | None = None,
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
    table: pa.Table | EncodedPredictions,
    diagnosis: Diagnosis,
    *,
    bin_width: float | None = None,
    min_samples: int = 5,
    uniform: ConditionQuery | None = None,
    oracle: ConditionQuery | None = None,
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
    table: pa.Table | EncodedPredictions,
    diagnosis: Diagnosis,
    *,
    n_bins: int = 10,
    min_samples: int = 1,
    uniform: ConditionQuery | None = None,
    oracle: ConditionQuery | None = None,
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


def early_stopped_oracle_rows(table: pa.Table | EncodedPredictions, mask: np.ndarray | None = None) -> int:
    """How many oracle rows (of ``mask``, default: all) come from an early-stopped oracle (variant
    ``early_stop``): such a run holds each (sample, model)'s windows up to its first correct one
    only, so an analysis of every window's answer cannot use it."""
    import pyarrow as pa

    from tempcore.diagnostics.kernel import equal_mask
    from tempcore.records import EARLY_STOP_VARIANT

    enc = _encode(table)
    if "variant" not in enc.table.column_names or pa.types.is_null(enc.table.column("variant").type):
        return 0
    oracle = enc.rows("oracle", None, {}) if mask is None else mask
    return int((oracle & equal_mask(enc.table.column("variant"), EARLY_STOP_VARIANT)).sum())


EVERY_WINDOW = ("needs every oracle window: the oracle ran with early_stop (it stops at the first correct "
                "window); rerun the oracle condition with early_stop: false")
"""Why Table 7 refuses an early-stopped oracle (the error and the report's reason)."""


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
    table: pa.Table | EncodedPredictions,
    diagnosis: Diagnosis,
    *,
    oracle: ConditionQuery | None = None,
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
    * Every window: rows of an early-stopped oracle are an :class:`AnalysisError` saying the
      analysis needs ``early_stop: false`` (the correct windows after the first were never asked).
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
    cond = oracle or ConditionQuery("oracle")
    mask = enc.rows(cond.strategy, cond.mode, dict(cond.filters))
    enc.check_unambiguous(mask, cond.describe(), dict(cond.filters))
    stopped = early_stopped_oracle_rows(enc, mask)
    if stopped:
        raise AnalysisError(f"correct-window centroids (Table 7) {EVERY_WINDOW} ({stopped} early-stopped row(s))")
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


__all__ = [
    "CENTROID_LENGTHS",
    "EVERY_WINDOW",
    "SampleGaps",
    "correct_window_centroids",
    "early_stopped_oracle_rows",
    "oracle_gap_by_fss_bin",
    "oracle_gap_by_fss_category",
    "oracle_gap_per_sample",
    "oracle_gap_vs_abs_fss",
    "sample_oracle_gaps",
]
