"""The frame-level retrieval baseline as a run condition: strategy ``retrieval`` (issue 15).

ExtremeWhenBench's baseline scores every frame against the query with a frame-text encoder and
turns the score track into one window (:func:`tempcore.grounding.retrieval.retrieval_windows`:
smoothing, peak, grow while score >= β·peak, clip the length). In ``tempcore run`` it is the
condition ``{strategy: retrieval, mode: q}``:

* on a **grounding sample** (``answer_windows``, no options) the window *is* the answer: no model
  is called; the run stores one :class:`~tempcore.records.Prediction` per sample under the model
  name :data:`RETRIEVAL_MODEL` (:func:`retrieval_prediction`), scored like a model's answer
  (``pred_start`` / ``pred_end`` / ``iou``, ``correct`` = IoU >= 0.5);
* on a **multiple-choice sample** it is a frame-selection strategy like any other
  (:func:`tempcore.selection.retrieval.retrieval`): K frames at equal intervals inside the retrieved window of the question
  (retrieve-then-answer with one window), shown to every model of the run.

The scores are the paper's: the raw cosine of frame and query embeddings (the encoder of the run,
through the embedding cache; Eq. 1's ``sigmoid(cos)`` only with ``score: sigmoid`` or the
``paper_sigmoid`` variant) of the frames decoded at the run's ``fps`` — the paper's configuration
is 1 fps with CLIP; set ``fps: 1`` for it. Text mode: ``q`` (the query alone). ``qa`` would put the answer
into the query of a multiple-choice sample; a grounding sample has no answer text, so ``qa`` fails
there (:class:`tempcore.run.frame_scoring.TextModeError`). The parameters (``beta``,
``smooth_frames``, ``min_len``, ``max_len``, ``floor``, ``score``) are the condition's ``params``
over the preset of its ``variant`` (``paper``, ``fine``, ``paper_sigmoid``:
:mod:`tempcore.selection.retrieval`); defaults are the paper's (the raw cosine, β = 0.7 of the
peak, clip [4, 60] s) and 5 smoothed frames (the paper leaves smoothing open); ``floor: min``
measures β from the track's minimum (see :mod:`tempcore.grounding.retrieval`: on Eq. 1's
``sigmoid(cos)`` scores the paper's rule grows the window to the whole video).
Frame ``i`` is taken at time ``t0 + i / fps`` with ``t0`` the first decoded frame's timestamp and
the track ending at the last frame's end (``t_last + 1 / fps``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.grounding.crops import is_grounding
from tempcore.grounding.retrieval import (
    CANDIDATES_METHOD,
    DEFAULTS,
    RETRIEVAL_METHOD,
    RETRIEVAL_MODEL,
    RETRIEVAL_STRATEGY,
    TEXT_PARAMS,
    _fps_of,
    track_window,
)
from tempcore.records import GROUNDING_CORRECT_IOU, Condition, FrameSet, Prediction, Sample

if TYPE_CHECKING:
    from tempcore.run.config import RunConfig
    from tempcore.run.planning import Timeline

def retrieval_identity(params: dict[str, Any] | None = None) -> dict[str, Any]:
    """What decides the baseline's answers besides the frames (its ``model_fingerprint`` hashes it):
    the window parameters and ``score``, which frame scores the window is taken on (``cosine`` or
    ``sigmoid``; rows stored before ``score`` existed were made on ``sigmoid`` and hash without it,
    so no stored row is served for a window on other scores)."""
    p = {**DEFAULTS, **(params or {})}
    return {"model": RETRIEVAL_MODEL, "method": RETRIEVAL_METHOD,
            **{k: (str(p[k]) if k in TEXT_PARAMS else float(p[k])) for k in sorted(DEFAULTS)}}


def retrieval_prediction(
    sample: Sample,
    condition: Condition,
    timestamps: Any,
    scores: Any,
    *,
    params: dict[str, Any] | None = None,
    sample_hash: str = "",
    encoder_fingerprint: str | None = None,
    n_frames: int | None = None,
    damage: str | None = None,
    model: str = RETRIEVAL_MODEL,
) -> Prediction:
    """The baseline's answer to one grounding sample, as a stored Prediction.

    ``scores``: the frame track the resolved ``score`` parameter names (the caller picks it:
    :func:`baseline_predictions` takes :meth:`tempcore.run.planning.Timeline.track`).

    ``response`` is the window written ``[start, end]`` (seconds, ``repr`` of the floats, so the
    interval extractor reads back exactly ``pred_start`` / ``pred_end``); ``prompt_hash`` is the
    SHA-256 of the query text scored; ``frames`` lists no frame (nothing was shown to a model),
    ``requested`` = the number of frames scored; ``latency_s`` the time to compute the window;
    ``model_fingerprint`` the fingerprint of :func:`retrieval_identity` (the window parameters
    and the score).
    """
    from tempcore.diagnostics.grounding import best_iou
    from tempcore.run.frame_scoring import query_text
    from tempcore.run.identity import fingerprint
    from tempcore.selection.retrieval import resolve_params

    started = time.perf_counter()
    p = resolve_params(condition.variant, params)
    start, end = track_window(timestamps, scores, fps=condition.fps, beta=float(p["beta"]),
                              smooth_frames=int(p["smooth_frames"]), min_len=float(p["min_len"]),
                              max_len=float(p["max_len"]), floor=str(p["floor"]))
    iou: float | None = None
    if sample.answer_windows:
        gs = [w[0] for w in sample.answer_windows]
        ge = [w[1] for w in sample.answer_windows]
        ious, _ = best_iou([start], [end], gs, ge, [0] * len(gs))
        iou = float(ious[0])
    text = query_text(sample, condition.mode if condition.mode != "none" else "q")
    return Prediction(
        benchmark=sample.benchmark, sample_id=sample.sample_id, model=model, condition=condition.key,
        response=f"[{start!r}, {end!r}]", answer=None,
        correct=0 if iou is None else int(iou >= GROUNDING_CORRECT_IOU),
        frames=FrameSet((), (), requested=int(np.asarray(timestamps).shape[0])),
        prompt_hash=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        latency_s=time.perf_counter() - started, answer_method=RETRIEVAL_METHOD,
        sample_hash=sample_hash, model_fingerprint=fingerprint(retrieval_identity(p)),
        encoder_fingerprint=encoder_fingerprint,
        n_frames=n_frames, video_damage=damage, pred_start=start, pred_end=end, iou=iou,
    )




def candidates_identity(variant: str | None, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What decides the stored candidate windows besides the scores (their ``model_fingerprint``)."""
    from tempcore.grounding.crops import CANDIDATE_PARAMS, top_k_of

    p = {**CANDIDATE_PARAMS, **(params or {})}
    return {"model": RETRIEVAL_MODEL, "method": CANDIDATES_METHOD, "top_k": top_k_of(variant),
            **{k: float(p[k]) for k in sorted(CANDIDATE_PARAMS)}}


