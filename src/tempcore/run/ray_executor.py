"""The Ray executor: the plan of a local run, scored and answered by Ray actors.

``tempcore run --config C --executor ray [--ray-address auto|HOST:PORT]`` (or ``executor: ray``)
runs the same plan as a local run (:mod:`tempcore.run.planning`); only where the two heavy steps
happen changes:

- **frame scoring**: calls over whole videos sent to *frame actors* that each load the encoder
  once (``ray.encoder``); one call takes the videos the local scorer scores together (their
  questions fill one text batch, :data:`TEXT_BATCH`), so every text embedding is bit-identical to a
  local run's;
- **answering**: each model gets ``replicas`` *model actors* (``ray.models.<name>``, else
  ``ray.model_defaults``), each loading its model once; a call is consecutive units until they hold
  ``request_batch`` items (:func:`_next_call`), answered as a local run answers its job
  (:func:`tempcore.run.answering.answer_stream`).

The driver alone writes the run store and commits each call's results as they arrive, with at most
``max_in_flight`` calls per actor outstanding: a crash loses at most what was in flight, and a rerun
resumes from the store. Faults: Ray restarts a dead actor (``max_restarts``) and retries its call
(``max_task_retries``); a call that still fails is split into its units, each sent again alone, and a
unit that has failed ``max_attempts`` times goes to the failures table (never into predictions).
A lost node (:mod:`tempcore.run.ray_placement`): every actor that reserves resources has a placement
group of its own; a step runs on the actors placed within ``placement_timeout_s`` (fewer: logged;
none: :class:`~tempcore.run.ray_placement.PlacementError`); calls lost with a node are sent again.
Actors are worker processes reused across models (the next job with the same resources loads its
model into them). Ray is imported only when this executor starts. The choices and their reasons are
in ``docs/design/run.md``.
"""
from __future__ import annotations

import functools
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tempcore.models.hosted import load_quietly
from tempcore.records import Failure, Sample
from tempcore.run.answering import Progress, answer_stream, bar, close_bar, commit
from tempcore.run.executor import AnswerSettings, ModelFactory, ModelJob
from tempcore.run.frames import collect_timelines, frame_events
from tempcore.run.options import ActorResources, RayOptions
from tempcore.run.planning import RunError, Timelines, WorkItem, answer_units
from tempcore.run.predictions import Answered
from tempcore.run.ray_placement import TICK as _TICK
from tempcore.run.ray_placement import Placed, Placement, PlacementError
from tempcore.run.ray_placement import describe_error as _describe

if TYPE_CHECKING:
    from tempcore.encoders.base import FrameTextEncoder
    from tempcore.encoders.cache import EmbeddingCache
    from tempcore.models.base import Model, ModelSpec
    from tempcore.run.config import RunConfig
    from tempcore.run.executor import Identity
    from tempcore.run.frame_scoring import FrameScores, ScoreFailure
    from tempcore.run.store import RunStore

__all__ = ["ActorResources", "PendingEncoder", "PlacementError", "RayExecutor", "RayOptions", "RemoteEncoder"]

_log = logging.getLogger(__name__)

#: texts per encoder call in :func:`tempcore.run.frame_scoring.score_samples` (its ``text_batch`` default)
TEXT_BATCH = 256


# --- options ----------------------------------------------------------------------------------


def _release_memory() -> None:
    """After a model or encoder is dropped on a GPU: collect it (tensors held in reference cycles)
    and hand torch's cached GPU memory back. On CPU reference counting frees it (a full collection
    per model, measured ~0.2 s on the loaded 2-core test machine, is not paid)."""
    import gc
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        gc.collect()
        torch.cuda.empty_cache()


