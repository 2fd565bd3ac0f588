"""``retrieve_ground`` and ``gtcrop``: K frames from spans of the video (issue 15).

The selection side of the two grounding crop conditions; :mod:`tempcore.grounding.crops`
documents the spans (the union of the top-K candidate windows of the scores; a window of width W
centred on the ground truth), the shown timeline and every choice. In ``tempcore run`` the planner
shows them to grounding samples only and carries the spans on the work item, so the prompt states
the shown timeline and the answer maps back to video time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tempcore.diagnostics.grounding import GroundingError
from tempcore.grounding.crops import CANDIDATE_PARAMS, candidate_spans, gt_crop_span, top_k_of, width_of
from tempcore.records import FrameSet
from tempcore.selection._common import Frames, SelectionError, strategy
from tempcore.selection.basic import uniform_positions


def _frames(frames: Frames, spans: tuple[tuple[float, float], ...]) -> FrameSet:
    return frames.frameset(frames_in_spans(frames.t, spans, frames.k))


def frames_in_spans(timestamps: Any, spans: Sequence[tuple[float, float]], k: int) -> np.ndarray:
    """Positions (into ``timestamps``) of K frames at equal intervals among the frames inside the
    spans (``start <= t < end``), in time order; all of them when fewer than K are inside."""
    t = np.asarray(timestamps, dtype=np.float64)
    inside = np.zeros(t.shape, dtype=bool)
    for a, b in spans:
        inside |= (t >= a - 1e-9) & (t < b - 1e-9)
    pos = np.flatnonzero(inside)
    pos = pos[np.argsort(t[pos], kind="stable")]
    if pos.size <= k:
        return pos
    out: np.ndarray = pos[uniform_positions(int(pos.size), k)]
    return out



@strategy("retrieve_ground", needs_scores=True)
def retrieve_ground(frames: Frames, *, variant: str | None = None, **params: Any) -> FrameSet:
    """K frames at equal intervals among the frames inside the union of the top-K candidate
    windows of the scores (``variant`` ``top<K>``, default ``top3``; parameters ``nms_s``,
    ``pad_s``, ``smooth_frames``: :data:`tempcore.grounding.crops.CANDIDATE_PARAMS`)."""

    assert frames.s is not None
    unknown = sorted(set(params) - set(CANDIDATE_PARAMS))
    if unknown:
        raise SelectionError(f"takes no parameter(s) {unknown} (it takes: {', '.join(CANDIDATE_PARAMS)})")
    p = {**CANDIDATE_PARAMS, **params}
    try:
        spans = candidate_spans(frames.t, frames.s, k=top_k_of(variant), nms_s=float(p["nms_s"]),
                                pad_s=float(p["pad_s"]), smooth_frames=int(p["smooth_frames"]))
    except GroundingError as exc:
        raise SelectionError(str(exc)) from None
    return _frames(frames, spans)


@strategy("gtcrop", needs_scores=False)
def gtcrop(
    frames: Frames,
    *,
    variant: str | None = None,
    windows: Sequence[tuple[float, float]] = (),
    video: tuple[float, float] | None = None,
    fit: str = "shift",
) -> FrameSet:
    """K frames at equal intervals inside the window of width ``variant`` (``30s``, ``600s``, ...,
    ``full``) centred on the hull of the ground-truth ``windows``, fitted inside ``video``
    (``(start, end)``; default: the first frame's time to the last frame's end)."""

    if video is None:
        step = float(frames.t[1] - frames.t[0]) if frames.n > 1 else 1.0
        video = (float(frames.t[0]), float(frames.t[-1]) + step)
    try:
        span = gt_crop_span(list(windows), width_of(variant), video, fit=fit)
    except GroundingError as exc:
        raise SelectionError(str(exc)) from None
    return _frames(frames, (span,))
