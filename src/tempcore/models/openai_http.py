"""OpenAI-compatible chat-completions client (vLLM ``serve``, SGLang, hosted APIs).

One request = one ``POST {base_url}/chat/completions`` with a single user message whose content
is the request's images as base64 ``data:`` URLs (``image_url`` parts, in the order shown),
followed by one text part holding the already rendered prompt (plus an optional system message
before it). At most ``concurrency`` requests are in flight; :meth:`OpenAIChatModel.answer` is
synchronous and returns one response per request, in request order; :meth:`OpenAIChatModel.submit`
sends one request and returns a future of its response at once (the runner streams requests
through it: :func:`tempcore.run.answering.answer_stream`).

Choices this module makes (the protocol leaves them open; the reasons in ``docs/design/models.md``):

* **Event loop**: the client lives on a private event loop in a background thread, stopped by
  :meth:`~OpenAIChatModel.close`; ``answer`` works the same from any thread and from code that runs
  an event loop. ``answer`` and ``submit`` share the ``concurrency`` slots (first come, first served).
* **Retries**: at most ``1 + max_retries`` tries, for HTTP 408, 429 and 5xx, timeouts, connection and
  protocol errors and a 2xx body that is not JSON; the wait is the server's ``Retry-After`` (capped at
  ``backoff_max_s``), else full-jitter exponential backoff from ``backoff_base_s``.
* **Timing**: ``timeout_s`` bounds each attempt as a whole (connect + send + wait + read);
  ``latency_s`` is the attempt that answered (for a failure: from the first attempt to giving up).
* **Failures are data**: a request that fails for good returns ``ModelResponse(text=None,
  error=..., attempts=n)``; ``answer`` never raises for one item. A request that cannot be sent
  fails with ``attempts=0``; a completion with ``content: null`` is a failure, not an empty answer.
* **Option log-probabilities** (``request_logprobs``, default): option ``i``'s is the log-sum-exp
  over the first generated token's top-k alternatives that are its letter (``" B"``, ``"(B"``; not
  ``"b"``), ``-inf`` when not listed; ``None`` when no letter is listed or none are returned.
* **Option scoring** (``method="option_scores"``, only with ``request_logprobs``): the letter with
  the highest log-probability (ties: the earliest option), or a failure when there is none.
* **Timestamps** are not sent: the rendered prompt is where a model is told about time.
* **Secrets**: the API key is read from ``api_key_env`` at every call, sent only as ``Authorization:
  Bearer``, never stored, and redacted (with ``base_url``'s credentials and secret query values)
  from errors, logs, ``repr`` and ``describe``. ``extra_body`` is in the manifest: no secrets there.
* **Request URL**: ``{base_url path}/chat/completions``, ``base_url``'s query string kept, a fragment
  dropped. User info in ``base_url`` is never in the URL: with an API key it is not sent (a warning
  says so once), without one it is sent as ``Authorization: Basic``.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import dataclasses
import email.utils
import functools
import json
import logging
import math
import os
import random
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

from tempcore._version import __version__
from tempcore.models._images import to_data_url
from tempcore.models.base import (
    METHOD_GENERATE,
    METHOD_OPTION_SCORES,
    MissingExtraError,
    ModelConfigError,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelSpec,
    check_method,
)
from tempcore.models.specs import OPENAI_EXTRA, OpenAISpec, expect_spec
from tempcore.records import LETTERS
from tempcore.redaction import RedactingFilter, redact_text, redact_url, url_secrets

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

T = TypeVar("T")

IMAGE_FORMATS = ("jpeg", "png")
#: 4xx statuses that are retried (request timeout, rate limit); every 5xx is retried too.
RETRYABLE_4XX = frozenset({408, 429})
#: Keys of ``ModelSpec.extra`` understood by :meth:`OpenAIChatModel.from_spec` (checked when the
#: :class:`~tempcore.models.specs.OpenAISpec` is built).
SPEC_EXTRA_KEYS = tuple(OPENAI_EXTRA)
_ERROR_BODY_CHARS = 300
#: Connections per ``httpx.AsyncClient`` (see "Connection pools" in the module docstring).
POOL_SHARD = 8


def _import_httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:  # pragma: no cover - httpx is installed wherever tests run
        raise MissingExtraError("the OpenAI-compatible HTTP backend", "serve", "httpx") from exc
    return httpx


# --- pure helpers -----------------------------------------------------------------------------


def backoff_delay(attempt: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """Full-jitter exponential backoff before retry ``attempt`` (1-based): U(0, min(max_s, base_s * 2**(attempt-1)))."""
    ceiling = min(max_s, base_s * 2.0 ** max(0, attempt - 1))
    return rng.uniform(0.0, ceiling)


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (delta seconds or HTTP date); None if absent/invalid."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value)
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        return max(0.0, when.timestamp() - (time.time() if now is None else now))
    return max(0.0, value) if math.isfinite(value) else None


_LEADING = "([*"
_TRAILING = ")].:,*"


def _letter_of(token: str) -> str | None:
    """The option letter a first-position token stands for, or None (see the module docstring)."""
    core = token.strip().lstrip("Ġ▁").strip().lstrip(_LEADING).rstrip(_TRAILING).strip()
    if len(core) == 1 and core in LETTERS:
        return core
    return None


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    if top == -math.inf:
        return -math.inf
    return top + math.log(sum(math.exp(v - top) for v in values))


def option_logprobs_from_top(
    top_logprobs: Sequence[tuple[str, float]], n_options: int
) -> tuple[float, ...] | None:
    """Per-option log-probabilities from one position's top-k ``(token, logprob)`` list.

    Each option gets the log-sum-exp of the listed tokens that are its letter, ``-inf`` when none
    is listed; ``None`` when no option letter is listed at all (or there are no options).
    """
    if n_options <= 0:
        return None
    best: dict[str, float] = {}
    for token, logprob in top_logprobs:  # the same token may be listed twice (chosen + top-k)
        if isinstance(token, str) and isinstance(logprob, (int, float)) and not math.isnan(logprob):
            best[token] = max(float(logprob), best.get(token, -math.inf))
    per_letter: dict[str, list[float]] = {}
    for token, logprob in best.items():
        letter = _letter_of(token)
        if letter is not None:
            per_letter.setdefault(letter, []).append(logprob)
    letters = LETTERS[:n_options]
    if not any(letter in per_letter for letter in letters):
        return None
    return tuple(_logsumexp(per_letter[letter]) if letter in per_letter else -math.inf for letter in letters)


def mask_url(url: str) -> str:
    """``url`` with any ``user:password@`` credentials and secret query values replaced by
    :data:`tempcore.redaction.REDACTED` (:func:`tempcore.redaction.redact_url`: one marker everywhere)."""
    return redact_url(url)


def request_url(base_url: str) -> tuple[str, tuple[str, str] | None]:
    """``(POST URL, (user, password) or None)`` for ``base_url``: user info removed from the URL,
    ``/chat/completions`` appended to the path, the query string kept after it, fragment dropped."""
    parts = urlsplit(base_url)
    userinfo = None
    netloc = parts.netloc
    if "@" in netloc:
        info, netloc = netloc.rsplit("@", 1)
        user, _, password = info.partition(":")
        userinfo = (unquote(user), unquote(password))
    path = parts.path.rstrip("/") + "/chat/completions"
    return urlunsplit((parts.scheme, netloc, path, parts.query, "")), userinfo


# This module's log lines and httpx's (``HTTP Request: POST <url>`` at INFO, the URL with its query
# string) pass through the redaction rules; the known secrets are already removed at the source.
for _name in (__name__, "httpx"):
    if not any(isinstance(f, RedactingFilter) for f in logging.getLogger(_name).filters):
        logging.getLogger(_name).addFilter(RedactingFilter())


class _BadCompletion(Exception):
    """A 2xx body that is not a usable chat completion (``retryable``: invalid JSON)."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


