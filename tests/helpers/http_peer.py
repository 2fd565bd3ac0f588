"""A real OpenAI-compatible chat-completions server for tests and benchmarks.

This is the test double at the machine's edge: the client under test (``OpenAIChatModel``) talks
real HTTP/1.1 over a real socket on ``127.0.0.1`` to this server, which stands in for vLLM
``serve`` / SGLang / a hosted API. It decodes the ``data:`` URL images back to ``(H, W, 3)`` uint8
arrays, calls a wrapped :class:`tempcore.models.base.Model` (a tiny transformers VLM, or the
deterministic :class:`MeanColourModel`) and answers in the chat-completions format.

Fault injection: a ``faults`` callable sees every parsed request (:class:`PeerRequest`) and may
return a :class:`Fault` — an HTTP status (429 with ``Retry-After``, 500, 503, 400, ...), a timeout
(sleep past the client's timeout, then close), a dropped connection (headers and half the body,
then the socket is aborted) or a reset (the socket is aborted before any byte of the response).
:class:`ByPrompt` schedules faults per prompt (so a schedule is deterministic whatever the
arrival order); :class:`InOrder` by arrival. ``latency_s`` delays every normal answer (a number,
or a function of the request). The peer counts requests, in-flight requests and their maximum,
and keeps every parsed request for inspection.

Run standalone (used by ``benchmarks/inference_http.py``)::

    python tests/helpers/http_peer.py --latency 0.1      # prints "READY http://127.0.0.1:PORT/v1"

``GET /peer/stats`` returns the counters as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import concurrent.futures
import io
import json
import math
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tempcore.models.base import Model, ModelRequest, ModelResponse
from tempcore.records import LETTERS

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


# --- a deterministic stand-in model -------------------------------------------------------------


class MeanColourModel:
    """Answers from image content only: deterministic, instant, no weights.

    The reply is ``"<letter> means=<m1>,<m2>,..."``: the letter is ``LETTERS[int(mean of the first
    image) * 4 // 256]`` (``"A"`` without images), ``m_i`` the rounded mean pixel value of image
    ``i`` in the order received, so a test can check which images arrived, in which order.
    """

    name = "mean-colour"
    revision: str | None = None
    supports_option_scores = False

    def answer(self, requests: Sequence[ModelRequest], *, method: str = "generate") -> list[ModelResponse]:
        out = []
        for request in requests:
            means = [int(round(float(image.mean()))) for image in request.images]
            letter = LETTERS[(means[0] * 4) // 256] if means else "A"
            out.append(ModelResponse(text=f"{letter} means={','.join(map(str, means))}"))
        return out

    def close(self) -> None:
        return None


# --- faults and schedules ---------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One injected misbehaviour: ``kind`` is ``status``, ``timeout``, ``drop``, ``reset`` or ``echo``
    (an HTTP ``status`` error whose message repeats the request line and every header, as a
    careless server or proxy does)."""

    kind: str
    status: int = 500
    headers: tuple[tuple[str, str], ...] = ()
    message: str = "injected fault"
    sleep_s: float = 5.0


def status(
    code: int, *, retry_after: str | None = None, message: str = "injected fault", **headers: str
) -> Fault:
    """An HTTP error status with an OpenAI-style error body (and ``Retry-After`` when given)."""
    items = tuple(headers.items()) + ((("Retry-After", retry_after),) if retry_after is not None else ())
    return Fault("status", status=code, headers=items, message=message)


def timeout(sleep_s: float = 5.0) -> Fault:
    """Say nothing for ``sleep_s`` seconds (past the client's timeout), then close the connection."""
    return Fault("timeout", sleep_s=sleep_s)


DROP = Fault("drop")
ECHO = Fault("echo", status=400)
RESET = Fault("reset")


@dataclass
class PeerRequest:
    """One chat-completions request as the peer parsed it."""

    index: int
    received_at: float
    headers: dict[str, str]
    body: dict[str, Any]
    prompt: str
    image_urls: list[str]
    images: list[np.ndarray]
    target: str = ""


class ByPrompt:
    """Faults per prompt: each arrival of a prompt takes the next fault of its list (then none).

    ``always`` maps a prompt to a fault returned on every arrival (a permanently failing item).
    """

    def __init__(
        self, schedule: dict[str, Sequence[Fault]] | None = None, always: dict[str, Fault] | None = None
    ) -> None:
        self._left = {prompt: list(faults) for prompt, faults in (schedule or {}).items()}
        self._always = dict(always or {})
        self._lock = threading.Lock()

    def __call__(self, request: PeerRequest) -> Fault | None:
        if request.prompt in self._always:
            return self._always[request.prompt]
        with self._lock:
            left = self._left.get(request.prompt)
            return left.pop(0) if left else None


class InOrder:
    """Faults by arrival: request ``i`` (0-based, over the peer's life) gets ``faults[i]`` (None = normal)."""

    def __init__(self, faults: Sequence[Fault | None]) -> None:
        self._faults = list(faults)

    def __call__(self, request: PeerRequest) -> Fault | None:
        return self._faults[request.index] if request.index < len(self._faults) else None


class _BadRequest(Exception):
    pass


def decode_data_url(url: str) -> np.ndarray:
    """A ``data:image/...;base64,`` URL back to an ``(H, W, 3)`` uint8 RGB array."""
    from PIL import Image

    head, sep, payload = url.partition(",")
    if not sep or not head.startswith("data:image/") or not head.endswith(";base64"):
        raise _BadRequest(f"image_url is not a base64 image data URL: {url[:40]!r}")
    try:
        raw = base64.b64decode(payload, validate=True)
        with Image.open(io.BytesIO(raw)) as pil:
            return np.asarray(pil.convert("RGB"), dtype=np.uint8)
    except (binascii.Error, OSError, ValueError) as exc:
        raise _BadRequest(f"image could not be decoded: {exc}") from exc


def _parse_chat(body: dict[str, Any]) -> tuple[str, list[str]]:
    """(prompt, image URLs) from a body: one user message, image_url parts then one text part."""
    if not isinstance(body.get("model"), str):
        raise _BadRequest("body has no model name")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _BadRequest("body has no messages")
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if len(users) != 1 or messages[-1] is not users[0]:
        raise _BadRequest("expected exactly one user message, last")
    content = users[0].get("content")
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list) or not content:
        raise _BadRequest("user content must be a string or a list of parts")
    *image_parts, text_part = content
    urls = []
    for part in image_parts:
        if not (isinstance(part, dict) and part.get("type") == "image_url"):
            raise _BadRequest("every part before the text must be an image_url part")
        url = (part.get("image_url") or {}).get("url")
        if not isinstance(url, str):
            raise _BadRequest("image_url part without url")
        urls.append(url)
    if not (
        isinstance(text_part, dict)
        and text_part.get("type") == "text"
        and isinstance(text_part.get("text"), str)
    ):
        raise _BadRequest("the last part must be the text part")
    return text_part["text"], urls


