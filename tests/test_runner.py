"""`tempcore run` end to end: tiny real encoder + tiny real VLM over a generic benchmark of synthetic videos."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from tempcore.cli import main
from tempcore.models import ModelResponse
from tempcore.records import Condition
from tempcore.run.config import ConfigError, RunConfig, load_config
from tempcore.run.runner import run
from tempcore.run.store import RunStore
from tempcore.video.synthetic import write_video

HERE = Path(__file__).parent
from helpers.tiny_encoders import build_tiny_siglip  # noqa: E402
from helpers.tiny_vlms import build_tiny_vlm  # noqa: E402

COLOURS = {"red": (220, 30, 30), "green": (30, 200, 30), "blue": (30, 30, 220), "yellow": (230, 220, 20)}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runner")
    videos = root / "videos"
    videos.mkdir()
    rows = []
    names = list(COLOURS)
    for i in range(4):
        colour = names[i % 4]

        def frame(n: int, t: float, c=COLOURS[colour], i=i) -> np.ndarray:
            img = np.full((32, 32, 3), 40 + 10 * i, np.uint8)
            if 1.0 <= t < 2.0:
                img[8:24, 8:24] = c
            return img

        write_video(videos / f"v{i}.mp4", fps=10, duration=3.0, size=(32, 32), make_frame=frame)
        rows.append({"id": f"q{i}", "video": f"v{i}.mp4", "question": "What colour was the square?",
                     "options": names, "answer": i % 4})
    rows.append({"id": "q_missing", "video": "gone.mp4", "question": "What colour?", "options": names, "answer": 0})
    ann = root / "bench.jsonl"
    ann.write_text("".join(json.dumps(r) + "\n" for r in rows))
    enc = build_tiny_siglip(root / "enc")
    vlm = build_tiny_vlm("qwen2_vl", root / "vlm")
    return {"root": root, "videos": videos, "ann": ann, "enc": enc, "vlm": vlm}


def write_config(world: dict[str, Path], out: Path, **extra: object) -> Path:
    cfg = {
        "out": str(out),
        "encoder": str(world["enc"]),
        "cache": str(world["root"] / "cache"),
        "k": 4,
        "fps": 10,
        "benchmarks": [{"name": "generic", "annotations": str(world["ann"]), "video_root": str(world["videos"]),
                        "options": {"benchmark_name": "toy"}}],
        "models": [{"backend": "hf", "model": str(world["vlm"]), "name": "tiny-qwen", "max_new_tokens": 3,
                    "batch_size": 4}],
        "conditions": [{"strategy": "maxprob", "mode": "qa"}, {"strategy": "minprob", "mode": "qa"},
                       {"strategy": "uniform"}, {"strategy": "noframe"},
                       {"strategy": "oracle", "params": {"stride": 10, "max_windows": 3}}],
        **extra,
    }
    path = out.parent / f"{out.name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def count_rows(store_path: Path) -> int:
    import sqlite3

    if not store_path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{store_path}?mode=ro", uri=True, timeout=1) as con:
            return con.execute("SELECT COUNT(*) FROM predictions").fetchone()[0]
    except sqlite3.OperationalError:
        return 0  # not created yet


def rows_of(store_path: Path) -> dict[tuple, tuple]:
    with RunStore.open(store_path) as store:
        return {p.key: (p.response, p.answer, p.correct, p.frames, p.option_probs) for p in store.predictions()}


def test_run_end_to_end_then_resume(world, tmp_path, capsys):
    cfg_path = write_config(world, tmp_path / "run")
    assert main(["run", "--config", str(cfg_path), "--dry-run", "--no-progress"]) == 0
    plan = capsys.readouterr().out
    assert "missing video" in plan and "model tiny-qwen:" in plan and "calls" in plan
    assert not (tmp_path / "run" / "store.sqlite").exists() or not rows_of(tmp_path / "run" / "store.sqlite")

    assert main(["run", "--config", str(cfg_path), "--no-progress", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    m = summary["models"][0]
    rows = rows_of(tmp_path / "run" / "store.sqlite")
    # 4 videos x (maxprob, minprob, uniform, noframe, 3 oracle windows) + the missing video's noframe.
    assert len(rows) == 4 * 7 + 1 == m["done"] + 0
    assert m["failed"] == 0 and summary["benchmarks"]["toy"]["missing_videos"] == 1
    conds = {Condition.from_key(k[3]) for k in rows}
    assert {c.strategy for c in conds} == {"maxprob", "minprob", "uniform", "noframe", "oracle"}
    assert {c.window for c in conds if c.strategy == "oracle"} == {0, 1, 2}
    for key, (_resp, answer, correct, frames, probs) in rows.items():
        cond = Condition.from_key(key[3])
        if cond.strategy == "noframe":
            assert frames.grey and frames.requested == 4 and not frames.indices
        else:
            assert len(frames.indices) == 4 and list(frames.timestamps) == sorted(frames.timestamps)
        assert correct in (0, 1) and (answer is None or 0 <= answer < 4)
        assert probs is None or abs(sum(probs) - 1) < 1e-6
    assert (tmp_path / "run" / "predictions.parquet").exists()

    # Resume: nothing to do, no model is even loaded, the rows are unchanged.
    calls = []
    cfg = load_config(cfg_path)
    again = run(cfg, progress=False, log=lambda _m: None, model_factory=lambda spec: calls.append(spec))
    assert calls == [] and again.models[0].stored_before == len(rows) and again.models[0].done == 0
    assert rows_of(tmp_path / "run" / "store.sqlite") == rows


class FlakyModel:
    """A deterministic answerer at the machine's edge: fails some items, answers others."""

    supports_option_scores = False
    revision = None

    def __init__(self, name: str, fail_every: int = 3) -> None:
        self.name = name
        self.fail_every = fail_every
        self.seen = 0

    def answer(self, requests, *, method="generate"):
        out = []
        for r in requests:
            self.seen += 1
            if self.seen % self.fail_every == 0:
                out.append(ModelResponse.failure("HTTP 503: overloaded"))
            elif "gibberish" in r.key or self.seen % 5 == 0:
                out.append(ModelResponse("I cannot tell from these frames."))
            else:
                out.append(ModelResponse(f"The answer is ({'ABCD'[len(r.images) % len(r.options)]})."))
        return out

    def close(self):
        pass


