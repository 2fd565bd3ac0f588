"""Frames kept from the scoring pass for answering, so that a run decodes each video once.

Scoring decodes every frame of a video at the run's fps; answering shows each model a few of them
(the FrameSets the planner selects from the scores). Without this module every model decoded the
frames it shows again, once per sample and chunk. :class:`FrameStore` keeps, per video, exactly the
frames some work item will show, taken from the scoring pass:

1. while a video is decoded for scoring, its frames go to a :class:`FrameSpool` (memory up to
   ``spool_bytes``, then a temporary file), because which frames are needed is known only once the
   whole video is scored (maxprob / minprob rank every frame; uniform, random and the oracle's
   windows depend on the number of frames L);
2. when the video is done, the *selector* (:func:`needed_positions`: the run's own planner,
   :func:`tempcore.run.planning.plan_items`, on that video's samples and timelines, so the positions
   are those the run will show, by construction) names the positions; those frames are copied out
   of the spool into the store and the spool is dropped;
3. at answer time :func:`tempcore.run.frames._load_frames` asks the store first. The frames are the
   very arrays :func:`tempcore.video.decode.read_frames` would return (same decoder pass rules, same
   conversion, same size: the first frame's), so the requests are identical.

When the embeddings come from the cache the scoring pass decodes nothing: the store then records
the needed positions (*pending*) and the first request for that video decodes them all in one
:func:`~tempcore.video.decode.read_frames` pass, which every later model and sample of that video reuses.
A request for positions the store does not hold (a video it never saw, or other items) is decoded
and kept as well, so a video is decoded again only for positions it has never shown.

Memory: kept frames stay in memory up to ``max_bytes`` in all (default
:data:`KEEP_MEMORY_BYTES`); beyond that each further video's frames are written to a ``.npy`` file
in a temporary folder and read back memory-mapped (copied per request). :meth:`FrameStore.close`
removes that folder. Frames are kept at their decoded size (not the model's input size: the model
adapters resize, and the requests must be the same as without the store).

Keys: a video is (absolute path, segment start, segment end, media, fps) — the decode unit of a
run (the store lives for one run; the embedding cache's content hash is not needed to tell its
videos apart).
"""

from __future__ import annotations

import contextvars
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.errors import TempcoreError

if TYPE_CHECKING:
    from tempcore.records import Sample
    from tempcore.run.config import RunConfig
    from tempcore.run.planning import Timeline
    from tempcore.video.types import FrameBatch

__all__ = [
    "KEEP_MEMORY_BYTES",
    "SPOOL_MEMORY_BYTES",
    "FrameSpool",
    "FrameStore",
    "VideoKey",
    "active_store",
    "native_key",
    "needed_positions",
    "use_store",
    "video_key",
]

KEEP_MEMORY_BYTES = 1 << 30
"""Kept frames held in memory, in all (1 GiB); further videos' frames go to temporary files."""
SPOOL_MEMORY_BYTES = 256 << 20
"""One video's frames held in memory while it is scored (256 MiB); the rest go to a temporary file."""

VideoKey = tuple[str, "float | None", "float | None", "str | None", "float | None"]
Selector = Callable[["Sample", "Timeline"], Iterable[int]]


def video_key(path: str | os.PathLike[str], start: float | None, end: float | None, media: str | None,
              fps: float | None) -> VideoKey:
    """The store's key of a video: (absolute path, start, end, media, fps)."""
    return (os.path.abspath(path), None if start is None else float(start), None if end is None else float(end),
            media, None if fps is None else float(fps))


