r"""The Markdown report: every table, links to the figures (``plots/*.svg``), what is not available.

Benchmark and model text is HTML-escaped (``<`` ``>`` ``&``) and table pipes are escaped, so a
name like ``<script>`` or ``a|b`` renders as text in any Markdown viewer and never breaks a table.
Link and image syntax is escaped too: backslashes, ``[`` and ``]`` get a backslash (so
``[x](javascript:...)`` and ``![](http://...)`` stay text), and ``://`` / ``www.`` are broken
(``:\/\/``, ``www\.``) so that viewers with bare-URL autolinks (GitHub) link nothing either.
Emphasis characters (``*`` ``_``) are left alone: they cannot run code or load anything.
The sample browser lives in ``report.html`` only; the Markdown says how many samples it holds.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from typing import Any

from tempcore.report.format import cell, header, is_numeric
from tempcore.report.summary import count_text, readable_params, tpi_text
from tempcore.report.types import FigureItem, Report, TableItem

_LINK_SYNTAX = str.maketrans({"\\": "\\\\", "[": "\\[", "]": "\\]", "|": "\\|", "\n": " ", "\r": " "})
_AUTOLINK = re.compile(r"://|(?i:\bwww)\.")


def md_text(value: Any) -> str:
    """Text safe inside a Markdown table cell or paragraph (see the module docstring)."""
    text = html.escape(str(value), quote=False).translate(_LINK_SYNTAX)
    return _AUTOLINK.sub(lambda m: ":\\/\\/" if m.group() == "://" else m.group()[:-1] + "\\.", text)


def md_table(table: Any) -> str:
    columns = list(table.columns)
    percent = tuple(getattr(table, "percent", ()) or ())
    rows = list(table.rows)
    head = "| " + " | ".join(md_text(header(c, percent)) for c in columns) + " |"
    align = "|" + "|".join("---:" if is_numeric(rows, c) else ":---" for c in columns) + "|"
    body = ["| " + " | ".join(md_text(cell(c, r.get(c), percent)) for c in columns) + " |" for r in rows]
    return "\n".join([head, align, *body])


def _table_item(item: TableItem) -> list[str]:
    out = [f"### {md_text(item.title)}", ""]
    if item.table is None or not item.table.rows:
        out += [f"*Not available: {md_text(item.unavailable or 'no rows')}.*", ""]
        return out
    out += [md_table(item.table), ""]
    notes = list(item.table.notes)
    meta = {k: v for k, v in (item.table.meta or {}).items() if v not in ({}, None, 0)}
    if meta:
        notes.append("details: " + json.dumps(meta, default=str, sort_keys=True))
    out += [f"- {md_text(n)}" for n in notes]
    return out + ([""] if notes else [])


def render_markdown(report: Report, figure_files: Mapping[str, str] | None = None) -> str:
    """The report as Markdown; ``figure_files`` maps figure keys to the SVG files written beside it."""
    files = dict(figure_files or {})
    p = report.params
    lines = [
        f"# {md_text(report.title)}",
        "",
        f"Created {md_text(report.created)} by tempcore {md_text(report.inputs.get('tempcore_version', ''))}. "
        f"tau = {p['tau']:g}, lambda = {p['lambda']:g}, FSS mode = {md_text(p['fss_mode'])}, "
        f"scoring = {md_text(p['scoring'])}.",
        "",
    ]
    lines += _summary(report)
    unavailable = []
    for section in report.sections:
        lines += [f"## {md_text(section.title)}", ""]
        if section.intro:
            lines += [md_text(section.intro), ""]
        for item in section.items:
            if isinstance(item, TableItem):
                lines += _table_item(item)
                if item.table is None or not item.table.rows:
                    unavailable.append(item)
            elif isinstance(item, FigureItem):
                if item.key in files:
                    lines += [f"![{md_text(item.title)}]({files[item.key]})", ""]
                else:
                    lines += [f"*Figure: {md_text(item.title)} (in report.html).*", ""]
                lines += [f"*{md_text(item.caption)}*", ""] if item.caption else []
    browser = report.browser
    lines += ["## Sample browser", ""]
    if browser is not None:
        lines += [f"`report.html` holds a browser of {len(browser.rows)} samples (question, options, every "
                  "model's answer under every condition, MaxProb / MinProb frames), filterable by category "
                  "and benchmark.", ""]
        lines += [f"- {md_text(n)}" for n in browser.notes]
        lines.append("")
    if unavailable:
        lines += ["## Not available", ""]
        lines += [f"- {md_text(i.title)}: {md_text(i.unavailable)}" for i in unavailable]
        lines.append("")
    lines += ["## Inputs and parameters", ""]
    lines += [f"- {md_text(key)}: {md_text(value)}" for key, value in readable_params(report)]
    lines.append("")
    return "\n".join(lines)


def _summary(report: Report) -> list[str]:
    s = report.summary
    if s is None:
        return []
    out = ["## Summary", ""]
    for b in s.benchmarks:
        out += [f"- **{md_text(b['benchmark'])}**: {md_text(tpi_text(b, s))}. {md_text(count_text(b))}."]
    out += [f"- Scoring {md_text(s.scoring)}, FSS mode {md_text(s.fss_mode)}, tau = {s.tau:g}, "
            f"lambda = {s.lam:g}; panel ({len(s.panel)} models): {md_text(', '.join(s.panel) or 'none')}; "
            f"encoder: {md_text(', '.join(s.encoders) or 'none in the predictions')}."]
    for title, samples in (("Most Key (highest FSS)", s.key_samples), ("Most Anti-key (lowest FSS)",
                                                                         s.anti_key_samples)):
        shown = "; ".join(f"{x['sample_id']} ({x['benchmark']}, FSS {x['fss']:+.3f})" for x in samples)
        out.append(f"- {title}: {md_text(shown or 'none')}.")
    return [*out, ""]


__all__ = ["md_table", "md_text", "render_markdown"]
