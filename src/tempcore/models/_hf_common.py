"""What the transformers adapters share: device / dtype choice, the remote-code gate, greedy
generation, option scoring, and batching with a per-item fallback.

Imported only by :mod:`tempcore.models.hf_vlm` and :mod:`tempcore.models.hf_text`; torch and
transformers are imported inside functions so this module stays cheap to import.

Option scoring (``method="option_scores"``)
-------------------------------------------
For a request with options ``o_0 .. o_{n-1}`` (letters ``A, B, ...``) the adapter renders the
chat exactly as for generation, ending with the assistant turn's start (the chat template's
generation prompt), and computes for each option the log-likelihood of a continuation

    c_i = spell(letter_i)                        (default)
    c_i = spell(letter_i) + ". " + o_i           (``score_option_text=True``)

    log p(c_i | prompt) = sum_t log softmax(logits_{t-1})[c_i[t]]

where ``spell`` is the letter spelling described below, normally ``sep + letter`` with ``sep``
``""`` when the rendered generation prompt ends in whitespace (Qwen /
LLaVA-OneVision / ChatML templates end in ``"assistant\\n"``) and ``" "`` otherwise
(Idefics3 / SmolVLM end in ``"Assistant:"`` and their models answer ``" B"``). The
continuation is tokenised on its own (``add_special_tokens=False``) and appended to the
prompt's ids, so no token merges across the boundary. The option text is not length-normalised
(sums of log-probabilities; options with longer texts are penalised -- the paper leaves this
open; letter scoring, the default, has no such bias). The answer is the argmax (first on ties).

Letter token ids
----------------
Tokenisers differ in how a letter is spelt as a token: byte-level BPE has both ``"A"`` and
``" A"``; SentencePiece tokenisers usually have ``"▁A"`` for either spelling. For each request
the adapter tries, in order, ``sep + L``, ``L`` and ``" " + L`` and uses the first spelling for
which *every* option letter encodes to exactly one token. When letters are single tokens, all
options share the prompt, so letter scoring needs one forward pass per request (batched across
requests) and the same numbers come for free from the first step of greedy generation
(``ModelResponse.option_logprobs`` alongside the text). When no spelling gives single tokens,
generation returns no option log-probabilities and option scoring runs one sequence per option.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tempcore.models._batching import run_with_fallback
from tempcore.models._images import to_pil
from tempcore.models.base import (
    METHOD_OPTION_SCORES,
    ModelConfigError,
    ModelError,
    ModelRequest,
    ModelResponse,
    RemoteCodeRefused,
    check_method,
)
from tempcore.models.specs import HFTextSpec
from tempcore.records import LETTERS

DTYPES = ("float32", "float16", "bfloat16")


def require_torch_transformers(what: str) -> None:
    """Raise :class:`MissingExtraError` unless torch and transformers import."""
    from tempcore.models.base import MissingExtraError

    for module in ("torch", "transformers"):
        try:
            __import__(module)
        except ImportError as exc:
            raise MissingExtraError(what, "hf", module) from exc


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` if available, else ``mps``, else ``cpu``; other values are kept."""
    import torch

    if device != "auto":
        try:
            torch.device(device)
        except (RuntimeError, TypeError) as exc:
            raise ModelConfigError(f"unknown torch device {device!r}") from exc
        return device
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def resolve_dtype(dtype: str, device: str) -> Any:
    """``auto`` -> bf16 on CUDA when supported (else fp16), fp16 on MPS, fp32 on CPU."""
    import torch

    if dtype == "auto":
        kind = torch.device(device).type
        if kind == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        if kind == "mps":
            return torch.float16
        return torch.float32
    if dtype not in DTYPES:
        raise ModelConfigError(f"unknown dtype {dtype!r}; choose auto or one of {DTYPES}")
    return getattr(torch, dtype)


def read_config_dict(spec: HFTextSpec) -> dict[str, Any]:
    """The checkpoint's ``config.json`` as a dict (local folder or hub cache), without building a config."""
    from transformers import PretrainedConfig

    from tempcore.models.hub import hub_problem

    problem = hub_problem(f"model {spec.display_name}", spec.model, spec.revision)
    if problem is not None:  # fail now, not after transformers' retries
        raise ModelError(problem)
    try:
        config, _ = PretrainedConfig.get_config_dict(spec.model, revision=spec.revision)
    except OSError as exc:
        raise ModelError(
            f"model {spec.display_name}: cannot read config.json of {spec.model!r}: {exc}"
        ) from exc
    return dict(config)