def test_failures_are_not_predictions_and_are_retried(world, tmp_path):
    cfg = load_config(write_config(world, tmp_path / "flaky", conditions=[{"strategy": "uniform"},
                                                                         {"strategy": "noframe"}]))
    s1 = run(cfg, progress=False, log=lambda _m: None, model_factory=lambda spec: FlakyModel(spec.display_name))
    m = s1.models[0]
    assert m.failed > 0 and m.parse_failures > 0 and m.done + m.failed == m.planned
    with RunStore.open(tmp_path / "flaky" / "store.sqlite") as store:
        assert len(store.failures()) == m.failed
        preds = list(store.predictions())
        assert all(p.parse_error for p in preds if p.answer is None)
        assert not any(p.correct for p in preds if p.answer is None)
    # A rerun asks only for the failed keys; with a model that never fails, all end answered.
    s2 = run(cfg, progress=False, log=lambda _m: None,
             model_factory=lambda spec: FlakyModel(spec.display_name, fail_every=10**9))
    assert s2.models[0].done == m.failed and s2.models[0].stored_before == m.done
    with RunStore.open(tmp_path / "flaky" / "store.sqlite") as store:
        assert len(list(store.predictions())) == m.planned and store.failures() == []


def test_shards_partition_the_run(world, tmp_path):
    cfg = load_config(write_config(world, tmp_path / "shard", conditions=[{"strategy": "noframe"}]))
    keys = []
    for i in range(3):
        s = run(cfg, shard=(i, 3), progress=False, log=lambda _m: None,
                model_factory=lambda spec: FlakyModel(spec.display_name, 10**9))
        keys.append(s.models[0].done)
    with RunStore.open(tmp_path / "shard" / "store.sqlite") as store:
        stored = [p.sample_id for p in store.predictions()]
    assert sum(keys) == len(stored) == len(set(stored)) == 5  # every sample once, across the shards
    with pytest.raises(Exception, match="shard"):
        run(cfg, shard=(3, 3), progress=False, log=lambda _m: None)


def test_rotations_map_answers_back(world, tmp_path):
    cfg = load_config(write_config(world, tmp_path / "rot", conditions=[{"strategy": "noframe", "rotations": "all"}]))
    run(cfg, progress=False, log=lambda _m: None, model_factory=lambda spec: FlakyModel(spec.display_name, 10**9))
    with RunStore.open(tmp_path / "rot" / "store.sqlite") as store:
        preds = [p for p in store.predictions() if p.answer is not None]
    # FlakyModel answers the letter at position len(images) % 4 == 0 (4 grey images): "A", i.e. the
    # option shown first, which under rotation r is original option r.
    assert {Condition.from_key(p.condition).rotation for p in preds} == {0, 1, 2, 3}
    for p in preds:
        assert p.answer == Condition.from_key(p.condition).rotation


