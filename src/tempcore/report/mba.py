"""The report section on multiple binary accuracy and option geometry (TemporalBench).

:func:`mba_section` returns a :class:`~tempcore.report.build.Section` with BA / MBA / chance MBA per
benchmark x model x condition and the gap BA - MBA (:func:`tempcore.diagnostics.mba.mba_table`), and,
when a benchmark's samples are given, the centralized-option audit
(:func:`tempcore.diagnostics.option_geometry.audit_options`). It returns ``None`` when the table has
no question groups (no binarised ids, no ``video_name`` / ``binary_group`` in the samples).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def mba_section(table: Any, samples_by_benchmark: Mapping[str, Any] | None = None) -> Any:
    from tempcore.diagnostics.accuracy import ResultTable
    from tempcore.diagnostics.mba import MBAError, mba_table
    from tempcore.report.types import FigureItem, Section, TableItem

    samples = {name: list(getattr(v, "samples", v)) for name, v in (samples_by_benchmark or {}).items()}
    rows: list[dict[str, Any]] = []
    cond_cols: list[str] = []
    notes: list[str] = []
    benches = sorted(set(table.column("benchmark").to_pylist())) if table.num_rows else []
    for bench in benches:
        try:
            res = mba_table(table, samples=samples.get(bench), benchmark=bench)
        except MBAError as exc:
            notes.append(f"{bench}: {exc}")
            continue
        cond_cols = cond_cols or res.condition_columns
        for r in res.overall:
            rows.append({**r, "gap": None if r["mba"] is None else r["ba"] - r["mba"]})
    if not rows:
        return None
    columns = ["benchmark", "model", *cond_cols, "n_binary", "ba", "n_groups", "mba", "chance_mba", "gap",
               "incomplete_groups"]
    items: list[TableItem | FigureItem] = [TableItem("mba", "Binary and multiple binary accuracy", ResultTable(
        name="mba", title="BA, MBA and chance MBA (micro averages; gap = BA - MBA)", columns=columns, rows=rows,
        notes=["MBA: a group counts only when every binary question of it is correct; incomplete groups excluded",
               *notes], percent=("ba", "mba", "chance_mba", "gap")))]
    if samples:
        from tempcore.diagnostics.option_geometry import audit_options

        audit_rows = []
        for ss in samples.values():
            for bench, a in audit_options(ss).items():
                audit_rows.append({"benchmark": bench, **{k: a[k] for k in (
                    "n", "centroid_correct", "centroid_correct_rate", "chance_rate", "p_value", "ties")}})
        items.append(TableItem("option_geometry", "Centralized-option audit", ResultTable(
            name="option_geometry", title="How often the most central option is the correct one",
            columns=["benchmark", "n", "centroid_correct", "centroid_correct_rate", "chance_rate", "p_value", "ties"],
            rows=audit_rows, notes=["centroid: smallest mean normalised token edit distance to the other options"],
            percent=("centroid_correct_rate", "chance_rate"))))
    return Section("mba", "Multiple binary accuracy and option geometry (TemporalBench)", items=items,
                   intro="Binary questions grouped by their original question: a group counts as correct only "
                   "when all its binary questions are.")
