"""The one model interface of tempcore: a batch of requests in, one response per request out.

A :class:`ModelRequest` is exactly what a model is shown for one (sample, condition): the frames
in the order shown (grey frames for the no-frame condition), the fully rendered user text
(question + lettered options + instruction, rendered by :mod:`tempcore.prompts`), and the option
texts (for option scoring). A :class:`ModelResponse` is what came back: the raw text (never
parsed here), optionally a log-likelihood per option, and the latency. A failed call carries
``error`` and ``text=None``; it is never an answer (the runner stores it as a ``Failure``).

Every backend (``hf``, ``hf-text``, ``openai``, ``vllm``) implements :class:`Model`. One item
failing inside a batch must not fail the others: adapters catch per item and return an error
response for that item only.

This module imports only numpy and the standard library (no torch, no httpx).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from tempcore.errors import TempcoreError
from tempcore.records import LETTERS
from tempcore.registry import did_you_mean

#: Answer methods (``Prediction.answer_method``).
METHOD_GENERATE = "generate"
METHOD_OPTION_SCORES = "option_scores"
METHODS = (METHOD_GENERATE, METHOD_OPTION_SCORES)

_NO_DEFAULT: Any = object()


class ModelError(TempcoreError):
    """A model could not be configured, loaded or called (names the model and the reason)."""


class ModelConfigError(ModelError):
    """A model spec is invalid: unknown backend or preset, bad device/dtype, bad option."""


class RemoteCodeRefused(ModelConfigError):
    """The checkpoint needs ``trust_remote_code`` and the spec did not opt in."""


class MissingExtraError(ModelError):
    """An optional dependency (``pip install 'tempcore[EXTRA]'``) is not installed."""

    def __init__(self, what: str, extra: str, module: str) -> None:
        super().__init__(
            f"{what} needs the optional dependency {module!r}, which is not installed; "
            f"install it with: pip install 'tempcore[{extra}]'"
        )
        self.extra = extra
        self.module = module


class UnsupportedMethodError(ModelError):
    """The model cannot answer with the requested method (e.g. option scores over a chat API)."""


@dataclass(frozen=True)
class ModelRequest:
    """What one model call is shown.

    images:     frames as ``(H, W, 3)`` uint8 RGB arrays, in the order shown (grey frames for
                the no-frame condition; empty for text-only probes).
    prompt:     the full user text (question + lettered options + instruction), already rendered.
    options:    the option texts in the order shown; option ``i`` has the letter ``LETTERS[i]``.
    timestamps: presentation time (s) of each image, when known (adapters may ignore it).
    max_new_tokens: per-request override of the model's default generation length.
    key:        the caller's id, for logging only.
    """

    images: tuple[np.ndarray, ...]
    prompt: str
    options: tuple[str, ...] = ()
    timestamps: tuple[float, ...] | None = None
    max_new_tokens: int | None = None
    key: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "images", tuple(self.images))
        object.__setattr__(self, "options", tuple(self.options))
        if self.timestamps is not None:
            object.__setattr__(self, "timestamps", tuple(float(t) for t in self.timestamps))
            if len(self.timestamps) != len(self.images):
                raise ValueError(
                    f"request {self.key!r}: {len(self.timestamps)} timestamps for {len(self.images)} images"
                )
        for i, image in enumerate(self.images):
            if not (isinstance(image, np.ndarray) and image.ndim == 3 and image.shape[2] == 3):
                shape = getattr(image, "shape", type(image).__name__)
                raise ValueError(f"request {self.key!r}: image {i} must be (H, W, 3) RGB, got {shape}")
            if image.dtype != np.uint8:
                raise ValueError(f"request {self.key!r}: image {i} must be uint8, got {image.dtype}")
        if len(self.options) > len(LETTERS):
            raise ValueError(f"request {self.key!r}: at most {len(LETTERS)} options, got {len(self.options)}")
        if self.max_new_tokens is not None and self.max_new_tokens <= 0:
            raise ValueError(f"request {self.key!r}: max_new_tokens must be positive")

    @property
    def letters(self) -> tuple[str, ...]:
        """The option letters in the order shown: ``("A", "B", ...)``."""
        return tuple(LETTERS[: len(self.options)])


@dataclass(frozen=True)
class ModelResponse:
    """What came back for one request.

    text:            the raw generated text (``None`` when the call failed). For
                     ``method="option_scores"`` it is the letter of the best-scoring option.
    option_logprobs: log-likelihood per option, in request order, when the adapter can give it
                     (always for ``option_scores``; for ``generate`` the log-softmax of the first
                     generated position restricted to the letter tokens, where cheap).
    latency_s:       wall time of the call (for a batch: the batch's time divided evenly).
    error:           why the call failed (a failed call is never an answer).
    attempts:        how many tries were made (HTTP retries, batch-then-single fallbacks).
    """

    text: str | None
    option_logprobs: tuple[float, ...] | None = None
    latency_s: float = 0.0
    error: str | None = None
    attempts: int = 1

    def __post_init__(self) -> None:
        if self.option_logprobs is not None:
            object.__setattr__(self, "option_logprobs", tuple(float(x) for x in self.option_logprobs))
        if self.text is None and self.error is None:
            raise ValueError("a ModelResponse without text must carry an error")

    @property
    def ok(self) -> bool:
        """True when the call produced text (an answer to parse) and no error."""
        return self.error is None and self.text is not None

    @property
    def option_probs(self) -> tuple[float, ...] | None:
        """``option_logprobs`` renormalised over the options (softmax); ``None`` when absent."""
        return option_probs(self.option_logprobs)

    @classmethod
    def failure(
        cls, error: str | BaseException, *, latency_s: float = 0.0, attempts: int = 1
    ) -> ModelResponse:
        """An error response; exceptions are rendered as ``"TypeName: message"``."""
        if isinstance(error, BaseException):
            error = f"{type(error).__name__}: {error}"
        return cls(text=None, error=str(error) or "unknown error", latency_s=latency_s, attempts=attempts)


def option_probs(logprobs: Sequence[float] | None) -> tuple[float, ...] | None:
    """Softmax of per-option log-likelihoods (the distribution over the options only)."""
    if logprobs is None or len(logprobs) == 0:
        return None
    values = [float(x) for x in logprobs]
    if not all(math.isfinite(x) or x == -math.inf for x in values) or all(x == -math.inf for x in values):
        return None
    top = max(values)
    exps = [math.exp(x - top) for x in values]
    total = sum(exps)
    return tuple(e / total for e in exps)


#: What an answer-deciding setting counts as in the model fingerprint when a backend's spec does not
#: have it (:meth:`ModelSpec.setting`): the default of the one flat spec every backend shared before the
#: per-backend specs, so that the same settings keep the same fingerprint (stored answers stay reusable).
UNSET_SETTINGS: Mapping[str, Any] = MappingProxyType({
    "dtype": "auto",
    "trust_remote_code": False,
    "max_new_tokens": 8,
    "max_image_side": None,
    "image_size": None,
    "max_frames": None,
    "generation_kwargs": {},
    "processor_kwargs": {},
    "system_prompt": None,
    "score_option_text": False,
    "extra": {},
})


def spec_key(default: Any = _NO_DEFAULT, *, doc: str, factory: Callable[[], Any] | None = None) -> Any:
    """A spec field with its one-line documentation (``metadata["doc"]``, the README's key tables)."""
    if factory is not None:
        return field(default_factory=factory, metadata={"doc": doc})
    if default is _NO_DEFAULT:
        return field(metadata={"doc": doc})
    return field(default=default, metadata={"doc": doc})


class UnknownSpecKeys(ModelConfigError):
    """A model entry names keys its backend's spec does not have (``problems``: one message per key)."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True)
class ModelSpec:
    """How to build a model: the backend, the checkpoint, and the knobs that change its answers.

    This class holds the keys every backend has; each backend has its own small spec, a subclass
    adding that backend's settings (:mod:`tempcore.models.specs`: ``hf``, ``hf-text``, ``openai``,
    ``vllm``; the world's ``zoo`` declares its own). ``ModelSpec(backend=B, ...)`` and
    :meth:`from_dict` build the spec class registered for ``B`` (:func:`tempcore.models.registry.spec_class`),
    so a key another backend has is refused by name (``unknown key 'base_url' for backend hf``), with
    a suggestion for a near miss, when the entry is built: ``tempcore run`` builds every entry in its
    configuration check, before anything loads. Values are type-checked by pydantic (strict, kept as
    given: an ``int`` key takes an integer, ...) and range-checked when the spec is built, every bad
    value in one error.

    backend:   the registered backend name (``tempcore.models.registry.BACKENDS``).
    model:     hub id or local folder (local backends); the served model name (``openai``); a member
               name (``zoo``).
    name:      the name predictions are stored under (default: ``model``).
    revision:  hub revision (commit / tag) to load and record.
    preset:    the preset (:mod:`tempcore.models.presets`) whose defaults this spec started from.
    prompt_template: name of the prompt template the runner renders for this model.
    extra:     backend options not named by the spec's fields; each backend lists the keys it
               understands (:attr:`EXTRA_KEYS`; ``None``: any key).
    """

    backend: str = spec_key(doc="the backend (this table's)")
    model: str = spec_key(doc="hub id or local folder; the served model name (openai); a member (zoo)")
    name: str | None = spec_key(None, doc="the name predictions are stored under (default: model)")
    revision: str | None = spec_key(None, doc="hub revision (commit / tag) loaded and recorded")
    preset: str | None = spec_key(None, doc="the preset whose values this entry starts from")
    prompt_template: str = spec_key("default", doc="the prompt template rendered for this model")
    extra: Mapping[str, Any] = spec_key(doc="backend options (see below)", factory=dict)

    #: Keys of ``extra`` the backend understands, with their meaning (``None``: any key is passed on).
    EXTRA_KEYS: ClassVar[Mapping[str, str] | None] = None
    #: Whether loading the model loads weights into this process (``False``: a served model, whose
    #: client is only a connection). A served model's client stays in the run's own process under
    #: ``model_processes`` (:mod:`tempcore.models.hosted`) and is loaded without silencing
    #: transformers' bars (importing transformers for it would cost seconds).
    loads_weights: ClassVar[bool] = True
    #: The one answer method the backend uses whatever the entry's ``method`` (``None``: the entry's
    #: method, default ``generate``): the world's zoo members always score the options.
    answers_by: ClassVar[str | None] = None

    def __new__(cls, *args: Any, **kwargs: Any) -> ModelSpec:
        backend = kwargs["backend"] if "backend" in kwargs else (args[0] if args else None)
        if cls is ModelSpec and isinstance(backend, str) and backend:
            from tempcore.models.registry import spec_class

            cls = spec_class(backend)
        problems = cls.unknown_keys(kwargs, backend=backend)
        if problems:
            raise UnknownSpecKeys(problems)
        return object.__new__(cls)

    def __post_init__(self) -> None:
        if isinstance(self.model, os.PathLike):
            object.__setattr__(self, "model", os.fspath(self.model))
        if not self.backend:
            raise ModelConfigError("model spec: backend is empty")
        if not self.model:
            raise ModelConfigError(f"model spec ({self.backend}): model is empty")
        hints = _hints(type(self))
        wrong = [f"{f.name} must be {_describe_type(hints[f.name])}, not {getattr(self, f.name)!r}"
                 for f in dataclasses.fields(self) if not _accepts(hints[f.name], getattr(self, f.name))]
        if not wrong:  # the ranges of values of the right types
            wrong = [rule[1] for name in self.spec_keys()
                     if (rule := _RULES.get(name)) is not None and not rule[0](getattr(self, name))]
        if wrong:  # every bad value at once
            raise ModelConfigError(f"model {self.display_name}: " + "; ".join(wrong))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Mapping):  # a private, plain copy (the spec stays immutable by convention)
                object.__setattr__(self, f.name, dict(value))
        if self.EXTRA_KEYS is not None:
            unknown = [k for k in self.extra if k not in self.EXTRA_KEYS]
            if unknown:
                known = list(self.EXTRA_KEYS)
                raise ModelConfigError(
                    f"model {self.display_name}: unknown {self.backend} option(s) {unknown} in extra"
                    f"{did_you_mean(unknown[0], known)}; known: {known}"
                )

    @classmethod
    def spec_keys(cls) -> tuple[str, ...]:
        """The keys (field names) of this spec, in order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def unknown_keys(cls, data: Mapping[str, Any], *, backend: object = None) -> list[str]:
        """One message per key of ``data`` this spec does not have (``[]`` when every key is known):
        ``"unknown key 'max_new_token' for backend hf; did you mean 'max_new_tokens'?"``."""
        known = cls.spec_keys()
        which = backend if isinstance(backend, str) and backend else "of this spec"
        out = []
        for key in data:
            if key in known:
                continue
            hint = did_you_mean(key, known)
            out.append(
                f"unknown key {key!r} for backend {which}" + (hint or f" (known: {', '.join(known)})")
            )
        return out

    def preflight(self) -> list[str]:
        """What is wrong with this entry that can be seen without loading the model (a missing
        checkpoint file, an unknown member): one message per problem; ``[]`` when nothing is.
        The run's configuration check (:func:`tempcore.run.config.check_config`) reports them before
        anything loads. A backend's spec overrides it; the base checks nothing."""
        return []

    @property
    def display_name(self) -> str:
        """The name predictions are stored under."""
        return self.name or self.model

    def setting(self, name: str) -> Any:
        """The value of an answer-deciding setting, also for a setting this backend does not have
        (then :data:`UNSET_SETTINGS`: what the model fingerprint counts it as)."""
        if name in self.spec_keys():
            return getattr(self, name)
        if name in UNSET_SETTINGS:
            return copy.deepcopy(UNSET_SETTINGS[name])
        raise ModelConfigError(f"model {self.display_name}: backend {self.backend} has no setting {name!r}")

    def replace(self, **changes: Any) -> ModelSpec:
        """A copy with ``changes``; a change of ``backend`` rebuilds the entry as the other backend's
        spec (keys left at their default or unset are dropped; a set key the other backend lacks is refused)."""
        if "backend" in changes and changes["backend"] != self.backend:
            from tempcore.models.registry import spec_class

            defaults = {f.name: _default(f) for f in dataclasses.fields(self)}
            data = {k: v for k, v in self.to_dict().items() if v != defaults[k]} | changes
            keys = spec_class(str(changes["backend"])).spec_keys()
            return ModelSpec.from_dict({k: v for k, v in data.items() if k in keys or v not in (None, {})})
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict of every key of this spec (for run manifests; holds no secret, only
        the API key's variable name; ``base_url`` credentials are stripped by the runner)."""
        return {f.name: copy.deepcopy(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelSpec:
        """The spec of ``data["backend"]`` from a mapping (a YAML entry); unknown keys raise
        :class:`UnknownSpecKeys` naming each key, with a suggestion."""
        if not isinstance(data, Mapping):
            raise ModelConfigError(f"model spec must be a mapping, not {type(data).__name__}")
        bad = [k for k in data if not isinstance(k, str)]
        if bad:
            raise ModelConfigError(f"model spec: keys must be strings, not {bad!r}")
        if cls is ModelSpec and "backend" not in data:
            raise ModelConfigError("model spec: needs 'backend' (or 'preset')")
        if "model" not in data:
            raise ModelConfigError(f"model spec ({data.get('backend')}): needs 'model'")
        return cls(**dict(data))


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return _NO_DEFAULT


def _positive(v: Any) -> bool:
    return bool(v > 0)


#: Range checks of the keys that have one (the key's message when the value fails).
_RULES: Mapping[str, tuple[Callable[[Any], bool], str]] = {
    "max_new_tokens": (_positive, "max_new_tokens must be positive"),
    "batch_size": (_positive, "batch_size must be positive"),
    "concurrency": (_positive, "concurrency must be positive"),
    "timeout_s": (_positive, "timeout_s must be positive"),
    "max_retries": (lambda v: v >= 0, "max_retries must be >= 0"),
    "max_image_side": (lambda v: v is None or v >= 8, "max_image_side must be >= 8"),
    "max_frames": (lambda v: v is None or v >= 1, "max_frames must be >= 1"),
    "generation_kwargs": (lambda v: not v.get("do_sample"), "answers are greedy; do_sample=True is refused"),
}

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _accepts(hint: Any, value: Any) -> bool:
    """Whether ``value`` fits the annotation ``hint``, as pydantic validates it in strict mode without
    keeping its result (the value is stored as given: an int is a float, a bool is not an int, a
    ``Mapping[str, int]`` holds ints); a hint pydantic has no schema for: an ``isinstance`` check."""
    adapter = _adapter(hint)
    if adapter is None:
        origin = typing.get_origin(hint) or hint
        return isinstance(value, origin) if isinstance(origin, type) else True
    from pydantic import ValidationError

    try:
        adapter.validate_python(value)
    except ValidationError:
        return False
    return True


_ADAPTERS: dict[Any, Any] = {}


def _adapter(hint: Any) -> Any:
    """The strict pydantic ``TypeAdapter`` of ``hint`` (cached), ``None`` when pydantic cannot build one."""
    try:
        return _ADAPTERS[hint]
    except KeyError:
        pass
    except TypeError:  # an unhashable hint
        return None
    from pydantic import ConfigDict, PydanticSchemaGenerationError, TypeAdapter

    try:
        adapter: Any = TypeAdapter(hint, config=ConfigDict(strict=True, arbitrary_types_allowed=True))
    except (PydanticSchemaGenerationError, TypeError, NameError):
        adapter = None
    _ADAPTERS[hint] = adapter
    return adapter


def _describe_type(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        parts = [_describe_type(a) for a in typing.get_args(hint)]
        return " or ".join(parts)
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", type(None): "null"}
    if hint in names:
        return names[hint]
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is not Any:  # e.g. Mapping[str, int]: "a mapping to integers"
            return f"a mapping to {_describe_type(args[1]).split(' ', 1)[-1]}s"
        return "a mapping"
    return getattr(hint, "__name__", str(hint))


@runtime_checkable
class Model(Protocol):
    """A loaded model. ``answer`` returns exactly one response per request, in request order.

    ``method="generate"`` returns generated text; ``method="option_scores"`` returns the letter
    of the most likely option as text and ``option_logprobs`` (only where
    ``supports_option_scores``; otherwise :class:`UnsupportedMethodError` is raised before any
    call). Per-item failures are returned as error responses, never raised.
    """

    name: str
    revision: str | None
    supports_option_scores: bool

    def answer(
        self, requests: Sequence[ModelRequest], *, method: str = "generate"
    ) -> list[ModelResponse]: ...

    def close(self) -> None: ...


def check_method(model: Model, method: str) -> None:
    """Raise :class:`UnsupportedMethodError` / :class:`ModelConfigError` for a method the model cannot run."""
    if method not in METHODS:
        raise ModelConfigError(f"model {model.name}: unknown answer method {method!r}; choose from {METHODS}")
    if method == METHOD_OPTION_SCORES and not model.supports_option_scores:
        raise UnsupportedMethodError(f"model {model.name}: option scoring is not supported by this backend")


__all__ = [
    "METHODS",
    "METHOD_GENERATE",
    "METHOD_OPTION_SCORES",
    "MissingExtraError",
    "Model",
    "ModelConfigError",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelSpec",
    "RemoteCodeRefused",
    "UNSET_SETTINGS",
    "UnknownSpecKeys",
    "UnsupportedMethodError",
    "check_method",
    "option_probs",
    "spec_key",
]
