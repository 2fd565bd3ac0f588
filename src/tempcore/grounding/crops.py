"""What a grounding model is shown of a video: one span or several, on one concatenated timeline.

Two run conditions of issue 15 show a model only part of a grounding sample's video and map its
answer back to absolute video time:

* **Retrieve-then-ground** (strategy ``retrieve_ground``, score-based, mode ``q``; ExtremeWhenBench's
  hybrid): the top-K candidate windows of the query's score track
  (:func:`tempcore.grounding.retrieval.candidate_windows`: NMS at ``nms_s`` = 60 s, each the peak ±
  ``pad_s`` = 60 s, clipped to the video) are merged into their union
  (:func:`~tempcore.grounding.retrieval.merge_windows`); the model sees K frames taken from those
  spans only. ``variant`` ``top<K>`` sets the number of candidates (``top3``, the paper's best, when
  no variant is given); it is part of the condition key, so K = 1, 3, 10 are three conditions.
  ``nms_s``, ``pad_s`` and ``smooth_frames`` (5, as the retrieval baseline) are parameters.
* **Window-length sweep** (strategy ``gtcrop``, no scores): the video cropped to a window of width
  W centred on the ground truth; ``variant`` is W: ``<seconds>s`` (``30s``; ``600s`` = ±5 min,
  ``1200s`` = ±10 min, ``2400s`` = ±20 min) or ``full`` (the whole video, through the same crop
  mechanism); :data:`WINDOW_SWEEP` lists the paper's five. The centre is the centre of the hull of
  the sample's GT windows (one window in ExtremeWhenBench). Choices the paper leaves open: a crop
  that runs past the video is *shifted* to stay inside it, keeping its width W (``fit="shift"``,
  default), or *clipped* (``fit="clip"``, a shorter window no longer centred); a video shorter
  than W is shown whole. W smaller than the GT cuts the GT (the paper's 30 s window can).

The shown timeline: the spans are concatenated in time order; the prompt states their total length
as the video's duration and each frame's time on the concatenation
(:func:`tempcore.grounding.retrieval.to_shown`); the parsed ``[start, end]`` is mapped back with
:func:`~tempcore.grounding.retrieval.to_absolute` (a start at a junction goes to the later span, an
end to the earlier one). Frames: K at equal intervals (``uniform`` centres) among the decoded
frames inside the spans, in time order; fewer than K frames inside gives them all (the FrameSet
records the shortfall). Only grounding samples are answered under these conditions (a
multiple-choice sample has no answer window to centre on, and the hybrid grounds): the planner
skips the others.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tempcore.diagnostics.grounding import GroundingError
from tempcore.grounding.retrieval import _fps_of, score_track
from tempcore.records import Sample

RETRIEVE_GROUND = "retrieve_ground"
GT_CROP = "gtcrop"
CROP_STRATEGIES = frozenset({RETRIEVE_GROUND, GT_CROP})
"""Strategies whose frames come from spans of the video (the shown timeline of the module doc)."""
DEFAULT_TOP_K = 3
CANDIDATE_PARAMS: dict[str, Any] = {"nms_s": 60.0, "pad_s": 60.0, "smooth_frames": 5}
"""``retrieve_ground``'s parameters and their defaults (the paper's hybrid; smoothing as the baseline's)."""
CROP_PARAMS: dict[str, Any] = {"fit": "shift"}
"""``gtcrop``'s parameters and their defaults."""
FITS = ("shift", "clip")
WINDOW_SWEEP = ("30s", "600s", "1200s", "2400s", "full")
"""The paper's window-length sweep (Fig. 4): 30 s, ±5, ±10, ±20 min, the full video."""

Spans = tuple[tuple[float, float], ...]

_TOP = re.compile(r"^top([1-9][0-9]*)$")
_WIDTH = re.compile(r"^([0-9]+(?:\.[0-9]+)?)s$")


def is_grounding(sample: Sample) -> bool:
    """A grounding sample: ground-truth windows and no options (answered with ``[start, end]``)."""
    return not sample.options and bool(sample.answer_windows)


def top_k_of(variant: str | None) -> int:
    """The number of candidate windows a ``retrieve_ground`` variant names (``top3`` -> 3; none: 3)."""
    if variant is None:
        return DEFAULT_TOP_K
    m = _TOP.match(variant)
    if not m:
        raise GroundingError(f"retrieve_ground: variant must be top<K> (e.g. top3), not {variant!r}")
    return int(m.group(1))


def width_of(variant: str | None) -> float | None:
    """The crop width in seconds a ``gtcrop`` variant names (``30s`` -> 30.0; ``full`` -> None)."""
    if variant == "full":
        return None
    m = _WIDTH.match(variant or "")
    if not m or float(m.group(1)) <= 0:
        raise GroundingError(f"gtcrop: variant must be <seconds>s (e.g. 30s, 600s) or full, not {variant!r}")
    return float(m.group(1))


def _check(params: Mapping[str, Any], known: Mapping[str, Any], name: str) -> dict[str, Any]:
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise GroundingError(f"{name} takes no parameter(s) {unknown} (it takes: {', '.join(known)})")
    return {**known, **params}


DURATION_KEYS = ("video_duration_s", "duration", "video_duration")
"""Metadata fields a loader may carry the video's duration in (ExtremeWhenBench, generic grounding
rows and QVHighlights, the synthetic world), tried in this order."""


