"""Where decoded frames come from: a container decoded by PyAV (:class:`_AVSource`: the stream, its
time base, seeking to a segment, FFmpeg's threads) or a folder of images (:class:`_FolderSource`),
behind one small interface (:class:`_Source`).
"""

from __future__ import annotations

import collections
import math
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    pass


from tempcore.video import types as _types  # SMALL_FRAME_PIXELS read at call time (a setting)
from tempcore.video.types import (
    IMAGE_SUFFIXES,
    CorruptVideoError,
    EmptyVideoError,
    NoVideoStreamError,
    VideoError,
    VideoNotFoundError,
)

_HEADER_DURATION_FORMATS = ("mov", "mp4", "matroska", "webm", "avi")


_LOOKAHEAD = 24  # packets read ahead to bound the next presentation time


_SEEK_BACKOFF_S = (0.0, 1.0, 5.0, 30.0)


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
        #: the pixel budget of one frame (set by :func:`_open_source`): larger frames are refused
        self.max_pixels: int = _types.MAX_FRAME_PIXELS

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
        if self._threads == 0 and 0 < (cc.width or 0) * (cc.height or 0) <= _types.SMALL_FRAME_PIXELS:
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
            if frame.width * frame.height > self.max_pixels:  # a size change mid-stream
                _types.check_frame_size(self.path, frame.width, frame.height, self.max_pixels)
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
        from PIL import Image

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
                    # the header's size (no pixels decoded); EXIF orientations 5-8 swap the sides
                    turned = autorotate and im.getexif().get(0x0112, 1) in (5, 6, 7, 8)
                    self.width, self.height = (im.height, im.width) if turned else im.size
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
                    # the header's size, checked before the pixels are decoded
                    _types.check_frame_size(image_path, im.width, im.height, self.max_pixels)
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
    max_pixels: int | None = None,
) -> _Source:
    """The source of a video; refuses one whose declared frame size exceeds ``max_pixels`` (None:
    :data:`tempcore.video.types.MAX_FRAME_PIXELS`) with :class:`~tempcore.video.types.FrameTooLargeError`
    before any frame is decoded. The source refuses larger frames met later too."""
    p = Path(path)
    kind = _resolve_media(p, media)
    source: _Source
    if kind == "frames":
        if stream != 0:
            raise NoVideoStreamError(p, f"a frame folder has one stream; stream {stream} does not exist")
        source = _FolderSource(p, folder_fps, autorotate)
    else:
        if p.stat().st_size == 0:
            raise EmptyVideoError(p, "the file is empty (0 bytes)")
        source = _AVSource(p, stream, kind, threads, autorotate)
    source.max_pixels = _types.MAX_FRAME_PIXELS if max_pixels is None else max_pixels
    try:
        _types.check_frame_size(p, source.width or 0, source.height or 0, source.max_pixels)
    except VideoError:
        source.close()
        raise
    return source
