"""Damaged videos are reported, not scored silently (issue 13): an MP4 cut at 60 % with its index
first, and an MP4 with 8 kB of garbled video data. ``damage`` is None for a clean file and a
short reason otherwise, on the probe, the reader, read_frames, frame embeddings and FrameScores."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from tempcore.records import Sample
from tempcore.video.decode import VideoReader, probe, read_frames
from tempcore.video.synthetic import pattern_frame, write_video


def _grainy(i: int, t: float) -> np.ndarray:
    grain = np.random.default_rng(i % 4).integers(0, 40, size=(64, 64, 3), dtype=np.uint8)
    return pattern_frame(i, (64, 64)) ^ grain


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("damaged")
    clean = write_video(d / "clean.mp4", duration=6.0, fps=25, make_frame=_grainy, faststart=True)
    data = clean.read_bytes()
    cut = d / "cut60.mp4"
    cut.write_bytes(data[: int(len(data) * 0.6)])  # index first (faststart): the header says 6 s
    garbled = bytearray(data)
    mid = len(data) // 2
    garbled[mid : mid + 8192] = np.random.default_rng(1).integers(0, 256, 8192, dtype=np.uint8).tobytes()
    (d / "garbled.mp4").write_bytes(bytes(garbled))
    return {"clean": clean, "cut": cut, "garbled": d / "garbled.mp4"}


def test_clean_video_has_no_damage(damaged: dict[str, Path]) -> None:
    assert probe(damaged["clean"], fps=10).damage is None
    reader = VideoReader(damaged["clean"], fps=10)
    reader.read_all()
    assert reader.damage is None
    assert read_frames(damaged["clean"], [0, 5], fps=10).damage is None


@pytest.mark.parametrize("name,words", [("cut", "truncated"), ("garbled", "failed to decode")])
def test_damage_is_reported_by_probe_reader_and_read_frames(
    damaged: dict[str, Path], name: str, words: str
) -> None:
    info = probe(damaged[name], fps=10)
    assert info.damage is not None and words in info.damage and info.frames > 0
    reader = VideoReader(damaged[name], fps=10)
    batch = reader.read_all()
    assert len(batch) == info.frames and reader.damage == info.damage
    last = info.frames - 1
    assert read_frames(damaged[name], [0, last], fps=10).damage is not None


def test_frame_scores_carry_damage_and_log_it(damaged: dict[str, Path], tmp_path: Path, caplog) -> None:
    from helpers.tiny_encoders import tiny_checkpoints
    from tempcore.encoders import load_encoder
    from tempcore.run.frame_scoring import score_sample

    encoder = load_encoder(tiny_checkpoints(tmp_path / "enc")["siglip2"], batch_size=16)
    root = damaged["clean"].parent
    caplog.set_level(logging.WARNING, logger="tempcore.run.frame_scoring")
    for video, expect in (("clean.mp4", False), ("cut60.mp4", True), ("garbled.mp4", True)):
        s = Sample("toy", video.split(".")[0], video, "what is shown?", ("a", "b"), 0)
        scores = score_sample(s, encoder, "q", fps=5, video_root=root)
        assert (scores.damage is not None) is expect, video
        logged = [r.getMessage() for r in caplog.records if s.sample_id in r.getMessage()]
        assert bool(logged) is expect, video
        if expect:
            assert "damaged" in logged[0] and video in logged[0]
