"""Skipping unneeded non-reference frames gives the same frames as decoding everything."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tempcore.video import decode as video
from tempcore.video import synthetic as synthvideo

FIXTURES = Path(__file__).parent / "data"  # the real fixture videos, shipped with the tests


def _read(path: Path, fps: float, skip: bool, monkeypatch: pytest.MonkeyPatch, **kw: object):
    monkeypatch.setattr(video, "_SKIP_UNNEEDED", skip)
    reader = video.VideoReader(path, fps=fps, **kw)
    batch = reader.read_all()
    return batch, reader


def _same(path: Path, fps: float, monkeypatch: pytest.MonkeyPatch, **kw: object) -> None:
    a, _ = _read(path, fps, False, monkeypatch, **kw)
    b, _ = _read(path, fps, True, monkeypatch, **kw)
    assert len(a.timestamps) == len(b.timestamps) > 0
    np.testing.assert_array_equal(a.timestamps, b.timestamps)
    np.testing.assert_array_equal(a.frames, b.frames)


def _bframes(tmp_path: Path, name: str, **kw: object) -> Path:
    opts = {"bframes": "3", "b-pyramid": "none"}
    opts.update(kw.pop("codec_options", {}))  # type: ignore[arg-type]
    return synthvideo.write_video(
        tmp_path / name, size=(64, 64), codec_options=opts, preset="medium", **kw  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("fps", [10.0, 7.0, 1.0])
def test_cfr_bframes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fps: float) -> None:
    path = _bframes(tmp_path, "cfr.mp4", fps=30, duration=4.0)
    _same(path, fps, monkeypatch)
    _same(path, fps, monkeypatch, start=0.95, end=3.05)


def test_vfr_bframes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    times = np.cumsum(rng.uniform(0.005, 0.08, 120)).tolist()
    path = _bframes(tmp_path, "vfr.mkv", fps=60, times=times)
    _same(path, 10.0, monkeypatch)


def test_open_gop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _bframes(tmp_path, "open.mp4", fps=60, duration=3.0, gop=24, codec_options={"open-gop": "1"})
    _same(path, 10.0, monkeypatch)
    _same(path, 10.0, monkeypatch, start=1.0)


def test_skips_something(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _bframes(tmp_path, "cfr.mp4", fps=30, duration=2.0)
    monkeypatch.setattr(video, "_SKIP_UNNEEDED", True)
    reader = video.VideoReader(path, fps=10)
    reader.read_all()
    src, decode = reader._pass()
    for _ in decode:
        pass
    assert src.skipped > 0


@pytest.mark.parametrize("name", ["h265_video.mp4", "nasa_13013.mp4"])
def test_fixtures(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = FIXTURES / name
    assert path.exists(), path
    _same(path, 10.0, monkeypatch, end=6.0)
