"""The zoo's networks: frames and frame ranks as tensors, the frame encoder CNN, the answerer heads."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tempcore.world.answerers.constants import DIM, IMAGE_SIDE, KINDS, ZooError


def frames_tensor(images: Sequence[np.ndarray], side: int = IMAGE_SIDE) -> torch.Tensor:
    """``(N, 3, side, side)`` float32 of uint8 RGB images of any sizes (bilinear, antialiased), in [-2, 2]."""
    groups: list[list[np.ndarray]] = []
    for image in images:  # consecutive images of one size are resized together
        if groups and groups[-1][0].shape == image.shape:
            groups[-1].append(image)
        else:
            groups.append([image])
    out = []
    for group in groups:
        x = torch.from_numpy(np.ascontiguousarray(np.stack(group))).permute(0, 3, 1, 2).float()
        if x.shape[-2:] != (side, side):
            x = F.interpolate(x, size=(side, side), mode="bilinear", antialias=True, align_corners=False)
        out.append(x)
    return (torch.cat(out) / 255.0 - 0.5) * 4.0


def rank_features(k: int) -> torch.Tensor:
    """``(k, 8)`` sinusoidal features of each frame's rank fraction ``r / (k - 1)`` (0 for k = 1)."""
    pos = torch.arange(k, dtype=torch.float32) / max(k - 1, 1)
    freqs = torch.tensor([1.0, 2.0, 4.0, 8.0])
    angles = math.pi * pos[:, None] * freqs[None, :]
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)





def _conv(c_in: int, c_out: int, kernel: int, stride: int, padding: int) -> list[nn.Module]:
    return [nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=padding, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]