class _Spill:
    """A lazily created temporary folder for frames that do not fit in memory."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.files = 0
        self._lock = threading.Lock()  # videos are scored (and spooled) several at once

    def new_file(self, suffix: str) -> Path:
        with self._lock:
            if self.path is None:
                self.path = Path(tempfile.mkdtemp(prefix="tempcore-frames-"))
            self.files += 1
            return self.path / f"{self.files}{suffix}"

    def close(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None


class FrameSpool:
    """Every frame of one video, in decoding order (positions 0..L-1), while the video is scored.

    ``add`` copies each batch (the reader recycles its arrays); the first ``max_bytes`` stay in
    memory, later batches are appended to a raw file in the spill folder. ``take`` returns the
    frames at given positions as one (n, H, W, 3) uint8 array (a copy)."""

    def __init__(self, max_bytes: int, spill: _Spill) -> None:
        self.max_bytes = max_bytes
        self._spill = spill
        self._memory: list[np.ndarray] = []
        self._in_memory = 0  # frames in memory (positions 0.._in_memory-1)
        self._bytes = 0
        self._file: Any = None
        self._file_path: Path | None = None
        self._on_disk = 0
        self._shape: tuple[int, ...] | None = None
        self.frames = 0

    def add(self, batch: FrameBatch) -> None:
        frames = np.asarray(batch.frames)
        n = int(frames.shape[0])
        if not n:
            return
        first = int(batch.indices[0])
        if first != self.frames:
            raise ValueError(f"frame spool: batch starts at position {first}, expected {self.frames}")
        if self._shape is None:
            self._shape = tuple(frames.shape[1:])
        elif tuple(frames.shape[1:]) != self._shape:
            raise ValueError(f"frame spool: frames of shape {frames.shape[1:]} after {self._shape}")
        if self._file is None and self._bytes + frames.nbytes <= self.max_bytes:
            self._memory.append(np.array(frames, dtype=np.uint8, copy=True))
            self._bytes += frames.nbytes
            self._in_memory += n
        else:
            if self._file is None:
                self._file_path = self._spill.new_file(".raw")
                self._file = open(self._file_path, "wb")  # noqa: SIM115 - closed in take() / close()
            self._file.write(np.ascontiguousarray(frames, dtype=np.uint8).tobytes())
            self._on_disk += n
        self.frames += n

    def take(self, positions: Sequence[int]) -> np.ndarray:
        """The frames at ``positions`` (each in 0..L-1), in the order given."""
        if self._shape is None:
            return np.empty((0, 0, 0, 3), np.uint8)
        out = np.empty((len(positions), *self._shape), np.uint8)
        memory = np.concatenate(self._memory) if len(self._memory) > 1 else (self._memory[0] if self._memory else None)
        disk = None
        if self._file is not None and self._file_path is not None:
            self._file.flush()
            disk = np.memmap(self._file_path, dtype=np.uint8, mode="r", shape=(self._on_disk, *self._shape))
        for j, p in enumerate(positions):
            if not 0 <= p < self.frames:
                raise IndexError(f"frame spool: position {p} outside 0..{self.frames - 1}")
            if p < self._in_memory:
                assert memory is not None
                out[j] = memory[p]
            else:
                assert disk is not None
                out[j] = disk[p - self._in_memory]
        del disk
        return out

    def close(self) -> None:
        self._memory = []
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._file_path is not None:
            self._file_path.unlink(missing_ok=True)
            self._file_path = None


@dataclass
class _Entry:
    """A video's kept frames: ``positions`` (sorted) and their ``frames`` (in memory, or a ``.npy``
    file read memory-mapped); ``pending``: positions needed, not decoded yet; ``broken``: decoding
    the pending union failed, so requests decode their own positions as without the store."""

    positions: list[int] = field(default_factory=list)
    frames: np.ndarray | None = None
    file: Path | None = None
    pending: set[int] = field(default_factory=set)
    broken: bool = False


class FrameStore:
    """The frames a run's work items show, kept per video (see the module docstring).

    ``stats()``: videos kept, frames kept, bytes in memory / spilled, requests served without
    decoding (``hits``), decoding passes made for requests (``decodes``)."""

    def __init__(self, *, max_bytes: int = KEEP_MEMORY_BYTES, spool_bytes: int = SPOOL_MEMORY_BYTES) -> None:
        self.max_bytes = max_bytes
        self.spool_bytes = spool_bytes
        self._entries: dict[VideoKey, _Entry] = {}
        self._spill = _Spill()
        self._lock = threading.RLock()  # the entries dict and the byte counts
        self._key_locks: dict[VideoKey, threading.Lock] = {}  # one request per video at a time
        self._memory_bytes = 0
        self._disk_bytes = 0
        self.hits = 0
        self.decodes = 0
        self._native: dict[VideoKey, list[float]] = {}  # a video's frame times at its own rate
        self._wants: dict[VideoKey, tuple[set[float], set[int]]] = {}  # what its requests will ask

    # --- the scoring side ----------------------------------------------------------------------

    def spool(self) -> FrameSpool:
        """A spool for the frames of a video about to be decoded for scoring."""
        return FrameSpool(self.spool_bytes, self._spill)

    def keep(self, key: VideoKey, positions: Iterable[int], spool: FrameSpool | None) -> None:
        """Keep the frames at ``positions`` of a scored video: from ``spool`` (the video was decoded
        now), or as pending (no spool: its embeddings came from the cache)."""
        wanted = sorted({int(p) for p in positions})
        with self._lock:
            entry = self._entries.setdefault(key, _Entry())
            have = set(entry.positions)
            new = [p for p in wanted if p not in have]
            if not new:
                return
            if spool is None or spool.frames == 0:
                entry.pending.update(new)
                return
            self._merge(entry, new, spool.take(new))

    # --- the answering side --------------------------------------------------------------------

    def frames(
        self, key: VideoKey, wanted: Sequence[int], decode: Callable[[list[int]], FrameBatch],
    ) -> dict[int, np.ndarray]:
        """The frames at ``wanted`` of a video, by position: from the store when it holds them all,
        else decoded (``decode(positions)``: one :func:`tempcore.video.decode.read_frames` pass) together
        with the video's pending positions, and kept. Decoding errors propagate unchanged."""
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # other videos' requests (decode-ahead threads) go on meanwhile
            return self._frames(key, wanted, decode)

    def _frames(
        self, key: VideoKey, wanted: Sequence[int], decode: Callable[[list[int]], FrameBatch],
    ) -> dict[int, np.ndarray]:
        with self._lock:
            entry = self._entries.setdefault(key, _Entry())
        have = set(entry.positions)
        missing = sorted({int(i) for i in wanted} - have)
        if missing and entry.broken:
            with self._lock:
                self.decodes += 1
            batch = decode(sorted({int(i) for i in wanted}))
            return {int(i): batch.frames[j] for j, i in enumerate(batch.indices)}
        if missing:
            todo = sorted(set(missing) | (entry.pending - have))
            with self._lock:
                self.decodes += 1
            try:
                batch = decode(todo)
            except TempcoreError:
                if todo == missing:
                    raise
                entry.broken = True  # the union failed: from now on each request decodes its own
                return self._frames(key, wanted, decode)
            with self._lock:
                entry.pending.clear()
                self._merge(entry, [int(i) for i in batch.indices], np.asarray(batch.frames))
        else:
            with self._lock:
                self.hits += 1
        return self._take(entry, wanted)

    # --- videos at their own rate (visual-option requests) -----------------------------------

    def expect_native(self, key: VideoKey, times: Iterable[float], positions: Iterable[int]) -> None:
        """Requests will ask for the frames of a video at its own rate (``key``: :func:`native_key`)
        shown at ``times`` (the last frame whose time is <= t, the first for an earlier t) and at
        ``positions``: the one pass :meth:`native_frames` makes keeps them."""
        with self._lock:
            want_times, want_positions = self._wants.setdefault(key, (set(), set()))
            want_times.update(float(t) for t in times)
            want_positions.update(int(p) for p in positions)

    def native_frames(
        self, key: VideoKey, positions_of: Callable[[Sequence[float]], list[int]],
        decode_pass: Callable[[Callable[[int, float, float | None], bool]], tuple[list[float], FrameBatch]],
        decode: Callable[[list[int]], FrameBatch],
    ) -> tuple[list[int], list[float], dict[int, np.ndarray]]:
        """The frames a request shows of a video at its own rate: ``positions_of(times)``, the video's
        frame times and those frames by position. The first request of a video makes one pass
        (``decode_pass(select)``: :func:`tempcore.video.decode.read_selected`) that records the times
        and keeps every frame :meth:`expect_native` announced; later requests decode nothing, and a
        position nobody announced is decoded (``decode``) and kept as in :meth:`frames`."""
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            times = self._native.get(key)
            if times is None:
                with self._lock:
                    want_times, want_positions = self._wants.get(key, (set(), set()))
                    self.decodes += 1
                times, batch = decode_pass(_selector(sorted(t + 1e-9 for t in want_times), set(want_positions)))
                with self._lock:
                    self._native[key] = times
                    entry = self._entries.setdefault(key, _Entry())
                    if len(batch.indices):
                        self._merge(entry, [int(i) for i in batch.indices], np.asarray(batch.frames))
            positions = positions_of(times)
            return positions, times, self._frames(key, positions, decode) if positions else {}

    def _take(self, entry: _Entry, wanted: Sequence[int]) -> dict[int, np.ndarray]:
        where = {p: j for j, p in enumerate(entry.positions)}
        order = sorted({int(i) for i in wanted})
        if entry.file is not None:  # spilled: one plain copy of this request's frames
            stored = np.load(entry.file, mmap_mode="r")
            block = np.array(stored[[where[p] for p in order]])
            del stored
        else:
            assert entry.frames is not None
            block = entry.frames[[where[p] for p in order]]
        return {p: block[j] for j, p in enumerate(order)}

    def _merge(self, entry: _Entry, positions: list[int], frames: np.ndarray) -> None:
        """Add frames (at ``positions``) to an entry, keeping its positions sorted."""
        if entry.positions:
            old = entry.frames if entry.file is None else np.load(entry.file)
            assert old is not None
            merged = dict(zip(entry.positions, old))
            merged.update(zip(positions, frames))
        else:
            merged = dict(zip(positions, frames))
        order = sorted(merged)
        block = np.stack([merged[p] for p in order]).astype(np.uint8, copy=False)
        self._release(entry)
        entry.positions = order
        if self._memory_bytes + block.nbytes <= self.max_bytes:
            entry.frames = block
            self._memory_bytes += block.nbytes
        else:
            entry.file = self._spill.new_file(".npy")
            np.save(entry.file, block)
            self._disk_bytes += block.nbytes
        entry.pending.difference_update(order)

    def _release(self, entry: _Entry) -> None:
        if entry.frames is not None:
            self._memory_bytes -= entry.frames.nbytes
            entry.frames = None
        if entry.file is not None:
            self._disk_bytes -= os.path.getsize(entry.file) if entry.file.exists() else 0
            entry.file.unlink(missing_ok=True)
            entry.file = None

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"videos": sum(bool(e.positions) for e in self._entries.values()),
                    "frames": sum(len(e.positions) for e in self._entries.values()),
                    "pending_videos": sum(bool(e.pending) for e in self._entries.values()),
                    "memory_bytes": self._memory_bytes, "spilled_bytes": max(self._disk_bytes, 0),
                    "hits": self.hits, "decodes": self.decodes}

    def close(self) -> None:
        """Drop every kept frame and remove the spill folder."""
        with self._lock:
            self._entries.clear()
            self._key_locks.clear()
            self._native.clear()
            self._wants.clear()
            self._memory_bytes = self._disk_bytes = 0
            self._spill.close()


