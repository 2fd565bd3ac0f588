"""Frame-text encoders (E_V, E_T of Eq. 1): the protocol, a transformers adapter, and a registry.

``load_encoder("siglip2")`` loads the paper's default encoder; any SigLIP / SigLIP2 / CLIP hub id or
checkpoint folder works too. Importing this package does not import torch or transformers: they
load when an encoder is loaded.
"""

from tempcore.encoders.base import (
    EncoderError,
    EncoderLoadError,
    FrameTextEncoder,
    SupportsPreparedImages,
    TextEncoding,
    UnsupportedEncoderError,
)
from tempcore.encoders.registry import (
    ALIASES,
    DEFAULT_ENCODER,
    ENCODERS,
    UnknownEncoderError,
    available_encoders,
    load_encoder,
    register_encoder,
    resolve_encoder_id,
)

__all__ = [
    "ALIASES",
    "DEFAULT_ENCODER",
    "ENCODERS",
    "EncoderError",
    "EncoderLoadError",
    "FrameTextEncoder",
    "SupportsPreparedImages",
    "TextEncoding",
    "UnknownEncoderError",
    "UnsupportedEncoderError",
    "available_encoders",
    "load_encoder",
    "register_encoder",
    "resolve_encoder_id",
]