def check_remote_code(spec: HFTextSpec, config: dict[str, Any]) -> None:
    """Refuse a checkpoint whose architecture exists only as hub code unless the spec opts in.

    A checkpoint needs remote code when its ``config.json`` has an ``auto_map`` and its
    ``model_type`` is not one transformers knows. (Known types with an ``auto_map`` load the
    built-in class; remote code then runs only with the opt-in.)
    """
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    model_type = config.get("model_type")
    needs_code = bool(config.get("auto_map")) and model_type not in CONFIG_MAPPING
    if needs_code and not spec.trust_remote_code:
        raise RemoteCodeRefused(
            f"model {spec.display_name}: checkpoint {spec.model!r} (model_type={model_type!r}) runs code "
            "downloaded from its repository; refusing to load it. Review that code, then set "
            "trust_remote_code: true in the model spec to allow it."
        )


def greedy_generation_config(model: Any, max_new_tokens: int, extra: dict[str, Any]) -> Any:
    """A copy of the checkpoint's generation config forced to deterministic greedy decoding.

    Sampling knobs are cleared and ``do_sample=False`` / ``num_beams=1`` are forced; the
    checkpoint's other settings (e.g. ``repetition_penalty``, stop tokens) are kept, as a served
    model would apply them. ``extra`` (the spec's ``generation_kwargs``) is applied on top.
    """
    gen = copy.deepcopy(model.generation_config)
    gen.do_sample = False
    gen.num_beams = 1
    for name in ("temperature", "top_p", "top_k", "min_p", "typical_p"):
        if hasattr(gen, name):
            setattr(gen, name, None)
    for key, value in extra.items():
        setattr(gen, key, value)
    gen.max_new_tokens = max_new_tokens
    gen.do_sample = False
    gen.return_dict_in_generate = True
    gen.output_logits = True
    return gen


def resize_max_side(image: np.ndarray, max_side: int | None) -> Any:
    """A PIL image of ``image``, downscaled so its longer side is at most ``max_side``."""
    return to_pil(image, max_side)


# --- option scoring ------------------------------------------------------------------------


def separator(prompt_text: str) -> str:
    """``""`` after a generation prompt ending in whitespace, else ``" "`` (see module docstring)."""
    return "" if prompt_text[-1:].isspace() else " "


def letter_spelling(tokenizer: Any, n_options: int, prompt_text: str) -> tuple[str, list[int] | None]:
    """How option letters are spelt after this prompt, and their token ids when single tokens.

    Tries ``sep + L``, ``L`` and ``" " + L`` (see the module docstring) and returns the first
    format under which every option letter is one distinct token, with those ids; when none
    is, returns ``(sep + "{}", None)``.
    """
    letters = LETTERS[:n_options]
    sep = separator(prompt_text)
    for spelling in (sep + "{}", "{}", " {}"):
        ids = [tokenizer.encode(spelling.format(letter), add_special_tokens=False) for letter in letters]
        if letters and all(len(i) == 1 for i in ids) and len({i[0] for i in ids}) == n_options:
            return spelling, [i[0] for i in ids]
    return sep + "{}", None


def letter_token_ids(tokenizer: Any, n_options: int, prompt_text: str) -> list[int] | None:
    """One token id per option letter (see :func:`letter_spelling`), or None."""
    return letter_spelling(tokenizer, n_options, prompt_text)[1]


def continuations(tokenizer: Any, request: ModelRequest, prompt_text: str, with_text: bool) -> list[str]:
    """The scored continuation of each option: its letter as spelt by :func:`letter_spelling`,
    followed by ``". " + option text`` when ``with_text``."""
    spelling, _ = letter_spelling(tokenizer, len(request.options), prompt_text)
    return [
        spelling.format(letter) + (f". {text}" if with_text else "")
        for letter, text in zip(request.letters, request.options)
    ]


def gather_logprobs(logits: Any, ids: Sequence[int]) -> tuple[float, ...]:
    """log-softmax of one position's logits (float32) at ``ids``."""
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)
    return tuple(float(logp[i]) for i in ids)


def best_option(logprobs: Sequence[float]) -> int:
    """Index of the largest log-likelihood (the first one on ties)."""
    return int(np.argmax(np.asarray(logprobs, dtype=np.float64)))


# --- batching ------------------------------------------------------------------------------


@dataclass
class Prepared:
    """A request with its rendered chat text (or the reason it cannot run)."""

    request: ModelRequest
    text: str = ""
    error: str | None = None


