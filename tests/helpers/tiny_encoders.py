"""Tiny random-weight SigLIP, SigLIP2 (NaFlex) and CLIP checkpoints for tests: the package's own
builders (:mod:`tempcore.models.tiny`, behind ``tempcore tiny-checkpoints``), under the names the
tests use. Tests load them through ``tempcore.encoders.load_encoder(path)``, the same code path a
user's checkpoint takes.
"""

from __future__ import annotations

from tempcore.models.tiny import (
    ENCODER_BUILDERS as BUILDERS,
)
from tempcore.models.tiny import (
    ENCODER_FAMILIES as FAMILIES,
)
from tempcore.models.tiny import (
    SEED,
    build_tiny_clip,
    build_tiny_encoder,
    build_tiny_siglip,
    build_tiny_siglip2,
    build_tiny_siglip2_fixres,
    corpus,
    sentencepiece_model,
)
from tempcore.models.tiny import (
    tiny_encoder_checkpoints as tiny_checkpoints,
)

__all__ = [
    "BUILDERS", "FAMILIES", "SEED", "build_tiny_clip", "build_tiny_encoder", "build_tiny_siglip",
    "build_tiny_siglip2", "build_tiny_siglip2_fixres", "corpus", "sentencepiece_model", "tiny_checkpoints",
]