class _Worker:
    """One Ray worker process: holds the encoder (frame scoring) or one model (answering), never
    both, loading what a call names when it does not hold it yet.

    The executor reuses a worker across jobs whose resources match (the frame actors become the
    first model's actors, one model's actors the next model's): a model is still loaded once per
    actor, but the process, its imports (torch, tempcore) and its CUDA context are paid once per
    run rather than once per model. Loading on demand also makes Ray's restarts transparent: a
    restarted actor (``__init__`` again, holding nothing) loads the model its retried call names."""

    def __init__(self, cache_root: str | None) -> None:
        from tempcore.encoders.cache import EmbeddingCache

        self.cache = EmbeddingCache(cache_root) if cache_root is not None else None
        self.encoder: Any = None
        self.model: Model | None = None
        self.held: str | None = None  # the token of what is loaded: "encoder" or a model job's token

    def pid(self) -> int:
        import os

        return os.getpid()

    def release(self) -> None:
        """Close the model / drop the encoder this worker holds."""
        model, self.model, self.encoder, self.held = self.model, None, None, None
        if model is not None:
            model.close()
        _release_memory()

    def use_encoder(self, encoding: tuple[Any, str | None, Mapping[str, Any]]) -> tuple[str, str] | None:
        """Hold the encoder (``encoding``: the encoder shipped by the driver, else its name and
        options to load it); returns its name and fingerprint."""
        encoder, name, options = encoding
        if self.held != "encoder":
            self.release()
            if encoder is None and name is not None:
                from tempcore.encoders import load_encoder
                from tempcore.encoders.hf import progress_bars

                with progress_bars(False):
                    encoder = load_encoder(name, **dict(options))
            self.encoder, self.held = encoder, "encoder"
        if self.encoder is None:
            return None
        return str(self.encoder.name), str(self.encoder.fingerprint)

    def events(
        self, encoding: tuple[Any, str | None, Mapping[str, Any]] | None, samples: list[Sample], modes: list[str],
        fps: float | None, video_root: str | None,
    ) -> list[Any]:
        if encoding is not None:
            self.use_encoder(encoding)
        return list(frame_events(samples, modes, fps=fps, encoder=self.encoder if modes else None,
                                 cache=self.cache, video_root=video_root))

    def use_model(self, loading: tuple[str, ModelSpec, ModelFactory]) -> str:
        """Hold the model of ``loading`` (a job's token, its spec and factory), loading it once;
        returns its name."""
        token, spec, factory = loading
        if self.held != token or self.model is None:
            self.release()
            self.model, self.held = load_quietly(factory, spec, False), token
        return str(self.model.name)

    def answer(
        self, loading: tuple[str, ModelSpec, ModelFactory], units: list[list[WorkItem]],
        video_root_of: Mapping[str, str | None], method: str, template: str, noframe_size: int,
        request_batch: int, identity: Identity,
    ) -> list[Answered]:
        """Answer a call's units as the local executor answers a job (:func:`answer_stream`:
        batches of ``request_batch`` formed across the units' samples, frames decoded ahead by
        threads while the model answers); the results of the whole call, in completion order."""
        self.use_model(loading)
        assert self.model is not None
        return list(answer_stream(self.model, units, video_root_of=video_root_of, method=method, template=template,
                                  noframe_size=noframe_size, request_batch=request_batch, identity=identity))


@dataclass(frozen=True)
class RemoteEncoder:
    """The encoder the frame actors hold, as the driver knows it (name and fingerprint)."""

    name: str
    fingerprint: str


class PendingEncoder:
    """The encoder the frame actors are loading: what :meth:`RayExecutor.prepare` returns at once,
    so the driver loads and preflights the benchmarks (and hashes their videos) while the actors
    start and load it. ``name`` and ``fingerprint`` wait for the load (first use); a load that
    failed raises :class:`~tempcore.run.planning.RunError` there (frame scoring asks first)."""

    def __init__(self, wait: Callable[[], RemoteEncoder]) -> None:
        self._wait = wait

    @property
    def name(self) -> str:
        return self._wait().name

    @property
    def fingerprint(self) -> str:
        return self._wait().fingerprint


# --- the executor -----------------------------------------------------------------------------

#: the attempts of a unit split out of a failed call of several units: it is sent alone from then on
_ALONE = -1


def _next_call(queue: deque[tuple[list[WorkItem], int]], request_batch: int) -> tuple[list[list[WorkItem]], int]:
    """The units of the next call, taken from the front of ``queue``, and their attempts so far.

    A fresh unit (never tried) takes the fresh units after it until the call holds at least
    ``request_batch`` items (the choice: one call answers at least one full batch, formed across
    the samples as a local run forms it, and the per-call costs are paid per batch, not per
    sample); a unit that was tried before (a retry, or a unit split out of a failed call) goes alone."""
    unit, attempts = queue.popleft()
    if attempts != 0:
        return [unit], max(attempts, 0)
    units, n = [unit], len(unit)
    while queue and queue[0][1] == 0 and n < request_batch:
        nxt, _ = queue.popleft()
        units.append(nxt)
        n += len(nxt)
    return units, 0


