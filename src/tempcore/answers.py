"""Answer extraction: one shared, priority-ordered parser for option letters and time intervals.

Every model response goes through :func:`extract_choice` (multiple choice, including binary A/B
questions) or :func:`extract_interval` (temporal grounding). Neither ever guesses: when the text
does not name exactly one valid option (or one start/end pair) the result is an explicit parse
failure (``index is None`` / ``start is None``) with an ``error`` saying why. The TempCore paper
counts a parse failure as a wrong answer and ExtremeWhenBench as IoU 0; both report the failure
rate separately, which is why failures are data here, not exceptions.

Choice extraction, in priority order (the first stage that decides wins; ``method`` names it;
every stage with its examples in ``docs/design/models.md``):

1. ``bare``: the whole response is one letter, possibly wrapped (``B``, ``(B)``, ``**B**``).
2. ``answer_phrase``: an explicit statement (``Answer: B``, ``The answer is B``, ``\\boxed{B}``).
   The last match wins; a hedge ("A or B") is a failure; a denied letter is never a candidate.
3. ``leading_letter``: the response starts with a formatted letter (``B. text``, ``(B) text``).
4. ``marker``: formatted letters anywhere (``(C)``, ``option C``); negated mentions and an echo
   of the option list decide nothing.
5. ``option_text_exact``: the response (or its last line) is exactly one option's text.
6. ``plain_letter``: an unformatted capital letter standing alone ("which matches C.").
7. ``option_text``: exactly one option's text occurs inside the response.

In stages 4, 6 and 7, several different letters (or option texts) left is a failure.

Fixed rules across stages: a letter is never read from inside a word or abbreviation, and the
article "A" / pronoun "I" in running text are never letters; the options' own texts are blanked out
before letters are looked for; a bare or stated letter beyond the option count is a failure (the
weaker stages 3, 4 and 6 ignore it); an explicit letter beats a disagreeing option text; lower-case
letters count only when formatted; digits are never letters. Responses are normalised first (NFKC,
quotes, markdown, chat special tokens); only the text after the last ``</think>`` is read, and an
unclosed ``<think>`` is a failure.

Interval extraction (:func:`extract_interval`): see its docstring.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tempcore.errors import TempcoreError
from tempcore.extractor import (  # the one choice parser; stdlib-only, copied into exported tasks
    _QUOTES,
    _SPECIAL_TOKENS,
    METHODS,
    ChoiceArgumentError,
    Extraction,
    normalise_response,
)
from tempcore.extractor import extract_choice as _extract_choice


class AnswerArgumentError(TempcoreError, ChoiceArgumentError):
    """The extractor was called with contradictory arguments (e.g. 4 options but n_options=5)."""


@dataclass(frozen=True)
class IntervalExtraction:
    """A parsed start/end pair in seconds, or a failure (``start is end is None``, ``error`` set).

    ``swapped`` is true when the response gave the end before the start and the pair was reordered.
    """

    start: float | None
    end: float | None
    error: str | None = None
    method: str = "none"
    swapped: bool = False

    @property
    def ok(self) -> bool:
        return self.start is not None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def extract_choice(
    response: str, options: Sequence[str] | None = None, n_options: int | None = None
) -> Extraction:
    """Parse which option a free-text ``response`` chose (:func:`tempcore.extractor.extract_choice`).

    ``options`` are the option texts in the order they were shown (enables option-text matching);
    ``n_options`` gives their number when the texts are unknown. With neither, any letter A-Z is
    accepted. Never raises for any response text; raises :class:`AnswerArgumentError` only when
    ``options`` and ``n_options`` disagree.
    """
    try:
        return _extract_choice(response, options, n_options)
    except ChoiceArgumentError as exc:
        raise AnswerArgumentError(str(exc)) from None


# --- intervals -------------------------------------------------------------------------------

_CLOCK = r"\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?"
_COMPOUND = (
    r"(?:\d+\s*h(?:ours?|rs?)?\s*\d+\s*m(?:in(?:utes?|s)?)?(?:\s*\d+(?:\.\d+)?\s*s(?:ec(?:onds?|s)?)?)?"
    r"|\d+\s*m(?:in(?:utes?|s)?)?\s*\d+(?:\.\d+)?\s*s(?:ec(?:onds?|s)?)?)(?![A-Za-z])"
)
_NUMBER = r"\d+(?:\.\d+)?"
_UNIT = r"(?:\s*(?:seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h)(?![A-Za-z])|\s*%)?"
_V = rf"(?:(?:the\s+)?(?:second|minute)s?\s+)?(?:{_CLOCK}|{_COMPOUND}|{_NUMBER}{_UNIT})"


def _vg(name: str) -> str:
    return rf"(?P<{name}>{_V})"


_INTERVAL_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "labelled",
        re.compile(
            r"\b(?:start(?:ing)?(?:[\s_]*time)?|begin(?:ning|s)?(?:[\s_]*time)?|starts)[\"']?"
            rf"\s*(?:[:=]|is|at|of|from)?\s*(?:at\s+)?{_vg('a')}"
            r".{0,80}?\b(?:end(?:ing)?(?:[\s_]*time)?|ends|finish(?:es)?)[\"']?"
            rf"\s*(?:[:=]|is|at|of)?\s*(?:at\s+)?{_vg('b')}",
            re.IGNORECASE | re.DOTALL,
        ),
    ),
    (
        "from_to",
        re.compile(rf"\bfrom\s+{_vg('a')}\s*(?:to|until|till|through|-|->|~)\s*{_vg('b')}", re.IGNORECASE),
    ),
    ("between", re.compile(rf"\bbetween\s+{_vg('a')}\s*(?:and|-|&)\s*{_vg('b')}", re.IGNORECASE)),
    ("bracket", re.compile(rf"[\[(]\s*{_vg('a')}\s*[,;]\s*{_vg('b')}\s*[\])]", re.IGNORECASE)),
    (
        "range",
        re.compile(
            # not inside decimal-comma numbers ("12,5 - 30,0" is no 5-30 pair)
            rf"(?<![\w.:])(?<!\d,){_vg('a')}\s*(?:-|~|->|to|until|till|through)\s*{_vg('b')}(?![\w:]|,\d)",
            re.IGNORECASE,
        ),
    ),
]
_ANY_VALUE = re.compile(rf"(?<![\w.:]){_V}(?![\w:])", re.IGNORECASE)


def _unit_of(token: str) -> str | None:
    t = token.strip().lower()
    if re.search(r"%$", t):
        return "%"
    m = re.search(r"[\d.]\s*(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h)$", t)
    if m and not re.fullmatch(_COMPOUND, t, re.IGNORECASE):
        return {"s": "s", "m": "m", "h": "h"}[m.group(1)[0]]
    if re.match(r"(?:the\s+)?minutes?\s", t):
        return "m"
    return None


def _to_seconds(token: str, unit: str | None, duration: float | None) -> float:
    t = token.strip().lower()
    t = re.sub(r"^(?:the\s+)?(?:second|minute)s?\s+", "", t)
    if re.fullmatch(_CLOCK, t):
        parts = [float(p) for p in t.split(":")]
        value = 0.0
        for p in parts:
            value = value * 60 + p
        return value
    if re.fullmatch(_COMPOUND, t, re.IGNORECASE):
        value = 0.0
        for num, u in re.findall(r"(\d+(?:\.\d+)?)\s*([hms])", t):
            value += float(num) * {"h": 3600, "m": 60, "s": 1}[u]
        return value
    number = float(re.match(_NUMBER, t).group(0))  # type: ignore[union-attr]
    if unit == "%":
        if duration is None:
            raise ValueError("a position in percent needs the video duration")
        return number / 100.0 * duration
    return number * {None: 1, "s": 1, "m": 60, "h": 3600}[unit]


def extract_interval(
    response: str, *, duration: float | None = None, reversed_pairs: str = "swap"
) -> IntervalExtraction:
    """Parse a start/end pair (seconds) from a free-text grounding answer.

    Accepted forms (case-insensitive, anywhere in the text): labelled ``start: 12.5, end: 30`` (also
    JSON ``{"start": 12.5, "end": 30}`` and "starts at 12.5 s and ends at 30 s"), ``from 12.5s to 30s``,
    ``between 65 and 80 seconds``, ``[12.5, 30.0]`` / ``(12.5, 30.0)``, ``12.5 - 30.0`` (also with
    ``to``, ``~``, en/em dashes). Values are seconds, clock times ``mm:ss`` / ``hh:mm:ss(.ff)``,
    compound ``1m05s`` / ``1h2m3s``, or numbers with a unit (s, min, h); a value without a unit takes
    the other value's unit ("from 1.5 to 2 minutes"); percentages need ``duration``.

    Choices the ExtremeWhenBench paper leaves open, made here: labelled pairs win over unlabelled
    ones; among unlabelled pairs the **last** one in the text wins (as for letters, a model that
    reasons and then answers is read by its answer); with no pair pattern, a text holding exactly two
    time values is read as (start, end); anything else is a failure. ``start > end`` is swapped and
    flagged (``reversed_pairs="swap"``, the default) or is a failure (``"reject"``). ``start == end``
    is a valid, zero-length interval. The grammar has no signs, so times are never negative; a
    value too large for a float (a runaway digit string) is a failure.
    """
    if reversed_pairs not in ("swap", "reject"):
        raise AnswerArgumentError(f"reversed_pairs must be 'swap' or 'reject', not {reversed_pairs!r}")
    if not isinstance(response, str):
        return IntervalExtraction(None, None, f"response is {type(response).__name__}, not text")
    text = unicodedata.normalize("NFKC", response).translate(_QUOTES)
    text = _SPECIAL_TOKENS.sub(" ", text)
    low = text.lower()
    if "</think>" in low:
        text = text[low.rindex("</think>") + len("</think>") :]
    elif "<think>" in low:
        return IntervalExtraction(None, None, "unfinished reasoning: <think> without </think>")
    text = text.replace("**", "").replace("*", "")
    if not text.strip():
        return IntervalExtraction(None, None, "empty response")

    found: tuple[str, str, str] | None = None
    labelled = list(_INTERVAL_PATTERNS[0][1].finditer(text))
    if labelled:
        m = labelled[-1]
        found = ("labelled", m.group("a"), m.group("b"))
    else:
        # the pair that ends last; on a tie the more specific pattern (listed first) wins
        best: tuple[int, str, re.Match[str]] | None = None
        for name, regex in _INTERVAL_PATTERNS[1:]:
            for m in regex.finditer(text):
                if best is None or m.end() > best[0]:
                    best = (m.end(), name, m)
        if best is not None:
            found = (best[1], best[2].group("a"), best[2].group("b"))
        else:
            values = [m.group(0) for m in _ANY_VALUE.finditer(text)]
            if len(values) == 2:
                found = ("two_values", values[0], values[1])
            elif len(values) < 2:
                return IntervalExtraction(
                    None, None, f"{'one time' if values else 'no time'} found; need a start and an end"
                )
            else:
                return IntervalExtraction(None, None, f"{len(values)} numbers and no start/end pair found")

    method, a, b = found
    ua, ub = _unit_of(a), _unit_of(b)
    if ua is None and ub is not None and not re.search(_CLOCK, a):
        ua = ub
    try:
        start, end = _to_seconds(a, ua, duration), _to_seconds(b, ub, duration)
    except ValueError as exc:
        return IntervalExtraction(None, None, str(exc), method)
    if not (math.isfinite(start) and math.isfinite(end)):
        return IntervalExtraction(None, None, "non-finite time", method)
    if start > end:
        if reversed_pairs == "reject":
            return IntervalExtraction(None, None, f"start {start:g} s is after end {end:g} s", method)
        return IntervalExtraction(end, start, None, method, swapped=True)
    return IntervalExtraction(start, end, None, method)


__all__ = [
    "METHODS",
    "AnswerArgumentError",
    "Extraction",
    "IntervalExtraction",
    "extract_choice",
    "extract_interval",
    "normalise_response",
]
