"""Tiny random-weight VLM checkpoints of each supported architecture and a tiny text LM for tests:
the package's own builders (:mod:`tempcore.models.tiny`, behind ``tempcore tiny-checkpoints``), under
the names the tests use. Tests load them exactly as a user's hub checkpoint is loaded
(``ModelSpec(backend="hf", model=str(folder))``).
"""

from __future__ import annotations

from tempcore.models.tiny import (
    CHATML_TEMPLATE,
    IDEFICS3_TEMPLATE,
    LLAVA_OV_TEMPLATE,
    QWEN_TEMPLATE,
    TEXT,
    build_idefics3,
    build_llava_onevision,
    build_qwen_vl,
    build_tiny_text_lm,
    build_tiny_vlm,
    fast_tokenizer,
    qwen_tokenizer,
)
from tempcore.models.tiny import (
    VLM_CORPUS as CORPUS,
)
from tempcore.models.tiny import (
    VLM_FAMILIES as FAMILIES,
)

__all__ = [
    "CHATML_TEMPLATE", "CORPUS", "FAMILIES", "IDEFICS3_TEMPLATE", "LLAVA_OV_TEMPLATE", "QWEN_TEMPLATE", "TEXT",
    "build_idefics3", "build_llava_onevision", "build_qwen_vl", "build_tiny_text_lm", "build_tiny_vlm",
    "fast_tokenizer", "qwen_tokenizer",
]
