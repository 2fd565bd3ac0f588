"""Model adapters: one interface (:class:`Model`) over transformers, vLLM and OpenAI-compatible HTTP.

Only the interface, the per-backend model-entry specs (:mod:`tempcore.models.specs`) and the registry
load here; backends import their heavy dependencies when a
model of that backend is loaded.
"""

from tempcore.models.base import (
    METHOD_GENERATE,
    METHOD_OPTION_SCORES,
    METHODS,
    MissingExtraError,
    Model,
    ModelConfigError,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelSpec,
    RemoteCodeRefused,
    UnsupportedMethodError,
)
from tempcore.models.registry import BACKENDS, as_spec, load_model, register_backend, spec_class
from tempcore.models.specs import HFTextSpec, HFVLMSpec, OpenAISpec, VLLMSpec

__all__ = [
    "BACKENDS",
    "HFTextSpec",
    "HFVLMSpec",
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
    "OpenAISpec",
    "RemoteCodeRefused",
    "UnsupportedMethodError",
    "VLLMSpec",
    "as_spec",
    "load_model",
    "register_backend",
    "spec_class",
]
