"""The model registry: backend name -> lazily imported factory, and ``load_model(spec)``.

Entries of :data:`BACKENDS` are lazy ``"module:Class"`` references, imported only when a model of that backend is loaded,
so ``import tempcore.models`` never imports torch, transformers, httpx or vllm. A factory is
called as ``Class.from_spec(spec)`` when it has that classmethod, else ``Class(spec)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tempcore.models.base import Model, ModelConfigError, ModelSpec
from tempcore.registry import GROUPS, Registry, did_you_mean


def _unknown_backend(name: str, known: list[str]) -> ModelConfigError:
    return ModelConfigError(f"unknown model backend {name!r}{did_you_mean(name, known)} (known: {', '.join(known)})")


def _check_factory(name: str, factory: Any) -> None:
    if not callable(factory):
        raise ModelConfigError(f"backend {name!r}: {factory!r} is not a class or callable")


BACKENDS: Registry[Any] = Registry(
    "model backend", group=GROUPS["models"], check=_check_factory, unknown=_unknown_backend, error=ModelConfigError
)
"""Backend name -> model factory (``"module:Class"`` entries, imported when a model of that backend is
loaded). Other packages add backends through the ``tempcore.models`` entry-point group (the synthetic
world's ``zoo`` backend is registered that way, by tempcore's own ``pyproject.toml``)."""

for _name, _target in (
    ("hf", "tempcore.models.hf_vlm:HFVisionLanguageModel"),
    ("hf-text", "tempcore.models.hf_text:HFTextModel"),
    ("openai", "tempcore.models.openai_http:OpenAIChatModel"),
    ("vllm", "tempcore.models.vllm_offline:VLLMOfflineModel"),
):
    BACKENDS.register_lazy(_name, _target)


def register_backend(name: str, target: str | Any, *, replace: bool = False, overwrite: bool = False) -> None:
    """Add a backend: ``target`` is ``"package.module:Factory"`` (imported on first use) or the factory.

    Registering a name again with the same target is a no-op; another target needs ``replace``
    (``overwrite`` is the older spelling).
    """
    if isinstance(target, str):
        BACKENDS.register_lazy(name, target, replace=replace or overwrite)
    else:
        BACKENDS.register(name, target, replace=replace or overwrite)


def resolve_factory(backend: str) -> Any:
    """Import and return the factory registered for ``backend``."""
    return BACKENDS.get(backend)


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
