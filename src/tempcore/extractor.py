"""The multiple-choice answer extractor of tempcore: standard library only, no other imports.

This module is the one parser of option letters. :mod:`tempcore.answers` re-exports it (its docstring
states the rules: seven priority-ordered stages, never a guess, parse failures as data), and every
lmms-eval task that ``tempcore export tempcore --format lmms-eval`` writes carries a verbatim copy of
this file (``tempcore_extractor.py``), so the task scores responses exactly as tempcore does whether or
not tempcore is installed where lmms-eval runs. Keep it free of imports beyond the standard library
(a test checks): the copy must import on its own.

``extract_choice(response, options=None, n_options=None) -> Extraction`` is the entry point.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
METHODS = (
    "bare",
    "answer_phrase",
    "leading_letter",
    "marker",
    "option_text_exact",
    "plain_letter",
    "option_text",
)


class ChoiceArgumentError(ValueError):
    """The extractor was called with contradictory arguments (e.g. 4 options but n_options=5)."""


@dataclass(frozen=True)
class Extraction:
    """The parsed answer of one response.

    ``index`` is the 0-based option index in the order the options were shown, ``letter`` its
    letter; both ``None`` on a parse failure, when ``error`` says why. ``method`` names the stage
    that decided (see the module docstring), or the stage that failed, or ``"none"``.
    """

    index: int | None
    letter: str | None
    method: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.index is not None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- normalisation ---------------------------------------------------------------------------

_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u300c": '"',
        "\u300d": '"',
        "\u300e": '"',
        "\u300f": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u00a0": " ",
        "`": "",
    }
)
_SPECIAL_TOKENS = re.compile(
    r"<\|[^|<>\n]{1,40}\|>|</?s>|<end_of_utterance>|<eos>|<bos>|<pad>|<unk>|\[/?INST\]", re.IGNORECASE
)
_ANSWER_TAG = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.IGNORECASE | re.DOTALL)
_BOXED = re.compile(r"\\boxed\s*\{\s*(?:\\text(?:bf)?\s*\{\s*)?([^{}]*?)\s*\}?\s*\}")
_ROLE = re.compile(r"^\s*(?:assistant|gpt|model|bot)\s*(?::|\n)\s*", re.IGNORECASE)
_BULLET = re.compile(r"^[ \t]*(?:[-\u2022+][ \t]+|#{1,6}[ \t]+|>[ \t]*)", re.MULTILINE)
# Letter lists are instruction echoes, never answers: "A, B, C, or D", "A/B/C/D", "A. B. C." (three or
# more letters) and "(A or B)", "with A or B".
_SEP = r"(?:[ \t]*[,/][ \t]*(?:or[ \t]+|and[ \t]+)?|[ \t]+(?:or|and)[ \t]+)"
_SEP3 = rf"(?:[.)]?{_SEP}|[.)][ \t]+)"
_ENUM3 = re.compile(rf"(?<![A-Za-z0-9'])[A-Z](?:{_SEP3}[A-Z]){{2,}}[.)]?(?![A-Za-z0-9])")
_ENUM2 = re.compile(
    rf"(?:\(\s*(?-i:[A-Z]){_SEP}(?-i:[A-Z])\s*\)"
    rf"|\b(?:with|between|among)\s+(?:the\s+)?(?:letters?\s+)?(?-i:[A-Z]){_SEP}(?-i:[A-Z])(?![A-Za-z0-9]))",
    re.IGNORECASE,
)


def normalise_response(response: str) -> tuple[str, str | None]:
    """The cleaned text the stages read, and an error when nothing readable is left."""
    text = unicodedata.normalize("NFKC", response).translate(_QUOTES)
    text = _SPECIAL_TOKENS.sub(" ", text)
    low = text.lower()
    if "</think>" in low:
        text = text[low.rindex("</think>") + len("</think>") :]
    elif "<think>" in low:
        return "", "unfinished reasoning: <think> without </think>"
    text = _ANSWER_TAG.sub(lambda m: f"\nAnswer: {m.group(1)}\n", text)
    text = _BOXED.sub(lambda m: f" Answer: {m.group(1)} ", text)
    text = text.replace("$", " ").replace("**", "").replace("__", "").replace("*", "")
    text = _ROLE.sub("", text)
    text = _BULLET.sub("", text)
    text = _ENUM3.sub(" ", text)
    text = _ENUM2.sub(" ", text)
    text = re.sub(r"[ \t]+", " ", text)
    text = "\n".join(line.strip() for line in text.split("\n")).strip()
    if not text:
        return (
            "",
            "empty response"
            if not response.strip()
            else "nothing left after removing markup and letter lists",
        )
    return text, None


@functools.lru_cache(maxsize=4096)  # a run parses many responses against the same option texts
def _norm_text(s: str) -> str:
    """Lower case, punctuation to spaces, single spaces: for comparing option texts."""
    s = unicodedata.normalize("NFKC", s).translate(_QUOTES).lower()
    s = re.sub(r"[^\w\s]|_", " ", s)
    return " ".join(s.split())


# --- letter tokens ---------------------------------------------------------------------------

_OPEN = r"[(\[{<\"']"
_CLOSE = r"[)\]}>\"']"
# one letter, maybe bracketed or quoted, never part of a word or abbreviation ("T" in "The", "S" and
# "C" in "U.S." / "D.C.", "X" in "X-ray", "B" in "B&W")
_TOKEN = (
    rf"(?<![A-Za-z0-9'&])(?<![A-Za-z]\.)(?P<open>{_OPEN})?(?P<letter>[A-Za-z])(?P<close>{_CLOSE})?"
    r"(?![A-Za-z0-9]|['.\-&][A-Za-z])"
)

# Words that can follow the letter "A" or "I" only when it names an option ("A is correct").
_LETTER_VERBS = frozenset(
    "is isn't seems appears looks matches fits describes corresponds remains has does doesn't was wasn't "
    "because since as given which would should or and shows depicts states says indicates suggests captures "
    "reflects".split()
)
_PRONOUN_VERBS = _LETTER_VERBS - {"was", "wasn't", "would", "should", "does", "doesn't", "has", "as", "and"}
_NEGATED_AFTER = re.compile(
    r"^[)\]]?\s*(?:is|was|seems|appears|looks|would\s+be)?\s*"
    r"(?:not\b|n't\b|isn't\b|incorrect|wrong|false|unlikely|impossible|irrelevant|doesn't|does\s+not|"
    r"can\s+be\s+(?:ruled\s+out|eliminated|excluded)|(?:is\s+)?(?:ruled\s+out|eliminated|excluded))",
    re.IGNORECASE,
)
_NEGATED_BEFORE = re.compile(
    r"(?:(?:\bnot|n't|\bcannot|\bnever)(?:\s+be)?|\bexcept|\bexcluding|\bunlike|\brather\s+than|"
    r"\binstead\s+of|\brule\s+out|\bruled\s+out|\beliminate[sd]?|\bthan|\bnor|\bneither|\bbesides)"
    r"\s+(?:(?:the\s+)?(?:option|choice|answer)\s*)?[(\[]?$",
    re.IGNORECASE,
)


def _hedge_letter(name: str) -> str:
    return rf"(?:(?:option|choice)\s*)?{_OPEN}?(?P<{name}>(?-i:[A-Z])){_CLOSE}?(?![A-Za-z0-9])"


# "A or B", "A and (C)", "A/B", and "A, B" when the comma list ends there ("A, C is wrong" is no hedge)
_HEDGE_AFTER = re.compile(
    rf"^\s*(?:,?\s*(?:or|and|/|&)\s*{_hedge_letter('h1')}"
    rf"|,\s*{_hedge_letter('h2')}(?=\s*(?:$|[.,;:!?)\n]|(?:or|and)\b)))",
    re.IGNORECASE,
)


# "A. B. C." -- a second formatted letter right after the first: a list, not an answer
_LIST_AFTER = re.compile(rf"^\s*{_OPEN}?(?P<h3>(?-i:[A-Z]))(?:{_CLOSE}|[.:])(?:\s|$)")


def _second_letter(after: str) -> tuple[int, str] | None:
    """The other letter of "B and C" / "B, C." / "B. C." right after a letter: (offset, letter)."""
    m = _HEDGE_AFTER.match(after)
    if m:
        group = "h1" if m.group("h1") else "h2"
        return m.start(group), m.group(group)
    m = _LIST_AFTER.match(after)
    return (m.start("h3"), m.group("h3")) if m else None


# what may follow a plain "A" / "I" that names an option: a word (checked by _is_word_use), the end,
# punctuation or a line break
_AI_END = re.compile(r"[ \t]+[A-Za-z]|\s*$|[ \t]*[.,;:!?)\n]")
_NEGATED_PHRASE = re.compile(r"(?:\bnot|n't|\bnever)\s*$", re.IGNORECASE)


def _is_word_use(letter: str, enclosed: bool, after: str) -> bool:
    """True when an unbracketed token reads as a word, not a letter: "A man", "I think", "b the".

    Capitals other than A and I are always letters; A, I and lower-case letters followed by a word
    are letters only when that word is one an option letter takes ("A is correct", "b because").
    """
    if enclosed or (letter.isupper() and letter not in "AI"):
        return False
    m = re.match(r"[ \t]+([A-Za-z][A-Za-z']*)", after)
    if not m:
        return False  # followed by punctuation, a newline or the end
    word = m.group(1).lower()
    allowed = _PRONOUN_VERBS if letter in "Ii" else _LETTER_VERBS
    return word not in allowed


@dataclass
class _Cand:
    pos: int
    letter: str  # upper case
    kind: str
    negated: bool = False
    positive: bool = False
    hedge: str | None = None


def _letter_index(letter: str, n: int) -> int | None:
    i = LETTERS.index(letter.upper())
    return i if i < n else None


# --- stage 1: bare -----------------------------------------------------------------------------

_BARE = re.compile(
    rf"^(?:(?:option|choice|letter|answer)\s*[:\-]?\s*)?{_OPEN}*\s*"
    rf"(?<![A-Za-z])([A-Za-z])\s*{_CLOSE}*[\s.,:;!]*$",
    re.IGNORECASE,
)

# --- stage 2: answer phrases -------------------------------------------------------------------

_PHRASES = [
    r"(?:final|correct|right|best|true|most\s+(?:likely|appropriate|accurate|suitable|plausible))\s+"
    r"(?:answer|option|choice|letter|one|match)(?:\s+(?:is|would\s+be|should\s+be|will\s+be|must\s+be|=))?",
    r"(?<!\w)answers?(?:\s+(?:is|would\s+be|should\s+be|will\s+be|must\s+be|=))?",
    r"(?:the|my)\s+(?:option|choice|letter|pick|selection|one)\s+(?:is|would\s+be|should\s+be|must\s+be)",
    r"(?:option|choice|letter|selection|pick)\s*[:=]",
    r"\bi(?:\s+would|\s+will|'d|'ll)?\s+(?:choose|pick|select|go\s+with|say|answer|opt\s+for|guess)",
    r"\b(?:i\s+)?(?:think|believe|guess|conclude)(?:\s+that)?"
    r"(?:\s+it(?:'s|\s+is|\s+would\s+be|\s+must\s+be))?",
    r"\bit(?:'s|\s+is|\s+must\s+be|\s+should\s+be|\s+would\s+be)",
    r"\b(?:therefore|thus|hence|so|consequently)\b",
    r"答案\s*(?:是|为)?",
]
_FILLER = (
    r"(?:[\s:=\->,\"']|\b(?:is|be|would|will|likely|probably|most|definitely|clearly|certainly|option|choice|"
    r"letter|the|either)\b)*?"
)
_PHRASE_RE = re.compile(rf"(?:{'|'.join(_PHRASES)}){_FILLER}{_TOKEN}", re.IGNORECASE)
_POSTFIX_RE = re.compile(
    rf"(?:\b(?:option|choice)\s*)?{_TOKEN}\s*(?:is|would\s+be|seems\s+to\s+be|must\s+be)\s+"
    r"(?:the\s+)?(?:most\s+)?"
    r"(?:correct|right|best|accurate|appropriate|likely|plausible|answer)\b",
    re.IGNORECASE,
)


_RETRACT = re.compile(
    rf"(?:\bno\b|\bwait\b|\bactually\b|\bcorrection\b|on\s+second\s+thought|\binstead\b)"
    rf"[\s,.:;!-]*(?:(?:it's|it\s+is|option|choice)\s*)?{_TOKEN}",
    re.IGNORECASE,
)


def _phrase_candidates(text: str) -> tuple[list[_Cand], set[int]]:
    """Letters stated as the answer, in order; and positions of letters explicitly denied."""
    cands = []
    denied: set[int] = set()
    for regex, kind in ((_PHRASE_RE, "phrase"), (_POSTFIX_RE, "postfix")):
        for m in regex.finditer(text):
            letter = m.group("letter")
            enclosed = bool(m.group("open") or m.group("close"))
            after = text[m.end() :]
            if kind == "phrase":
                if _is_word_use(letter, enclosed, after):
                    continue
                if _NEGATED_PHRASE.search(text[: m.start()]) or _NEGATED_AFTER.match(after):
                    denied.add(m.start("letter"))  # "I don't think it's A", "the answer is B is wrong"
                    continue
            hedge = _HEDGE_AFTER.match(after) if kind == "phrase" else None
            cands.append(
                _Cand(
                    m.start("letter"), letter.upper(), kind, hedge=hedge.group(0).strip() if hedge else None
                )
            )
    cands.sort(key=lambda c: c.pos)
    return cands, denied


# --- stages 3/4: formatted letters ------------------------------------------------------------

_LEADING = re.compile(
    rf"^(?:(?:option|choice)\s*)?(?:{_OPEN}(?P<l1>[A-Za-z]){_CLOSE}(?=\s|$|[.,:;!-])"
    r"|(?<![A-Za-z])(?P<l2>[A-Za-z])(?:[.:)](?=\s|$)|\s*-\s|[ \t]*(?=\n)))",
    re.IGNORECASE,
)
_MARKERS = [
    (
        re.compile(
            r"(?<![A-Za-z0-9])(?:option|choice)s?\s*[(\[]?(?<![A-Za-z])(?P<letter>[A-Za-z])[)\]]?"
            r"(?![A-Za-z0-9])",
            re.IGNORECASE,
        ),
        "option",
    ),
    (re.compile(r"(?<![A-Za-z0-9])[(\[{<](?P<letter>[A-Za-z])[)\]}>](?![A-Za-z0-9])"), "enclosed"),
    (re.compile(r"(?m)^(?P<letter>[A-Za-z])[.:)](?=\s|$)"), "line"),
    (re.compile(r"(?<=\s)(?P<letter>[A-Za-z])\)(?=\s|$|[.,;:])"), "paren"),
]
_POSITIVE_WORDS = re.compile(
    r"\b(?:correct|right|true|matches|match|consistent|accurate|best|fits)\b", re.IGNORECASE
)
_NEGATIVE_WORDS = re.compile(
    r"\b(?:not|no|isn't|doesn't|incorrect|wrong|false|unlikely|irrelevant|eliminated|ruled|contradicts|"
    r"inconsistent)\b|n't\b",
    re.IGNORECASE,
)


def _strip_options(text: str, options: Sequence[str] | None) -> str:
    """``text`` with every occurrence of an option's own text blanked out (whole words only)."""
    if not options:
        return text
    for opt in sorted({o.strip() for o in options}, key=len, reverse=True):
        if len(opt) > 1:
            text = _whole_words(opt).sub(" ", text)
    return text


