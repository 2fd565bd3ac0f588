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

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from tempcore.errors import TempcoreError
from tempcore.records import LETTERS

#: Answer methods (``Prediction.answer_method``).
METHOD_GENERATE = "generate"
METHOD_OPTION_SCORES = "option_scores"
METHODS = (METHOD_GENERATE, METHOD_OPTION_SCORES)


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


@dataclass(frozen=True)
class ModelSpec:
    """How to build a model: the backend, the checkpoint, and the knobs that change its answers.

    backend:   ``hf`` (transformers VLM), ``hf-text`` (text-only causal LM), ``openai``
               (OpenAI-compatible HTTP), ``vllm`` (vLLM offline engine).
    model:     hub id or local folder (``hf``/``hf-text``/``vllm``); the served model name (``openai``).
    name:      the name predictions are stored under (default: ``model``).
    revision:  hub revision (commit / tag) to load and record.
    preset:    name of a preset in :mod:`tempcore.models.presets` whose defaults this spec started from.
    device:    ``auto`` (cuda > mps > cpu), or any torch device string.
    dtype:     ``auto`` (cuda: bf16 if supported else fp16; mps: fp16; cpu: fp32), or
               ``float32`` / ``float16`` / ``bfloat16``.
    trust_remote_code: load checkpoint code from the hub; refused unless explicitly True.
    max_new_tokens:    default generation length (a letter answer needs very few).
    batch_size:        requests per forward pass (local backends) .
    max_image_side:    downscale frames so that their longer side is at most this (pixels).
    image_size:        per-model processor size hint, passed to the image processor (e.g.
                       ``{"longest_edge": 384}``); ``None`` keeps the checkpoint's.
    max_frames:        the most frames the model accepts; longer requests fail with an error.
    generation_kwargs: extra keyword arguments for generation (never ``do_sample=True``).
    processor_kwargs:  extra keyword arguments for the processor call.
    prompt_template:   name of the prompt template the runner should render for this model.
    system_prompt:     optional system message placed before the user turn.
    score_option_text: option scoring also scores the option text after the letter.
    base_url, api_key_env, concurrency, timeout_s, max_retries: the ``openai`` backend (the API
               key is read from the environment variable ``api_key_env``; it is never stored).
    extra:     backend-specific options not named above.
    """

    backend: str
    model: str
    name: str | None = None
    revision: str | None = None
    preset: str | None = None
    device: str = "auto"
    dtype: str = "auto"
    trust_remote_code: bool = False
    max_new_tokens: int = 8
    batch_size: int = 8
    max_image_side: int | None = None
    image_size: Mapping[str, int] | None = None
    max_frames: int | None = None
    generation_kwargs: Mapping[str, Any] = field(default_factory=dict)
    processor_kwargs: Mapping[str, Any] = field(default_factory=dict)
    prompt_template: str = "default"
    system_prompt: str | None = None
    score_option_text: bool = False
    base_url: str | None = None
    api_key_env: str | None = None
    concurrency: int = 8
    timeout_s: float = 120.0
    max_retries: int = 5
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.backend:
            raise ModelConfigError("model spec: backend is empty")
        if not self.model:
            raise ModelConfigError(f"model spec ({self.backend}): model is empty")
        if self.max_new_tokens <= 0:
            raise ModelConfigError(f"model {self.display_name}: max_new_tokens must be positive")
        if self.batch_size <= 0:
            raise ModelConfigError(f"model {self.display_name}: batch_size must be positive")
        if self.max_image_side is not None and self.max_image_side < 8:
            raise ModelConfigError(f"model {self.display_name}: max_image_side must be >= 8")
        if self.concurrency <= 0:
            raise ModelConfigError(f"model {self.display_name}: concurrency must be positive")
        if self.generation_kwargs.get("do_sample"):
            raise ModelConfigError(
                f"model {self.display_name}: answers are greedy; do_sample=True is refused"
            )
        for name in ("generation_kwargs", "processor_kwargs", "extra"):
            object.__setattr__(self, name, dict(getattr(self, name) or {}))
        if self.image_size is not None:
            object.__setattr__(self, "image_size", dict(self.image_size))

    @property
    def display_name(self) -> str:
        """The name predictions are stored under."""
        return self.name or self.model

    def replace(self, **changes: Any) -> ModelSpec:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (for run manifests; holds no secret, only the key's variable name)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelSpec:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ModelConfigError(f"model spec: unknown field(s) {unknown}; known: {sorted(names)}")
        return cls(**dict(data))


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
    "UnsupportedMethodError",
    "check_method",
    "option_probs",
]