def parse_completion(
    payload: bytes, n_options: int, clean: Callable[[str], str] = lambda text: text
) -> tuple[str, tuple[float, ...] | None, bool]:
    """``(text, option_logprobs, had_logprobs)`` from a chat-completion body; raises ``_BadCompletion``
    (whose message quotes the body through ``clean``, redaction, before cutting it)."""
    try:
        data = json.loads(payload)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise _BadCompletion(
            f"response body is not valid JSON ({len(payload)} bytes)", retryable=True
        ) from exc
    try:
        choice = data["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError) as exc:
        raise _BadCompletion(
            f"response is not a chat completion (no choices[0].message): {clean(str(data))[:_ERROR_BODY_CHARS]}",
            retryable=False,
        ) from exc
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):  # some servers return content parts
        texts: list[str] = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        content = "".join(texts) if texts else None
    if not isinstance(content, str):
        reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        raise _BadCompletion(f"completion has no text content (finish_reason={reason!r})", retryable=False)
    top = _first_token_top_logprobs(choice)
    had_logprobs = top is not None
    option_lp = option_logprobs_from_top(top, n_options) if top is not None else None
    return content, option_lp, had_logprobs


def _first_token_top_logprobs(choice: Any) -> list[tuple[str, float]] | None:
    """The first generated token and its top-k alternatives as ``(token, logprob)``; None if absent."""
    try:
        first = choice["logprobs"]["content"][0]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(first, dict):
        return None
    entries = [first] + [e for e in (first.get("top_logprobs") or []) if isinstance(e, dict)]
    out = [(e.get("token"), e.get("logprob")) for e in entries]
    return [(t, float(lp)) for t, lp in out if isinstance(t, str) and isinstance(lp, (int, float))]