@functools.lru_cache(maxsize=4096)
def _whole_words(opt: str) -> re.Pattern[str]:
    """The pattern of ``opt`` as whole words, any case (compiled once per option text)."""
    return re.compile(rf"(?<!\w){re.escape(opt)}(?!\w)", re.IGNORECASE)


def _marker_candidates(text: str, options: Sequence[str] | None) -> list[_Cand]:
    """Formatted letters anywhere, with negation and (for line-start markers) the line's verdict."""
    cands: dict[int, _Cand] = {}
    for regex, kind in _MARKERS:
        for m in regex.finditer(text):
            pos = m.start("letter")
            if pos in cands:
                continue
            before, after = text[: m.start()], text[m.end() :]
            cand = _Cand(pos, m.group("letter").upper(), kind)
            cand.negated = bool(_NEGATED_AFTER.match(after) or _NEGATED_BEFORE.search(before[-40:]))
            if kind == "line":
                rest = _strip_options(after.split("\n", 1)[0], options)
                neg = bool(_NEGATIVE_WORDS.search(rest))
                cand.negated = cand.negated or neg
                cand.positive = not neg and bool(_POSITIVE_WORDS.search(rest))
            cands[pos] = cand
            second = _second_letter(after)
            if second and not cand.negated:  # "options B and D", "A. B.": both are named
                pos2 = m.end() + second[0]
                cands.setdefault(pos2, _Cand(pos2, second[1], kind))
    return sorted(cands.values(), key=lambda c: c.pos)


