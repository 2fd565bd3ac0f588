"""Binarising a multiple-choice benchmark: the transform, its balance, the run option, and MBA over it."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import yaml

from tempcore.benchmarks.binary import BinarizeError, binarize
from tempcore.diagnostics.mba import mba_table
from tempcore.models import ModelResponse
from tempcore.records import Sample
from tempcore.run.config import ConfigError, load_config
from tempcore.run.runner import run
from tempcore.run.store import RunStore
from tempcore.tidy.table import predictions_table
from tempcore.video.synthetic import write_video


def mc(i, n=4, answer=2, bench="b", **meta):
    return Sample(bench, f"s{i}", f"v{i}.mp4", "What happens?", tuple(f"opt{k} of {i}" for k in range(n)), answer,
                  start=1.0, end=2.0, metadata={"task": "t", **meta})


def test_one_sample_by_hand():
    out = binarize([mc(0)], seed=0)
    assert [s.sample_id for s in out] == ["s0#b0", "s0#b1", "s0#b2"]
    for i, (s, neg) in enumerate(zip(out, [0, 1, 3])):
        assert set(s.options) == {"opt2 of 0", f"opt{neg} of 0"}
        assert s.answer_text == "opt2 of 0"
        assert s.metadata["binary_group"] == "s0" and s.metadata["binary_index"] == i
        assert s.metadata["binary_negative"] == neg and s.metadata["binary_source_answer"] == 2
        assert s.metadata["binary_source_options"] == 4 and s.metadata["task"] == "t"
        assert s.metadata["binary_correct_position"] == s.answer
        assert (s.video, s.start, s.end, s.question, s.benchmark) == ("v0.mp4", 1.0, 2.0, "What happens?", "b")
    # 3 questions: ceil(3/2) = 2 show the correct option first
    assert sorted(s.answer for s in out) == [0, 0, 1]


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_positions_balanced_per_benchmark_seeded_and_order_free(seed):
    rng = random.Random(seed)
    samples = [mc(i, n=rng.randint(2, 6), answer=0, bench=f"b{i % 2}") for i in range(60)]
    samples = [Sample(s.benchmark, s.sample_id, s.video, s.question, s.options, rng.randrange(len(s.options)))
               for s in samples]
    out = binarize(samples, seed=seed)
    for bench in ("b0", "b1"):
        answers = [s.answer for s in out if s.benchmark == bench]
        assert len(answers) == sum(len(s.options) - 1 for s in samples if s.benchmark == bench)
        assert answers.count(0) == (len(answers) + 1) // 2
    shuffled = samples[:]
    rng.shuffle(shuffled)
    again = {s.sample_id: s.options for s in binarize(shuffled, seed=seed)}
    assert again == {s.sample_id: s.options for s in out}
    other = {s.sample_id: s.answer for s in binarize(samples, seed=seed + 100)}
    assert other != {s.sample_id: s.answer for s in out}


def test_samples_that_cannot_be_binarised():
    grounding = Sample("b", "g", "v.mp4", "When?", answer_interval=(1.0, 2.0))
    with pytest.raises(BinarizeError, match="cannot be binarised"):
        binarize([mc(0), grounding])
    assert binarize([mc(0), grounding], skip_invalid=True)[-1] is grounding
    with pytest.raises(BinarizeError, match="twice"):
        binarize([mc(0), mc(0)])


def test_mba_groups_binarised_samples_by_the_original():
    samples = [mc(i, n=3 + i % 3, answer=i % 3) for i in range(10)]
    binary = binarize(samples, seed=3)
    rng = np.random.default_rng(0)
    import pyarrow as pa

    correct = (rng.random(len(binary)) < 0.8).astype(np.int8)
    n = len(binary)
    t = pa.table({"benchmark": ["b"] * n, "sample_id": [s.sample_id for s in binary], "model": ["m"] * n,
                  "strategy": ["uniform"] * n, "mode": ["none"] * n, "k": [4] * n, "window": pa.nulls(n, pa.int64()),
                  "correct": pa.array(correct)})
    want_groups = {}
    for s, c in zip(binary, correct):
        want_groups.setdefault(s.metadata["binary_group"], []).append(c)
    with_samples = mba_table(t, samples=binary, benchmark="b").overall[0]
    without = mba_table(t).overall[0]  # from the '#b' ids alone
    for r in (with_samples, without):
        assert r["n_groups"] == 10
        assert r["correct_groups"] == sum(all(v) for v in want_groups.values())
        assert r["chance_mba"] == pytest.approx(np.mean([0.5 ** len(v) for v in want_groups.values()]))
    assert with_samples["n_binary"] == n == sum(len(s.options) - 1 for s in samples)


class AlwaysA:
    supports_option_scores = False
    revision = None

    def __init__(self, name):
        self.name = name

    def answer(self, requests, *, method="generate"):
        return [ModelResponse("A") for _ in requests]

    def close(self):
        pass


def test_run_option_binary_true(tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    rows = []
    for i in range(3):
        write_video(videos / f"v{i}.mp4", fps=10, duration=1.0, size=(16, 16),
                    make_frame=lambda n, t: np.full((16, 16, 3), 90, np.uint8))
        rows.append({"id": f"q{i}", "video": f"v{i}.mp4", "question": "Which?", "options": ["w", "x", "y", "z"],
                     "answer": i})
    ann = tmp_path / "bench.jsonl"
    ann.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = {"out": str(tmp_path / "run"), "k": 2, "fps": 10, "seed": 5,
           "benchmarks": [{"name": "generic", "annotations": str(ann), "video_root": str(videos), "binary": True}],
           "models": [{"backend": "hf", "model": "unused", "name": "always-a"}],
           "conditions": [{"strategy": "noframe"}]}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    config = load_config(path)
    assert config.benchmarks[0].binary is True
    run(config, progress=False, log=lambda _m: None, model_factory=lambda spec: AlwaysA(spec.display_name))
    with RunStore.open(tmp_path / "run" / "store.sqlite") as store:
        table = predictions_table(store)
    ids = sorted(table.column("sample_id").to_pylist())
    assert ids == sorted(f"q{i}#b{j}" for i in range(3) for j in range(3))
    assert set(table.column("target").to_pylist()) <= {0, 1}
    from tempcore.benchmarks import load_benchmark

    binary = binarize(load_benchmark("generic", ann).samples, seed=5)
    r = mba_table(table, samples=binary, benchmark="generic", parse="first-char").overall[0]
    first = sum(s.answer == 0 for s in binary)
    assert (r["n_binary"], r["correct_binary"]) == (9, first) == (9, 5)  # "A" is right when the correct is first
    assert r == mba_table(table, benchmark="generic").overall[0]  # extract mode and '#b' groups agree here
    bad = dict(cfg, benchmarks=[{**cfg["benchmarks"][0], "binary": "yes"}])
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(ConfigError, match="binary"):
        load_config(path)
