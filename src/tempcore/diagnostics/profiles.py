"""§6–7 of the TempCore paper: the benchmarks' FSS / LIS profiles, the Key / Anti-key fractions,
the taxonomy and TPI (Tables 3, 4, §7.1), the tau / lambda sweeps, and |FSS| by frame coverage
K / L (Table 14; L from the predictions' ``n_frames`` column, never assumed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.diagnostics.accuracy import ResultTable
from tempcore.diagnostics.compare import (
    AnalysisError,
    _distinct,
    _encode,
    _frac,
    _num,
    _per_benchmark,
    frame_counts_from_table,
)
from tempcore.diagnostics.core import FSS_CATEGORIES, INCOMPLETE, fss_categories, summarize, taxonomy
from tempcore.diagnostics.stats import spearman

if TYPE_CHECKING:
    import pyarrow as pa

    from tempcore.diagnostics import Diagnosis
    from tempcore.diagnostics.table import EncodedPredictions

#: K/L bin edges of Table 14. The paper names only the "<0.10" bin (and a "highest coverage bin" that
#: only MVBench reaches); the other edges are our choice: [0, .10), [.10, .25), [.25, .50),
#: [.50, 1.00) and [1.00, inf) -- the last holds videos with no more frames than the budget.
DEFAULT_COVERAGE_EDGES: tuple[float, ...] = (0.10, 0.25, 0.50, 1.00)
DEFAULT_TAUS: tuple[float, ...] = (0.0, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.40, 0.50)
DEFAULT_LAMBDAS: tuple[float, ...] = (0.25, 0.375, 0.5, 0.625, 0.75)


def key_antikey_fractions(diagnosis: Diagnosis) -> ResultTable:
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


def benchmark_profiles(diagnosis: Diagnosis) -> ResultTable:
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


def lis_fss_spearman(diagnosis: Diagnosis) -> ResultTable:
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
    diagnosis: Diagnosis,
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



def abs_fss_by_coverage(
    diagnosis: Diagnosis,
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
    table: pa.Table | EncodedPredictions,
    diagnosis: Diagnosis,
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


__all__ = [
    "DEFAULT_COVERAGE_EDGES",
    "DEFAULT_LAMBDAS",
    "DEFAULT_TAUS",
    "abs_fss_by_coverage",
    "benchmark_profiles",
    "frame_coverage",
    "key_antikey_fractions",
    "lis_fss_spearman",
    "threshold_sweep",
]
