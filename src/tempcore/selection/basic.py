"""Strategies that ignore the scores: uniform, random, single, noframe, textonly.

Uniform's spacing is by frame *position* among the decoded frames (in time order). The
frames are decoded at a constant target rate (10 FPS in the paper), so equal steps in
position are equal steps in time up to the decoder's timestamps.
"""

from __future__ import annotations

import numpy as np

from tempcore.records import FrameSet
from tempcore.selection._common import (
    Frames,
    SelectionError,
    check_k,
    derive_seed,
    random_keys,
    strategy,
    top_r,
)

UNIFORM_VARIANTS = ("centres", "linspace", "linspace_round", "tvbench")


def uniform_positions(n: int, k: int, variant: str | None = None) -> np.ndarray:
    """The positions ``uniform`` picks among ``n`` frames (all of them when ``k >= n``).

    - ``centres`` (default, also ``None``): the centre of each of K equal segments,
      ``floor((i + 1/2) * n / K)`` for ``i = 0..K-1``, computed in exact integer arithmetic.
      Never the first or last frame unless K is close to n; symmetric about the middle.
    - ``linspace``: lmms-eval's rule, ``np.linspace(0, n - 1, K, dtype=int)`` — inclusive of the
      first and last frame, positions *truncated* toward zero (not rounded). This is the exact
      expression in lmms-eval's ``read_video_pyav`` and LLaVA-NeXT's video loaders.
    - ``linspace_round``: qwen-vl-utils' rule, ``linspace(0, n - 1, K)`` rounded half to even
      (``torch.round``); here in float64.
    - ``tvbench``: TVBench's (and MVBench's) release, ``get_index``: segment midpoints
      ``int(seg / 2 + round(seg * i))`` with ``seg = (n - 1) / K`` over the frames inside the bound
      (16 frames in its release; ``round`` half to even, as ``np.round``). Applied to the positions of
      the candidate frames (``tempcore run`` decodes at its fps inside the sample's ``[start, end]``),
      not to the native frame numbers the release indexes.

    For K < n all three give K distinct positions (consecutive points are more than one frame apart).
    """
    if k >= n:
        return np.arange(n)
    if variant in (None, "centres"):
        return ((2 * np.arange(k, dtype=np.int64) + 1) * n) // (2 * k)
    if variant == "linspace":
        return np.linspace(0, n - 1, k, dtype=int)
    if variant == "linspace_round":
        return np.rint(np.linspace(0, n - 1, k)).astype(np.int64)
    if variant == "tvbench":
        seg = (n - 1) / k
        return np.array([int(seg / 2 + np.round(seg * i)) for i in range(k)], dtype=np.int64)
    raise SelectionError(f"uniform: unknown variant {variant!r} (known: {', '.join(UNIFORM_VARIANTS)})")


@strategy("uniform", needs_scores=False)
def uniform(frames: Frames, *, variant: str | None = None, start: float | None = None,
            end: float | None = None) -> FrameSet:
    """K frames at equal intervals over the video (see :func:`uniform_positions` for the variants).

    Example, 10 frames, K=4: centres -> [1, 3, 6, 8] (``floor(1.25), floor(3.75), ...``);
    linspace -> [0, 3, 6, 9]; tvbench -> [1, 3, 5, 8]. ``scores`` and ``seed`` are ignored.
    ``start`` / ``end`` (seconds): only the frames inside that segment are candidates.
    """
    frames = frames.crop(start, end)
    return frames.frameset(uniform_positions(frames.n, frames.k, variant))


@strategy("random", needs_scores=False)
def random(frames: Frames, *, seed: int, sample_id: str) -> FrameSet:
    """K distinct frames drawn uniformly at random, shown chronologically.

    The draw is seeded with ``derive_seed(seed, sample_id)``, so a rerun gives the same frames
    and different samples get independent draws. Method: one raw 64-bit PCG64 key per frame;
    the K frames with the smallest keys (a uniformly random K-subset; exact ties, which have
    probability about L^2 / 2^65, go to the earlier frame).
    """
    if frames.k >= frames.n:
        return frames.frameset(np.arange(frames.n))
    keys = random_keys(derive_seed(seed, sample_id), frames.n)
    return frames.frameset(top_r(~keys, frames.k))


@strategy("single", needs_scores=False)
def single(frames: Frames, *, seed: int, sample_id: str, start: float | None = None,
           end: float | None = None) -> FrameSet:
    """One frame drawn uniformly at random (TVBench's single-random-frame ablation).

    Seeded with ``derive_seed(seed, sample_id, "single")``. The condition's K is checked but
    not used: the model is shown one frame by definition, so ``requested`` is 1 (no shortfall).
    ``start`` / ``end`` (seconds): the frame is drawn inside that segment (TVBench's bound).
    """
    frames = frames.crop(start, end)
    key = random_keys(derive_seed(seed, sample_id, "single"), 1)[0]
    return frames.frameset(np.array([int(key) % frames.n]), requested=1)


def noframe(
    timestamps: np.ndarray | None,
    scores: np.ndarray | None,
    k: int,
    *,
    seed: int = 0,
    sample_id: str = "",
) -> FrameSet:
    """No video content: K uniform grey images (the paper's no-frame baseline, LIS).

    Returns ``FrameSet((), (), requested=k, grey=True)``; the model adapter renders ``requested``
    grey images at its own input resolution. Timestamps and scores are ignored (they may be
    empty or ``None``), so the no-frame condition runs even for a video that failed to decode.
    """
    kk = check_k(k, where=f"sample {sample_id!r}: noframe")
    return FrameSet((), (), requested=kk, grey=True)


def textonly(
    timestamps: np.ndarray | None,
    scores: np.ndarray | None,
    k: int,
    *,
    seed: int = 0,
    sample_id: str = "",
) -> FrameSet:
    """No image at all: the model gets the question and options only (TVBench's text-only condition).

    Distinct from :func:`noframe`, which shows K grey images: here the request carries zero images,
    so a VLM's chat turn has no image entry and an HTTP request no image part. Returns
    ``FrameSet((), (), requested=0)`` (no shortfall); the condition's K is checked but not used.
    Timestamps and scores are ignored (they may be empty or ``None``), so it runs for a video that
    is missing or failed to decode.
    """
    check_k(k, where=f"sample {sample_id!r}: textonly")
    return FrameSet((), (), requested=0)
