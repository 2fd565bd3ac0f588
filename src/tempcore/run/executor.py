"""Executors: where a run's frames are scored and its work items answered.

The runner (:mod:`tempcore.run.runner`) plans (:mod:`tempcore.run.planning`), checks identities and owns the
run store; an :class:`Executor` does the two heavy steps:

1. :meth:`Executor.timelines`: for the samples of one benchmark, the candidate frames at the run's
   fps and the Eq. 1 scores of each needed text mode (:mod:`tempcore.run.frame_scoring`, embedding cache),
   or, with no score-based condition, the probed timestamps alone;
2. :meth:`Executor.answer`: for each :class:`ModelJob` (one model entry and the work items it has
   not answered yet), load the model once, decode the frames the items show (one pass per
   :func:`tempcore.run.planning.answer_units` unit), answer them as one bounded stream of requests
   across samples and conditions (:func:`answer_stream`: ``concurrency`` x 2 requests outstanding
   for the HTTP backend, batches of ``request_batch`` formed across samples for batched local
   models), turn each response into a Prediction or a Failure (:func:`to_prediction`) and commit
   the results to the store as they complete (:func:`commit`). Failed calls go to the failures
   table, never into predictions.

:class:`LocalExecutor` does both in this process, one model after the other. The Ray executor
(:mod:`tempcore.run.ray_executor`) runs the same functions (:func:`frame_events`, :func:`answer_unit`)
in Ray actors and commits on the driver, so both store the same rows.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from tempcore import profiling
from tempcore.errors import TempcoreError
from tempcore.records import Condition, Failure, Prediction, Sample
from tempcore.run.ordered import in_context, ordered_map
from tempcore.run.planning import (
    RunError,
    Timeline,
    Timelines,
    WorkItem,
    answer_chunks,
    answer_units,
    damage_of,
)

if TYPE_CHECKING:
    from tempcore.encoders.base import FrameTextEncoder
    from tempcore.encoders.cache import EmbeddingCache
    from tempcore.models.base import Model, ModelRequest, ModelResponse, ModelSpec
    from tempcore.models.hosted import ModelHost
    from tempcore.run.config import RunConfig
    from tempcore.run.frame_scoring import FrameScores, ScoreFailure
    from tempcore.run.framestore import FrameStore, RunKeeper
    from tempcore.run.store import RunStore
    from tempcore.video.decode import FrameBatch

__all__ = [
    "GREY",
    "SCORING_WORKERS",
    "Answered",
    "AnswerSettings",
    "ConcurrentModel",
    "EncoderIdentity",
    "Executor",
    "Identity",
    "LocalExecutor",
    "ModelFactory",
    "ModelJob",
    "ModelSummary",
    "Probe",
    "ProbeFailure",
    "Prepared",
    "answer_items",
    "answer_stream",
    "answer_unit",
    "collect_timelines",
    "commit",
    "frame_events",
    "prepare_unit",
    "default_decoders",
    "stream_window",
    "to_prediction",
]

GREY = 128
SCORING_WORKERS = 2
"""Videos :class:`LocalExecutor` scores at once (at most the cores): decoding, the image processor
and the encoder each hold the GIL for part of a frame only, so a second video keeps a second core
busy (on 2 cores: the world's 48 x 48 videos 1.36x, 640 x 360 clips 1.26x faster;
``benchmarks/scoring_workers.py``)."""

Key = tuple[str, str, str, str]
ModelFactory = Callable[["ModelSpec"], "Model"]


@dataclass
class ModelSummary:
    """What one model did in a run (counts of predictions; ``seconds`` spent answering)."""

    model: str
    planned: int = 0
    stored_before: int = 0
    done: int = 0
    discarded: int = 0
    replaced: int = 0
    failed: int = 0
    parse_failures: int = 0
    correct: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Identity:
    """The fingerprints a model's predictions of one run carry (see :mod:`tempcore.run.identity`)."""

    model_fingerprint: str = ""
    encoder_fingerprint: str | None = None
    # grounding requests render the grounding template (the model's own when it is one, else the
    # built-in ``grounding``): their predictions carry the fingerprint of that template instead
    grounding_fingerprint: str = ""

    def model_for(self, item: WorkItem) -> str:
        """The model fingerprint an item's prediction carries (grounding items: the grounding one)."""
        if self.grounding_fingerprint and _grounding(item):
            return self.grounding_fingerprint
        return self.model_fingerprint

    def encoder_for(self, condition: Condition) -> str | None:
        """The encoder fingerprint for a condition: only score-based conditions depend on the encoder."""
        return self.encoder_fingerprint if condition.mode != "none" else None


@dataclass
class ModelJob:
    """One model entry's share of a run: the items it has to answer (stored keys are not in it).

    ``replace``: keys of stored rows whose fingerprints changed (``--recompute``), overwritten;
    ``template``: the prompt template (the run's ``prompt`` or the entry's ``prompt_template``);
    ``summary``: updated in place as batches are committed."""

    spec: ModelSpec
    method: str
    items: list[WorkItem]
    identity: Identity
    summary: ModelSummary
    template: str = "default"
    replace: set[Key] | frozenset[Key] = frozenset()

    def describe(self) -> str:
        """The line a run logs when it starts this job."""
        again = self.replace
        return (f"model {self.spec.display_name}: {len(self.items)} to answer ({self.summary.stored_before} stored"
                + (f", {len(again)} to replace" if again else "") + ")")


@dataclass(frozen=True)
class AnswerSettings:
    """The run settings answering needs (from :class:`tempcore.run.config.RunConfig`)."""

    video_root_of: Mapping[str, str | None] = field(default_factory=dict)
    noframe_size: int = 384
    max_frames_in_memory: int = 512
    request_batch: int = 32
    #: models the local executor answers at once (``parallel_models``; the Ray executor has its own
    #: ``concurrent_models``)
    parallel_models: int = 1
    #: with ``parallel_models`` > 1, load and answer each answering thread's models in a worker
    #: process of its own (``model_processes``, :mod:`tempcore.models.hosted`)
    model_processes: bool = False