def _echo_positions(cands: list[_Cand]) -> set[int]:
    """Positions of line-start markers that list A, B, C, ... in order (three or more): an echo of
    the options, not an answer. Empty when there is no such list."""
    lines = [c for c in cands if c.kind == "line"]
    k = 0
    while k < len(lines) and lines[k].letter == LETTERS[k]:
        k += 1
    return {c.pos for c in lines[:k]} if k >= 3 else set()


def _decide(cands: list[_Cand], n: int, method: str) -> Extraction | None:
    """Last positive candidate, else the single remaining letter, else a failure on several."""
    valid = [c for c in cands if not c.negated and _letter_index(c.letter, n) is not None]
    if not valid:
        return None
    positive = [c for c in valid if c.positive]
    if positive:
        return _ok(positive[-1].letter, method)
    letters = sorted({c.letter for c in valid})
    if len(letters) == 1:
        return _ok(letters[0], method)
    return Extraction(
        None, None, method, f"several options named ({', '.join(letters)}) without a clear choice"
    )


def _ok(letter: str, method: str) -> Extraction:
    letter = letter.upper()
    return Extraction(LETTERS.index(letter), letter, method)


# --- stages 5/7: option text -----------------------------------------------------------------

# the text after the last "answer", "option", "choice" or "is" of a line ("This is the answer: blue")
_AFTER_PHRASE = re.compile(
    r"^.*\b(?:answer(?:\s+is)?|option(?:\s+is)?|choice(?:\s+is)?|is)\s*[:\-]?\s*(?P<rest>[^\n]+)$",
    re.IGNORECASE,
)