def candidates_prediction(
    sample: Sample,
    condition: Condition,
    timestamps: Any,
    scores: Any,
    *,
    params: Mapping[str, Any] | None = None,
    sample_hash: str = "",
    encoder_fingerprint: str | None = None,
    n_frames: int | None = None,
    damage: str | None = None,
) -> Prediction:
    """The retrieval stage of retrieve-then-ground, stored (no model is called) under the
    ``retrieve_ground`` condition by the model :data:`RETRIEVAL_MODEL`, ``answer_method``
    :data:`CANDIDATES_METHOD`: ``response`` is the JSON list ``[[start, end, peak_score], ...]`` of
    the top-K candidate windows in rank order (:func:`tempcore.grounding.retrieval.candidate_windows`,
    before their union; what candidate recall@K reads), ``pred_start`` / ``pred_end`` the first
    candidate (the retrieval-alone answer at ± ``pad_s``), ``iou`` its best IoU."""
    import json

    from tempcore.diagnostics.grounding import best_iou
    from tempcore.grounding.crops import CANDIDATE_PARAMS, _check, top_k_of
    from tempcore.grounding.retrieval import candidate_windows
    from tempcore.run.frame_scoring import query_text
    from tempcore.run.identity import fingerprint

    started = time.perf_counter()
    p = _check(dict(params or {}), CANDIDATE_PARAMS, "retrieve_ground")
    t = np.asarray(timestamps, dtype=np.float64)
    sc = np.asarray(scores, dtype=np.float64)
    order = np.argsort(t, kind="stable")
    t, sc = t[order], sc[order]
    fps = _fps_of(t)
    c = candidate_windows(sc, k=top_k_of(condition.variant), fps=fps, t0=float(t[0]), nms_s=float(p["nms_s"]),
                          pad_s=float(p["pad_s"]), smooth_frames=int(p["smooth_frames"]),
                          durations=float(t[-1]) + 1.0 / fps)
    ranked = [[float(a), float(b), float(v)] for a, b, v in zip(c["start"][0], c["end"][0], c["peak_score"][0])
              if not np.isnan(a)]
    start, end = (ranked[0][0], ranked[0][1]) if ranked else (None, None)
    iou: float | None = None
    if sample.answer_windows and start is not None:
        ious, _ = best_iou([start], [end], [w[0] for w in sample.answer_windows],
                           [w[1] for w in sample.answer_windows], [0] * len(sample.answer_windows))
        iou = float(ious[0])
    text = query_text(sample, "q")
    return Prediction(
        benchmark=sample.benchmark, sample_id=sample.sample_id, model=RETRIEVAL_MODEL, condition=condition.key,
        response=json.dumps(ranked), answer=None, correct=int(iou is not None and iou >= GROUNDING_CORRECT_IOU),
        frames=FrameSet((), (), requested=int(t.shape[0])),
        prompt_hash=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        latency_s=time.perf_counter() - started, answer_method=CANDIDATES_METHOD,
        parse_error=None if ranked else "no candidate window (no frames)",
        sample_hash=sample_hash, model_fingerprint=fingerprint(candidates_identity(condition.variant, p)),
        encoder_fingerprint=encoder_fingerprint, n_frames=n_frames, video_damage=damage,
        pred_start=start, pred_end=end, iou=iou,
    )


