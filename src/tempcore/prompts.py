"""Prompt templates for multiple-choice, binary, text-only and temporal-grounding questions.

A :class:`PromptTemplate` is plain text with named placeholders, filled by :func:`render_prompt`
(multiple choice, including TemporalBench's two-option binary questions) or
:func:`render_grounding_prompt` (ExtremeWhenBench: "when does this happen?"). The exact rendered
text is what a model sees; store it (or :func:`prompt_hash` of it) with every prediction so a
result can always be traced to its prompt.

Placeholders: ``{question}`` (verbatim); ``{options}`` (one ``"A. text"`` line per option);
``{options_block}`` (``"Options:"`` and the option lines, or nothing when the options are written
inside the question, as in TemporalBench); ``{letters}`` (``"A or B"``, ``"A, B, C, or D"``);
``{timestamps}`` (``"Frame timestamps (seconds): 0.5, 3, 7.25"``, or nothing). Grounding templates
have ``{query}``, ``{timestamps}`` and ``{duration}`` (``"The video is 3600 seconds long."`` or
nothing). A template line made only of placeholders that render to nothing is dropped.

Named templates (``TEMPLATES``; add your own with :func:`register_template`; the full texts and why
each exists in ``docs/design/models.md``): ``default`` (question, lettered options, "answer with the
option's letter"), ``letter_only`` (one letter and nothing else, ending in "Answer:"), ``lmms_eval``
and ``lmms_eval_videomme`` (lmms-eval's phrasings, to compare with lmms-eval numbers), ``text_only``
(the language-prior probe of TempCore App. C.4: the video is not available, pick the most plausible
option anyway) and ``grounding`` (start and end time in seconds as ``start - end``).

Per-model overrides: :func:`register_model_template` maps a model name (an ``fnmatch`` pattern,
case-insensitive) to a template name; :func:`template_for_model` resolves it (the last registered
matching pattern wins, ``default`` otherwise). The mapping starts empty: model presets register their
own quirks, so the choice is visible where the model is defined.

Option rotation (circular evaluation): :func:`rotate_options` shifts the options cyclically;
:func:`unrotate_index` maps an answer given in the rotated order back to the original option index and
:func:`rotate_index` maps an original index (e.g. the correct answer) to its rotated position.
"""

from __future__ import annotations

import fnmatch
import hashlib
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tempcore.errors import TempcoreError
from tempcore.records import LETTERS, Sample
from tempcore.registry import GROUPS, Registry, did_you_mean

MC_FIELDS = frozenset({"question", "options", "options_block", "letters", "timestamps"})
GROUNDING_FIELDS = frozenset({"query", "timestamps", "duration"})


class PromptError(TempcoreError):
    """A prompt cannot be rendered (unknown template, bad placeholders, too many options, ...)."""


@dataclass(frozen=True)
class PromptTemplate:
    """A named prompt: ``text`` with placeholders, and the kind of question it is for.

    ``kind`` is ``"mc"`` (multiple choice / binary) or ``"grounding"``; the constructor checks that
    ``text`` uses only the placeholders of its kind (unknown names fail here, not at render time).
    ``option_format`` formats one option line from ``{letter}`` and ``{text}``.
    """

    name: str
    text: str
    kind: str = "mc"
    option_format: str = "{letter}. {text}"
    description: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("mc", "grounding"):
            raise PromptError(f"template {self.name!r}: kind must be 'mc' or 'grounding', not {self.kind!r}")
        allowed = MC_FIELDS if self.kind == "mc" else GROUNDING_FIELDS
        used = _placeholders(self.name, self.text)
        unknown = used - allowed
        if unknown:
            raise PromptError(
                f"template {self.name!r}: unknown placeholder(s) {sorted(unknown)}; "
                f"allowed: {sorted(allowed)}"
            )
        required = {"question"} if self.kind == "mc" else {"query"}
        if not required <= used:
            raise PromptError(f"template {self.name!r}: text must contain {{{next(iter(required))}}}")
        bad = _placeholders(self.name, self.option_format) - {"letter", "text"}
        if bad:
            raise PromptError(f"template {self.name!r}: option_format may use only {{letter}} and {{text}}")

    @property
    def fields(self) -> frozenset[str]:
        """The placeholders the text uses."""
        return frozenset(_placeholders(self.name, self.text))


