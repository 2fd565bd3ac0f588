"""Small frames (at most ``SMALL_FRAME_PIXELS``, issue 18): decoded and converted single-threaded
under ``threads=0`` (FFmpeg's frame threading and swscale's pool cost more than they save there), and
their frame scoring runs its stages in the calling thread; neither changes a pixel or an embedding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tempcore.run.frame_scoring as scoring
import tempcore.video.sources as sources
import tempcore.video.types as video_types
from tempcore.video.decode import VideoReader
from tempcore.video.synthetic import Scene, write_video
from tempcore.video.types import SMALL_FRAME_PIXELS


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("clips")
    small, large = (48, 48), (400, 240)  # 2,304 and 96,000 pixels, either side of the bound
    assert small[0] * small[1] <= SMALL_FRAME_PIXELS < large[0] * large[1]
    return {
        "small": write_video(root / "small.mp4", make_frame=Scene(size=small, seed=3), fps=30, duration=2.0,
                             size=small),
        "large": write_video(root / "large.mp4", make_frame=Scene(size=large, seed=4), fps=30, duration=1.0,
                             size=large),
    }


def _codec_threads(path: Path, threads: int) -> tuple[int, str]:
    source = sources._AVSource(path, 0, "video", threads, True)
    try:
        cc = source._stream.codec_context
        return cc.thread_count, str(cc.thread_type)
    finally:
        source.close()


def test_automatic_threads_are_one_for_small_frames_only(clips: dict[str, Path]) -> None:
    assert _codec_threads(clips["small"], 0)[0] == 1
    count, kind = _codec_threads(clips["large"], 0)
    assert count == 0 and "AUTO" in kind.upper()  # FFmpeg's own choice
    assert _codec_threads(clips["small"], 3)[0] == 3  # an explicit count is kept
    assert VideoReader(clips["small"]).frame_pixels == 48 * 48
    assert VideoReader(clips["large"], size=(64, 32)).frame_pixels == 64 * 32


@pytest.mark.parametrize("name", ["small", "large"])
def test_threading_never_changes_the_frames(clips: dict[str, Path], name: str) -> None:
    auto = VideoReader(clips[name], 10.0, threads=0).read_all()
    one = VideoReader(clips[name], 10.0, threads=1).read_all()
    assert np.array_equal(auto.frames, one.frames) and np.array_equal(auto.timestamps, one.timestamps)


@pytest.mark.usefixtures("one_thread")
def test_small_frames_are_scored_in_the_calling_thread_with_the_same_embeddings(
    clips: dict[str, Path], tiny_encoder_checkpoints: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tempcore.encoders import load_encoder

    encoder = load_encoder(tiny_encoder_checkpoints["siglip2"], batch_size=8)
    stages: list[str] = []
    real = scoring._background

    def counted(*args: Any, **kwargs: Any) -> Any:
        stages.append("thread")
        return real(*args, **kwargs)

    monkeypatch.setattr(scoring, "_background", counted)
    inline = scoring.frame_embeddings(clips["small"], encoder, fps=10.0)
    assert stages == []  # decoding and preprocessing ran here
    monkeypatch.setattr(video_types, "SMALL_FRAME_PIXELS", 0)  # every video gets the stage threads
    threaded = scoring.frame_embeddings(clips["small"], encoder, fps=10.0)
    assert stages == ["thread", "thread"]  # decoder, preprocessing
    assert np.array_equal(inline.embeddings, threaded.embeddings)
    assert np.array_equal(inline.timestamps, threaded.timestamps)
