"""The report section on TVBench-style ablations (issue 14).

:func:`ablations_section` returns a :class:`~tempcore.report.build.Section` with the four tables of
``tempcore audit ablations`` (:func:`tempcore.diagnostics.ablations.result_tables`): accuracy per
condition with the drop from video, macro / micro averages, answer agreement and order sensitivity.
It returns ``None`` when the table lacks the video condition or every ablation condition (textonly,
noframe, single, shuffled, reversed); when the audit cannot run (ambiguous or duplicate rows) the
section says why instead of disappearing.
"""

from __future__ import annotations

from typing import Any


def ablations_section(table: Any, *, video: str = "uniform", n_boot: int | None = None, seed: int = 0,
                      tau: float = 0.15, lam: float = 0.5) -> Any:
    from tempcore.diagnostics.ablations import ABLATIONS, audit_ablations, result_tables
    from tempcore.diagnostics.table import DiagnosticsError
    from tempcore.report.types import Section, TableItem

    if not table.num_rows or "strategy" not in table.column_names:
        return None
    present = set(table.column("strategy").unique().to_pylist())
    if video not in present or not present.intersection(ABLATIONS):
        return None
    title = "Ablations: text only, no frame, one frame, shuffled and reversed frames (TVBench)"
    intro = (f"Each ablation condition beside the video condition {video!r}: accuracy with Wilson and paired "
             "bootstrap intervals, the drop from video, benchmark averages, answer agreement and "
             "order sensitivity (tempcore audit ablations).")
    kwargs: dict[str, Any] = {"video": video, "seed": seed, "tau": tau, "lam": lam}
    if n_boot is not None:
        kwargs["n_boot"] = n_boot
    titles = {"ablation_table": "Accuracy per condition", "ablation_averages": "Benchmark averages",
              "answer_agreement": "Answer agreement", "order_sensitivity": "Order sensitivity"}
    try:
        tables = result_tables(audit_ablations(table, **kwargs))
    except DiagnosticsError as exc:
        return Section("ablations", title, intro=intro, items=[
            TableItem("ablation_table", titles["ablation_table"], unavailable=str(exc), failed=True)])
    needs = {"ablation_table": "an ablation condition beside the video condition",
             "ablation_averages": "an ablation condition beside the video condition",
             "answer_agreement": "two conditions answered on the same samples",
             "order_sensitivity": f"shuffled or reversed predictions beside {video!r}"}
    return Section("ablations", title, intro=intro, items=[
        TableItem(key, titles[key], res, unavailable=None if res.rows else f"no rows: needs {needs[key]}")
        for key, res in tables.items()])


__all__ = ["ablations_section"]