def _placeholders(name: str, text: str) -> set[str]:
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise PromptError(f"template {name!r}: malformed placeholder ({exc})") from exc
    out = set()
    for _literal, field_name, _spec, _conv in parsed:
        if field_name is None:
            continue
        if not field_name.isidentifier():
            raise PromptError(f"template {name!r}: placeholder {{{field_name}}} is not a plain name")
        out.add(field_name)
    return out


# --- the registry -----------------------------------------------------------------------

def _unknown_template(name: str, known: list[str]) -> PromptError:
    return PromptError(f"unknown prompt template {name!r}{did_you_mean(name, known)} (known: {', '.join(known)})")


def _check_template(name: str, template: Any) -> None:
    if template.name != name:
        raise PromptError(f"prompt template {name!r} is registered under another name than its own ({template.name!r})")


TEMPLATES: Registry[PromptTemplate] = Registry(
    "prompt template", group=GROUPS["templates"], base=PromptTemplate, check=_check_template,
    unknown=_unknown_template, error=PromptError,
)
"""Template name -> :class:`PromptTemplate` (add one with :func:`register_template` or the
``tempcore.templates`` entry-point group, whose entries name a PromptTemplate object)."""
_MODEL_TEMPLATES: list[tuple[str, str]] = []


def register_template(
    template: PromptTemplate, *, replace: bool = False, overwrite: bool = False
) -> PromptTemplate:
    """Add ``template`` under its name; refuses to replace another one of that name unless ``replace``
    (``overwrite`` is the older spelling). The same template again is a no-op."""
    return TEMPLATES.register(template.name, template, replace=replace or overwrite)


def get_template(template: str | PromptTemplate) -> PromptTemplate:
    """The template itself, or the registered one of that name (with a did-you-mean on typos)."""
    if isinstance(template, PromptTemplate):
        return template
    return TEMPLATES.get(template)  # type: ignore[no-any-return]


def register_model_template(pattern: str, template: str) -> None:
    """Use ``template`` for models whose name matches ``pattern`` (fnmatch, case-insensitive).

    Patterns registered later take precedence over earlier ones.
    """
    get_template(template)
    _MODEL_TEMPLATES.append((pattern.lower(), template))


def template_for_model(model: str, default: str = "default") -> PromptTemplate:
    """The template registered for ``model`` (last matching pattern wins), else ``default``."""
    name = model.lower()
    for pattern, template in reversed(_MODEL_TEMPLATES):
        if fnmatch.fnmatchcase(name, pattern):
            return get_template(template)
    return get_template(default)


def model_templates() -> list[tuple[str, str]]:
    """The registered (pattern, template name) overrides, oldest first."""
    return list(_MODEL_TEMPLATES)


# --- rendering ---------------------------------------------------------------------------


def letters_phrase(n: int) -> str:
    """``"A"``, ``"A or B"``, ``"A, B, or C"`` ... for ``n`` options."""
    if not 1 <= n <= len(LETTERS):
        raise PromptError(f"a multiple-choice prompt needs 1 to {len(LETTERS)} options, not {n}")
    letters = list(LETTERS[:n])
    if n == 1:
        return letters[0]
    if n == 2:
        return f"{letters[0]} or {letters[1]}"
    return ", ".join(letters[:-1]) + f", or {letters[-1]}"


def format_seconds(t: float) -> str:
    """Seconds with at most 2 decimals and no trailing zeros: 3.0 -> "3", 7.250 -> "7.25"."""
    text = f"{float(t):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _timestamps_line(timestamps: Sequence[float] | None) -> str:
    if timestamps is None or len(timestamps) == 0:
        return ""
    return "Frame timestamps (seconds): " + ", ".join(format_seconds(t) for t in timestamps)


