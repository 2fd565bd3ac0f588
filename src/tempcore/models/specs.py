"""One small typed spec per model backend: the keys a model entry of that backend may set.

``backend:`` chooses the spec (:func:`tempcore.models.registry.spec_class`); every spec has the common
keys of :class:`tempcore.models.base.ModelSpec` (``backend``, ``model``, ``name``, ``revision``,
``preset``, ``prompt_template``, ``extra``) and adds its backend's own:

``hf`` (:class:`HFVLMSpec`)
    a transformers image-text-to-text checkpoint: the :class:`HFTextSpec` keys plus the image keys.
``hf-text`` (:class:`HFTextSpec`)
    a text-only causal LM (images in requests are ignored, so it has no image key).
``openai`` (:class:`OpenAISpec`)
    an OpenAI-compatible HTTP server: the URL, the key's variable, concurrency, timeouts, retries.
``vllm`` (:class:`VLLMSpec`)
    the vLLM offline engine (no option scoring, so no ``score_option_text``; device and engine
    settings go to ``extra.engine_kwargs``).

A backend from another package declares its spec as the ``spec_class`` attribute of its factory, or
passes ``spec=`` to :func:`tempcore.models.registry.register_backend` (the world's ``zoo`` backend does
the former: :class:`tempcore.world.answerers.model.ZooSpec`). Open choices, stated:

* ``openai`` keeps ``dtype`` (the dtype the server runs the model in, as far as you know it: never sent,
  but part of the model fingerprint, so a server restarted in another dtype does not reuse stored
  answers) and ``batch_size`` (not used by the HTTP client, whose parallelism is ``concurrency``;
  accepted so that a batch size given to every entry of a run stays valid, and not part of the
  fingerprint).
* ``extra`` keys are checked against each backend's :attr:`~tempcore.models.base.ModelSpec.EXTRA_KEYS`
  (the options its adapter reads); a spec with ``EXTRA_KEYS = None`` passes any key on.
* Settings a backend does not have count, in the model fingerprint, as the one flat spec's defaults
  (:data:`tempcore.models.base.UNSET_SETTINGS`): the same settings keep the same fingerprint.

This module imports only the standard library and :mod:`tempcore.models.base` (no torch, no httpx).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from tempcore.models.base import ModelConfigError, ModelSpec, spec_key

_HF_EXTRA: Mapping[str, str] = {
    "attn_implementation": "passed to from_pretrained (e.g. sdpa, flash_attention_2)",
    "device_map": "passed to from_pretrained (the model is then not moved to device)",
    "chat_template": "a chat template replacing the checkpoint's",
    "chat_template_kwargs": "keyword arguments of apply_chat_template (e.g. enable_thinking: false)",
}


@dataclass(frozen=True)
class HFTextSpec(ModelSpec):
    """``backend: hf-text``: a transformers causal LM (no images)."""

    device: str = spec_key("auto", doc="auto (cuda > mps > cpu) or a torch device")
    dtype: str = spec_key("auto", doc="auto (cuda: bf16 if supported else fp16; mps: fp16; cpu: fp32), float32, float16, bfloat16")
    trust_remote_code: bool = spec_key(False, doc="load checkpoint code from the hub (refused unless true)")
    batch_size: int = spec_key(8, doc="requests per forward pass")
    max_new_tokens: int = spec_key(8, doc="default generation length")
    generation_kwargs: Mapping[str, Any] = spec_key(doc="extra generate() arguments (never do_sample: true)", factory=dict)
    system_prompt: str | None = spec_key(None, doc="a system message before the user turn")
    score_option_text: bool = spec_key(False, doc="option scoring also scores the option text after the letter")

    EXTRA_KEYS: ClassVar[Mapping[str, str] | None] = _HF_EXTRA


@dataclass(frozen=True)
class HFVLMSpec(HFTextSpec):
    """``backend: hf``: a transformers image-text-to-text checkpoint (frames as separate images)."""

    max_image_side: int | None = spec_key(None, doc="downscale frames so their longer side is at most this (pixels)")
    image_size: Mapping[str, int] | None = spec_key(None, doc="the image processor's size (e.g. {longest_edge: 384})")
    max_frames: int | None = spec_key(None, doc="the most images per request (more: that request fails)")
    processor_kwargs: Mapping[str, Any] = spec_key(doc="extra processor-call arguments", factory=dict)

    EXTRA_KEYS: ClassVar[Mapping[str, str] | None] = {
        "model_class": "the transformers class to load with (default AutoModelForImageTextToText)",
        **_HF_EXTRA,
    }


#: ``extra`` keys of the ``openai`` backend (:meth:`tempcore.models.openai_http.OpenAIChatModel.from_spec`).
OPENAI_EXTRA: Mapping[str, str] = {
    "backoff_base_s": "first retry delay (s; exponential with jitter)",
    "backoff_max_s": "longest retry delay (s)",
    "image_format": "jpeg or png",
    "jpeg_quality": "1..100",
    "temperature": "sampling temperature sent (default 0)",
    "extra_body": "extra request-body fields (win over generation_kwargs)",
    "request_logprobs": "ask for the first token's log-probabilities (option scores)",
    "top_logprobs": "how many (1..20)",
}


@dataclass(frozen=True)
class OpenAISpec(ModelSpec):
    """``backend: openai``: an OpenAI-compatible chat-completions server (vLLM, SGLang, hosted APIs)."""

    base_url: str | None = spec_key(None, doc="the server's /v1 URL (required)")
    api_key_env: str | None = spec_key(None, doc="the environment variable holding the API key (never stored)")
    concurrency: int = spec_key(8, doc="requests in flight, across samples and conditions")
    timeout_s: float = spec_key(120.0, doc="per-request timeout (s)")
    max_retries: int = spec_key(5, doc="retries on 408 / 429 / 5xx / timeouts / dropped connections")
    max_new_tokens: int = spec_key(8, doc="max_tokens of each request")
    generation_kwargs: Mapping[str, Any] = spec_key(doc="extra request-body fields (never do_sample: true)", factory=dict)
    system_prompt: str | None = spec_key(None, doc="a system message before the user turn")
    max_image_side: int | None = spec_key(None, doc="downscale frames so their longer side is at most this (pixels)")
    max_frames: int | None = spec_key(None, doc="the most images per request (more: that request fails)")
    dtype: str = spec_key("auto", doc="the dtype the server runs (not sent; part of the fingerprint)")
    batch_size: int = spec_key(8, doc="not used over HTTP (concurrency is); accepted for shared settings")

    EXTRA_KEYS: ClassVar[Mapping[str, str] | None] = OPENAI_EXTRA
    loads_weights: ClassVar[bool] = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.base_url:
            raise ModelConfigError(f"model {self.display_name}: the openai backend needs base_url")


@dataclass(frozen=True)
class VLLMSpec(ModelSpec):
    """``backend: vllm``: the vLLM offline engine (greedy; no option scoring)."""

    dtype: str = spec_key("auto", doc="the engine's dtype (auto or a vLLM dtype)")
    trust_remote_code: bool = spec_key(False, doc="load checkpoint code from the hub (refused unless true)")
    batch_size: int = spec_key(8, doc="requests per engine call")
    max_new_tokens: int = spec_key(8, doc="default generation length")
    generation_kwargs: Mapping[str, Any] = spec_key(doc="extra SamplingParams arguments (never do_sample: true)", factory=dict)
    system_prompt: str | None = spec_key(None, doc="a system message before the user turn")
    max_image_side: int | None = spec_key(None, doc="downscale frames so their longer side is at most this (pixels)")
    max_frames: int | None = spec_key(None, doc="the most images per request (also the engine's image limit; default 32)")

    EXTRA_KEYS: ClassVar[Mapping[str, str] | None] = {
        "engine_kwargs": "keyword arguments of vllm.LLM (device, tensor_parallel_size, ...)",
        "logprobs": "top log-probabilities requested per step (default 20)",
        "chat_template_kwargs": "keyword arguments of the chat template",
    }


#: The built-in backends' specs (``name -> "module:Class"``, registered with the backends).
BUILTIN_SPECS: Mapping[str, str] = {
    "hf": "tempcore.models.specs:HFVLMSpec",
    "hf-text": "tempcore.models.specs:HFTextSpec",
    "openai": "tempcore.models.specs:OpenAISpec",
    "vllm": "tempcore.models.specs:VLLMSpec",
}


def expect_spec(spec: ModelSpec, cls: type[ModelSpec], what: str) -> None:
    """Raise :class:`ModelConfigError` unless ``spec`` is a ``cls`` (an adapter given another backend's spec)."""
    if not isinstance(spec, cls):
        raise ModelConfigError(
            f"model {spec.display_name}: {what} needs a {cls.__name__}, not a {type(spec).__name__} "
            f"(build it with ModelSpec(backend=..., ...) or as_spec)"
        )


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _type_text(f: dataclasses.Field[Any]) -> str:
    text = str(f.type).replace("Mapping[str, Any]", "mapping").replace("Mapping[str, int]", "mapping")
    return text.replace(" | None", " or null").replace("str", "string").replace("int", "integer") \
        .replace("float", "number").replace("bool", "boolean")


def _yaml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def _default_text(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        return f"`{_yaml(f.default)}`"
    if f.default_factory is not dataclasses.MISSING:
        return f"`{_yaml(f.default_factory())}`"
    return "required"


def _summary(cls: type[ModelSpec]) -> str:
    first = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
    return first.split("``: ", 1)[-1].rstrip(".")


def markdown_table(cls: type[ModelSpec], *, common: bool = False) -> str:
    """The keys of ``cls`` as a Markdown table (``| key | type | default | meaning |``): the keys it
    adds to :class:`ModelSpec` and its ``extra`` keys, or (``common=True``) the common keys."""
    base = set(ModelSpec.spec_keys())
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for f in dataclasses.fields(cls):
        if (f.name in base) != common:
            continue
        rows.append(f"| `{f.name}` | {_type_text(f)} | {_default_text(f)} | {_cell(f.metadata.get('doc', ''))} |")
    if not common and cls.EXTRA_KEYS is not None:
        rows += [f"| `extra.{k}` | | | {_cell(v)} |" for k, v in cls.EXTRA_KEYS.items()]
    return "\n".join(rows)


def markdown_tables(backends: Mapping[str, type[ModelSpec]] | None = None) -> str:
    """The README's model-entry tables: the common keys, then one table per backend (default: the
    built-in ones)."""
    from tempcore.models.registry import spec_class

    if backends is None:
        backends = {name: spec_class(name) for name in BUILTIN_SPECS}
    parts = ["Every backend (`ModelSpec`):", "", markdown_table(ModelSpec, common=True)]
    for name, cls in backends.items():
        parts += ["", f"`backend: {name}` (`{cls.__name__}`): {_summary(cls)}.", "", markdown_table(cls)]
    return "\n".join(parts)


__all__ = [
    "BUILTIN_SPECS",
    "OPENAI_EXTRA",
    "HFTextSpec",
    "HFVLMSpec",
    "OpenAISpec",
    "VLLMSpec",
    "expect_spec",
    "markdown_table",
    "markdown_tables",
]
