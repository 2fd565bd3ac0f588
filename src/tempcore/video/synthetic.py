"""Synthetic test videos: numpy frames encoded with PyAV, streamed to disk.

Used by the decoder tests, the decode benchmark and the synthetic-world feature. Everything
is written frame by frame from a generator, so an hour-long video never sits in memory.

- :func:`write_video` encodes frames (an iterable, a ``make_frame(i, t)`` callable, or the
  default :func:`pattern_frame`) at any size, fps, duration and codec (H.264, HEVC, AV1, VP9,
  GIF, ... 10-bit where the codec supports it), at a constant rate or at explicit presentation
  times (variable frame rate), with optional extra video streams and an audio track.
- :func:`pattern_frame` / :func:`read_pattern` put a frame number (and a stream number) into a
  frame as large black / white blocks that survive lossy coding and resizing, so a test can tell
  which source frame a decoder returned.
- :class:`Scene` makes "realistic" frames (moving texture, a moving object, sensor grain) for
  benchmarks, where flat test patterns would decode unrealistically fast.
- :func:`write_frame_folder` writes a folder of numbered images (MVBench-style frame folders),
  :func:`write_audio` an audio-only file, :func:`truncate` cuts a file short.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "PatternCode",
    "Scene",
    "pattern_frame",
    "read_pattern",
    "truncate",
    "write_audio",
    "write_frame_folder",
    "write_video",
]

# --- distinguishable frames -------------------------------------------------------------

_GRID_ROWS, _GRID_COLS = 4, 6
_INDEX_BITS = 20  # frame numbers 0 .. 2**20 - 1; the remaining 4 cells hold the stream number
_STREAM_BITS = _GRID_ROWS * _GRID_COLS - _INDEX_BITS


class PatternCode(NamedTuple):
    """What :func:`read_pattern` found in a frame."""

    index: int  # type: ignore[assignment]  # a field shadowing tuple.index (mypy refuses the name; Python allows it)
    stream: int


def _cell_edges(n: int, cells: int) -> np.ndarray:
    return np.linspace(0, n, cells + 1).round().astype(int)


def pattern_frame(index: int, size: tuple[int, int] = (64, 64), *, stream: int = 0) -> np.ndarray:
    """An (H, W, 3) uint8 frame whose 4 x 6 grid of black / white cells spells ``index`` and ``stream``.

    Cell k (row-major) is white when bit k of ``index | stream << 20`` is set. Cells are large, so the
    code survives lossy codecs, chroma subsampling, GIF palettes and downscaling to ~24 x 16 pixels.
    """
    width, height = size
    if not 0 <= index < 2**_INDEX_BITS:
        raise ValueError(f"pattern index must be in [0, {2**_INDEX_BITS}), not {index}")
    if not 0 <= stream < 2**_STREAM_BITS:
        raise ValueError(f"pattern stream must be in [0, {2**_STREAM_BITS}), not {stream}")
    code = index | (stream << _INDEX_BITS)
    bits = np.array([(code >> k) & 1 for k in range(_GRID_ROWS * _GRID_COLS)], dtype=np.uint8)
    cells = (bits.reshape(_GRID_ROWS, _GRID_COLS) * 255).astype(np.uint8)
    rows = np.searchsorted(_cell_edges(height, _GRID_ROWS), np.arange(height), side="right") - 1
    cols = np.searchsorted(_cell_edges(width, _GRID_COLS), np.arange(width), side="right") - 1
    plane = cells[rows][:, cols]
    return np.repeat(plane[:, :, None], 3, axis=2)


def read_pattern(frame: np.ndarray) -> PatternCode:
    """Read back the frame number and stream number written by :func:`pattern_frame`.

    Each cell is judged by the mean of its central half (robust to blur at cell edges).
    """
    if frame.ndim != 3 or frame.shape[2] != 3:
        raise ValueError(f"expected an (H, W, 3) frame, got shape {frame.shape}")
    height, width = frame.shape[:2]
    ys, xs = _cell_edges(height, _GRID_ROWS), _cell_edges(width, _GRID_COLS)
    code = 0
    for r in range(_GRID_ROWS):
        for c in range(_GRID_COLS):
            y0, y1, x0, x1 = ys[r], ys[r + 1], xs[c], xs[c + 1]
            qy, qx = max((y1 - y0) // 4, 0), max((x1 - x0) // 4, 0)
            cell = frame[y0 + qy : y1 - qy, x0 + qx : x1 - qx]
            if cell.size and cell.mean() > 127.5:
                code |= 1 << (r * _GRID_COLS + c)
    return PatternCode(code & (2**_INDEX_BITS - 1), code >> _INDEX_BITS)


class Scene:
    """Frames with the statistics of real footage, cheap to make: ``Scene(size)(i, t)``.

    A smooth random texture pans across the frame, a coloured object moves over it, and a fixed
    cycle of grain (values 0..``grain``-1) is XOR-ed in so the encoder has real residual to code:
    at 640 x 360, 30 fps, x264 CRF 23 the default gives about 1 Mbit/s, like web video at that size.
    Deterministic for a given ``seed``. About 1 ms per 640 x 360 frame.
    """

    def __init__(self, size: tuple[int, int] = (640, 360), seed: int = 0, grain: int = 20) -> None:
        width, height = size
        self.size = size
        rng = np.random.default_rng(seed)
        tex_h, tex_w = 2 * height, 2 * width
        coarse = rng.integers(0, 256, size=(tex_h // 16 + 2, tex_w // 16 + 2, 3)).astype(np.float32)
        # bilinear upsampling of the coarse noise: a smooth, natural-looking field
        yy = np.linspace(0, coarse.shape[0] - 1.001, tex_h)
        xx = np.linspace(0, coarse.shape[1] - 1.001, tex_w)
        y0, x0 = yy.astype(int), xx.astype(int)
        fy, fx = (yy - y0)[:, None, None], (xx - x0)[None, :, None]
        top = coarse[y0][:, x0] * (1 - fx) + coarse[y0][:, x0 + 1] * fx
        bottom = coarse[y0 + 1][:, x0] * (1 - fx) + coarse[y0 + 1][:, x0 + 1] * fx
        smooth = top * (1 - fy) + bottom * fy
        detail = rng.normal(0, 12, size=smooth.shape).astype(np.float32)
        self._texture = np.clip(smooth + detail, 0, 255).astype(np.uint8)
        self._grain = rng.integers(0, max(grain, 1), size=(8, height, width, 3), dtype=np.uint8)
        self._colour = rng.integers(40, 255, size=3, dtype=np.uint8)

    def __call__(self, index: int, t: float) -> np.ndarray:
        width, height = self.size
        tex_h, tex_w = self._texture.shape[:2]
        x = int((width / 2) * (1 + math.sin(0.21 * t))) % (tex_w - width + 1)
        y = int((height / 2) * (1 + math.cos(0.13 * t))) % (tex_h - height + 1)
        frame: np.ndarray = self._texture[y : y + height, x : x + width].copy()
        bw, bh = max(width // 6, 2), max(height // 5, 2)
        bx = int((width - bw) * (0.5 + 0.5 * math.sin(0.9 * t)))
        by = int((height - bh) * (0.5 + 0.5 * math.cos(0.7 * t)))
        frame[by : by + bh, bx : bx + bw] = self._colour
        np.bitwise_xor(frame, self._grain[index % len(self._grain)], out=frame)
        return frame


# --- writing ------------------------------------------------------------------------------

_DEFAULT_CODEC_BY_SUFFIX = {".gif": "gif", ".webm": "libvpx-vp9"}


def _as_rate(fps: float | Fraction) -> Fraction:
    rate = fps if isinstance(fps, Fraction) else Fraction(repr(float(fps)))
    if rate <= 0:
        raise ValueError(f"fps must be positive, not {fps!r}")
    return rate.limit_denominator(1_000_000)


def _default_options(codec: str, crf: int | None, preset: str | None) -> dict[str, str]:
    if codec in ("libx264", "libx265"):
        opts = {"preset": preset or "veryfast", "crf": str(23 if crf is None else crf)}
        if codec == "libx265":
            opts["x265-params"] = "log-level=error"
        return opts
    if codec == "libsvtav1":
        return {"preset": preset or "12", "crf": str(35 if crf is None else crf)}
    if codec in ("libvpx-vp9", "libvpx"):
        return {"deadline": "realtime", "cpu-used": "8", "crf": str(32 if crf is None else crf), "b": "0"}
    return {}


class _VideoTrack:
    """One encoded video stream fed frame by frame."""

    def __init__(
        self,
        container: Any,
        codec: str,
        size: tuple[int, int],
        pix_fmt: str,
        rate: Fraction,
        time_base: Fraction,
        options: dict[str, str],
        gop: int | None,
        bit_rate: int | None,
    ) -> None:
        self.stream = container.add_stream(codec, rate=rate, options=options)
        self.stream.width, self.stream.height = size
        self.stream.pix_fmt = pix_fmt
        self.stream.codec_context.time_base = time_base
        self.stream.time_base = time_base
        if gop is not None:
            self.stream.codec_context.gop_size = gop
        if bit_rate is not None:
            self.stream.codec_context.bit_rate = bit_rate
        self.size = size
        self.time_base = time_base
        self.container = container
        self.last_pts: int | None = None

    def write(self, image: np.ndarray, t: float) -> None:
        import av

        width, height = self.size
        if image.shape != (height, width, 3) or image.dtype != np.uint8:
            raise ValueError(
                f"frame has shape {image.shape} and dtype {image.dtype}; expected ({height}, {width}, 3) uint8"
            )
        pts = round(t / self.time_base)
        if self.last_pts is not None and pts <= self.last_pts:
            raise ValueError(
                f"presentation time {t:.6f}s is not after the previous frame's at the stream's "
                f"time base {self.time_base} (times must be strictly increasing)"
            )
        self.last_pts = pts
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")
        frame.pts = pts
        frame.time_base = self.time_base
        self.container.mux(self.stream.encode(frame))

    def flush(self) -> None:
        self.container.mux(self.stream.encode(None))


class _AudioTrack:
    """A 440 Hz tone, written in 1024-sample frames up to a given time."""

    def __init__(self, container: Any, codec: str, sample_rate: int) -> None:
        self.stream = container.add_stream(codec, rate=sample_rate)
        self.stream.layout = "mono"
        self.container = container
        self.sample_rate = sample_rate
        self.written = 0

    def write_until(self, t: float) -> None:
        import av

        target = int(t * self.sample_rate)
        block = 1024
        while self.written + block <= target:
            n = np.arange(self.written, self.written + block)
            wave = (0.2 * np.sin(2 * np.pi * 440.0 * n / self.sample_rate)).astype(np.float32)
            frame = av.AudioFrame.from_ndarray(wave[None, :], format="fltp", layout="mono")
            frame.sample_rate = self.sample_rate
            frame.pts = self.written
            frame.time_base = Fraction(1, self.sample_rate)
            self.container.mux(self.stream.encode(frame))
            self.written += block

    def flush(self) -> None:
        self.container.mux(self.stream.encode(None))


def _frame_times(rate: Fraction, duration: float | None, times: Sequence[float] | None) -> Iterator[float]:
    if times is not None:
        yield from (float(t) for t in times)
        return
    if duration is not None:
        count = round(duration * rate)
        for i in range(count):
            yield float(i / rate)
        return
    i = 0
    while True:  # until the caller's frames run out
        yield float(i / rate)
        i += 1


def write_video(
    path: str | Path,
    frames: Iterable[np.ndarray] | None = None,
    *,
    fps: float | Fraction = 10.0,
    duration: float | None = None,
    size: tuple[int, int] = (64, 64),
    codec: str | None = "libx264",
    pix_fmt: str | None = None,
    times: Sequence[float] | None = None,
    extra_video_streams: int = 0,
    extra_stream_fps: float | None = None,
    extra_stream_size: tuple[int, int] | None = None,
    audio: bool = False,
    make_frame: Callable[[int, float], np.ndarray] | None = None,
    container_format: str | None = None,
    faststart: bool = False,
    crf: int | None = None,
    preset: str | None = None,
    gop: int | None = None,
    bit_rate: int | None = None,
    codec_options: dict[str, str] | None = None,
    rotation: int = 0,
) -> Path:
    """Encode frames into a video file, streaming (one frame in memory at a time); returns the path.

    Frames come from ``frames`` (an iterable of (H, W, 3) uint8 RGB arrays, consumed lazily), else
    from ``make_frame(i, t)``, else from :func:`pattern_frame` (frame number ``i``, stream 0).
    How many frames: ``len(times)`` when ``times`` is given, else ``round(duration * fps)`` when
    ``duration`` is given, else until ``frames`` is exhausted.

    Timing: by default constant rate ``fps`` (time base ``1/fps``, frame i at ``i / fps``). ``times``
    gives explicit, strictly increasing presentation times in seconds (variable frame rate; the
    stream's time base is then 1/90000, and the muxer may round further: Matroska / WebM keep
    milliseconds, GIF centiseconds). ``fps`` stays the encoder's nominal rate.

    ``size`` is (width, height). ``codec`` is an FFmpeg encoder name (``libx264``, ``libx265``,
    ``libsvtav1``, ``libvpx-vp9``, ``mpeg4``, ``gif``, ...); ``None`` picks by suffix (``.gif``: gif,
    ``.webm``: libvpx-vp9, else libx264). ``pix_fmt`` defaults to ``yuv420p`` (``rgb8`` for GIF);
    ``yuv420p10le`` gives 10-bit with libx264 / libx265 / libsvtav1. ``crf`` / ``preset`` / ``gop`` /
    ``bit_rate`` / ``codec_options`` tune the encoder (fast settings by default).

    ``extra_video_streams`` adds that many more video streams, frame ``i`` of extra stream ``k`` being
    ``pattern_frame(i, stream=k + 1)`` at ``extra_stream_fps`` (default ``fps``) and
    ``extra_stream_size`` (default ``size``), covering the same time span. ``audio`` adds a 440 Hz
    tone (AAC; Opus in WebM). ``faststart`` moves an MP4's index to the front (so a truncated copy
    is still readable). ``rotation`` stores a display-matrix rotation (counter-clockwise degrees, as
    phones do) on the main stream; the pixels are written as given.
    """
    import av

    path = Path(path)
    suffix = path.suffix.lower()
    codec = codec or _DEFAULT_CODEC_BY_SUFFIX.get(suffix, "libx264")
    if suffix == ".gif" and codec != "gif":
        raise ValueError(f"{path}: a .gif file needs codec 'gif', not {codec!r}")
    pix_fmt = pix_fmt or ("rgb8" if codec == "gif" else "yuv420p")
    width, height = size
    if width <= 0 or height <= 0:
        raise ValueError(f"size must be positive (width, height), not {size}")
    if ("420" in pix_fmt or "422" in pix_fmt) and (width % 2 or height % 2):
        raise ValueError(f"{pix_fmt} needs an even width and height, not {width}x{height}")
    if times is not None and duration is not None:
        raise ValueError("give either times (variable frame rate) or duration, not both")
    if frames is None and make_frame is None and times is None and duration is None:
        raise ValueError("give frames, or a duration / times to generate pattern frames for")
    if frames is not None and make_frame is not None:
        raise ValueError("give frames or make_frame, not both")
    rate = _as_rate(fps)
    if codec == "gif":
        time_base = Fraction(1, 100)
    elif times is not None:
        time_base = Fraction(1, 90000)
    else:
        time_base = 1 / rate
    options = {**_default_options(codec, crf, preset), **(codec_options or {})}

    container_options: dict[str, str] = {}
    if faststart:
        container_options["movflags"] = "+faststart"
    path.parent.mkdir(parents=True, exist_ok=True)
    container = av.open(str(path), mode="w", format=container_format, options=container_options)
    try:
        main = _VideoTrack(container, codec, size, pix_fmt, rate, time_base, options, gop, bit_rate)
        if rotation:
            main.stream.set_display_rotation(rotation)
        extra_rate = _as_rate(extra_stream_fps) if extra_stream_fps is not None else rate
        extras = [
            _VideoTrack(
                container,
                codec,
                extra_stream_size or size,
                pix_fmt,
                extra_rate,
                Fraction(1, 100) if codec == "gif" else 1 / extra_rate,
                options,
                gop,
                bit_rate,
            )
            for _ in range(extra_video_streams)
        ]
        extra_next = [0] * len(extras)
        audio_track = None
        if audio:
            audio_codec = "libopus" if suffix == ".webm" else "aac"
            audio_track = _AudioTrack(container, audio_codec, 48000 if audio_codec == "libopus" else 16000)

        def write_extras_until(t: float, inclusive: bool) -> None:
            for k, track in enumerate(extras):
                while True:
                    te = float(extra_next[k] / extra_rate)
                    if te > t or (te == t and not inclusive):
                        break
                    track.write(pattern_frame(extra_next[k], track.size, stream=k + 1), te)
                    extra_next[k] += 1
            if audio_track is not None:
                audio_track.write_until(t)

        source: Iterator[np.ndarray] | None = iter(frames) if frames is not None else None
        last_t = 0.0
        for i, t in enumerate(_frame_times(rate, duration, times)):
            if source is not None:
                image = next(source, None)
                if image is None:
                    if times is not None or duration is not None:
                        raise ValueError(f"frames ran out after {i} frames; times / duration asked for more")
                    break
            elif make_frame is not None:
                image = make_frame(i, t)
            else:
                image = pattern_frame(i, size)
            write_extras_until(t, inclusive=True)
            main.write(image, t)
            last_t = t
        # extra streams and audio cover the main stream's span (its last frame lasts 1 / fps)
        end = last_t + float(1 / rate)
        write_extras_until(end, inclusive=False)
        main.flush()
        for track in extras:
            track.flush()
        if audio_track is not None:
            audio_track.flush()
    finally:
        container.close()
    return path


def write_audio(
    path: str | Path, duration: float = 1.0, *, sample_rate: int = 16000, codec: str | None = None
) -> Path:
    """An audio-only file (a 440 Hz tone): AAC by default, Opus for .webm / .opus / .ogg."""
    import av

    path = Path(path)
    codec = codec or ("libopus" if path.suffix.lower() in (".webm", ".opus", ".ogg") else "aac")
    if codec == "libopus":
        sample_rate = 48000
    container = av.open(str(path), mode="w")
    try:
        track = _AudioTrack(container, codec, sample_rate)
        track.write_until(duration)
        track.flush()
    finally:
        container.close()
    return path


def write_frame_folder(
    folder: str | Path,
    count: int | None = None,
    *,
    frames: Iterable[np.ndarray] | None = None,
    size: tuple[int, int] = (64, 64),
    ext: str = "png",
    name: str = "{:05d}",
) -> Path:
    """A folder of numbered images (``00000.png``, ...): pattern frames 0..count-1, or ``frames``."""
    from PIL import Image

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if frames is None:
        if count is None:
            raise ValueError("give count (pattern frames) or frames")
        frames = (pattern_frame(i, size) for i in range(count))
    for i, image in enumerate(frames):
        Image.fromarray(image).save(folder / f"{name.format(i)}.{ext}", quality=95)
    return folder


def truncate(path: str | Path, fraction: float, *, dest: str | Path | None = None) -> Path:
    """Keep the first ``fraction`` of the file's bytes (in place, or in a copy at ``dest``); returns it.

    Note: an MP4 written without ``faststart`` keeps its index at the end, so any truncation makes
    it unreadable; Matroska / WebM, MPEG-TS and fast-start MP4 stay readable up to the cut.
    """
    if not 0 <= fraction <= 1:
        raise ValueError(f"fraction must be in [0, 1], not {fraction}")
    path = Path(path)
    data = path.read_bytes()
    out = Path(dest) if dest is not None else path
    out.write_bytes(data[: int(len(data) * fraction)])
    return out