def format_options(options: Sequence[str], option_format: str = "{letter}. {text}") -> str:
    """One line per option, lettered A, B, C, ... in the given order.

    Runs of whitespace inside an option (including line breaks) become one space, so every option
    stays on its own line and the letters stay unambiguous.
    """
    if len(options) > len(LETTERS):
        raise PromptError(f"at most {len(LETTERS)} options can be lettered, got {len(options)}")
    return "\n".join(
        option_format.format(letter=LETTERS[i], text=" ".join(str(text).split()))
        for i, text in enumerate(options)
    )


def render_prompt(
    sample_or_question: Sample | str,
    options: Sequence[str] | None = None,
    template: str | PromptTemplate = "default",
    timestamps: Sequence[float] | None = None,
    *,
    n_options: int | None = None,
) -> str:
    """The multiple-choice prompt for a sample (or a bare question) with ``options`` in the order given.

    ``options`` defaults to the sample's own; pass rotated options (see :func:`rotate_options`) for
    circular evaluation. ``timestamps`` (seconds of the frames shown, in order) fill ``{timestamps}``.
    Questions whose options are written inside the question text (TemporalBench's binary questions)
    pass ``options=()`` and ``n_options`` (e.g. 2): ``{options}`` is then empty and ``{letters}`` still
    names the valid letters. Blank lines left by empty placeholders are removed.
    """
    tpl = get_template(template)
    if tpl.kind != "mc":
        raise PromptError(f"template {tpl.name!r} is a {tpl.kind} template; use render_grounding_prompt")
    if isinstance(sample_or_question, Sample):
        question = sample_or_question.question
        if options is None:
            options = sample_or_question.options
    else:
        question = str(sample_or_question)
    options = tuple(options or ())
    if options and n_options is not None and n_options != len(options):
        raise PromptError(f"n_options={n_options} but {len(options)} options were given")
    n = len(options) if options else n_options
    if n is None:
        raise PromptError(
            "a multiple-choice prompt needs options (or n_options when they are in the question)"
        )
    option_lines = format_options(options, tpl.option_format) if options else ""
    values: dict[str, Any] = {
        "question": question.strip(),
        "options": option_lines,
        "options_block": f"Options:\n{option_lines}" if options else "",
        "letters": letters_phrase(n),
        "timestamps": _timestamps_line(timestamps),
    }
    return _fill(tpl, values)


def render_grounding_prompt(
    query: str,
    template: str | PromptTemplate = "grounding",
    timestamps: Sequence[float] | None = None,
    duration: float | None = None,
) -> str:
    """The temporal-grounding prompt: find ``query`` in the video, reply with start and end seconds.

    The reply is parsed by :func:`tempcore.answers.extract_interval`.
    """
    tpl = get_template(template)
    if tpl.kind != "grounding":
        raise PromptError(f"template {tpl.name!r} is a {tpl.kind} template; use render_prompt")
    values = {
        "query": query.strip(),
        "timestamps": _timestamps_line(timestamps),
        "duration": "" if duration is None else f"The video is {format_seconds(duration)} seconds long.",
    }
    return _fill(tpl, values)


def _fill(tpl: PromptTemplate, values: dict[str, Any]) -> str:
    out: list[str] = []
    for line in tpl.text.split("\n"):
        fields = _placeholders(tpl.name, line)
        literal = "".join(part for part, _f, _s, _c in string.Formatter().parse(line))
        rendered = line.format_map(values)
        if fields and not literal.strip() and not rendered.strip():
            continue  # an optional part that is absent
        out.append(rendered)
    return "\n".join(out)


def prompt_hash(text: str, length: int = 64) -> str:
    """SHA-256 of the exact prompt text (UTF-8) as hex; ``length`` < 64 keeps a prefix.

    The text is hashed byte for byte, with no normalisation: two prompts differing in one space get
    different hashes. The full digest is the default, the same form the lmms-eval importer
    (:mod:`tempcore.tidy.table`) stores for a log's ``input``, so hashes from both sources compare.
    """
    if not 1 <= length <= 64:
        raise PromptError(f"prompt_hash length must be 1..64, not {length}")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


