"""Eq. 1 scoring, text modes, the embedding cache and ``tempcore score``, on synthetic videos and the
tiny random-weight encoders of ``tiny_encoders``."""

from __future__ import annotations

import json
import math
import multiprocessing
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tempcore.cli import main as cli_main
from tempcore.encoders import FrameTextEncoder, load_encoder
from tempcore.encoders.cache import CacheKey, EmbeddingCache, default_cache_dir
from tempcore.records import Sample
from tempcore.run.frame_scoring import (
    FrameScores,
    ScoreFailure,
    TextModeError,
    _background,
    eq1_scores,
    frame_embeddings,
    parse_modes,
    query_text,
    score_sample,
    score_samples,
    sigmoid,
)
from tempcore.video.decode import VideoReader
from tempcore.video.synthetic import Scene, pattern_frame, truncate, write_frame_folder, write_video
from tempcore.video.types import VideoNotFoundError

# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread(one_torch_thread_per_module):
    """Tiny models run fastest on one thread (conftest.py)."""


@pytest.fixture(scope="session")
def checkpoints(tiny_encoder_checkpoints: dict[str, Path]) -> dict[str, Path]:
    return tiny_encoder_checkpoints  # built once per session (conftest.py)


@pytest.fixture
def siglip2(checkpoints: dict[str, Path]) -> FrameTextEncoder:
    """A fresh encoder per test, so ``stats`` counts only that test's work."""
    return load_encoder(checkpoints["siglip2"], batch_size=8)


@pytest.fixture(scope="session")
def videos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("videos")
    scene = Scene(size=(64, 48), seed=1)
    write_video(root / "a.mp4", make_frame=scene, fps=25, duration=3.0, size=(64, 48))
    write_video(root / "b.mp4", make_frame=Scene(size=(48, 48), seed=2), fps=10, duration=2.0, size=(48, 48))
    (root / "broken.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 this is not a video at all" * 20)
    return root


def sample(
    sid: str, video: str, question: str = "what does the man hold?", answer: int | None = 1, **kw
) -> Sample:
    return Sample("toy", sid, video, question, ("a cup", " a red ball "), answer, **kw)


# --- text modes and Eq. 1 ----------------------------------------------------------------------


def test_text_modes_use_the_documented_join() -> None:
    s = Sample("toy", "1", "v.mp4", "  What is in the box? ", ("a cat", "  a dog "), 1)
    assert query_text(s, "q") == "What is in the box?"
    assert query_text(s, "qa") == "What is in the box? a dog"
    with pytest.raises(TextModeError, match="sample 2"):
        query_text(Sample("toy", "2", "v.mp4", "Q?", ("x", "y"), None), "qa")
    with pytest.raises(TextModeError, match="unknown text mode"):
        query_text(s, "answer")
    assert parse_modes("both") == ("q", "qa") and parse_modes(["qa", "q", "qa"]) == ("qa", "q")


def test_eq1_is_the_plain_sigmoid_of_the_cosine() -> None:
    frames = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [-0.6, -0.8]], dtype=np.float32)
    text = np.array([0.6, 0.8], dtype=np.float32)
    cos, s = eq1_scores(frames, text)
    np.testing.assert_allclose(cos, [0.6, 0.8, 1.0, -1.0], atol=1e-7)
    expected = [1 / (1 + math.exp(-c)) for c in (0.6, 0.8, 1.0, -1.0)]
    np.testing.assert_allclose(s, expected, rtol=1e-7)
    assert s[2] == pytest.approx(0.7310585786) and s[3] == pytest.approx(0.2689414214)
    with np.errstate(over="raise"):
        np.testing.assert_allclose(sigmoid(np.array([-1000.0, 0.0, 1000.0])), [0.0, 0.5, 1.0])
    with pytest.raises(ValueError):
        eq1_scores(frames, np.ones(3, dtype=np.float32))


# --- frame embeddings and the cache --------------------------------------------------------------


