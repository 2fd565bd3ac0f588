"""vLLM offline engine behind the :class:`Model` interface (optional extra ``tempcore[vllm]``).

vLLM is CUDA-only and is imported when the model is built, never at import time; without it,
building the model raises :class:`MissingExtraError` naming the ``vllm`` extra. It cannot run on
CPU-only machines, and tempcore's test suite does not run it; the OpenAI-compatible HTTP backend
(``backend: openai``) against ``vllm serve`` is the tested route to vLLM.

Each request becomes one chat (``LLM.chat``) with one ``image_url`` entry per frame (PNG data
URLs, in the order shown) followed by the prompt text; the whole batch goes to the engine at
once, greedy (``SamplingParams(temperature=0, max_tokens=...)``). The first generated token's
top-``logprobs`` (20 by default, ``extra.logprobs``) give ``option_logprobs`` when every option
letter is among them (a token counts for a letter when its text, stripped, is the letter; the
larger of ``"A"`` / ``" A"`` is taken); otherwise ``option_logprobs`` is None. Option scoring
(``method="option_scores"``) is not offered by this backend.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

from tempcore.models._batching import run_with_fallback
from tempcore.models._images import to_data_url
from tempcore.models.base import (
    MissingExtraError,
    ModelRequest,
    ModelResponse,
    ModelSpec,
    check_method,
)
from tempcore.models.specs import VLLMSpec, expect_spec


def letter_logprobs(first_token: dict[Any, Any] | None, letters: Sequence[str]) -> tuple[float, ...] | None:
    """Per-letter log-probability from one position's top-k ``{token_id: Logprob}`` (or None)."""
    if not first_token or not letters:
        return None
    best: dict[str, float] = {}
    for entry in first_token.values():
        text = (getattr(entry, "decoded_token", None) or "").strip()
        if text in letters:
            best[text] = max(best.get(text, float("-inf")), float(entry.logprob))
    if len(best) != len(letters):
        return None
    return tuple(best[letter] for letter in letters)


class VLLMOfflineModel:
    """A vLLM ``LLM`` engine answering requests in batches (greedy)."""

    supports_option_scores = False

    spec_class: ClassVar[type[ModelSpec]] = VLLMSpec

    def __init__(self, spec: VLLMSpec) -> None:
        expect_spec(spec, VLLMSpec, "backend vllm")
        try:
            import vllm
        except ImportError as exc:
            raise MissingExtraError(f"model {spec.display_name} (backend vllm)", "vllm", "vllm") from exc
        self.spec = spec
        self.name = spec.display_name
        self.revision = spec.revision
        self._vllm = vllm
        engine_kwargs: dict[str, Any] = dict(spec.extra.get("engine_kwargs", {}))
        engine_kwargs.setdefault("limit_mm_per_prompt", {"image": spec.max_frames or 32})
        self._logprobs = int(spec.extra.get("logprobs", 20))
        self.llm: Any = vllm.LLM(
            model=spec.model,
            revision=spec.revision,
            trust_remote_code=spec.trust_remote_code,
            dtype="auto" if spec.dtype == "auto" else spec.dtype,
            **engine_kwargs,
        )

    @classmethod
    def from_spec(cls, spec: VLLMSpec) -> VLLMOfflineModel:
        return cls(spec)

    def _conversation(self, request: ModelRequest) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = [
            {"type": "image_url", "image_url": {"url": to_data_url(im, max_side=self.spec.max_image_side)}}
            for im in request.images
        ]
        content.append({"type": "text", "text": request.prompt})
        messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
        if self.spec.system_prompt:
            messages.insert(0, {"role": "system", "content": self.spec.system_prompt})
        return messages

    def _run(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        start = time.perf_counter()
        params = [
            self._vllm.SamplingParams(
                temperature=0.0,
                max_tokens=r.max_new_tokens or self.spec.max_new_tokens,
                logprobs=self._logprobs,
                **dict(self.spec.generation_kwargs),
            )
            for r in requests
        ]
        outputs = self.llm.chat(
            [self._conversation(r) for r in requests],
            params,
            use_tqdm=False,
            chat_template_kwargs=dict(self.spec.extra.get("chat_template_kwargs", {})) or None,
        )
        latency = (time.perf_counter() - start) / len(requests)
        responses = []
        for request, output in zip(requests, outputs):
            completion = output.outputs[0]
            first = completion.logprobs[0] if completion.logprobs else None
            responses.append(
                ModelResponse(
                    text=completion.text.strip(),
                    option_logprobs=letter_logprobs(first, request.letters),
                    latency_s=latency,
                )
            )
        return responses

    def answer(self, requests: Sequence[ModelRequest], *, method: str = "generate") -> list[ModelResponse]:
        check_method(self, method)
        results: dict[int, ModelResponse] = {}
        runnable = []
        for i, request in enumerate(requests):
            if self.spec.max_frames is not None and len(request.images) > self.spec.max_frames:
                results[i] = ModelResponse.failure(
                    f"request {request.key!r}: {len(request.images)} images exceed max_frames={self.spec.max_frames}"
                )
            else:
                runnable.append(i)
        results.update(
            run_with_fallback(
                runnable, lambda batch: self._run([requests[i] for i in batch]), self.spec.batch_size
            )
        )
        return [results[i] for i in range(len(requests))]

    def close(self) -> None:
        self.llm = None


__all__ = ["VLLMOfflineModel", "letter_logprobs"]