# --- the server -------------------------------------------------------------------------------


@dataclass
class PeerStats:
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    answered: int = 0
    faults: Counter[str] = field(default_factory=Counter)


class HTTPPeer:
    """An OpenAI-compatible server on ``127.0.0.1:<free port>`` in a background thread.

    ``model`` answers normal requests (default :class:`MeanColourModel`); ``faults`` injects
    misbehaviour; ``latency_s`` delays normal answers. ``options_from_prompt(prompt)`` recovers the
    option texts from the prompt (the chat protocol does not carry them) so that the wrapped model
    can return option log-probabilities. When a request asks for logprobs, ``logprobs(request,
    response)`` gives the first token's ``(token, logprob)`` top list, best first (default: the
    option letters with the wrapped model's ``option_logprobs`` when it gave them, else the reply's
    first whitespace-separated word with logprob 0); the listed first entry is reported as the
    chosen token. Use as a context manager.
    """

    def __init__(
        self,
        model: Model | None = None,
        *,
        faults: Callable[[PeerRequest], Fault | None] | None = None,
        latency_s: float | Callable[[PeerRequest], float] = 0.0,
        logprobs: Callable[[PeerRequest, ModelResponse], list[tuple[str, float]]] | None = None,
        options_from_prompt: Callable[[str], Sequence[str]] | None = None,
        keep_requests: bool = True,
    ) -> None:
        self.model: Model = model if model is not None else MeanColourModel()
        self.faults = faults
        self.latency_s = latency_s
        self.logprobs = logprobs
        self.options_from_prompt = options_from_prompt
        self.keep_requests = keep_requests
        self.stats = PeerStats()
        self.received: list[PeerRequest] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._handlers: set[asyncio.Task[Any]] = set()
        self._model_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="peer-model"
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> HTTPPeer:
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=512)
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="http-peer", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("http peer did not start")
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
        self._model_pool.shutdown(wait=True)
        self._thread = None

    def __enter__(self) -> HTTPPeer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def requests_for(self, prompt: str) -> list[PeerRequest]:
        return [r for r in self.received if r.prompt == prompt]

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    # -- HTTP/1.1 over asyncio streams --

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _version = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                keep_open = await self._dispatch(method, target, headers, body, writer)
                if not keep_open:
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            return
        finally:
            self._handlers.discard(task)
            writer.close()

    @staticmethod
    async def _send(
        writer: asyncio.StreamWriter, code: int, payload: Any, headers: Sequence[tuple[str, str]] = ()
    ) -> None:
        body = json.dumps(payload).encode("utf-8")
        head = [f"HTTP/1.1 {code} {REASONS.get(code, 'Status')}", "Content-Type: application/json"]
        head += [f"Content-Length: {len(body)}", "Connection: keep-alive"]
        head += [f"{k}: {v}" for k, v in headers]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()

    async def _dispatch(
        self, method: str, target: str, headers: dict[str, str], raw: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        path = target.split("?", 1)[0]
        if method == "GET" and path == "/peer/stats":
            s = self.stats
            payload = {"requests": s.requests, "max_in_flight": s.max_in_flight, "answered": s.answered}
            payload["process_cpu_s"] = time.process_time()
            await self._send(writer, 200, {**payload, "faults": dict(s.faults)})
            return True
        if method == "GET" and path == "/v1/models":
            await self._send(
                writer, 200, {"object": "list", "data": [{"id": self.model.name, "object": "model"}]}
            )
            return True
        if not (method == "POST" and path == "/v1/chat/completions"):
            await self._send(writer, 404, _error(f"no route {method} {path}", "not_found"))
            return True
        stats = self.stats
        index = stats.requests
        stats.requests += 1
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        try:
            return await self._chat(index, headers, raw, writer, target)
        finally:
            stats.in_flight -= 1

    async def _chat(
        self, index: int, headers: dict[str, str], raw: bytes, writer: asyncio.StreamWriter, target: str = ""
    ) -> bool:
        try:
            body = json.loads(raw)
            prompt, urls = _parse_chat(body)
            images = [decode_data_url(u) for u in urls]
        except (ValueError, _BadRequest) as exc:
            await self._send(writer, 400, _error(str(exc), "invalid_request_error"))
            return True
        request = PeerRequest(index, time.monotonic(), headers, body, prompt, urls, images, target)
        if self.keep_requests:
            self.received.append(request)
        fault = self.faults(request) if self.faults is not None else None
        if fault is not None:
            self.stats.faults[fault.kind if fault.kind != "status" else str(fault.status)] += 1
            return await self._inject(fault, writer, headers, target)
        delay = self.latency_s(request) if callable(self.latency_s) else self.latency_s
        if delay > 0:
            await asyncio.sleep(delay)
        options = tuple(self.options_from_prompt(prompt)) if self.options_from_prompt is not None else ()
        model_request = ModelRequest(
            images=tuple(images),
            prompt=prompt,
            options=options,
            max_new_tokens=body.get("max_tokens"),
            key=f"peer-{index}",
        )
        loop = asyncio.get_running_loop()
        try:
            [response] = await loop.run_in_executor(self._model_pool, self.model.answer, [model_request])
        except Exception as exc:  # the wrapped model broke: a 500, as a real server would say
            await self._send(
                writer, 500, _error(f"model failed: {type(exc).__name__}: {exc}", "server_error")
            )
            return True
        if not response.ok:
            await self._send(writer, 500, _error(f"model failed: {response.error}", "server_error"))
            return True
        assert response.text is not None
        self.stats.answered += 1
        await self._send(writer, 200, self._completion(index, body, request, response))
        return True

    def _completion(
        self, index: int, body: dict[str, Any], request: PeerRequest, response: ModelResponse
    ) -> dict[str, Any]:
        text = response.text or ""
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
            "logprobs": None,
        }
        if body.get("logprobs"):
            if self.logprobs is not None:
                top = self.logprobs(request, response)
            elif response.option_logprobs is not None:
                pairs = zip(LETTERS, response.option_logprobs)
                top = sorted(((t, lp) for t, lp in pairs if math.isfinite(lp)), key=lambda tl: -tl[1])
            else:
                top = [(text.split()[0] if text.split() else "", 0.0)]
            k = int(body.get("top_logprobs") or 0)
            listed = [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top[: max(k, 1)]]
            chosen = listed[0] if listed else {"token": "", "logprob": 0.0, "bytes": []}
            choice["logprobs"] = {"content": [{**chosen, "top_logprobs": listed if k else []}]}
        return {
            "id": f"chatcmpl-peer-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [choice],
            "usage": {"prompt_tokens": 0, "completion_tokens": 1, "total_tokens": 1},
        }

    async def _inject(
        self, fault: Fault, writer: asyncio.StreamWriter, headers: dict[str, str], target: str = ""
    ) -> bool:
        if fault.kind == "echo":
            said = f"bad request POST {target} " + " ".join(f"{k}: {v}" for k, v in headers.items())
            await self._send(writer, fault.status, _error(said, "echo"))
            return True
        if fault.kind == "status":
            await self._send(writer, fault.status, _error(fault.message, "injected"), fault.headers)
            return True
        if fault.kind == "timeout":
            await asyncio.sleep(fault.sleep_s)
            return False
        if fault.kind == "drop":
            payload = json.dumps(_error("x" * 200, "partial")).encode()
            head = (
                f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
            )
            writer.write(head.encode("latin-1") + payload[: len(payload) // 2])
            await writer.drain()
            writer.transport.abort()
            return False
        if fault.kind == "reset":
            writer.transport.abort()
            return False
        raise ValueError(f"unknown fault kind {fault.kind!r}")


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None}}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Serve MeanColourModel behind an OpenAI-compatible endpoint."
    )
    parser.add_argument("--latency", type=float, default=0.1, help="seconds before each answer (default 0.1)")
    args = parser.parse_args(argv)
    with HTTPPeer(latency_s=args.latency, keep_requests=False) as peer:
        print(f"READY {peer.base_url}", flush=True)
        sys.stdin.read()  # serve until stdin closes
    return 0


if __name__ == "__main__":
    sys.exit(main())