class EncoderIdentity(Protocol):
    """What the runner needs to know of the encoder an executor scores with."""

    @property
    def name(self) -> str: ...

    @property
    def fingerprint(self) -> str: ...


class Executor(Protocol):
    """Runs the heavy steps of a planned run; the runner plans, checks and owns the store.

    ``prepare`` is called once before any scoring: it loads (or takes ``encoder``) the encoder
    when ``cfg.needs_encoder`` and returns it (or an object naming it, with its fingerprint), or
    ``None``. ``timelines`` scores the frames of one benchmark's samples. ``answer`` answers every
    job and commits each result to ``store`` as it arrives (only the caller's process writes the
    store). ``close`` releases what ``prepare`` / ``answer`` acquired."""

    def prepare(
        self, cfg: RunConfig, *, encoder: FrameTextEncoder | None, progress: bool,
    ) -> EncoderIdentity | None: ...

    def timelines(
        self, samples: Sequence[Sample], modes: Sequence[str], *, cfg: RunConfig, cache: EmbeddingCache | None,
        video_root: str | None, label: str, log: Callable[[str], None], progress: bool,
    ) -> Timelines: ...

    def answer(
        self, jobs: Sequence[ModelJob], store: RunStore, run_id: str, *, factory: ModelFactory,
        settings: AnswerSettings, log: Callable[[str], None], progress: bool,
    ) -> None: ...

    def close(self) -> None: ...


# --- frame scoring ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    """A sample's timestamps from probing its video (runs without score-based conditions)."""

    sample_id: str
    video: str
    timestamps: np.ndarray
    damage: str | None = None


@dataclass(frozen=True)
class ProbeFailure:
    """A sample whose video could not be probed."""

    sample_id: str
    video: str
    error: str


def frame_events(
    samples: Sequence[Sample],
    modes: Sequence[str],
    *,
    fps: float | None,
    encoder: FrameTextEncoder | None,
    cache: EmbeddingCache | None,
    video_root: str | None,
    on_sample: Callable[[Sample], None] | None = None,
    keep: RunKeeper | None = None,
    workers: int = 1,
) -> Iterator[FrameScores | ScoreFailure | Probe | ProbeFailure]:
    """The results of scoring (``modes``) or probing (no modes) the videos of ``samples``, as data.

    Scoring yields :func:`tempcore.run.frame_scoring.score_samples`' records; probing one :class:`Probe` or
    :class:`ProbeFailure` per sample (samples that share a video and segment share one probe).
    ``on_sample`` is called once per sample done. ``keep`` (:class:`tempcore.run.framestore.RunKeeper`)
    keeps the frames answering will show from this pass: scoring hands it every decoded frame;
    probing then decodes with RGB conversion (a :class:`~tempcore.video.decode.VideoReader` pass, the same
    timestamps and damage report as :func:`~tempcore.video.decode.probe`) instead of a probe, so that
    answering needs no second pass. ``workers``: videos scored at once (:func:`~tempcore.run.frame_scoring.score_samples`)."""
    if modes:
        from tempcore.run.frame_scoring import score_samples

        if encoder is None:
            raise RunError(f"frame scoring in modes {list(modes)} needs an encoder")
        yield from score_samples(samples, encoder, list(modes), fps=fps, cache=cache, video_root=video_root,
                                 on_sample=on_sample, keep=keep, workers=workers)
        return
    from tempcore.benchmarks import resolve_video

    groups: dict[tuple[str, float | None, float | None, str], list[Sample]] = {}
    for s in samples:
        groups.setdefault((str(resolve_video(s, video_root)), s.start, s.end, s.media), []).append(s)
    for (path, start, end, media), group in groups.items():
        found = _probe_video(Path(path), fps, start, end, media, group, keep)
        for s in group:
            if isinstance(found, str):
                yield ProbeFailure(s.sample_id, path, found)
            else:
                yield Probe(s.sample_id, path, found[0], found[1])
            if on_sample is not None:
                on_sample(s)


def _probe_video(
    path: Path, fps: float | None, start: float | None, end: float | None, media: str, samples: Sequence[Sample],
    keep: RunKeeper | None,
) -> tuple[np.ndarray, str | None] | str:
    """(timestamps, damage) of one video's frames at ``fps``, or the decoding error's text; with
    ``keep``, a converting pass whose frames go to the keeper (see :func:`frame_events`)."""
    from tempcore.video.decode import VideoError, VideoReader, probe

    if keep is None:
        try:
            info = probe(path, fps, start=start, end=end, media=media)
        except VideoError as exc:
            return str(exc)
        damage = damage_of(info)
        return np.asarray(info.timestamps, dtype=np.float64), None if not damage else str(damage)
    sink = keep.sink(path, samples)
    try:
        try:
            reader = VideoReader(path, fps, start=start, end=end, media=media)
            times = []
            for batch in reader:
                sink.add(batch)
                times.append(np.asarray(batch.timestamps, dtype=np.float64))
        except VideoError as exc:
            return str(exc)
        timestamps = np.concatenate(times) if times else np.empty(0, np.float64)
        damage = damage_of(reader)
        found = (timestamps, None if not damage else str(damage))
        keep.keep(path, samples, {s.sample_id: Timeline(timestamps, {}, found[1]) for s in samples}, sink)
        return found
    finally:
        sink.close()


