"""Work items to requests and responses to records: the prompt of an item (:func:`request_prompt`),
its model request, and a response turned into a Prediction or a Failure (:func:`to_prediction`;
a failed call is never recorded as an answer).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tempcore.records import Failure, Prediction
from tempcore.run.planning import (
    WorkItem,
)

if TYPE_CHECKING:
    from tempcore.models.base import ModelRequest, ModelResponse


from tempcore.grounding.crops import is_grounding
from tempcore.run.executor import Identity

GREY = 128


def _request(item: WorkItem, frames: Mapping[int, np.ndarray], template: str, noframe_size: int) -> ModelRequest:
    from tempcore.models import ModelRequest

    if item.frames.grey:
        grey = np.full((noframe_size, noframe_size, 3), GREY, dtype=np.uint8)
        images: tuple[np.ndarray, ...] = tuple(grey for _ in range(item.frames.requested))
        timestamps = None
    else:
        images = tuple(frames[i] for i in item.frames.indices)
        timestamps = item.frames.timestamps
    return ModelRequest(images=images, prompt=request_prompt(item, template), options=item.options,
                        timestamps=timestamps, key="|".join(item.key_suffix))


def request_prompt(item: WorkItem, template: str) -> str:
    """The prompt text of a planned item's request (no frame is decoded): the question and the
    options in the order shown, the frames' timestamps (none for no-frame requests); a grounding
    item's duration and frame times on its shown timeline (its spans). Its hash is the stored
    ``prompt_hash``, which the run's identity check compares with the plan."""
    from tempcore.prompts import render_prompt

    timestamps = None if item.frames.grey else item.frames.timestamps
    if is_grounding(item.sample):  # "when does it happen?": duration and frame times relative to the shown span
        from tempcore.grounding.answer import grounding_prompt

        return grounding_prompt(item.sample, template, timestamps, n_frames=item.n_frames, fps=item.condition.fps,
                                spans=item.spans)
    return render_prompt(item.sample.question, item.options, template, timestamps=timestamps)


def to_prediction(
    item: WorkItem, model: str, request: ModelRequest, response: ModelResponse, method: str,
    identity: Identity | None = None,
) -> Prediction | Failure:
    """A model's response as a Prediction (answer mapped back to the original option order) or a Failure."""
    from tempcore.answers import extract_choice
    from tempcore.prompts import prompt_hash

    identity = identity or Identity()
    s = item.sample
    if not response.ok:
        return Failure(s.benchmark, s.sample_id, model, item.condition.key, str(response.error),
                       attempts=max(int(response.attempts), 1))
    text = response.text if response.text is not None else ""  # ok: never None
    if is_grounding(item.sample):
        return _grounding_prediction(item, model, request, text, float(response.latency_s), method, identity)
    got = extract_choice(text, item.options)
    answer = None if got.index is None else item.permutation[got.index]
    probs = response.option_probs
    original_probs = None
    if probs is not None and len(probs) == len(item.options):
        reordered = [0.0] * len(probs)
        for j, p in enumerate(probs):
            reordered[item.permutation[j]] = float(p)
        original_probs = tuple(reordered)
    return Prediction(
        benchmark=s.benchmark, sample_id=s.sample_id, model=model, condition=item.condition.key,
        response=text, answer=answer, correct=int(answer is not None and answer == s.answer),
        frames=item.frames, prompt_hash=prompt_hash(request.prompt), latency_s=float(response.latency_s),
        answer_method=method, option_probs=original_probs,
        parse_error=got.error if answer is None else None, target=s.answer,
        sample_hash=item.sample_hash, model_fingerprint=identity.model_for(item),
        encoder_fingerprint=identity.encoder_for(item.condition), n_frames=item.n_frames,
        video_damage=item.damage,
    )


def _grounding_prediction(
    item: WorkItem, model: str, request: ModelRequest, text: str, latency_s: float, method: str, identity: Identity,
) -> Prediction:
    """A grounding response as a Prediction: ``[start, end]`` parsed, mapped back to absolute video
    time (:func:`tempcore.grounding.answer.crop_of`; a crop condition's spans), scored against the sample's windows;
    ``correct`` = IoU >= 0.5; a response without an interval is a parse failure (never an answer)."""
    from tempcore.grounding.answer import score_grounding_response
    from tempcore.grounding.crops import crop_of
    from tempcore.prompts import prompt_hash
    from tempcore.records import GROUNDING_CORRECT_IOU

    s = item.sample
    offset, duration = crop_of(s, item.n_frames, item.condition.fps)
    if item.spans:  # a crop condition (tempcore.grounding.crops): times on the concatenated spans
        from tempcore.grounding.crops import shown_duration

        duration = shown_duration(item.spans)
    got = score_grounding_response(text, s.answer_windows, duration=duration, offset=offset, spans=item.spans)
    return Prediction(
        benchmark=s.benchmark, sample_id=s.sample_id, model=model, condition=item.condition.key,
        response=text, answer=None, correct=int(got.iou is not None and got.iou >= GROUNDING_CORRECT_IOU),
        frames=item.frames, prompt_hash=prompt_hash(request.prompt), latency_s=latency_s,
        answer_method=method, parse_error=got.error if got.parse_failed else None,
        sample_hash=item.sample_hash, model_fingerprint=identity.model_for(item),
        encoder_fingerprint=identity.encoder_for(item.condition), n_frames=item.n_frames,
        video_damage=item.damage, pred_start=got.pred_start, pred_end=got.pred_end, iou=got.iou,
    )


@dataclass(frozen=True)
class Answered:
    """One batch's results, in item order. ``asked``: the model was called (``False`` for the
    items whose frames failed to decode, which become Failures without a call)."""

    items: tuple[WorkItem, ...]
    results: tuple[Prediction | Failure, ...]
    asked: bool = True


@dataclass(frozen=True)
class Prepared:
    """One request ready to send: the work item (for visual options: with the frames it shows),
    the request built for it and the answer method it is asked with."""

    item: WorkItem
    request: ModelRequest
    method: str


def _own(frames: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
    """The frames as arrays of their own: a frame that is a view into a decoded batch is copied, so
    a request held in a stream keeps only the frames it shows alive, not its unit's whole batch."""
    return {i: (f.copy() if f.base is not None else f) for i, f in frames.items()}


__all__ = [
    "Answered",
    "GREY",
    "Prepared",
    "to_prediction",
]
