"""What decoding produces and the errors it names: :class:`FrameBatch`, :class:`VideoInfo`, the
:class:`VideoError` family, the decoding defaults, and the per-context decode counters
(:func:`count_decodes`) that tests and the demo use to prove each video is decoded once.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import os
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.errors import TempcoreError

if TYPE_CHECKING:
    pass




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


MAX_FRAME_PIXELS = 4096 * 4096
"""The decoder's pixel budget for one frame (a setting, read at call time; the ``max_pixels`` keyword of
:class:`~tempcore.video.decode.VideoReader`, :func:`~tempcore.video.decode.probe` and
:func:`~tempcore.video.decode.read_frames` overrides it per call). A video whose declared size, or any
decoded frame, has more pixels is refused with :class:`FrameTooLargeError` before its frames are
converted or batched: a 1.4 kB GIF can declare a 10000 x 10000 screen, and 32 such RGB frames are
9.6 GB. 4096 x 4096 (16.8 MP, 50 MB as RGB) admits every common video size up to 4K DCI."""


MAX_BATCH_PIXELS = 32 * 1920 * 1088
"""The pixel budget of one :class:`FrameBatch` buffer (a setting, read at call time; the reader's
``max_batch_pixels`` keyword overrides it): a batch holds ``min(batch_size, max_batch_pixels //
frame_pixels)`` frames, at least one, so a batch buffer is at most about 200 MB (or one frame of
:data:`MAX_FRAME_PIXELS`). 32 frames of 1080p fit, as before. A reader holds a few such buffers
(``decode._BatchPool`` keeps 3, scoring queues ``frame_scoring._QUEUE_BATCHES`` more): per video
being decoded about 1 GB at most, so two scoring workers (``workers=2``) stay near 2 GB; the tests
check the hostile inputs of issue 31 under an address-space limit."""


def check_frame_size(path: str | os.PathLike[str], width: int, height: int, max_pixels: int | None) -> None:
    """Raise :class:`FrameTooLargeError` when ``width`` x ``height`` exceeds ``max_pixels``
    (None: :data:`MAX_FRAME_PIXELS`)."""
    limit = MAX_FRAME_PIXELS if max_pixels is None else max_pixels
    if int(width) * int(height) > limit:
        raise FrameTooLargeError(
            path,
            f"{width}x{height} frames exceed max_pixels={limit} ({_size_words(limit)}): refused before "
            f"decoding them (raise max_pixels, or tempcore.video.types.MAX_FRAME_PIXELS, to decode it)",
        )


def check_pixel_budget(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a positive number of pixels or None (the default), not {value!r}")


def _size_words(pixels: int) -> str:
    side = int(pixels**0.5)
    return f"{side}x{side}" if side * side == pixels else f"{pixels / 1e6:.1f} megapixels"


IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"})


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


class FrameTooLargeError(VideoError):
    """The video's frames have more pixels than the decoder's budget (:data:`MAX_FRAME_PIXELS`)."""

    kind = "video too large"


class FrameIndexError(VideoError, IndexError):
    """A requested frame position is outside the decoded sequence 0..L-1."""

    kind = "frame position out of range"


class DecodeCounter:
    """Decoding passes made in its context while it is active (:func:`count_decodes`), per video.

    A *pass* is one iteration of :class:`VideoReader`, one :func:`probe` or one :func:`read_frames`
    (each opens the file and decodes it from the start, or from a seek, onwards). A *video* is a
    file (its absolute path) x segment (``start``, ``end``): two segments of one file are decoded
    in two passes by design. Opening a file to check it (``VideoReader``'s constructor) is not a
    pass. Passes in other processes (Ray actors) are not seen. ``by_kind``: passes per kind
    (``read``: :class:`VideoReader`, ``probe``, ``frames``: :func:`read_frames`, ``selected``:
    :func:`read_selected`)."""

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


__all__ = [
    "CorruptVideoError",
    "DecodeCounter",
    "EmptyVideoError",
    "FrameBatch",
    "FrameIndexError",
    "FrameTooLargeError",
    "MAX_BATCH_PIXELS",
    "MAX_FRAME_PIXELS",
    "NoVideoStreamError",
    "VideoError",
    "VideoInfo",
    "VideoNotFoundError",
    "count_decodes",
]
