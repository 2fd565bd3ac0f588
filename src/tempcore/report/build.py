"""Collect everything a report shows: the diagnosis, every analysis the predictions allow, the
figures, and the sample browser.

Each analysis is registered in :data:`tempcore.report.catalogue.ANALYSES` with its section, title
and what it needs (the paper's analyses of :mod:`tempcore.diagnostics.analyses`, the accuracy
table of :mod:`tempcore.diagnostics.accuracy`, and any a user's package adds). Before
running one, the report checks the predictions hold what it needs (e.g. window-oracle and uniform
rows, MaxProb at two or more K, a ratings file); when they do not, the report lists it as *not
available* with the reason, and when an analysis fails anyway (an ambiguous condition, a bad
ratings row) the error message is shown in its place. A report never fails for one analysis.

Choices:

* Filters. ``k`` (``--k``) applies to every analysis; ``encoder`` only to the score-based
  strategies (MaxProb / MinProb), since uniform, random, oracle and no-frame rows have no encoder.
* Oracle gap by FSS bin: every distinct FSS value is a bin with hard scoring (FSS takes the values
  j/|M|, the paper's quantisation); with soft or circular scoring, bins of width 0.1.
* The MaxProb vs MinProb bars show the model-average rows (Fig. 2) and, second, every model.
* Option rotations in the accuracy table: the rows of one (benchmark, model, condition) that differ
  only in ``rotation`` and have identical figures (n, correct, incomplete, parse errors) — a model
  whose answers do not depend on the order of the options — are shown once, with ``rotation``
  reading e.g. ``0-3 (same)``, and a note says how many were merged. Rows that differ stay apart.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tempcore._version import __version__
from tempcore.report import plots
from tempcore.report.catalogue import (
    ANALYSES,
    Context,
    Facts,
    Needs,
    Run,
    register_analysis,
    sections,
)
from tempcore.report.grounding import ANALYSES as GROUNDING_ANALYSES
from tempcore.report.types import FigureItem, Report, Section, TableItem
from tempcore.tidy.formats import atomic_write

for _entry in GROUNDING_ANALYSES:  # the grounding analyses follow the catalogue's built-ins
    register_analysis(_entry)

CATEGORY_ORDER = ("trivial", "frame_agnostic", "temporally_grounded", "visual_bias", "incomplete")


# --- the analyses ------------------------------------------------------------------------------


def _catalogue() -> list[tuple[str, str, str, Needs, Run]]:
    """(section, key, title, needs, run) for every registered analysis, in report order (derived from
    :data:`tempcore.report.catalogue.ANALYSES`)."""
    entries = [ANALYSES[name] for name in ANALYSES]
    return [(e.section, e.key, e.title, e.unmet, e.run) for e in entries]


def run_analyses(ctx: Context, only: set[str] | None = None) -> dict[str, TableItem]:
    """Every catalogue entry (``only``: those keys) as a TableItem (a table, or why it is not there)."""
    from tempcore.errors import TempcoreError

    out: dict[str, TableItem] = {}
    for _, key, title, needs, run in _catalogue():
        if only is not None and key not in only:
            continue
        reason = needs(ctx)
        if reason:
            out[key] = TableItem(key, title, unavailable=reason)
            continue
        try:
            table = run(ctx)
        except (TempcoreError, ValueError, KeyError) as exc:
            out[key] = TableItem(key, title, unavailable=f"failed: {exc}", failed=True)
            continue
        if not table.rows:
            out[key] = TableItem(key, title, table=table, unavailable="no rows (no sample has the results it needs)")
            continue
        out[key] = TableItem(key, title, table=table)
    return out


# --- figures ------------------------------------------------------------------------------------


def _fss_edges() -> list[float]:
    return [round(-1.05 + 0.1 * i, 2) for i in range(22)]


def fss_histograms(diagnosis: Any, tau: float, standalone: bool = False) -> list[FigureItem]:
    """One FSS histogram per benchmark (and all together when there are several), ``±tau`` lines."""
    import numpy as np

    from tempcore.diagnostics import fss_categories

    benches = sorted(diagnosis.benchmarks)
    groups = [(b, np.asarray(diagnosis.benchmark) == b) for b in benches]
    if len(benches) > 1:
        groups.append(("all benchmarks", np.ones(len(diagnosis.benchmark), dtype=bool)))

    def classify(x: float) -> str:
        return str(fss_categories(np.array([x]), tau)[0])

    out = []
    for name, sel in groups:
        values = [float(v) for v in np.asarray(diagnosis.fss, dtype=float)[sel] if not math.isnan(v)]
        svg = plots.histogram(values, edges=_fss_edges(), title=f"FSS distribution: {name}", xlabel="FSS",
                              ref_lines=(-tau, tau), classify=classify, standalone=standalone)
        out.append(FigureItem(f"fss_hist_{name}", f"FSS distribution: {name}", svg,
                              f"{len(values)} samples with an FSS; bins of width 0.1 centred on multiples of 0.1; "
                              f"dashed lines at FSS = ±{tau:g}"))
    return out


def lis_fss_scatters(diagnosis: Any, tau: float, lam: float, standalone: bool = False) -> list[FigureItem]:
    """One LIS–FSS scatter per benchmark, category colours, lines at LIS = lambda and FSS = ±tau."""
    out = []
    for bench in sorted(diagnosis.benchmarks):
        pts = [(float(li), float(f), str(c)) for b, f, li, c in zip(diagnosis.benchmark, diagnosis.fss, diagnosis.lis,
                                                                   diagnosis.category)
               if b == bench and not (math.isnan(f) or math.isnan(li))]
        grid = 0.01 if len(pts) <= 20000 else 0.02
        svg = plots.scatter(pts, title=f"LIS vs FSS: {bench}", xlabel="LIS", ylabel="FSS", vlines=(lam,),
                            hlines=(-tau, tau), grid=grid, standalone=standalone)
        out.append(FigureItem(f"scatter_{bench}", f"LIS vs FSS: {bench}", svg,
                              f"{len(pts)} complete samples; dashed lines at LIS = {lam:g} and FSS = ±{tau:g}; "
                              f"samples at the same point ({grid:g} grid) share one circle, area grows with count"))
    return out


def oracle_gap_figure(item: TableItem, standalone: bool = False) -> FigureItem | None:
    if item.table is None or not item.table.rows:
        return None
    series: dict[str, list[tuple[float, float | None, float | None]]] = {}
    for r in item.table.rows:
        name = "all benchmarks (mean ± SD)" if r["benchmark"] == "all" else str(r["benchmark"])
        band = r.get("gap_sd") if r["benchmark"] == "all" else None
        series.setdefault(name, []).append((float(r["fss_bin"]), 100 * float(r["gap"]),
                                            None if band is None else 100 * float(band)))
    svg = plots.line_plot(series, title="Oracle gap by FSS bin", xlabel="FSS bin",
                          ylabel="oracle gap (pp)", x_range=(-1.0, 1.0), standalone=standalone)
    return FigureItem("oracle_gap_by_fss_bin_plot", "Oracle gap by FSS bin", svg,
                      "mean per-sample oracle gap (oracle - uniform, percentage points) per FSS bin; "
                      + "; ".join(item.table.notes))


def maxprob_minprob_figures(item: TableItem, standalone: bool = False) -> list[FigureItem]:
    if item.table is None or not item.table.rows:
        return []
    out = []
    mean_rows = [r for r in item.table.rows if r.get("level") == "mean"]
    model_rows = [r for r in item.table.rows if r.get("level") == "model"]
    for rows, label, key in ((mean_rows, "model average per benchmark", "mean"),
                             (model_rows, "per model and benchmark", "model")):
        if not rows:
            continue
        groups = [str(r["benchmark"]) if key == "mean" else f"{r['benchmark']} / {r['model']}" for r in rows]
        series = {"MaxProb": [r.get("acc_maxprob") for r in rows], "MinProb": [r.get("acc_minprob") for r in rows]}
        svg = plots.grouped_bars(groups, series, title=f"MaxProb vs MinProb accuracy ({label})",
                                 ylabel="accuracy (%)", percent=True, y_range=(0.0, 100.0), standalone=standalone)
        out.append(FigureItem(f"maxprob_minprob_{key}", f"MaxProb vs MinProb ({label})", svg,
                              "accuracy on the samples with both results (paired); " + "; ".join(item.table.notes)))
    return out


# --- assembling ---------------------------------------------------------------------------------


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def build_report(
    table: Any,
    *,
    samples_by_benchmark: Mapping[str, Any] | None = None,
    video_roots: Mapping[str, Any] | None = None,
    tau: float = 0.15,
    lam: float = 0.5,
    fss_mode: str = "qa",
    scoring: str = "hard",
    models: Sequence[str] | None = None,
    k: int | None = None,
    encoder: str | None = None,
    ratings: Any = None,
    external: Any = None,
    text_models: Sequence[str] = (),
    same_backbone: Sequence[tuple[str, str]] = (),
    max_samples: int = 200,
    seed: int = 0,
    thumbnails: bool = True,
    thumb_width: int = 80,
    max_thumbnail_samples: int = 40,
    n_boot: int = 2000,
    inputs: Mapping[str, Any] | None = None,
    title: str = "TempCore report",
    created: str | None = None,
) -> Report:
    """Diagnose ``table`` (a tidy predictions table) and gather every table, figure and the browser.

    ``samples_by_benchmark`` maps benchmark names to their samples (a LoadResult or a sequence of
    Samples): the browser shows their questions and options, and their videos (resolved against
    ``video_roots[name]``, else the LoadResult's root) give the frame thumbnails.
    """
    from tempcore.diagnostics import EncodedPredictions, diagnose, prepare_table
    from tempcore.report.browser import build_browser

    table = prepare_table(table)
    params = {"tau": tau, "lambda": lam, "fss_mode": fss_mode, "scoring": scoring,
              "models": list(models) if models else "all", "k": k, "encoder": encoder,
              "bootstrap": n_boot, "seed": seed, "max_samples": max_samples,
              "max_thumbnail_samples": max_thumbnail_samples if thumbnails else 0}
    samples = {}
    roots: dict[str, Any] = {}
    for name, value in (samples_by_benchmark or {}).items():
        samples[name] = list(getattr(value, "samples", value))
        root = getattr(value, "video_root", None)
        if root is not None:
            roots[name] = root
    roots.update({k_: v for k_, v in (video_roots or {}).items() if v is not None})
    extra = _extra_sections(table, samples, n_boot=n_boot, seed=seed, tau=tau, lam=lam)
    missing = _missing_tempcore_conditions(table)
    given = {str(name): list(value) for name, value in samples.items()}
    from tempcore.grounding.analysis import grounding_benchmarks

    if missing and grounding_benchmarks(table):  # the grounding section needs no diagnosis
        bare = Context(table, None, None, Facts.of(table), fss_mode, scoring, k, encoder, models, ratings, external,
                       tuple(text_models), tuple(same_backbone), n_boot, seed, samples=given)
        extra = [grounding_section(bare), *extra]
    if missing and extra:
        # a table without the TempCore conditions (TemporalBench predictions, an ablation or a
        # grounding run): the sections that need none of them, and why the rest is missing
        note = Section("tempcore", "TempCore diagnosis",
                       intro=f"Not available: the table has no {' or '.join(missing)} predictions (FSS, LIS, "
                             "the taxonomy, TPI and every analysis built on them need both). The sections "
                             "below need neither.")
        info = {"tempcore_version": __version__, "rows": table.num_rows,
                "models": Facts.of(table).models, "benchmarks": _distinct_strings(table, "benchmark"),
                **dict(inputs or {})}
        return Report(title, created or _now(), params, info, None, [note, *extra], None)
    enc = EncodedPredictions.from_table(table)
    filters = {"k": k, "encoder": encoder}
    diagnosis = diagnose(enc, tau=tau, lam=lam, fss_mode=fss_mode, scoring=scoring, models=models,
                         filters=filters, noframe_filters={})
    ctx = Context(table, enc, diagnosis, Facts.of(table), fss_mode, scoring, k, encoder, models, ratings,
                  external, tuple(text_models), tuple(same_backbone), n_boot, seed, samples=given)
    items = run_analyses(ctx)
    by_key = {key: Section(key, name, intro=intro) for key, name, intro in sections()}
    for section, key, _, _, _ in _catalogue():
        by_key[section].items.append(items[key])
    prof = by_key["profiles"].items
    prof[3:3] = [*fss_histograms(diagnosis, tau), *lis_fss_scatters(diagnosis, tau, lam)]
    acc_items = by_key["accuracy"].items
    pos = next(i for i, it in enumerate(acc_items) if it.key == "maxprob_vs_minprob") + 1
    acc_items[pos:pos] = maxprob_minprob_figures(items["maxprob_vs_minprob"])
    gap_fig = oracle_gap_figure(items["oracle_gap_by_fss_bin"])
    if gap_fig is not None:
        o = by_key["oracle"].items
        pos = next(i for i, it in enumerate(o) if it.key == "oracle_gap_by_fss_bin") + 1
        o.insert(pos, gap_fig)
    _add_sweep_figure(by_key["grounding"], items)
    browser = build_browser(table, diagnosis, samples, roots, max_samples=max_samples, seed=seed,
                            thumbnails_enabled=thumbnails, thumb_width=thumb_width,
                            max_thumbnail_samples=max_thumbnail_samples)
    info = {"tempcore_version": __version__, "rows": table.num_rows, "models": ctx.facts.models,
            "benchmarks": sorted(diagnosis.benchmarks), **dict(inputs or {})}
    from tempcore.report.summary import build_summary

    summary = build_summary(diagnosis, table, browser, n_boot=n_boot, seed=seed)
    return Report(title, created or _now(), params, info, diagnosis, [*by_key.values(), *extra], browser, summary)


def _extra_sections(table: Any, samples: Mapping[str, list[Any]], *, n_boot: int, seed: int, tau: float,
                    lam: float) -> list[Section]:
    """The sections of the sibling papers' analyses that the table allows (MBA, ablations)."""
    from tempcore.report.ablations import ablations_section
    from tempcore.report.mba import mba_section

    found = (mba_section(table, samples), ablations_section(table, n_boot=n_boot, seed=seed, tau=tau, lam=lam))
    return [s for s in found if s is not None]


def _missing_tempcore_conditions(table: Any) -> list[str]:
    """``maxprob`` / ``minprob`` when the table has no row of that strategy at all (the diagnosis
    needs both; a filter that empties them is an error of :func:`tempcore.diagnostics.diagnose`)."""
    present = set(_distinct_strings(table, "strategy"))
    return [s for s in ("maxprob", "minprob") if s not in present]


def _distinct_strings(table: Any, column: str) -> list[str]:
    if column not in table.column_names or not table.num_rows:
        return []
    return sorted(str(v) for v in table.column(column).unique().to_pylist() if v is not None)


def run_section(ctx: Context, section: str) -> dict[str, TableItem]:
    """:func:`run_analyses` for the analyses of one section only."""
    keep = {key for sec, key, _, _, _ in _catalogue() if sec == section}
    return {key: item for key, item in run_analyses(ctx, only=keep).items()}


def _add_sweep_figure(section: Section, items: Mapping[str, TableItem]) -> None:
    """The mIoU-vs-W curve after the window-sweep table (:func:`tempcore.report.grounding.sweep_figure`)."""
    from tempcore.report.grounding import sweep_figure

    fig = sweep_figure(items["grounding_window_sweep"]) if "grounding_window_sweep" in items else None
    if fig is not None:
        pos = next(i for i, it in enumerate(section.items) if it.key == "grounding_window_sweep") + 1
        section.items.insert(pos, fig)


def grounding_section(ctx: Context) -> Section:
    """The grounding section alone (its analyses read the table and the samples, never the FSS
    diagnosis): what a report of grounding predictions without MaxProb / MinProb rows shows."""
    key, title, intro = next(s for s in sections() if s[0] == "grounding")
    items = run_section(ctx, "grounding")
    out = Section(key, title, [items[k] for k in items], intro=intro)
    _add_sweep_figure(out, items)
    return out


def write_report(report: Report, out_dir: str | Path, *, plots_folder: bool = True) -> list[Path]:
    """Write ``report.md`` (with its figures as ``plots/*.svg``) and the self-contained ``report.html``."""
    from tempcore.report.html import render_html
    from tempcore.report.markdown import render_markdown

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    figure_files: dict[str, str] = {}
    if plots_folder and report.figures:
        folder = out / "plots"
        folder.mkdir(exist_ok=True)
        for i, fig in enumerate(report.figures):
            name = f"{i:02d}_{_safe(fig.key)}.svg"
            svg = fig.svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)
            atomic_write(folder / name, svg)
            figure_files[fig.key] = f"plots/{name}"
            written.append(folder / name)
    md = out / "report.md"
    atomic_write(md, render_markdown(report, figure_files))
    html_path = out / "report.html"
    atomic_write(html_path, render_html(report))
    return [md, html_path, *written]


def _safe(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:80]


__all__ = ["Context", "Facts", "FigureItem", "Report", "Section", "TableItem", "build_report", "run_analyses",
           "write_report"]