def _option_text_exact(text: str, options: Sequence[str]) -> int | None:
    """The option whose text is the whole response, its last line, or what follows its answer phrase."""
    normed = [_norm_text(o) for o in options]
    lines = [ln for ln in text.split("\n") if ln.strip()]
    candidates = [text, lines[-1] if lines else ""]
    for line in (lines[0] if lines else "", lines[-1] if lines else ""):
        m = _AFTER_PHRASE.search(line)
        if m:
            candidates.append(m.group("rest"))
    for cand in candidates:
        c = _norm_text(cand)
        if not c:
            continue
        hits = {i for i, o in enumerate(normed) if o and o == c}
        if len(hits) == 1:
            return hits.pop()
    return None


def _option_text_contained(text: str, options: Sequence[str]) -> tuple[int | None, list[int]]:
    """The one option whose text occurs in the response (whole words), and all options that occur."""
    resp = f" {_norm_text(text)} "
    normed = [_norm_text(o) for o in options]
    hits = [i for i, o in enumerate(normed) if o and f" {o} " in resp]
    # an option contained in another matching option is that longer option's text
    hits = [
        i
        for i in hits
        if not any(j != i and normed[i] != normed[j] and f" {normed[i]} " in f" {normed[j]} " for j in hits)
    ]
    distinct = sorted({normed[i] for i in hits})
    if len(distinct) == 1 and len(hits) == 1:
        return hits[0], hits
    return None, hits