class FrameEncoder(nn.Module):
    """A small CNN that reads a 32 x 32 frame quadrant by quadrant: which colour and which shape (or
    nothing) each quadrant shows.

    The world puts at most one object in each quadrant, so this is a tiny object detector. It is trained
    first, on its own (cross-entropy per quadrant), then frozen and shared by every frame member, as real
    VLMs share a pretrained vision tower. Its output per frame (``out_dim`` = 96 for the world's 9 colours
    and 4 shapes): the colour probabilities of each quadrant (4 x 10, "empty" first), the shape
    probabilities (4 x 5), and the presence of every colour-shape pair, ``max_q p(colour c at q) *
    p(shape s at q)`` (9 x 4).
    """

    def __init__(self, n_colours: int, n_shapes: int) -> None:
        super().__init__()
        self.n_colours = n_colours
        self.n_shapes = n_shapes
        self.conv = nn.Sequential(
            *_conv(3, 24, 4, 2, 1),  # 16 x 16
            *_conv(24, 32, 3, 2, 1),  # 8 x 8
            *_conv(32, 48, 3, 1, 1),
            *_conv(48, 64, 4, 4, 0),  # 2 x 2: one cell per quadrant
        )
        self.colour = nn.Conv2d(64, n_colours + 1, 1)
        self.shape = nn.Conv2d(64, n_shapes + 1, 1)
        self.out_dim = 4 * (n_colours + 1) + 4 * (n_shapes + 1) + n_colours * n_shapes

    def logits(self, frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Colour and shape logits per quadrant: ``(N, 4, n_colours + 1)``, ``(N, 4, n_shapes + 1)``."""
        h = self.conv(frames)
        return self.colour(h).flatten(2).transpose(1, 2), self.shape(h).flatten(2).transpose(1, 2)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        colour, shape = self.logits(frames)
        p_colour, p_shape = colour.softmax(-1), shape.softmax(-1)
        pairs = (p_colour[:, :, 1:, None] * p_shape[:, :, None, 1:]).amax(dim=1).flatten(1)
        return torch.cat([p_colour.flatten(1), p_shape.flatten(1), pairs], dim=1)


class AnswererNet(nn.Module):
    """One zoo member: scores per option from (frames, question, options). See the module docstring.

    Frame members own a copy of the (frozen) :class:`FrameEncoder`; ``forward`` takes either the
    frames or their precomputed encoder features (training uses a feature bank).
    """

    def __init__(self, kind: str, n_tokens: int, n_colours: int, n_shapes: int, dim: int = DIM) -> None:
        super().__init__()
        if kind not in KINDS:
            raise ZooError(f"unknown answerer kind {kind!r} (known: {', '.join(KINDS)})")
        self.kind = kind
        self.dim = dim
        self.n_colours = n_colours
        self.n_shapes = n_shapes
        self.text = nn.EmbeddingBag(n_tokens, dim, mode="mean")
        self.text_norm = nn.LayerNorm(dim)
        if kind != "text":
            self.encoder = FrameEncoder(n_colours, n_shapes)
            self.frame_in = nn.Linear(self.encoder.out_dim, dim)
            self.condition = nn.Sequential(nn.Linear(3 * dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim), nn.ReLU())
        if kind == "attn":
            self.query = nn.Linear(2 * dim, dim)
            self.key = nn.Linear(dim, dim)
        if kind == "order":
            self.rank = nn.Linear(8, dim)
            self.mix = nn.TransformerEncoderLayer(
                dim, nhead=4, dim_feedforward=2 * dim, dropout=0.0, batch_first=True
            )
        n_in = 3 * dim if kind == "text" else 5 * dim
        self.scorer = nn.Sequential(
            nn.Linear(n_in, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim), nn.ReLU(), nn.Linear(dim, 1)
        )

    def encode_text(self, flat: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        encoded: torch.Tensor = self.text_norm(self.text(flat, offsets))
        return encoded

    def train(self, mode: bool = True) -> AnswererNet:
        """Train mode for the head; the frozen frame encoder always stays in eval mode."""
        super().train(mode)
        if self.kind != "text":
            self.encoder.eval()
        return self

    def head_parameters(self) -> list[nn.Parameter]:
        """Everything but the frame encoder (what member training updates)."""
        return [p for name, p in self.named_parameters() if not name.startswith("encoder.")]

    def forward(
        self,
        frames: torch.Tensor | None,
        q_ids: tuple[torch.Tensor, torch.Tensor],
        o_ids: tuple[torch.Tensor, torch.Tensor],
        n_options: int,
        *,
        features: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Scores ``(B, n_options)``; ``frames`` is ``(B, K, 3, 32, 32)`` or ``features`` is
        ``(B, K, encoder.out_dim)`` (both ignored by ``text``)."""
        q = self.encode_text(*q_ids)
        b, d = q.shape
        o = self.encode_text(*o_ids).view(b, n_options, d)
        qe = q[:, None, :].expand(b, n_options, d)
        if self.kind == "text":
            text_scores: torch.Tensor = self.scorer(torch.cat([qe, o, qe * o], dim=-1)).squeeze(-1)
            return text_scores
        if features is None:
            if frames is None:
                raise ZooError(f"answerer kind {self.kind!r} needs frames")
            features = self.encoder(frames.flatten(0, 1)).view(b, frames.shape[1], -1)
        k = features.shape[1]
        f = self.frame_in(features)
        qk = q[:, None, :].expand(b, k, d)
        g = self.condition(torch.cat([f, qk, f * qk], dim=-1))
        if self.kind == "mean":
            h = g.mean(dim=1)[:, None, :].expand(b, n_options, d)
        elif self.kind == "max":
            h = g.amax(dim=1)[:, None, :].expand(b, n_options, d)
        elif self.kind == "order":
            mixed = self.mix(g + self.rank(rank_features(k).to(g.device))[None])
            h = mixed.mean(dim=1)[:, None, :].expand(b, n_options, d)
        else:  # attn: one attention over frames per option
            query = self.query(torch.cat([qe, o], dim=-1))
            weights = torch.softmax(query @ self.key(g).transpose(1, 2) / math.sqrt(d), dim=-1)
            h = weights @ g
        scores: torch.Tensor = self.scorer(torch.cat([h, qe, o, h * o, qe * o], dim=-1)).squeeze(-1)
        return scores
