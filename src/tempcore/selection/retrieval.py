"""``retrieval``: the frames inside the frame-level retrieval window of the scores (issue 15).

The strategy side of the ExtremeWhenBench retrieval baseline (:mod:`tempcore.grounding.baseline`
documents the condition, its parameters and what a grounding sample gets instead).
"""

from __future__ import annotations

import numpy as np

from tempcore.records import FrameSet
from tempcore.selection._common import Frames, strategy

DEFAULT_BETA = 0.7
DEFAULT_SMOOTH_FRAMES = 5
DEFAULT_MIN_LEN = 4.0
DEFAULT_MAX_LEN = 60.0
DEFAULT_FLOOR = "zero"


@strategy("retrieval", needs_scores=True)
def retrieval(
    frames: Frames,
    *,
    beta: float = DEFAULT_BETA,
    smooth_frames: int = DEFAULT_SMOOTH_FRAMES,
    min_len: float = DEFAULT_MIN_LEN,
    max_len: float = DEFAULT_MAX_LEN,
    floor: str = DEFAULT_FLOOR,
) -> FrameSet:
    """K frames at equal intervals (``uniform`` centres) among the frames inside the retrieval
    window of the scores (:func:`tempcore.grounding.baseline.track_window`); when the window holds
    fewer than K frames, the K frames nearest its centre (so K frames whenever the video has them),
    in time order."""
    from tempcore.grounding.baseline import track_window
    from tempcore.selection.basic import uniform_positions

    assert frames.s is not None
    start, end = track_window(frames.t, frames.s, beta=beta, smooth_frames=smooth_frames, min_len=min_len,
                              max_len=max_len, floor=floor)
    inside = np.flatnonzero((frames.t >= start - 1e-9) & (frames.t < end - 1e-9))
    if inside.size >= frames.k:
        return frames.frameset(inside[uniform_positions(int(inside.size), frames.k)])
    # fewer than K frames in the window: the K frames nearest its centre (ties: the earlier frame)
    nearest = np.argsort(np.abs(frames.t - (start + end) / 2), kind="stable")[: frames.k]
    return frames.frameset(np.sort(nearest))
