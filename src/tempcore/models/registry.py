"""The model registry: backend name -> lazily imported factory and its spec, and ``load_model(spec)``.

Entries of :data:`BACKENDS` are lazy ``"module:Class"`` references, imported only when a model of that backend is loaded,
so ``import tempcore.models`` never imports torch, transformers, httpx or vllm. A factory is
called as ``Class.from_spec(spec)`` when it has that classmethod, else ``Class(spec)``.

Each backend has its spec: the :class:`ModelSpec` subclass whose keys a model entry of that backend may
set (:func:`spec_class`). It is registered with the backend (``register_backend(name, target,
spec=...)``, kept in the entry's metadata, so looking it up imports neither the factory nor torch), or
declared by the factory as its ``spec_class`` attribute (how a backend added through the
``tempcore.models`` entry-point group brings its spec: the world's ``zoo``), or else the common
:class:`ModelSpec` (the common keys; the backend's own options go under ``extra``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tempcore.models.base import Model, ModelConfigError, ModelSpec
from tempcore.models.specs import BUILTIN_SPECS
from tempcore.registry import GROUPS, Lazy, Registry, RegistryError, did_you_mean


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
    BACKENDS.register_lazy(_name, _target, spec=BUILTIN_SPECS[_name])


def register_backend(
    name: str,
    target: str | Any,
    *,
    spec: str | type[ModelSpec] | None = None,
    replace: bool = False,
    overwrite: bool = False,
) -> None:
    """Add a backend: ``target`` is ``"package.module:Factory"`` (imported on first use) or the factory.

    ``spec``: the backend's :class:`ModelSpec` subclass (or its ``"module:Class"``, imported when a
    model entry of the backend is built); without it, the factory's ``spec_class`` attribute, else
    the common :class:`ModelSpec`. Registering a name again with the same target and spec is a
    no-op; another target or spec needs ``replace`` (``overwrite`` is the older spelling).
    """
    replace = replace or overwrite
    meta: dict[str, Any] = {}
    if spec is not None:
        if isinstance(spec, str):
            try:
                Lazy(spec)
            except RegistryError as exc:
                raise ModelConfigError(f"backend {name!r}: spec {exc}") from None
        elif not (isinstance(spec, type) and issubclass(spec, ModelSpec)):
            raise ModelConfigError(f"backend {name!r}: spec {spec!r} is not a ModelSpec subclass")
        meta["spec"] = spec
    if spec is not None and not replace and name in BACKENDS and BACKENDS.target(name) == target:
        old = BACKENDS.meta(name).get("spec")
        if old is not None and old != spec:  # the same factory again with another spec
            raise ModelConfigError(
                f"model backend {name!r} is already registered with the spec {old!r} (pass replace=True to replace it)"
            )
    if isinstance(target, str):
        BACKENDS.register_lazy(name, target, replace=replace, **meta)
    else:
        BACKENDS.register(name, target, replace=replace, **meta)


def spec_class(backend: str) -> type[ModelSpec]:
    """The :class:`ModelSpec` subclass of ``backend`` (see the module docstring); an unknown backend
    raises :class:`ModelConfigError` with a suggestion."""
    spec = BACKENDS.meta(backend).get("spec")
    if spec is None:
        spec = getattr(BACKENDS.get(backend), "spec_class", None) or ModelSpec
    elif isinstance(spec, str):
        try:
            spec = Lazy(spec).load()
        except AttributeError as exc:
            raise ModelConfigError(f"backend {backend!r}: cannot load its spec ({exc})") from exc
    if not (isinstance(spec, type) and issubclass(spec, ModelSpec)):
        raise ModelConfigError(f"backend {backend!r}: its spec {spec!r} is not a ModelSpec subclass")
    return spec


def resolve_factory(backend: str) -> Any:
    """Import and return the factory registered for ``backend``."""
    return BACKENDS.get(backend)


def as_spec(spec: ModelSpec | Mapping[str, Any] | str) -> ModelSpec:
    """A :class:`ModelSpec` from a spec, a mapping (e.g. a YAML entry) or a preset name.

    A mapping may name ``preset``: the preset's spec is the base and the mapping's other fields
    override it. A bare string must be a preset name. The mapping's ``backend`` chooses the spec
    class (:func:`spec_class`); a key that backend does not have raises
    :class:`tempcore.models.base.UnknownSpecKeys`.
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
    model: Model = build(spec)
    return model


__all__ = ["BACKENDS", "as_spec", "load_model", "register_backend", "resolve_factory", "spec_class"]
