"""Constants of the answerer zoo (members, sizes, the training mix) and its error; no torch."""

from __future__ import annotations

from pathlib import Path

from tempcore.errors import TempcoreError

FORMAT = "tempcore-zoo-answerer/1"
ZOO_DIR = Path(__file__).parent.parent / "zoo"
ANSWERER_DIR = ZOO_DIR / "answerers"

MEMBERS: dict[str, str] = {
    "zoo-text": "text",
    "zoo-mean": "mean",
    "zoo-max": "max",
    "zoo-attn": "attn",
    "zoo-order": "order",
}
"""Member name -> architecture kind (see the module docstring)."""

KINDS = ("text", "mean", "max", "attn", "order")
IMAGE_SIDE = 32
DIM = 64
BIGRAM_BUCKETS = 256
GREY = 128
TRAIN_SEED_BASE = 1_000_003
"""Training worlds use ``TRAIN_SEED_BASE + seed``: disjoint from the small seeds demo worlds use."""

PICKS: dict[str, float] = {
    "uniform": 0.2,
    "random": 0.15,
    "dense": 0.15,
    "mixed": 0.2,
    "outside": 0.15,
    "grey": 0.15,
}
"""Frame picks of the training mix and their probabilities."""

K_CHOICES = (1, 4, 8, 8, 8, 16)
"""Frames per training batch, drawn per batch (8, the demo's K, most often)."""

REORDER_P = 0.3
"""Share of training draws whose frames are shown out of order (reversed or shuffled; the answer of
an order question follows the shown order: :class:`~tempcore.world.answerers.sampling.ExampleSampler`).
The pooling members cannot tell; ``zoo-order`` learns that the sequence of its frames is their time
order, and that the other families' answers do not depend on it."""

TEMPLATES = ("default", "default", "default", "letter_only", "lmms_eval")
"""Prompt templates of the training mix (drawn per example); timestamps are shown half of the time."""


class ZooError(TempcoreError):
    """A zoo answerer cannot be built, loaded or trained (names the file or member and the reason)."""
