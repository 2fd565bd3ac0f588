"""The HTML report: one self-contained file (inline CSS, inline SVG, inline script, thumbnails as
``data:`` URIs); it fetches nothing, so it opens offline and can be mailed around.

Escaping: every piece of text that comes from a benchmark, a model or the predictions passes
through :func:`html.escape` before it enters the markup; the browser's data sits in a
``<script type="application/json">`` block serialised by :func:`script_json`, which escapes
``<``, ``>`` and ``&`` as ``\\u003c`` etc., so a question holding ``</script>`` cannot end the
block, and the page script only ever assigns that text through ``textContent``.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any
from urllib.parse import quote

from tempcore.report.format import cell, header, is_numeric
from tempcore.report.summary import BAR_ORDER, CATEGORY_LABELS, count_text, readable_params, tpi_text
from tempcore.report.templates import CSS, JS
from tempcore.report.types import FigureItem, Report, TableItem


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def script_json(data: Any) -> str:
    """JSON for a ``<script>`` element: no ``<``, ``>`` or ``&`` survives, NaN becomes null."""
    text = json.dumps(_clean(data), ensure_ascii=False, allow_nan=False, default=str)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def html_table(table: Any) -> str:
    columns = list(table.columns)
    percent = tuple(getattr(table, "percent", ()) or ())
    rows = list(table.rows)
    numeric = {c: is_numeric(rows, c) for c in columns}
    out = ['<div class="scroll"><table class="data">', "<thead><tr>"]
    # a break opportunity after each underscore: long column names wrap instead of widening the table
    out += [f"<th>{esc(header(c, percent)).replace('_', '_<wbr>')}</th>" for c in columns]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>" + "".join(
            f'<td{" class=" + chr(34) + "num" + chr(34) if numeric[c] else ""}>{esc(cell(c, r.get(c), percent))}</td>'
            for c in columns) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _table_item(item: TableItem) -> str:
    parts = [f'<section class="item" id="t-{esc(item.key)}"><h3>{esc(item.title)}</h3>']
    if item.table is None or not item.table.rows:
        parts.append(f'<p class="unavailable">Not available: {esc(item.unavailable or "no rows")}</p>')
    else:
        parts.append(html_table(item.table))
        notes = list(item.table.notes)
        meta = {k: v for k, v in (item.table.meta or {}).items() if v not in ({}, None, 0)}
        if meta:
            notes.append("details: " + json.dumps(_clean(meta), default=str, sort_keys=True))
        if notes:
            parts.append('<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    parts.append("</section>")
    return "".join(parts)


def _figure(item: FigureItem) -> str:
    # the SVG is built by tempcore.report.plots, which escapes every label it writes
    return (f'<figure id="f-{esc(item.key)}">{item.svg}'
            f"<figcaption>{esc(item.caption)}</figcaption></figure>")


def _browser(report: Report) -> str:
    b = report.browser
    if b is None:
        return ""
    notes = "".join(f"<li>{esc(n)}</li>" for n in b.notes)
    cap = (f"At most {b.max_samples} samples per benchmark (all Temporally Sensitive first, then a random "
           f"sample, seed {b.seed}, of the others; change with --max-samples).")
    return f"""
<section id="browser"><h2>Sample browser</h2>
<p>{esc(cap)} {esc(len(b.rows))} samples in this page.</p>
{'<ul class="notes">' + notes + '</ul>' if notes else ''}
<div class="controls">
  <label>Category <select id="f-category"></select></label>
  <label>Benchmark <select id="f-benchmark"></select></label>
  <label>Search <input id="f-search" type="search" placeholder="sample id or question text"></label>