def test_frame_embeddings_equal_direct_encoding_of_the_decoded_frames(
    siglip2: FrameTextEncoder, videos: Path
) -> None:
    fe = frame_embeddings(videos / "a.mp4", siglip2, fps=10)
    decoded = VideoReader(videos / "a.mp4", fps=10).read_all()
    assert len(fe) == len(decoded) == 30 and not fe.cache_hit
    np.testing.assert_array_equal(fe.timestamps, decoded.timestamps)
    np.testing.assert_array_equal(fe.indices, np.arange(30))
    np.testing.assert_allclose(fe.embeddings, siglip2.encode_images(decoded.frames), atol=1e-6)


def test_second_run_is_a_cache_hit_without_encoding(
    siglip2: FrameTextEncoder, videos: Path, tmp_path: Path
) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    first = frame_embeddings(videos / "a.mp4", siglip2, fps=10, cache=cache)
    encoded = siglip2.stats.images
    assert encoded == 30 and (cache.hits, cache.misses, cache.writes) == (0, 1, 1)
    second = frame_embeddings(videos / "a.mp4", siglip2, fps=10, cache=cache)
    assert second.cache_hit and siglip2.stats.images == encoded  # the image tower was not called
    assert (cache.hits, cache.misses) == (1, 1)
    np.testing.assert_array_equal(first.embeddings, second.embeddings)
    np.testing.assert_array_equal(first.timestamps, second.timestamps)
    # content-addressed: a renamed copy of the same file is a hit too
    copy = tmp_path / "renamed.mp4"
    shutil.copy(videos / "a.mp4", copy)
    assert frame_embeddings(copy, siglip2, fps=10, cache=cache).cache_hit
    header = json.loads(np.load(cache.path_for(_key(cache, siglip2, videos / "a.mp4")))["header"].tobytes())
    assert header["encoder"] == siglip2.name and header["fps"] == 10 and header["shape"] == [30, siglip2.dim]


def _key(cache: EmbeddingCache, encoder: FrameTextEncoder, path: Path, **kw: object) -> CacheKey:
    from tempcore.run.frame_scoring import cache_key_for

    return cache_key_for(cache, path, encoder, fps=kw.pop("fps", 10.0), **kw)  # type: ignore[arg-type]


def test_cache_is_invalidated_by_fps_encoder_and_segment(
    siglip2: FrameTextEncoder, checkpoints: dict[str, Path], videos: Path, tmp_path: Path
) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    v = videos / "a.mp4"
    frame_embeddings(v, siglip2, fps=10, cache=cache)
    assert not frame_embeddings(v, siglip2, fps=5, cache=cache).cache_hit
    clip = load_encoder(checkpoints["clip"])
    assert not frame_embeddings(v, clip, fps=10, cache=cache).cache_hit
    assert clip.stats.images == 30
    seg = frame_embeddings(v, siglip2, fps=10, cache=cache, start=1.0, end=2.0)
    assert not seg.cache_hit and 9 <= len(seg) <= 11
    assert not frame_embeddings(v, siglip2, fps=10, cache=cache, start=1.0, end=2.5).cache_hit
    assert frame_embeddings(v, siglip2, fps=10, cache=cache, start=1.0, end=2.0).cache_hit
    assert frame_embeddings(v, siglip2, fps=5, cache=cache).cache_hit
    assert frame_embeddings(v, siglip2, fps=10, cache=cache).cache_hit
    assert (cache.hits, cache.misses, cache.writes) == (3, 5, 5)