# --- option rotation (circular evaluation) --------------------------------------------------


def rotate_options(options: Sequence[str], rotation: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Cyclically shift the options left by ``rotation`` (taken modulo the number of options).

    Returns ``(rotated, permutation)`` with ``rotated[j] == options[permutation[j]]``, i.e.
    ``permutation[j] = (j + rotation) % n`` is the original index of the option shown at position j.
    Rotation 0 is the original order; rotation r shows the original option r first. Over the
    rotations 0..n-1 every option appears exactly once at every position.
    """
    opts = tuple(options)
    n = len(opts)
    if n == 0:
        return (), ()
    perm = tuple((j + rotation) % n for j in range(n))
    return tuple(opts[i] for i in perm), perm


def unrotate_index(index_in_rotated: int, rotation: int, n: int) -> int:
    """The original option index of the answer given at position ``index_in_rotated`` after rotation."""
    _check_index(index_in_rotated, n)
    return (index_in_rotated + rotation) % n


def rotate_index(original_index: int, rotation: int, n: int) -> int:
    """Where the option at ``original_index`` appears after the rotation (e.g. the correct answer)."""
    _check_index(original_index, n)
    return (original_index - rotation) % n


def _check_index(index: int, n: int) -> None:
    if n <= 0:
        raise PromptError(f"rotation needs at least one option, not n={n}")
    if not 0 <= index < n:
        raise PromptError(f"option index {index} outside 0..{n - 1}")


# --- built-in templates ----------------------------------------------------------------------

DEFAULT = register_template(
    PromptTemplate(
        name="default",
        text=(
            "{timestamps}\n"
            "Question: {question}\n"
            "{options_block}\n"
            "Answer with the option's letter ({letters}) only."
        ),
        description="question, lettered options, answer with the letter",
    )
)

register_template(
    PromptTemplate(
        name="letter_only",
        text=(
            "{timestamps}\n"
            "Question: {question}\n"
            "{options_block}\n"
            "Reply with exactly one letter ({letters}) and nothing else.\n"
            "Answer:"
        ),
        description="insists on a single letter; for chatty small models",
    )
)

register_template(
    PromptTemplate(
        name="lmms_eval",
        text=(
            "{timestamps}\n{question}\n{options}\n"
            "Answer with the option's letter from the given choices directly."
        ),
        description="lmms-eval's common multiple-choice post-prompt (LongVideoBench, MVBench, NExT-QA tasks)",
    )
)

register_template(
    PromptTemplate(
        name="lmms_eval_videomme",
        text=(
            "{timestamps}\n"
            "Select the best answer to the following multiple-choice question based on the video. "
            "Respond with only the letter ({letters}) of the correct option.\n"
            "{question}\n"
            "{options}\n"
            "The best answer is:"
        ),
        description="lmms-eval's Video-MME phrasing",
    )
)

register_template(
    PromptTemplate(
        name="text_only",
        text=(
            "The video for this question is not available. Using only the question and the options, "
            "choose the most plausible answer.\n"
            "Question: {question}\n"
            "{options_block}\n"
            "Answer with the option's letter ({letters}) only."
        ),
        description="language-prior probe without frames (no-frame / text-only LLMs)",
    )
)

register_template(
    PromptTemplate(
        name="grounding",
        kind="grounding",
        text=(
            "{duration}\n"
            "{timestamps}\n"
            "Find the moment in the video that matches this description: {query}\n"
            "Give the start and end time of that moment in seconds, "
            "as 'start - end' (for example: 12.5 - 30.0)."
        ),
        description="temporal grounding: start and end seconds",
    )
)

__all__ = [
    "TEMPLATES",
    "PromptError",
    "PromptTemplate",
    "format_options",
    "format_seconds",
    "get_template",
    "letters_phrase",
    "model_templates",
    "prompt_hash",
    "register_model_template",
    "register_template",
    "render_grounding_prompt",
    "render_prompt",
    "rotate_index",
    "rotate_options",
    "template_for_model",
    "unrotate_index",
]
