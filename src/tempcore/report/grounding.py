"""The report's grounding section (issue 15), registered in :data:`tempcore.report.catalogue.ANALYSES`.

Analyses (section ``grounding``), each shown when the predictions (and, where said, the benchmark's
annotations, ``tempcore report --annotations``) allow it:

* ``grounding_accuracy`` — mIoU, R@0.3/0.5/0.7 (IoU >= τ) and the parse-failure rate per benchmark x
  model x condition (:func:`tempcore.grounding.evaluate.table_groups`): against the samples' GT
  windows when given, else the stored ``iou``. A grounding group is a (benchmark, model, condition)
  with at least one row carrying ``pred_start`` or ``iou``; all of its rows count (a parse failure:
  IoU 0). The ``retrieval`` rows under a ``retrieve_ground`` condition are its retrieval stage alone
  (the first candidate window, peak ± ``pad_s``).
* ``grounding_search_localize`` — failures (IoU < 0.05) split into search (offset > 300 s) and
  localize failures, centre-to-centre and nearest-edge (:func:`tempcore.diagnostics.grounding.search_localize`);
  needs the annotations (the predicted windows against the GT).
* ``grounding_candidate_recall`` — candidate recall@k of every ``retrieve_ground`` condition, contained
  and overlap (:func:`tempcore.grounding.analysis.candidate_recall_rows`); needs the annotations.
* ``grounding_window_sweep`` — accuracy vs the GT-centred crop width W per model
  (:func:`tempcore.grounding.analysis.window_sweep`), with the mIoU-vs-W curve as a figure
  (:func:`sweep_figure`).
* ``query_profiles`` — the query profile of each benchmark side by side
  (:func:`tempcore.grounding.queries.query_profile`; grounding or QA); needs the annotations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tempcore.report.catalogue import Analysis, Context

SECTION = ("grounding", "Temporal grounding",
           "Grounding as search (ExtremeWhenBench): mIoU / R@tau per model and condition, why failures fail, "
           "how often the retrieval stage covers the ground truth, accuracy vs the crop around the ground truth, "
           "and the benchmarks' query profiles.")
THRESHOLDS = (0.3, 0.5, 0.7)


def _table(name: str, title: str, columns: list[str], rows: list[dict[str, Any]], notes: Sequence[str] = (),
           percent: Sequence[str] = ()) -> Any:
    from tempcore.diagnostics.accuracy import ResultTable

    return ResultTable(name=name, title=title, columns=columns, rows=rows, notes=list(notes), percent=tuple(percent))


def _benchmarks(ctx: Context) -> list[str]:
    from tempcore.grounding.analysis import grounding_benchmarks

    return grounding_benchmarks(ctx.table)


def _by_name(ctx: Context) -> dict[str, list[Any]]:
    """The given samples by their benchmark name (``Sample.benchmark``, what the predictions' rows
    carry; a loader option may rename it, so the names the samples were given under may differ)."""
    out: dict[str, list[Any]] = {}
    for samples in ctx.samples.values():
        for s in samples:
            out.setdefault(str(s.benchmark), []).append(s)
    return out


def _grounding_samples(ctx: Context, bench: str) -> list[Any] | None:
    got = _by_name(ctx).get(bench)
    if got is None:
        return None
    out = [s for s in got if s.answer_windows and not s.options]
    return out or None


def _grounding_rows(ctx: Context, bench: str) -> Any:
    """The rows of ``bench`` in its grounding (model, condition) groups (module doc)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = ctx.table
    if "benchmark" in t.column_names:
        t = t.filter(pc.fill_null(pc.equal(t.column("benchmark"), bench), False))
    cols = [c for c in ("pred_start", "iou") if c in t.column_names]
    mark = None
    for c in cols:
        v = pc.is_valid(t.column(c))
        mark = v if mark is None else pc.or_(mark, v)
    key = [f"{m}\x1f{c}" for m, c in zip(t.column("model").to_pylist(),
                                          t.column("condition" if "condition" in t.column_names
                                                   else "strategy").to_pylist())]
    marked = {k for k, m in zip(key, mark.to_pylist() if mark is not None else []) if m}
    return t.filter(pa.array([k in marked for k in key]))


def _need_rows(ctx: Context) -> str | None:
    return None if _benchmarks(ctx) else "needs grounding predictions (rows with pred_start or iou)"


def _need_samples(ctx: Context) -> str | None:
    benches = _benchmarks(ctx)
    if not benches:
        return "needs grounding predictions (rows with pred_start or iou)"
    if not any(_grounding_samples(ctx, b) for b in benches):
        return "needs the grounding benchmark's annotations (--annotations)"
    return None