def test_damaged_entries_are_detected_reported_and_recomputed(
    siglip2: FrameTextEncoder, videos: Path, tmp_path: Path
) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    v = videos / "b.mp4"
    good = frame_embeddings(v, siglip2, fps=10, cache=cache)
    entry = cache.path_for(_key(cache, siglip2, v))
    data = entry.read_bytes()

    entry.write_bytes(data[: len(data) // 2])  # truncated file
    again = frame_embeddings(v, siglip2, fps=10, cache=cache)
    assert not again.cache_hit and cache.damaged == 1 and "unreadable" in cache.damaged_entries[0].reason
    np.testing.assert_allclose(again.embeddings, good.embeddings, atol=1e-6)
    assert frame_embeddings(v, siglip2, fps=10, cache=cache).cache_hit  # rewritten, valid

    bad = bytearray(entry.read_bytes())  # one flipped bit inside the embeddings: CRC mismatch
    offset = bytes(bad).find(good.embeddings[3].tobytes())
    bad[offset + 5] ^= 0x10
    entry.write_bytes(bytes(bad))
    assert not frame_embeddings(v, siglip2, fps=10, cache=cache).cache_hit
    assert cache.damaged == 2 and "CRC" in cache.damaged_entries[1].reason

    other = _key(cache, siglip2, v, fps=5.0)  # a valid entry of another key moved onto this one
    cache.put(other, good.embeddings, good.timestamps, good.indices)
    shutil.copy(cache.path_for(other), entry)
    assert not frame_embeddings(v, siglip2, fps=10, cache=cache).cache_hit
    assert "does not match" in cache.damaged_entries[2].reason

    key = _key(cache, siglip2, v)  # header / array shape mismatch
    cache.put(key, good.embeddings, good.timestamps, good.indices)
    with np.load(entry) as z:
        members = {name: z[name] for name in z.files}
    members["embeddings"] = members["embeddings"][:-1]
    members["timestamps"] = members["timestamps"][:-1]
    members["indices"] = members["indices"][:-1]
    np.savez(entry, **members)
    assert cache.get(key) is None and "shape" in cache.damaged_entries[3].reason
    assert not entry.exists()  # removed, so the next run recomputes it


def _writer(root: str, digest_fields: dict, value: float, rounds: int, out: multiprocessing.Queue) -> None:
    cache = EmbeddingCache(root)
    key = CacheKey.build(**digest_fields)
    emb = np.full((200, 64), value, dtype=np.float32)
    seen = set()
    for _ in range(rounds):
        cache.put(key, emb, np.arange(200) / 10, np.arange(200))
        got = cache.get(key)
        if got is not None:
            seen.add(float(got.embeddings[0, 0]))
    out.put((value, cache.damaged, sorted(seen)))


def test_concurrent_writers_of_one_key_leave_a_valid_entry(tmp_path: Path) -> None:
    fields = {"content": "file:deadbeef", "encoder_fingerprint": "enc", "fps": 10.0}
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), fields, v, 40, q)) for v in (1.0, 2.0)]
    for p in procs:
        p.start()
    results = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    for _value, damaged, seen in results:
        assert damaged == 0 and set(seen) <= {1.0, 2.0}  # readers never saw a half-written entry
    cache = EmbeddingCache(tmp_path)
    entry = cache.get(CacheKey.build(**fields))
    assert entry is not None and entry.embeddings.shape == (200, 64)
    assert float(entry.embeddings[0, 0]) in (1.0, 2.0) and np.all(entry.embeddings == entry.embeddings[0, 0])
    leftovers = [
        p.name for p in cache.path_for(CacheKey.build(**fields)).parent.iterdir() if p.name.startswith(".tmp")
    ]
    assert leftovers == []