def native_key(path: str | os.PathLike[str], media: str | None, folder_fps: float) -> VideoKey:
    """The store's key of a video decoded at its own rate (``fps=None``) with ``media`` and
    ``folder_fps`` (its positions are not those of the run's fps: a key of its own)."""
    return video_key(path, None, None, f"{media or 'auto'}@native/{float(folder_fps)!r}", None)


def _selector(taus: list[float], positions: set[int]) -> Callable[[int, float, float | None], bool]:
    """``select(position, time, next_time)`` for :func:`tempcore.video.decode.read_selected`: the frame
    is at one of ``positions`` or shown at one of ``taus`` (sorted; ``time <= tau < next_time``, or
    ``tau < next_time`` for the first frame: what ``searchsorted(times, tau, "right") - 1`` picks)."""
    import bisect

    def select(position: int, time: float, next_time: float | None) -> bool:
        if position in positions:
            return True
        first = 0 if position == 0 else bisect.bisect_left(taus, time)
        return first < len(taus) and (next_time is None or taus[first] < next_time)

    return select


def needed_positions(cfg: RunConfig, sample: Sample, timeline: Timeline) -> set[int]:
    """The frame positions the run's work items of ``sample`` show: the union of the FrameSets
    :func:`tempcore.run.planning.plan_items` selects for it from ``timeline`` (no-frame items show none)."""
    from tempcore.run.planning import plan_items

    items = plan_items(cfg, [sample], {sample.sample_id: timeline}, {sample.sample_id: ""})
    return {int(i) for it in items if not it.frames.grey for i in it.frames.indices}