def _recall_cols() -> list[str]:
    return [f"R@{t:g}" for t in THRESHOLDS]


def grounding_accuracy(ctx: Context) -> Any:
    from tempcore.grounding.evaluate import table_groups

    rows = []
    notes = []
    for bench in _benchmarks(ctx):
        samples = _grounding_samples(ctx, bench)
        for g in table_groups(_grounding_rows(ctx, bench), samples, thresholds=THRESHOLDS):
            rows.append({"benchmark": bench, "model": g["model"], "condition": g.get("condition", g["strategy"]),
                         "n": g["n"], "miou": g["miou"],
                         **{f"R@{k}": v for k, v in g["recall"].items()}, "parse_fail": g["parse_fail"]})
        notes.append(f"{bench}: IoU against the annotations' windows" if samples else
                     f"{bench}: the stored iou (no annotations given)")
    notes.append("IoU = intersection / hull; R@tau counts IoU >= tau; a parse failure counts IoU 0")
    return _table("grounding_accuracy", "Grounding: mIoU and R@tau per model and condition",
                  ["benchmark", "model", "condition", "n", "miou", *_recall_cols(), "parse_fail"], rows, notes,
                  ["miou", *_recall_cols(), "parse_fail"])


def search_localize(ctx: Context, fail_iou: float = 0.05, offset_s: float = 300.0) -> Any:
    from tempcore.grounding.evaluate import table_groups

    rows = []
    for bench in _benchmarks(ctx):
        samples = _grounding_samples(ctx, bench)
        if samples is None:
            continue
        for g in table_groups(_grounding_rows(ctx, bench), samples, split=True, fail_iou=fail_iou,
                              offset_s=offset_s):
            s = g["split"]
            rows.append({"benchmark": bench, "model": g["model"], "condition": g.get("condition", g["strategy"]),
                         "n": s["n"], "failed": s["n_failed"], "parse_fail": s["parse_fail"],
                         "search_centre": s["centre"]["search"], "localize_centre": s["centre"]["localize"],
                         "search_share_centre": s["centre"]["search_share"],
                         "search_edge": s["edge"]["search"], "localize_edge": s["edge"]["localize"],
                         "search_share_edge": s["edge"]["search_share"]})
    return _table("grounding_search_localize", "Search vs localize failures",
                  ["benchmark", "model", "condition", "n", "failed", "parse_fail", "search_centre", "localize_centre",
                   "search_share_centre", "search_edge", "localize_edge", "search_share_edge"], rows,
                  [f"a failure has IoU < {fail_iou:g}; a search failure lies more than {offset_s:g} s from the ground "
                   "truth (centre-to-centre, or nearest edge: the gap between the intervals); shares are of all "
                   "failures, parse failures included"],
                  ["search_share_centre", "search_share_edge"])


def candidate_recall(ctx: Context) -> Any:
    from tempcore.grounding.analysis import candidate_recall_rows

    rows = []
    kmax = 0
    for bench in _benchmarks(ctx):
        samples = _grounding_samples(ctx, bench)
        if samples is None:
            continue
        for r in candidate_recall_rows(ctx.table, samples, benchmark=bench):
            kmax = max(kmax, r["top_k"])
            rows.append({"benchmark": r["benchmark"], "condition": r["condition"], "top_k": r["top_k"], "n": r["n"],
                         **{f"contained@{k}": v for k, v in r["contained"].items()},
                         **{f"overlap@{k}": v for k, v in r["overlap"].items()}})
    cols = [f"{what}@{k}" for what in ("contained", "overlap") for k in range(1, kmax + 1)]
    return _table("grounding_candidate_recall", "Candidate recall@K of the retrieval stage (retrieve-then-ground)",
                  ["benchmark", "condition", "top_k", "n", *cols], rows,
                  ["share of queries whose GT window is covered by one of the first k candidates: contained "
                   "(inside a candidate) or overlap (a positive intersection)"], cols)