# --- the extractor -----------------------------------------------------------------------------

_REFUSAL = re.compile(
    r"i'?m\s+sorry|i\s+(?:cannot|can't|can\s+not|am\s+unable|'m\s+unable|am\s+not\s+able)|unable\s+to|"
    r"cannot\s+be\s+determined|not\s+possible\s+to|can't\s+(?:determine|tell|see)|as\s+an\s+ai|"
    r"none\s+of\s+the\s+(?:above|options|choices|answers)|"
    r"no\s+(?:video|frames?|images?)\s+(?:is|are|was|were)",
    re.IGNORECASE,
)


def _resolve_n(options: Sequence[str] | None, n_options: int | None) -> int:
    if options is not None and len(options) > 0:
        if n_options is not None and n_options != len(options):
            raise ChoiceArgumentError(f"{len(options)} options given but n_options={n_options}")
        n = len(options)
    elif n_options is not None:
        n = n_options
    else:
        n = len(LETTERS)
    if not 1 <= n <= len(LETTERS):
        raise ChoiceArgumentError(f"the number of options must be 1..{len(LETTERS)}, not {n}")
    return n


def extract_choice(
    response: str, options: Sequence[str] | None = None, n_options: int | None = None
) -> Extraction:
    """Parse which option a free-text ``response`` chose (see the module docstring for the rules).

    ``options`` are the option texts in the order they were shown (enables option-text matching);
    ``n_options`` gives their number when the texts are unknown. With neither, any letter A-Z is
    accepted. Never raises for any response text; raises :class:`ChoiceArgumentError` only when
    ``options`` and ``n_options`` disagree.
    """
    n = _resolve_n(options, n_options)
    opts = list(options) if options else None
    if not isinstance(response, str):
        return Extraction(None, None, "none", f"response is {type(response).__name__}, not text")
    text, error = normalise_response(response)
    if error:
        return Extraction(None, None, "none", error)
    valid = f"{LETTERS[0]}-{LETTERS[n - 1]}" if n > 1 else "A"

    # 1. bare letter
    m = _BARE.match(text)
    if m:
        letter = m.group(1).upper()
        if _letter_index(letter, n) is None:
            return Extraction(None, None, "bare", f"letter {letter} is not among the {n} options ({valid})")
        return _ok(letter, "bare")

    # option texts are blanked out for the letter stages, so "Vitamin C" or "A man walks" in an
    # option's own words never reads as a letter
    masked = _strip_options(text, opts)

    # 2. explicit answer phrases, last one wins
    cands, denied = _phrase_candidates(masked)
    if cands:
        last = cands[-1]
        # a retraction after the last statement: "I think A... no, C." / "A. Wait, actually B."
        for m in _RETRACT.finditer(masked, last.pos + 1):
            after = masked[m.end() :]
            if not _is_word_use(m.group("letter"), bool(m.group("open") or m.group("close")), after):
                last = _Cand(m.start("letter"), m.group("letter").upper(), "retraction")
        if last.hedge:
            return Extraction(None, None, "answer_phrase", f"hedged answer: {last.letter} {last.hedge}")
        if _letter_index(last.letter, n) is None:
            return Extraction(
                None, None, "answer_phrase", f"letter {last.letter} is not among the {n} options ({valid})"
            )
        return _ok(last.letter, "answer_phrase")

    markers = _marker_candidates(masked, opts)
    for c in markers:
        c.negated = c.negated or c.pos in denied
    echo_positions = _echo_positions(markers)
    echo = bool(echo_positions)

    # 3. a formatted letter at the very start
    if not echo:
        m = _LEADING.match(text)
        if m:
            raw = m.group("l1") or m.group("l2")
            letter = raw.upper()
            # a lower-case "a)" counts only when no other letter is marked ("a) ... b) ..." is a list)
            others = {c.letter for c in markers if not c.negated and c.letter != letter and c.pos > 0}
            rest = text[m.end() :]
            hedged = _HEDGE_AFTER.match(rest) or _LIST_AFTER.match(rest)
            if _letter_index(letter, n) is not None and (raw.isupper() or not others) and not hedged:
                return _ok(letter, "leading_letter")

    # 4. formatted letters anywhere
    markers = [c for c in markers if c.pos not in echo_positions or c.positive]
    decided = _decide(markers, n, "marker")
    if decided is not None:
        return decided

    # 5. the response is one option's text
    if opts:
        idx = _option_text_exact(text, opts)
        if idx is not None:
            return Extraction(idx, LETTERS[idx], "option_text_exact")

    # 6. plain capital letters
    plain: dict[int, _Cand] = {}
    for m in re.finditer(_TOKEN, masked):
        letter, pos = m.group("letter"), m.start("letter")
        if m.group("open") or m.group("close") or not letter.isupper() or pos in echo_positions:
            continue
        after = masked[m.end("letter") :]
        second = _second_letter(after)
        if second:  # "B and C": both are named, whatever follows
            pos2 = m.end("letter") + second[0]
            plain.setdefault(pos2, _Cand(pos2, second[1], "plain"))
        elif letter in "AI" and (not _AI_END.match(after) or _is_word_use(letter, False, after)):
            continue  # the article, the pronoun: "A man", "A Man", "I think"
        elif (
            letter not in "AI"
            and re.match(r"[ \t]+[a-z]", after)
            and _is_word_use(letter.lower(), False, after)
        ):
            continue  # a label in running text: "the letter C painted on the wall"
        cand = plain.setdefault(pos, _Cand(pos, letter, "plain"))
        cand.negated = bool(
            pos in denied or _NEGATED_AFTER.match(after) or _NEGATED_BEFORE.search(masked[: m.start()][-40:])
        )
    plain_cands = sorted(plain.values(), key=lambda c: c.pos)
    decided = _decide(plain_cands, n, "plain_letter")
    if decided is not None:
        return decided

    if echo:
        return Extraction(None, None, "marker", "the response lists the options without choosing one")

    # 7. one option's text inside the response
    if opts:
        idx, hits = _option_text_contained(text, opts)
        if idx is not None:
            return Extraction(idx, LETTERS[idx], "option_text")
        if len(hits) > 1:
            letters = ", ".join(LETTERS[i] for i in hits)
            return Extraction(None, None, "option_text", f"the texts of several options appear ({letters})")

    if _REFUSAL.search(text):
        return Extraction(None, None, "none", "refusal or no option chosen")
    return Extraction(None, None, "none", "no option letter or option text found")


__all__ = ["LETTERS", "METHODS", "ChoiceArgumentError", "Extraction", "extract_choice", "normalise_response"]
