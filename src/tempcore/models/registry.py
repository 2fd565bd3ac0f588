"""The model registry: backend name -> lazily imported factory, and ``load_model(spec)``.

Entries are ``"module:Class"`` strings, imported only when a model of that backend is loaded,
so ``import tempcore.models`` never imports torch, transformers, httpx or vllm. A factory is
called as ``Class.from_spec(spec)`` when it has that classmethod, else ``Class(spec)``.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from typing import Any

from tempcore.models.base import Model, ModelConfigError, ModelSpec

BACKENDS: dict[str, str] = {
    "hf": "tempcore.models.hf_vlm:HFVisionLanguageModel",
    "hf-text": "tempcore.models.hf_text:HFTextModel",
    "openai": "tempcore.models.openai_http:OpenAIChatModel",
    "vllm": "tempcore.models.vllm_offline:VLLMOfflineModel",
    "zoo": "tempcore.world.answerers:ZooModel",  # the synthetic world's embedded answerers
}


def register_backend(name: str, target: str, *, overwrite: bool = False) -> None:
    """Add a backend: ``target`` is ``"package.module:Factory"`` (imported on first use)."""
    if ":" not in target:
        raise ModelConfigError(f"backend {name!r}: target must be 'module:Factory', not {target!r}")
    if name in BACKENDS and not overwrite and BACKENDS[name] != target:
        raise ModelConfigError(f"backend {name!r} is already registered as {BACKENDS[name]!r}")
    BACKENDS[name] = target


def _unknown(kind: str, name: str, known: list[str]) -> ModelConfigError:
    close = difflib.get_close_matches(name, known, n=3)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return ModelConfigError(f"unknown model {kind} {name!r}{hint} (known: {', '.join(sorted(known))})")


def resolve_factory(backend: str) -> Any:
    """Import and return the factory registered for ``backend``."""
    if backend not in BACKENDS:
        raise _unknown("backend", backend, list(BACKENDS))
    module_name, _, attr = BACKENDS[backend].partition(":")
    module = importlib.import_module(module_name)
    try:
        factory = getattr(module, attr)
    except AttributeError as exc:
        raise ModelConfigError(f"backend {backend!r}: {module_name} has no {attr!r}") from exc
    return factory


def as_spec(spec: ModelSpec | Mapping[str, Any] | str) -> ModelSpec:
    """A :class:`ModelSpec` from a spec, a mapping (e.g. a YAML entry) or a preset name.

    A mapping may name ``preset``: the preset's spec is the base and the mapping's other fields
    override it. A bare string must be a preset name.
    """
    from tempcore.models import presets

    if isinstance(spec, ModelSpec):
        return spec
    if isinstance(spec, str):
        return presets.preset_spec(spec)
    if isinstance(spec, Mapping):
        data = dict(spec)
        if data.get("preset"):
            return presets.preset_spec(str(data.pop("preset")), **data)
        return ModelSpec.from_dict(data)
    raise ModelConfigError(
        f"model spec must be a ModelSpec, a mapping or a preset name, not {type(spec).__name__}"
    )


def load_model(spec: ModelSpec | Mapping[str, Any] | str) -> Model:
    """Build the model a spec names (loading weights for local backends)."""
    spec = as_spec(spec)
    factory = resolve_factory(spec.backend)
    build = getattr(factory, "from_spec", factory)
    return build(spec)


__all__ = ["BACKENDS", "as_spec", "load_model", "register_backend", "resolve_factory"]
