"""The one vocabulary of tempcore: Sample, Condition, FrameSet, Prediction, Failure.

Every stage of the pipeline speaks in these records. They are frozen dataclasses of plain
values (str, int, float, tuples, dicts of JSON values) so that they hash, compare, and
round-trip through JSON unchanged: ``Record.from_dict(json.loads(json.dumps(r.to_dict()))) == r``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T", bound="_Record")

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _freeze(value: Any) -> Any:
    """Lists become tuples (recursively) so records stay hashable after ``from_dict``."""
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    if isinstance(value, dict):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, _Record):  # every record dataclass nested in a record is a _Record
        return value.to_dict()
    return value


class _Record:
    """Shared JSON round-trip for the frozen dataclasses below."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _thaw(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown field(s) {sorted(unknown)}")
        kwargs = {}
        for name in names & set(data):
            value = data[name]
            if name in _NESTED.get(cls.__name__, {}) and value is not None:
                value = _NESTED[cls.__name__][name].from_dict(value)
            elif name == "metadata":
                value = dict(value or {})
            else:
                value = _freeze(value)
            kwargs[name] = value
        return cls(**kwargs)


@dataclass(frozen=True)
class Sample(_Record):
    """One benchmark question about one video (or one segment of it).

    ``options`` are normalised option texts in the benchmark's order (no "A." prefixes);
    ``answer`` is the index of the correct option. Grounding benchmarks (ExtremeWhenBench)
    have no options and carry ``answer_interval`` (seconds) instead. ``start`` / ``end``
    bound the segment of the video the question is about (MVBench / TVBench). ``media`` is
    ``"video"``, ``"gif"`` or ``"frames"`` (a folder of images). ``metadata`` keeps the
    benchmark's own fields (task type, duration group, ...).

    ``answer_windows`` holds every ground-truth window of a grounding sample (QVHighlights has
    several per query), in the benchmark's order; ``answer_interval`` is its first window. Give
    either: the other is filled in (``answer_interval=(s, e)`` alone means one window; windows
    alone set ``answer_interval`` to the first); given both, the first window must equal
    ``answer_interval``. Each window is ``(start, end)`` seconds as floats.
    """

    benchmark: str
    sample_id: str
    video: str
    question: str
    options: tuple[str, ...] = ()
    answer: int | None = None
    start: float | None = None
    end: float | None = None
    media: str = "video"
    answer_interval: tuple[float, float] | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    answer_windows: tuple[tuple[float, float], ...] = ()

    def __post_init__(self) -> None:
        windows = tuple((float(w[0]), float(w[1])) for w in self.answer_windows)
        if any(len(w) != 2 for w in self.answer_windows):
            raise ValueError(f"sample {self.sample_id}: each answer window must be (start, end)")
        interval = self.answer_interval
        if interval is not None:
            interval = (float(interval[0]), float(interval[1]))
            if not windows:
                windows = (interval,)
            elif windows[0] != interval:
                raise ValueError(
                    f"sample {self.sample_id}: answer_interval {interval} is not the first answer window {windows[0]}"
                )
        elif windows:
            interval = windows[0]
        object.__setattr__(self, "answer_windows", windows)
        object.__setattr__(self, "answer_interval", interval)
        if self.media not in ("video", "gif", "frames"):
            raise ValueError(f"sample {self.sample_id}: unknown media {self.media!r}")
        if self.answer is not None and not (0 <= self.answer < len(self.options)):
            raise ValueError(
                f"sample {self.sample_id}: answer index {self.answer} outside {len(self.options)} options"
            )

    @property
    def answer_text(self) -> str | None:
        return None if self.answer is None else self.options[self.answer]

    @property
    def answer_letter(self) -> str | None:
        return None if self.answer is None else LETTERS[self.answer]


# --- Condition ---------------------------------------------------------------------------

_KEY_ORDER = ("strategy", "mode", "k", "window", "encoder", "fps", "seed", "rotation", "variant")
_KEY_PART = re.compile(r"^([a-z_]+)=(.*)$")
UNKNOWN_K = "unknown"
"""How a key writes an unknown K (``k=unknown``)."""


def _fmt_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


