"""tempcore.video.decode: decoding at a target fps by presentation timestamp.

Expected frames come from a naive second implementation of the definition (``expected_picks``:
for each target time, bisect the list of source times) fed with source times that do not come
from tempcore: the ground-truth JSON of the real fixture, raw PyAV decoding, or the times the
synthetic video was written with. Frame content is checked through the frame number each
synthetic frame carries (``read_pattern``).
"""

from __future__ import annotations

import bisect
import json
import pickle
import tracemalloc
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from tempcore.records import Sample
from tempcore.video.decode import VideoReader, probe, read_frames
from tempcore.video.synthetic import (
    pattern_frame,
    read_pattern,
    truncate,
    write_audio,
    write_frame_folder,
    write_video,
)
from tempcore.video.types import (
    CorruptVideoError,
    EmptyVideoError,
    FrameBatch,
    FrameIndexError,
    NoVideoStreamError,
    VideoError,
    VideoNotFoundError,
)

DATA = Path(__file__).parent / "data"
NASA = DATA / "nasa_13013.mp4"


def expected_picks(
    times: list[Fraction],
    stream_end: Fraction,
    fps: Fraction,
    start: Fraction | None = None,
    end: Fraction | None = None,
) -> list[int]:
    """Naive reference: source positions picked at t_j = t0 + j/fps < end, each position once."""
    t0 = times[0] if start is None else start
    stop = stream_end if end is None else min(end, stream_end)
    picks: list[int] = []
    j = 0
    while t0 + j / fps < stop:
        k = bisect.bisect_right(times, t0 + j / fps) - 1
        if k >= 0 and (not picks or picks[-1] != k):
            picks.append(k)
        j += 1
    return picks


def read_all(path: Path, **kw) -> FrameBatch:
    return VideoReader(path, **kw).read_all()


def patterns(batch: FrameBatch) -> list[int]:
    return [read_pattern(f).index for f in batch.frames]


def raw_times(path: Path, stream: int = 0) -> tuple[list[Fraction], Fraction]:
    """Source frame times and stream end, from plain PyAV."""
    with av.open(str(path)) as container:
        vstream = container.streams.video[stream]
        tb = vstream.time_base
        frames = [(f.pts, f.duration) for f in container.decode(vstream)]
    times = [Fraction(p) * tb for p, _ in frames]
    return times, times[-1] + Fraction(frames[-1][1]) * tb


def grainy(size: tuple[int, int], seed: int = 0):
    """make_frame: pattern frames plus noise, so every frame costs bytes (truncation lands mid-file)."""
    rng = np.random.default_rng(seed)
    grain = rng.integers(0, 40, size=(4, size[1], size[0], 3), dtype=np.uint8)
    return lambda i, t: pattern_frame(i, size) ^ grain[i % 4]


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("videos")
    return {
        "cfr25": write_video(d / "cfr25.mp4", duration=4.0, fps=25, size=(64, 48), gop=12),
        "fps5": write_video(d / "fps5.mp4", duration=2.0, fps=5),
        "multi": write_video(
            d / "multi.mp4",
            duration=2.0,
            fps=10,
            extra_video_streams=1,
            extra_stream_fps=5,
            extra_stream_size=(32, 32),
            audio=True,
        ),
        "mkv": write_video(d / "plain.mkv", duration=1.5, fps=20, audio=True),
    }


# --- the real fixtures ----------------------------------------------------------------------


def test_nasa_stream0_matches_ground_truth_pts() -> None:
    truth = json.loads((DATA / "nasa_13013.mp4.stream0.all_frames_info.json").read_text())
    times = [Fraction(f["pts_time"]) for f in truth]
    stream_end = times[-1] + Fraction(truth[-1]["duration_time"])
    half_frame = float(Fraction(truth[0]["duration_time"])) / 2
    expected = [float(times[k]) for k in expected_picks(times, stream_end, Fraction(10))]

    reader = VideoReader(NASA, fps=10, batch_size=16)
    batches = list(reader)
    got = np.concatenate([b.timestamps for b in batches])
    assert len(got) == len(expected) == 130
    assert np.all(np.abs(got - np.array(expected)) <= half_frame)
    assert np.array_equal(np.concatenate([b.indices for b in batches]), np.arange(130))
    assert all(len(b) <= 16 for b in batches) and batches[0].frames.shape[1:] == (180, 320, 3)
    assert not reader.truncated and reader.error is None
    assert reader.frames == 130 and reader.duration == pytest.approx(13.0)


