"""`backend: openai` end to end against a real OpenAI-compatible server: `transformers serve`.

The server (transformers' own, the `serving` extra) is started by the module fixture as a
subprocess on a free loopback port, serving the shipped tiny Idefics3 from its folder on CPU, and
stopped by its process id. What transformers 5.24 supports, measured here: chat completions with
images as base64 data URLs, several images in one message, concurrent requests. It does not
return log-probabilities on /v1/chat/completions (it logs "Ignoring unsupported fields in the
request: {'top_logprobs', 'logprobs'}"; both are in
``UNUSED_CHAT_COMPLETION_FIELDS`` of transformers/cli/serving/chat_completion.py), so ``option_logprobs`` is None and option scoring fails
per item with a clear error; faults stay tested against tests/helpers/http_peer.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
import yaml

import tempcore
from tempcore.cli import main
from tempcore.models import ModelRequest
from tempcore.models.openai_http import OpenAIChatModel
from tempcore.run.config import load_config
from tempcore.run.runner import run
from tempcore.run.store import RunStore
from tempcore.video.synthetic import write_video

HERE = Path(__file__).parent
from helpers.tiny_encoders import build_tiny_siglip  # noqa: E402

ZOO_IDEFICS3 = Path(tempcore.__file__).parent / "world" / "zoo" / "zoo-idefics3"
STARTUP_TIMEOUT_S = 90.0
COLOURS = {"red": (220, 30, 30), "green": (30, 200, 30), "blue": (30, 30, 220), "yellow": (230, 220, 20)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve_command() -> list[str]:
    exe = Path(sys.executable).with_name("transformers")
    if not exe.exists():
        found = shutil.which("transformers")
        if found is None:
            pytest.fail("the `transformers` CLI is not installed (pip install 'transformers[serving]')")
        exe = Path(found)
    return [str(exe)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    port = _free_port()
    log_path = tmp_path_factory.mktemp("serve") / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [*_serve_command(), "serve", str(ZOO_IDEFICS3), "--host", "127.0.0.1", "--port", str(port),
           "--device", "cpu"]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/health", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"transformers serve not ready after {STARTUP_TIMEOUT_S:g} s:\n"
                            f"{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield {"base_url": f"{base}/v1", "log": log_path, "model": str(ZOO_IDEFICS3)}
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)


def _frame(colour: str) -> np.ndarray:
    img = np.full((32, 32, 3), 40, np.uint8)
    img[8:24, 8:24] = COLOURS[colour]
    return img


def _model(server, **kw) -> OpenAIChatModel:
    return OpenAIChatModel(model=server["model"], base_url=server["base_url"], api_key_env=None,
                           max_tokens=4, max_retries=0, timeout_s=60, **kw)


def test_images_as_data_urls_several_per_request_concurrently(server):
    requests = [
        ModelRequest(images=tuple(_frame(c) for c in list(COLOURS)[: 1 + i % 4]),
                     prompt="Which colour? A. red B. green C. blue D. yellow. Answer with a letter.",
                     options=tuple(COLOURS), key=f"r{i}")
        for i in range(8)
    ]
    with _model(server, concurrency=4, image_format="png") as model:
        out = model.answer(requests)
    assert len(out) == 8
    for r in out:
        assert r.error is None and isinstance(r.text, str) and r.attempts == 1
        # transformers serve ignores logprobs / top_logprobs on chat completions.
        assert r.option_logprobs is None
    log = server["log"].read_text()
    assert log.count('"POST /v1/chat/completions HTTP/1.1" 200') >= 8
    assert "Ignoring unsupported fields" in log and "logprobs" in log


def test_option_scoring_fails_per_item_without_logprobs(server):
    req = ModelRequest(images=(_frame("red"),), prompt="A or B?", options=("red", "blue"), key="s")
    with _model(server) as model:
        [r] = model.answer([req], method="option_scores")
    assert r.text is None and "the server returned no log-probabilities" in r.error


def test_tempcore_run_against_the_server_then_rerun_makes_no_calls(server, tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    rows = []
    names = list(COLOURS)
    for i in range(2):
        c = COLOURS[names[i]]
        write_video(videos / f"v{i}.mp4", fps=10, duration=2.0, size=(32, 32),
                    make_frame=lambda n, t, c=c: np.full((32, 32, 3), c, np.uint8))
        rows.append({"id": f"q{i}", "video": f"v{i}.mp4", "question": "What colour?", "options": names,
                     "answer": i})
    ann = tmp_path / "bench.jsonl"
    ann.write_text("".join(json.dumps(r) + "\n" for r in rows))
    enc = build_tiny_siglip(tmp_path / "enc")
    out = tmp_path / "run"
    cfg_path = tmp_path / "run.yaml"
    cfg_path.write_text(yaml.safe_dump({
        "out": str(out), "encoder": str(enc), "cache": str(tmp_path / "cache"), "k": 3, "fps": 10,
        "benchmarks": [{"name": "generic", "annotations": str(ann), "video_root": str(videos),
                        "options": {"benchmark_name": "toy"}}],
        "models": [{"backend": "openai", "model": server["model"], "name": "served-idefics3",
                    "base_url": server["base_url"], "concurrency": 4, "max_new_tokens": 4,
                    "max_retries": 0, "timeout_s": 60}],
        "conditions": [{"strategy": "uniform"}, {"strategy": "noframe"}],
    }))
    assert main(["run", "--config", str(cfg_path), "--no-progress"]) == 0
    with RunStore.open(out / "store.sqlite") as store:
        preds = list(store.predictions())
    assert len(preds) == 2 * 2
    assert all(isinstance(p.response, str) for p in preds)
    assert all(p.frames.grey or len(p.frames.indices) == 3 for p in preds)
    calls = []
    again = run(load_config(cfg_path), progress=False, log=lambda _m: None,
                model_factory=lambda spec: calls.append(spec))
    assert calls == [] and again.models[0].done == 0 and again.models[0].stored_before == 4
