"""TVBench's time ablations: the frames of a base strategy, shown shuffled or in reverse.

The base strategy is named by ``variant`` (default ``uniform``), optionally with its own
variant after a colon: ``"maxprob"``, ``"uniform:linspace"``. The base must yield one frame
list (not ``oracle``, ``noframe``, ``textonly``, ``shuffled`` or ``reversed``); its other parameters are
passed through (e.g. ``alpha`` for ``bolt``).

``start`` / ``end`` (seconds) crop the candidate frames to the sample's segment *before* the base
strategy runs (TVBench shuffles / reverses after cropping to the bound of Action Sequence and
Action Localization). ``tempcore run`` already decodes only the segment of a bounded sample, so
there the candidates are the segment's frames without these parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tempcore.records import FrameSet
from tempcore.selection._common import SelectionError, derive_seed, prepare, random_keys

_NOT_A_BASE = ("oracle", "noframe", "textonly", "shuffled", "reversed")


def _base_frames(
    strategy: str,
    timestamps: np.ndarray,
    scores: np.ndarray | None,
    k: int,
    seed: int,
    sample_id: str,
    variant: str | None,
    params: dict[str, Any],
) -> FrameSet:
    from tempcore.selection.registry import call_strategy

    base, _, base_variant = (variant or "uniform").partition(":")
    if base in _NOT_A_BASE:
        raise SelectionError(
            f"sample {sample_id!r}: {strategy}: base strategy {base!r} cannot be {strategy} "
            f"(not one frame list)"
        )
    start, end = params.pop("start", None), params.pop("end", None)
    index_map = None
    if start is not None or end is not None:
        frames = prepare(timestamps, scores, k, strategy=strategy, sample_id=sample_id, needs_scores=False)
        frames = frames.crop(start, end)
        timestamps, scores = frames.t, frames.s
        index_map = frames.indices(np.arange(frames.n))
    result = call_strategy(base, timestamps, scores, k, seed=seed, sample_id=sample_id,
                           variant=base_variant or None, **params)
    assert isinstance(result, FrameSet)
    if index_map is not None:
        result = FrameSet(tuple(int(index_map[i]) for i in result.indices), result.timestamps,
                          requested=result.requested, grey=result.grey)
    return result


def _reorder(frames: FrameSet, order: Callable[[int], np.ndarray]) -> FrameSet:
    perm = order(len(frames)).tolist()
    return FrameSet(
        tuple(frames.indices[i] for i in perm),
        tuple(frames.timestamps[i] for i in perm),
        requested=frames.requested,
        grey=frames.grey,
    )


def shuffled(
    timestamps: np.ndarray,
    scores: np.ndarray | None,
    k: int,
    *,
    seed: int = 0,
    sample_id: str = "",
    variant: str | None = None,
    **params: Any,
) -> FrameSet:
    """The base strategy's frames in a random order, seeded with ``derive_seed(seed, sample_id, "shuffled")``.

    The order is the argsort of one raw 64-bit PCG64 key per frame: a uniformly random
    permutation, which may (with probability 1/K!) be the chronological one; it is not
    forced to differ.
    """
    base = _base_frames("shuffled", timestamps, scores, k, seed, sample_id, variant, params)
    key = derive_seed(seed, sample_id, "shuffled")
    return _reorder(base, lambda n: np.argsort(random_keys(key, n), kind="stable"))


def reversed(
    timestamps: np.ndarray,
    scores: np.ndarray | None,
    k: int,
    *,
    seed: int = 0,
    sample_id: str = "",
    variant: str | None = None,
    **params: Any,
) -> FrameSet:
    """The base strategy's frames in reverse chronological order (latest first)."""
    base = _base_frames("reversed", timestamps, scores, k, seed, sample_id, variant, params)
    return _reorder(base, lambda n: np.arange(n - 1, -1, -1))
