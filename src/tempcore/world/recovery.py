"""How well an audit recovers the categories planted in a synthetic world.

``recovery(planted, recovered)`` compares, per sample id, the category planted by the generator with
the category the diagnosis assigned (:func:`tempcore.diagnostics.diagnose`, ``Diagnosis.category``):

- ``confusion[planted][recovered]``: counts, every planted category (trivial, frame_agnostic,
  temporally_grounded, visual_bias) x every recovered category (the same four + ``incomplete``),
  zeros included, so the shape never changes;
- ``temporally_sensitive``: precision and recall of "Temporally Sensitive" (temporally grounded or
  visual bias, the paper's TempCore subset) as a binary decision;
- ``trivial``: precision and recall of "Trivial".

Choices (the paper defines none of this; it cannot observe the truth):

- A planted sample with no recovered category, or recovered as ``incomplete`` (some model lacks a
  needed prediction), is counted in the ``incomplete`` column: it is *not* predicted positive, so it
  lowers recall, never precision.
- precision = TP / (TP + FP) over the samples recovered as positive; recall = TP / (TP + FN) over the
  samples planted positive. With no recovered positives precision is undefined and reported as
  ``None`` (JSON ``null``), never as 0 or 1; likewise recall with no planted positives.
- A recovered sample id that was never planted, or an unknown category name, is an error
  (:class:`RecoveryError`): predictions of another world must not be scored against this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tempcore.errors import TempcoreError

PLANTED = ("trivial", "frame_agnostic", "temporally_grounded", "visual_bias")
RECOVERED_CATEGORIES = (*PLANTED, "incomplete")
TEMPORALLY_SENSITIVE = frozenset({"temporally_grounded", "visual_bias"})


class RecoveryError(TempcoreError):
    """Planted and recovered categories cannot be compared (names the sample ids and the reason)."""


def _ratio(num: int, den: int) -> float | None:
    return None if den == 0 else num / den


def precision_recall(pairs: list[tuple[str, str]], positive: frozenset[str]) -> dict[str, float | None]:
    """Precision and recall of "recovered in ``positive``" against "planted in ``positive``"."""
    tp = sum(1 for p, r in pairs if p in positive and r in positive)
    predicted = sum(1 for _, r in pairs if r in positive)
    actual = sum(1 for p, _ in pairs if p in positive)
    return {"precision": _ratio(tp, predicted), "recall": _ratio(tp, actual)}


def recovery(planted: Mapping[str, str], recovered: Mapping[str, str]) -> dict[str, Any]:
    """Confusion matrix and precision / recall of planted vs recovered categories.

    ``planted``: ``{sample_id: category}`` from the world (``WorldManifest.planted()``, or the
    ``planted`` field of its annotations); ``recovered``: ``{sample_id: category}`` from a diagnosis.
    Returns ``{"temporally_sensitive": {"precision", "recall"}, "trivial": {"precision", "recall"},
    "confusion": {planted: {recovered: count}}}`` (see the module docstring for the conventions).
    """
    bad = sorted({c for c in planted.values() if c not in PLANTED})
    if bad:
        raise RecoveryError(f"unknown planted categor{'ies' if len(bad) > 1 else 'y'} {bad}; known: {PLANTED}")
    bad = sorted({c for c in recovered.values() if c not in RECOVERED_CATEGORIES})
    if bad:
        raise RecoveryError(
            f"unknown recovered categor{'ies' if len(bad) > 1 else 'y'} {bad}; known: {RECOVERED_CATEGORIES}"
        )
    foreign = sorted(set(recovered) - set(planted))
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise RecoveryError(f"{len(foreign)} recovered sample(s) were never planted: {shown}")
    pairs = [(p, recovered.get(sid, "incomplete")) for sid, p in planted.items()]
    confusion = {p: dict.fromkeys(RECOVERED_CATEGORIES, 0) for p in PLANTED}
    for p, r in pairs:
        confusion[p][r] += 1
    return {
        "temporally_sensitive": precision_recall(pairs, TEMPORALLY_SENSITIVE),
        "trivial": precision_recall(pairs, frozenset({"trivial"})),
        "confusion": confusion,
    }


def format_recovery(result: Mapping[str, Any], title: str = "") -> str:
    """The recovery as a text table (what ``tempcore world validate`` prints)."""
    short = {"trivial": "Trivial", "frame_agnostic": "Fr.Agn", "temporally_grounded": "Temp.Grnd",
             "visual_bias": "Vis.Bias", "incomplete": "incompl."}
    width = max(len("planted \\ recovered"), *(len(p) for p in PLANTED))
    head = "planted \\ recovered".ljust(width) + "".join(f"{short[r]:>10}" for r in RECOVERED_CATEGORIES)
    lines = [title] if title else []
    lines += [head, "-" * len(head)]
    for p in PLANTED:
        row = result["confusion"][p]
        lines.append(p.ljust(width) + "".join(f"{row[r]:>10}" for r in RECOVERED_CATEGORIES))

    def num(x: float | None) -> str:
        return "undefined" if x is None else f"{x:.3f}"

    for key, label in (("temporally_sensitive", "Temporally Sensitive"), ("trivial", "Trivial")):
        pr = result[key]
        lines.append(f"{label}: precision {num(pr['precision'])}, recall {num(pr['recall'])}")
    return "\n".join(lines)


__all__ = [
    "PLANTED",
    "RECOVERED_CATEGORIES",
    "TEMPORALLY_SENSITIVE",
    "RecoveryError",
    "format_recovery",
    "precision_recall",
    "recovery",
]
