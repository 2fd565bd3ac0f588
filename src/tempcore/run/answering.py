"""Answering work items: one unit's frames decoded and its requests built (:func:`prepare_unit`), a
bounded stream of requests across samples and conditions (:func:`answer_stream`: ``concurrency`` x 2
requests outstanding for the HTTP backend, batches of ``request_batch`` for batched local models),
and the results committed to the store as they complete (:func:`commit`).
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from tempcore import profiling
from tempcore.errors import TempcoreError
from tempcore.records import Failure, Prediction
from tempcore.run.ordered import in_context, ordered_map
from tempcore.run.planning import (
    RunError,
    WorkItem,
    answer_chunks,
    answer_units,
)

if TYPE_CHECKING:
    from tempcore.models.base import Model, ModelRequest, ModelResponse
    from tempcore.run.store import RunStore


from tempcore.grounding.crops import is_grounding
from tempcore.run.executor import Identity, Key, ModelSummary
from tempcore.run.frames import _load_frames, default_decoders
from tempcore.run.predictions import Answered, Prepared, _own, _request, to_prediction


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
    for it in [it for it in todo if not is_grounding(it.sample)]:
        yield Prepared(it, _request(it, frames, template, noframe_size), method)
    for it in [it for it in todo if is_grounding(it.sample)]:
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
    stored: list[Prediction] = []  # what this run wrote: a row another writer stored first is not counted
    if answered.asked:
        stored = store.put_new(fresh, run_id)
        replaced = store.put(again, run_id, overwrite=True) if again else 0
    else:
        replaced = 0
    if fails:
        store.put_failures(fails, run_id)
    summary.done += len(stored) + replaced
    summary.replaced += replaced
    summary.discarded += len(fresh) - len(stored)
    summary.failed += len(fails)
    summary.parse_failures += sum(p.parse_error is not None or (p.answer is None and p.pred_start is None)
                                  for p in (*stored, *again))
    summary.correct += sum(p.correct for p in (*stored, *again))


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


__all__ = [
    "ConcurrentModel",
    "answer_items",
    "answer_stream",
    "answer_unit",
    "commit",
    "prepare_unit",
    "stream_window",
]
