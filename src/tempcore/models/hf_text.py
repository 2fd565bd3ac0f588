"""A text-only LLM adapter (``AutoModelForCausalLM``) behind the same :class:`Model` interface.

Used for no-frame / language-prior probes (TempCore, Appendix C.4: text-only LLMs such as
Qwen2.5-7B, Llama-3.1-8B and Qwen3-8B answer the same questions with no visual input, a control
for benchmark contamination through video training). Images in a request are ignored: the
model sees only the rendered prompt, as a single user turn of the checkpoint's chat template
(with the generation prompt). Checkpoints without a chat template (base models) see the bare
prompt text followed by a newline. Template switches such as Qwen3's ``enable_thinking=False``
come from the spec's ``extra.chat_template_kwargs``.

Generation (batched greedy, left padding) and option scoring are those of
:mod:`tempcore.models._hf_common`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tempcore.models._hf_common import (
    HFAdapterBase,
    check_remote_code,
    read_config_dict,
    require_torch_transformers,
    resolve_device,
    resolve_dtype,
)
from tempcore.models.base import ModelError, ModelRequest, ModelSpec
from tempcore.models.specs import HFTextSpec, expect_spec


class HFTextModel(HFAdapterBase):
    """Any transformers causal LM checkpoint; images in requests are ignored."""

    spec_class: ClassVar[type[ModelSpec]] = HFTextSpec

    def __init__(self, spec: HFTextSpec) -> None:
        expect_spec(spec, HFTextSpec, "backend hf-text")
        super().__init__(spec)
        require_torch_transformers(f"model {spec.display_name} (backend hf-text)")
        from transformers import AutoModelForCausalLM, AutoTokenizer

        check_remote_code(spec, read_config_dict(spec))
        self.device = resolve_device(spec.device)
        self.dtype = resolve_dtype(spec.dtype, self.device)
        load = dict(revision=spec.revision, trust_remote_code=spec.trust_remote_code)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(spec.model, **load)
            model_kwargs: dict[str, Any] = dict(load, dtype=self.dtype, use_safetensors=True)
            for key in ("attn_implementation", "device_map"):
                if key in spec.extra:
                    model_kwargs[key] = spec.extra[key]
            model = AutoModelForCausalLM.from_pretrained(spec.model, **model_kwargs)
        except (OSError, ValueError) as exc:
            raise ModelError(f"model {spec.display_name}: cannot load {spec.model!r}: {exc}") from exc
        # transformers 5 types PreTrainedModel.to (a wrapped method) as if the model came first
        self.model = (model if "device_map" in spec.extra else model.to(self.device)).eval()  # type: ignore[arg-type, unused-ignore]
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.chat_template = spec.extra.get("chat_template") or getattr(self.tokenizer, "chat_template", None)

    def render(self, request: ModelRequest) -> str:
        if self.chat_template is None:
            prefix = f"{self.spec.system_prompt}\n\n" if self.spec.system_prompt else ""
            return f"{prefix}{request.prompt}\n"
        return super().render(request)

    def _group_key(self, request: ModelRequest) -> Any:
        return None  # images are ignored, so any requests batch together

    def _messages(self, request: ModelRequest) -> list[dict[str, Any]]:
        return [{"role": "user", "content": request.prompt}]

    def _encode(self, texts: list[str], requests: list[ModelRequest]) -> Any:
        # the chat template already holds the special tokens (BOS etc.); a base model's bare
        # prompt gets the tokenizer's usual ones
        return self.tokenizer(
            texts, padding=True, return_tensors="pt", add_special_tokens=self.chat_template is None
        )


__all__ = ["HFTextModel"]