def collect_timelines(
    events: Iterable[FrameScores | ScoreFailure | Probe | ProbeFailure],
    modes: Sequence[str],
    log: Callable[[str], None],
) -> Timelines:
    """Per sample: frame timestamps at the run's fps, the Eq. 1 scores of each needed mode, and the
    damage the decoder reported (``None`` when clean); logs each failed and damaged sample.

    A video that fails is listed once in ``failed_videos`` (distinct videos); a damaged one in
    ``damaged_videos``. A sample whose scores failed for one mode but not another keeps no timeline."""
    from tempcore.run.frame_scoring import FrameScores

    out: dict[str, Timeline] = {}
    failed: dict[str, None] = {}
    damaged: dict[str, None] = {}
    for r in events:
        if isinstance(r, FrameScores):
            tl = out.setdefault(r.sample_id, Timeline(np.asarray(r.timestamps), {}))
            tl.scores[r.mode] = np.asarray(r.s)
            damage = damage_of(r)
            if damage:
                if tl.damage is None:
                    log(f"  damaged video (sample {r.sample_id}): {damage}")
                tl.damage = str(damage)
                damaged[str(getattr(r, "video", "") or r.sample_id)] = None
        elif isinstance(r, Probe):
            out[r.sample_id] = Timeline(r.timestamps, {}, r.damage)
            if r.damage:
                damaged[r.video] = None
                log(f"  damaged video (sample {r.sample_id}): {r.damage}")
        elif isinstance(r, ProbeFailure):
            failed[r.video] = None
            log(f"  cannot decode: sample {r.sample_id}: {r.error}")
        else:
            failed[str(getattr(r, "video", r))] = None
            log(f"  cannot score: {r}")
    return Timelines({sid: v for sid, v in out.items() if set(v.scores) >= set(modes)},
                     failed_videos=sorted(failed), damaged_videos=sorted(damaged))


# --- answering --------------------------------------------------------------------------------


def _load_frames(items: list[WorkItem], video_root: str | None) -> dict[int, np.ndarray]:
    """The union of the frames these items (all of one sample) show, by position.

    From the active frame store when there is one (:func:`tempcore.run.framestore.active_store`: the
    local executor keeps the frames its scoring pass decoded, so answering decodes nothing), else
    decoded in one :func:`tempcore.video.decode.read_frames` pass. The arrays are the same either way."""
    from tempcore.benchmarks import resolve_video
    from tempcore.run.framestore import active_store, video_key
    from tempcore.video.decode import read_frames

    wanted = sorted({i for it in items for i in it.frames.indices})
    if not wanted:
        return {}
    s = items[0].sample
    path, fps = resolve_video(s, video_root), items[0].condition.fps

    def decode(positions: list[int]) -> FrameBatch:
        return read_frames(path, positions, fps, start=s.start, end=s.end, media=s.media)

    store = active_store()
    if store is not None:
        return store.frames(video_key(path, s.start, s.end, s.media, fps), wanted, decode)
    batch = decode(wanted)
    return {int(i): batch.frames[j] for j, i in enumerate(wanted)}


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
    if _grounding(item):  # "when does it happen?": duration and frame times relative to the shown span
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
    if _grounding(item):
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


def _grounding(item: WorkItem) -> bool:
    from tempcore.run.baseline import is_grounding

    return is_grounding(item.sample)


def _grounding_prediction(
    item: WorkItem, model: str, request: ModelRequest, text: str, latency_s: float, method: str, identity: Identity,
) -> Prediction:
    """A grounding response as a Prediction: ``[start, end]`` parsed, mapped back to absolute video
    time (:func:`tempcore.grounding.answer.crop_of`; a crop condition's spans), scored against the sample's windows;
    ``correct`` = IoU >= 0.5; a response without an interval is a parse failure (never an answer)."""
    from tempcore.grounding.answer import crop_of, score_grounding_response
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


def prepare_unit(
    model_name: str,
    unit: Sequence[WorkItem],
    *,
    video_root: str | None,
    method: str = "generate",
    template: str = "default",
    noframe_size: int = 384,
) -> Iterator[Prepared | Answered]:
    """The requests of one unit (items of one sample whose frames fit in memory together), in
    item order within each kind: visual-option items first (their requests are built from their
    own metadata, :func:`tempcore.run.visual.visual_request`), then the others (asked with
    ``method``), then grounding items (always generated, parsed as ``[start, end]``).

    The unit's frames are decoded in one pass. Frames that fail to decode fail only the items that
    show them (each a Failure ``frames: ...``, yielded as an :class:`Answered` with
    ``asked=False``, without a model call); a visual item whose request cannot be built is a
    Failure ``visual options: ...`` the same way. The no-frame items of the unit are still asked."""
    from tempcore.run.visual import VISUAL_STRATEGY, visual_request

    visual = [it for it in unit if it.condition.strategy == VISUAL_STRATEGY]
    for it in visual:
        try:
            req, shown = visual_request(it, video_root)
        except (TempcoreError, OSError, KeyError, ValueError) as exc:
            fail = Failure(it.sample.benchmark, it.sample.sample_id, model_name, it.condition.key,
                           f"visual options: {exc}")
            yield Answered((it,), (fail,), asked=False)
            continue
        yield Prepared(shown, req, method)
    todo = [it for it in unit if it.condition.strategy != VISUAL_STRATEGY]
    framed = [it for it in todo if not it.frames.grey and it.frames.indices]
    frames: dict[int, np.ndarray] = {}
    if framed:
        try:
            frames = _own(_load_frames(framed, video_root))
        except TempcoreError as exc:
            fails = tuple(Failure(it.sample.benchmark, it.sample.sample_id, model_name, it.condition.key,
                                  f"frames: {exc}") for it in framed)
            yield Answered(tuple(framed), fails, asked=False)
            failed_ids = {id(it) for it in framed}
            todo = [it for it in todo if id(it) not in failed_ids]
    # grounding items have no options to score: they are always generated (and parsed as [start, end])
    for it in [it for it in todo if not _grounding(it)]:
        yield Prepared(it, _request(it, frames, template, noframe_size), method)
    for it in [it for it in todo if _grounding(it)]:
        yield Prepared(it, _request(it, frames, template, noframe_size), "generate")


def _ask(model: Model, batch: Sequence[Prepared], identity: Identity | None) -> Answered:
    """One ``model.answer`` call for ``batch`` (one method), as results in batch order."""
    how = batch[0].method
    requests = [p.request for p in batch]
    with profiling.section(f"answer {model.name}"):
        responses = model.answer(requests, method=how)
    if len(responses) != len(requests):
        raise RunError(f"model {model.name} returned {len(responses)} responses for {len(requests)} requests")
    return Answered(tuple(p.item for p in batch), tuple(to_prediction(p.item, model.name, p.request, resp, how, identity)
                                                       for p, resp in zip(batch, responses)))