def test_manifest_never_holds_url_credentials(world, tmp_path):
    cfg = load_config(write_config(world, tmp_path / "cred", conditions=[{"strategy": "noframe"}], models=[
        {"backend": "openai", "model": "m", "name": "served", "base_url": "http://bob:s3cret@127.0.0.1:9/v1"}]))
    run(cfg, progress=False, log=lambda _m: None, model_factory=lambda spec: FlakyModel(spec.display_name, 10**9))
    raw = (tmp_path / "cred" / "store.sqlite").read_bytes()
    assert b"s3cret" not in raw and b"bob" not in raw
    with RunStore.open(tmp_path / "cred" / "store.sqlite") as store:
        [(run_id, _)] = store.runs()
        assert store.manifest(run_id)["models"][0]["base_url"] == "http://<redacted>@127.0.0.1:9/v1"


def test_config_errors_are_clear(tmp_path):
    with pytest.raises(ConfigError, match="unknown key"):
        RunConfig.from_dict({"benchmarks": [{"name": "x", "annotations": "y"}], "models": ["m"],
                             "conditions": ["uniform"], "bogus": 1})
    with pytest.raises(ConfigError, match="needs mode q or qa"):
        RunConfig.from_dict({"benchmarks": [{"name": "x", "annotations": "y"}], "models": ["m"],
                             "conditions": [{"strategy": "maxprob", "mode": "none"}]})
    with pytest.raises(ConfigError, match="no such configuration"):
        load_config(tmp_path / "nope.yaml")


