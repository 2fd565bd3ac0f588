"""Decode videos at a target frame rate by presentation timestamp, streaming, with named errors.

Semantics (the TempCore paper decodes "uniformly at 10 FPS"; these are the choices it leaves open):

- **Timeline.** A frame's time is its presentation timestamp (pts x time base) minus the container's
  start time, in seconds: the clock a player shows. For nearly all MP4 / MKV / WebM files the start
  time is 0, so this is exactly ffprobe's ``pts_time``. Time is never inferred from a frame's index
  or the nominal frame rate, so variable-frame-rate video gets its real times.
- **Target times.** ``t_j = t0 + j / fps`` for j = 0, 1, ... while ``t_j < end``. ``t0`` is the
  segment ``start`` when given, else the time of the stream's first frame. ``end`` is the segment
  ``end`` when given, capped by the end of the stream (last frame's pts + its duration).
- **Pick.** For each target time, the frame being shown at that time: the last frame whose
  pts <= t_j. A target before the first frame shows nothing and picks nothing.
- **No duplicates.** A source frame is emitted once, however many target times it covers. A 5 fps
  source at a 10 fps target yields each source frame once, so the number of decoded frames ``L`` can
  be smaller than ``duration * fps``; a model asking for more frames than exist gets fewer, never
  repeats. ``fps=None`` emits every source frame shown in the segment.
- **Returned timestamps** are the picked frame's own time (not the target time), so they are real
  presentation times. In a segment, the first frame may start slightly before ``start``: it is the
  frame being shown at ``start``.
- **Indices** are positions 0..L-1 in this decoded sequence (per video x fps x segment): the indices
  a :class:`~tempcore.records.FrameSet` refers to.
- **Segments** seek to the keyframe before ``start`` (retrying further back if the container lands
  late, falling back to a linear decode), then decode; frames before ``start`` are decoded but not
  converted.
- **Streams.** ``stream=N`` counts video streams only (0 = the first), skipping attached cover
  pictures. Several video streams, 10-bit, HEVC, AV1, VP9, GIF: whatever FFmpeg (bundled with PyAV)
  decodes. The container's frame count and duration are never used for counting (MKV / WebM report
  0 frames); only decoded frames count.
- **Frame folders** (``media="frames"``): image files sorted by name (numbers compared as numbers),
  image i shown at ``i / folder_fps`` (default 3 fps, MVBench's episodic frame folders), each lasting
  ``1 / folder_fps``. An image that fails to decode is skipped and reported; the others keep their
  times.
- **Conversion.** Only picked frames are converted to RGB (rgb24, swscale bilinear when resizing);
  ``size=(width, height)`` resizes during conversion; without it the first picked frame's size is
  used for all frames (a stream that changes resolution midway is scaled to it).
- **Rotation.** Frames are shown upright as a player shows them (``autorotate=True``): a display
  matrix rotation (phone videos) is applied in quarter turns, as is a JPEG's EXIF orientation in
  frame folders; ``size`` is the displayed (rotated) size. Display-matrix flips are not applied.
- **Damage.** A file that stops early (truncated, or a demuxer error) yields the frames that decoded;
  afterwards ``reader.truncated`` is True and ``reader.error`` says why (packets that fail to decode
  are skipped and reported in ``reader.error``). Truncation is also detected when the decoded frames
  end well short (more than max(0.5 s, 2 frame intervals)) of the duration the container header
  declares for the stream (MP4 / MOV, Matroska / WebM, AVI; other formats only report errors).
  A file that yields no frame at all raises a named error.
  ``damage`` (on :class:`VideoInfo`, on a :class:`VideoReader` after a pass, on the
  :class:`FrameBatch` of :func:`read_frames`) is the one field callers should read: ``None`` for a
  clean file, else a short reason (truncation and / or undecodable packets), the same text as
  ``error``. :func:`read_frames` stops decoding 64 source frames after the last requested frame (or
  at the end of the stream, whichever comes first), so its ``damage`` covers the file up to there;
  :func:`probe` decodes the whole file and is the complete check.

Memory is bounded: frames are yielded in :class:`FrameBatch` es of at most ``batch_size`` frames;
one undecided decoded frame (plus FFmpeg's own thread buffers) is held between batches.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import math
import os
import re
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.errors import TempcoreError

if TYPE_CHECKING:
    from tempcore.records import Sample

__all__ = [
    "CorruptVideoError",
    "EmptyVideoError",
    "FrameBatch",
    "FrameIndexError",
    "NoVideoStreamError",
    "VideoError",
    "VideoInfo",
    "VideoNotFoundError",
    "DecodeCounter",
    "VideoReader",
    "count_decodes",
    "probe",
    "read_frames",
]

DEFAULT_FPS = 10.0
DEFAULT_FOLDER_FPS = 3.0
SMALL_FRAME_PIXELS = 320 * 240
"""With ``threads=0`` (automatic), a video whose frames have at most this many pixels is decoded
and converted to RGB single-threaded: for small frames FFmpeg's frame threading and swscale's
thread pool cost more per frame than they save.
Measured with :class:`VideoReader` on 5 s H.264 clips at 30 fps read at 10 fps, 2-core machine, FFmpeg's
threading vs one thread (best of 3): 48 x 48 21.5 vs 7.7 ms, 96 x 96 21.7 vs 10.1 ms, 160 x 120 30.3 vs
17.1 ms, 320 x 240 52.2 vs 49.2 ms, 640 x 360 137 vs 117 ms, 1280 x 720 412 vs 480 ms
(``benchmarks/decode_threads.py``). Above the bound FFmpeg's choice stands: on more cores
and larger frames threading pays. Threading never changes the decoded pixels."""
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"})
_HEADER_DURATION_FORMATS = ("mov", "mp4", "matroska", "webm", "avi")
_LOOKAHEAD = 24  # packets read ahead to bound the next presentation time
_SKIP_UNNEEDED = True  # skip non-reference frames no target needs (exact; False decodes every frame)
_SEEK_BACKOFF_S = (0.0, 1.0, 5.0, 30.0)
_TRUNCATION_TOLERANCE_S = 0.5


# --- errors -------------------------------------------------------------------------------


class VideoError(TempcoreError):
    """A video could not be decoded as asked. ``.path`` is the file, ``.reason`` says why; the
    message reads ``"<kind>: <path>: <reason>"``."""

    kind = "video error"

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.kind}: {self.path}: {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.reason))


class VideoNotFoundError(VideoError):
    """The path does not exist."""

    kind = "video not found"


class NoVideoStreamError(VideoError):
    """The file has no video stream (e.g. audio only), or not the one asked for."""

    kind = "no video stream"


class EmptyVideoError(VideoError):
    """The file (or the requested segment) holds no video frame."""

    kind = "empty video"


class CorruptVideoError(VideoError):
    """The file cannot be opened or nothing in it decodes."""

    kind = "corrupt video"


class FrameIndexError(VideoError, IndexError):
    """A requested frame position is outside the decoded sequence 0..L-1."""

    kind = "frame position out of range"


# --- counting decoding passes ---------------------------------------------------------------


class DecodeCounter:
    """Decoding passes made in its context while it is active (:func:`count_decodes`), per video.

    A *pass* is one iteration of :class:`VideoReader`, one :func:`probe` or one :func:`read_frames`
    (each opens the file and decodes it from the start, or from a seek, onwards). A *video* is a
    file (its absolute path) x segment (``start``, ``end``): two segments of one file are decoded
    in two passes by design. Opening a file to check it (``VideoReader``'s constructor) is not a
    pass. Passes in other processes (Ray actors) are not seen. ``by_kind``: passes per kind
    (``read``: :class:`VideoReader`, ``probe``, ``frames``: :func:`read_frames`)."""

    def __init__(self) -> None:
        self.passes: collections.Counter[tuple[str, float | None, float | None]] = collections.Counter()
        self.by_kind: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self.active = True  # False once its block has ended: a copy of the context it stays in counts nothing

    def note(self, path: str | os.PathLike[str], start: float | None, end: float | None, kind: str) -> None:
        if not self.active:
            return
        with self._lock:
            self.passes[(os.path.abspath(path), start, end)] += 1
            self.by_kind[kind] += 1

    def summary(self) -> dict[str, Any]:
        """``videos`` (distinct file x segment decoded), ``passes``, ``max_per_video``,
        ``per_video`` (passes / videos, 3 decimals; 0 when nothing was decoded) and ``by_kind``."""
        with self._lock:
            videos, passes = len(self.passes), sum(self.passes.values())
            return {"videos": videos, "passes": passes, "max_per_video": max(self.passes.values(), default=0),
                    "per_video": round(passes / videos, 3) if videos else 0.0, "by_kind": dict(sorted(self.by_kind.items()))}


_COUNTERS: contextvars.ContextVar[tuple[DecodeCounter, ...]] = contextvars.ContextVar(
    "tempcore_decode_counters", default=()
)


@contextlib.contextmanager
def count_decodes() -> Iterator[DecodeCounter]:
    """Count the decoding passes of this context until the block ends (see :class:`DecodeCounter`):
    those of this thread and of the threads tempcore starts from it, which run in a copy of its
    context (:func:`tempcore.run.ordered.in_context`), so two runs in two threads count apart. Counters
    nest: each active one sees every pass of the blocks inside it."""
    counter = DecodeCounter()
    token = _COUNTERS.set((*_COUNTERS.get(), counter))
    try:
        yield counter
    finally:
        counter.active = False  # inert wherever it stays listed
        # a block that ends in another context (a generator closed in another thread) cannot unlist it
        with contextlib.suppress(ValueError):
            _COUNTERS.reset(token)


def _note_pass(path: str | os.PathLike[str], start: float | None, end: float | None, kind: str) -> None:
    for c in _COUNTERS.get():  # nothing counts: one context read
        c.note(path, start, end, kind)


# --- records ------------------------------------------------------------------------------


@dataclass
class FrameBatch:
    """Consecutive decoded frames. ``frames``: (n, H, W, 3) uint8 RGB; ``timestamps``: (n,) float64
    seconds, each frame's presentation time; ``indices``: (n,) int64 positions in the decoded sequence."""

    frames: np.ndarray
    timestamps: np.ndarray
    indices: np.ndarray
    #: damage the decoder found while producing these frames (None: clean); see the module docstring
    damage: str | None = None

    def __len__(self) -> int:
        return len(self.indices)


@dataclass
class VideoInfo:
    """What :func:`probe` found. ``frames`` / ``timestamps`` / ``duration`` are those of the decoded
    sequence at ``fps`` (exactly what :class:`VideoReader` yields); ``width`` / ``height`` the displayed
    size of its first frame (``rotation``: the counter-clockwise degrees applied to show it upright);
    ``decoded_frames`` counts every source frame decoded (including those before a segment's start);
    ``nominal_fps`` is the container's average rate; the ``container_*`` fields are what the file
    claims (informational; 0 / None when it does not say)."""

    path: str
    stream: int
    codec: str
    width: int
    height: int
    duration: float
    frames: int
    timestamps: list[float]
    fps: float | None
    start: float | None
    end: float | None
    media: str
    pix_fmt: str | None
    video_streams: int
    nominal_fps: float | None
    decoded_frames: int
    container_frames: int
    container_duration: float | None
    truncated: bool = False
    error: str | None = None
    estimated_timestamps: int = 0
    rotation: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    #: None for a clean file, else a short reason (truncated, packets that failed to decode)
    damage: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- sources ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Decoded:
    """One decoded source frame on the source's integer clock."""

    pts: int
    duration: int  # 0 when unknown
    handle: Any  # av.VideoFrame or an image path


class _Source(ABC):
    """A stream of decoded frames with integer timestamps in ``time_base`` units."""

    path: Path
    media: str
    time_base: Fraction
    zero: Fraction  # timeline origin, in time_base units
    codec: str
    width: int
    height: int
    pix_fmt: str | None
    video_streams: int
    nominal_interval: Fraction | None  # 1 / nominal rate, in time_base units
    container_frames: int
    declared_end: Fraction | None  # stream end claimed by the header, in time_base units
    first_pts: int | None

    def __init__(self) -> None:
        self.demux_error: str | None = None
        self.decode_errors = 0
        self.last_decode_error: str | None = None
        self.estimated = 0
        # Set by a pass with a target rate: needed(pts, next_pts) -> False when the frame shown from
        # ``pts`` until (at the latest) ``next_pts`` is at no target time, so it may be skipped.
        self.needed: Any = None
        self.skipped = 0

    @abstractmethod
    def frames(self, seek_to: Fraction | None) -> Iterator[_Decoded]:
        """Decoded frames in presentation order, starting at or before ``seek_to`` (tb units)."""

    @abstractmethod
    def to_rgb(self, handle: Any, width: int, height: int) -> np.ndarray:
        """The (height, width, 3) uint8 RGB image of a decoded frame as displayed (rotation applied)."""

    def quarter_turns(self, handle: Any) -> int:
        """Counter-clockwise quarter turns that display the frame upright (0 when not rotated)."""
        return 0

    def display_size(self, handle: Any) -> tuple[int, int]:
        """(width, height) of the frame as displayed."""
        w, h = handle.width, handle.height
        return (h, w) if self.quarter_turns(handle) % 2 else (w, h)

    def close(self) -> None:  # noqa: B027 - sources without resources need nothing
        """Release the file."""


def _av_errors() -> tuple[type[BaseException], ...]:
    import av

    return (av.FFmpegError, EOFError, OSError, ValueError)


class _AVSource(_Source):
    """A video or GIF decoded with PyAV."""

    _container: Any  # the av InputContainer; None once closed

    def __init__(self, path: Path, stream: int, media: str, threads: int, autorotate: bool) -> None:
        super().__init__()
        import av

        self.path, self.media, self._stream_number, self._threads = path, media, stream, threads
        self._autorotate = autorotate
        self._open()
        container, vstream = self._container, self._stream
        tb = vstream.time_base
        self.time_base = Fraction(tb.numerator, tb.denominator) if tb else Fraction(1, 1_000_000)
        start_us = container.start_time or 0
        self.zero = Fraction(start_us, 1_000_000) / self.time_base
        cc = vstream.codec_context
        self.codec = cc.name
        self.width, self.height = cc.width, cc.height
        self.pix_fmt = cc.pix_fmt
        rate = vstream.average_rate or vstream.guessed_rate or vstream.base_rate
        self.nominal_interval = (1 / (Fraction(rate) * self.time_base)) if rate else None
        self.container_frames = int(vstream.frames or 0)
        self.first_pts = vstream.start_time
        self.declared_end = self._declared_end()
        self._reformatter = av.video.reformatter.VideoReformatter()

    def _open(self) -> None:
        import av

        try:
            container = av.open(str(self.path), mode="r")
        except av.error.PermissionError as exc:
            raise VideoError(self.path, f"cannot read the file: {exc}") from exc
        except _av_errors() as exc:
            raise CorruptVideoError(self.path, f"cannot open as a video: {exc}") from exc
        video = [
            s for s in container.streams.video if not (s.disposition & av.stream.Disposition.attached_pic)
        ]
        self.video_streams = len(video)
        if not container.streams:
            container.close()
            raise CorruptVideoError(
                self.path,
                "no streams found: not a media file, or its index is missing "
                "(e.g. an MP4 cut short before its moov atom)",
            )
        if not video:
            kinds = sorted({s.type for s in container.streams})
            container.close()
            raise NoVideoStreamError(self.path, f"the file has no video stream (streams: {', '.join(kinds)})")
        if not 0 <= self._stream_number < len(video):
            container.close()
            raise NoVideoStreamError(
                self.path,
                f"video stream {self._stream_number} does not exist; the file has {len(video)} "
                f"video stream(s), numbered from 0",
            )
        vstream = video[self._stream_number]
        cc = vstream.codec_context
        if self._threads == 0 and 0 < (cc.width or 0) * (cc.height or 0) <= SMALL_FRAME_PIXELS:
            self._threads = 1  # decoding and conversion (see SMALL_FRAME_PIXELS)
        if self._threads != 1:
            cc.thread_type = "AUTO"
        cc.thread_count = self._threads
        self._container, self._stream = container, vstream

    def _declared_end(self) -> Fraction | None:
        container, vstream = self._container, self._stream
        names = container.format.name.split(",")
        if not any(n in _HEADER_DURATION_FORMATS for n in names):
            return None
        if vstream.duration:
            return Fraction(vstream.duration + (vstream.start_time or 0))
        tag = vstream.metadata.get("DURATION") or vstream.metadata.get("duration")
        if tag:
            m = re.fullmatch(r"(\d+):(\d+):(\d+(?:\.\d+)?)", tag.strip())
            if m:
                seconds = Fraction(m.group(3)) + 60 * int(m.group(2)) + 3600 * int(m.group(1))
                return self.zero + seconds / self.time_base
        if container.duration and len(container.streams) == 1:
            return self.zero + Fraction(container.duration, 1_000_000) / self.time_base
        return None

    def _decode(self) -> Iterator[Any]:
        """Every frame from the current position; demux errors end it, decode errors skip a packet."""
        container, vstream = self._container, self._stream
        cc = vstream.codec_context
        errors = _av_errors()
        demux = container.demux(vstream)
        while True:
            try:
                packet = next(demux)
            except StopIteration:
                break
            except errors as exc:
                self.demux_error = f"reading stopped at a damaged or missing part of the file: {exc}"
                break
            if packet.size == 0:
                continue  # the demuxer's end-of-stream marker; the decoder is drained below
            if self.needed is not None:
                yield from self._skipping(packet, demux, cc, errors)
                return
            try:
                out = cc.decode(packet)
            except errors as exc:
                self.decode_errors += 1
                self.last_decode_error = str(exc)
                continue
            yield from out
        try:
            yield from cc.decode(None)
        except errors as exc:
            self.decode_errors += 1
            self.last_decode_error = str(exc)

    def _skipping(self, first: Any, demux: Iterator[Any], cc: Any, errors: tuple[type[BaseException], ...]) -> Iterator[Any]:
        """Decode with a lookahead of packets; a packet whose frame no target needs is sent with
        ``skip_frame = NONREF`` (the decoder drops it only when no other frame refers to it).

        Exactness: the frame with pts ``p`` is shown until the next presentation time, which is at
        most ``q`` = the smallest pts > ``p`` among the packets in the window; if no target falls in
        [p, q) it falls in no smaller interval either. Without such a ``q`` (or a pts) it is decoded.
        """
        window: collections.deque[Any] = collections.deque([first])
        exhausted = False
        skipping = False
        needed = self.needed
        while window:
            while not exhausted and len(window) < _LOOKAHEAD:
                try:
                    nxt = next(demux)
                except StopIteration:
                    exhausted = True
                    break
                except errors as exc:
                    self.demux_error = f"reading stopped at a damaged or missing part of the file: {exc}"
                    exhausted = True
                    break
                if nxt.size:
                    window.append(nxt)
            packet = window.popleft()
            p = packet.pts
            skip = False
            if p is not None and not packet.is_keyframe:
                q = None
                for other in window:
                    o = other.pts
                    if o is not None and o > p and (q is None or o < q):
                        q = o
                skip = q is not None and not needed(p, q)
            if skip != skipping:
                cc.skip_frame = "NONREF" if skip else "DEFAULT"
                skipping = skip
            try:
                out = cc.decode(packet)
            except errors as exc:
                self.decode_errors += 1
                self.last_decode_error = str(exc)
                continue
            if skip:
                self.skipped += 1
            yield from out
        if skipping:
            cc.skip_frame = "DEFAULT"
        try:
            yield from cc.decode(None)
        except errors as exc:
            self.decode_errors += 1
            self.last_decode_error = str(exc)

    def _timed(self, raw: Iterator[Any]) -> Generator[_Decoded, None, None]:
        last_pts: int | None = None
        last_duration = 0
        nominal = max(1, round(self.nominal_interval)) if self.nominal_interval else 1
        for frame in raw:
            pts = frame.pts
            duration = frame.duration or 0
            if pts is None:  # no timestamp from the container: continue from the previous frame
                self.estimated += 1
                pts = 0 if last_pts is None else last_pts + (last_duration or nominal)
            last_pts, last_duration = pts, duration
            yield _Decoded(pts, duration, frame)

    def frames(self, seek_to: Fraction | None) -> Iterator[_Decoded]:
        if seek_to is None or (self.first_pts is not None and seek_to <= self.first_pts):
            yield from self._timed(self._decode())
            return
        errors = _av_errors()
        for backoff in _SEEK_BACKOFF_S:
            target = math.floor(seek_to - Fraction(repr(backoff)) / self.time_base)
            if self.first_pts is not None and target <= self.first_pts:
                break
            try:
                self._container.seek(target, stream=self._stream, backward=True, any_frame=False)
                self._stream.codec_context.flush_buffers()
            except errors:
                break
            it = self._timed(self._decode())
            first = next(it, None)
            if first is not None and first.pts <= seek_to:
                yield first
                yield from it
                return
            it.close()
            self.demux_error, self.decode_errors, self.last_decode_error = None, 0, None
        # seeking did not land before the start: decode from the beginning
        self.close()
        self._open()
        self.demux_error, self.decode_errors, self.last_decode_error = None, 0, None
        yield from self._timed(self._decode())

    def quarter_turns(self, handle: Any) -> int:
        # the display matrix's rotation, counter-clockwise degrees (phone videos: often -90 or 90)
        return round(handle.rotation / 90) % 4 if self._autorotate else 0

    def to_rgb(self, handle: Any, width: int, height: int) -> np.ndarray:
        # One reformatter per pass keeps one swscale context (``frame.to_ndarray(width=...)`` builds a
        # new context, and a new thread pool, for every frame). Its threads follow ``threads``
        # (0 = automatic, 1 for small frames), so on many cores the conversion does not become the
        # serial bottleneck.
        # The result is a view that keeps its frame alive.
        turns = self.quarter_turns(handle)
        if turns % 2:
            width, height = height, width
        out = self._reformatter.reformat(
            handle, width=width, height=height, format="rgb24", threads=self._threads
        )
        return np.rot90(out.to_ndarray(), turns) if turns else out.to_ndarray()

    def close(self) -> None:
        container = getattr(self, "_container", None)
        if container is not None:
            container.close()
            self._container = None


def _natural_key(name: str) -> list[Any]:
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)]


