"""Frame encodings shared by the adapters that send images as data (vLLM offline, HTTP)."""

from __future__ import annotations

import base64
import io

import numpy as np


def to_pil(image: np.ndarray, max_side: int | None = None):  # type: ignore[no-untyped-def]
    """A PIL RGB image of an ``(H, W, 3)`` uint8 array, downscaled (bicubic, aspect kept) so that
    its longer side is at most ``max_side``."""
    from PIL import Image

    pil = Image.fromarray(np.ascontiguousarray(image), mode="RGB")
    if max_side is not None and max(pil.size) > max_side:
        scale = max_side / max(pil.size)
        size = (max(1, round(pil.size[0] * scale)), max(1, round(pil.size[1] * scale)))
        pil = pil.resize(size, Image.Resampling.BICUBIC)
    return pil


def to_data_url(
    image: np.ndarray, *, fmt: str = "png", max_side: int | None = None, quality: int = 90
) -> str:
    """``data:image/<fmt>;base64,...`` of a frame (PNG is lossless; JPEG is smaller)."""
    fmt = fmt.lower()
    if fmt not in ("png", "jpeg"):
        raise ValueError(f"image format must be png or jpeg, not {fmt!r}")
    buffer = io.BytesIO()
    pil = to_pil(image, max_side)
    if fmt == "jpeg":
        pil.save(buffer, format="JPEG", quality=quality)
    else:
        pil.save(buffer, format="PNG")
    return f"data:image/{fmt};base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"


__all__ = ["to_data_url", "to_pil"]