@pytest.mark.timeout(300)
def test_sigkill_during_run_then_resume_matches_uninterrupted(world, tmp_path):
    """Kill `tempcore run` at random moments; resuming gives exactly the rows of a clean run."""
    conds = [{"strategy": "uniform"}, {"strategy": "noframe"}, {"strategy": "random"}]
    clean = write_config(world, tmp_path / "clean", conditions=conds, request_batch=2)
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "tempcore", "run", "--no-progress", "--config"]
    subprocess.run([*cmd, str(clean)], check=True, env=env, capture_output=True, timeout=240)
    expected = rows_of(tmp_path / "clean" / "store.sqlite")
    assert len(expected) == 4 * 3 + 1

    killed = write_config(world, tmp_path / "killed", conditions=conds, request_batch=2)
    store_path = tmp_path / "killed" / "store.sqlite"
    rng = random.Random(7)
    mid_run_kills = 0
    # kill once the store holds at least `target` rows, at a random moment within a few ms of that
    # (the whole answering takes a fraction of a second on a fast host: a kill at a random time
    # after the first commit often came after the last)
    for target in sorted(rng.sample(range(1, len(expected) - 2), 3)):
        if count_rows(store_path) >= target:
            continue
        proc = subprocess.Popen([*cmd, str(killed)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 200
        while proc.poll() is None and count_rows(store_path) < target and time.time() < deadline:
            time.sleep(0.002)
        time.sleep(rng.uniform(0.0, 0.01))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        with RunStore.open(store_path) as store:
            assert store.integrity_check() == "ok"
            partial = {p.key: (p.response, p.answer, p.correct, p.frames, p.option_probs) for p in store.predictions()}
        assert set(partial) <= set(expected)
        assert all(expected[k] == v for k, v in partial.items())  # every stored row is complete and right
        mid_run_kills += 0 < len(partial) < len(expected)
    assert mid_run_kills >= 1, "no kill landed in the middle of the run"
    subprocess.run([*cmd, str(killed)], check=True, env=env, capture_output=True, timeout=240)
    got = rows_of(tmp_path / "killed" / "store.sqlite")
    assert got.keys() == expected.keys()
    assert got == expected


class _OtherWeights:
    """The same encoder under another fingerprint: what replacing a local folder's weights looks like."""

    def __init__(self, encoder: object) -> None:
        self._encoder = encoder
        self.fingerprint = "f" * 64

    def __getattr__(self, name: str) -> object:
        return getattr(self._encoder, name)


class _LetterA:
    def __init__(self, spec: object) -> None:
        self.name = spec.display_name  # type: ignore[attr-defined]
        self.revision = None
        self.supports_option_scores = False

    def answer(self, requests, *, method="generate"):  # noqa: ANN001
        return [ModelResponse("A") for _ in requests]

    def close(self) -> None:
        pass


def test_a_changed_encoder_is_not_reused_for_score_based_conditions(world, tmp_path):
    from tempcore.encoders import load_encoder
    from tempcore.run.runner import RunError

    cfg = load_config(write_config(world, tmp_path / "run",
                                   conditions=[{"strategy": "maxprob", "mode": "qa"}, {"strategy": "uniform"}]))
    enc = load_encoder(str(world["enc"]), device="cpu")
    quiet = {"progress": False, "log": lambda _m: None, "model_factory": _LetterA}
    first = run(cfg, encoder=enc, **quiet)
    assert first.models[0].done == 8  # 4 videos x (maxprob, uniform)
    with RunStore.open(tmp_path / "run") as s:
        by_strategy = {Condition.from_key(p.condition).strategy: p.encoder_fingerprint for p in s.predictions()}
    assert by_strategy == {"maxprob": enc.fingerprint, "uniform": None}
    # the condition key names the encoder (encoder=<path>), but not its weights: the fingerprint does
    with pytest.raises(RunError, match=r"the encoder changed \(fingerprint\) for 4 stored predictions"):
        run(cfg, encoder=_OtherWeights(enc), **quiet)
    again = run(cfg, encoder=_OtherWeights(enc), recompute=True, **quiet)
    assert again.models[0].replaced == 4 and again.models[0].stored_before == 4


def test_the_planner_is_pure_samples_and_timelines_to_work_items(tmp_path):
    """plan_items reads only what it is given: no video (these do not exist), encoder or store."""
    from tempcore.records import Sample
    from tempcore.run.planning import Timeline, plan_items

    cfg = RunConfig.from_dict({
        "out": str(tmp_path / "never"), "k": 2, "fps": 2, "encoder": "some-encoder",
        "benchmarks": [{"name": "x", "annotations": "y"}], "models": ["m"],
        "conditions": [{"strategy": "maxprob", "mode": "qa"}, {"strategy": "noframe", "rotations": "all"},
                       {"strategy": "oracle", "params": {"stride": 2, "max_windows": 2}}],
    })
    samples = [Sample("toy", f"s{i}", f"/nowhere/v{i}.mp4", "Which?", ("a", "b", "c"), i % 3) for i in range(3)]
    ts = np.arange(8) / 2.0
    timelines = {"s0": Timeline(ts, {"qa": np.linspace(0, 1, 8)}),
                 "s1": Timeline(ts, {"qa": np.linspace(1, 0, 8)}, damage="truncated")}
    items = plan_items(cfg, samples, timelines, {s.sample_id: f"h{s.sample_id}" for s in samples})
    by_sample: dict[str, list] = {}
    for it in items:
        by_sample.setdefault(it.sample.sample_id, []).append(it)
    # framed samples: maxprob + 3 rotations of noframe + 2 oracle windows; s2 (no timeline): noframe only
    assert [len(by_sample[s]) for s in ("s0", "s1", "s2")] == [6, 6, 3]
    assert {it.condition.strategy for it in by_sample["s2"]} == {"noframe"}
    s0_max = next(it for it in by_sample["s0"] if it.condition.strategy == "maxprob")
    s1_max = next(it for it in by_sample["s1"] if it.condition.strategy == "maxprob")
    # the scores decide: rising scores pick late frames, the mirrored scores the mirrored frames
    assert min(s0_max.frames.indices) >= 4 and sorted(7 - i for i in s0_max.frames.indices) == list(
        s1_max.frames.indices)
    assert s1_max.damage == "truncated" and s0_max.n_frames == 8 and by_sample["s2"][0].n_frames is None
    assert {it.condition.window for it in by_sample["s0"] if it.condition.strategy == "oracle"} == {0, 1}
    for it in by_sample["s0"]:
        assert [it.sample.options[j] for j in it.permutation] == list(it.options)
        assert it.sample_hash == "hs0"
    assert plan_items(cfg, samples, timelines, {s.sample_id: "h" for s in samples}) == plan_items(
        cfg, samples, timelines, {s.sample_id: "h" for s in samples})


def test_an_executor_gets_only_the_unstored_items_and_the_driver_writes_the_store(world, tmp_path):
    from tempcore.run.local import LocalExecutor

    class Recording(LocalExecutor):
        def __init__(self) -> None:
            super().__init__()
            self.jobs: list = []
            self.closed = 0

        def answer(self, jobs, store, run_id, **kw):
            self.jobs.append([(j.spec.display_name, len(j.items)) for j in jobs])
            super().answer(jobs, store, run_id, **kw)

        def close(self) -> None:
            self.closed += 1

    cfg = load_config(write_config(world, tmp_path / "exec", conditions=[{"strategy": "noframe"}]))
    ex = Recording()
    first = run(cfg, progress=False, log=lambda _m: None, executor=ex, shard=(0, 2),
                model_factory=lambda spec: FlakyModel(spec.display_name, 10**9))
    second = run(cfg, progress=False, log=lambda _m: None, executor=ex,
                 model_factory=lambda spec: FlakyModel(spec.display_name, 10**9))
    third = run(cfg, progress=False, log=lambda _m: None, executor=ex,
                model_factory=lambda spec: FlakyModel(spec.display_name, 10**9))
    n0 = first.models[0].done
    assert ex.jobs == [[("tiny-qwen", n0)], [("tiny-qwen", 5 - n0)]]  # the third run had nothing to answer
    assert third.models[0].stored_before == 5 and second.models[0].done == 5 - n0 and ex.closed == 3
    assert len(rows_of(tmp_path / "exec" / "store.sqlite")) == 5