def window_sweep(ctx: Context) -> Any:
    from tempcore.grounding.analysis import window_sweep as sweep

    rows = []
    for bench in _benchmarks(ctx):
        for r in sweep(ctx.table, _grounding_samples(ctx, bench), benchmark=bench, thresholds=THRESHOLDS):
            rows.append({"benchmark": bench, "model": r["model"], "window": r["window"], "width_s": r["width_s"],
                         "n": r["n"], "miou": r["miou"], **{f"R@{k}": v for k, v in r["recall"].items()},
                         "parse_fail": r["parse_fail"]})
    return _table("grounding_window_sweep", "Accuracy vs the GT-centred window width W",
                  ["benchmark", "model", "window", "width_s", "n", "miou", *_recall_cols(), "parse_fail"], rows,
                  ["gtcrop conditions: the video cropped to a window of width W centred on the ground truth, "
                   "predictions mapped back to video time"], ["miou", *_recall_cols(), "parse_fail"])


def _need_sweep(ctx: Context) -> str | None:
    return None if ctx.facts.has("gtcrop") else "needs gtcrop (window-length sweep) predictions"


def _need_candidates(ctx: Context) -> str | None:
    if not ctx.facts.has("retrieve_ground"):
        return "needs retrieve_ground predictions"
    return _need_samples(ctx)


PROFILE_COLUMNS = ["n_questions", "length_mean", "ttr", "mattr", "mattr_per_query", "distinct_1", "distinct_2",
                   "distinct_3", "distinct_4", "unique_stems", "top5_stem_coverage", "wh_entropy",
                   "descriptor_density"]


def query_profiles(ctx: Context) -> Any:
    from tempcore.grounding.queries import query_profile

    rows = []
    for bench, samples in sorted(_by_name(ctx).items()):
        p = query_profile([s.question for s in samples])
        row = {"benchmark": bench, **{k: p[k] for k in PROFILE_COLUMNS if k in p}}
        row.update({f"distinct_{n}": v for n, v in p["distinct"].items()})
        rows.append(row)
    return _table("query_profiles", "Query profiles of the benchmarks", ["benchmark", *PROFILE_COLUMNS], rows,
                  ["tokens: NFKC, lower-cased letter/digit runs; MATTR window 50 over the concatenated questions; "
                   "distinct-n = distinct n-grams / tokens; stems = first four tokens; WH entropy in bits; "
                   "descriptor density = share of tokens in the visual-descriptor lexicon "
                   "(tempcore.grounding.queries)"],
                  ["ttr", "mattr", "mattr_per_query", "top5_stem_coverage", "descriptor_density"])


def _need_profiles(ctx: Context) -> str | None:
    return None if ctx.samples else "needs the benchmarks' annotations (--annotations)"


ANALYSES = (
    Analysis("grounding_accuracy", "Grounding: mIoU and R@tau per model and condition", "grounding",
             grounding_accuracy, needs=_need_rows, section_title=SECTION[1]),
    Analysis("grounding_search_localize", "Search vs localize failures", "grounding", search_localize,
             needs=_need_samples, section_title=SECTION[1]),
    Analysis("grounding_candidate_recall", "Candidate recall@K (retrieve-then-ground)", "grounding",
             candidate_recall, needs=_need_candidates, section_title=SECTION[1]),
    Analysis("grounding_window_sweep", "Accuracy vs GT-centred window width", "grounding", window_sweep,
             needs=_need_sweep, section_title=SECTION[1]),
    Analysis("query_profiles", "Query profiles", "grounding", query_profiles, needs=_need_profiles,
             section_title=SECTION[1]),
)


def sweep_figure(item: Any, standalone: bool = False) -> Any:
    """The mIoU-vs-W curve of the window sweep table (one line per benchmark x model; ``full`` is
    drawn at the largest finite W times 2, labelled in the caption), or None without rows."""
    from tempcore.report import plots
    from tempcore.report.types import FigureItem

    if item.table is None or not item.table.rows:
        return None
    finite = [float(r["width_s"]) for r in item.table.rows if r["width_s"] is not None]
    full_x = 2 * max(finite) if finite else 1.0
    series: dict[str, list[tuple[float, float | None, float | None]]] = {}
    for r in item.table.rows:
        x = full_x if r["width_s"] is None else float(r["width_s"])
        y = None if r["miou"] is None else 100 * float(r["miou"])
        series.setdefault(f"{r['benchmark']} / {r['model']}", []).append((math.log10(x), y, None))
    for pts in series.values():
        pts.sort(key=lambda p: p[0])
    svg = plots.line_plot(series, title="mIoU vs GT-centred window width", xlabel="log10 W (s)",
                          ylabel="mIoU (%)", standalone=standalone)
    return FigureItem("grounding_window_sweep_plot", "mIoU vs GT-centred window width", svg,
                      f"x = log10 of the crop width in seconds; the full video is drawn at W = {full_x:g} s")


__all__ = ["ANALYSES", "SECTION", "sweep_figure"]
