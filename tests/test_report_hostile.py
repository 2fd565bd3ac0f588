"""Hostile names and videos in the report (issue 13): Markdown link / image syntax stays text, a
video that is a named pipe is refused without being opened, a damaged video is noted."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tempcore.records import Sample
from tempcore.report.browser import _attach_thumbnails, _run_bounded, openable_video, thumbnails
from tempcore.report.markdown import md_text
from tempcore.video.synthetic import write_video


@pytest.mark.parametrize(
    "name,expected",
    [
        ("[x](javascript:alert(1))", "\\[x\\](javascript:alert(1))"),
        ("![](http://evil.example/p.png)", "!\\[\\](http:\\/\\/evil.example/p.png)"),
        ("\\[x](javascript:y)", "\\\\\\[x\\](javascript:y)"),  # a backslash cannot un-escape the bracket
        ("see www.evil.example", "see www\\.evil.example"),
        ("<img src=x>|b", "&lt;img src=x&gt;\\|b"),
        ("temporally_grounded", "temporally_grounded"),
    ],
)
def test_md_text_leaves_no_live_link(name: str, expected: str) -> None:
    assert md_text(name) == expected


def _call_bounded(fn, seconds: float = 10.0):
    box: dict[str, object] = {}
    worker = threading.Thread(target=lambda: box.setdefault("value", fn()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the call hung"
    return box.get("value")


def test_named_pipe_video_is_refused_without_opening(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.mp4"
    os.mkfifo(fifo)
    sample = Sample("toy", "s1", "pipe.mp4", "q?", ("a", "b"), 0)
    entry = {"maxprob": {"indices": [0, 1], "timestamps": [0.0, 0.1], "fps": 10.0}}
    note = _call_bounded(lambda: _attach_thumbnails(entry, sample, tmp_path, 32))
    assert note is not None and "named pipe" in note and str(fifo) in note
    assert "thumbs" not in entry["maxprob"]
    assert openable_video(fifo, "video") is not None
    with pytest.raises(ValueError, match="named pipe"):
        _run_bounded(lambda: thumbnails(fifo, [0], fps=10.0), 10.0)


def test_bounded_decoding_times_out() -> None:
    import threading

    finished = threading.Event()

    def slow() -> None:
        time.sleep(5)
        finished.set()

    with pytest.raises(TimeoutError, match="longer than 0.2 s"):
        _run_bounded(slow, 0.2)
    assert not finished.is_set()  # it gave up before the work ended (an order, not a wall time)


def test_damaged_video_is_noted_and_its_frames_shown(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    path = write_video(tmp_path / "v.mp4", duration=4.0, fps=25, faststart=True,
                       make_frame=lambda i, t: rng.integers(0, 255, (64, 64, 3), dtype=np.uint8))
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * 0.6)])
    sample = Sample("toy", "s1", "v.mp4", "q?", ("a", "b"), 0)
    entry = {"maxprob": {"indices": [0, 3], "timestamps": [0.0, 0.3], "fps": 10.0}}
    note = _call_bounded(lambda: _attach_thumbnails(entry, sample, tmp_path, 32))
    assert note is not None and note.startswith("video damaged:") and "truncated" in note
    assert len(entry["maxprob"]["thumbs"]) == 2
    clean = write_video(tmp_path / "c.mp4", duration=1.0, fps=10)
    entry = {"maxprob": {"indices": [0, 3], "timestamps": [0.0, 0.3], "fps": 10.0}}
    assert _attach_thumbnails(entry, Sample("toy", "s2", clean.name, "q?", ("a", "b"), 0), tmp_path, 32) is None


def test_hostile_frame_lists_in_the_table_do_not_break_thumbnails(tmp_path: Path) -> None:
    from tempcore.report.browser import _json_list

    assert _json_list("[" * 20_000 + "]" * 20_000) is None  # refused, not a RecursionError
    assert _json_list("[1, 2]") == [1, 2]
    sample = Sample("toy", "s1", "v.mp4", "q?", ("a", "b"), 0)
    write_video(tmp_path / "v.mp4", duration=1.0, fps=10)
    entry = {"maxprob": {"indices": ["a", 1], "timestamps": [0.0, 0.1], "fps": 10.0}}
    note = _attach_thumbnails(entry, sample, tmp_path, 32)
    assert note is not None and "not non-negative integers" in note
