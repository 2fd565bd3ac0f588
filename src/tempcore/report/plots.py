"""Plots as SVG text, written by hand: no plotting library, no fonts or scripts fetched.

Four kinds, each a pure function returning one ``<svg>`` element as a string:

* :func:`histogram` — counts of values in fixed bins, bars coloured by a class of the bin centre,
  dashed vertical reference lines (the FSS distribution with the ``±tau`` lines, paper Figs. 4, 11).
* :func:`scatter` — points coloured by category with dashed threshold lines (LIS–FSS, Fig. 13).
  Points at the same position (after rounding to ``grid``) are merged into one circle whose area
  grows with the count, so a hard-scored benchmark (FSS and LIS take few values) shows how many
  samples sit at each spot, and the file stays small for 100k samples.
* :func:`line_plot` — one or more series over a numeric x axis with an optional ±band (oracle
  gap by FSS bin, Figs. 6, 9).
* :func:`grouped_bars` — bars per group and series with optional interval whiskers (MaxProb vs
  MinProb accuracy, Fig. 2).

Every label passes through :func:`html.escape`, so benchmark or model names cannot inject markup.
``standalone=True`` adds the SVG namespace (for ``.svg`` files); inline SVG in HTML needs none,
which keeps the HTML report free of any URL.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence

CATEGORY_COLORS = {
    "trivial": "#9e9e9e",
    "frame_agnostic": "#4c78a8",
    "temporally_grounded": "#2ca02c",
    "visual_bias": "#d62728",
    "incomplete": "#dddddd",
}
FSS_CLASS_COLORS = {"key": "#2ca02c", "non_key": "#9e9e9e", "anti_key": "#d62728"}
SERIES_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d")
CATEGORY_LABELS = {
    "trivial": "Trivial",
    "frame_agnostic": "Frame-Agnostic",
    "temporally_grounded": "Temporally Grounded",
    "visual_bias": "Visual Bias",
    "incomplete": "Incomplete",
    "key": "Key",
    "non_key": "Non-key",
    "anti_key": "Anti-key",
}

_W, _H = 420, 260
_CHAR_PX = 6.0  # width of a character of the 10 px sans-serif labels, a generous estimate
_LABEL_CHARS = 40
_M = {"left": 48, "right": 12, "top": 30, "bottom": 42}


def esc(text: object) -> str:
    """Text for SVG / HTML content and attribute values."""
    return html.escape(str(text), quote=True)


def fmt(x: float) -> str:
    """A tick label: up to 2 decimals, no trailing zeros."""
    text = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _svg(body: list[str], title: str, width: int, height: int, standalone: bool) -> str:
    ns = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""
    head = (
        f'<svg{ns} class="plot" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{esc(title)}" font-family="sans-serif" font-size="10">'
    )
    return "\n".join(
        [head, f"<title>{esc(title)}</title>",
         f'<text x="{width / 2:.1f}" y="16" text-anchor="middle" font-size="12" font-weight="bold">'
         f"{esc(title)}</text>", *body, "</svg>"]
    )


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks, t = [], first
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 10))
        t += step
    return ticks


class _Axes:
    """Linear mapping of data coordinates into the plot area, and the axis drawing."""

    def __init__(self, x: tuple[float, float], y: tuple[float, float], width: int = _W, height: int = _H) -> None:
        self.x0, self.x1 = x
        self.y0, self.y1 = y
        self.width, self.height = width, height
        self.left, self.right = _M["left"], width - _M["right"]
        self.top, self.bottom = _M["top"], height - _M["bottom"]

    def px(self, x: float) -> float:
        return self.left + (x - self.x0) / (self.x1 - self.x0) * (self.right - self.left)

    def py(self, y: float) -> float:
        return self.bottom - (y - self.y0) / (self.y1 - self.y0) * (self.bottom - self.top)

    def frame(self, xlabel: str, ylabel: str, xticks: Sequence[float] | None = None,
              yticks: Sequence[float] | None = None, xtick_labels: Sequence[str] | None = None) -> list[str]:
        out = [f'<rect x="{self.left}" y="{self.top}" width="{self.right - self.left}" '
               f'height="{self.bottom - self.top}" fill="none" stroke="#444" stroke-width="0.8"/>']
        for t in yticks if yticks is not None else nice_ticks(self.y0, self.y1):
            y = self.py(t)
            out.append(f'<line x1="{self.left}" y1="{y:.1f}" x2="{self.right}" y2="{y:.1f}" stroke="#e5e5e5"/>')
            out.append(f'<text x="{self.left - 4}" y="{y + 3:.1f}" text-anchor="end">{esc(fmt(t))}</text>')
        ticks = list(xticks) if xticks is not None else nice_ticks(self.x0, self.x1)
        labels = list(xtick_labels) if xtick_labels is not None else [fmt(t) for t in ticks]
        for t, label in zip(ticks, labels):
            x = self.px(t)
            out.append(f'<line x1="{x:.1f}" y1="{self.bottom}" x2="{x:.1f}" y2="{self.bottom + 4}" stroke="#444"/>')
            out.append(f'<text x="{x:.1f}" y="{self.bottom + 14}" text-anchor="middle">{esc(label)}</text>')
        out.append(f'<text x="{(self.left + self.right) / 2:.1f}" y="{self.height - 8}" '
                   f'text-anchor="middle">{esc(xlabel)}</text>')
        cy = (self.top + self.bottom) / 2
        out.append(f'<text x="12" y="{cy:.1f}" text-anchor="middle" transform="rotate(-90 12 {cy:.1f})">'
                   f"{esc(ylabel)}</text>")
        return out

    def vline(self, x: float, color: str = "#333", label: str | None = None) -> list[str]:
        px = self.px(x)
        out = [f'<line class="ref" x1="{px:.1f}" y1="{self.top}" x2="{px:.1f}" y2="{self.bottom}" '
               f'stroke="{color}" stroke-dasharray="4 3" stroke-width="1.2"/>']
        if label:
            out.append(f'<text x="{px + 2:.1f}" y="{self.top + 10}" fill="{color}">{esc(label)}</text>')
        return out

    def hline(self, y: float, color: str = "#333", label: str | None = None) -> list[str]:
        py = self.py(y)
        out = [f'<line class="ref" x1="{self.left}" y1="{py:.1f}" x2="{self.right}" y2="{py:.1f}" '
               f'stroke="{color}" stroke-dasharray="4 3" stroke-width="1.2"/>']
        if label:
            out.append(f'<text x="{self.right - 2}" y="{py - 3:.1f}" text-anchor="end" fill="{color}">'
                       f"{esc(label)}</text>")
        return out


def _legend(items: Sequence[tuple[str, str]], x: float, y: float, shape: str = "rect") -> list[str]:
    out = []
    for i, (label, color) in enumerate(items):
        yy = y + 12 * i
        if shape == "circle":
            out.append(f'<circle cx="{x + 4}" cy="{yy - 3}" r="4" fill="{color}" fill-opacity="0.75"/>')
        else:
            out.append(f'<rect x="{x}" y="{yy - 8}" width="9" height="9" fill="{color}"/>')
        out.append(f'<text x="{x + 13}" y="{yy}">{esc(label)}</text>')
    return out


def histogram(
    values: Sequence[float],
    *,
    edges: Sequence[float],
    title: str,
    xlabel: str,
    ref_lines: Sequence[float] = (),
    classify: Callable[[float], str] | None = None,
    colors: Mapping[str, str] = FSS_CLASS_COLORS,
    standalone: bool = False,
) -> str:
    """Bars of the counts of ``values`` in the bins ``edges`` (last bin closed); NaNs are ignored.

    ``classify(bin_centre)`` names a class whose colour fills the bar; ``ref_lines`` are dashed
    vertical lines (e.g. ``-tau, tau``).
    """
    edges = [float(e) for e in edges]
    counts = [0] * (len(edges) - 1)
    for v in values:
        if v is None or math.isnan(v) or v < edges[0] or v > edges[-1]:
            continue
        i = next((j for j in range(len(counts)) if v < edges[j + 1]), len(counts) - 1)
        counts[i] += 1
    top = max(counts + [1])
    yticks = nice_ticks(0, top)
    ax = _Axes((edges[0], edges[-1]), (0, max(top, yticks[-1])), _W + (90 if classify else 0), _H)
    if classify:
        ax.right = ax.width - 100
    body = ax.frame(xlabel, "samples", yticks=yticks)
    for i, c in enumerate(counts):
        if not c:
            continue
        lo, hi = edges[i], edges[i + 1]
        cls = classify((lo + hi) / 2) if classify else ""
        color = colors.get(cls, SERIES_COLORS[0])
        x, w = ax.px(lo) + 0.5, ax.px(hi) - ax.px(lo) - 1
        y = ax.py(c)
        body.append(f'<rect class="bar" data-count="{c}" x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.5):.1f}" '
                    f'height="{ax.bottom - y:.1f}" fill="{color}"><title>{esc(f"[{fmt(lo)}, {fmt(hi)}): {c}")}'
                    "</title></rect>")
    for r in ref_lines:
        body += ax.vline(r, label=fmt(r))
    if classify:
        shown = [(CATEGORY_LABELS.get(k, k), col) for k, col in colors.items()]
        body += _legend(shown, ax.right + 10, ax.top + 10)
    return _svg(body, title, ax.width, ax.height, standalone)


def scatter(
    points: Sequence[tuple[float, float, str]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    x_range: tuple[float, float] = (0.0, 1.0),
    y_range: tuple[float, float] = (-1.0, 1.0),
    vlines: Sequence[float] = (),
    hlines: Sequence[float] = (),
    colors: Mapping[str, str] = CATEGORY_COLORS,
    grid: float = 0.01,
    standalone: bool = False,
) -> str:
    """Points ``(x, y, category)``; coincident points (on a ``grid``) merge, area ∝ count."""
    merged: dict[tuple[int, int, str], int] = {}
    for x, y, cat in points:
        if x is None or y is None or math.isnan(x) or math.isnan(y):
            continue
        key = (round(x / grid), round(y / grid), cat)
        merged[key] = merged.get(key, 0) + 1
    ax = _Axes(x_range, y_range, _W + 110, _H + 40)
    ax.right = ax.width - 170
    body = ax.frame(xlabel, ylabel)
    largest = max(merged.values(), default=1)
    order = sorted(merged.items(), key=lambda kv: -kv[1])  # big circles first, small ones stay visible
    for (gx, gy, cat), n in order:
        r = 2.0 + 8.0 * math.sqrt(n / largest)
        body.append(f'<circle class="pt" data-category="{esc(cat)}" data-count="{n}" cx="{ax.px(gx * grid):.1f}" '
                    f'cy="{ax.py(gy * grid):.1f}" r="{r:.1f}" fill="{colors.get(cat, "#000")}" '
                    f'fill-opacity="0.6"><title>{esc(f"{cat}: {n} at ({fmt(gx * grid)}, {fmt(gy * grid)})")}'
                    "</title></circle>")
    for v in vlines:
        body += ax.vline(v, label=fmt(v))
    for h in hlines:
        body += ax.hline(h, label=fmt(h))
    counts: dict[str, int] = {}
    for (_, _, cat), n in merged.items():
        counts[cat] = counts.get(cat, 0) + n
    legend = [(f"{CATEGORY_LABELS.get(c, c)} ({counts[c]})", col) for c, col in colors.items() if c in counts]
    body += _legend(legend, ax.right + 18, ax.top + 10, shape="circle")
    return _svg(body, title, ax.width, ax.height, standalone)


def line_plot(
    series: Mapping[str, Sequence[tuple[float, float | None, float | None]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    x_range: tuple[float, float] | None = None,
    ref_lines: Sequence[float] = (),
    standalone: bool = False,
) -> str:
    """Lines of ``(x, y, band)`` points per series; ``band`` (e.g. 1 SD) shades ``y ± band``.

    A ``None`` y breaks the line (an empty bin).
    """
    xs = [p[0] for pts in series.values() for p in pts]
    ys = [v for pts in series.values() for p in pts if p[1] is not None
          for v in (p[1] - (p[2] or 0), p[1] + (p[2] or 0))]
    lo, hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    yticks = nice_ticks(lo, hi)
    ax = _Axes(x_range or ((min(xs), max(xs)) if xs and max(xs) > min(xs) else (-1.0, 1.0)),
               (min(yticks[0], lo), max(yticks[-1], hi)))
    body = ax.frame(xlabel, ylabel, yticks=yticks)
    for r in ref_lines:
        body += ax.vline(r, color="#777", label=fmt(r))
    legend = []
    for i, (name, pts) in enumerate(series.items()):
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        legend.append((name, color))
        segments: list[list[tuple[float, float, float | None]]] = [[]]
        for x, y, band in sorted(pts, key=lambda p: p[0]):
            if y is None:
                segments.append([])
            else:
                segments[-1].append((x, y, band))
        for seg in segments:
            if not seg:
                continue
            if any(b for _, _, b in seg):
                upper = [(ax.px(x), ax.py(y + (b or 0))) for x, y, b in seg]
                lower = [(ax.px(x), ax.py(y - (b or 0))) for x, y, b in reversed(seg)]
                poly = " ".join(f"{a:.1f},{b:.1f}" for a, b in upper + lower)
                body.append(f'<polygon class="band" points="{poly}" fill="{color}" fill-opacity="0.15"/>')
            path = " ".join(f"{ax.px(x):.1f},{ax.py(y):.1f}" for x, y, _ in seg)
            body.append(f'<polyline class="series" points="{path}" fill="none" stroke="{color}" stroke-width="1.8"/>')
            for x, y, _ in seg:
                body.append(f'<circle cx="{ax.px(x):.1f}" cy="{ax.py(y):.1f}" r="2.5" fill="{color}">'
                            f"<title>{esc(f'{name}: {fmt(x)} -> {fmt(y)}')}</title></circle>")
    body += _legend(legend, ax.left + 6, ax.top + 12)
    return _svg(body, title, _W, _H, standalone)


def grouped_bars(
    groups: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    title: str,
    ylabel: str,
    intervals: Mapping[str, Sequence[tuple[float | None, float | None]]] | None = None,
    y_range: tuple[float, float] | None = None,
    percent: bool = False,
    standalone: bool = False,
) -> str:
    """One cluster of bars per group, one bar per series; ``intervals`` draws (low, high) whiskers.

    ``percent`` shows values (fractions) as percentages on the axis.
    """
    scale = 100.0 if percent else 1.0
    values = [v * scale for vs in series.values() for v in vs if v is not None and not math.isnan(v)]
    highs = [h * scale for iv in (intervals or {}).values() for _, h in iv if h is not None and not math.isnan(h)]
    top = max(values + highs + [0.0])
    lo, hi = y_range if y_range is not None else (min(0.0, *values) if values else 0.0, top if top > 0 else 1.0)
    yticks = nice_ticks(lo, hi)
    # Group labels are rotated 30 degrees and end under their cluster: the margins below and to the
    # left grow with the longest label (at most _LABEL_CHARS characters; longer ones are cut with an
    # ellipsis and keep their full text as a tooltip), so no label is clipped by the picture's edge.
    shown = [g if len(g) <= _LABEL_CHARS else g[: _LABEL_CHARS - 1] + "\u2026" for g in map(str, groups)]
    longest = max((len(g) for g in shown), default=0) * _CHAR_PX
    n_groups = max(len(groups), 1)
    cluster = 28 * max(len(series), 1)
    width = max(_W, 60 + cluster * n_groups)
    below = int(math.ceil(12 + longest * 0.5 + 8))
    first_reach = (longest if not shown else len(shown[0]) * _CHAR_PX) * 0.87
    extra_left = int(max(0.0, math.ceil(first_reach - _M["left"] - cluster / 2 + 6)))
    plot_h = _H + 30 - 62 - _M["top"]
    ax = _Axes((0.0, float(n_groups)), (min(lo, yticks[0]), max(hi, yticks[-1])), width + extra_left,
               _M["top"] + plot_h + max(62, below))
    ax.left += extra_left
    ax.bottom = ax.top + plot_h
    body = ax.frame("", ylabel, xticks=[], yticks=yticks)
    k = max(len(series), 1)
    slot = (ax.px(1) - ax.px(0)) * 0.8 / k
    for gi, group in enumerate(groups):
        cx = ax.px(gi + 0.5)
        gy = ax.bottom + 12
        tip = f"<title>{esc(group)}</title>" if shown[gi] != str(group) else ""
        body.append(f'<text class="group-label" x="{cx:.1f}" y="{gy}" text-anchor="end" '
                    f'transform="rotate(-30 {cx:.1f} {gy})">{tip}{esc(shown[gi])}</text>')
        for si, (name, vals) in enumerate(series.items()):
            v = vals[gi] if gi < len(vals) else None
            if v is None or math.isnan(v):
                continue
            color = SERIES_COLORS[si % len(SERIES_COLORS)]
            x = ax.px(gi + 0.1) + si * slot
            y0, y1 = ax.py(max(0.0, ax.y0)), ax.py(v * scale)
            body.append(f'<rect class="bar" x="{x:.1f}" y="{min(y0, y1):.1f}" width="{slot * 0.92:.1f}" '
                        f'height="{abs(y0 - y1):.1f}" fill="{color}"><title>'
                        f"{esc(f'{group} / {name}: {fmt(v * scale)}')}</title></rect>")
            iv = (intervals or {}).get(name)
            lo_v, hi_v = iv[gi] if iv and gi < len(iv) else (None, None)
            if lo_v is not None and hi_v is not None:
                mx = x + slot * 0.46
                body.append(f'<line class="ci" x1="{mx:.1f}" y1="{ax.py(lo_v * scale):.1f}" x2="{mx:.1f}" '
                            f'y2="{ax.py(hi_v * scale):.1f}" stroke="#222" stroke-width="1"/>')
    body += _legend([(n, SERIES_COLORS[i % len(SERIES_COLORS)]) for i, n in enumerate(series)],
                    ax.left + 6, ax.top + 12)
    return _svg(body, title, ax.width, ax.height, standalone)


__all__ = [
    "CATEGORY_COLORS",
    "CATEGORY_LABELS",
    "FSS_CLASS_COLORS",
    "esc",
    "grouped_bars",
    "histogram",
    "line_plot",
    "nice_ticks",
    "scatter",
]