def crop_of(sample: Sample, n_frames: int | None = None, fps: float | None = None) -> tuple[float, float | None]:
    """``(offset, duration)`` of what a model is shown of a grounding sample's video.

    ``offset`` is where the shown span starts in the video (the segment's ``start``, else 0): the
    prompt's timestamps are relative to it and the parsed answer is mapped back by adding it.
    ``duration`` is the span's length: ``end - start`` of a segment; else the first numeric
    metadata field of :data:`DURATION_KEYS`; else ``n_frames / fps`` (the frames decoded at the
    run's rate); ``None`` when none is known (the prompt then states no duration).
    """
    offset = float(sample.start or 0.0)
    if sample.start is not None and sample.end is not None:
        return offset, float(sample.end) - float(sample.start)
    for key in DURATION_KEYS:
        value = sample.metadata.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return offset, float(value) - offset
    if n_frames and fps:
        return offset, n_frames / float(fps)
    return offset, None


def candidate_spans(
    timestamps: Any,
    scores: Any,
    *,
    k: int = DEFAULT_TOP_K,
    nms_s: float = CANDIDATE_PARAMS["nms_s"],
    pad_s: float = CANDIDATE_PARAMS["pad_s"],
    smooth_frames: int = CANDIDATE_PARAMS["smooth_frames"],
) -> Spans:
    """The union of the top-``k`` candidate windows of one score track (frames in time order, at
    their median rate), as sorted disjoint spans inside ``[t_first, t_last + 1/fps]``."""
    from tempcore.grounding.retrieval import candidate_windows, merge_windows

    t, s = score_track(timestamps, scores, "retrieve_ground")
    fps = _fps_of(t)
    c = candidate_windows(s, k=k, fps=fps, t0=float(t[0]), nms_s=nms_s, pad_s=pad_s,
                          smooth_frames=int(smooth_frames), durations=float(t[-1]) + 1.0 / fps)
    return tuple(merge_windows(c["start"][0], c["end"][0]))


def gt_crop_span(
    windows: Sequence[tuple[float, float]], width: float | None, video: tuple[float, float], *, fit: str = "shift",
) -> tuple[float, float]:
    """The crop of width ``width`` (None: the whole ``video``) centred on the hull of ``windows``,
    fitted inside ``video = (start, end)`` (module doc: ``shift`` or ``clip``)."""
    if fit not in FITS:
        raise GroundingError(f"gtcrop: fit must be one of {', '.join(FITS)}, not {fit!r}")
    lo, hi = float(video[0]), float(video[1])
    if not hi > lo:
        raise GroundingError(f"gtcrop: the video span [{lo}, {hi}] is empty")
    if width is None or width >= hi - lo and fit == "shift":
        return lo, hi
    if not windows:
        raise GroundingError("gtcrop: the sample has no ground-truth window to centre on")
    c = (min(float(w[0]) for w in windows) + max(float(w[1]) for w in windows)) / 2
    a, b = c - width / 2, c + width / 2
    if fit == "clip":
        a, b = max(a, lo), min(b, hi)
        if not b > a:  # the GT lies outside the video: nothing of the crop is left
            raise GroundingError(f"gtcrop: the crop [{c - width / 2}, {c + width / 2}] lies outside the video")
        return a, b
    if a < lo:
        a, b = lo, lo + width
    if b > hi:
        a, b = hi - width, hi
    return a, b


def video_span(sample: Sample, timestamps: Any, fps: float) -> tuple[float, float]:
    """``(start, end)`` of the sample's video (or segment) in absolute time: the crop of
    :func:`crop_of` (segment bounds, else the duration metadata, else the
    decoded frames), never ending before the last decoded frame's end."""

    t = np.asarray(timestamps, dtype=np.float64)
    offset, duration = crop_of(sample, int(t.shape[0]), fps)
    last = float(t.max()) + 1.0 / fps if t.size else offset
    end = offset + duration if duration is not None else last
    return offset, max(end, last) if sample.end is None else end


def shown_spans(
    strategy: str,
    variant: str | None,
    params: Mapping[str, Any],
    sample: Sample,
    timestamps: Any,
    scores: Any | None,
    fps: float,
) -> Spans:
    """The spans a crop condition shows of one grounding sample (module doc)."""
    if strategy == RETRIEVE_GROUND:
        p = _check(params, CANDIDATE_PARAMS, RETRIEVE_GROUND)
        if scores is None:
            raise GroundingError(f"sample {sample.sample_id!r}: retrieve_ground needs the frames' scores (mode q)")
        return candidate_spans(timestamps, scores, k=top_k_of(variant), nms_s=float(p["nms_s"]),
                               pad_s=float(p["pad_s"]), smooth_frames=int(p["smooth_frames"]))
    if strategy == GT_CROP:
        p = _check(params, CROP_PARAMS, GT_CROP)
        return (gt_crop_span(sample.answer_windows, width_of(variant), video_span(sample, timestamps, fps),
                             fit=str(p["fit"])),)
    raise GroundingError(f"{strategy!r} is not a crop strategy (known: {', '.join(sorted(CROP_STRATEGIES))})")


def shown_duration(spans: Spans) -> float:
    """The length of the shown timeline (the spans' total)."""
    return float(sum(b - a for a, b in spans))


__all__ = [
    "CANDIDATE_PARAMS",
    "CROP_PARAMS",
    "CROP_STRATEGIES",
    "DEFAULT_TOP_K",
    "GT_CROP",
    "RETRIEVE_GROUND",
    "WINDOW_SWEEP",
    "Spans",
    "DURATION_KEYS",
    "candidate_spans",
    "crop_of",
    "gt_crop_span",
    "is_grounding",
    "shown_duration",
    "shown_spans",
    "top_k_of",
    "video_span",
    "width_of",
]