def test_nasa_second_video_stream() -> None:
    times, stream_end = raw_times(NASA, stream=1)
    expected = [float(times[k]) for k in expected_picks(times, stream_end, Fraction(10))]
    batch = read_all(NASA, stream=1)
    assert batch.frames.shape[1:] == (270, 480, 3)
    assert batch.timestamps.tolist() == pytest.approx(expected, abs=1e-9)
    info = probe(NASA, stream=1)
    assert info.video_streams == 2 and info.width == 480 and info.frames == len(expected)


def test_h265_fixture() -> None:
    info = probe(DATA / "h265_video.mp4")
    assert (info.codec, info.width, info.height, info.frames) == ("hevc", 128, 128, 10)
    assert info.timestamps == pytest.approx([i / 10 for i in range(10)])
    batch = read_all(DATA / "h265_video.mp4", fps=4)
    assert batch.timestamps.tolist() == pytest.approx([0.0, 0.2, 0.5, 0.7])


def test_probe_agrees_with_reader() -> None:
    for kw in ({}, {"fps": 3.3}, {"start": 2.03, "end": 6.5}, {"stream": 1, "fps": 7}):
        info = probe(NASA, **kw)
        batch = read_all(NASA, **kw)
        assert info.timestamps == batch.timestamps.tolist()
        assert info.frames == len(batch)


# --- timing semantics ----------------------------------------------------------------------


def test_variable_frame_rate_picks_by_pts(tmp_path: Path) -> None:
    times = [0.0, 0.05, 0.12, 0.15, 0.18, 0.5, 1.3, 1.35, 2.0]
    path = write_video(tmp_path / "vfr.mp4", times=times, fps=10)
    batch = read_all(path, fps=10)
    # hand-worked: 0.1 shows 0.05; 0.2 shows 0.18 (0.12 and 0.15 are never on screen at a target);
    # 0.3 / 0.4 show 0.18 again (not repeated); 0.5 -> 0.5; 1.3 -> 1.3; 1.4 -> 1.35; 2.0 -> 2.0
    assert patterns(batch) == [0, 1, 4, 5, 6, 7, 8]
    fractions = [Fraction(repr(t)) for t in times]
    assert patterns(batch) == expected_picks(fractions, Fraction(21, 10), Fraction(10))
    assert batch.timestamps.tolist() == pytest.approx([times[k] for k in patterns(batch)], abs=1e-6)


def test_no_duplicates_when_source_is_slower_than_target(videos: dict[str, Path]) -> None:
    batch = read_all(videos["fps5"], fps=10)
    assert patterns(batch) == list(range(10))
    assert batch.timestamps.tolist() == pytest.approx([i / 5 for i in range(10)])
    assert batch.indices.tolist() == list(range(10))


def test_every_frame_with_fps_none(videos: dict[str, Path]) -> None:
    batch = read_all(videos["cfr25"], fps=None)
    assert patterns(batch) == list(range(100))


def test_every_frame_in_a_segment(videos: dict[str, Path]) -> None:
    # the frame on screen at start (2.00) comes first; frames decoded before it after the seek do not
    batch = read_all(videos["cfr25"], fps=None, start=2.02, end=2.5)
    assert patterns(batch) == list(range(50, 63))


def test_timeline_starts_at_the_container_start(tmp_path: Path) -> None:
    path = write_video(tmp_path / "clip.ts", duration=2.0, fps=25, container_format="mpegts")
    times, _ = raw_times(path)
    assert times[0] > 0  # MPEG-TS starts its clock late (1.4 s by FFmpeg's default)
    batch = read_all(path, fps=5)
    assert patterns(batch) == list(range(0, 50, 5))
    assert batch.timestamps.tolist() == pytest.approx([i / 5 for i in range(10)])


