"""Model adapters: one interface (:class:`Model`) over transformers, vLLM and OpenAI-compatible HTTP.

Only the interface and the registry load here; backends import their heavy dependencies when a
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
from tempcore.models.registry import BACKENDS, as_spec, load_model, register_backend

__all__ = [
    "BACKENDS",
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
    "as_spec",
    "load_model",
    "register_backend",
]