</div>
<p id="browser-status">The browser needs JavaScript.</p>
<div id="browser-pager" class="pager"></div>
<div id="browser-list"></div>
<script type="application/json" id="tempcore-browser-data">{script_json(b.to_json())}</script>
</section>"""


def _bar(b: dict[str, Any]) -> str:
    total = sum(b["counts"].values())
    if not total:
        return ""
    segs = "".join(
        f'<span class="seg cat-{c}" style="width:{100 * b["counts"][c] / total:.3f}%" '
        f'title="{esc(CATEGORY_LABELS[c])}: {b["counts"][c]}"></span>'
        for c in BAR_ORDER if b["counts"][c])
    return f'<div class="bar" role="img" aria-label="{esc(count_text(b))}">{segs}</div>'


def _strip(frames: dict[str, Any], name: str, label: str) -> str:
    s = frames.get(name) or {}
    thumbs = [t for t in (s.get("thumbs") or []) if isinstance(t, str) and t.startswith("data:image/jpeg;base64,")]
    if thumbs:
        imgs = "".join(f'<img src="{esc(t)}" alt="{esc(label)} frame">' for t in thumbs)
        return f'<span class="mini"><span>{esc(label)}</span>{imgs}</span>'
    if s.get("indices"):
        return f'<span class="mini"><span>{esc(label)} frames {esc(", ".join(map(str, s["indices"])))}</span></span>'
    return ""


def _extreme_list(samples: list[dict[str, Any]], title: str, fss_filter: str) -> str:
    if not samples:
        return f"<p><b>{esc(title)}</b>: none</p>"
    items = []
    for x in samples:
        link = (f'#filter={fss_filter}&amp;benchmark={esc(quote(x["benchmark"], safe=""))}'
                f'&amp;q={esc(quote(x["sample_id"], safe=""))}')
        frames = x.get("frames") or {}
        items.append(f'<li><a href="{link}" class="sid">{esc(x["sample_id"])}</a> '
                     f'<span class="muted">({esc(x["benchmark"])}, FSS {x["fss"]:+.3f})</span>'
                     f'{_strip(frames, "maxprob", "MaxProb")}{_strip(frames, "minprob", "MinProb")}</li>')
    return f'<div class="extremes"><b>{esc(title)}</b><ul>{"".join(items)}</ul></div>'


def _summary(report: Report) -> str:
    s = report.summary
    if s is None:
        return ""
    rows = []
    for b in s.benchmarks:
        rows.append(f'<div class="bench"><div class="tpi"><b>{esc(b["benchmark"])}</b> '
                    f'<span class="big">{esc(tpi_text(b, s))}</span></div>{_bar(b)}'
                    f'<div class="counts">{esc(count_text(b))}</div></div>')
    legend = "".join(f'<span class="lg"><span class="sw cat-{c}"></span>{esc(CATEGORY_LABELS[c])}</span>'
                     for c in BAR_ORDER)
    how = (f"Scoring {s.scoring}, FSS mode {s.fss_mode}, tau = {s.tau:g}, lambda = {s.lam:g}. "
           f"Panel ({len(s.panel)} models): {', '.join(s.panel) or 'none'}. "
           f"Encoder: {', '.join(s.encoders) or 'none in the predictions'}.")
    return (f'<section id="summary" class="summary-card"><h2>Summary</h2>{"".join(rows)}'
            f'<div class="legend">{legend}</div><p class="how">{esc(how)}</p>'
            f'<div class="extremes-row">{_extreme_list(s.key_samples, "Most Key (highest FSS)", "key")}'
            f'{_extreme_list(s.anti_key_samples, "Most Anti-key (lowest FSS)", "anti_key")}</div></section>')


def render_html(report: Report) -> str:
    """The whole page."""
    p = report.params
    params = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in readable_params(report))
    toc = "".join(f'<a href="#s-{esc(s.key)}">{esc(s.title)}</a>' for s in report.sections)
    toc += '<a href="#browser">Sample browser</a><a href="#inputs">Inputs and parameters</a>'
    body = []
    for section in report.sections:
        body.append(f'<section id="s-{esc(section.key)}"><h2>{esc(section.title)}</h2>')
        if section.intro:
            body.append(f"<p>{esc(section.intro)}</p>")
        for item in section.items:
            body.append(_table_item(item) if isinstance(item, TableItem) else _figure(item))
        body.append("</section>")
    summary = (f"tau = {p['tau']:g}, lambda = {p['lambda']:g}, FSS mode = {p['fss_mode']}, "
               f"scoring = {p['scoring']}; created {report.created}")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>{esc(report.title)}</title>
<style>{CSS}</style>
</head>
<body>
<header class="top"><h1>{esc(report.title)}</h1><p>{esc(summary)}</p>
<nav class="toc">{toc}</nav></header>
{_summary(report)}
{''.join(body)}
{_browser(report)}
<section id="inputs"><h2>Inputs and parameters</h2><dl class="params">{params}</dl></section>
<script>{JS}</script>
</body>
</html>
"""


__all__ = ["esc", "html_table", "render_html", "script_json"]
