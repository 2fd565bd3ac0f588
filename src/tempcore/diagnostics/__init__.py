"""Diagnostics: numbers in, numbers out. ``diagnose`` turns a tidy predictions table into FSS,
LIS, the taxonomy and TPI per sample and per benchmark (see :mod:`tempcore.diagnostics.core`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.diagnostics.core import (
    CATEGORIES,
    FSS_CATEGORIES,
    INCOMPLETE,
    LIS_PANELS,
    fss,
    fss_categories,
    lis,
    lis_panel_columns,
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

if TYPE_CHECKING:
    import pyarrow as pa


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
    table: pa.Table | EncodedPredictions,
    *,
    tau: float = 0.15,
    lam: float = 0.5,
    fss_mode: str = "qa",
    scoring: str = "hard",
    models: Sequence[str] | None = None,
    filters: Mapping[str, Any] | None = None,
    noframe_filters: Mapping[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
    lis_panel: str = "fss",
) -> Diagnosis:
    """FSS (MaxProb vs MinProb in ``fss_mode``), LIS (``noframe``), categories and TPI.

    ``table`` is a pyarrow Table in the tidy schema. ``models`` restricts the panel (default: per
    benchmark, every model with MaxProb / MinProb predictions for it). ``lis_panel`` says who is in
    the LIS panel (see :mod:`tempcore.diagnostics.core`): ``"fss"`` (default, the paper: the FSS
    panel, so text-only probes with only no-frame rows are left out) or ``"all"`` (every model with
    no-frame rows joins); ``params["lis_panel"]`` names the rule and ``params["panels"]`` lists,
    per benchmark, the ``fss`` and ``lis`` panels and the ``noframe_only`` models (no-frame rows
    but no MaxProb / MinProb rows: joined under ``"all"``, left out under ``"fss"``).
    ``filters`` pins columns such as ``k`` or
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
    if lis_panel not in LIS_PANELS:
        raise DiagnosticsError(f"unknown LIS panel {lis_panel!r}; choose one of {', '.join(LIS_PANELS)}")
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
    # The panels: per benchmark, FSS's is the models with MaxProb / MinProb rows; LIS's is the same
    # set (the paper's one M) unless lis_panel="all" joins the models with only no-frame rows.
    fss_panel = enc.panels(models, masks["maxprob"][0] | masks["minprob"][0])
    noframe_models = enc.panels(models, masks["noframe"][0])
    lis_cols = {b: lis_panel_columns(fss_panel[b], noframe_models[b], lis_panel) for b in fss_panel}
    panels = {
        b: {"fss": sorted(enc.models[j] for j in fss_panel[b]), "lis": sorted(enc.models[j] for j in lis_cols[b]),
            "noframe_only": sorted(enc.models[j] for j in np.setdiff1d(noframe_models[b], fss_panel[b]))}
        for b in sorted(fss_panel)
    }
    # Only the no-frame rows of the LIS panel are read (and checked for ambiguity / duplicates): a
    # text-only probe left out of LIS cannot make the diagnosis fail.
    bench_names = sorted(fss_panel)
    bench_of_sample = np.searchsorted(np.array(bench_names, dtype=object), np.array(enc.sample_benchmark, dtype=object))
    in_lis = np.zeros((len(bench_names), len(enc.models)), dtype=bool)
    for i, b in enumerate(bench_names):
        in_lis[i, lis_cols[b]] = True
    nf_mask, nf_what = masks["noframe"]
    masks["noframe"] = (nf_mask & in_lis[bench_of_sample[enc.sample_code], enc.model_code], nf_what)
    for strategy, flt in (("maxprob", filters), ("minprob", filters), ("noframe", noframe_filters)):
        enc.check_unambiguous(masks[strategy][0], masks[strategy][1], flt)
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

    n = enc.n_samples
    f = np.full(n, np.nan)
    li = np.full(n, np.nan)
    bench_arr = np.array(enc.sample_benchmark, dtype=object)
    for bench in fss_panel:
        rows = np.flatnonzero(bench_arr == bench)
        cols = fss_panel[bench]
        if cols.size:
            f[rows] = fss(matrices["maxprob"][np.ix_(rows, cols)], matrices["minprob"][np.ix_(rows, cols)])
        cols = lis_cols[bench]
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
              "models": sorted(models) if models else None, "filters": filters, "lis_panel": lis_panel,
              "panels": panels}
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
    "LIS_PANELS",
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
