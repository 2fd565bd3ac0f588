"""``tempcore video probe``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tempcore.cli import main
from tempcore.video.synthetic import write_audio, write_video

DATA = Path(__file__).parent / "data"


def test_probe_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["video", "probe", str(DATA / "nasa_13013.mp4"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("frames", "timestamps", "duration", "stream", "codec", "width", "height"):
        assert key in out
    assert out["frames"] == len(out["timestamps"]) == 130
    assert (out["stream"], out["codec"], out["width"], out["height"]) == (0, "h264", 320, 180)
    assert out["duration"] == pytest.approx(13.0)


def test_probe_options(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "video",
        "probe",
        str(DATA / "nasa_13013.mp4"),
        "--fps",
        "2",
        "--stream",
        "1",
        "--start",
        "1",
        "--end",
        "3",
        "--json",
    ]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stream"] == 1 and out["width"] == 480 and out["frames"] == 4
    assert out["timestamps"][0] <= 1.0 < out["timestamps"][1]


def test_probe_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["video", "probe", str(DATA / "h265_video.mp4")]) == 0
    lines = dict(line.split(": ", 1) for line in capsys.readouterr().out.splitlines())
    assert lines["frames"] == "10" and lines["codec"] == "hevc" and lines["width"] == "128"
    assert lines["timestamps"].split() == [f"{i / 10:g}" for i in range(10)]


def test_probe_errors_exit_1_naming_the_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.mp4"
    assert main(["video", "probe", str(missing)]) == 1
    err = capsys.readouterr().err
    assert "video not found" in err and str(missing) in err

    audio = write_audio(tmp_path / "tone.m4a", duration=0.3)
    assert main(["video", "probe", str(audio)]) == 1
    assert "no video stream" in capsys.readouterr().err

    video = write_video(tmp_path / "v.mp4", duration=0.5)
    assert main(["video", "probe", str(video), "--stream", "3"]) == 1
    assert "stream 3" in capsys.readouterr().err