def answer_unit(
    model: Model,
    unit: Sequence[WorkItem],
    *,
    video_root: str | None,
    method: str = "generate",
    template: str = "default",
    noframe_size: int = 384,
    request_batch: int = 32,
    identity: Identity | None = None,
) -> Iterator[Answered]:
    """Answer one unit on its own (the Ray executor's step): its requests
    (:func:`prepare_unit`), asked in batches of ``request_batch`` per method, each batch's results
    yielded. A model that returns a different number of responses than requests raises
    :class:`RunError`."""
    step = max(request_batch, 1)
    groups: dict[str, list[Prepared]] = {}
    for p in prepare_unit(model.name, unit, video_root=video_root, method=method, template=template,
                          noframe_size=noframe_size):
        if isinstance(p, Answered):
            yield p
        else:
            groups.setdefault(p.method, []).append(p)
    for group in groups.values():
        for start in range(0, len(group), step):
            yield _ask(model, group[start:start + step], identity)


class ConcurrentModel(Protocol):
    """A model that takes requests one at a time and answers them concurrently (the HTTP client,
    :class:`tempcore.models.openai_http.OpenAIChatModel`): ``submit`` returns at once with a future
    of the response; at most ``concurrency`` requests are in flight inside the model."""

    name: str
    concurrency: int

    def submit(self, request: ModelRequest, *, method: str = "generate") -> Future[ModelResponse]: ...


def stream_window(model: Model) -> int | None:
    """How many submitted requests the stream keeps outstanding for a concurrent model
    (``2 x concurrency``: the ``concurrency`` in flight and as many queued inside the model, so a
    slot that frees is refilled at once, also while the runner decodes the next sample's frames);
    ``None`` for a model that has no ``submit`` (answered in batches)."""
    submit = getattr(model, "submit", None)
    concurrency = getattr(model, "concurrency", None)
    if not callable(submit) or not isinstance(concurrency, int) or concurrency < 1:
        return None
    return 2 * concurrency


def answer_stream(
    model: Model,
    units: Iterable[Sequence[WorkItem]],
    *,
    video_root_of: Mapping[str, str | None],
    method: str = "generate",
    template: str = "default",
    noframe_size: int = 384,
    request_batch: int = 32,
    identity: Identity | None = None,
    decoders: int | None = None,
    flush_after: Container[int] = (),
) -> Iterator[Answered]:
    """Answer the items of ``units`` as one bounded stream of requests across samples and
    conditions, yielding results as they complete (so the caller commits them as they come).

    * A concurrent model (one with ``submit`` and ``concurrency``: the HTTP backend) gets up to
      :func:`stream_window` requests outstanding at any time, whatever sample or condition they
      belong to: a slow request (a timeout, a backoff chain) holds its own slot only, and the
      next requests, of this sample or the next ones, fill the others. Completed results are
      yielded together (one commit) once ``window // 2`` have gathered or the oldest has waited
      :data:`FLUSH_S` (0.25 s), in completion order. With the window full the stream sleeps until
      ``concurrency // 4`` answers are in and refills their slots in one burst; the requests
      queued inside the model keep its slots busy meanwhile, also while the caller commits.
    * Any other model (batched local models: ``hf``, ``hf-text``, ``vllm``, the world's zoo) is
      called with batches of ``request_batch`` requests of one method formed across samples (a
      sample's last few requests wait for the next sample's, rather than being sent short); the
      model splits a call into its own ``batch_size``. The last partial batch of each method is
      sent at the end, and after each unit whose index is in ``flush_after`` (the ends of a job's
      chunks, :func:`tempcore.run.planning.answer_chunks`: no batch spans two chunks).

    Frames are decoded one unit at a time (:func:`prepare_unit`), ahead of the answers, and each
    request keeps only the frames it shows, so at most ``request_batch`` (batched) or the window
    (concurrent) requests' frames are held at once, besides the units being decoded. Units are
    decoded ahead of the answers by ``decoders`` threads (default: up to 4, no more than the
    machine's cores), at most ``decoders + 1`` units ahead (each within ``max_frames_in_memory``)
    and handed on in unit order, so the
    decoding of the next samples overlaps the model's work (the decoder releases the GIL).
    Results do not depend on the order in which answers complete: every result is keyed by its item."""
    def prepare(unit: Sequence[WorkItem]) -> list[Prepared | Answered]:
        return list(prepare_unit(model.name, unit, video_root=video_root_of.get(unit[0].sample.benchmark),
                                 method=method, template=template, noframe_size=noframe_size))

    def marked() -> Iterator[Prepared | Answered | object]:
        threads = decoders or default_decoders()
        for i, ready in enumerate(ordered_map(prepare, units, threads=threads, ahead=threads + 1,
                                              name="tempcore-decode")):
            yield from ready
            if i in flush_after:
                yield _CHUNK_END

    prepared = marked()
    window = stream_window(model)
    if window is None:
        yield from _stream_batched(model, prepared, max(request_batch, 1), identity)
    else:
        yield from _stream_concurrent(model, prepared, window, identity)  # type: ignore[arg-type]


def default_decoders() -> int:
    """Decoding threads of a stream: the machine's cores, at most 4 (at least 1)."""
    return max(1, min(4, os.cpu_count() or 1))


_CHUNK_END = object()
"""In a stream of prepared requests: a chunk of the job ended (a batched stream sends its partial
batches; a concurrent one ignores it)."""