@dataclass(frozen=True)
class Condition(_Record):
    """What a model is shown for a sample.

    strategy: maxprob, minprob, uniform, random, oracle, noframe, single, shuffled, reversed, ...
    mode:     text used to score frames: ``q`` (question), ``qa`` (question + correct answer,
              the paper's oracle upper bound) or ``none`` for strategies that ignore scores.
    k:        number of frames shown; ``None`` = unknown (predictions made elsewhere by a model that
              samples its own frames), written ``k=unknown`` in the key and kept as its own group.
    window:   index of the oracle window (``oracle`` only).
    encoder:  frame-text encoder id (score-based strategies only).
    fps:      decoding rate of the candidate frames (the paper: 10).
    seed:     global seed (random strategies derive a per-sample seed from it).
    rotation: cyclic rotation of the options (circular evaluation); 0 = original order.
    variant:  strategy variant, e.g. ``linspace`` for uniform, or the base strategy of
              ``shuffled`` / ``reversed``.

    ``key`` is stable and human-readable, e.g. ``maxprob|mode=qa|k=32|encoder=siglip2|fps=10|seed=0``;
    fields left at ``None`` (and rotation 0) are omitted. ``Condition.from_key(c.key) == c``.
    """

    strategy: str
    mode: str = "none"
    k: int | None = 32
    window: int | None = None
    encoder: str | None = None
    fps: float = 10.0
    seed: int = 0
    rotation: int = 0
    variant: str | None = None

    def __post_init__(self) -> None:
        if not self.strategy or "|" in self.strategy or "=" in self.strategy:
            raise ValueError(f"invalid strategy name {self.strategy!r}")
        if self.mode not in ("q", "qa", "none"):
            raise ValueError(f"condition mode must be q, qa or none, not {self.mode!r}")
        if self.k is not None and (not isinstance(self.k, int) or isinstance(self.k, bool) or self.k <= 0):
            raise ValueError(f"condition k must be a positive int (or None for unknown), not {self.k!r}")
        if not (isinstance(self.fps, (int, float)) and math.isfinite(self.fps) and self.fps > 0):
            raise ValueError(f"condition fps must be positive, not {self.fps!r}")
        for name in ("encoder", "variant"):
            value = getattr(self, name)
            if value is not None and "|" in value:
                raise ValueError(f"condition {name} may not contain '|': {value!r}")
        object.__setattr__(self, "fps", float(self.fps))

    @property
    def key(self) -> str:
        parts = [self.strategy]
        for name in _KEY_ORDER[1:]:
            value = getattr(self, name)
            if name == "k" and value is None:
                parts.append(f"k={UNKNOWN_K}")
                continue
            if value is None or (name == "rotation" and value == 0):
                continue
            parts.append(f"{name}={_fmt_number(value) if name == 'fps' else value}")
        return "|".join(parts)

    @classmethod
    def from_key(cls, key: str) -> Condition:
        strategy, *rest = key.split("|")
        kwargs: dict[str, Any] = {"strategy": strategy}
        for part in rest:
            m = _KEY_PART.match(part)
            if not m or m.group(1) not in _KEY_ORDER[1:]:
                raise ValueError(f"malformed condition key {key!r} (part {part!r})")
            name, raw = m.groups()
            if name == "k" and raw == UNKNOWN_K:
                kwargs["k"] = None
                continue
            kwargs[name] = (
                int(raw) if name in ("k", "window", "seed", "rotation") else float(raw) if name == "fps" else raw
            )
        kwargs.setdefault("mode", "none")
        return cls(**kwargs)

    def replace(self, **changes: Any) -> Condition:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class FrameSet(_Record):
    """The frames a condition selected, in the order they are shown to the model.

    ``indices`` index the decoded frames of the sample's video (at the condition's fps);
    ``timestamps`` are their presentation times in seconds. ``requested`` is the K asked for;
    ``shortfall = requested - len(indices)`` when the video had fewer frames. ``grey`` marks
    the no-frame condition (the model sees ``requested`` uniform grey images instead).
    """

    indices: tuple[int, ...]
    timestamps: tuple[float, ...]
    requested: int = 0
    grey: bool = False

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.timestamps):
            raise ValueError("FrameSet: indices and timestamps differ in length")
        object.__setattr__(self, "indices", tuple(map(int, self.indices)))
        object.__setattr__(self, "timestamps", tuple(map(float, self.timestamps)))

    @property
    def shortfall(self) -> int:
        return 0 if self.grey else max(0, self.requested - len(self.indices))

    def __len__(self) -> int:
        return len(self.indices)


GROUNDING_CORRECT_IOU = 0.5
"""A grounding prediction is stored ``correct`` = 1 when its IoU is at least this (R@0.5)."""

