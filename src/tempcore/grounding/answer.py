"""Score one grounding response: parse ``[start, end]`` seconds and its IoU against the GT windows.

The step the runner needs for a grounding work item (issue 15), as a pure function: the response
is parsed by :func:`tempcore.answers.extract_interval`; times the model gave relative to a crop are
mapped back to absolute video time by adding ``offset``; the IoU is the best over the sample's
ground-truth windows (:func:`tempcore.diagnostics.grounding.best_iou`). A parse failure is kept
as such: ``pred_start`` / ``pred_end`` / ``iou`` are None and ``error`` says why (metrics count
it as IoU 0 and report it separately).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tempcore.answers import extract_interval
from tempcore.diagnostics.grounding import best_iou


@dataclass(frozen=True)
class GroundingAnswer:
    pred_start: float | None
    pred_end: float | None
    iou: float | None
    error: str | None = None

    @property
    def parse_failed(self) -> bool:
        return self.pred_start is None


def score_grounding_response(
    text: str,
    windows: Sequence[tuple[float, float]],
    *,
    duration: float | None = None,
    offset: float = 0.0,
) -> GroundingAnswer:
    """Parse ``text`` into an absolute ``[start, end]`` and score it against ``windows``.

    ``duration`` is the length the model was told (the crop's, when cropped; it resolves
    percentages); ``offset`` is the crop's start in the video, added to both parsed times.
    """
    got = extract_interval(text, duration=duration)
    if not got.ok:
        return GroundingAnswer(None, None, None, got.error or "no interval")
    start, end = float(got.start) + offset, float(got.end) + offset  # type: ignore[arg-type]
    if not windows:
        return GroundingAnswer(start, end, None)
    gs = [float(w[0]) for w in windows]
    ge = [float(w[1]) for w in windows]
    ious, _ = best_iou([start], [end], gs, ge, [0] * len(windows))
    return GroundingAnswer(start, end, float(ious[0]))
