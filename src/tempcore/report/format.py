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


STRATEGY_NAMES = {"maxprob": "MaxProb", "minprob": "MinProb", "uniform": "Uniform", "random": "Random",
                  "oracle": "Oracle", "noframe": "No frames", "single": "Single frame", "shuffled": "Shuffled",
                  "reversed": "Reversed", "aks": "AKS", "bolt": "BOLT", "textonly": "Text only"}
#: condition fields shown in a label only when they differ between the conditions labelled together
_VARYING_ONLY = ("encoder", "fps", "seed", "variant")


def _key_parts(key: str) -> tuple[str, dict[str, str]]:
    strategy, *rest = str(key).split("|")
    fields = {}
    for part in rest:
        name, sep, value = part.partition("=")
        if sep:
            fields[name] = value
    return strategy, fields


def condition_label(key: str, shown: tuple[str, ...] = ()) -> str:
    """A readable label of a condition key: ``maxprob|mode=qa|k=8|encoder=x/y|rotation=1`` ->
    ``MaxProb · QA · K=8 · rotation 1``. Strategy, text mode (not ``none``), K, window and rotation
    always show; ``shown`` adds other fields (an encoder by the last part of its path / hub id)."""
    strategy, f = _key_parts(key)
    parts = [STRATEGY_NAMES.get(strategy, strategy)]
    if f.get("mode") not in (None, "none"):
        parts.append(f["mode"].upper())
    if "k" in f:
        parts.append(f"K={f['k']}")
    if "window" in f:
        parts.append(f"window {f['window']}")
    for name in shown:
        if name in f:
            value = f[name].rstrip("/").rsplit("/", 1)[-1] if name == "encoder" else f[name]
            parts.append(f"{name} {value}")
    if "rotation" in f:
        parts.append(f"rotation {f['rotation']}")
    return " \u00b7 ".join(parts)


def condition_labels(keys: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Readable labels of condition keys shown together: fields such as the encoder, fps or seed
    appear only when they differ among ``keys``; a label that would still be ambiguous is the key."""
    parsed = [_key_parts(k)[1] for k in keys]
    shown = tuple(n for n in _VARYING_ONLY if len({p.get(n) for p in parsed}) > 1)
    labels = {k: condition_label(k, shown) for k in keys}
    counts: dict[str, int] = {}
    for label in labels.values():
        counts[label] = counts.get(label, 0) + 1
    return {k: (label if counts[label] == 1 else k) for k, label in labels.items()}