def baseline_predictions(
    cfg: RunConfig,
    samples: Sequence[Sample],
    timelines: Mapping[str, Timeline],
    sample_hashes: Mapping[str, str],
    *,
    encoder_fingerprint: str | None = None,
) -> list[Prediction]:
    """The baseline's prediction for every (grounding sample, ``retrieval`` condition of ``cfg``)
    whose sample has a timeline with the condition's scores, in sample order then condition order;
    for a ``retrieve_ground`` condition, the stored candidate windows of its retrieval stage
    (:func:`candidates_prediction`).
    Pure: reads only its arguments (the run's planner calls it beside
    :func:`tempcore.run.planning.plan_items`)."""
    from tempcore.grounding.crops import RETRIEVE_GROUND

    entries = [(e, e.condition(cfg)) for e in cfg.conditions if e.strategy in (RETRIEVAL_STRATEGY, RETRIEVE_GROUND)]
    out: list[Prediction] = []
    if not entries:
        return out
    for sample in samples:
        tl = timelines.get(sample.sample_id)
        if tl is None or not is_grounding(sample):
            continue
        for entry, cond in entries:
            if cond.strategy == RETRIEVE_GROUND:  # its retrieval stage: the ranked candidate windows
                scores = tl.scores.get(cond.mode)
                if scores is None:
                    continue
                out.append(candidates_prediction(
                    sample, cond, tl.timestamps, scores, params=dict(entry.params),
                    sample_hash=sample_hashes.get(sample.sample_id, ""), encoder_fingerprint=encoder_fingerprint,
                    n_frames=int(len(tl.timestamps)), damage=tl.damage,
                ))
                continue
            from tempcore.selection.retrieval import resolve_params

            scores = tl.track(cond.mode, str(resolve_params(cond.variant, dict(entry.params))["score"]))
            if scores is None:
                continue
            out.append(retrieval_prediction(
                sample, cond, tl.timestamps, scores, params=dict(entry.params),
                sample_hash=sample_hashes.get(sample.sample_id, ""), encoder_fingerprint=encoder_fingerprint,
                n_frames=int(len(tl.timestamps)), damage=tl.damage,
            ))
    return out


__all__ = [
    "CANDIDATES_METHOD",
    "DEFAULTS",
    "candidates_identity",
    "candidates_prediction",
    "baseline_predictions",
    "RETRIEVAL_METHOD",
    "RETRIEVAL_MODEL",
    "RETRIEVAL_STRATEGY",
    "is_grounding",
    "retrieval_identity",
    "retrieval_prediction",
    "track_window",
]
