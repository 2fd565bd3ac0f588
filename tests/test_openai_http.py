"""OpenAIChatModel against a real local OpenAI-compatible server (tests/helpers/http_peer.py).

The client under test is real (httpx over a real socket); the peer is the test double at the
machine's edge. Faults are injected per prompt, so schedules are deterministic whatever the
arrival order.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import json
import logging
import math
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from helpers.http_peer import (
    DROP,
    RESET,
    ByPrompt,
    HTTPPeer,
    MeanColourModel,
    decode_data_url,
    status,
    timeout,
)
from tempcore.models.base import (
    METHOD_OPTION_SCORES,
    ModelConfigError,
    ModelRequest,
    ModelResponse,
    ModelSpec,
    UnsupportedMethodError,
)
from tempcore.models.openai_http import (
    OpenAIChatModel,
    backoff_delay,
    mask_url,
    option_logprobs_from_top,
    parse_completion,
    parse_retry_after,
)
from tempcore.models.registry import resolve_factory

FAST = dict(api_key_env=None, timeout_s=2.0, backoff_base_s=0.01, backoff_max_s=0.05, image_format="png")


@pytest.fixture
def serve() -> Iterator[Callable[..., HTTPPeer]]:
    """Start peers on demand; stop them all at the end."""
    peers: list[HTTPPeer] = []

    def start(**kwargs: object) -> HTTPPeer:
        peer = HTTPPeer(**kwargs).start()  # type: ignore[arg-type]
        peers.append(peer)
        return peer

    yield start
    for peer in peers:
        peer.stop()


@pytest.fixture
def client() -> Iterator[Callable[..., OpenAIChatModel]]:
    """Build clients with fast test defaults; close them all at the end."""
    models: list[OpenAIChatModel] = []

    def build(peer: HTTPPeer, **kwargs: object) -> OpenAIChatModel:
        model = OpenAIChatModel("served-model", peer.base_url, **{**FAST, **kwargs})  # type: ignore[arg-type]
        models.append(model)
        return model

    yield build
    for model in models:
        model.close()


def uniform_requests(n: int, prefix: str = "q", images: int = 2, options: int = 4) -> list[ModelRequest]:
    """Request i shows ``images`` flat-coloured frames whose colours identify (i, position)."""
    return [
        ModelRequest(
            images=tuple(
                np.full((8 + i % 3, 10, 3), (i * 7 + j * 40) % 256, np.uint8) for j in range(images)
            ),
            prompt=f"{prefix} {i}",
            options=tuple(f"option {k}" for k in range(options)),
            key=f"{prefix}-{i}",
        )
        for i in range(n)
    ]


def expected_texts(requests: list[ModelRequest]) -> list[str]:
    return [r.text or "" for r in MeanColourModel().answer(requests)]


# --- the request body -------------------------------------------------------------------------


def test_body_holds_images_as_data_urls_in_order_then_the_prompt(serve, client) -> None:
    rng = np.random.default_rng(0)
    images = tuple(rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in [(12, 20), (9, 9), (30, 7)])
    request = ModelRequest(
        images=images, prompt="Which frame is red?\nA. one\nB. two", options=("one", "two")
    )
    peer = serve()
    model = client(peer, max_tokens=7, temperature=0.0, extra_body={"seed": 3})
    [response] = model.answer([request])
    assert response.ok
    body = peer.received[0].body
    assert body["model"] == "served-model"
    assert body["max_tokens"] == 7 and body["temperature"] == 0.0 and body["seed"] == 3
    assert body["logprobs"] is True and body["top_logprobs"] == 20
    [message] = body["messages"]
    assert message["role"] == "user"
    parts = message["content"]
    assert [p["type"] for p in parts] == ["image_url"] * 3 + ["text"]
    assert parts[-1]["text"] == request.prompt
    urls = [p["image_url"]["url"] for p in parts[:-1]]
    assert all(u.startswith("data:image/png;base64,") for u in urls)
    for url, image in zip(urls, images, strict=True):
        np.testing.assert_array_equal(decode_data_url(url), image)  # PNG: lossless, same order


def test_jpeg_data_urls_system_prompt_and_no_logprobs_without_options(serve, client) -> None:
    ramp = np.linspace(0, 255, 32, dtype=np.uint8)
    images = (np.stack([np.tile(ramp, (24, 1))] * 3, axis=-1), np.full((16, 16, 3), 200, np.uint8))
    peer = serve()
    model = client(peer, image_format="jpeg", jpeg_quality=95, system_prompt="Be brief.")
    [response] = model.answer([ModelRequest(images=images, prompt="Describe.")])
    assert response.ok
    body = peer.received[0].body
    assert "logprobs" not in body  # no options: nothing to score
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    urls = [p["image_url"]["url"] for p in body["messages"][1]["content"][:-1]]
    assert all(u.startswith("data:image/jpeg;base64,") for u in urls)
    decoded = [decode_data_url(u) for u in urls]
    for got, sent in zip(decoded, images, strict=True):
        assert got.shape == sent.shape
        assert np.abs(got.astype(int) - sent.astype(int)).mean() < 2.0


def test_max_image_side_downscales_and_max_frames_fails_only_that_item(serve, client) -> None:
    peer = serve()
    model = client(peer, max_image_side=16, max_frames=2)
    big = ModelRequest(images=(np.zeros((20, 40, 3), np.uint8),), prompt="big")
    too_many = ModelRequest(images=tuple(np.zeros((4, 4, 3), np.uint8) for _ in range(3)), prompt="many")
    out = model.answer([big, too_many])
    assert out[0].ok and peer.received[0].images[0].shape == (8, 16, 3)
    assert out[1].text is None and "max_frames=2" in (out[1].error or "") and out[1].attempts == 0
    assert [r.prompt for r in peer.received] == ["big"]


# --- order, concurrency, threads --------------------------------------------------------------


def test_responses_come_back_in_request_order_when_answers_finish_out_of_order(serve, client) -> None:
    requests = uniform_requests(24)
    peer = serve(latency_s=lambda r: 0.003 * (24 - int(r.prompt.split()[1])))  # first asked, last done
    out = client(peer, concurrency=8).answer(requests)
    assert [r.text for r in out] == expected_texts(requests)
    finished_first = sorted(range(24), key=lambda i: out[i].latency_s)
    assert finished_first != list(range(24))  # the peer really answered out of order


@pytest.mark.parametrize("concurrency", [5, 12])
def test_concurrency_limit_is_reached_and_never_exceeded(serve, client, concurrency: int) -> None:
    requests = uniform_requests(4 * concurrency, images=1)
    peer = serve(latency_s=0.2)
    out = client(peer, concurrency=concurrency).answer(requests)
    assert all(r.ok for r in out)
    assert peer.stats.max_in_flight == concurrency


def test_threads_share_one_limit_and_answer_works_inside_a_running_loop(serve, client) -> None:
    peer = serve(latency_s=0.1)
    model = client(peer, concurrency=4)
    batches = [uniform_requests(8, prefix=f"t{k}") for k in range(3)]
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(model.answer, batches))
    for batch, out in zip(batches, results, strict=True):
        assert [r.text for r in out] == expected_texts(batch)
    assert peer.stats.max_in_flight == 4

    async def from_a_coroutine() -> list[ModelResponse]:
        return model.answer(batches[0])

    out = asyncio.run(from_a_coroutine())
    assert [r.text for r in out] == expected_texts(batches[0])


def test_submitted_requests_share_the_slots_and_a_burst_wakes_the_loop_once(serve, client, monkeypatch) -> None:
    requests = uniform_requests(24)
    peer = serve(latency_s=0.1)
    model = client(peer, concurrency=8)
    wakes: list[object] = []
    loop = model._ensure_loop().loop
    real = loop.call_soon_threadsafe

    def counted(callback, *args, **kwargs):  # type: ignore[no-untyped-def]
        if getattr(callback, "__name__", "") == "_start_submitted":
            wakes.append(callback)
        return real(callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_soon_threadsafe", counted)
    gate = threading.Event()  # the loop is held busy while the burst is submitted
    real(gate.wait, 5)
    futures = [model.submit(r) for r in requests]
    gate.set()
    out = [f.result(10) for f in futures]
    assert [r.text for r in out] == expected_texts(requests)
    assert len(wakes) == 1  # 24 submissions, one wake-up of the loop
    assert peer.stats.max_in_flight == 8 and peer.stats.requests == 24
    # every shard reuses one TLS context (the CA bundle loaded once, not once per shard)
    many = client(peer, concurrency=24)
    assert many.answer(uniform_requests(1, prefix="tls"))[0].ok
    contexts = {id(c._transport._pool._ssl_context) for c in many._clients or []}
    assert len(many._clients or []) == 3 and len(contexts) == 1


def test_a_cancelled_submission_is_never_sent_and_frees_its_slot(serve, client) -> None:
    peer = serve(latency_s=0.3)
    model = client(peer, concurrency=1)
    first, second, third = (model.submit(r) for r in uniform_requests(3))
    assert second.cancel()  # waiting for the one slot: cancelled before it is sent
    assert first.result(10).ok and third.result(10).ok
    assert second.cancelled() and peer.stats.requests == 2
    # cancelling one in flight frees the slot for the next: it reaches the server while the cancelled
    # one is still pending there (an order: without the freed slot it is sent after that answer)
    peer = serve(latency_s=1.5)
    model = client(peer, concurrency=1)
    slow, after = model.submit(uniform_requests(1, prefix="slow")[0]), model.submit(uniform_requests(1, prefix="n")[0])
    deadline = time.monotonic() + 30
    while not peer.requests_for("slow 0") and time.monotonic() < deadline:
        time.sleep(0.002)  # the slow one is at the server, holding the one slot
    assert slow.cancel()
    assert after.result(10).ok
    [sent_slow], [sent_after] = peer.requests_for("slow 0"), peer.requests_for("n 0")
    assert sent_after.received_at < sent_slow.received_at + 1.5


def test_close_cancels_what_was_submitted_and_not_answered(serve, client) -> None:
    peer = serve(latency_s=0.5)
    model = client(peer, concurrency=1)
    futures = [model.submit(r) for r in uniform_requests(3)]
    time.sleep(0.1)
    model.close()
    for f in futures:  # none hangs: each is cancelled (or answered, had it finished)
        assert f.cancelled() or f.result(1) is not None
    assert any(f.cancelled() for f in futures)
    assert model.submit(uniform_requests(1, prefix="again")[0]).result(10).ok  # the model starts again


# --- retries ----------------------------------------------------------------------------------


def test_every_item_ends_answered_under_injected_faults(serve, client) -> None:
    requests = uniform_requests(12)
    schedule = {
        "q 0": [status(429, retry_after="0")],
        "q 1": [status(500), status(503)],
        "q 2": [timeout(3.0)],
        "q 3": [DROP],
        "q 4": [RESET, status(502)],
        "q 5": [status(429, retry_after="0"), timeout(3.0), DROP, RESET, status(500)],
        "q 7": [status(504), DROP],
    }
    peer = serve(faults=ByPrompt(schedule))
    out = client(peer, concurrency=4, timeout_s=1.0, max_retries=6).answer(requests)
    assert [r.error for r in out] == [None] * 12
    assert [r.text for r in out] == expected_texts(requests)
    for i, response in enumerate(out):
        faults = schedule.get(f"q {i}", [])
        assert response.attempts == len(faults) + 1, i
        assert len(peer.requests_for(f"q {i}")) == len(faults) + 1, i
    assert peer.stats.requests == sum(r.attempts for r in out)
    assert peer.stats.faults == {
        "429": 2,
        "500": 2,
        "503": 1,
        "502": 1,
        "504": 1,
        "timeout": 2,
        "drop": 3,
        "reset": 2,
    }


def test_a_permanently_failing_item_is_an_error_never_an_answer(serve, client) -> None:
    requests = uniform_requests(6)
    peer = serve(faults=ByPrompt(always={"q 2": status(500, message="boom"), "q 4": DROP}))
    out = client(peer, max_retries=2).answer(requests)
    for i in (2, 4):
        assert out[i].text is None and not out[i].ok and out[i].option_logprobs is None
        assert out[i].attempts == 3 and len(peer.requests_for(f"q {i}")) == 3
    assert "HTTP 500" in (out[2].error or "") and "boom" in (out[2].error or "")
    assert "connection failed" in (out[4].error or "")
    good = [0, 1, 3, 5]
    assert [out[i].text for i in good] == [expected_texts(requests)[i] for i in good]


@pytest.mark.parametrize("code", [400, 401, 403, 404, 422])
def test_other_4xx_are_not_retried(serve, client, code: int) -> None:
    requests = uniform_requests(3)
    peer = serve(faults=ByPrompt(always={"q 1": status(code, message="you sent nonsense")}))
    out = client(peer, max_retries=5).answer(requests)
    assert out[1].text is None and out[1].attempts == 1
    assert f"HTTP {code}" in (out[1].error or "") and "you sent nonsense" in (out[1].error or "")
    assert len(peer.requests_for("q 1")) == 1
    assert out[0].ok and out[2].ok


@pytest.mark.parametrize(
    ("headers", "low", "high"),
    [
        ({"retry_after": "1"}, 1.0, 3.0),
        ({"retry-after-ms": "400"}, 0.4, 2.0),
        ({"retry_after": "3600"}, 0.25, 2.0),  # capped at backoff_max_s=0.25
    ],
)
def test_retry_after_is_honoured_and_capped(
    serve, client, headers: dict[str, str], low: float, high: float
) -> None:
    retry_after = headers.pop("retry_after", None)
    fault = status(429, retry_after=retry_after, **headers)
    peer = serve(faults=ByPrompt({"q 0": [fault]}))
    [response] = client(
        peer, backoff_base_s=0.001, backoff_max_s=0.25 if retry_after == "3600" else 5.0
    ).answer(uniform_requests(1))
    assert response.ok and response.attempts == 2
    first, second = peer.requests_for("q 0")
    assert low - 0.01 <= second.received_at - first.received_at < high


def test_backoff_is_exponential_with_full_jitter() -> None:
    rng = random.Random(0)
    for attempt in range(1, 8):
        ceiling = min(4.0, 0.5 * 2 ** (attempt - 1))
        delays = [backoff_delay(attempt, 0.5, 4.0, rng) for _ in range(3000)]
        assert 0.0 <= min(delays) < 0.05 * ceiling and 0.95 * ceiling < max(delays) <= ceiling
        assert abs(sum(delays) / len(delays) - ceiling / 2) < 0.05 * ceiling


def test_parse_retry_after() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"Retry-After": "7", "retry-after-ms": "250"}) == 0.25
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now) == pytest.approx(30.0)
    assert parse_retry_after({"Retry-After": email.utils.formatdate(now - 30, usegmt=True)}, now=now) == 0.0
    assert parse_retry_after({"Retry-After": "-3"}) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({"Retry-After": "nan"}) is None
    assert parse_retry_after({}) is None


# --- secrets ----------------------------------------------------------------------------------


def test_api_key_is_sent_read_at_call_time_and_never_leaks(serve, client, monkeypatch, caplog) -> None:
    canary = f"sk-canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("TEMPCORE_TEST_KEY", canary)
    caplog.set_level(logging.DEBUG)
    faults = ByPrompt(
        {"q 0": [status(429, retry_after="0", message=f"slow down {canary}"), status(500, message=canary)]},
        always={"q 1": status(401, message=f"Incorrect API key provided: {canary}")},
    )
    peer = serve(faults=faults)
    model = client(peer, api_key_env="TEMPCORE_TEST_KEY")
    out = model.answer(uniform_requests(3))
    assert out[0].ok and out[0].attempts == 3 and out[2].ok
    assert out[1].text is None and "Incorrect API key provided: <redacted>" in (out[1].error or "")
    assert {r.headers.get("authorization") for r in peer.received} == {f"Bearer {canary}"}

    rotated = f"sk-rotated-{uuid.uuid4().hex}"
    monkeypatch.setenv("TEMPCORE_TEST_KEY", rotated)
    model.answer(uniform_requests(1, prefix="again"))
    assert peer.requests_for("again 0")[0].headers["authorization"] == f"Bearer {rotated}"
    model.close()

    visible = [repr(model), str(model), json.dumps(model.describe()), repr(vars(model)), caplog.text]
    visible += [r.error or "" for r in out] + [repr(r) for r in out]
    assert not [v for v in visible if canary in v or rotated in v]
    assert any(rec.name == "tempcore.models.openai_http" for rec in caplog.records)  # logs were written
    assert model.describe()["api_key_env"] == "TEMPCORE_TEST_KEY"


def test_unset_key_variable_sends_no_authorization(serve, client, monkeypatch) -> None:
    monkeypatch.delenv("TEMPCORE_UNSET_KEY", raising=False)
    peer = serve()
    [response] = client(peer, api_key_env="TEMPCORE_UNSET_KEY").answer(uniform_requests(1))
    assert response.ok and "authorization" not in peer.received[0].headers


def test_describe_and_repr_mask_url_credentials() -> None:
    model = OpenAIChatModel("m", "https://alice:s3cret@api.example.com/v1/", api_key_env="MY_KEY")
    try:
        described = model.describe()
        assert described["base_url"] == "https://<redacted>@api.example.com/v1"
        assert "s3cret" not in repr(model) and "s3cret" not in json.dumps(described)
        assert (
            described["model"] == "m" and described["concurrency"] == 16 and described["backend"] == "openai"
        )
    finally:
        model.close()
    assert mask_url("http://localhost:8000/v1") == "http://localhost:8000/v1"


# --- log-probabilities and option scoring -----------------------------------------------------

TOP = [(" B", -0.2), ("B", -2.0), ("(A", -1.9), ("The", -3.0), ("b", -0.5), ("Because", -0.1)]


def test_option_logprobs_from_the_first_token_top_list(serve, client) -> None:
    peer = serve(logprobs=lambda request, response: TOP)
    model = client(peer)
    assert model.supports_option_scores
    [generated] = model.answer(uniform_requests(1, options=4))
    expected = (-1.9, math.log(math.exp(-0.2) + math.exp(-2.0)), -math.inf, -math.inf)
    assert generated.option_logprobs == pytest.approx(expected)
    assert generated.option_probs is not None and generated.option_probs[2] == 0.0

    [scored] = model.answer(uniform_requests(1, prefix="s", options=4), method=METHOD_OPTION_SCORES)
    assert scored.text == "B" and scored.option_logprobs == pytest.approx(expected)
    body = peer.requests_for("s 0")[0].body
    assert body["max_tokens"] == 1 and body["logprobs"] is True


def test_no_letter_in_top_k_gives_none_for_generate_and_an_error_for_option_scores(serve, client) -> None:
    peer = serve(logprobs=lambda request, response: [("The", -0.1), ("Answer", -2.0)])
    model = client(peer)
    [generated] = model.answer(uniform_requests(1))
    assert generated.ok and generated.option_logprobs is None
    [scored] = model.answer(uniform_requests(1), method=METHOD_OPTION_SCORES)
    assert scored.text is None and "no option letter" in (scored.error or "") and scored.attempts == 1


def test_option_scores_unsupported_without_logprobs(serve, client) -> None:
    peer = serve()
    model = client(peer, request_logprobs=False)
    assert not model.supports_option_scores
    with pytest.raises(UnsupportedMethodError):
        model.answer(uniform_requests(2), method=METHOD_OPTION_SCORES)
    with pytest.raises(ModelConfigError):
        model.answer(uniform_requests(2), method="beam")
    assert peer.stats.requests == 0
    [response] = model.answer(uniform_requests(1))
    assert "logprobs" not in peer.received[0].body and response.option_logprobs is None


def test_option_logprobs_from_top_hand_worked() -> None:
    assert option_logprobs_from_top([("A", -1.0), (" A", -1.0), ("C.", -0.5)], 3) == pytest.approx(
        (-1.0 + math.log(2), -math.inf, -0.5)
    )
    assert option_logprobs_from_top([("▁D", -0.1), ("ĠB", -0.3)], 2) == pytest.approx((-math.inf, -0.3))
    assert option_logprobs_from_top([("A", -0.1), ("A", -0.1)], 2) == pytest.approx((-0.1, -math.inf))
    assert option_logprobs_from_top([("I", -0.1), ("a", -0.2)], 4) is None
    assert option_logprobs_from_top([("A", -0.1)], 0) is None


def test_parse_completion_shapes() -> None:
    ok = {"choices": [{"message": {"content": "B"}, "finish_reason": "stop"}]}
    assert parse_completion(json.dumps(ok).encode(), 2) == ("B", None, False)
    parts = {"choices": [{"message": {"content": [{"type": "text", "text": "(C)"}]}}]}
    assert parse_completion(json.dumps(parts).encode(), 3)[0] == "(C)"
    cases = [
        (b'{"choices": [{"message": {"con', True),  # truncated: worth a retry
        (b'{"object": "error"}', False),  # not a chat completion
        (
            json.dumps({"choices": [{"message": {"content": None}, "finish_reason": "length"}]}).encode(),
            False,
        ),
    ]
    for payload, retryable in cases:
        with pytest.raises(Exception) as info:
            parse_completion(payload, 2)
        assert info.value.retryable is retryable  # type: ignore[attr-defined]


# --- construction -------------------------------------------------------------------------------


def test_from_spec_and_registry(serve) -> None:
    assert resolve_factory("openai") is OpenAIChatModel
    peer = serve()
    spec = ModelSpec(
        backend="openai",
        model="served-model",
        name="my-run-name",
        base_url=peer.base_url,
        concurrency=3,
        max_new_tokens=5,
        generation_kwargs={"seed": 1},
        extra={"image_format": "png", "backoff_base_s": 0.01, "extra_body": {"top_p": 1.0}},
    )
    model = OpenAIChatModel.from_spec(spec)
    try:
        assert model.name == "my-run-name" and model.concurrency == 3 and model.api_key_env is None
        [response] = model.answer(uniform_requests(1))
        assert response.ok
        body = peer.received[0].body
        assert (body["model"], body["max_tokens"], body["seed"], body["top_p"]) == ("served-model", 5, 1, 1.0)
    finally:
        model.close()
    with pytest.raises(ModelConfigError, match="unknown openai option"):
        OpenAIChatModel.from_spec(spec.replace(extra={"image_fromat": "png"}))
    with pytest.raises(ModelConfigError, match="base_url"):
        OpenAIChatModel.from_spec(spec.replace(base_url=None))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"concurrency": 0},
        {"image_format": "gif"},
        {"timeout_s": 0},
        {"max_retries": -1},
        {"top_logprobs": 50},
        {"base_url": "ftp://host/v1"},
    ],
)
def test_bad_configuration_is_a_named_error(kwargs: dict[str, object]) -> None:
    base_url = str(kwargs.pop("base_url", "http://127.0.0.1:1/v1"))
    with pytest.raises(ModelConfigError):
        OpenAIChatModel("m", base_url, **kwargs)  # type: ignore[arg-type]


def test_close_then_answer_again(serve, client) -> None:
    peer = serve()
    model = client(peer)
    assert model.answer(uniform_requests(1))[0].ok
    model.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("tempcore-openai-")]
    assert model.answer(uniform_requests(1, prefix="after"))[0].ok


# --- serving a tiny transformers VLM ------------------------------------------------------------


def test_serving_a_tiny_vlm_gives_the_same_answers_as_calling_it_directly(
    serve, client, tmp_path: Path
) -> None:
    from helpers.tiny_vlms import build_tiny_vlm
    from tempcore.models import load_model

    folder = build_tiny_vlm("qwen2_vl", tmp_path / "qwen2_vl")
    vlm = load_model(ModelSpec(backend="hf", model=str(folder), device="cpu", max_new_tokens=4))
    try:
        rng = np.random.default_rng(1)
        options = ("a man walks", "a dog runs", "a car stops")
        prompt = "What happens? " + " ".join(f"{letter}. {o}" for letter, o in zip("ABC", options))
        requests = [
            ModelRequest(
                images=tuple(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8) for _ in range(2)),
                prompt=prompt + f" ({i})",
                options=options,
            )
            for i in range(3)
        ]
        direct = [vlm.answer([r])[0] for r in requests]
        assert all(r.ok and r.option_logprobs is not None for r in direct)
        assert direct[0].option_logprobs != direct[1].option_logprobs  # the images matter

        def parse_options(text: str) -> tuple[str, ...]:
            return tuple(o.strip() for o in re.findall(r"[A-Z]\. ([^.]+?)(?= [A-Z]\. | \(|$)", text))

        peer = serve(
            model=vlm, options_from_prompt=parse_options, faults=ByPrompt({requests[1].prompt: [DROP]})
        )
        served = client(peer, max_tokens=4, concurrency=2).answer(requests)
        assert [r.text for r in served] == [r.text for r in direct]
        for got, want in zip(served, direct, strict=True):
            assert got.option_logprobs == pytest.approx(want.option_logprobs, rel=1e-6)
        assert [r.attempts for r in served] == [1, 2, 1]
    finally:
        vlm.close()


def test_peer_rejects_a_malformed_body_with_400(serve) -> None:
    import httpx

    peer = serve()
    reply = httpx.post(peer.base_url + "/chat/completions", json={"model": "m", "messages": []}, timeout=5)
    assert reply.status_code == 400 and "messages" in reply.json()["error"]["message"]
    reply = httpx.post(peer.base_url + "/chat/completions", content=b"{not json", timeout=5)
    assert reply.status_code == 400  # answered, not left to the client's timeout (that raises)


# --- user info and query strings in base_url (issue 13) ---------------------------------------


def test_user_info_never_replaces_the_bearer_key(serve, monkeypatch) -> None:
    peer = serve()
    monkeypatch.setenv("TEMPCORE_UI_KEY", "sk-ui-key-0123456789abcdef")
    url = f"http://alice:pa55word@127.0.0.1:{peer.port}/v1/?api-key=QV1&api-version=2024"
    with OpenAIChatModel("m", url, **{**FAST, "api_key_env": "TEMPCORE_UI_KEY"}) as model:  # type: ignore[arg-type]
        [response] = model.answer(uniform_requests(1))
        assert response.ok, response.error
        described = json.dumps(model.describe()) + repr(model)
    [got] = peer.received
    assert got.headers["authorization"] == "Bearer sk-ui-key-0123456789abcdef"
    assert got.target == "/v1/chat/completions?api-key=QV1&api-version=2024"
    assert "pa55word" not in described and "QV1" not in described and "api-version=2024" in described


def test_user_info_is_sent_as_basic_only_without_a_key(serve) -> None:
    peer = serve()
    url = f"http://alice:pa%40ss@127.0.0.1:{peer.port}/v1"
    with OpenAIChatModel("m", url, **{**FAST, "api_key_env": "TEMPCORE_UNSET_KEY"}) as model:  # type: ignore[arg-type]
        [response] = model.answer(uniform_requests(1))
    assert response.ok, response.error
    [got] = peer.received
    assert got.headers["authorization"] == "Basic " + base64.b64encode(b"alice:pa@ss").decode()
    assert got.target == "/v1/chat/completions"


def test_request_url_keeps_the_query_after_the_path() -> None:
    from tempcore.models.openai_http import request_url

    assert request_url("https://h/v1?api-key=K") == ("https://h/v1/chat/completions?api-key=K", None)
    assert request_url("https://u:p@h:8/openai/v1/#frag") == ("https://h:8/openai/v1/chat/completions", ("u", "p"))


def test_echoed_credentials_are_redacted_before_the_error_is_cut(serve, monkeypatch) -> None:
    # the key sits across the 300-character cut of the error body: cutting first would leak half of it
    key = "sk-cut-" + "k" * 40
    monkeypatch.setenv("TEMPCORE_CUT_KEY", key)
    peer = serve(faults=lambda r: status(400, message="x" * 280 + key))
    with OpenAIChatModel("m", peer.base_url, **{**FAST, "api_key_env": "TEMPCORE_CUT_KEY"}) as model:  # type: ignore[arg-type]
        [response] = model.answer(uniform_requests(1))
    assert response.error is not None and "kkkkk" not in response.error and "sk-cut" not in response.error