_ACTIVE: contextvars.ContextVar[FrameStore | None] = contextvars.ContextVar("tempcore_frame_store", default=None)


def active_store() -> FrameStore | None:
    """The store :func:`tempcore.run.frames._load_frames` reads (``None``: decode): the one set in this
    context, which the threads a run starts for answering inherit (:func:`tempcore.run.ordered.in_context`)."""
    return _ACTIVE.get()


def use_store(store: FrameStore | None) -> None:
    """Make ``store`` the active one of this context (the local executor does, in its run's thread;
    ``None`` when it closes). Two runs at once in one process, each in its own thread, each read
    their own store: neither replaces nor closes the other's."""
    _ACTIVE.set(store)


def timelines_of(records: Sequence[Any], modes: Sequence[str]) -> Mapping[str, Timeline]:
    """Timelines (as :func:`tempcore.run.frames.collect_timelines` builds them) of the scoring
    records of one video: samples with every mode in ``modes`` only."""
    from tempcore.run.planning import Timeline, damage_of

    out: dict[str, Timeline] = {}
    for r in records:
        tl = out.setdefault(r.sample_id, Timeline(np.asarray(r.timestamps), {}))
        tl.scores[r.mode] = np.asarray(r.s)
        tl.cos[r.mode] = np.asarray(r.cos)
        damage = damage_of(r)
        if damage:
            tl.damage = str(damage)
    return {sid: tl for sid, tl in out.items() if set(tl.scores) >= set(modes)}


