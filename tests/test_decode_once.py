"""A run decodes each video once (issue 18): the frames answering shows are kept from the scoring
pass (:mod:`tempcore.run.framestore`), or, when the embeddings come from the cache, decoded once for
every model; the requests the models get are the same as when every unit decodes its own frames."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tempcore.models import load_model
from tempcore.run.config import RunConfig
from tempcore.run.framestore import FrameStore, video_key
from tempcore.run.local import LocalExecutor
from tempcore.run.runner import run
from tempcore.video.decode import VideoReader, read_frames
from tempcore.video.types import count_decodes

N_QUESTIONS = 6
MODELS = ("zoo-mean", "zoo-order")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tempcore.world import generate_world

    return generate_world(tmp_path_factory.mktemp("world") / "world", N_QUESTIONS, 7)


def _config(world: Any, out: Path, cache: Path, **changes: Any) -> RunConfig:
    from tempcore.demo import demo_config

    raw = dict(demo_config(world, out, cache=cache).to_dict())
    raw.pop("source", None)
    raw["models"] = [m for m in raw["models"] if m["model"] in MODELS]
    raw.update(changes)
    return RunConfig.from_dict(raw, source="test_decode_once")


class _Recorder:
    """Wraps a loaded model; records every request it is shown (frames as their bytes' sha256)."""

    def __init__(self, model: Any, seen: dict[tuple[str, str], tuple[Any, ...]]) -> None:
        self._model, self._seen = model, seen

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def answer(self, requests: Any, method: str = "generate") -> Any:
        for r in requests:
            frames = tuple(hashlib.sha256(np.ascontiguousarray(im).tobytes()).hexdigest() + str(im.shape)
                           for im in r.images)
            self._seen[(self._model.name, r.key)] = (r.prompt, r.options, r.timestamps, frames)
        return self._model.answer(requests, method=method)


def _run(cfg: RunConfig, *, keep: bool = True) -> tuple[dict[tuple[str, str], tuple[Any, ...]], dict[str, Any]]:
    seen: dict[tuple[str, str], tuple[Any, ...]] = {}
    summary = run(cfg, progress=False, log=lambda _m: None, executor=LocalExecutor(keep_frames=keep),
                  model_factory=lambda spec: _Recorder(load_model(spec), seen))
    assert summary.decodes is not None
    on_disk = json.loads((Path(cfg.out) / "summary.json").read_text())
    assert on_disk["decodes"] == summary.decodes  # the counter is in the run summary
    return seen, summary.decodes


def _videos(world: Any) -> int:
    return len({s.video for s in world.samples()})


def test_one_decode_per_video_and_the_same_requests(world: Any, tmp_path: Path) -> None:
    videos = _videos(world)
    # every unit decodes its own frames (as before the frame store): the reference requests
    before, d0 = _run(_config(world, tmp_path / "a", tmp_path / "cache-a"), keep=False)
    assert d0["videos"] == videos and d0["max_per_video"] > 1  # scoring + every model's units
    # scoring keeps what answering shows: one pass per video, the scoring one
    kept, d1 = _run(_config(world, tmp_path / "b", tmp_path / "cache-b"))
    assert d1 == {"videos": videos, "passes": videos, "max_per_video": 1, "per_video": 1.0,
                  "by_kind": {"read": videos}}
    assert kept == before
    # embeddings from the cache: scoring decodes nothing, the one pass is the answering one
    cached, d2 = _run(_config(world, tmp_path / "c", tmp_path / "cache-b"))
    assert d2 == {"videos": videos, "passes": videos, "max_per_video": 1, "per_video": 1.0,
                  "by_kind": {"frames": videos}}
    assert cached == before
    assert len(before) == len(MODELS) * len({k for _m, k in before})  # every model answered every item


def test_without_score_based_conditions_the_probe_pass_is_the_one_decode(world: Any, tmp_path: Path) -> None:
    conditions = [{"strategy": "uniform"}, {"strategy": "random"}, {"strategy": "noframe"}]
    videos = _videos(world)
    before, d0 = _run(_config(world, tmp_path / "a", tmp_path / "cache", conditions=conditions), keep=False)
    assert d0["by_kind"]["probe"] == videos and d0["max_per_video"] > 1
    kept, d1 = _run(_config(world, tmp_path / "b", tmp_path / "cache", conditions=conditions))
    assert d1 == {"videos": videos, "passes": videos, "max_per_video": 1, "per_video": 1.0,
                  "by_kind": {"read": videos}}
    assert kept == before


def test_samples_that_share_a_video_share_its_one_decode(world: Any, tmp_path: Path) -> None:
    # the binarised world: each question with n options becomes n - 1 samples of the same video
    def binary(out: str) -> RunConfig:
        cfg = _config(world, tmp_path / out, tmp_path / f"cache-{out}")
        raw = dict(cfg.to_dict())
        raw.pop("source", None)
        raw["benchmarks"] = [{**dict(b), "binary": True} for b in raw["benchmarks"]]
        raw["conditions"] = [{"strategy": "maxprob", "mode": "qa"}, {"strategy": "uniform"}]
        return RunConfig.from_dict(raw, source="test_decode_once")

    before, _d0 = _run(binary("a"), keep=False)
    kept, d1 = _run(binary("b"))
    videos = _videos(world)
    assert len({k.split("|")[1] for _m, k in kept}) > videos  # more samples than videos
    assert d1["passes"] == d1["videos"] == videos and d1["max_per_video"] == 1
    assert kept == before


def test_the_store_spills_to_disk_and_gives_the_decoded_frames(world: Any) -> None:
    s = world.samples()[0]
    path = Path(world.root) / s.video
    frames = np.concatenate([b.frames for b in VideoReader(path, 10.0, batch_size=7)])
    positions = [0, 3, 9, len(frames) - 1, 5]
    for max_bytes, spool_bytes in ((1 << 30, 1 << 30), (0, frames[0].nbytes * 10)):  # in memory / spilled
        store = FrameStore(max_bytes=max_bytes, spool_bytes=spool_bytes)
        spool = store.spool()
        key = video_key(path, None, None, "video", 10.0)
        with count_decodes() as decodes:
            for b in VideoReader(path, 10.0, batch_size=7):
                spool.add(b)
            store.keep(key, positions[:3], spool)
            spool.close()
            got = store.frames(key, positions[:3], lambda p: read_frames(path, p, 10.0))
            assert store.hits == 1 and store.decodes == 0
            # positions the store never kept are decoded (one pass) and kept
            more = store.frames(key, positions, lambda p: read_frames(path, p, 10.0))
        assert decodes.summary()["passes"] == 2 and store.decodes == 1
        for p in positions:
            assert np.array_equal(more[p], frames[p]) and more[p].dtype == np.uint8
        for p in positions[:3]:
            assert np.array_equal(got[p], frames[p])
        assert (store.stats()["spilled_bytes"] > 0) == (max_bytes == 0)
        spill = store._spill.path
        store.close()
        assert spill is None or not spill.exists()


def test_a_failed_union_decode_falls_back_to_each_requests_own_positions(tmp_path: Path) -> None:
    from tempcore.video.types import FrameIndexError

    store = FrameStore()
    key = video_key(tmp_path / "v.mp4", None, None, "video", 10.0)
    store.keep(key, [1, 50], None)  # pending (embeddings from the cache): 50 is past the video's end
    calls: list[list[int]] = []

    def decode(positions: list[int]) -> Any:
        calls.append(positions)
        if max(positions) >= 10:
            raise FrameIndexError(tmp_path / "v.mp4", f"frame position(s) {positions} outside")
        from tempcore.video.types import FrameBatch

        return FrameBatch(np.full((len(positions), 2, 2, 3), 7, np.uint8), np.zeros(len(positions)),
                          np.array(positions, np.int64))

    got = store.frames(key, [1, 2], decode)
    assert sorted(got) == [1, 2] and calls == [[1, 2, 50], [1, 2]]
    with pytest.raises(FrameIndexError):  # a request's own bad position fails as without the store
        store.frames(key, [60], decode)


def test_demo_profile_prints_where_the_time_goes_and_changes_no_answer(tmp_path: Path, capsys: Any) -> None:
    from tempcore.cli import main

    def demo(out: str, *flags: str) -> tuple[dict[str, Any], str]:
        assert main(["demo", "--out", str(tmp_path / out), "--questions", "6", "--no-progress", "--json",
                     *flags]) == 0
        captured = capsys.readouterr()
        result = json.loads(captured.out.strip().splitlines()[-1])
        return {k: v for k, v in result.items() if k not in ("report", "subset")}, captured.err

    plain, _ = demo("plain")
    profiled, err = demo("profiled", "--profile")
    assert profiled == plain  # the same recovery, grounding and MBA with the timing on
    # six questions hold no order question: the order step says so instead of failing on an empty run
    assert plain["order"]["order_questions"] == 0 and "no order question" in plain["order"]["skipped"]
    table = err[err.index("where the time goes"):]
    for name in ("decode", "encode", "answer zoo-mean", "answer zoo-text", "diagnostics", "report", "world",
                 "audit run", "grounding", "binary (MBA)", "decoding passes"):
        assert name in table, name


def test_two_runs_in_two_threads_count_their_own_decodes(world: Any, tmp_path: Path) -> None:
    # the counter of a run follows its work into its threads (scoring, answering) and no further:
    # two runs at once in one process each count one pass per video, and a counter around both
    # (its context carried into their threads) counts both
    import threading

    from tempcore.run.ordered import in_context

    videos = _videos(world)
    together = threading.Barrier(2, timeout=120)

    def factory(spec: Any) -> Any:  # each run loads its models after scoring: both are mid-run here
        together.wait()
        return load_model(spec)

    summaries: dict[str, Any] = {}
    errors: list[BaseException] = []

    def one(name: str) -> None:
        try:
            summaries[name] = run(_config(world, tmp_path / name, tmp_path / f"cache-{name}"), progress=False,
                                  log=lambda _m: None, model_factory=factory)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)
            together.abort()

    with count_decodes() as both:
        threads = [threading.Thread(target=in_context(one), args=(name,)) for name in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
    for name in ("a", "b"):
        assert summaries[name].decodes == {"videos": videos, "passes": videos, "max_per_video": 1,
                                           "per_video": 1.0, "by_kind": {"read": videos}}, name
    assert both.summary()["passes"] == 2 * videos and both.summary()["videos"] == videos


def test_a_counter_ended_in_another_thread_counts_nothing_more(world: Any) -> None:
    # a counting block inside a generator that another thread closes: no error, and the counter,
    # still in this thread's context, counts no later pass
    import threading

    def counting() -> Any:
        with count_decodes() as counter:
            yield counter

    path = Path(world.root) / world.samples()[0].video
    blocks = counting()
    counter = next(blocks)
    read_frames(path, [0], 10.0)
    assert counter.summary()["passes"] == 1
    closer = threading.Thread(target=blocks.close)
    closer.start()
    closer.join()
    with count_decodes() as later:
        read_frames(path, [0], 10.0)
    assert counter.summary()["passes"] == 1 and later.summary()["passes"] == 1


def test_each_thread_reads_the_frame_store_its_run_set() -> None:
    # the cause of a flaky failure of the test above: the active store was one per process, so the
    # run that set it last replaced the other's, and closing it left the other decoding again
    import threading

    from tempcore.run.framestore import active_store, use_store
    from tempcore.run.ordered import in_context

    stores = {name: FrameStore() for name in ("a", "b")}
    set_both = threading.Barrier(2, timeout=30)
    seen: dict[str, Any] = {}

    def one(name: str) -> None:
        use_store(stores[name])
        set_both.wait()  # both have set theirs
        inner: list[Any] = []
        t = threading.Thread(target=in_context(lambda: inner.append(active_store())))
        t.start()
        t.join()
        seen[name] = (active_store(), inner[0])
        use_store(None)

    threads = [threading.Thread(target=one, args=(n,)) for n in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name, store in stores.items():
        assert seen[name] == (store, store), name  # its own, in its answering threads too
        store.close()
    assert active_store() is None  # nothing set here
