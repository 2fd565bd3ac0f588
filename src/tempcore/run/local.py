"""The local executor: frames scored and work items answered in this process, the models of a run
scheduled over ``parallel_models`` answering threads (optionally each in a worker process of its
own, ``model_processes``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tempcore import profiling
from tempcore.records import Sample
from tempcore.run.ordered import in_context
from tempcore.run.planning import (
    Timelines,
    WorkItem,
    answer_chunks,
    answer_units,
)

if TYPE_CHECKING:
    from tempcore.encoders.base import FrameTextEncoder
    from tempcore.encoders.cache import EmbeddingCache
    from tempcore.models.base import Model, ModelSpec
    from tempcore.models.hosted import ModelHost
    from tempcore.run.config import RunConfig
    from tempcore.run.framestore import FrameStore
    from tempcore.run.store import RunStore


from tempcore.models.hosted import load_quietly
from tempcore.run.answering import (
    Progress,
    _stream_to_store,
    answer_items,
    answer_stream,
    bar,
    close_bar,
    commit,
    stream_window,
)
from tempcore.run.executor import AnswerSettings, ModelFactory, ModelJob
from tempcore.run.frames import collect_timelines, default_decoders, frame_events
from tempcore.run.predictions import Answered

SCORING_WORKERS = 2


"""Videos :class:`LocalExecutor` scores at once (at most the cores): decoding, the image processor
and the encoder each hold the GIL for part of a frame only, so a second video keeps a second core
busy (on 2 cores: the world's 48 x 48 videos 1.36x, 640 x 360 clips 1.26x faster;
``benchmarks/scoring_workers.py``)."""


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
        self._expect_visual(jobs, settings)
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

    def _expect_visual(self, jobs: Sequence[ModelJob], settings: AnswerSettings) -> None:
        """With ``keep_frames``: announce the frames the jobs' visual-option items show, so that each
        of their videos is decoded once for every model (:func:`tempcore.run.visual.expect_visual`)."""
        if not self.keep_frames:
            return
        from tempcore.run.visual import VISUAL_STRATEGY, expect_visual

        visual = [it for job in jobs for it in job.items if it.condition.strategy == VISUAL_STRATEGY]
        if not visual:
            return
        if self.frames is None:
            from tempcore.run.framestore import FrameStore, use_store

            self.frames = FrameStore()
            use_store(self.frames)  # read by tempcore.run.visual.visual_request while answering (this thread)
        expect_visual(self.frames, visual, settings.video_root_of)

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


__all__ = [
    "LocalExecutor",
    "SCORING_WORKERS",
]
