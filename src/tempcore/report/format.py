"""Cell formatting shared by the Markdown and HTML renderers.

Fractions listed in a table's ``percent`` columns show as percentages with one decimal (the
header says ``(%)``); other floats with three decimals; integers as they are; a missing value
(``None`` / NaN) as an en dash.
"""

from __future__ import annotations

import math
from typing import Any

MISSING = "\u2013"


def header(column: str, percent: tuple[str, ...] | list[str]) -> str:
    return f"{column} (%)" if column in percent else column


def cell(column: str, value: Any, percent: tuple[str, ...] | list[str]) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if column in percent:
            return f"{100 * value:.1f}"
        if value.is_integer() and abs(value) < 1e15 and column in ("tau", "lambda", "fss_bin"):
            return f"{value:g}"
        return f"{value:.3f}"
    if isinstance(value, (dict, list, tuple)):
        return ", ".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else ", ".join(map(str, value))
    return str(value)


def is_numeric(rows: list[dict[str, Any]], column: str) -> bool:
    values = [r.get(column) for r in rows if r.get(column) is not None]
    return bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
