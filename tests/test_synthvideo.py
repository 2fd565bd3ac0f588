"""The synthetic-video generator, checked with plain PyAV (not with tempcore's decoder)."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from tempcore.video.synthetic import (
    PatternCode,
    Scene,
    pattern_frame,
    read_pattern,
    truncate,
    write_audio,
    write_frame_folder,
    write_video,
)


def raw_frames(path: Path, stream: int = 0) -> list[tuple[float, np.ndarray]]:
    """(time, RGB frame) of every frame of a video stream, decoded with PyAV directly."""
    with av.open(str(path)) as container:
        vstream = container.streams.video[stream]
        return [(float(f.time), f.to_ndarray(format="rgb24")) for f in container.decode(vstream)]


@pytest.mark.parametrize("index,stream", [(0, 0), (1, 0), (12345, 3), (2**20 - 1, 15)])
@pytest.mark.parametrize("size", [(64, 64), (96, 54), (30, 20)])
def test_pattern_round_trip(index: int, stream: int, size: tuple[int, int]) -> None:
    frame = pattern_frame(index, size, stream=stream)
    assert frame.shape == (size[1], size[0], 3) and frame.dtype == np.uint8
    assert read_pattern(frame) == PatternCode(index, stream)


def test_pattern_rejects_out_of_range() -> None:
    with pytest.raises(ValueError):
        pattern_frame(2**20)
    with pytest.raises(ValueError):
        pattern_frame(0, stream=16)


def test_pattern_survives_noise() -> None:
    rng = np.random.default_rng(0)
    frame = pattern_frame(777, (64, 48)).astype(np.int16) + rng.integers(-60, 60, size=(48, 64, 3))
    assert read_pattern(np.clip(frame, 0, 255).astype(np.uint8)).index == 777


def test_constant_rate_video(tmp_path: Path) -> None:
    path = write_video(tmp_path / "cfr.mp4", duration=2.0, fps=25, size=(64, 48))
    frames = raw_frames(path)
    assert len(frames) == 50
    assert [round(t, 6) for t, _ in frames] == [round(i / 25, 6) for i in range(50)]
    assert [read_pattern(f).index for _, f in frames] == list(range(50))
    assert frames[0][1].shape == (48, 64, 3)


def test_variable_rate_times_are_kept(tmp_path: Path) -> None:
    times = [0.0, 0.05, 0.4, 0.45, 1.0, 1.7, 1.75, 2.6]
    for name in ("vfr.mp4", "vfr.mkv"):
        frames = raw_frames(write_video(tmp_path / name, times=times))
        assert [t for t, _ in frames] == pytest.approx(times, abs=1e-3)
        assert [read_pattern(f).index for _, f in frames] == list(range(len(times)))


def test_frames_are_consumed_lazily(tmp_path: Path) -> None:
    produced: list[int] = []

    def gen():
        for i in range(12):
            produced.append(i)
            yield pattern_frame(100 + i, (32, 32))

    path = write_video(tmp_path / "gen.mkv", gen(), fps=12, size=(32, 32))
    assert produced == list(range(12))
    assert [read_pattern(f).index for _, f in raw_frames(path)] == [100 + i for i in range(12)]


def test_make_frame_gets_index_and_time(tmp_path: Path) -> None:
    seen: list[tuple[int, float]] = []

    def make(i: int, t: float) -> np.ndarray:
        seen.append((i, t))
        return pattern_frame(i, (32, 32))

    write_video(tmp_path / "mf.mp4", make_frame=make, fps=4, duration=1.0, size=(32, 32))
    assert seen == [(0, 0.0), (1, 0.25), (2, 0.5), (3, 0.75)]


@pytest.mark.parametrize(
    "name,codec,pix_fmt,decoded_codecs",
    [
        ("h264_10bit.mp4", "libx264", "yuv420p10le", {"h264"}),
        ("hevc_10bit.mp4", "libx265", "yuv420p10le", {"hevc"}),
        ("av1.mp4", "libsvtav1", "yuv420p", {"av1", "libdav1d", "libaom-av1"}),
        ("vp9.webm", None, "yuv420p", {"vp9", "libvpx-vp9"}),
        ("anim.gif", None, None, {"gif"}),
    ],
)
def test_codecs(
    tmp_path: Path, name: str, codec: str | None, pix_fmt: str | None, decoded_codecs: set[str]
) -> None:
    path = write_video(tmp_path / name, duration=1.0, fps=10, size=(64, 64), codec=codec, pix_fmt=pix_fmt)
    with av.open(str(path)) as container:
        cc = container.streams.video[0].codec_context
        assert cc.name in decoded_codecs
        if pix_fmt and "10" in pix_fmt:
            assert cc.pix_fmt == pix_fmt
    assert [read_pattern(f).index for _, f in raw_frames(path)] == list(range(10))


def test_extra_streams_and_audio(tmp_path: Path) -> None:
    path = write_video(
        tmp_path / "multi.mp4",
        duration=2.0,
        fps=10,
        extra_video_streams=2,
        extra_stream_fps=5,
        extra_stream_size=(32, 32),
        audio=True,
    )
    with av.open(str(path)) as container:
        assert [s.type for s in container.streams] == ["video", "video", "video", "audio"]
    for k in (1, 2):
        frames = raw_frames(path, stream=k)
        assert len(frames) == 10 and frames[0][1].shape == (32, 32, 3)
        assert [tuple(read_pattern(f)) for _, f in frames] == [(i, k) for i in range(10)]


def test_audio_only(tmp_path: Path) -> None:
    path = write_audio(tmp_path / "tone.m4a", duration=0.5)
    with av.open(str(path)) as container:
        assert [s.type for s in container.streams] == ["audio"]


def test_frame_folder(tmp_path: Path) -> None:
    folder = write_frame_folder(tmp_path / "frames", 5, size=(40, 30), ext="jpg")
    names = sorted(p.name for p in folder.iterdir())
    assert names == [f"{i:05d}.jpg" for i in range(5)]
    from PIL import Image

    assert read_pattern(np.asarray(Image.open(folder / "00003.jpg").convert("RGB"))).index == 3


def test_truncate(tmp_path: Path) -> None:
    path = write_video(tmp_path / "t.mkv", duration=1.0)
    size = path.stat().st_size
    copy = truncate(path, 0.25, dest=tmp_path / "copy.mkv")
    assert copy.stat().st_size == int(size * 0.25) and path.stat().st_size == size
    truncate(path, 0.5)
    assert path.stat().st_size == int(size * 0.5)
    with pytest.raises(ValueError):
        truncate(path, 1.5)


def test_scene_is_deterministic_and_moves() -> None:
    a, b = Scene((64, 36), seed=1), Scene((64, 36), seed=1)
    assert np.array_equal(a(5, 0.5), b(5, 0.5))
    assert a(0, 0.0).shape == (36, 64, 3)
    assert not np.array_equal(a(0, 0.0), a(30, 3.0))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"size": (63, 64), "duration": 1.0},  # odd width with 4:2:0
        {"times": [0.0, 0.1], "duration": 1.0},
        {},  # nothing says how many frames
        {"times": [0.0, 0.1, 0.1]},  # not increasing
    ],
)
def test_write_video_rejects_bad_arguments(tmp_path: Path, kwargs: dict) -> None:
    with pytest.raises(ValueError):
        write_video(tmp_path / "bad.mp4", **kwargs)


def test_wrong_frame_shape_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="expected"):
        write_video(tmp_path / "bad.mp4", [np.zeros((10, 10, 3), np.uint8)], size=(64, 64))
