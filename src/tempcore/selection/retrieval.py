"""``retrieval``: the frames inside the frame-level retrieval window of the scores (issue 15).

The strategy side of the ExtremeWhenBench retrieval baseline (:mod:`tempcore.run.baseline`
documents the condition, its parameters and what a grounding sample gets instead).

Variants (``variant`` of the condition, part of its key so two presets are two conditions; explicit
parameters override the preset's values):

* ``paper`` (also no variant): the paper's configuration, on the paper's score, the raw cosine
  (``score="cosine"``): β = 0.7 of the peak, length clipped to [4, 60] s, and a 5-frame moving
  average (the paper leaves smoothing open);
* ``fine``: for events shorter than the paper's 4 s minimum at the decoding rate: no smoothing,
  no minimum length, β measured from the track's minimum (``floor="min"``); on the raw cosine;
* ``paper_sigmoid``: the paper's rule run on TempCore's Eq. 1 scores ``sigmoid(cos)``
  (``score="sigmoid"``) instead of the cosine, as ``paper`` ran before the fix of issue 32: there
  ``0.7 * peak`` lies below almost every frame and the window is clipped to 60 s. Kept to compare.

``score`` names which of a frame's scores the track is (:data:`tempcore.grounding.retrieval.SCORES`):
the run hands this strategy, and the baseline's grounding answers, the mode's cosine or its Eq. 1
scores accordingly (:func:`tempcore.run.planning.Timeline.track`); called directly, the strategy
uses the track it is given.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tempcore.grounding.retrieval import DEFAULTS, SCORES, track_window
from tempcore.records import FrameSet
from tempcore.selection._common import Frames, SelectionError, strategy
from tempcore.selection.basic import uniform_positions

PARAMS: dict[str, Any] = DEFAULTS
"""The window parameters and their defaults (the paper's configuration; one definition, in
:data:`tempcore.grounding.retrieval.DEFAULTS`)."""
VARIANTS: dict[str, dict[str, Any]] = {
    "paper": {},
    "fine": {"smooth_frames": 1, "min_len": 0.0, "floor": "min"},
    "paper_sigmoid": {"score": "sigmoid"},
}


def resolve_params(variant: str | None = None, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every window parameter: the defaults, then the variant's preset, then ``params``."""
    if variant is not None and variant not in VARIANTS:
        raise SelectionError(f"retrieval: unknown variant {variant!r} (known: {', '.join(VARIANTS)})")
    unknown = sorted(set(params or {}) - set(PARAMS))
    if unknown:
        raise SelectionError(f"retrieval takes no parameter(s) {unknown} (it takes: {', '.join(PARAMS)})")
    p = {**PARAMS, **VARIANTS.get(variant or "paper", {}), **(params or {})}
    if p["score"] not in SCORES:
        raise SelectionError(f"retrieval: score must be one of {', '.join(SCORES)}, not {p['score']!r}")
    return p


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
