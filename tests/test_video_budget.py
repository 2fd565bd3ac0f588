"""The decoder's pixel budget (issue 31, item 1): a 1.4 kB GIF declaring a 10000 x 10000 screen (60
one-pixel frames) reached 11.7 GB and a bare ``MemoryError``; a 16000 x 16000 one tried 22.9 GiB.
Every hostile case runs in a child process under an address-space limit (``RLIMIT_AS``), so a
regression fails with a ``MemoryError`` there instead of taking this machine's memory."""

from __future__ import annotations

import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tempcore.video import types as video_types
from tempcore.video.decode import VideoReader, probe, read_frames
from tempcore.video.synthetic import write_video
from tempcore.video.types import FrameTooLargeError


def hostile_gif(path: Path, side: int, frames: int = 60) -> Path:
    """A GIF whose logical screen is ``side`` x ``side`` with ``frames`` one-pixel frames (1.4 kB at 60)."""
    b = bytearray(b"GIF89a" + struct.pack("<HHBBB", side, side, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff")
    b += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"
    for i in range(frames):
        b += b"\x21\xf9\x04\x00" + struct.pack("<H", 10) + b"\x00\x00"
        b += b"\x2c" + struct.pack("<HHHHB", i % side, 0, 1, 1, 0) + b"\x02\x02\x44\x01\x00"
    path.write_bytes(bytes(b + b"\x3b"))
    return path


CHILD = textwrap.dedent(
    """
    import resource, sys
    import numpy as np
    from tempcore.video.decode import VideoReader, probe, read_frames
    from tempcore.video.types import FrameTooLargeError
    from tempcore.records import Sample
    from tempcore.encoders.base import TextEncoding
    from tempcore.run.frame_scoring import ScoreFailure, score_samples

    class Encoder:
        name, fingerprint = "flat", "0" * 16

        def encode_images(self, frames):
            return np.ones((len(frames), 4), np.float32) / 2

        def encode_texts(self, texts):
            n = len(texts)
            return TextEncoding(np.ones((n, 4), np.float32) / 2, np.zeros(n, bool), np.ones(n, np.int64), 64)

    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    limit = vm + (1 << 31)  # what the process has mapped, plus 2 GiB
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    paths = sys.argv[1:]
    for path in paths:
        for name, call in (("probe", lambda: probe(path)), ("reader", lambda: list(VideoReader(path))),
                           ("frames", lambda: read_frames(path, [0, 5]))):
            try:
                call()
            except FrameTooLargeError as exc:
                print(name, "refused:", exc)
            else:
                print(name, "decoded")
    samples = [Sample("toy", f"s{i}", p, "what?", ("a", "b"), 0, media="gif") for i, p in enumerate(paths)]
    for r in score_samples(samples, Encoder(), "q", fps=10, workers=2):
        assert isinstance(r, ScoreFailure), r
        print("scored", r.sample_id, r.video, "failed:", r.error)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux's")
def test_hostile_gif_screens_are_refused_by_name_within_a_memory_bound(tmp_path: Path) -> None:
    paths = [hostile_gif(tmp_path / "screen10k.gif", 10000), hostile_gif(tmp_path / "screen16k.gif", 16000)]
    assert paths[0].stat().st_size < 1500
    done = subprocess.run([sys.executable, "-c", CHILD, *map(str, paths)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    for side, path in zip((10000, 16000), paths):
        named = [line for line in lines if str(path) in line]
        assert len(named) == 4, done.stdout  # probe, reader, read_frames, and its scoring with 2 workers
        assert all(f"{side}x{side} frames exceed max_pixels=16777216 (4096x4096)" in line for line in named)
    assert sum(line.startswith("scored") for line in lines) == 2


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("budget") / "clip.mp4"
    write_video(path, fps=10, duration=2.0, size=(64, 48))
    return path


def test_max_pixels_is_a_keyword_and_a_setting(clip: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert video_types.MAX_FRAME_PIXELS == 4096 * 4096
    for call in (lambda: probe(clip, max_pixels=64 * 47), lambda: VideoReader(clip, max_pixels=64 * 47),
                 lambda: read_frames(clip, [0], max_pixels=64 * 47),
                 lambda: VideoReader(clip, size=(5000, 5000))):
        with pytest.raises(FrameTooLargeError, match=r"exceed max_pixels"):
            call()
    assert probe(clip, max_pixels=64 * 48).frames == 20
    monkeypatch.setattr(video_types, "MAX_FRAME_PIXELS", 100)
    with pytest.raises(FrameTooLargeError, match=r"clip\.mp4: 64x48 frames exceed max_pixels=100 "):
        probe(clip)
    with pytest.raises(ValueError, match="max_pixels must be a positive"):
        probe(clip, max_pixels=0)


def test_batches_fit_the_batch_budget_and_hold_the_same_frames(clip: Path) -> None:
    whole = VideoReader(clip).read_all()
    batches = list(VideoReader(clip, max_batch_pixels=64 * 48 * 3))
    assert [len(b) for b in batches] == [3] * 6 + [2]
    assert np.array_equal(np.concatenate([b.frames for b in batches]), whole.frames)
    assert [len(b) for b in VideoReader(clip, max_batch_pixels=1)] == [1] * 20  # at least one frame
    assert len(next(iter(VideoReader(clip)))) == 20  # below the default budget: batch_size alone
