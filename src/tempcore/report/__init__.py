"""Reports: ``report.md`` and one self-contained ``report.html`` from a predictions table.

>>> from tempcore.report import build_report, write_report                     # doctest: +SKIP
>>> report = build_report(table, samples_by_benchmark={"nextqa": load_result})  # doctest: +SKIP
>>> write_report(report, "out/")                                               # doctest: +SKIP

:func:`build_report` diagnoses the predictions, runs every analysis of
:mod:`tempcore.diagnostics.analyses` the predictions allow (listing the others with what they
need), draws the figures (:mod:`tempcore.report.plots`) and gathers the sample browser
(:mod:`tempcore.report.browser`); :func:`write_report` renders them
(:mod:`tempcore.report.markdown`, :mod:`tempcore.report.html`).
"""

from tempcore.report.build import FigureItem, Report, Section, TableItem, build_report, write_report

__all__ = ["FigureItem", "Report", "Section", "TableItem", "build_report", "write_report"]
