"""The frame-text encoder interface (E_V and E_T of the paper's Eq. 1) and its named errors.

An encoder maps video frames and texts into one embedding space. Everything downstream (the
embedding cache, Eq. 1 scores, frame selection) needs only this small protocol, so any
dual encoder can be plugged in; :mod:`tempcore.encoders.hf` implements it for SigLIP,
SigLIP2 and CLIP checkpoints of ``transformers``.

Importing this module never imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from tempcore.errors import TempcoreError


class EncoderError(TempcoreError):
    """An encoder could not encode its input (names the encoder and the reason)."""


class EncoderLoadError(EncoderError):
    """A checkpoint could not be loaded as a frame-text encoder (names the checkpoint and the reason)."""


class UnsupportedEncoderError(EncoderLoadError):
    """The checkpoint's architecture is not one the adapters support."""


@dataclass(frozen=True)
class TextEncoding:
    """Text embeddings plus what the tokenizer did to each text.

    embeddings:   (N, D) float32, each row L2-normalised.
    truncated:    (N,) bool: the text had more tokens than ``max_length`` and was cut by the tokenizer.
    token_counts: (N,) int64: tokens of each text *before* truncation, special tokens included.
    max_length:   the encoder's text limit in tokens (special tokens included).
    """

    embeddings: np.ndarray
    truncated: np.ndarray
    token_counts: np.ndarray
    max_length: int

    def __post_init__(self) -> None:
        n = self.embeddings.shape[0]
        if self.embeddings.ndim != 2 or self.truncated.shape != (n,) or self.token_counts.shape != (n,):
            raise ValueError(
                f"TextEncoding: shapes disagree: embeddings {self.embeddings.shape}, "
                f"truncated {self.truncated.shape}, token_counts {self.token_counts.shape}"
            )

    def __len__(self) -> int:
        return int(self.embeddings.shape[0])


@runtime_checkable
class FrameTextEncoder(Protocol):
    """A dual image-text encoder.

    name:        human-readable id (hub id, alias or folder), written into score files.
    fingerprint: stable hex id of everything that determines the image embeddings: the weights
                 (revision / file identity), the image preprocessing and the compute dtype. The
                 embedding cache keys entries by it, so two encoders with the same fingerprint must
                 produce the same image embeddings.
    encode_images(frames): frames (N, H, W, 3) uint8 RGB -> (N, D) float32, rows L2-normalised;
                 batches internally, so N may be large.
    encode_texts(texts): -> :class:`TextEncoding` (embeddings L2-normalised, truncation recorded).
    """

    name: str
    fingerprint: str

    def encode_images(self, frames: np.ndarray) -> np.ndarray: ...

    def encode_texts(self, texts: Sequence[str]) -> TextEncoding: ...


@runtime_checkable
class SupportsPreparedImages(Protocol):
    """Optional split of ``encode_images`` into CPU preprocessing and the model forward pass.

    ``encode_images(frames) == encode_prepared(prepare_images(frames))``. When an encoder offers
    it, :func:`tempcore.run.frame_scoring.frame_embeddings` preprocesses the next batch in a background
    thread while the model runs on the current one.
    """

    def prepare_images(self, frames: np.ndarray) -> Any: ...

    def encode_prepared(self, prepared: Any) -> np.ndarray: ...


def check_frames(frames: np.ndarray, encoder: str) -> np.ndarray:
    """Validate a frame batch: (N, H, W, 3) uint8. Returns it as a C-contiguous array."""
    arr = np.asarray(frames)
    if arr.ndim != 4 or arr.shape[-1] != 3:
        raise EncoderError(f"encoder {encoder}: frames must have shape (N, H, W, 3), got {arr.shape}")
    if arr.dtype != np.uint8:
        raise EncoderError(f"encoder {encoder}: frames must be uint8 RGB, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr)


def l2_normalise(x: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm (float32). A zero row is an error: it has no direction."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    if np.any(norms == 0) or not np.all(np.isfinite(norms)):
        raise EncoderError("an embedding has zero or non-finite norm")
    unit: np.ndarray = x / norms
    return unit


__all__ = [
    "EncoderError",
    "EncoderLoadError",
    "FrameTextEncoder",
    "SupportsPreparedImages",
    "TextEncoding",
    "UnsupportedEncoderError",
    "check_frames",
    "l2_normalise",
]