class _FolderSource(_Source):
    """A folder of images, image i at i / folder_fps."""

    def __init__(self, path: Path, folder_fps: float, autorotate: bool) -> None:
        super().__init__()
        from PIL import Image, ImageOps

        self._autorotate = autorotate
        if not (math.isfinite(folder_fps) and folder_fps > 0):
            raise ValueError(f"folder_fps must be positive, not {folder_fps!r}")
        self.path, self.media = path, "frames"
        self._images = sorted(
            (p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()),
            key=lambda p: _natural_key(p.name),
        )
        if not self._images:
            raise EmptyVideoError(path, f"no image files ({', '.join(sorted(IMAGE_SUFFIXES))}) in the folder")
        self.time_base = 1 / Fraction(repr(float(folder_fps)))
        self.zero = Fraction(0)
        self.codec = "images"
        self.pix_fmt = None
        self.video_streams = 1
        self.nominal_interval = Fraction(1)
        self.container_frames = len(self._images)
        self.declared_end = None
        self.first_pts = 0
        self.failed: list[str] = []
        self.width = self.height = 0  # until an image opens (the reader uses the first decoded one)
        for image_path in self._images[:10]:
            try:
                with Image.open(image_path) as im:
                    self.width, self.height = (ImageOps.exif_transpose(im) if autorotate else im).size
                break
            except (OSError, ValueError):
                continue

    def frames(self, seek_to: Fraction | None) -> Iterator[_Decoded]:
        from PIL import Image, ImageOps

        first = 0 if seek_to is None else max(0, math.floor(seek_to))
        for i in range(first, len(self._images)):
            image_path = self._images[i]
            try:
                with Image.open(image_path) as im:
                    im.load()
                    image = (ImageOps.exif_transpose(im) if self._autorotate else im).convert("RGB")
            except (OSError, ValueError, Image.DecompressionBombError) as exc:
                self.decode_errors += 1
                self.last_decode_error = f"{image_path.name}: {exc}"
                self.failed.append(image_path.name)
                continue
            yield _Decoded(i, 1, image)

    def to_rgb(self, handle: Any, width: int, height: int) -> np.ndarray:
        from PIL import Image

        if handle.size != (width, height):
            handle = handle.resize((width, height), Image.Resampling.BILINEAR)
        return np.asarray(handle, dtype=np.uint8)


