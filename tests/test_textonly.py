"""Issue 14: the ``textonly`` condition — no image at all (not grey frames) — through the strategy
registry, the runner's requests and every backend (HF VLMs, hf-text, OpenAI HTTP, the world zoo)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tempcore.models import ModelRequest, ModelResponse, ModelSpec, load_model
from tempcore.records import Condition, FrameSet
from tempcore.run.config import FRAMELESS, RunConfig
from tempcore.selection import STRATEGIES, SelectionError, needs_scores, select, textonly

OPTIONS = ("the man opens the door", "the dog runs away", "a car stops")
PROMPT = "What happens?\nA. the man opens the door\nB. the dog runs away\nC. a car stops\nAnswer with the letter."


def test_textonly_strategy_yields_no_frames_and_is_registered():
    assert STRATEGIES["textonly"] is textonly and not needs_scores("textonly")
    fs = textonly(np.arange(10) / 10, None, 8, sample_id="s")
    assert fs == FrameSet((), (), requested=0, grey=False) and fs.shortfall == 0
    assert textonly(None, None, 4) == fs  # a missing video: no timestamps at all
    assert select(Condition("textonly", "none", 8), np.empty(0), None, sample_id="s") == fs
    with pytest.raises(SelectionError, match="K must be a positive int"):
        textonly(None, None, 0, sample_id="s")
    with pytest.raises(SelectionError, match="base strategy 'textonly' cannot be shuffled"):
        select(Condition("shuffled", "none", 4, variant="textonly"), np.arange(5.0), None, sample_id="s")
    assert "textonly" in FRAMELESS
    cfg = RunConfig.from_dict({"benchmarks": [{"name": "generic", "annotations": "x"}], "models": ["m"],
                               "conditions": ["textonly"]})
    assert not cfg.needs_encoder and cfg.conditions[0].condition(cfg).mode == "none"


class Recorder:
    supports_option_scores = False
    revision = None

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[ModelRequest] = []

    def answer(self, requests, *, method="generate"):
        self.seen.extend(requests)
        return [ModelResponse("A") for _ in requests]

    def close(self):
        pass


def test_runner_sends_zero_images_for_textonly_and_grey_ones_for_noframe(tmp_path):
    from tempcore.run.runner import run
    from tempcore.video.synthetic import write_video

    videos = tmp_path / "videos"
    videos.mkdir()
    write_video(videos / "v0.mp4", fps=10, duration=2.0, size=(32, 32),
                make_frame=lambda n, t: np.full((32, 32, 3), 200, np.uint8))
    rows = [{"id": "q0", "video": "v0.mp4", "question": "What?", "options": list(OPTIONS), "answer": 0},
            {"id": "q_missing", "video": "gone.mp4", "question": "What?", "options": list(OPTIONS), "answer": 1}]
    ann = tmp_path / "bench.jsonl"
    ann.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = RunConfig.from_dict({
        "out": str(tmp_path / "run"), "k": 4, "noframe_size": 16,
        "benchmarks": [{"name": "generic", "annotations": str(ann), "video_root": str(videos),
                        "options": {"benchmark_name": "toy"}}],
        "models": [{"backend": "hf", "model": "unused", "name": "rec"}],
        "conditions": ["textonly", "noframe", "uniform"],
    })
    recorder = Recorder("rec")
    run(cfg, progress=False, log=lambda _m: None, model_factory=lambda spec: recorder)
    by = {tuple(r.key.split("|")[1:3]): r for r in recorder.seen}  # benchmark|sample|strategy|...
    text = by["q0", "textonly"]
    assert text.images == () and text.timestamps in (None, ())
    assert by["q_missing", "textonly"].images == ()  # a missing video is still asked text-only
    grey = by["q0", "noframe"]
    assert len(grey.images) == 4 and all((im == 128).all() and im.shape == (16, 16, 3) for im in grey.images)
    assert len(by["q0", "uniform"].images) == 4
    assert ("q_missing", "uniform") not in by
    from tempcore.tidy.table import read_predictions

    t = read_predictions(tmp_path / "run" / "predictions.parquet")
    strategies = t.column("strategy").to_pylist()
    requested = t.column("frames_requested").to_pylist()
    assert {(s, r) for s, r in zip(strategies, requested)} >= {("textonly", 0), ("noframe", 4)}


# --- every backend takes a request with zero images -------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tiny_vlm_checkpoints):
    return tiny_vlm_checkpoints  # built once per session (conftest.py)


def _families():
    from helpers import tiny_vlms

    return tiny_vlms.FAMILIES


@pytest.mark.parametrize("family", _families())
def test_hf_vlm_answers_a_request_without_images(tiny, family):
    model = load_model(ModelSpec(backend="hf", model=str(tiny[family]), max_new_tokens=3))
    req = ModelRequest((), PROMPT, OPTIONS, key="t")
    inputs = model.inputs_for([req])
    assert not any("pixel" in k for k in inputs)  # no image reached the processor
    with_image = ModelRequest((np.full((32, 32, 3), 90, np.uint8),), PROMPT, OPTIONS, key="i")
    assert model.inputs_for([with_image])["input_ids"].shape[1] > inputs["input_ids"].shape[1]
    for method in ("generate", "option_scores"):
        [r] = model.answer([req], method=method)
        assert r.ok and r.text is not None, (family, method, r.error)
    mixed = model.answer([req, with_image])
    assert all(r.ok for r in mixed) and mixed[0].text == model.answer([req])[0].text
    model.close()


def test_hf_text_answers_a_request_without_images(tiny):
    model = load_model(ModelSpec(backend="hf-text", model=str(tiny["text"]), max_new_tokens=3))
    req = ModelRequest((), PROMPT, OPTIONS, key="t")
    [r] = model.answer([req])
    [s] = model.answer([req], method="option_scores")
    assert r.ok and s.ok and len(s.option_logprobs) == 3
    model.close()


def test_openai_http_sends_no_image_part(tmp_path):
    from helpers.http_peer import HTTPPeer
    from tempcore.models.openai_http import OpenAIChatModel

    peer = HTTPPeer().start()
    try:
        model = OpenAIChatModel("served", peer.base_url, api_key_env=None, timeout_s=2.0)
        [r] = model.answer([ModelRequest((), PROMPT, OPTIONS, key="t")])
        assert r.ok
        [message] = peer.received[0].body["messages"]
        assert message["content"] == [{"type": "text", "text": PROMPT}]
        model.close()
    finally:
        peer.stop()


def test_world_zoo_members_answer_a_request_without_images():
    from tempcore.world.answerers import MEMBERS

    req = ModelRequest((), "What colour is the square?\nA. red\nB. blue\nC. green", ("red", "blue", "green"),
                       key="t")
    for name in MEMBERS:
        model = load_model({"backend": "zoo", "model": name})
        for method in ("generate", "option_scores"):
            [r] = model.answer([req], method=method)
            assert r.ok and r.text in ("A", "B", "C"), (name, method, r.error, r.text)
        model.close()