def test_stream_without_timestamps(tmp_path: Path) -> None:
    path = write_video(tmp_path / "raw.h264", duration=2.0, fps=25, container_format="h264")
    info = probe(path, fps=5)
    assert info.estimated_timestamps == 50  # a raw H.264 stream carries no pts
    assert info.timestamps == pytest.approx([i / 5 for i in range(10)])
    assert patterns(read_all(path, fps=5)) == list(range(0, 50, 5))


def test_subsampling_matches_reference(videos: dict[str, Path]) -> None:
    times, stream_end = raw_times(videos["cfr25"])
    for fps in (10, 7.5, 1, 24.99):
        batch = read_all(videos["cfr25"], fps=fps)
        assert patterns(batch) == expected_picks(times, stream_end, Fraction(repr(float(fps))))


def test_segment(videos: dict[str, Path]) -> None:
    times, stream_end = raw_times(videos["cfr25"])
    for start, end in ((2.02, 3.0), (0.0, 0.5), (1.5, None), (None, 1.0), (3.9, 10.0)):
        batch = read_all(videos["cfr25"], fps=10, start=start, end=end)
        expected = expected_picks(
            times,
            stream_end,
            Fraction(10),
            None if start is None else Fraction(repr(start)),
            None if end is None else Fraction(repr(end)),
        )
        assert patterns(batch) == expected, (start, end)
        assert batch.indices.tolist() == list(range(len(expected)))
    # the frame shown at start=2.02 is the one presented at 2.00
    assert read_all(videos["cfr25"], start=2.02, end=2.2).timestamps[0] == pytest.approx(2.0)


def test_segment_start_sweep(videos: dict[str, Path]) -> None:
    """Starts all over the file (some just before keyframes, where a seek can land late)."""
    times, stream_end = raw_times(videos["cfr25"])
    for start in [round(0.07 * i, 2) for i in range(57)]:
        batch = read_all(videos["cfr25"], fps=10, start=start, end=start + 0.35)
        fs, fe = Fraction(repr(start)), Fraction(repr(start + 0.35))
        assert patterns(batch) == expected_picks(times, stream_end, Fraction(10), fs, fe), start