def _use_model(loading: Any, actor: Any) -> Any:
    """A worker's call that loads the model of ``loading`` (its object ref)."""
    return actor.use_model.remote(loading)


def _requeue(queue: deque[Any], units: list[list[WorkItem]], attempts: int) -> None:
    """The units of a call lost with its actor's node, back at the front of ``queue``, the try not
    counted (the node's fault, not theirs): a call of several units is split (each goes alone)."""
    if len(units) > 1:
        queue.extendleft((u, _ALONE) for u in reversed(units))
    else:
        queue.appendleft((units[0], attempts))


@dataclass(eq=False)
class _Slot:
    placed: Placed
    busy: int = 0
    alive: bool = True

    @property
    def actor(self) -> Any:
        return self.placed.actor

    def free(self, cap: int, now: float) -> bool:
        return self.alive and self.busy < cap and self.placed.takes_calls(now)


@dataclass
class _Pool:
    """One model job on Ray: its actors, its queue of units, what is in flight."""

    job: ModelJob
    slots: list[_Slot]
    queue: deque[tuple[list[WorkItem], int]]
    progress: Progress
    started: float
    loading: Any  # an object ref of (token, spec, factory): what each call's worker must hold
    inflight: int = 0


class RayExecutor:
    """Runs a planned run on Ray (see the module docstring). The driver process writes the store."""

    name = "ray"

    def __init__(self, options: RayOptions | None = None, *, address: str | None = None) -> None:
        self.options = options or RayOptions()
        self.address = address if address is not None else self.options.address
        self._ray: Any = None
        self._started_ray = False
        self._frame_actors: list[Placed] = []
        self._idle: list[Placed] = []
        self._placement: Placement | None = None
        self._encoding: Any = None  # an object ref of (encoder, name, options)
        self._encoder_loads: list[Any] = []  # the frame actors' use_encoder calls (prepare)
        self._remote_encoder: RemoteEncoder | None = None
        self._jobs = 0
        self._encoder: FrameTextEncoder | None = None
        self._encoder_name: str | None = None
        self._encoder_options: dict[str, Any] = {}
        self._cache_root: str | None = None

    # lifecycle

    def _init(self) -> Any:
        if self._ray is not None:
            return self._ray
        try:
            import ray
        except ImportError as exc:
            raise RunError("the Ray executor needs ray: pip install 'tempcore[ray]' (or 'ray[default]>=2.9')") \
                from exc
        if not ray.is_initialized():
            import os

            # no address: a new local Ray for this run ("local"), not whatever cluster Ray's
            # bookkeeping last remembered on this machine; RAY_ADDRESS, when set, names the cluster
            address = self.address or (None if os.environ.get("RAY_ADDRESS") else "local")
            kwargs: dict[str, Any] = {"address": address, "include_dashboard": False}
            if self.options.runtime_env:
                kwargs["runtime_env"] = self.options.runtime_env
            try:
                ray.init(**kwargs)
            except Exception as exc:  # ConnectionError, RuntimeError, ValueError from ray.init
                where = self.address or "a local Ray"
                raise RunError(f"cannot start or join Ray at {where}: {type(exc).__name__}: {exc}") from exc
            self._started_ray = True
        self._ray = ray
        cls, opts = ray.remote(_Worker), self.options

        def make(num_cpus: float, num_gpus: float, strategy: Any) -> Any:
            kw: dict[str, Any] = {"num_cpus": num_cpus, "num_gpus": num_gpus, "max_restarts": opts.max_restarts,
                                  "max_task_retries": opts.max_task_retries}
            if strategy is not None:
                kw["scheduling_strategy"] = strategy
            return cls.options(**kw).remote(self._cache_root)

        self._placement = Placement(ray, make, opts.placement_timeout_s, opts.max_attempts)
        return ray

    @property
    def placement(self) -> Placement:
        assert self._placement is not None, "Ray is not started"
        return self._placement

    def close(self) -> None:
        """Stop the frame actors, and the local Ray if this executor started it."""
        if self._ray is None:
            return
        self._kill_frame_actors()
        try:  # close the models the idle workers may still hold (a model that fails to close is killed)
            self._ray.get([p.actor.release.remote() for p in self._idle], timeout=60)
        except Exception:  # noqa: BLE001,S110 - stopping must not fail the run
            pass
        for p in self._idle:
            self.placement.stop(p)
        self._idle = []
        self.placement.close()  # every group still placed (their reservations)
        if self._started_ray:
            self._ray.shutdown()
            self._started_ray = False
        self._ray = None

    # frame scoring

    def prepare(
        self, cfg: RunConfig, *, encoder: FrameTextEncoder | None, progress: bool,
    ) -> PendingEncoder | None:
        """Join / start Ray, start the frame actors and have them load the encoder; returns at
        once (the choice: the actors' start, imports and load overlap the driver's planning) the
        encoder they hold, its fingerprint from the first actor when first asked
        (:class:`PendingEncoder`), or ``None`` when the run needs no encoder. A loaded ``encoder``
        passed by the caller is shipped to the actors (it must pickle)."""
        self._init()
        self._encoder = encoder
        self._encoder_name = cfg.encoder if cfg.needs_encoder or encoder is not None else None
        self._encoder_options = dict(cfg.encoder_options)
        from tempcore.encoders.cache import default_cache_dir

        self._cache_root = str(cfg.cache or default_cache_dir())
        if not (cfg.needs_encoder or encoder is not None):
            return None
        actors = self._start_frame_actors()
        self._encoding = self._ray.put((encoder, self._encoder_name, self._encoder_options))
        self._encoder_loads = [a.actor.use_encoder.remote(self._encoding) for a in actors]
        self._remote_encoder = None
        return PendingEncoder(self._encoder_loaded)

    def _encoder_loaded(self) -> RemoteEncoder:
        """Wait for the frame actors' encoder loads (once); the first actor's name and fingerprint."""
        if self._remote_encoder is None:
            if not self._encoder_loads:
                raise RunError("frame scoring on Ray needs an encoder: prepare() was not asked to load one")
            what = f"encoder {self._encoder_name}"
            loaded = self.placement.load(what, self._frame_actors, lambda a: a.use_encoder.remote(self._encoding),
                                self._encoder_loads, failed="the frame actors could not load it")
            self._frame_actors = [p for p, _ in loaded]
            got = loaded[0][1]
            if got is None:
                raise RunError(f"encoder {self._encoder_name}: the frame actors loaded no encoder")
            self._remote_encoder = RemoteEncoder(*got)
        return self._remote_encoder

    # workers

    def _workers(self, res: ActorResources, n: int, what: str) -> list[Placed]:
        """``n`` workers reserving ``res``: idle ones of the same shape first (their processes
        reused), then new ones, each placed in a group of its own (fewer when the cluster has no
        room: logged; none: :class:`PlacementError`). An idle worker whose node is lost is never
        reused; idle workers of another shape are stopped before new ones are placed (their
        reservations would keep them from being placed)."""
        idle, self._idle, taken = self._idle, [], list[Placed]()
        if idle:
            self.placement.look(now=True)
        for p in idle:
            if not self.placement.usable(p):
                _log.info("%s: an idle worker's node is lost; it is not reused", what)
                self.placement.stop(p)
            elif p.shape == (res.num_cpus, res.num_gpus) and len(taken) < n:
                taken.append(p)
            else:
                self._idle.append(p)
        if len(taken) < n:
            for p in self._idle:
                self.placement.stop(p)
            self._idle = []
            taken = self.placement.fill(what, res.num_cpus, res.num_gpus, n, taken)
        return taken

    def _park(self, placed: Sequence[Placed]) -> None:
        """Workers done with a job become idle (what they hold released), for the next job."""
        for p in placed:
            p.actor.release.remote()  # runs before any later call on this actor
            self._idle.append(p)

    def _start_frame_actors(self) -> list[Placed]:
        if not self._frame_actors:
            self._frame_actors = self._workers(self.options.encoder, self.options.encoder.actors, "frame scoring")
        return self._frame_actors

    def _kill_frame_actors(self) -> None:
        for p in self._frame_actors:
            self.placement.stop(p)
        self._frame_actors = []

    def _lost(self, slots: Sequence[_Slot]) -> list[_Slot]:
        """The live slots whose actor's node is lost and that Ray did not place again within
        ``placement_timeout_s`` (the cluster looked at once a second at most)."""
        lost = self.placement.lost([s.placed for s in slots if s.alive])
        return [s for s in slots if s.alive and s.placed in lost]

    def _renew(self, what: str, slots: list[_Slot], old: Placed, call: Callable[[Any], Any],
               log: Callable[[str], None]) -> None:
        """A new worker in place of ``old`` (stopped), loaded with ``call``, added to ``slots``
        when the cluster has room; with no live slot left, a :class:`PlacementError`."""
        new = self.placement.renew(old)
        if new is not None:
            try:
                slots += [_Slot(p) for p, _ in self.placement.load(what, [new], call)]
            except PlacementError:
                pass
        live = sum(s.alive for s in slots)
        if not live:
            raise PlacementError(f"{what}: no worker left and none can be placed; {self.placement.cluster()}")
        if new is None:
            log(f"  {what}: no room for a new worker; going on with {live}")
            _log.warning("%s: no room for a new worker; going on with %d", what, live)

    def timelines(
        self, samples: Sequence[Sample], modes: Sequence[str], *, cfg: RunConfig, cache: EmbeddingCache | None,
        video_root: str | None, label: str, log: Callable[[str], None], progress: bool,
    ) -> Timelines:
        """Score (or probe) one video per Ray call, spread over the frame actors, at most
        ``max_in_flight`` calls per actor outstanding; a call that keeps failing makes its video
        a failed video."""
        from ray.exceptions import ActorDiedError, ActorUnavailableError

        from tempcore.benchmarks import resolve_video
        from tempcore.run.frame_scoring import ScoreFailure

        ray = self._init()
        encoding = self._encoding if modes else None
        if modes:  # a failed encoder load stops the run here, before any video is sent
            self._encoder_loaded()
        slots = [_Slot(p) for p in self._start_frame_actors()]
        load: Callable[[Any], Any] = (lambda a: a.use_encoder.remote(encoding)) if modes else (lambda a: a.pid.remote())
        by_video: dict[tuple[Any, ...], list[Sample]] = {}
        for s in samples:
            key = (str(resolve_video(s, video_root)), s.start, s.end, s.media)
            by_video.setdefault(key, []).append(s)
        groups: dict[tuple[Any, ...], list[Sample]] = {}
        if not modes:
            groups = by_video
        else:  # the chunks score_samples forms: its texts are encoded together, so embed them together
            pending = list(by_video.items())
            while pending:
                first, chunk = pending[0][0], list[Sample]()
                n_texts = 0
                while pending and (not chunk or n_texts < TEXT_BATCH):
                    _key, group = pending.pop(0)
                    chunk.extend(group)
                    n_texts += len(group) * len(modes)
                groups[first] = chunk
        queue: deque[tuple[tuple[Any, ...], int]] = deque((k, 0) for k in groups)
        inflight: dict[Any, tuple[tuple[Any, ...], int, _Slot]] = {}
        events: list[FrameScores | ScoreFailure | Any] = []
        b = bar(len(samples), f"{label}: frames", progress)
        cap = self.options.max_in_flight
        try:
            while queue or inflight:
                while queue and (free := [s for s in slots if s.free(cap, time.monotonic())]):
                    key, attempts = queue.popleft()
                    slot = min(free, key=lambda s: s.busy)
                    ref = slot.actor.events.remote(encoding, groups[key], list(modes), cfg.fps, video_root)
                    inflight[ref] = (key, attempts, slot)
                    slot.busy += 1
                for slot in self._lost(slots):  # their calls go to the others
                    slot.alive = False
                    for ref in [r for r, v in inflight.items() if v[2] is slot]:
                        key, attempts, _slot = inflight.pop(ref)
                        queue.appendleft((key, attempts))
                    self._renew("frame scoring", slots, slot.placed, load, log)
                if not inflight:
                    time.sleep(_TICK / 4)  # every worker paused or off a live node
                    continue
                ready, _ = ray.wait(list(inflight), num_returns=1, timeout=_TICK)
                if not ready:
                    continue
                key, attempts, slot = inflight.pop(ready[0])
                slot.busy -= 1
                try:
                    events.extend(ray.get(ready[0]))
                except ActorUnavailableError:  # its node is lost, not yet known: not the video's fault
                    slot.placed.paused_until = time.monotonic() + _TICK
                    queue.appendleft((key, attempts))
                    continue
                except Exception as exc:
                    if isinstance(exc, ActorDiedError) and slot.alive:
                        slot.alive = False
                        self._renew("frame scoring", slots, slot.placed, load, log)
                    if attempts + 1 < self.options.max_attempts:
                        queue.appendleft((key, attempts + 1))
                        continue
                    events.extend(ScoreFailure(s.benchmark, s.sample_id, str(resolve_video(s, video_root)),
                                               f"ray: {_describe(exc)} (gave up after {attempts + 1} attempts)",
                                               "video", tuple(modes)) for s in groups[key])
                b.update(len(groups[key]))
        finally:
            close_bar(b)
            self._frame_actors = [slot.placed for slot in slots if slot.alive]
            for slot in slots:
                if not slot.alive:
                    self.placement.stop(slot.placed)
        return collect_timelines(events, modes, log)

    # answering

    def _start_pool(self, job: ModelJob, settings: AnswerSettings, factory: ModelFactory,
                    log: Callable[[str], None], progress: bool) -> _Pool:
        log(job.describe())
        self._jobs += 1
        loading = self._ray.put((f"{self._jobs}:{job.spec.display_name}", job.spec, factory))
        res = self.options.for_model(job.spec.display_name)
        slots = [_Slot(p) for p in self._model_actors(job, loading, res.actors)]
        units = answer_units(job.items, settings.max_frames_in_memory)
        return _Pool(job, slots, deque((u, 0) for u in units),
                     Progress(len(job.items), job.spec.display_name, progress), time.perf_counter(), loading)

    def _model_actors(self, job: ModelJob, loading: Any, n: int) -> list[Placed]:
        """``n`` workers holding the job's model (each loads it once; fewer when fewer fit)."""
        what = f"model {job.spec.display_name}"
        placed = self._workers(self.options.for_model(job.spec.display_name), n, what)
        return [p for p, _ in self.placement.load(what, placed, functools.partial(_use_model, loading))]

    def _stop_pool(self, pool: _Pool) -> None:
        pool.progress.close()
        pool.job.summary.seconds += time.perf_counter() - pool.started
        for slot in pool.slots:
            if not slot.alive:
                self.placement.stop(slot.placed)
        self._park([s.placed for s in pool.slots if s.alive])

    def answer(
        self, jobs: Sequence[ModelJob], store: RunStore, run_id: str, *, factory: ModelFactory,
        settings: AnswerSettings, log: Callable[[str], None], progress: bool,
    ) -> None:
        """Answer every job on model actors; commit each unit's results on arrival (this process)."""
        ray = self._init()
        self._park(self._frame_actors)  # their processes (or resources) go to the models
        self._frame_actors = []
        waiting = deque(jobs)
        pools: list[_Pool] = []
        inflight: dict[Any, tuple[_Pool, _Slot, list[list[WorkItem]], int]] = {}
        cap = self.options.max_in_flight

        def submit(pool: _Pool) -> None:
            while pool.queue:
                live = [s for s in pool.slots if s.free(cap, time.monotonic())]
                if not live:
                    return
                slot = min(live, key=lambda s: s.busy)
                units, attempts = _next_call(pool.queue, settings.request_batch)
                job = pool.job
                roots = {b: settings.video_root_of.get(b) for b in {u[0].sample.benchmark for u in units}}
                ref = slot.actor.answer.remote(pool.loading, units, roots, job.method, job.template,
                                               settings.noframe_size, settings.request_batch, job.identity)
                inflight[ref] = (pool, slot, units, attempts)
                slot.busy += 1
                pool.inflight += 1

        try:
            while waiting or pools:
                while waiting and (self.options.concurrent_models or not pools):
                    pool = self._start_pool(waiting.popleft(), settings, factory, log, progress)
                    pools.append(pool)
                    submit(pool)
                for pool in [p for p in pools if not p.queue and not p.inflight]:
                    pools.remove(pool)
                    self._stop_pool(pool)
                self._take_over(pools, inflight, log)
                for pool in pools:
                    submit(pool)
                if not inflight:
                    if pools:
                        time.sleep(_TICK / 4)  # every worker paused or off a live node
                    continue
                ready, _ = ray.wait(list(inflight), num_returns=1, timeout=_TICK)
                if not ready:
                    continue
                ref = ready[0]
                pool, slot, units, attempts = inflight.pop(ref)
                slot.busy -= 1
                pool.inflight -= 1
                try:
                    results: list[Answered] = ray.get(ref)
                except Exception as exc:
                    self._failed(pool, slot, units, attempts, exc, store, run_id, factory, log)
                else:
                    for answered in results:
                        commit(store, run_id, answered, pool.job.summary, pool.job.replace)
                        pool.progress.update(answered)
                submit(pool)
        finally:  # on a stop: the actors go, and with them the calls in flight (nothing was committed)
            for pool in pools:
                self._stop_pool(pool)

    def _take_over(self, pools: Sequence[_Pool], inflight: dict[Any, tuple[_Pool, _Slot, list[list[WorkItem]], int]],
                   log: Callable[[str], None]) -> None:
        """The actors whose node is lost and that Ray did not place again in time: stopped, their
        calls back in their job's queue (the try not counted), a new actor where there is room."""
        lost = self._lost([s for p in pools for s in p.slots])
        for pool, slot in [(p, s) for p in pools for s in p.slots if s in lost]:
            name = pool.job.spec.display_name
            slot.alive = False
            back = [r for r, v in inflight.items() if v[1] is slot]
            for ref in back:
                _pool, _slot, units, attempts = inflight.pop(ref)
                slot.busy -= 1
                pool.inflight -= 1
                _requeue(pool.queue, units, attempts)
            log(f"  model {name}: an actor's node is lost and Ray did not place it again within "
                f"{self.placement.timeout_s:g} s; its {len(back)} call(s) go to the other actors")
            self._renew(f"model {name}", pool.slots, slot.placed, functools.partial(_use_model, pool.loading), log)

    def _failed(
        self, pool: _Pool, slot: _Slot, units: list[list[WorkItem]], attempts: int, exc: BaseException,
        store: RunStore, run_id: str, factory: ModelFactory, log: Callable[[str], None],
    ) -> None:
        """A call failed: stop on a run error, replace a dead actor; a call of several units is
        split into its units, each sent again alone (the failed try counts against none of them:
        one unit's fault must not use up the others' attempts); a call of one unit is retried, or
        its items recorded as failures once it has failed ``max_attempts`` times."""
        from ray.exceptions import ActorDiedError, ActorUnavailableError

        cause = getattr(exc, "cause", None)
        if isinstance(cause, RunError):
            raise cause
        name = pool.job.spec.display_name
        if isinstance(exc, ActorUnavailableError):  # its node is lost, not yet known: not the units' fault
            slot.placed.paused_until = time.monotonic() + _TICK
            _requeue(pool.queue, units, attempts)
            _log.info("model %s: an actor is unreachable (%s); its call goes to the others", name, _describe(exc))
            return
        if isinstance(exc, ActorDiedError) and slot.alive:
            slot.alive = False
            log(f"  model {name}: an actor died for good ({_describe(exc)}); starting a new one")
            self._renew(f"model {name}", pool.slots, slot.placed, functools.partial(_use_model, pool.loading), log)
        if len(units) > 1:
            pool.queue.extendleft((u, _ALONE) for u in reversed(units))
            return
        unit = units[0]
        if attempts + 1 < self.options.max_attempts:
            pool.queue.appendleft((unit, attempts + 1))
            return
        error = f"ray: {_describe(exc)} (gave up after {attempts + 1} attempts)"
        fails = tuple(Failure(it.sample.benchmark, it.sample.sample_id, name, it.condition.key, error,
                              attempts=attempts + 1) for it in unit)
        answered = Answered(tuple(unit), fails, asked=False)
        commit(store, run_id, answered, pool.job.summary, pool.job.replace)
        pool.progress.update(answered)
        log(f"  model {name}: {len(unit)} request(s) of sample {unit[0].sample.sample_id} failed: {error}")