# --- the event loop thread ---------------------------------------------------------------------


class _LoopThread:
    """A private asyncio loop running forever in a daemon thread."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def stop(self) -> None:
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()


@dataclass(frozen=True)
class _Attempt:
    """The outcome of one HTTP attempt: a parsed answer, or an error and whether to retry."""

    text: str | None = None
    option_logprobs: tuple[float, ...] | None = None
    had_logprobs: bool = False
    error: str | None = None
    retryable: bool = False
    retry_after: float | None = None


# --- the model --------------------------------------------------------------------------------


class OpenAIChatModel:
    """A model served behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``model`` is the served model name sent in the body; ``name`` (default: ``model``) is the name
    predictions are stored under; ``revision`` is recorded as given (a server does not report one).
    ``max_tokens`` is the default generation length (a request's ``max_new_tokens`` overrides it);
    ``extra_body`` is merged last into every request body (e.g. ``{"top_p": 1, "seed": 0}`` or
    vLLM's ``{"chat_template_kwargs": {...}}``). See the module docstring for retries, timeouts,
    log-probabilities and secrets.
    """

    spec_class: ClassVar[type[ModelSpec]] = OpenAISpec

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        concurrency: int = 16,
        timeout_s: float = 120.0,
        max_retries: int = 6,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        image_format: Literal["jpeg", "png"] = "jpeg",
        jpeg_quality: int = 90,
        max_tokens: int = 16,
        temperature: float = 0.0,
        extra_body: Mapping[str, Any] | None = None,
        request_logprobs: bool = True,
        top_logprobs: int = 20,
        name: str | None = None,
        revision: str | None = None,
        system_prompt: str | None = None,
        max_image_side: int | None = None,
        max_frames: int | None = None,
    ) -> None:
        self._httpx = _import_httpx()
        label = name or model
        if not model:
            raise ModelConfigError("openai model: the served model name is empty")
        parts = urlsplit(base_url or "")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ModelConfigError(
                f"model {label}: base_url must be an http(s) URL, got {mask_url(base_url)!r}"
            )
        checks = [
            (concurrency >= 1, f"concurrency must be >= 1, got {concurrency}"),
            (timeout_s > 0, f"timeout_s must be positive, got {timeout_s}"),
            (max_retries >= 0, f"max_retries must be >= 0, got {max_retries}"),
            (backoff_base_s >= 0 and backoff_max_s >= 0, "backoff_base_s and backoff_max_s must be >= 0"),
            (
                image_format in IMAGE_FORMATS,
                f"image_format must be one of {IMAGE_FORMATS}, got {image_format!r}",
            ),
            (1 <= jpeg_quality <= 100, f"jpeg_quality must be in 1..100, got {jpeg_quality}"),
            (max_tokens >= 1, f"max_tokens must be >= 1, got {max_tokens}"),
            (1 <= top_logprobs <= 20, f"top_logprobs must be in 1..20, got {top_logprobs}"),
            (max_image_side is None or max_image_side >= 8, "max_image_side must be >= 8"),
            (max_frames is None or max_frames >= 1, "max_frames must be >= 1"),
            (api_key_env is None or bool(api_key_env), "api_key_env must be a variable name or None"),
        ]
        for ok, message in checks:
            if not ok:
                raise ModelConfigError(f"model {label}: {message}")
        self.model = model
        self.name = label
        self.revision = revision
        parts = urlsplit(base_url)
        self.base_url = urlunsplit(parts._replace(path=parts.path.rstrip("/")))
        self._url, self._userinfo = request_url(base_url)
        #: what error messages and logs must never show (the API key is added per call)
        self._url_secrets = tuple(url_secrets(base_url))
        self.api_key_env = api_key_env
        self.concurrency = int(concurrency)
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_base_s = float(backoff_base_s)
        self.backoff_max_s = float(backoff_max_s)
        self.image_format = image_format
        self.jpeg_quality = int(jpeg_quality)
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.extra_body = dict(extra_body or {})
        self.request_logprobs = bool(request_logprobs)
        self.top_logprobs = int(top_logprobs)
        self.system_prompt = system_prompt
        self.max_image_side = max_image_side
        self.max_frames = max_frames
        self.supports_option_scores = self.request_logprobs
        self._rng = random.Random()
        self._lock = threading.Lock()
        self._loop: _LoopThread | None = None
        self._clients: list[httpx.AsyncClient] | None = None
        self._slots: asyncio.Queue[int] | None = None
        self._encoder: concurrent.futures.ThreadPoolExecutor | None = None
        #: requests :meth:`submit` queued for the loop to start (:meth:`_start_submitted`), and
        #: whether a start is already scheduled there
        self._submit_lock = threading.Lock()
        self._submitted: list[tuple[concurrent.futures.Future[ModelResponse], ModelRequest, str,
                                    dict[str, str], str | None]] = []
        self._start_due = False
        self._warned_missing_key = False
        self._warned_userinfo = False

    @classmethod
    def from_spec(cls, spec: OpenAISpec) -> OpenAIChatModel:
        """Build from an :class:`~tempcore.models.specs.OpenAISpec` (``backend: openai``; the spec has
        checked ``base_url`` and the ``extra`` keys when it was built).

        ``spec.max_new_tokens`` is ``max_tokens``; ``spec.generation_kwargs`` go into the request
        body (``extra.extra_body`` wins on conflicts); ``spec.extra`` may set
        :data:`SPEC_EXTRA_KEYS`.
        """
        expect_spec(spec, OpenAISpec, "backend openai")
        if not spec.base_url:
            raise ModelConfigError(f"model {spec.display_name}: the openai backend needs base_url")
        extra = dict(spec.extra)
        extra_body = {**dict(spec.generation_kwargs), **dict(extra.pop("extra_body", None) or {})}
        return cls(
            spec.model,
            spec.base_url,
            api_key_env=spec.api_key_env,
            concurrency=spec.concurrency,
            timeout_s=spec.timeout_s,
            max_retries=spec.max_retries,
            max_tokens=spec.max_new_tokens,
            extra_body=extra_body,
            name=spec.display_name,
            revision=spec.revision,
            system_prompt=spec.system_prompt,
            max_image_side=spec.max_image_side,
            max_frames=spec.max_frames,
            **extra,
        )

    # -- description (manifest-safe) --

    def describe(self) -> dict[str, Any]:
        """A JSON-able, manifest-safe description: names the key's variable, never the key."""
        return {
            "backend": "openai",
            "name": self.name,
            "model": self.model,
            "revision": self.revision,
            "base_url": mask_url(self.base_url),
            "api_key_env": self.api_key_env,
            "concurrency": self.concurrency,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "backoff_base_s": self.backoff_base_s,
            "backoff_max_s": self.backoff_max_s,
            "image_format": self.image_format,
            "jpeg_quality": self.jpeg_quality,
            "max_image_side": self.max_image_side,
            "max_frames": self.max_frames,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "request_logprobs": self.request_logprobs,
            "top_logprobs": self.top_logprobs,
            "system_prompt": self.system_prompt,
            "extra_body": dict(self.extra_body),
        }

    def __repr__(self) -> str:
        return (
            f"OpenAIChatModel(model={self.model!r}, base_url={mask_url(self.base_url)!r}, "
            f"name={self.name!r}, concurrency={self.concurrency}, api_key_env={self.api_key_env!r})"
        )

    # -- public calls --

    def answer(
        self, requests: Sequence[ModelRequest], *, method: str = METHOD_GENERATE
    ) -> list[ModelResponse]:
        """One response per request, in request order; a failed item is an error response, never raised."""
        check_method(self, method)
        requests = list(requests)
        if not requests:
            return []
        headers, key = self._headers()
        runner = self._runner()
        return runner.run(self._answer_all(requests, method, headers, key))

    def submit(
        self, request: ModelRequest, *, method: str = METHOD_GENERATE
    ) -> concurrent.futures.Future[ModelResponse]:
        """Send one request without waiting: a future of its response (a failure is an error
        response, never an exception). Submitted requests share the model's ``concurrency`` slots
        with each other and with :meth:`answer` calls (first come, first served); a request waits
        for a free slot inside the model, so a caller may keep more submitted than ``concurrency``
        (the runner keeps ``2 x concurrency``: :func:`tempcore.run.answering.answer_stream`).
        Cancelling the future cancels the request (its slot is freed)."""
        check_method(self, method)
        headers, key = self._headers()
        runner = self._runner()
        future: concurrent.futures.Future[ModelResponse] = concurrent.futures.Future()
        with self._submit_lock:
            self._submitted.append((future, request, method, headers, key))
            wake, self._start_due = not self._start_due, True
        if wake:  # one wake-up of the loop per burst of submissions, not one per request
            try:
                runner.loop.call_soon_threadsafe(self._start_submitted)
            except RuntimeError:  # the loop was closed meanwhile (close() from another thread)
                self._cancel_submitted()
                raise
        return future

    def close(self) -> None:
        """Close connections and stop the background loop (a later ``answer`` starts them again)."""
        with self._lock:
            runner, self._loop = self._loop, None
            encoder, self._encoder = self._encoder, None
        if runner is not None:
            if runner.thread.is_alive():
                runner.run(self._aclose())
            runner.stop()
        if encoder is not None:
            encoder.shutdown(wait=True)
        self._cancel_submitted()  # submitted after the loop's last turn: never started

    def __enter__(self) -> OpenAIChatModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals --

    def _start_submitted(self) -> None:
        """On the loop: start a task for every request :meth:`submit` queued since the last call,
        each tied to its future (the task's result or cancellation is the future's; cancelling
        the future cancels the task, freeing its slot)."""
        with self._submit_lock:
            batch, self._submitted = self._submitted, []
            self._start_due = False
        loop = asyncio.get_running_loop()
        for future, request, method, headers, key in batch:
            if future.cancelled():
                continue
            task = loop.create_task(self._answer_slot(request, method, headers, key))
            task.add_done_callback(functools.partial(_settle, future))
            future.add_done_callback(functools.partial(_cancel_task, loop, task))

    def _cancel_submitted(self) -> None:
        with self._submit_lock:
            left, self._submitted = self._submitted, []
            self._start_due = False
        for future, *_ in left:
            future.cancel()

    def _redact(self, text: str, key: str | None) -> str:
        """``text`` without the API key, the URL's credentials or secret query values (any encoding)."""
        return redact_text(text, (*self._url_secrets, key))

    def _headers(self) -> tuple[dict[str, str], str | None]:
        """The request headers (the API key read from the environment now) and the key."""
        key = self._read_key()
        headers = {"Content-Type": "application/json", "User-Agent": f"tempcore/{__version__}"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
            if self._userinfo is not None and not self._warned_userinfo:
                self._warned_userinfo = True
                log.warning(
                    "model %s: base_url holds user info; it is not sent (the API key is sent as Bearer)",
                    self.name,
                )
        elif self._userinfo is not None:
            basic = base64.b64encode(":".join(self._userinfo).encode("utf-8")).decode("ascii")
            headers["Authorization"] = f"Basic {basic}"
        return headers, key

    def _runner(self) -> _LoopThread:
        runner = self._ensure_loop()
        if threading.current_thread() is runner.thread:
            raise ModelError(f"model {self.name}: answer() cannot be called from its own event loop thread")
        return runner

    def _read_key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env) or None
        if key is None and not self._warned_missing_key:
            self._warned_missing_key = True
            log.warning(
                "model %s: environment variable %s is not set; sending requests without an API key",
                self.name,
                self.api_key_env,
            )
        return key

    def _ensure_loop(self) -> _LoopThread:
        with self._lock:
            if self._loop is None:
                self._loop = _LoopThread(name=f"tempcore-openai-{self.name}")
                self._encoder = concurrent.futures.ThreadPoolExecutor(
                    max_workers=max(1, min(4, os.cpu_count() or 1)), thread_name_prefix="tempcore-encode"
                )
            return self._loop

    async def _aclose(self) -> None:
        clients, self._clients = self._clients or [], None
        self._slots = None
        for client in clients:
            await client.aclose()

    def _pool(self) -> tuple[list[httpx.AsyncClient], asyncio.Queue[int]]:
        """The clients (``POOL_SHARD`` connections each) and the queue of free concurrency slots."""
        if self._clients is None or self._slots is None:
            httpx = self._httpx
            n_clients = -(-self.concurrency // POOL_SHARD)
            limits = httpx.Limits(max_connections=POOL_SHARD, max_keepalive_connections=POOL_SHARD)
            # one verifying TLS context for every shard (httpx's default one, SSL_CERT_FILE /
            # SSL_CERT_DIR honoured): each client would otherwise load the CA bundle itself,
            # ~40 ms of CPU apiece, paid before the first request of a run goes out
            tls = httpx.create_ssl_context()
            self._clients = [
                httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s), limits=limits, verify=tls)
                for _ in range(n_clients)
            ]
            self._slots = asyncio.Queue()
            for slot in range(self.concurrency):
                self._slots.put_nowait(slot)
        return self._clients, self._slots

    async def _answer_all(
        self, requests: list[ModelRequest], method: str, headers: dict[str, str], key: str | None
    ) -> list[ModelResponse]:
        """Every request through :meth:`_answer_slot` at once (each waits for a free slot)."""
        return list(await asyncio.gather(*(self._answer_slot(r, method, headers, key) for r in requests)))

    async def _answer_slot(
        self, request: ModelRequest, method: str, headers: dict[str, str], key: str | None
    ) -> ModelResponse:
        """One request in a free concurrency slot ``s`` (client ``s // POOL_SHARD``: never more
        requests than a client's connections); a bug fails this request only."""
        clients, slots = self._pool()
        slot = await slots.get()
        try:
            return await self._answer_one(clients[slot // POOL_SHARD], request, method, headers, key)
        except Exception as exc:  # a bug must not cost the other items their answers
            error = self._redact(f"unexpected {type(exc).__name__}: {exc}", key)
            log.error("model %s, request %r: %s", self.name, request.key, error)
            return ModelResponse.failure(error, attempts=0)
        finally:
            slots.put_nowait(slot)

    def _build_body(self, request: ModelRequest, method: str) -> bytes:
        from tempcore.models.interleaved import openai_parts  # interleaved layouts (visual answer options)

        parts = openai_parts(
            request,
            lambda image: to_data_url(
                image, fmt=self.image_format, max_side=self.max_image_side, quality=self.jpeg_quality
            ),
        )
        messages: list[dict[str, Any]] = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.append({"role": "user", "content": parts})
        scoring = method == METHOD_OPTION_SCORES
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": 1 if scoring else (request.max_new_tokens or self.max_tokens),
            "temperature": self.temperature,
        }
        if self.request_logprobs and request.options:
            body["logprobs"] = True
            body["top_logprobs"] = self.top_logprobs
        body.update(self.extra_body)
        return json.dumps(body).encode("utf-8")

    async def _answer_one(
        self,
        client: httpx.AsyncClient,
        request: ModelRequest,
        method: str,
        headers: dict[str, str],
        key: str | None,
    ) -> ModelResponse:
        label = f"model {self.name}, request {request.key!r}"
        if self.max_frames is not None and len(request.images) > self.max_frames:
            return ModelResponse.failure(
                f"{len(request.images)} images exceed max_frames={self.max_frames}", attempts=0
            )
        if method == METHOD_OPTION_SCORES and not request.options:
            return ModelResponse.failure("option scoring needs options; the request has none", attempts=0)
        loop = asyncio.get_running_loop()
        try:
            body = await loop.run_in_executor(self._encoder, self._build_body, request, method)
        except Exception as exc:  # a frame PIL cannot encode: this item fails, the batch goes on
            return ModelResponse.failure(
                self._redact(f"could not encode the request: {type(exc).__name__}: {exc}", key), attempts=0
            )
        first_start = time.perf_counter()
        attempts = 0
        while True:
            attempts += 1
            start = time.perf_counter()
            outcome = await self._attempt(client, body, headers, len(request.options), key)
            latency = time.perf_counter() - start
            if outcome.error is None and outcome.text is not None:
                if outcome.text is not None:  # a server may echo the request (and its credentials)
                    redacted = self._redact(outcome.text, key)
                    if redacted != outcome.text:
                        outcome = dataclasses.replace(outcome, text=redacted)
                return self._finish(outcome, method, latency, attempts)
            error = self._redact(outcome.error or "unknown error", key)
            if not outcome.retryable or attempts > self.max_retries:
                if outcome.retryable:
                    error = f"{error} (gave up after {attempts} attempts)"
                log.info("%s failed after %d attempt(s): %s", label, attempts, error)
                return ModelResponse.failure(
                    error, latency_s=time.perf_counter() - first_start, attempts=attempts
                )
            if outcome.retry_after is not None:
                delay = min(outcome.retry_after, self.backoff_max_s)
            else:
                delay = backoff_delay(attempts, self.backoff_base_s, self.backoff_max_s, self._rng)
            log.debug("%s attempt %d failed (%s); retrying in %.3f s", label, attempts, error, delay)
            await asyncio.sleep(delay)

    def _finish(self, outcome: _Attempt, method: str, latency: float, attempts: int) -> ModelResponse:
        if method != METHOD_OPTION_SCORES:
            return ModelResponse(
                text=outcome.text,
                option_logprobs=outcome.option_logprobs,
                latency_s=latency,
                attempts=attempts,
            )
        if outcome.option_logprobs is None:
            why = (
                "no option letter among the top first-token log-probabilities"
                if outcome.had_logprobs
                else "the server returned no log-probabilities"
            )
            return ModelResponse.failure(
                f"option scoring unavailable: {why} (reply {outcome.text!r})",
                latency_s=latency,
                attempts=attempts,
            )
        scores = outcome.option_logprobs
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        return ModelResponse(text=LETTERS[best], option_logprobs=scores, latency_s=latency, attempts=attempts)

    async def _attempt(
        self,
        client: httpx.AsyncClient,
        body: bytes,
        headers: dict[str, str],
        n_options: int,
        key: str | None = None,
    ) -> _Attempt:
        httpx = self._httpx
        try:
            response = await asyncio.wait_for(
                client.post(self._url, content=body, headers=headers), self.timeout_s
            )
        except (asyncio.TimeoutError, httpx.TimeoutException) as exc:
            return _Attempt(
                error=f"timed out after {self.timeout_s:g} s ({type(exc).__name__})", retryable=True
            )
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            return _Attempt(error=f"connection failed: {type(exc).__name__}: {exc}", retryable=True)
        except httpx.HTTPError as exc:
            return _Attempt(error=f"request failed: {type(exc).__name__}: {exc}", retryable=False)
        status = response.status_code
        if 200 <= status < 300:
            try:
                text, option_lp, had_lp = parse_completion(
                    response.content, n_options, lambda body: self._redact(body, key)
                )
            except _BadCompletion as exc:
                return _Attempt(error=f"HTTP {status}: {exc}", retryable=exc.retryable)
            return _Attempt(text=text, option_logprobs=option_lp, had_logprobs=had_lp)
        retryable = status >= 500 or status in RETRYABLE_4XX
        return _Attempt(
            error=f"HTTP {status} {response.reason_phrase}: "
            f"{_error_message(response.content, lambda text: self._redact(text, key))}".rstrip(": "),
            retryable=retryable,
            retry_after=parse_retry_after(response.headers) if retryable else None,
        )


def _settle(future: concurrent.futures.Future[ModelResponse], task: asyncio.Task[ModelResponse]) -> None:
    """Copy a finished task's outcome to the future :meth:`OpenAIChatModel.submit` returned."""
    if task.cancelled():
        future.cancel()
        return
    if not future.set_running_or_notify_cancel():  # cancelled by the caller meanwhile
        return
    exc = task.exception()
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(task.result())


def _cancel_task(
    loop: asyncio.AbstractEventLoop, task: asyncio.Task[ModelResponse], future: concurrent.futures.Future[Any]
) -> None:
    """A cancelled future cancels its task (on the loop's thread; nothing to do once it is closed)."""
    if future.cancelled() and not task.done():
        try:
            loop.call_soon_threadsafe(task.cancel)
        except RuntimeError:
            pass


def _error_message(content: bytes, clean: Callable[[str], str] = lambda text: text) -> str:
    """The server's error message (OpenAI ``{"error": {"message": ...}}`` or the body's start),
    passed through ``clean`` (redaction) *before* it is cut to ``_ERROR_BODY_CHARS``, so a secret
    cut in half cannot slip past the redaction."""
    try:
        data = json.loads(content)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return clean(content.decode("utf-8", "replace")).strip()[:_ERROR_BODY_CHARS]
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return clean(error["message"])[:_ERROR_BODY_CHARS]
        if isinstance(error, str):
            return clean(error)[:_ERROR_BODY_CHARS]
        if isinstance(data.get("detail"), str):
            return clean(data["detail"])[:_ERROR_BODY_CHARS]
    return clean(json.dumps(data))[:_ERROR_BODY_CHARS]


def build_chat_body(
    model: OpenAIChatModel, request: ModelRequest, method: str = METHOD_GENERATE
) -> dict[str, Any]:
    """The JSON body ``model`` would send for ``request`` (for inspection and tests)."""
    body: dict[str, Any] = json.loads(model._build_body(request, method))
    return body


__all__ = [
    "IMAGE_FORMATS",
    "OpenAIChatModel",
    "backoff_delay",
    "build_chat_body",
    "mask_url",
    "option_logprobs_from_top",
    "parse_completion",
    "parse_retry_after",
]