@pytest.mark.parametrize("fault", ["lands_late", "always_late", "raises"])
def test_segment_survives_a_bad_seek(
    videos: dict[str, Path], monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """Some demuxers land after the requested time, or cannot seek: the decoder backs off or decodes
    from the beginning. Fault injection on the real container's seek."""
    real_seek = av.container.InputContainer.seek
    calls: list[int] = []

    def faulty_seek(self, offset, *args, **kwargs):
        calls.append(offset)
        if fault == "raises":
            raise av.error.PatchWelcomeError(-1163346256, "seeking not supported")
        if fault == "lands_late" and len(calls) == 1:
            offset += 12800  # one second late (the stream's time base is 1/12800): back off and retry
        if fault == "always_late":
            offset += 100 * 12800  # past the end every time: decode from the beginning instead
        return real_seek(self, offset, *args, **kwargs)

    monkeypatch.setattr(av.container.InputContainer, "seek", faulty_seek)
    times, stream_end = raw_times(videos["cfr25"])
    batch = read_all(videos["cfr25"], fps=10, start=2.02, end=3.0)
    assert patterns(batch) == expected_picks(times, stream_end, Fraction(10), Fraction("2.02"), Fraction(3))
    assert len(calls) == {"lands_late": 2, "always_late": 2, "raises": 1}[fault]


def test_segment_outside_the_video(videos: dict[str, Path]) -> None:
    with pytest.raises(EmptyVideoError, match="segment") as err:
        read_all(videos["cfr25"], start=20.0, end=30.0)
    assert err.value.path == str(videos["cfr25"])
    with pytest.raises(ValueError):
        VideoReader(videos["cfr25"], start=3.0, end=2.0)


def test_resize(videos: dict[str, Path]) -> None:
    batch = read_all(videos["cfr25"], fps=5, size=(32, 24))
    assert batch.frames.shape == (20, 24, 32, 3)
    assert patterns(batch) == list(range(0, 100, 5))


def test_display_rotation_is_applied(tmp_path: Path) -> None:
    # 64x32 pixels stored, displayed turned 90 degrees counter-clockwise (as ffmpeg's CLI shows it)
    path = write_video(tmp_path / "phone.mp4", duration=0.5, fps=10, size=(64, 32), rotation=90)
    upright = read_all(path)
    assert upright.frames.shape == (5, 64, 32, 3)
    assert [read_pattern(np.rot90(f, -1)).index for f in upright.frames] == list(range(5))
    info = probe(path)
    assert (info.width, info.height, info.rotation) == (32, 64, 90)
    assert read_all(path, size=(16, 32)).frames.shape == (5, 32, 16, 3)
    assert read_frames(path, [2]).frames.shape == (1, 64, 32, 3)
    stored = read_all(path, autorotate=False)
    assert patterns(stored) == list(range(5)) and stored.frames.shape == (5, 32, 64, 3)


def test_exif_orientation_in_frame_folders(tmp_path: Path) -> None:
    from PIL import Image

    folder = tmp_path / "exif"
    folder.mkdir()
    for i in range(3):
        exif = Image.Exif()
        exif[0x0112] = 6  # "rotate 90 degrees clockwise to display"
        Image.fromarray(np.ascontiguousarray(np.rot90(pattern_frame(i, (48, 32)), 1))).save(
            folder / f"{i}.jpg", exif=exif, quality=95
        )
    batch = read_all(folder)
    assert batch.frames.shape == (3, 32, 48, 3) and patterns(batch) == [0, 1, 2]


def test_threads_do_not_change_results(videos: dict[str, Path]) -> None:
    a, b = read_all(videos["cfr25"], threads=1), read_all(videos["cfr25"], threads=4)
    assert np.array_equal(a.timestamps, b.timestamps) and np.array_equal(a.frames, b.frames)


# --- read_frames ----------------------------------------------------------------------------


def test_read_frames_order_and_repeats(videos: dict[str, Path]) -> None:
    full = read_all(videos["cfr25"], fps=10)
    wanted = [5, 0, 5, 39, 2]
    got = read_frames(videos["cfr25"], wanted, fps=10)
    assert got.indices.tolist() == wanted
    assert np.array_equal(got.frames, full.frames[wanted])
    assert np.array_equal(got.timestamps, full.timestamps[wanted])
    assert read_frames(videos["cfr25"], [3], fps=10, size=(16, 12)).frames.shape == (1, 12, 16, 3)
    assert len(read_frames(videos["cfr25"], [], fps=10)) == 0


def test_read_frames_out_of_range(videos: dict[str, Path]) -> None:
    with pytest.raises(FrameIndexError, match="0..39"):
        read_frames(videos["cfr25"], [1, 40], fps=10)
    with pytest.raises(FrameIndexError):
        read_frames(videos["cfr25"], [-1], fps=10)


# --- containers, streams, media ------------------------------------------------------------


def test_multiple_video_streams(videos: dict[str, Path]) -> None:
    first = read_all(videos["multi"])
    second = read_all(videos["multi"], stream=1)
    assert {read_pattern(f).stream for f in first.frames} == {0}
    assert [tuple(read_pattern(f)) for f in second.frames] == [(i, 1) for i in range(10)]
    assert second.frames.shape[1:] == (32, 32, 3)
    with pytest.raises(NoVideoStreamError, match="2 video stream"):
        VideoReader(videos["multi"], stream=2)


def test_mkv_without_frame_count(videos: dict[str, Path]) -> None:
    with av.open(str(videos["mkv"])) as container:
        assert container.streams.video[0].frames == 0  # the container does not count frames
    info = probe(videos["mkv"], fps=10)
    assert info.container_frames == 0 and info.frames == 15 and info.duration == pytest.approx(1.5)
    assert patterns(read_all(videos["mkv"], fps=10)) == list(range(0, 30, 2))


@pytest.mark.parametrize(
    "name,codec,pix_fmt",
    [
        ("hevc10.mp4", "libx265", "yuv420p10le"),
        ("av1.mp4", "libsvtav1", "yuv420p"),
        ("vp9.webm", None, "yuv420p"),
    ],
)
def test_other_codecs(tmp_path: Path, name: str, codec: str | None, pix_fmt: str) -> None:
    path = write_video(tmp_path / name, duration=1.0, fps=10, codec=codec, pix_fmt=pix_fmt)
    batch = read_all(path, fps=10)
    assert patterns(batch) == list(range(10)) and batch.frames.dtype == np.uint8
    assert probe(path).pix_fmt == pix_fmt


def test_gif(tmp_path: Path) -> None:
    path = write_video(tmp_path / "anim.gif", duration=1.0, fps=10, codec=None)
    batch = read_all(path, fps=5)
    assert patterns(batch) == [0, 2, 4, 6, 8]
    assert probe(path).media == "gif"


def test_frame_folder(tmp_path: Path) -> None:
    folder = write_frame_folder(tmp_path / "frames", 7, size=(48, 32))
    batch = read_all(folder)  # 3 fps images at a 10 fps target: each image once
    assert patterns(batch) == list(range(7))
    assert batch.timestamps.tolist() == pytest.approx([i / 3 for i in range(7)])
    assert patterns(read_all(folder, fps=10, folder_fps=20)) == list(range(0, 7, 2))
    assert read_all(folder, size=(24, 16)).frames.shape == (7, 16, 24, 3)
    sample = Sample("mvbench", "s1", "frames", "q?", ("a", "b"), 0, start=1.0, media="frames")
    seg = VideoReader.for_sample(sample, video_root=tmp_path).read_all()
    assert patterns(seg) == [3, 4, 5, 6]


def test_frame_folder_natural_order_and_bad_image(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    write_frame_folder(folder, frames=[pattern_frame(i, (32, 32)) for i in range(3)], name="img{}")
    (folder / "img0.png").rename(folder / "img10.png")  # pattern 0 now sorts last (10 > 2)
    (folder / "img5.png").write_bytes(b"not an image")
    (folder / "notes.txt").write_text("ignored")
    reader = VideoReader(folder, folder_fps=1)
    batch = reader.read_all()
    assert patterns(batch) == [1, 2, 0]
    assert batch.timestamps.tolist() == [0.0, 1.0, 3.0]  # img5 failed, the others keep their times
    assert "img5.png" in reader.error


def test_for_sample_resolves_root_and_segment(videos: dict[str, Path]) -> None:
    sample = Sample("b", "s", videos["cfr25"].name, "q?", ("a", "b"), 1, start=1.0, end=2.0)
    batch = VideoReader.for_sample(sample, video_root=videos["cfr25"].parent, fps=5).read_all()
    assert patterns(batch) == [25, 30, 35, 40, 45]


# --- damaged and invalid inputs ------------------------------------------------------------


@pytest.mark.parametrize("name,kw", [("cut.mp4", {"faststart": True}), ("cut.mkv", {})])
def test_truncated_file_yields_what_decodes(tmp_path: Path, name: str, kw: dict) -> None:
    path = write_video(tmp_path / name, duration=4.0, fps=25, make_frame=grainy((64, 64)), **kw)
    truncate(path, 0.5)
    reader = VideoReader(path, fps=None)
    batch = reader.read_all()
    assert 10 < len(batch) < 100
    assert reader.truncated and reader.error
    assert patterns(batch) == list(range(len(batch)))  # the frames that came back are the right ones
    info = probe(path, fps=None)
    assert info.truncated and info.frames == len(batch)


def test_truncated_mp4_without_faststart_is_corrupt(tmp_path: Path) -> None:
    path = truncate(write_video(tmp_path / "cut.mp4", duration=2.0), 0.6)
    with pytest.raises(CorruptVideoError) as err:
        VideoReader(path)
    assert err.value.path == str(path) and str(path) in str(err.value)


def test_complete_file_is_not_reported_truncated(videos: dict[str, Path]) -> None:
    for key in videos:
        reader = VideoReader(videos[key])
        reader.read_all()
        assert not reader.truncated and reader.error is None, key


def test_zero_byte_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.mp4"
    path.write_bytes(b"")
    with pytest.raises(EmptyVideoError, match="0 bytes") as err:
        probe(path)
    assert err.value.path == str(path)


def test_garbage_file(tmp_path: Path) -> None:
    path = tmp_path / "garbage.mp4"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes())
    with pytest.raises(CorruptVideoError, match="garbage.mp4"):
        VideoReader(path)


def test_audio_only(tmp_path: Path) -> None:
    path = write_audio(tmp_path / "tone.m4a", duration=0.5)
    with pytest.raises(NoVideoStreamError, match="audio") as err:
        probe(path)
    assert err.value.path == str(path)


def test_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.mp4"
    for call in (lambda: VideoReader(missing), lambda: probe(missing), lambda: read_frames(missing, [0])):
        with pytest.raises(VideoNotFoundError, match="nope.mp4") as err:
            call()
        assert err.value.path == str(missing)


def test_errors_are_tempcore_errors_and_pickle() -> None:
    from tempcore.errors import TempcoreError

    err = CorruptVideoError("/x/y.mp4", "bad header")
    assert isinstance(err, VideoError) and isinstance(err, TempcoreError)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is CorruptVideoError and again.path == "/x/y.mp4" and str(again) == str(err)


def test_media_mismatch(tmp_path: Path, videos: dict[str, Path]) -> None:
    with pytest.raises(VideoError, match="folder"):
        VideoReader(tmp_path, media="video")
    with pytest.raises(EmptyVideoError, match="no image files"):
        VideoReader(tmp_path, media="frames")


# --- streaming ------------------------------------------------------------------------------


def test_batches_bound_memory(tmp_path: Path) -> None:
    path = write_video(tmp_path / "long.mkv", duration=30.0, fps=10, size=(128, 96), preset="ultrafast")
    all_frames_bytes = 300 * 96 * 128 * 3  # 11 MB if every frame were held
    tracemalloc.start()
    try:
        count = 0
        for batch in VideoReader(path, fps=None, batch_size=8):
            assert len(batch) <= 8
            count += len(batch)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 300
    assert peak < all_frames_bytes / 8  # a few batches at most


def test_kept_batches_are_never_overwritten(videos: dict[str, Path]) -> None:
    kept = list(VideoReader(videos["cfr25"], fps=None, batch_size=4))
    assert [patterns(b) for b in kept] == [list(range(i, min(i + 4, 100))) for i in range(0, 100, 4)]
    first_frames = [b.frames[0] for b in VideoReader(videos["cfr25"], fps=None, batch_size=4)]
    assert [read_pattern(f).index for f in first_frames] == list(range(0, 100, 4))


def test_stopping_early_releases_the_file_and_the_reader_is_reusable(videos: dict[str, Path]) -> None:
    reader = VideoReader(videos["cfr25"], fps=None, batch_size=10)
    for batch in reader:
        assert patterns(batch) == list(range(10))
        break
    assert reader.frames is None  # no complete pass yet
    it = iter(reader)
    next(it)
    it.close()
    assert sum(len(b) for b in reader) == 100 and reader.frames == 100


def test_batches_handed_to_another_thread_stay_intact(videos: dict[str, Path]) -> None:
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=2)

    def produce() -> None:
        for batch in VideoReader(videos["cfr25"], fps=None, batch_size=4):
            q.put(batch)
        q.put(None)

    thread = threading.Thread(target=produce)
    thread.start()
    seen: list[int] = []
    while (batch := q.get()) is not None:
        seen += patterns(batch)
        del batch
    thread.join()
    assert seen == list(range(100))
