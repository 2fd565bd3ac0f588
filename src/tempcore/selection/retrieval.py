"""``retrieval``: the frames inside the frame-level retrieval window of the scores (issue 15).

The strategy side of the ExtremeWhenBench retrieval baseline (:mod:`tempcore.run.baseline`
documents the condition, its parameters and what a grounding sample gets instead).

Variants (``variant`` of the condition, part of its key so two presets are two conditions; explicit
parameters override the preset's values):

* ``paper`` (also no variant): the paper's configuration, β = 0.7 of the peak, length clipped to
  [4, 60] s, and a 5-frame moving average (the paper leaves smoothing open);
* ``fine``: for events shorter than the paper's 4 s minimum at the decoding rate: no smoothing,
  no minimum length, β measured from the track's minimum (``floor="min"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tempcore.grounding.retrieval import DEFAULTS, track_window
from tempcore.records import FrameSet
from tempcore.selection._common import Frames, SelectionError, strategy
from tempcore.selection.basic import uniform_positions

PARAMS: dict[str, Any] = DEFAULTS
"""The window parameters and their defaults (the paper's configuration; one definition, in
:data:`tempcore.grounding.retrieval.DEFAULTS`)."""
VARIANTS: dict[str, dict[str, Any]] = {
    "paper": {},
    "fine": {"smooth_frames": 1, "min_len": 0.0, "floor": "min"},
}


def resolve_params(variant: str | None = None, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every window parameter: the defaults, then the variant's preset, then ``params``."""
    if variant is not None and variant not in VARIANTS:
        raise SelectionError(f"retrieval: unknown variant {variant!r} (known: {', '.join(VARIANTS)})")
    unknown = sorted(set(params or {}) - set(PARAMS))
    if unknown:
        raise SelectionError(f"retrieval takes no parameter(s) {unknown} (it takes: {', '.join(PARAMS)})")
    return {**PARAMS, **VARIANTS.get(variant or "paper", {}), **(params or {})}


@strategy("retrieval", needs_scores=True)
def retrieval(frames: Frames, *, variant: str | None = None, **params: Any) -> FrameSet:
    """K frames at equal intervals (``uniform`` centres) among the frames inside the retrieval
    window of the scores (:func:`tempcore.grounding.retrieval.track_window`); when the window holds
    fewer than K frames, the K frames nearest its centre (so K frames whenever the video has them),
    in time order. Parameters: :data:`PARAMS`, presets: :data:`VARIANTS`."""

    assert frames.s is not None
    p = resolve_params(variant, params)
    start, end = track_window(frames.t, frames.s, beta=float(p["beta"]), smooth_frames=int(p["smooth_frames"]),
                              min_len=float(p["min_len"]), max_len=float(p["max_len"]), floor=str(p["floor"]))
    inside = np.flatnonzero((frames.t >= start - 1e-9) & (frames.t < end - 1e-9))
    if inside.size >= frames.k:
        return frames.frameset(inside[uniform_positions(int(inside.size), frames.k)])
    # fewer than K frames in the window: the K frames nearest its centre (ties: the earlier frame)
    nearest = np.argsort(np.abs(frames.t - (start + end) / 2), kind="stable")[: frames.k]
    return frames.frameset(np.sort(nearest))