def _stream_batched(
    model: Model, prepared: Iterable[Prepared | Answered | object], size: int, identity: Identity | None,
) -> Iterator[Answered]:
    pending: dict[str, list[Prepared]] = {}
    for p in prepared:
        if isinstance(p, Answered):
            yield p
            continue
        if not isinstance(p, Prepared):  # _CHUNK_END
            for group in pending.values():
                if group:
                    yield _ask(model, group, identity)
            pending = {}
            continue
        group = pending.setdefault(p.method, [])
        group.append(p)
        if len(group) >= size:
            yield _ask(model, group, identity)
            pending[p.method] = []
    for group in pending.values():
        if group:
            yield _ask(model, group, identity)


#: a concurrent stream hands on (commits) its completed results at least this often (seconds)
FLUSH_S = 0.25


class _Completions:
    """Completed futures, handed from the model's threads (done callbacks) to the stream.

    :meth:`take` waits until ``want`` have gathered (or a timeout), and :meth:`put` wakes the
    waiter only then, so the stream wakes once per burst of answers, not once per answer: each
    wake-up takes the GIL from the model's own threads (the HTTP client's event loop), which on
    a busy machine slows every request in flight."""

    def __init__(self) -> None:
        self._ready = threading.Condition(threading.Lock())
        self._done: list[Future[ModelResponse]] = []
        self._want = 1

    def put(self, fut: Future[ModelResponse]) -> None:
        with self._ready:
            self._done.append(fut)
            if len(self._done) >= self._want:
                self._ready.notify()

    def take(self, want: int = 0, timeout: float | None = None) -> list[Future[ModelResponse]]:
        """The completed futures; with ``want``, first wait until that many have completed, at
        most ``timeout`` seconds (``None``: no limit)."""
        with self._ready:
            if len(self._done) < want:
                self._want = want
                self._ready.wait_for(lambda: len(self._done) >= self._want, timeout)
            out, self._done = self._done, []
            return out