def test_content_hash_is_memoised_and_follows_changes(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    f = tmp_path / "v.bin"
    f.write_bytes(b"x" * 1000)
    h1 = cache.content_hash(f)
    assert list((tmp_path / "cache" / "hashes").glob("*.json"))
    assert EmbeddingCache(tmp_path / "cache").content_hash(f) == h1  # read back from the memo
    f.write_bytes(b"y" * 1001)
    assert cache.content_hash(f) != h1
    folder = tmp_path / "frames"
    folder.mkdir()
    (folder / "0001.jpg").write_bytes(b"a")
    (folder / "0002.jpg").write_bytes(b"b")
    d1 = cache.content_hash(folder)
    (folder / "0002.jpg").write_bytes(b"c")
    assert cache.content_hash(folder) != d1 and d1.startswith("dir:")


def test_default_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TEMPCORE_CACHE", str(tmp_path / "here"))
    assert default_cache_dir() == tmp_path / "here"
    monkeypatch.delenv("TEMPCORE_CACHE")
    assert default_cache_dir() == Path("~/.cache/tempcore/embeddings").expanduser()


def test_frame_folders_are_scored_and_keyed_by_their_content(
    siglip2: FrameTextEncoder, tmp_path: Path
) -> None:
    folder = write_frame_folder(tmp_path / "frames", 6, size=(32, 32))
    cache = EmbeddingCache(tmp_path / "cache")
    fe = frame_embeddings(folder, siglip2, fps=None, cache=cache)  # every image, shown at i / 3 s
    assert len(fe) == 6 and not fe.cache_hit
    np.testing.assert_allclose(fe.timestamps, np.arange(6) / 3)
    assert frame_embeddings(folder, siglip2, fps=None, cache=cache).cache_hit
    assert not frame_embeddings(folder, siglip2, fps=None, cache=cache, folder_fps=6.0).cache_hit
    from PIL import Image

    Image.fromarray(pattern_frame(99, (32, 32))).save(folder / "00002.png")
    changed = frame_embeddings(folder, siglip2, fps=None, cache=cache)
    assert not changed.cache_hit and not np.allclose(changed.embeddings[2], fe.embeddings[2])
    np.testing.assert_allclose(changed.embeddings[[0, 1, 3, 4, 5]], fe.embeddings[[0, 1, 3, 4, 5]], atol=1e-6)


# --- decoding pipeline ---------------------------------------------------------------------------


def test_background_stage_propagates_errors_and_stops_its_producer() -> None:
    closed = threading.Event()

    def produce():
        try:
            yield from range(1000)
        finally:
            closed.set()

    it = _background(produce())
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    it.close()  # consumer stops early: the producer is closed, not left running
    assert closed.is_set()

    def failing():
        yield 1
        raise RuntimeError("decoder broke")

    with pytest.raises(RuntimeError, match="decoder broke"):
        list(_background(_background(failing(), lambda x: x * 2)))


def test_truncated_videos_keep_their_frames_and_are_flagged(
    siglip2: FrameTextEncoder, videos: Path, tmp_path: Path
) -> None:
    mkv = write_video(
        tmp_path / "t.mkv", make_frame=Scene(size=(32, 32)), fps=10, duration=4.0, size=(32, 32)
    )
    truncate(mkv, 0.6)
    fe = frame_embeddings(mkv, siglip2, fps=10, cache=EmbeddingCache(tmp_path / "c"))
    assert 0 < len(fe) < 40 and fe.truncated


# --- scoring samples -------------------------------------------------------------------------------


def test_score_sample_is_eq1_against_the_mode_text(
    siglip2: FrameTextEncoder, videos: Path, tmp_path: Path
) -> None:
    frames = frame_embeddings(videos / "a.mp4", siglip2, fps=10)  # computed here, without the cache
    cache = EmbeddingCache(tmp_path / "cache")
    s = sample("s1", "a.mp4", question="what does the man hold " + "in the kitchen " * 10)
    out = score_sample(s, siglip2, "qa", fps=10, video_root=videos, cache=cache)
    assert isinstance(out, FrameScores) and out.mode == "qa" and len(out) == 30
    assert out.text == query_text(s, "qa") and out.text_truncated and out.text_tokens > 16
    t = siglip2.encode_texts([out.text]).embeddings[0]
    np.testing.assert_allclose(out.cos, frames.embeddings @ t, atol=1e-6)
    np.testing.assert_array_equal(out.timestamps, frames.timestamps)
    np.testing.assert_allclose(out.s, 1 / (1 + np.exp(-out.cos.astype(np.float64))), rtol=1e-12)
    assert np.all((out.s > 0.2689) & (out.s < 0.7311))
    short = sample("s2", "a.mp4")
    q = score_sample(short, siglip2, "q", fps=10, video_root=videos, cache=cache)
    qa = score_sample(short, siglip2, "qa", fps=10, video_root=videos, cache=cache)
    assert q.cache_hit and qa.cache_hit and siglip2.stats.images == 60
    assert not q.text_truncated and not np.allclose(q.cos, qa.cos)  # the answer text changes the scores


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_score_samples_shares_videos_reports_failures_and_goes_on(
    siglip2: FrameTextEncoder, videos: Path, workers: int
) -> None:
    samples = [
        sample("s1", "a.mp4"),
        sample("s2", "b.mp4", question="who opens the door?"),
        sample("s3", "missing.mp4"),
        sample("s4", "a.mp4", question="where is the dog?", answer=0),
        sample("s5", "broken.mp4"),
        sample("s6", "b.mp4", question="what colour is the car?", answer=None),
    ]
    done = []
    results = list(score_samples(samples, siglip2, "both", fps=10, video_root=videos, on_sample=done.append,
                                 workers=workers))  # several videos at once: the same records, in order
    scores = [r for r in results if isinstance(r, FrameScores)]
    failures = {(f.sample_id, f.stage): f for f in results if isinstance(f, ScoreFailure)}
    assert [(r.sample_id, r.mode) for r in scores] == [
        ("s1", "q"), ("s1", "qa"), ("s4", "q"), ("s4", "qa"),
        ("s2", "q"), ("s2", "qa"), ("s6", "q"),
    ]  # fmt: skip
    assert set(failures) == {("s3", "video"), ("s5", "video"), ("s6", "text")}
    assert "VideoNotFoundError" in failures[("s3", "video")].error
    assert failures[("s3", "video")].video == str(videos / "missing.mp4")
    assert failures[("s5", "video")].error.split(":")[0].endswith("Error")
    assert failures[("s6", "text")].modes == ("qa",)
    assert sorted(s.sample_id for s in done) == ["s1", "s2", "s3", "s4", "s5", "s6"]
    # without a cache, each shared video is still decoded and encoded once: a (30) + b (20)
    assert siglip2.stats.images == 50
    assert siglip2.stats.texts == 7 and siglip2.stats.text_batches == 1
    by = {(r.sample_id, r.mode): r for r in scores}
    np.testing.assert_array_equal(by[("s1", "q")].timestamps, by[("s4", "q")].timestamps)
    assert not np.allclose(by[("s1", "q")].cos, by[("s4", "q")].cos)


class _Keeper:
    """A FrameKeeper that records what it is handed, and which sinks were closed."""

    def __init__(self) -> None:
        self.sinks: list[Any] = []
        self.kept: list[tuple[str, list[str]]] = []

    def sink(self, path: Path, samples: Any) -> Any:
        keeper = self

        class Sink:
            def __init__(self) -> None:
                self.frames, self.closed = 0, False

            def add(self, batch: Any) -> None:
                self.frames += len(batch)

            def close(self) -> None:
                self.closed = True

        keeper.sinks.append(Sink())
        return keeper.sinks[-1]

    def done(self, path: Path, samples: Any, records: Any, sink: Any) -> None:
        self.kept.append((path.name, [s.sample_id for s in samples]))


def test_videos_scored_at_once_hand_their_frames_over_in_order_and_let_go_of_the_rest(
    siglip2: FrameTextEncoder, videos: Path
) -> None:
    samples = [sample(f"s{i}", name) for i, name in enumerate(["a.mp4", "b.mp4", "broken.mp4", "a.mp4", "b.mp4"])]
    keep = _Keeper()
    list(score_samples(samples, siglip2, "q", fps=10, video_root=videos, keep=keep, workers=2))
    assert keep.kept == [("a.mp4", ["s0", "s3"]), ("b.mp4", ["s1", "s4"])]  # the broken video is not kept
    assert sorted(k.frames for k in keep.sinks) == [0, 20, 30] and all(k.closed for k in keep.sinks)
    # a consumer that stops after the first video: the video scored ahead is let go too
    keep = _Keeper()
    records = score_samples(samples, siglip2, "q", fps=10, video_root=videos, keep=keep, workers=2)
    next(records)
    records.close()
    assert 2 <= len(keep.sinks) <= 3 and all(k.closed for k in keep.sinks)
    with pytest.raises(ValueError, match="workers must be >= 1"):
        list(score_samples(samples, siglip2, "q", fps=10, video_root=videos, workers=0))


def test_rescoring_in_the_other_mode_encodes_only_text(
    siglip2: FrameTextEncoder, videos: Path, tmp_path: Path
) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    samples = [sample("s1", "a.mp4"), sample("s2", "b.mp4")]
    first = list(score_samples(samples, siglip2, "q", fps=10, cache=cache, video_root=videos))
    images = siglip2.stats.images
    second = list(score_samples(samples, siglip2, "qa", fps=10, cache=cache, video_root=videos))
    assert siglip2.stats.images == images == 50 and cache.hits == 2
    assert [r.mode for r in first] == ["q", "q"] and [r.mode for r in second] == ["qa", "qa"]


def test_missing_video_is_a_named_error_for_a_single_sample(
    siglip2: FrameTextEncoder, tmp_path: Path
) -> None:
    with pytest.raises(VideoNotFoundError):
        score_sample(sample("x", "nope.mp4"), siglip2, "q", video_root=tmp_path)


# --- CLI -----------------------------------------------------------------------------------------------


def test_cli_scores_a_generic_benchmark_end_to_end(
    checkpoints: dict[str, Path], videos: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"id": "q1", "video": "a.mp4", "question": "What does the man hold?", "options": ["a cup", "a ball"], "answer": 1},
        {"id": "q2", "video": "b.mp4", "question": "Who opens the door?", "options": ["a man", "a dog"], "answer": "A"},
        {"id": "q3", "video": "a.mp4", "question": "Where is the dog " + "in the park " * 10, "options": ["here", "there"], "answer": 0},
        {"id": "q4", "video": "gone.mp4", "question": "What moves?", "options": ["a car", "a cat"], "answer": 1},
    ]  # fmt: skip
    ann = tmp_path / "bench.jsonl"
    ann.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "scores.jsonl"
    args = [
        "score", "--benchmark", "generic", "--annotations", str(ann), "--video-root", str(videos),
        "--encoder", str(checkpoints["siglip"]), "--mode", "both", "--fps", "10",
        "--cache", str(tmp_path / "cache"), "--out", str(out), "--batch-size", "8",
    ]  # fmt: skip
    assert cli_main(args) == 1  # one video failed; everything else is written
    err = capsys.readouterr().err
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["sample_id"], r["mode"]) for r in lines] == [
        ("q1", "q"), ("q1", "qa"), ("q3", "q"), ("q3", "qa"), ("q2", "q"), ("q2", "qa"),
    ]  # fmt: skip
    for r in lines:
        assert set(r) >= {"benchmark", "sample_id", "mode", "timestamps", "cos", "s", "text_truncated"}
        assert (
            r["benchmark"] == "generic"
            and len(r["timestamps"]) == len(r["cos"]) == len(r["s"]) == r["frames"]
        )
        np.testing.assert_allclose(r["s"], 1 / (1 + np.exp(-np.array(r["cos"], dtype=np.float64))), rtol=1e-7)
    assert [r["frames"] for r in lines] == [30, 30, 30, 30, 20, 20]
    assert [r["text_truncated"] for r in lines if r["sample_id"] == "q3"] == [True, True]
    assert "3 of 4 samples scored" in err and "0 hits, 2 misses" in err
    assert "gone.mp4" in err and "VideoNotFoundError" in err and "q4" in err

    assert cli_main([*args[:-4], "--out", str(out), "--mode", "q", "--limit", "2", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "2 hits, 0 misses" in err and "0 frames and 2 texts encoded" in err
    assert [json.loads(x)["mode"] for x in out.read_text().splitlines()] == ["q", "q"]
