"""Decode videos at a target frame rate by presentation timestamp, streaming, with named errors.

The TempCore paper decodes "uniformly at 10 FPS"; the choices it leaves open, taken here (each in
full in ``docs/design/video.md``):

- **Timeline**: a frame's time is its presentation timestamp minus the container's start time, in
  seconds (ffprobe's ``pts_time``); never inferred from an index or the nominal frame rate.
- **Target times** ``t_j = t0 + j / fps`` while ``t_j < end``; ``t0`` the segment start, else the
  first frame's time; ``end`` the segment end capped by the end of the stream.
- **Pick**: for each target time, the frame being shown then (the last frame with pts <= t_j).
- **No duplicates**: a source frame is emitted once, however many target times it covers, so the
  number of decoded frames ``L`` can be smaller than ``duration * fps``.
- **Returned timestamps** are the picked frames' own times; **indices** are positions 0..L-1 of the
  decoded sequence (per video x fps x segment), the indices a FrameSet refers to.
- **Frame folders**: images sorted by name, image i shown at ``i / folder_fps`` (default 3 fps).
- **Conversion**: only picked frames are converted to RGB; frames are shown upright (display matrix
  rotation, EXIF orientation).
- **Damage**: a file that stops early yields the frames that decoded and reports ``damage`` (the one
  field callers read); a file that yields no frame raises a named error.

Memory is bounded: frames are yielded in :class:`FrameBatch` es of at most ``batch_size`` frames and
at most ``max_batch_pixels`` pixels (:data:`tempcore.video.types.MAX_BATCH_PIXELS`), and a video whose
frames exceed ``max_pixels`` (:data:`tempcore.video.types.MAX_FRAME_PIXELS`, 4096 x 4096) is refused
with :class:`~tempcore.video.types.FrameTooLargeError` before its frames are decoded.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tempcore.records import Sample


from tempcore.video import types as _types  # MAX_BATCH_PIXELS read at call time (a setting)
from tempcore.video.sources import _Decoded, _FolderSource, _open_source, _resolve_media, _Source
from tempcore.video.types import (
    DEFAULT_FOLDER_FPS,
    DEFAULT_FPS,
    CorruptVideoError,
    EmptyVideoError,
    FrameBatch,
    FrameIndexError,
    VideoInfo,
    _note_pass,
    check_frame_size,
    check_pixel_budget,
)

_SKIP_UNNEEDED = True  # skip non-reference frames no target needs (exact; False decodes every frame)


_TRUNCATION_TOLERANCE_S = 0.5


def _as_fraction(x: float) -> Fraction:
    return Fraction(repr(float(x)))


def _check_args(fps: float | None, start: float | None, end: float | None) -> None:
    if fps is not None and not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps must be a positive number or None (every frame), not {fps!r}")
    for name, value in (("start", start), ("end", end)):
        if value is not None and not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number of seconds, not {value!r}")
    if start is not None and end is not None and end <= start:
        raise ValueError(f"segment end ({end}) must be after start ({start})")


class _Pass:
    """One decoding pass: picks frames by presentation time; records what happened."""

    def __init__(
        self,
        source: _Source,
        fps: float | None,
        start: float | None,
        end: float | None,
        skip_unneeded: bool | None = None,
    ) -> None:
        self.source = source
        self.fps = fps
        self.start = start
        self.end = end
        tb = source.time_base
        self.step = None if fps is None else 1 / (_as_fraction(fps) * tb)  # target spacing, tb units
        self.end_pts = None if end is None else source.zero + _as_fraction(end) / tb
        self.t0_pts: Fraction | None = None if start is None else source.zero + _as_fraction(start) / tb
        self.emitted = 0
        self.decoded = 0
        self.stream_end: Fraction | None = None
        self.truncated = False
        self.error: str | None = None
        self.nonmonotonic = 0
        skip = _SKIP_UNNEEDED if skip_unneeded is None else skip_unneeded
        source.needed = None if self.step is None or not skip else self._needed

    def _needed(self, pts: int, next_pts: int) -> bool:
        """Could the frame shown over [pts, next_pts) be the one at a target time (or at the end)?"""
        t0, step = self.t0_pts, self.step
        if t0 is None or step is None:
            return True
        if self.end_pts is not None and next_pts >= self.end_pts:
            return True
        j = max(0, math.ceil((pts - t0) / step))
        return math.floor(t0 + j * step) < next_pts

    def seconds(self, pts: int | Fraction) -> float:
        tb = self.source.time_base
        zero = self.source.zero
        if zero:
            return float((pts - zero) * tb)
        return (pts * tb.numerator) / tb.denominator if isinstance(pts, int) else float(pts * tb)

    def __iter__(self) -> Iterator[tuple[int, int, Any]]:
        """Yield (position, pts, handle) for each picked frame, in time order."""
        source = self.source
        step, end_pts = self.step, self.end_pts
        held: _Decoded | None = None
        t0 = self.t0_pts
        target: Fraction | None = None  # the first target time >= held.pts (tb units)
        target_floor = 0
        j = 0
        frames = source.frames(t0)
        try:
            for dec in frames:
                self.decoded += 1
                pts = dec.pts
                if held is not None:
                    if pts < held.pts:
                        self.nonmonotonic += 1
                        continue
                    if pts == held.pts:  # a later frame with the same time replaces it
                        held = dec
                        continue
                if t0 is None:
                    t0 = Fraction(pts)
                    self.t0_pts = t0
                if held is not None:
                    hi = pts if end_pts is None or pts < end_pts else end_pts
                    if self._covers(held, target, target_floor, t0, hi):
                        yield self.emitted, held.pts, held.handle
                        self.emitted += 1
                if end_pts is not None and pts >= end_pts:
                    held = None
                    self.stream_end = None
                    break
                held = dec
                if step is not None and (target is None or target_floor < pts):
                    j = max(j, math.ceil((pts - t0) / step))
                    target = t0 + j * step
                    target_floor = math.floor(target)
            if held is not None:  # end of stream: the last frame lasts its duration
                assert t0 is not None  # set by the first frame
                duration = held.duration or self._fallback_duration()
                stream_end = held.pts + duration
                self.stream_end = Fraction(stream_end)
                hi = stream_end if end_pts is None or stream_end < end_pts else end_pts
                if self._covers(held, target, target_floor, t0, hi):
                    yield self.emitted, held.pts, held.handle
                    self.emitted += 1
            self._finish()
        finally:
            close = getattr(frames, "close", None)
            if close is not None:
                close()

    def _covers(
        self, held: _Decoded, target: Fraction | None, target_floor: int, t0: Fraction, hi: Fraction | int
    ) -> bool:
        """Is ``held`` (shown from its pts until ``hi``) the frame shown at some target time?"""
        if self.step is None:
            start = held.pts if held.pts >= t0 else t0  # max(held.pts, t0)
            return start < hi
        if target is None:
            return False
        if isinstance(hi, int):
            return target_floor < hi
        return target < hi

    def _fallback_duration(self) -> int:
        src = self.source
        if src.nominal_interval:
            return max(1, round(src.nominal_interval))
        if self.step is not None:
            return max(1, round(self.step))
        return 1

    def _finish(self) -> None:
        src = self.source
        problems: list[str] = []
        if src.demux_error:
            self.truncated = True
            problems.append(src.demux_error)
        if src.decode_errors:
            problems.append(
                f"{src.decode_errors} packet(s)/image(s) failed to decode (last: {src.last_decode_error})"
            )
        reached_end = self.end_pts is None or (self.stream_end is not None and self.stream_end < self.end_pts)
        if (
            not src.demux_error
            and reached_end
            and src.declared_end is not None
            and self.stream_end is not None
        ):
            interval = src.nominal_interval or Fraction(0)
            limit, frames2 = _TRUNCATION_TOLERANCE_S / src.time_base, 2 * interval
            tolerance = frames2 if frames2 > limit else limit  # max(limit, two frame intervals)
            if src.declared_end - self.stream_end > tolerance:
                self.truncated = True
                problems.append(
                    f"decoded frames end at {self.seconds(self.stream_end):.3f}s but the container "
                    f"declares {self.seconds(src.declared_end):.3f}s (file truncated?)"
                )
        self.error = "; ".join(problems) or None

    def raise_if_empty(self) -> None:
        """After the pass: a file (or segment) that yielded nothing is an error."""
        if self.emitted:
            return
        src = self.source
        if self.decoded == 0:
            if src.demux_error or src.decode_errors:
                raise CorruptVideoError(src.path, f"no frame could be decoded ({self.error})")
            raise EmptyVideoError(src.path, "the video stream holds no frames")
        span = ""
        if self.t0_pts is not None and self.stream_end is not None:
            span = f"; the decoded frames end at {self.seconds(self.stream_end):.3f}s"
        raise EmptyVideoError(
            src.path, f"no frame is shown in the segment start={self.start} end={self.end}{span}"
        )

    def duration(self) -> float:
        if self.t0_pts is None:
            return 0.0
        end = self.stream_end
        if self.end_pts is not None and (end is None or self.end_pts < end):
            end = self.end_pts
        if end is None:
            return 0.0
        return max(0.0, float((end - self.t0_pts) * self.source.time_base))


def _refcounts(arrays: list[np.ndarray]) -> list[int]:
    return [sys.getrefcount(a) for a in arrays]


_FREE_REFCOUNT = _refcounts([np.empty(1)])[0]  # an array referenced only by the pool's list


# Reference counts are exact only with the GIL; a free-threaded interpreter gets fresh arrays.
_RECYCLE = getattr(sys, "_is_gil_enabled", lambda: True)()


class _BatchPool:
    """Batch arrays for one pass, recycled once no one outside the pool references them.

    Writing each batch into fresh memory costs page faults (about 5% of decoding time at 640x360),
    so a yielded array is reused when the caller has dropped every reference to it (the batch, its
    views, arrays wrapping it: each holds a reference, so CPython's reference count says whether it
    is still in use). An array the caller keeps is never written again. Code that keeps only a raw
    pointer to a batch's memory (ctypes) without the array itself must copy the frames.
    """

    def __init__(self, shape: tuple[int, ...], keep: int = 3) -> None:
        self.shape = shape
        self.keep = keep
        self.arrays: list[np.ndarray] = []

    def take(self) -> np.ndarray:
        if not _RECYCLE:
            return np.empty(self.shape, dtype=np.uint8)
        for i, count in enumerate(_refcounts(self.arrays)):
            if count <= _FREE_REFCOUNT:
                return self.arrays[i]
        arr = np.empty(self.shape, dtype=np.uint8)
        self.arrays.append(arr)
        if len(self.arrays) > self.keep:
            del self.arrays[0]  # still in use by the caller: forget it
        return arr


class VideoReader:
    """Iterate a video's frames at ``fps`` (by presentation time) as :class:`FrameBatch` es.

    ``for batch in VideoReader("clip.mp4", fps=10): ...`` — see the module docstring for the exact
    semantics. Each iteration is a fresh decoding pass (re-iterable); after a pass ``truncated``,
    ``error``, ``frames`` (L), ``duration`` and ``decoded_frames`` describe it. Raises
    :class:`VideoNotFoundError`, :class:`NoVideoStreamError` (on construction),
    :class:`EmptyVideoError` / :class:`CorruptVideoError` (when a pass yields no frame).

    ``size`` = (width, height) resizes during conversion. ``threads`` = decoding and RGB-conversion
    threads (0 = automatic: FFmpeg's choice, frame + slice threading, except single-threaded for
    frames of at most :data:`SMALL_FRAME_PIXELS`; 1 = single-threaded, e.g. when
    many readers run in parallel). ``media`` = "video" | "gif" | "frames" (auto-detected from the
    path); ``folder_fps`` = rate of a frame folder's images; ``autorotate`` = show frames upright
    (display-matrix rotation / EXIF orientation). ``max_pixels`` = the largest frame decoded (None:
    :data:`~tempcore.video.types.MAX_FRAME_PIXELS`; larger ones raise
    :class:`~tempcore.video.types.FrameTooLargeError`); ``max_batch_pixels`` = the pixels of one batch
    (None: :data:`~tempcore.video.types.MAX_BATCH_PIXELS`; a batch has at least one frame).

    Batches are yours to keep: a batch's ``frames`` array is recycled for a later batch only once
    nothing references it any more (see ``_BatchPool``), which saves fresh memory per batch.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        fps: float | None = DEFAULT_FPS,
        *,
        stream: int = 0,
        start: float | None = None,
        end: float | None = None,
        size: tuple[int, int] | None = None,
        batch_size: int = 32,
        threads: int = 0,
        media: str | None = None,
        folder_fps: float = DEFAULT_FOLDER_FPS,
        autorotate: bool = True,
        max_pixels: int | None = None,
        max_batch_pixels: int | None = None,
    ) -> None:
        _check_args(fps, start, end)
        check_pixel_budget("max_pixels", max_pixels)
        check_pixel_budget("max_batch_pixels", max_batch_pixels)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, not {batch_size}")
        if size is not None and (len(size) != 2 or min(size) < 1):
            raise ValueError(f"size must be (width, height) with positive values, not {size!r}")
        if threads < 0:
            raise ValueError(f"threads must be >= 0, not {threads}")
        self.path = Path(path)
        self.fps = None if fps is None else float(fps)
        self.stream = stream
        self.start, self.end = start, end
        self.size = size
        self.batch_size = batch_size
        self.threads = threads
        self.folder_fps = folder_fps
        self.autorotate = autorotate
        self.max_pixels = _types.MAX_FRAME_PIXELS if max_pixels is None else max_pixels
        self.max_batch_pixels = _types.MAX_BATCH_PIXELS if max_batch_pixels is None else max_batch_pixels
        if size is not None:
            check_frame_size(self.path, size[0], size[1], self.max_pixels)
        self.media = _resolve_media(self.path, media)
        self.truncated = False
        self.error: str | None = None
        #: after a pass: None when the file decoded cleanly, else a short reason (see module docstring)
        self.damage: str | None = None
        self.frames: int | None = None
        self.duration: float | None = None
        self.decoded_frames: int | None = None
        # open once now so a missing / streamless / unreadable file fails here, not mid-pipeline
        source = _open_source(self.path, stream, self.media, threads, folder_fps, autorotate, self.max_pixels)
        #: pixels of one output frame (``size``, else the stream's coded size; 0 when not known
        #: before decoding, as for a frame folder)
        self.frame_pixels = size[0] * size[1] if size is not None else source.width * source.height
        source.close()

    @classmethod
    def for_sample(
        cls,
        sample: Sample,
        video_root: str | os.PathLike[str] | None = None,
        fps: float | None = DEFAULT_FPS,
        **kw: Any,
    ) -> VideoReader:
        """A reader for a sample's video (relative paths resolved against ``video_root``), its segment
        (``sample.start`` / ``sample.end``) and its media type."""
        kw.setdefault("start", sample.start)
        kw.setdefault("end", sample.end)
        kw.setdefault("media", sample.media)
        return cls(resolve_video_path(sample.video, video_root), fps, **kw)

    def _pass(self) -> tuple[_Source, _Pass]:
        source = _open_source(
            self.path, self.stream, self.media, self.threads, self.folder_fps, self.autorotate, self.max_pixels
        )
        return source, _Pass(source, self.fps, self.start, self.end)

    def __iter__(self) -> Iterator[FrameBatch]:
        from tempcore import profiling

        _note_pass(self.path, self.start, self.end, "read")
        clock = time.perf_counter()  # decoding time between yields, for tempcore.profiling ("decode")
        source, decode = self._pass()
        try:
            width, height = self.size if self.size is not None else (0, 0)
            pool: _BatchPool | None = None
            buf = np.empty((0, 0, 0, 3), dtype=np.uint8)
            batch_size = self.batch_size
            times = np.empty(batch_size, dtype=np.float64)
            idx = np.empty(batch_size, dtype=np.int64)
            n = 0
            for position, pts, handle in decode:
                if pool is None:
                    if not width:
                        width, height = source.display_size(handle)
                        check_frame_size(self.path, width, height, self.max_pixels)
                    batch_size = max(1, min(batch_size, self.max_batch_pixels // (width * height)))
                    pool = _BatchPool((batch_size, height, width, 3))
                    buf = pool.take()
                    times, idx = times[:batch_size].copy(), idx[:batch_size].copy()
                buf[n] = source.to_rgb(handle, width, height)
                times[n] = decode.seconds(pts)
                idx[n] = position
                n += 1
                if n == batch_size:
                    batch = FrameBatch(buf, times, idx)
                    del buf
                    profiling.add("decode", time.perf_counter() - clock)
                    clock = -1.0  # suspended: the consumer's time is not decoding
                    yield batch
                    clock = time.perf_counter()
                    del batch
                    buf = pool.take()
                    times = np.empty_like(times)
                    idx = np.empty_like(idx)
                    n = 0
            self._record(decode)
            if n:
                last = FrameBatch(buf[:n].copy(), times[:n].copy(), idx[:n].copy())
                profiling.add("decode", time.perf_counter() - clock)
                clock = -1.0
                yield last
                clock = time.perf_counter()
            decode.raise_if_empty()
        finally:
            source.close()
            if clock >= 0:
                profiling.add("decode", time.perf_counter() - clock)

    def _record(self, decode: _Pass) -> None:
        self.truncated, self.error = decode.truncated, decode.error
        self.damage = _damage(decode)
        self.frames, self.duration, self.decoded_frames = decode.emitted, decode.duration(), decode.decoded

    def read_all(self) -> FrameBatch:
        """All frames in one batch (short clips only: this holds every frame in memory)."""
        batches = list(self)
        return FrameBatch(
            np.concatenate([b.frames for b in batches]),
            np.concatenate([b.timestamps for b in batches]),
            np.concatenate([b.indices for b in batches]),
        )


#: after its last requested frame, :func:`read_frames` decodes (without converting) up to this many
#: more source frames, so that a file cut shortly after that frame is reported as damaged
_DAMAGE_LOOKAHEAD_FRAMES = 64


def _damage(decode: _Pass) -> str | None:
    """The short damage reason of a finished (or stopped) pass; None when nothing went wrong."""
    if decode.error:
        return decode.error
    src = decode.source
    problems = []
    if src.demux_error:
        problems.append(src.demux_error)
    if src.decode_errors:
        problems.append(
            f"{src.decode_errors} packet(s)/image(s) failed to decode (last: {src.last_decode_error})"
        )
    return "; ".join(problems) or None


def resolve_video_path(video: str | os.PathLike[str], video_root: str | os.PathLike[str] | None) -> Path:
    """``video`` itself when absolute or when no root is given, else ``video_root / video``."""
    p = Path(video)
    if video_root is None or p.is_absolute():
        return p
    return Path(video_root) / p


def probe(
    path: str | os.PathLike[str],
    fps: float | None = DEFAULT_FPS,
    *,
    stream: int = 0,
    start: float | None = None,
    end: float | None = None,
    media: str | None = None,
    threads: int = 0,
    folder_fps: float = DEFAULT_FOLDER_FPS,
    autorotate: bool = True,
    max_pixels: int | None = None,
) -> VideoInfo:
    """Decode the video (without RGB conversion) and report exactly what :class:`VideoReader` yields:
    frame count and timestamps at ``fps``, duration, stream, codec, size, damage. ``max_pixels`` as
    for :class:`VideoReader`."""
    from tempcore import profiling

    _check_args(fps, start, end)
    check_pixel_budget("max_pixels", max_pixels)
    p = Path(path)
    _note_pass(p, start, end, "probe")
    with profiling.section("decode"):
        return _probe(p, fps, stream, start, end, media, threads, folder_fps, autorotate, max_pixels)


def _probe(
    p: Path, fps: float | None, stream: int, start: float | None, end: float | None, media: str | None,
    threads: int, folder_fps: float, autorotate: bool, max_pixels: int | None = None,
) -> VideoInfo:
    source = _open_source(p, stream, media, threads, folder_fps, autorotate, max_pixels)
    try:
        decode = _Pass(source, fps, start, end)
        timestamps: list[float] = []
        width, height, turns = source.width, source.height, 0
        for _, pts, handle in decode:
            if not timestamps:
                (width, height), turns = source.display_size(handle), source.quarter_turns(handle)
            timestamps.append(decode.seconds(pts))
        decode.raise_if_empty()
        nominal = None
        if source.nominal_interval:
            nominal = float(1 / (source.nominal_interval * source.time_base))
        container_duration = None
        if source.declared_end is not None:
            container_duration = decode.seconds(source.declared_end)
        extra: dict[str, Any] = {}
        if isinstance(source, _FolderSource):
            extra = {"folder_fps": folder_fps, "failed_images": list(source.failed)}
        if decode.nonmonotonic:
            extra["nonmonotonic_frames_skipped"] = decode.nonmonotonic
        return VideoInfo(
            path=str(p),
            stream=stream,
            codec=source.codec,
            width=width,
            height=height,
            duration=decode.duration(),
            frames=len(timestamps),
            timestamps=timestamps,
            fps=None if fps is None else float(fps),
            start=start,
            end=end,
            media=source.media,
            pix_fmt=source.pix_fmt,
            video_streams=source.video_streams,
            nominal_fps=nominal,
            decoded_frames=decode.decoded,
            container_frames=source.container_frames,
            container_duration=container_duration,
            truncated=decode.truncated,
            error=decode.error,
            estimated_timestamps=source.estimated,
            rotation=90 * turns,
            extra=extra,
            damage=_damage(decode),
        )
    finally:
        source.close()


def read_frames(
    path: str | os.PathLike[str],
    indices: Sequence[int],
    fps: float | None = DEFAULT_FPS,
    *,
    stream: int = 0,
    start: float | None = None,
    end: float | None = None,
    size: tuple[int, int] | None = None,
    media: str | None = None,
    threads: int = 0,
    folder_fps: float = DEFAULT_FOLDER_FPS,
    autorotate: bool = True,
    max_pixels: int | None = None,
) -> FrameBatch:
    """The decoded frames at positions ``indices`` of the sequence :class:`VideoReader` yields, in the
    order given (unsorted and repeated positions allowed). One streaming pass that converts only the
    requested frames and stops after the last one. Raises :class:`FrameIndexError` for a position
    outside 0..L-1. ``max_pixels`` as for :class:`VideoReader` (each returned frame is within it)."""
    _check_args(fps, start, end)
    check_pixel_budget("max_pixels", max_pixels)
    if size is not None:
        check_frame_size(path, size[0], size[1], _types.MAX_FRAME_PIXELS if max_pixels is None else max_pixels)
    wanted = [int(i) for i in indices]
    negative = [i for i in wanted if i < 0]
    if negative:
        raise FrameIndexError(path, f"frame positions must be >= 0, got {negative[:10]}")
    p = Path(path)
    if not wanted:
        width, height = size or (0, 0)
        return FrameBatch(
            np.empty((0, height, width, 3), np.uint8), np.empty(0, np.float64), np.empty(0, np.int64)
        )
    from tempcore import profiling

    _note_pass(p, start, end, "frames")
    with profiling.section("decode"):
        return _read_frames(p, wanted, fps, stream, start, end, size, media, threads, folder_fps, autorotate,
                            max_pixels)


def _read_frames(
    p: Path, wanted: list[int], fps: float | None, stream: int, start: float | None, end: float | None,
    size: tuple[int, int] | None, media: str | None, threads: int, folder_fps: float, autorotate: bool,
    max_pixels: int | None = None,
) -> FrameBatch:
    needed = set(wanted)
    last = max(needed)
    source = _open_source(p, stream, media, threads, folder_fps, autorotate, max_pixels)
    got: dict[int, tuple[np.ndarray, float]] = {}
    try:
        decode = _Pass(source, fps, start, end)
        width, height = size if size is not None else (0, 0)
        passes = iter(decode)
        stop_after: int | None = None  # source frames decoded when the last wanted frame came
        for position, pts, handle in passes:
            if stop_after is not None:
                if decode.decoded - stop_after > _DAMAGE_LOOKAHEAD_FRAMES:
                    break
                continue
            if not width:  # the sequence's size is its first frame's, as in VideoReader
                width, height = source.display_size(handle)
                check_frame_size(p, width, height, source.max_pixels)
            if position in needed:
                got[position] = (source.to_rgb(handle, width, height), decode.seconds(pts))
            if position >= last:
                stop_after = decode.decoded
        else:
            decode.raise_if_empty()
        close = getattr(passes, "close", None)
        if close is not None:
            close()
    finally:
        source.close()
    missing = sorted(needed - got.keys())
    if missing:
        note = f" (the file is truncated: {decode.error})" if decode.truncated else ""
        raise FrameIndexError(
            p, f"frame position(s) {missing[:10]} outside the decoded sequence 0..{decode.emitted - 1}{note}"
        )
    frames = np.stack([got[i][0] for i in wanted])
    return FrameBatch(
        frames,
        np.array([got[i][1] for i in wanted], dtype=np.float64),
        np.array(wanted, dtype=np.int64),
        damage=_damage(decode),
    )


def read_selected(
    path: str | os.PathLike[str],
    select: Callable[[int, float, float | None], bool],
    *,
    stream: int = 0,
    media: str | None = None,
    threads: int = 0,
    folder_fps: float = DEFAULT_FOLDER_FPS,
    autorotate: bool = True,
) -> tuple[list[float], FrameBatch]:
    """One pass over every frame of the video at its own rate (``fps=None``): the presentation time of
    each frame (what :func:`probe` reports as ``timestamps``) and the frames for which
    ``select(position, time, next_time)`` is true (``next_time``: the next frame's time, ``None`` for
    the last frame), converted as :func:`read_frames` converts them (``fps=None``, ``size=None``), so
    a caller that picks frames by time (the frame shown at ``t``: the last whose time is <= ``t``)
    or by position needs no :func:`probe` pass before its :func:`read_frames` pass. Raises as
    :func:`probe` does for a video without frames."""
    from tempcore import profiling

    p = Path(path)
    _note_pass(p, None, None, "selected")
    with profiling.section("decode"):
        source = _open_source(p, stream, media, threads, folder_fps, autorotate)
        times: list[float] = []
        got: dict[int, np.ndarray] = {}
        try:
            decode = _Pass(source, None, None, None)
            width = height = 0
            held: tuple[int, float, Any] | None = None
            for position, pts, handle in decode:
                if not width:
                    width, height = source.display_size(handle)
                t = decode.seconds(pts)
                times.append(t)
                if held is not None and select(held[0], held[1], t):
                    got[held[0]] = source.to_rgb(held[2], width, height)
                held = (position, t, handle)
            if held is not None and select(held[0], held[1], None):
                got[held[0]] = source.to_rgb(held[2], width, height)
            decode.raise_if_empty()
        finally:
            source.close()
    order = sorted(got)
    frames = (np.stack([got[i] for i in order]) if order else np.empty((0, height, width, 3), np.uint8))
    return times, FrameBatch(frames, np.array([times[i] for i in order], dtype=np.float64),
                             np.array(order, dtype=np.int64), damage=_damage(decode))


__all__ = [
    "VideoReader",
    "probe",
    "read_frames",
    "read_selected",
]