class RunKeeper:
    """The :class:`tempcore.run.frame_scoring.FrameKeeper` of one benchmark's frame scoring in a run: keeps,
    per video, the positions ``select(sample, timeline)`` names for its samples (the run's planner:
    :func:`needed_positions`), in ``store``; ``modes``: the text modes scored (a sample's timeline
    counts once it has them all, as :func:`tempcore.run.frames.collect_timelines` does)."""

    def __init__(self, store: FrameStore, select: Selector, modes: Sequence[str], fps: float | None) -> None:
        self.store, self.select, self.modes, self.fps = store, select, tuple(modes), fps

    def sink(self, path: Path, samples: Sequence[Sample]) -> FrameSpool:
        return self.store.spool()

    def done(self, path: Path, samples: Sequence[Sample], records: Sequence[Any], sink: Any) -> None:
        self.keep(path, samples, timelines_of(records, self.modes), sink)

    def keep(self, path: Path, samples: Sequence[Sample], timelines: Mapping[str, Timeline],
             sink: FrameSpool | None) -> None:
        """Keep the positions the samples' timelines select (from ``sink``, or pending)."""
        positions: set[int] = set()
        for s in samples:
            tl = timelines.get(s.sample_id)
            if tl is not None:
                positions.update(int(i) for i in self.select(s, tl))
        if not positions:
            return
        first = samples[0]
        self.store.keep(video_key(path, first.start, first.end, first.media, self.fps), positions, sink)