EARLY_STOP_VARIANT = "early_stop"
"""The ``variant`` of an early-stopped oracle's conditions (``oracle|...|window=i|...|variant=early_stop``):
its rows hold the windows up to the first correct one only, so the analyses that need every window
(Table 7) can tell them apart. Without ``early_stop`` the oracle's keys are unchanged."""

BUILT_IN_STRATEGIES = frozenset({
    "aks", "bolt", "gtcrop", "maxprob", "minprob", "noframe", "oracle", "random", "retrieval",
    "retrieve_ground", "reversed", "shuffled", "single", "textonly", "uniform",
})
"""The frame-selection strategies tempcore registers itself, under exactly these names (the
strategy registry of :mod:`tempcore.selection` holds them and any a user's package adds;
``tests/test_kernel.py`` checks they agree)."""


def _number_in(value: Any, low: float, high: float) -> bool:
    """Is ``value`` a finite number (not text, not a bool) in [low, high]?"""
    if isinstance(value, (bool, str, bytes)):
        return False
    try:
        x = float(value)
    except (TypeError, ValueError):
        return False
    return math.isfinite(x) and low <= x <= high


def option_probs_problem(probs: Any) -> str | None:
    """What is wrong with ``probs`` as a prediction's ``option_probs`` (None: nothing, or no probs):
    a list of finite numbers in [0, 1]. Their sum is not checked: stored and imported rows have never
    been required to sum to 1 (tables made elsewhere round, truncate to the top options ...)."""
    if probs is None:
        return None
    if not isinstance(probs, (list, tuple)):
        return f"option_probs must be a list of numbers, not {probs!r}"
    bad = [x for x in probs if not _number_in(x, 0.0, 1.0)]
    if bad:
        return f"option_probs must be finite numbers in [0, 1], found {bad[0]!r} in {list(probs)!r}"
    return None