class HFAdapterBase:
    """Generation and option scoring over a transformers causal LM (with or without images).

    Subclasses load ``self.model``, ``self.tokenizer`` and ``self.chat_template`` and implement
    :meth:`_messages` (the chat for one request) and :meth:`_encode` (model inputs for a
    batch of rendered texts, left-padded).
    """

    supports_option_scores = True

    def __init__(self, spec: HFTextSpec) -> None:
        self.spec = spec
        self.name = spec.display_name
        self.revision = spec.revision
        self.device = "cpu"
        self.dtype: Any = None
        self.model: Any = None
        self.tokenizer: Any = None
        self.chat_template: str | None = None
        self._chat_kwargs: dict[str, Any] = dict(spec.extra.get("chat_template_kwargs", {}))
        self._letter_cache: dict[tuple[int, str], list[int] | None] = {}

    @classmethod
    def from_spec(cls, spec: HFTextSpec) -> HFAdapterBase:
        return cls(spec)

    # -- subclass hooks --
    def _messages(self, request: ModelRequest) -> list[dict[str, Any]]:
        raise ModelError(f"{type(self).__name__} does not build messages")

    def _encode(self, texts: list[str], requests: list[ModelRequest]) -> Any:
        raise ModelError(f"{type(self).__name__} does not encode inputs")

    def _validate(self, request: ModelRequest) -> str | None:
        """Why this request cannot run (or None)."""
        return None

    def _group_key(self, request: ModelRequest) -> Any:
        """Requests with different keys never share a batch (VLMs: with vs without images)."""
        return bool(request.images)

    # -- shared --
    def render(self, request: ModelRequest) -> str:
        """The exact text the model is fed for ``request`` (chat template + generation prompt)."""
        messages = self._messages(request)
        if self.spec.system_prompt:
            messages = [{"role": "system", "content": self._system_content()}, *messages]
        prompt: str = self.tokenizer.apply_chat_template(
            messages,
            chat_template=self.chat_template,
            tokenize=False,
            add_generation_prompt=True,
            **self._chat_kwargs,
        )
        return prompt

    def _system_content(self) -> Any:
        return self.spec.system_prompt

    def answer(self, requests: Sequence[ModelRequest], *, method: str = "generate") -> list[ModelResponse]:
        """One response per request, in order; items that fail come back as error responses."""
        check_method(self, method)
        prepared: list[Prepared] = []
        for request in requests:
            reason = self._validate(request)
            if reason is None and method == METHOD_OPTION_SCORES and not request.options:
                reason = "option scoring needs the request's options"
            item = Prepared(request, error=reason)
            if reason is None:
                try:
                    item.text = self.render(request)
                except Exception as exc:  # noqa: BLE001 - a template error fails this item only
                    item.error = f"chat template: {type(exc).__name__}: {exc}"
            prepared.append(item)

        results: dict[int, ModelResponse] = {
            i: ModelResponse.failure(item.error) for i, item in enumerate(prepared) if item.error is not None
        }
        runnable = [i for i, item in enumerate(prepared) if item.error is None]
        groups: dict[Any, list[int]] = {}
        for i in runnable:
            groups.setdefault(self._group_key(prepared[i].request), []).append(i)
        run = self._score_batch if method == METHOD_OPTION_SCORES else self._generate_batch
        for indices in groups.values():
            results.update(
                run_with_fallback(
                    indices, lambda batch: run([prepared[i] for i in batch]), self.spec.batch_size
                )
            )
        return [results[i] for i in range(len(prepared))]

    def _letter_ids(self, n_options: int, prompt_text: str) -> list[int] | None:
        """:func:`letter_token_ids`, cached per (number of options, separator)."""
        key = (n_options, separator(prompt_text))
        if key not in self._letter_cache:
            self._letter_cache[key] = letter_token_ids(self.tokenizer, n_options, prompt_text)
        return self._letter_cache[key]

    def inputs_for(self, requests: Sequence[ModelRequest]) -> Any:
        """The model inputs (token ids, pixel values, ...) a batch of requests is turned into."""
        return self._inputs([Prepared(r, self.render(r)) for r in requests])

    def _inputs(self, items: list[Prepared]) -> Any:
        inputs = self._encode([item.text for item in items], [item.request for item in items])
        return _to(inputs, self.device, self.dtype)

    def _generate_batch(self, items: list[Prepared]) -> list[ModelResponse]:
        import torch

        start = time.perf_counter()
        limits = [item.request.max_new_tokens or self.spec.max_new_tokens for item in items]
        inputs = self._inputs(items)
        gen = greedy_generation_config(self.model, max(limits), dict(self.spec.generation_kwargs))
        if gen.pad_token_id is None:
            gen.pad_token_id = self.tokenizer.pad_token_id
        with torch.inference_mode():
            out = self.model.generate(**inputs, generation_config=gen)
        prompt_len = inputs["input_ids"].shape[1]
        new_tokens = out.sequences[:, prompt_len:]
        first_logits = out.logits[0] if out.logits else None
        latency = (time.perf_counter() - start) / len(items)
        responses = []
        for row, (item, limit) in enumerate(zip(items, limits)):
            # greedy decoding is prefix-consistent: the first `limit` tokens are what a
            # generation limited to `limit` tokens would have produced
            text = self.tokenizer.decode(new_tokens[row, :limit], skip_special_tokens=True).strip()
            letter_ids = self._letter_ids(len(item.request.options), item.text)
            logprobs = (
                gather_logprobs(first_logits[row], letter_ids)
                if letter_ids is not None and first_logits is not None
                else None
            )
            responses.append(ModelResponse(text=text, option_logprobs=logprobs, latency_s=latency))
        return responses

    def _score_batch(self, items: list[Prepared]) -> list[ModelResponse]:
        import torch

        start = time.perf_counter()
        with_text = self.spec.score_option_text
        letter_ids = [
            None if with_text else self._letter_ids(len(item.request.options), item.text) for item in items
        ]
        scores: list[tuple[float, ...] | None] = [None] * len(items)
        single = [row for row, ids in enumerate(letter_ids) if ids is not None]
        if single:
            inputs = self._inputs([items[row] for row in single])
            with torch.inference_mode():
                logits = self._forward_logits(inputs, keep=1)[:, -1, :]
            for k, row in enumerate(single):
                scores[row] = gather_logprobs(logits[k], letter_ids[row])  # type: ignore[arg-type]
        for row, item in enumerate(items):
            if scores[row] is None:
                scores[row] = self._score_sequences(item, with_text)
        latency = (time.perf_counter() - start) / len(items)
        responses = []
        for item, logprobs in zip(items, scores):
            assert logprobs is not None
            if not all(math.isfinite(x) for x in logprobs):
                responses.append(ModelResponse.failure("option scores are not finite", latency_s=latency))
                continue
            letter = item.request.letters[best_option(logprobs)]
            responses.append(ModelResponse(text=letter, option_logprobs=logprobs, latency_s=latency))
        return responses

    def _score_sequences(self, item: Prepared, with_text: bool) -> tuple[float, ...]:
        """Sum of continuation log-probs, one sequence per option (prompt repeated, images repeated)."""
        import torch

        conts = [
            self.tokenizer.encode(c, add_special_tokens=False)
            for c in continuations(self.tokenizer, item.request, item.text, with_text)
        ]
        if any(len(c) == 0 for c in conts):
            raise ModelError(f"request {item.request.key!r}: an option's continuation encodes to no tokens")
        n = len(conts)
        inputs = self._inputs([item] * n)
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        width = max(len(c) for c in conts)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        extra_ids = torch.full((n, width), pad, dtype=ids.dtype, device=ids.device)
        extra_mask = torch.zeros((n, width), dtype=mask.dtype, device=mask.device)
        for row, cont in enumerate(conts):
            extra_ids[row, : len(cont)] = torch.tensor(cont, dtype=ids.dtype)
            extra_mask[row, : len(cont)] = 1
        inputs["input_ids"] = torch.cat([ids, extra_ids], dim=1)
        inputs["attention_mask"] = torch.cat([mask, extra_mask], dim=1)
        for key in ("mm_token_type_ids", "token_type_ids"):
            if key in inputs:
                inputs[key] = torch.cat([inputs[key], torch.zeros_like(extra_ids)], dim=1)
        with torch.inference_mode():
            logits = self._forward_logits(inputs, keep=width + 1)  # positions prompt_end-1 .. end
        logp = torch.log_softmax(logits.float(), dim=-1)
        totals = []
        for row, cont in enumerate(conts):
            totals.append(float(sum(logp[row, t, tok] for t, tok in enumerate(cont))))
        return tuple(totals)

    def _forward_logits(self, inputs: Any, keep: int) -> Any:
        """Logits of the last ``keep`` positions (computed only there when the model allows it)."""
        import inspect

        if "logits_to_keep" in inspect.signature(self.model.forward).parameters:
            return self.model(**inputs, logits_to_keep=keep, use_cache=False).logits
        return self.model(**inputs, use_cache=False).logits[:, -keep:, :]

    def close(self) -> None:
        """Drop the weights (and free accelerator memory)."""
        self.model = None
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, device={self.device!r}, dtype={self.dtype})"


def _to(inputs: Any, device: str, dtype: Any) -> Any:
    """Move a BatchFeature / BatchEncoding to ``device``; floating tensors to ``dtype``."""
    import torch

    for key, value in list(inputs.items()):
        if isinstance(value, torch.Tensor):
            inputs[key] = (
                value.to(device=device, dtype=dtype) if value.is_floating_point() else value.to(device)
            )
    return inputs
