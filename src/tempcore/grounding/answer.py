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
from tempcore.grounding.crops import crop_of, shown_duration
from tempcore.records import Sample


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
    spans: Sequence[tuple[float, float]] | None = None,
) -> GroundingAnswer:
    """Parse ``text`` into an absolute ``[start, end]`` and score it against ``windows``.

    ``duration`` is the length the model was told (the crop's, when cropped; it resolves
    percentages); ``offset`` is the crop's start in the video, added to both parsed times.
    ``spans`` (a crop condition, :mod:`tempcore.grounding.crops`): the parsed times are on the
    concatenation of these spans and are mapped back with
    :func:`tempcore.grounding.retrieval.to_absolute` instead (``offset`` is then ignored; the start
    at a junction goes to the later span, the end to the earlier one).
    """
    got = extract_interval(text, duration=duration)
    if not got.ok:
        return GroundingAnswer(None, None, None, got.error or "no interval")
    if spans:
        from tempcore.grounding.retrieval import to_absolute

        start = float(to_absolute(float(got.start), spans, junction="later"))  # type: ignore[arg-type]
        end = float(to_absolute(float(got.end), spans, junction="earlier"))  # type: ignore[arg-type]
    else:
        start, end = float(got.start) + offset, float(got.end) + offset  # type: ignore[arg-type]
    if not windows:
        return GroundingAnswer(start, end, None)
    gs = [float(w[0]) for w in windows]
    ge = [float(w[1]) for w in windows]
    ious, _ = best_iou([start], [end], gs, ge, [0] * len(windows))
    return GroundingAnswer(start, end, float(ious[0]))


def grounding_prompt(
    sample: Sample,
    template: str,
    timestamps: Sequence[float] | None,
    *,
    n_frames: int | None = None,
    fps: float | None = None,
    spans: Sequence[tuple[float, float]] | None = None,
) -> str:
    """The prompt of a grounding work item: the query, the shown span's duration and the frames'
    timestamps relative to the span (:func:`crop_of`). ``template`` is used when it is a grounding
    template; a multiple-choice one (a model's default) gives way to ``grounding``. With ``spans``
    (a crop condition, :mod:`tempcore.grounding.crops`) the duration is their total length and the
    times are on their concatenation (:func:`tempcore.grounding.retrieval.to_shown`)."""
    from tempcore.prompts import get_template, render_grounding_prompt

    tpl = get_template(template)
    if spans:
        from tempcore.grounding.retrieval import to_shown

        duration: float | None = shown_duration(tuple(spans))
        shown = None if timestamps is None else [float(x) for x in to_shown(list(timestamps), spans)]
        return render_grounding_prompt(sample.question, tpl if tpl.kind == "grounding" else "grounding",
                                       timestamps=shown, duration=duration)
    offset, duration = crop_of(sample, n_frames, fps)
    shown = None if timestamps is None else [float(t) - offset for t in timestamps]
    return render_grounding_prompt(sample.question, tpl if tpl.kind == "grounding" else "grounding",
                                   timestamps=shown, duration=duration)