@dataclass(frozen=True)
class Prediction(_Record):
    """A model's stored answer for (benchmark, sample_id, model, condition).

    ``answer`` is the parsed option index in the sample's *original* option order (rotations
    are mapped back), or ``None`` for a parse failure (then ``parse_error`` says why and
    ``correct`` is 0). ``answer_method`` is ``generate`` (text parsed by the extractor) or
    ``option_scores`` (argmax of option log-likelihoods). ``option_probs`` is the model's
    probability over the original options when the adapter can give one. A failed call is
    never a Prediction: see :class:`Failure`. ``target`` is the index of the correct option (original
    order) when known, so the probability on the correct option can be read from the prediction
    alone (``p_correct``, used by ``soft`` scoring).

    Identity and provenance (see :mod:`tempcore.run.identity`): ``sample_hash`` fingerprints the sample's
    content and video, ``model_fingerprint`` the model entry that answered and ``encoder_fingerprint``
    the encoder that scored the frames (score-based strategies only, else ``None``); empty / ``None``
    when unknown (predictions imported from elsewhere, or stored before schema v2). A stored
    prediction is reused by ``tempcore run`` only when all three match. ``n_frames`` is L, the number
    of decoded frames of the sample's video (or segment) at the condition's fps, ``None`` when
    unknown. ``video_damage`` names damage found while decoding the video (``None``: a clean decode).
    The columns of every stored / exported form are declared in :mod:`tempcore.tidy.schema`.

    Grounding predictions (a sample with ``answer_windows`` and no options, issue 15) have no option
    index: ``answer`` and ``target`` are ``None`` and the answer is ``pred_start`` / ``pred_end``
    (seconds of absolute video time, after any crop was mapped back) with ``iou``, the best IoU
    over the sample's ground-truth windows (``None`` when the sample has none). ``correct`` of such
    a row is ``int(iou >= GROUNDING_CORRECT_IOU)`` (0.5: R@0.5 of one item, the convention of
    ExtremeWhenBench, Charades-STA and QVHighlights), 0 without ground truth. A parse failure keeps
    ``pred_start`` / ``pred_end`` / ``iou`` at ``None`` with ``parse_error`` set and ``correct`` 0:
    never an answer; grounding metrics score it IoU 0 and count it separately.
    """

    benchmark: str
    sample_id: str
    model: str
    condition: str
    response: str
    answer: int | None
    correct: int
    frames: FrameSet | None = None
    prompt_hash: str = ""
    latency_s: float = 0.0
    answer_method: str = "generate"
    option_probs: tuple[float, ...] | None = None
    parse_error: str | None = None
    target: int | None = None
    sample_hash: str = ""
    model_fingerprint: str = ""
    encoder_fingerprint: str | None = None
    n_frames: int | None = None
    video_damage: str | None = None
    pred_start: float | None = None
    pred_end: float | None = None
    iou: float | None = None

    def __post_init__(self) -> None:
        self._check_grounding()
        self._check_numbers()
        if self.n_frames is not None and (isinstance(self.n_frames, bool) or not isinstance(self.n_frames, int)
                                          or self.n_frames < 0):
            raise ValueError(f"prediction {self.key}: n_frames must be a non-negative int, not {self.n_frames!r}")
        if self.correct not in (0, 1):
            raise ValueError(f"Prediction.correct must be 0 or 1, not {self.correct!r}")
        if self.answer is None and self.correct and self.iou is None:
            raise ValueError("a parse failure cannot be correct")
        if self.target is not None and self.answer is not None and self.correct != int(self.answer == self.target):
            raise ValueError(
                f"prediction {self.key}: correct={self.correct} contradicts answer {self.answer} / target {self.target}"
            )

    def _check_numbers(self) -> None:
        """``latency_s`` a finite number >= 0; the frames' timestamps finite; ``option_probs`` finite
        numbers in [0, 1] (:func:`option_probs_problem`)."""
        if not _number_in(self.latency_s, 0.0, math.inf):
            raise ValueError(f"prediction {self.key}: latency_s must be a finite number >= 0, not {self.latency_s!r}")
        if self.frames is not None and not all(map(math.isfinite, self.frames.timestamps)):
            raise ValueError(f"prediction {self.key}: frame timestamps must be finite seconds, not "
                             f"{list(self.frames.timestamps)[:10]!r}")
        problem = option_probs_problem(self.option_probs)
        if problem:
            raise ValueError(f"prediction {self.key}: {problem}")

    @property
    def is_grounding(self) -> bool:
        """True for a grounding answer (a parsed ``[pred_start, pred_end]``)."""
        return self.pred_start is not None

    def _check_grounding(self) -> None:
        for name in ("pred_start", "pred_end", "iou"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"prediction {self.key}: {name} must be a finite number or None, not {value!r}")
            object.__setattr__(self, name, float(value))
        if (self.pred_start is None) != (self.pred_end is None):
            raise ValueError(f"prediction {self.key}: pred_start and pred_end go together (both or neither)")
        if self.pred_start is None:
            if self.iou is not None:
                raise ValueError(f"prediction {self.key}: an iou without pred_start / pred_end")
            return
        if self.answer is not None or self.option_probs is not None:
            raise ValueError(f"prediction {self.key}: a grounding answer (pred_start / pred_end) has no option "
                             "answer or option probabilities")
        if self.parse_error is not None:
            raise ValueError(f"prediction {self.key}: a parse failure has no pred_start / pred_end")
        if self.iou is not None and not 0.0 <= self.iou <= 1.0:
            raise ValueError(f"prediction {self.key}: iou must lie in [0, 1], not {self.iou!r}")
        want = 0 if self.iou is None else int(self.iou >= GROUNDING_CORRECT_IOU)
        if self.correct != want:
            raise ValueError(f"prediction {self.key}: correct={self.correct} contradicts iou {self.iou} "
                             f"(correct = iou >= {GROUNDING_CORRECT_IOU})")

    @property
    def p_correct(self) -> float | None:
        """The model's probability on the correct option, when both are known."""
        if self.option_probs is None or self.target is None or self.target >= len(self.option_probs):
            return None
        return float(self.option_probs[self.target])

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.benchmark, self.sample_id, self.model, self.condition)


@dataclass(frozen=True)
class Failure(_Record):
    """A call that did not produce an answer (exception, HTTP error, timeout). Never a Prediction."""

    benchmark: str
    sample_id: str
    model: str
    condition: str
    error: str
    attempts: int = 1


_NESTED: dict[str, dict[str, type[_Record]]] = {"Prediction": {"frames": FrameSet}}

__all__ = ["BUILT_IN_STRATEGIES", "EARLY_STOP_VARIANT", "GROUNDING_CORRECT_IOU", "LETTERS", "UNKNOWN_K", "Condition", "Failure", "FrameSet", "Prediction", "Sample"]