def _stream_concurrent(
    model: ConcurrentModel, prepared: Iterable[Prepared | Answered | object], window: int,
    identity: Identity | None,
) -> Iterator[Answered]:
    """The concurrent stream: submit while fewer than ``window`` are outstanding; completed results
    are collected as they come and handed on together (one commit) once ``window // 2`` have
    gathered or the oldest has waited :data:`FLUSH_S` (a commit per answer would cost the run a
    store transaction per request), and at the end. A group is handed on once the freed slots are
    refilled (the window full again, unless its oldest is overdue): while the caller commits, the
    ``concurrency`` requests queued inside the model keep its slots busy (for a commit shorter
    than the model's latency); handing it on first would leave the freed slots empty meanwhile.

    With the window full, the stream sleeps until ``window // 8`` (``concurrency // 4``) answers
    have completed, then refills those slots in one burst (one wake-up of the model's loop,
    :meth:`~tempcore.models.openai_http.OpenAIChatModel.submit`): the other ``concurrency``
    requests queued inside the model keep every slot busy meanwhile, so the model never waits
    for the stream."""
    done = _Completions()
    outstanding: dict[Future[ModelResponse], Prepared] = {}
    items: list[WorkItem] = []
    results: list[Prediction | Failure] = []
    oldest = 0.0
    flush_n = max(1, window // 2)
    burst = max(1, window // 8)

    def take(fut: Future[ModelResponse]) -> None:
        nonlocal oldest
        p = outstanding.pop(fut)
        try:
            response = fut.result()
        except Exception as exc:  # noqa: BLE001 - a broken call fails its own item, never the run
            from tempcore.models import ModelResponse

            response = ModelResponse.failure(f"unexpected {type(exc).__name__}: {exc}", attempts=0)
        if not items:
            oldest = time.monotonic()
        items.append(p.item)
        results.append(to_prediction(p.item, model.name, p.request, response, p.method, identity))

    def collect(block: bool) -> None:
        """Take the completed results; with ``block``, first wait for a burst of them (at most
        until the oldest collected result is due)."""
        if not block:
            ready = done.take()
        else:
            want = min(burst, len(outstanding))
            ready = done.take(want, max(0.0, FLUSH_S - (time.monotonic() - oldest)) if items else None)
        for fut in ready:
            take(fut)

    def overdue() -> bool:
        return bool(items) and time.monotonic() - oldest >= FLUSH_S

    def due(final: bool = False) -> bool:
        return bool(items) and (final or len(items) >= flush_n or overdue())

    def flush() -> Answered:
        out = Answered(tuple(items), tuple(results))
        items.clear()
        results.clear()
        return out

    try:
        for p in prepared:
            if isinstance(p, Answered):
                yield p
                continue
            if not isinstance(p, Prepared):  # _CHUNK_END: concurrent requests share no batch
                continue
            while len(outstanding) >= window:
                if due():  # handed on with the window full: its queue keeps the slots busy meanwhile
                    yield flush()
                collect(block=True)
            fut = model.submit(p.request, method=p.method)
            outstanding[fut] = p
            fut.add_done_callback(done.put)
            collect(block=False)
            if due() and (len(outstanding) >= window or overdue()):
                yield flush()
        while outstanding:
            collect(block=True)
            if due():
                yield flush()
        if due(final=True):
            yield flush()
    finally:  # stopped early (an error, a closed generator): nothing is left running in the model
        for fut in outstanding:
            fut.cancel()


def commit(
    store: RunStore, run_id: str, answered: Answered, summary: ModelSummary,
    replace: set[Key] | frozenset[Key] = frozenset(),
) -> None:
    """Write one batch's results: new predictions (first write wins: a key another writer stored
    meanwhile counts as ``discarded``), replaced ones (keys in ``replace``, overwritten) and
    failures (the failures table); update ``summary``."""
    fresh: list[Prediction] = []
    again: list[Prediction] = []
    fails: list[Failure] = []
    for out in answered.results:
        if isinstance(out, Failure):
            fails.append(out)
        else:
            (again if out.key in replace else fresh).append(out)
    if answered.asked:
        written = store.put(fresh, run_id)
        replaced = store.put(again, run_id, overwrite=True) if again else 0
    else:
        written = replaced = 0
    if fails:
        store.put_failures(fails, run_id)
    summary.done += written + replaced
    summary.replaced += replaced
    summary.discarded += len(fresh) - written
    summary.failed += len(fails)
    summary.parse_failures += sum(p.parse_error is not None or (p.answer is None and p.pred_start is None)
                                  for p in (*fresh, *again))
    summary.correct += sum(p.correct for p in (*fresh, *again))


def bar(total: int, desc: str, enabled: bool) -> Any:
    """A tqdm bar on stderr (disabled with progress off)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, file=sys.stderr, leave=False, dynamic_ncols=True)


def close_bar(b: Any) -> None:
    """Show the final count before closing: tqdm redraws at most every ``mininterval`` seconds, so
    without this the last state shown stops short of the total."""
    b.refresh()
    b.close()


class Progress:
    """A model's progress bar: items done, with the count per strategy as postfix."""

    def __init__(self, total: int, name: str, enabled: bool) -> None:
        self.bar = bar(total, name, enabled)
        self.per_condition: Counter[str] = Counter()

    def update(self, answered: Answered) -> None:
        if answered.asked:
            for it in answered.items:
                self.per_condition[it.condition.strategy] += 1
        self.bar.update(len(answered.items))
        if answered.asked:
            self.bar.set_postfix_str(" ".join(f"{k}:{v}" for k, v in sorted(self.per_condition.items())),
                                     refresh=False)

    def close(self) -> None:
        close_bar(self.bar)


def answer_items(
    model: Model,
    items: list[WorkItem],
    store: RunStore,
    run_id: str,
    *,
    video_root_of: Mapping[str, str | None],
    method: str = "generate",
    template: str = "default",
    noframe_size: int = 384,
    max_frames_in_memory: int = 512,
    request_batch: int = 32,
    progress: bool = True,
    summary: ModelSummary | None = None,
    identity: Identity | None = None,
    replace: set[Key] | frozenset[Key] = frozenset(),
) -> ModelSummary:
    """Answer ``items`` with ``model`` in this process (:func:`answer_stream`) and commit the
    results to ``store`` as they complete, on a writer thread: while one group is written, this
    thread keeps the stream going (a concurrent model's freed slots are refilled meanwhile); the
    next group waits until the previous one is stored, and a failed commit raises here.

    A batched model's batches are formed within the job's chunks
    (:func:`tempcore.run.planning.answer_chunks`), as when several threads share the job
    (``parallel_models``), so its answers are the same either way.

    Keys in ``replace`` (stored rows whose fingerprints changed, ``--recompute``) are overwritten;
    every other key keeps the first write (a key another writer stored meanwhile counts as
    ``discarded``, not ``done``). No-frame requests need no decoding, so a video that fails to decode
    fails only the requests that show its frames.
    """
    summary = summary or ModelSummary(model.name)
    shown = Progress(len(items), model.name, progress)
    started = time.perf_counter()
    chunks = answer_chunks(answer_units(items, max_frames_in_memory), request_batch)
    ends, n = set(), 0
    for chunk in chunks:
        n += len(chunk)
        ends.add(n - 1)
    units = [unit for chunk in chunks for unit in chunk]

    def store_group(answered: Answered) -> None:
        commit(store, run_id, answered, summary, replace)
        shown.update(answered)

    _stream_to_store(answer_stream(model, units, video_root_of=video_root_of, method=method, template=template,
                                   noframe_size=noframe_size, request_batch=request_batch, identity=identity,
                                   flush_after=ends), store_group, None)
    shown.close()
    summary.seconds += time.perf_counter() - started
    return summary


def _stream_to_store(
    stream: Iterator[Answered], store_group: Callable[[Answered], None], stop: threading.Event | None,
) -> None:
    """``store_group`` each group of ``stream`` on one writer thread, while this thread goes on
    streaming (refilling the model's slots, collecting the next group); at most one group is being
    written at a time: the next one waits for it, so a crash loses what is in flight plus one
    group (on an error, leaving the ``with`` waits until the group handed over is written).
    A set ``stop`` ends the stream after the group in hand."""
    from concurrent.futures import ThreadPoolExecutor

    writing: Future[None] | None = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tempcore-commit") as writer:
        for answered in stream:
            if writing is not None:
                writing.result()  # the previous group is stored (its error raised here)
            writing = writer.submit(in_context(store_group), answered)
            if stop is not None and stop.is_set():
                break
        if writing is not None:
            writing.result()


def load_quietly(factory: ModelFactory, spec: ModelSpec, progress: bool) -> Model:
    """``factory(spec)``, timed as ``load models`` (:mod:`tempcore.profiling`); with progress off,
    transformers' "Loading weights" bars are off too (not for a served model, whose spec does not
    ``loads_weights``: importing transformers only to silence its bars would cost seconds)."""
    with profiling.section("load models"):
        if progress or not spec.loads_weights:
            return factory(spec)
        from tempcore.encoders.hf import progress_bars

        with progress_bars(False):
            return factory(spec)


class _SharedJob:
    """One model's job while several threads answer (:meth:`LocalExecutor.answer` with
    ``parallel_models``): its chunks (known once its first thread has loaded the model: a
    concurrent model's job is one chunk, taken by one thread), the next chunk to hand out, the
    chunks in work, its progress bar; ``lock`` guards its summary and bar (two threads commit)."""

    def __init__(self, job: ModelJob) -> None:
        self.job = job
        self.chunks: list[list[Sequence[WorkItem]]] | None = None
        self.next = 0
        self.working = 0
        self.shown: Progress | None = None
        self.started = 0.0
        self.lock = threading.Lock()

    def left(self) -> int:
        return 0 if self.chunks is None else len(self.chunks) - self.next


class _Scheduler:
    """Hands out (job, chunk) to the answering threads. A thread keeps to the model it holds while
    that job has chunks left; then it starts a job nobody has started (in job order); then it
    joins the started job with the most chunks left (loading its own copy of that model), so the
    threads finish together instead of one waiting on the slowest model. A job's chunks are known
    once its first thread has loaded the model: meanwhile a thread with nothing else to do waits."""

    def __init__(self, jobs: Sequence[ModelJob]) -> None:
        self.jobs = [_SharedJob(job) for job in jobs]
        self.ready = threading.Condition(threading.Lock())
        self.unstarted = list(self.jobs)
        #: set by :meth:`stop`; the answering threads' streams stop after their current group
        self.stopped = threading.Event()

    def take(self, held: _SharedJob | None) -> tuple[_SharedJob, int | None] | None:
        """The next (job, chunk index); chunk ``None``: a job to start (the caller loads its model,
        then calls :meth:`start`); ``None``: nothing left (or :meth:`stop` was called)."""
        with self.ready:
            while not self.stopped.is_set():
                if held is not None and held.left():
                    return held, self._hand(held)
                if self.unstarted:
                    return self.unstarted.pop(0), None
                best = max((j for j in self.jobs if j.left()), key=lambda j: j.left(), default=None)
                if best is not None:
                    return best, self._hand(best)
                if all(j.chunks is not None for j in self.jobs):
                    return None
                self.ready.wait()  # a job is being started: its chunks may be joined
            return None

    def start(self, shared: _SharedJob, chunks: list[list[Sequence[WorkItem]]]) -> int | None:
        with self.ready:
            shared.chunks = chunks
            self.ready.notify_all()
            return self._hand(shared) if chunks else None

    def stop(self) -> None:
        """No more chunks for anyone (a thread failed, or the run was interrupted)."""
        with self.ready:
            self.stopped.set()
            self.ready.notify_all()

    def _hand(self, shared: _SharedJob) -> int:
        shared.next += 1
        shared.working += 1
        return shared.next - 1

    def finish(self, shared: _SharedJob) -> bool:
        """One chunk of ``shared`` done; whether it was the job's last."""
        with self.ready:
            shared.working -= 1
            return shared.working == 0 and not shared.left()


def _answer_job(
    job: ModelJob, store: RunStore, run_id: str, *, factory: ModelFactory, settings: AnswerSettings,
    log: Callable[[str], None], progress: bool,
) -> None:
    """Load ``job``'s model, answer its items (:func:`answer_items`) and close the model."""
    log(job.describe())
    model = load_quietly(factory, job.spec, progress)
    try:
        answer_items(model, job.items, store, run_id, video_root_of=settings.video_root_of,
                     method=job.method, template=job.template, noframe_size=settings.noframe_size,
                     max_frames_in_memory=settings.max_frames_in_memory,
                     request_batch=settings.request_batch, progress=progress, summary=job.summary,
                     identity=job.identity, replace=job.replace)
    finally:
        model.close()


def _backends(models: Iterable[Mapping[str, Any]]) -> list[str]:
    """The backends of a run's model entries that load weights (what its model workers import first);
    an entry that does not resolve is left to the configuration check."""
    from tempcore.models.registry import as_spec

    found = set()
    for entry in models:
        try:
            spec = as_spec({k: v for k, v in entry.items() if k != "method"})
        except Exception:  # noqa: BLE001 - reported by the run's configuration check, not here
            continue
        if spec.loads_weights:
            found.add(spec.backend)
    return sorted(found)


class LocalExecutor:
    """The in-process executor: scores frames with one encoder, then answers the models' jobs.

    By default one model after the other: each model is loaded once (``factory``), answers its job,
    and is closed before the next one is loaded, so one model's weights are in memory at a time.

    With ``parallel_models: N`` (:class:`AnswerSettings`), N threads answer: each holds one model
    (so up to N models' weights are in memory) and answers chunks of its job
    (:func:`tempcore.run.planning.answer_chunks`); a thread whose job is done starts the next job
    nobody has started, and at the end joins the job with the most chunks left with a copy of its
    own (:class:`_Scheduler`), so the threads finish together. A batched model's batches are
    formed within chunks either way, so a model's answers are the same whatever N; a concurrent
    (served) model's job is one chunk, kept by one thread. Models are loaded one at a time (a
    lock: transformers patches global initialisers while it loads). Where it pays: several small
    local models on a CPU with more cores than one model keeps busy (torch releases the GIL in
    its kernels; set torch's threads so that N x threads fits the cores), or several served
    models (their requests wait on the network). When a thread fails, the others stop after their
    current group (committed), no further chunk is started, and the first error is raised; an
    interrupt stops them the same way. The runner hands an early-stopped oracle's waves over one
    model at a time (each model kept loaded across its waves), so those go one after the other.

    With ``model_processes`` as well, each answering thread loads its models in a worker process
    of its own (:class:`tempcore.models.hosted.ModelHost`, with the run's factory), so that models
    answering side by side do not share this process's interpreter lock; served models (a spec
    that does not ``loads_weights``) stay here. The workers start in :meth:`prepare`, importing
    the models' backends while this process scores the frames, and end in :meth:`close`."""

    name = "local"

    def __init__(
        self, encoder: FrameTextEncoder | None = None, *, keep_frames: bool = True,
        scoring_workers: int | None = None,
    ) -> None:
        self.encoder = encoder
        #: videos scored at once (default :data:`SCORING_WORKERS`, at most the cores)
        self.scoring_workers = scoring_workers or max(1, min(SCORING_WORKERS, os.cpu_count() or 1))
        #: keep the frames answering shows from the scoring pass (one decode per video,
        #: :mod:`tempcore.run.framestore`); ``False`` decodes them again for every unit and model
        self.keep_frames = keep_frames
        self.frames: FrameStore | None = None
        #: the model worker processes (``model_processes``), one per answering thread
        self.hosts: list[ModelHost] = []

    def prepare(
        self, cfg: RunConfig, *, encoder: FrameTextEncoder | None, progress: bool,
    ) -> FrameTextEncoder | None:
        if encoder is not None:
            self.encoder = encoder
        if cfg.model_processes and cfg.parallel_models > 1:
            warm = _backends(cfg.models)
            if warm:  # none when every model is served
                self._start_hosts(min(cfg.parallel_models, len(cfg.models)), warm)
        if cfg.needs_encoder and self.encoder is None:
            from tempcore.encoders import load_encoder
            from tempcore.encoders.hf import progress_bars

            with progress_bars(progress):  # --no-progress also hides transformers' "Loading weights"
                self.encoder = load_encoder(cfg.encoder, **cfg.encoder_options)
        return self.encoder

    def timelines(
        self, samples: Sequence[Sample], modes: Sequence[str], *, cfg: RunConfig, cache: EmbeddingCache | None,
        video_root: str | None, label: str, log: Callable[[str], None], progress: bool,
    ) -> Timelines:
        keep = None
        if self.keep_frames:
            from functools import partial

            from tempcore.run.framestore import FrameStore, RunKeeper, needed_positions, use_store

            if self.frames is None:
                self.frames = FrameStore()
                use_store(self.frames)  # read by _load_frames while answering (this thread)
            keep = RunKeeper(self.frames, partial(needed_positions, cfg), modes, cfg.fps)
        b = bar(len(samples), f"{label}: frames", progress)
        try:
            with profiling.section("score frames" if modes else "probe frames"):
                events = frame_events(samples, modes, fps=cfg.fps, encoder=self.encoder if modes else None,
                                      cache=cache, video_root=video_root, on_sample=lambda _s: b.update(1), keep=keep,
                                      workers=self.scoring_workers)
                return collect_timelines(events, modes, log)
        finally:
            close_bar(b)

    def answer(
        self, jobs: Sequence[ModelJob], store: RunStore, run_id: str, *, factory: ModelFactory,
        settings: AnswerSettings, log: Callable[[str], None], progress: bool,
    ) -> None:
        workers = min(max(1, settings.parallel_models), len(jobs))
        if workers <= 1:
            for job in jobs:
                _answer_job(job, store, run_id, factory=factory, settings=settings, log=log, progress=progress)
            return
        from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

        scheduler = _Scheduler(jobs)
        loading, saying = threading.Lock(), threading.Lock()
        decoders = max(1, default_decoders() // workers)
        if settings.model_processes and any(job.spec.loads_weights for job in jobs):
            self._start_hosts(workers, sorted({job.spec.backend for job in jobs if job.spec.loads_weights}))

        def load(slot: int, spec: ModelSpec) -> Model:
            if settings.model_processes and spec.loads_weights:
                return self.hosts[slot].load(spec, factory, quiet=not progress)
            with loading:  # transformers patches global initialisers while it loads: one at a time here
                return load_quietly(factory, spec, progress)

        def work(slot: int) -> None:
            held: _SharedJob | None = None
            model: Model | None = None
            try:
                while True:
                    task = scheduler.take(held)
                    if task is None:
                        return
                    shared, index = task
                    if shared is not held:
                        if model is not None:
                            model.close()
                            model = None
                        held = shared
                        if index is None:
                            with saying:
                                log(shared.job.describe())
                        model = load(slot, shared.job.spec)
                    assert model is not None
                    if index is None:
                        units: list[Sequence[WorkItem]] = list(
                            answer_units(shared.job.items, settings.max_frames_in_memory))
                        chunks = ([units] if stream_window(model) is not None
                                  else answer_chunks(units, settings.request_batch))
                        shared.shown = Progress(len(shared.job.items), model.name, progress)
                        shared.started = time.perf_counter()
                        index = scheduler.start(shared, chunks)
                        if index is None:
                            self._finish(shared)
                            continue
                    self._answer_chunk(model, shared, index, store, run_id, settings, decoders, scheduler.stopped)
                    if scheduler.finish(shared):
                        self._finish(shared)
            except BaseException:
                scheduler.stop()  # the others stop too; wakes a thread waiting for the chunks of a job this one was starting
                raise
            finally:
                if model is not None:
                    model.close()

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tempcore-model") as pool:
            futures = [pool.submit(in_context(work), slot) for slot in range(workers)]
            try:
                wait(futures, return_when=FIRST_EXCEPTION)
            finally:  # an error in one thread, or an interrupt here: stop the others, then wait for them
                if not all(f.done() and f.exception() is None for f in futures):
                    scheduler.stop()
        errors = [f.exception() for f in futures if f.exception() is not None]
        if errors:
            raise errors[0]  # type: ignore[misc]

    def _start_hosts(self, n: int, warm: Sequence[str]) -> None:
        """Have at least ``n`` model worker processes (started now; ``warm``: backends they import)."""
        from tempcore.models.hosted import ModelHost

        while len(self.hosts) < n:
            self.hosts.append(ModelHost(warm=warm))

    @staticmethod
    def _answer_chunk(
        model: Model, shared: _SharedJob, index: int, store: RunStore, run_id: str, settings: AnswerSettings,
        decoders: int, stop: threading.Event,
    ) -> None:
        job = shared.job
        assert shared.chunks is not None and shared.shown is not None
        shown = shared.shown

        def store_group(answered: Answered) -> None:
            with shared.lock:
                commit(store, run_id, answered, job.summary, job.replace)
                shown.update(answered)

        _stream_to_store(answer_stream(model, shared.chunks[index], video_root_of=settings.video_root_of,
                                       method=job.method, template=job.template,
                                       noframe_size=settings.noframe_size, request_batch=settings.request_batch,
                                       identity=job.identity, decoders=decoders), store_group, stop)

    @staticmethod
    def _finish(shared: _SharedJob) -> None:
        with shared.lock:
            if shared.shown is not None:
                shared.shown.close()
            shared.job.summary.seconds += time.perf_counter() - shared.started

    def close(self) -> None:
        """Drop the kept frames and end the model worker processes (the encoder belongs to the caller
        or to this run's process)."""
        hosts, self.hosts = self.hosts, []
        if hosts:
            from tempcore.models.hosted import close_all

            close_all(hosts)
        if self.frames is not None:
            from tempcore.run.framestore import active_store, use_store

            if active_store() is self.frames:
                use_store(None)
            self.frames.close()
            self.frames = None
