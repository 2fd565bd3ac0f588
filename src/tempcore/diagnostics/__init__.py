"""Diagnostics: numbers in, numbers out. ``diagnose`` turns a tidy predictions table into FSS,
LIS, the taxonomy and TPI per sample and per benchmark (see :mod:`tempcore.diagnostics.core`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tempcore.diagnostics.core import (
    CATEGORIES,
    FSS_CATEGORIES,
    INCOMPLETE,
    fss,
    fss_categories,
    lis,
    summarize,
    taxonomy,
    tpi,
)
from tempcore.diagnostics.table import (
    SCORINGS,
    DiagnosticsError,
    EncodedPredictions,
    TableError,
    check_fingerprints,
    check_scoring,
    explain_empty,
    prepare_table,
)


@dataclass
class Diagnosis:
    """Per-sample scores (parallel arrays) and per-benchmark summaries."""

    benchmark: np.ndarray  # (n,) object
    sample_id: np.ndarray  # (n,) object
    fss: np.ndarray  # (n,) float, NaN when incomplete
    lis: np.ndarray  # (n,) float, NaN when incomplete
    fss_category: np.ndarray  # (n,) key / non_key / anti_key / incomplete
    category: np.ndarray  # (n,) trivial / frame_agnostic / temporally_grounded / visual_bias / incomplete
    benchmarks: dict[str, dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)

    def samples(self) -> list[dict[str, Any]]:
        def num(x: float) -> float | None:
            return None if np.isnan(x) else float(x)

        return [
            {
                "benchmark": str(b),
                "sample_id": str(s),
                "fss": num(f),
                "lis": num(li),
                "fss_category": str(fc),
                "category": str(c),
            }
            for b, s, f, li, fc, c in zip(
                self.benchmark, self.sample_id, self.fss, self.lis, self.fss_category, self.category
            )
        ]

    def to_json(self) -> dict[str, Any]:
        return {"params": self.params, "benchmarks": self.benchmarks, "samples": self.samples()}

    def temporally_sensitive(self, benchmark: str | None = None) -> list[str]:
        mask = (self.category == "temporally_grounded") | (self.category == "visual_bias")
        if benchmark is not None:
            mask &= self.benchmark == benchmark
        return [str(s) for s in self.sample_id[mask]]


def diagnose(
    table: Any,
    *,
    tau: float = 0.15,
    lam: float = 0.5,
    fss_mode: str = "qa",
    scoring: str = "hard",
    models: Sequence[str] | None = None,
    filters: Mapping[str, Any] | None = None,
    noframe_filters: Mapping[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> Diagnosis:
    """FSS (MaxProb vs MinProb in ``fss_mode``), LIS (``noframe``), categories and TPI.

    ``table`` is a pyarrow Table in the tidy schema. ``models`` restricts the panel (default: per
    benchmark and score, every model with predictions of the strategies the score needs: MaxProb /
    MinProb for FSS, no-frame for LIS). ``filters`` pins columns such as ``k`` or
    ``encoder`` for the MaxProb / MinProb rows when the table holds several (an ambiguous table is
    an error, never silently mixed); ``noframe_filters`` does the same for the no-frame rows.

    Nothing is silently empty (:class:`TableError`, naming what the table holds): a condition whose
    filters select no row, a ``models`` panel with no row of a condition, scoring ``circular``
    without rotations or ``soft`` without ``p_correct``, and a result with no complete sample.
    Rows of one model name with different ``model_fingerprint`` values are refused. ``flags``
    maps filter names to the option names the messages cite (default ``--k``, ``--encoder``...;
    ``noframe_k`` names the option of the no-frame ``k``, default ``--k``).
    """
    if scoring not in SCORINGS:
        raise DiagnosticsError(f"unknown scoring {scoring!r}; choose one of {', '.join(SCORINGS)}")
    enc = table if isinstance(table, EncodedPredictions) else EncodedPredictions.from_table(table)
    filters = dict(filters or {})
    noframe_filters = dict(noframe_filters or {})
    flags = dict(flags or {})
    noframe_flags = {**flags, "k": flags.get("noframe_k", flags.get("k", "--k"))}
    if models is not None:
        enc.panels(models)  # unknown model names: an error naming the table's models
    allowed = np.ones(enc.table.num_rows, dtype=bool) if models is None else np.isin(
        enc.model_code, [i for i, m in enumerate(enc.models) if m in set(models)])
    masks = {}
    for strategy, mode, flt in (
        ("maxprob", fss_mode, filters),
        ("minprob", fss_mode, filters),
        ("noframe", None, noframe_filters),
    ):
        what = f"{strategy}" + (f" ({mode}-mode)" if mode else "")
        mask = enc.rows(strategy, mode, flt)
        if not (mask & allowed).any():
            raise TableError(
                f"no {what} predictions to diagnose: "
                + explain_empty(enc.table, strategy, mode, flt, models,
                                flags=noframe_flags if strategy == "noframe" else flags)
            )
        masks[strategy] = (mask, what)
        enc.check_unambiguous(mask, what, flt)
    used = np.logical_or.reduce([m for m, _ in masks.values()]) & allowed
    check_fingerprints(enc.table, used, "diagnose")
    check_scoring(enc, used, scoring, "the maxprob, minprob and noframe rows")
    # Circular scoring: every sample needs every rotation it was asked in (option counts vary).
    expected = (
        enc.rotations_per_sample(np.logical_or.reduce([m for m, _ in masks.values()]))
        if scoring == "circular"
        else None
    )
    matrices = {name: enc.values(mask, scoring, what, expected) for name, (mask, what) in masks.items()}

    # The panel of each score: per benchmark, the models with any row of the strategies it needs
    # (a text-only LLM with only no-frame rows joins the LIS panel, not the FSS one).
    fss_panel = enc.panels(models, masks["maxprob"][0] | masks["minprob"][0])
    lis_panel = enc.panels(models, masks["noframe"][0])
    n = enc.n_samples
    f = np.full(n, np.nan)
    li = np.full(n, np.nan)
    bench_arr = np.array(enc.sample_benchmark, dtype=object)
    for bench in fss_panel:
        rows = np.flatnonzero(bench_arr == bench)
        cols = fss_panel[bench]
        if cols.size:
            f[rows] = fss(matrices["maxprob"][np.ix_(rows, cols)], matrices["minprob"][np.ix_(rows, cols)])
        cols = lis_panel[bench]
        if cols.size:
            li[rows] = lis(matrices["noframe"][np.ix_(rows, cols)])
    fc = fss_categories(f, tau)
    cat = taxonomy(f, li, tau, lam)
    if n and (cat == INCOMPLETE).all():
        raise TableError(_nothing_complete(enc, masks, np.isnan(f), np.isnan(li), models))
    benchmarks = {}
    for bench in sorted(set(enc.sample_benchmark)):
        sel = bench_arr == bench
        benchmarks[bench] = summarize(fc[sel], cat[sel])
    params = {"tau": tau, "lambda": lam, "fss_mode": fss_mode, "scoring": scoring,
              "models": sorted(models) if models else None, "filters": filters}
    return Diagnosis(bench_arr, np.array(enc.sample_id, dtype=object), f, li, fc, cat, benchmarks, params)


def _nothing_complete(enc: EncodedPredictions, masks: Mapping[str, tuple[np.ndarray, str]],
                      no_fss: np.ndarray, no_lis: np.ndarray, models: Sequence[str] | None) -> str:
    """The message when every sample lacks a needed result: which models have which condition."""
    parts = []
    for mask, what in masks.values():
        held = sorted({enc.models[int(c)] for c in np.unique(enc.model_code[mask])})
        if models is not None:
            held = [m for m in held if m in set(models)]
        parts.append(f"{what} rows of model(s) {', '.join(held)}")
    return (
        f"no sample of the {enc.n_samples} is complete ({int(no_fss.sum())} lack an FSS, {int(no_lis.sum())} "
        "an LIS): every sample needs a result of every panel model under each condition, and the table has "
        + "; ".join(parts)
        + ". Check --models / --k / --encoder, or complete the run"
    )


__all__ = [
    "CATEGORIES",
    "FSS_CATEGORIES",
    "INCOMPLETE",
    "SCORINGS",
    "Diagnosis",
    "DiagnosticsError",
    "EncodedPredictions",
    "TableError",
    "diagnose",
    "fss",
    "fss_categories",
    "lis",
    "prepare_table",
    "summarize",
    "taxonomy",
    "tpi",
]