def _resolve_media(path: Path, media: str | None) -> str:
    if not path.exists():
        raise VideoNotFoundError(path, "no such file or folder")
    detected = "frames" if path.is_dir() else ("gif" if path.suffix.lower() == ".gif" else "video")
    if media is None:
        return detected
    if media not in ("video", "gif", "frames"):
        raise ValueError(f"media must be 'video', 'gif' or 'frames', not {media!r}")
    if (media == "frames") != (detected == "frames"):
        kind = "a folder" if path.is_dir() else "a file"
        raise VideoError(path, f"media {media!r} was asked for, but the path is {kind}")
    return media


def _open_source(
    path: str | os.PathLike[str],
    stream: int,
    media: str | None,
    threads: int,
    folder_fps: float,
    autorotate: bool = True,
) -> _Source:
    p = Path(path)
    kind = _resolve_media(p, media)
    if kind == "frames":
        if stream != 0:
            raise NoVideoStreamError(p, f"a frame folder has one stream; stream {stream} does not exist")
        return _FolderSource(p, folder_fps, autorotate)
    if p.stat().st_size == 0:
        raise EmptyVideoError(p, "the file is empty (0 bytes)")
    return _AVSource(p, stream, kind, threads, autorotate)


# --- picking frames by presentation time ----------------------------------------------------


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


