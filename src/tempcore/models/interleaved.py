"""Requests whose text and images interleave (:class:`InterleavedRequest`) and their formatting for
the backends that consume them: chat-template content for transformers (:func:`hf_content`) and
OpenAI chat ``content`` parts (:func:`openai_parts`). A plain request is images, then the prompt."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tempcore.models.base import ModelRequest


@dataclass(frozen=True)
class InterleavedRequest(ModelRequest):
    """A request whose text and images interleave: ``layout`` holds ``str`` pieces and ``int`` image
    positions (each image exactly once, in order)."""

    layout: tuple[str | int, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        merged: list[str | int] = []
        for x in self.layout:  # adjacent text pieces become one
            if isinstance(x, str) and merged and isinstance(merged[-1], str):
                merged[-1] += x
            elif x != "":
                merged.append(x)
        object.__setattr__(self, "layout", tuple(merged))
        positions = [x for x in self.layout if not isinstance(x, str)]
        if positions != list(range(len(self.images))):
            raise ValueError(
                f"request {self.key!r}: the layout must name images 0..{len(self.images) - 1} once each, in order"
            )


def hf_content(request: ModelRequest) -> list[dict[str, Any]]:
    """Chat-template content of a user turn: the layout's pieces, or images then the prompt."""
    layout = getattr(request, "layout", None)
    if not layout:
        return [*({"type": "image"} for _ in request.images), {"type": "text", "text": request.prompt}]
    return [{"type": "text", "text": x} if isinstance(x, str) else {"type": "image"} for x in layout if x != ""]


def openai_parts(request: ModelRequest, image_url: Callable[[np.ndarray], str]) -> list[dict[str, Any]]:
    """OpenAI chat ``content`` parts of a request (``image_url(image)`` gives a ``data:`` URL)."""
    layout = getattr(request, "layout", None)
    if not layout:
        layout = (*range(len(request.images)), request.prompt)
    return [
        {"type": "text", "text": x} if isinstance(x, str) else {"type": "image_url", "image_url": {"url": image_url(request.images[x])}}
        for x in layout if x != ""
    ]


__all__ = ["InterleavedRequest", "hf_content", "openai_parts"]
