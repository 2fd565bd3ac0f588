"""Option normalisation and answer resolution shared by every multiple-choice loader.

Pure functions over plain values. They raise :class:`~tempcore.benchmarks.rows.InvalidRow` with
a reason when a row cannot become a well-formed multiple-choice sample; the load engine records it
with the file and row. (``RowInvalid`` / ``RowSkipped``, the former names of
:class:`~tempcore.benchmarks.rows.InvalidRow` / :class:`~tempcore.benchmarks.rows.SkippedRow`,
are deprecated aliases kept for loaders written against them.)

Rules (the issue leaves the details open; these are the choices made here):

* **Prefixes.** ``"A. "``, ``"A: "``, ``"A) "`` and ``"(A) "`` are stripped only when *every*
  non-padding option carries one and the letters follow the option positions (A, B, C, ...).
  A single option that happens to start with a capital letter and a period ("B. B. King") is
  left alone. The period / colon forms need whitespace (or the end) after them, so "A.M." is
  not a prefix.
* **Padding.** An option is padding when it is missing (``None`` / NaN), empty after
  stripping, or ``"N/A"`` (any case). Padding is dropped *only* when it is not the answer;
  the answer index is remapped to the remaining options.
* **Answers.** ``letter`` (``"C"``, ``"(C)"``, ``"C."``, any case), ``index`` (0-based int or
  numeric string), ``text`` (exact match against the options as given, then against the
  stripped options, then whitespace- and case-normalised) or ``auto``: every interpretation
  that applies is tried (a JSON integer is an index only; a string may be a letter, an index
  and an option text) and the row is invalid if they disagree, so a file whose options are
  ``["3", "2", "1"]`` with answer ``"2"`` is reported as ambiguous instead of guessed.
* Option counts of 2 to 26 are accepted; fewer is "no options" / "single option".
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from tempcore.benchmarks.rows import InvalidRow, SkippedRow
from tempcore.records import LETTERS

ANSWER_KINDS = ("letter", "index", "text", "auto")
MAX_OPTIONS = len(LETTERS)

_PREFIX = re.compile(r"^\s*(?:\(([A-Z])\)|([A-Z])\)|([A-Z])[.:](?=\s|$))\s*")
_LETTER_ANSWER = re.compile(r"^\(?([A-Za-z])\)?[.:]?$")
_UPPER_LETTER_ANSWER = re.compile(r"^\(?([A-Z])\)?[.:]?$")
_INDEX_ANSWER = re.compile(r"^[+]?\d+$")
_PADDING_TEXTS = {"n/a"}


def option_text(value: Any) -> str | None:
    """An option as text, or ``None`` when the file holds no value (null / NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def is_padding(text: str | None) -> bool:
    """Missing, empty or "N/A" (case-insensitive) after trimming whitespace."""
    return text is None or not text.strip() or text.strip().casefold() in _PADDING_TEXTS


def normalise_text(text: str) -> str:
    """Whitespace collapsed and case folded: the second-chance key of text answers."""
    return " ".join(text.split()).casefold()


def strip_option_prefixes(options: Sequence[str | None]) -> list[str | None]:
    """Strip "A. " / "(A)" / "A)" / "A:" prefixes when every non-padding option has the letter of its
    position; otherwise return the options unchanged (whitespace-trimmed)."""
    trimmed = [None if o is None else o.strip() for o in options]
    checked = 0
    for i, text in enumerate(trimmed):
        if is_padding(text):
            continue
        m = _PREFIX.match(text or "")
        letter = m and (m.group(1) or m.group(2) or m.group(3))
        if i >= MAX_OPTIONS or letter != LETTERS[i]:
            return trimmed
        checked += 1
    if checked < 2:
        return trimmed
    return [None if t is None else _PREFIX.sub("", t, count=1).strip() for t in trimmed]


def _match_text(answer: str, *candidates: Sequence[str | None]) -> int | None:
    """Index of the option equal to ``answer``: exact, then normalised, over each candidate list."""
    for key in (lambda s: s.strip(), normalise_text):
        want = key(answer)
        for options in candidates:
            hits = [i for i, o in enumerate(options) if o is not None and key(o) == want]
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                raise InvalidRow(
                    "ambiguous_answer",
                    f"answer {answer!r} matches options {', '.join(LETTERS[h] for h in hits)} equally",
                )
    return None


def resolve_answer(
    answer: Any,
    options: Sequence[str | None],
    kind: str = "auto",
    *,
    raw_options: Sequence[str | None] | None = None,
) -> int:
    """The 0-based index of the correct option.

    ``options`` are the (prefix-stripped) options in file order, padding included, so letters
    and indices keep the file's meaning; ``raw_options`` are the texts as given (text answers
    are matched against them too). Raises :class:`InvalidRow` when the answer is missing,
    out of range, not among the options, or ambiguous.
    """
    if kind not in ANSWER_KINDS:
        raise ValueError(f"answer kind must be one of {ANSWER_KINDS}, not {kind!r}")
    n = len(options)
    if answer is None or (isinstance(answer, float) and math.isnan(answer)) or answer == "":
        raise InvalidRow("missing_field", "missing required field: answer")
    if isinstance(answer, bool):
        raise InvalidRow("unresolvable_answer", f"answer {answer!r} is a boolean, not an option")
    candidates: dict[str, int] = {}
    problems: list[str] = []

    def index_of(value: int, how: str) -> None:
        if 0 <= value < n:
            candidates[how] = value
        else:
            problems.append(f"{how} {value} outside {n} options")

    if isinstance(answer, (int, float)):
        if isinstance(answer, float) and not answer.is_integer():
            raise InvalidRow("unresolvable_answer", f"answer {answer!r} is not an option index")
        if kind in ("index", "auto"):
            index_of(int(answer), "index")
        elif kind == "text":
            hit = _match_text(option_text(answer) or "", options, raw_options or ())
            if hit is not None:
                candidates["text"] = hit
        else:
            problems.append(f"{answer!r} is not a letter")
    else:
        text = str(answer).strip()
        if kind in ("letter", "auto"):
            m = (_LETTER_ANSWER if kind == "letter" else _UPPER_LETTER_ANSWER).match(text)
            if m:
                index_of(LETTERS.index(m.group(1).upper()), "letter")
            elif kind == "letter":
                problems.append(f"{text!r} is not a letter")
        if kind in ("index", "auto"):
            if _INDEX_ANSWER.match(text):
                index_of(int(text), "index")
            elif kind == "index":
                problems.append(f"{text!r} is not an index")
        if kind in ("text", "auto"):
            hit = _match_text(text, options, raw_options or ())
            if hit is not None:
                candidates["text"] = hit
            elif kind == "text":
                problems.append("no option has this text")
    distinct = set(candidates.values())
    if len(distinct) == 1:
        return distinct.pop()
    if len(distinct) > 1:
        readings = ", ".join(f"as {how}: {LETTERS[i]}" for how, i in candidates.items())
        raise InvalidRow("ambiguous_answer", f"answer {answer!r} is ambiguous ({readings})")
    detail = "; ".join(problems) if problems else "not a letter, an index or an option text"
    raise InvalidRow("unresolvable_answer", f"answer {answer!r} cannot be resolved: {detail}")


def build_choices(raw_options: Any, answer: Any, *, answer_kind: str) -> tuple[tuple[str, ...], int]:
    """Normalised options and the answer's index in them (see the module docstring)."""
    if raw_options is None:
        raise InvalidRow("no_options", "no options")
    if isinstance(raw_options, (str, bytes)) or not isinstance(raw_options, Sequence):
        raise InvalidRow("no_options", f"options must be a list, not {type(raw_options).__name__}")
    texts = [option_text(o) for o in raw_options]
    if len(texts) > MAX_OPTIONS:
        raise InvalidRow("too_many_options", f"{len(texts)} options; at most {MAX_OPTIONS} are supported")
    real = sum(not is_padding(t) for t in texts)
    if real == 0:
        raise InvalidRow(
            "no_options", "no options" if not texts else f"no options (all {len(texts)} are padding)"
        )
    stripped = strip_option_prefixes(texts)
    index = resolve_answer(answer, stripped, answer_kind, raw_options=texts)
    keep = [i for i, t in enumerate(stripped) if i == index or not is_padding(t)]
    if len(keep) < 2:
        raise InvalidRow(
            "single_option", "single option" + (" after dropping padding" if len(texts) > 1 else "")
        )
    options = tuple((stripped[i] or "").strip() for i in keep)
    return options, keep.index(index)


_DEPRECATED = {"RowInvalid": InvalidRow, "RowSkipped": SkippedRow}


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED:
        import warnings

        new = _DEPRECATED[name].__name__
        warnings.warn(f"tempcore.benchmarks.choices.{name} is deprecated; use tempcore.benchmarks.{new}",
                      DeprecationWarning, stacklevel=2)
        return _DEPRECATED[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ANSWER_KINDS",
    "MAX_OPTIONS",
    "InvalidRow",
    "SkippedRow",
    "build_choices",
    "is_padding",
    "normalise_text",
    "option_text",
    "resolve_answer",
    "strip_option_prefixes",
]