# --- batch buffers ------------------------------------------------------------------------


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


# --- public API ---------------------------------------------------------------------------


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
    (display-matrix rotation / EXIF orientation).

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
    ) -> None:
        _check_args(fps, start, end)
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
        self.media = _resolve_media(self.path, media)
        self.truncated = False
        self.error: str | None = None
        #: after a pass: None when the file decoded cleanly, else a short reason (see module docstring)
        self.damage: str | None = None
        self.frames: int | None = None
        self.duration: float | None = None
        self.decoded_frames: int | None = None
        # open once now so a missing / streamless / unreadable file fails here, not mid-pipeline
        source = _open_source(self.path, stream, self.media, threads, folder_fps, autorotate)
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
            self.path, self.stream, self.media, self.threads, self.folder_fps, self.autorotate
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
            times = np.empty(self.batch_size, dtype=np.float64)
            idx = np.empty(self.batch_size, dtype=np.int64)
            n = 0
            for position, pts, handle in decode:
                if pool is None:
                    if not width:
                        width, height = source.display_size(handle)
                    pool = _BatchPool((self.batch_size, height, width, 3))
                    buf = pool.take()
                buf[n] = source.to_rgb(handle, width, height)
                times[n] = decode.seconds(pts)
                idx[n] = position
                n += 1
                if n == self.batch_size:
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
) -> VideoInfo:
    """Decode the video (without RGB conversion) and report exactly what :class:`VideoReader` yields:
    frame count and timestamps at ``fps``, duration, stream, codec, size, damage."""
    from tempcore import profiling

    _check_args(fps, start, end)
    p = Path(path)
    _note_pass(p, start, end, "probe")
    with profiling.section("decode"):
        return _probe(p, fps, stream, start, end, media, threads, folder_fps, autorotate)


def _probe(
    p: Path, fps: float | None, stream: int, start: float | None, end: float | None, media: str | None,
    threads: int, folder_fps: float, autorotate: bool,
) -> VideoInfo:
    source = _open_source(p, stream, media, threads, folder_fps, autorotate)
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
) -> FrameBatch:
    """The decoded frames at positions ``indices`` of the sequence :class:`VideoReader` yields, in the
    order given (unsorted and repeated positions allowed). One streaming pass that converts only the
    requested frames and stops after the last one. Raises :class:`FrameIndexError` for a position
    outside 0..L-1."""
    _check_args(fps, start, end)
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
        return _read_frames(p, wanted, fps, stream, start, end, size, media, threads, folder_fps, autorotate)


def _read_frames(
    p: Path, wanted: list[int], fps: float | None, stream: int, start: float | None, end: float | None,
    size: tuple[int, int] | None, media: str | None, threads: int, folder_fps: float, autorotate: bool,
) -> FrameBatch:
    needed = set(wanted)
    last = max(needed)
    source = _open_source(p, stream, media, threads, folder_fps, autorotate)
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
