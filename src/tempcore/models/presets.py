"""Named model presets: the TempCore paper's panel and the text-only probes, with hub ids and quirks.

What the paper (``shared/papers/000``: TempCore) states, and therefore what ``in_paper`` means:

* Eight open VLMs from five families, 256M to 8B parameters, all given K=32 frames,
  zero-shot multiple choice (Section 4.1, Table 5). The text names LLaVA-OV-0.5B and
  LLaVA-OV-7B (Table 12), VideoLLaMA3-2B (Table 20), Qwen3-VL-8B-Instruct (Table 16), and the
  families SmolVLM2 and InternVL3. Table 5 cites SmolVLM2 in three rows; SmolVLM2 exists in
  exactly three sizes (256M, 500M, 2.2B), so we list those three (``in_paper="inferred"``).
  The InternVL3 size is not stated in the text we have; ``internvl3-8b`` is our assumption
  (``in_paper="family"``).
* Three text-only LLMs for the contamination probe (Appendix C.4, Table 15): Qwen2.5-7B,
  Llama-3.1-8B, Qwen3-8B. The paper does not say base or instruct; we use the instruct /
  chat checkpoints (Qwen3-8B is a single hybrid checkpoint; thinking is switched off).

Quirks below (frame token budgets, image sizes) are *our* defaults for feeding 32 frames as
separate images, not settings reported by the paper; override any field per run.
Remote-code checkpoints (VideoLLaMA3) are refused unless the spec sets ``trust_remote_code``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tempcore.models.base import ModelConfigError, ModelSpec, RemoteCodeRefused
from tempcore.registry import GROUPS, Registry, did_you_mean


@dataclass(frozen=True)
class Preset:
    """A named starting point for a :class:`ModelSpec`.

    in_paper: ``"yes"`` (named in the paper's text), ``"inferred"`` (implied, see module
    docstring), ``"family"`` (the family is in the panel, the size is our choice) or ``"no"``.
    """

    name: str
    backend: str
    model: str
    family: str
    params: str
    in_paper: str
    requires_remote_code: bool = False
    max_frames: int | None = None
    image_size: Mapping[str, int] | None = None
    max_image_side: int | None = None
    prompt_template: str = "default"
    generation_kwargs: Mapping[str, Any] = field(default_factory=dict)
    processor_kwargs: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    notes: str = ""

    def spec(self, **overrides: Any) -> ModelSpec:
        """The :class:`ModelSpec` of this preset with ``overrides`` applied.

        Raises :class:`RemoteCodeRefused` for a remote-code checkpoint unless
        ``trust_remote_code=True`` is among the overrides.
        """
        if self.requires_remote_code and not overrides.get("trust_remote_code", False):
            raise RemoteCodeRefused(
                f"preset {self.name!r} ({self.model}) runs code from its hub repository; review it and "
                "set trust_remote_code: true in the model spec to load it"
            )
        base: dict[str, Any] = dict(
            backend=self.backend,
            model=self.model,
            name=self.name,
            preset=self.name,
            max_frames=self.max_frames,
            image_size=dict(self.image_size) if self.image_size else None,
            max_image_side=self.max_image_side,
            prompt_template=self.prompt_template,
            generation_kwargs=dict(self.generation_kwargs),
            processor_kwargs=dict(self.processor_kwargs),
            extra=dict(self.extra),
        )
        for key in ("generation_kwargs", "processor_kwargs", "extra"):
            if key in overrides:
                base[key] = {**base[key], **dict(overrides.pop(key) or {})}
        from tempcore.models.registry import spec_class

        keys = spec_class(str(overrides.get("backend", self.backend))).spec_keys()
        for key in [k for k in base if k not in keys]:  # a key this backend's spec lacks, left unset
            if base[key] in (None, {}):
                del base[key]
        base.update(overrides)
        try:
            return ModelSpec.from_dict(base)
        except TypeError as exc:
            raise ModelConfigError(f"preset {self.name!r}: {exc}") from exc


_SMOLVLM_NOTE = (
    "Idefics3-style processor: with image splitting each frame becomes up to 17 sub-images; "
    "do_image_splitting=False keeps one sub-image (image_seq_len tokens) per frame."
)
_QWEN3_NOTE = (
    "Qwen3-VL tokens per image = pixels / (32*32); image_size caps a frame at 448x448 pixels (196 tokens)."
)
_INTERNVL_NOTE = "HF-format InternVL3; crop_to_patches=False gives one 448px tile (256 tokens) per frame."
_LLAVA_NOTE = (
    "LLaVA-OneVision's processor applies anyres to every image; frames as images cost far more "
    "tokens than its video path. max_image_side=384 makes anyres choose its smallest grid "
    "(the base image plus one 384px tile per frame)."
)
_VL3_NOTE = (
    "Remote code (AutoModelForCausalLM + its own processor API). The generic image-text "
    "adapter is not verified against it; serving it behind an OpenAI-compatible endpoint is the "
    "tested route."
)

def _unknown_preset(name: str, known: list[str]) -> ModelConfigError:
    return ModelConfigError(
        f"unknown model preset {name!r}{did_you_mean(name, known)} (known: {', '.join(PRESETS)})"
    )


def _check_preset(name: str, preset: Any) -> None:
    if preset.name != name:
        raise ModelConfigError(f"model preset {name!r} is registered under another name than its own ({preset.name!r})")


PRESETS: Registry[Preset] = Registry(
    "model preset", group=GROUPS["presets"], base=Preset, check=_check_preset, unknown=_unknown_preset,
    error=ModelConfigError,
)
"""Preset name -> :class:`Preset` (add one with :func:`register_preset` or the ``tempcore.presets``
entry-point group, whose entries name a Preset object)."""


def register_preset(preset: Preset, *, overwrite: bool = False) -> Preset:
    """Add ``preset`` under its name (the same preset again is a no-op; another needs ``overwrite``)."""
    return PRESETS.register(preset.name, preset, replace=overwrite)


for _preset in [
    Preset(
        "llava-ov-0.5b",
        "hf",
        "llava-hf/llava-onevision-qwen2-0.5b-ov-hf",
        "llava_onevision",
        "0.5B",
        "yes",
        max_image_side=384,
        notes=_LLAVA_NOTE,
    ),
    Preset(
        "llava-ov-7b",
        "hf",
        "llava-hf/llava-onevision-qwen2-7b-ov-hf",
        "llava_onevision",
        "7B",
        "yes",
        max_image_side=384,
        notes=_LLAVA_NOTE,
    ),
    Preset(
        "smolvlm2-256m",
        "hf",
        "HuggingFaceTB/SmolVLM2-256M-Video-Instruct",
        "smolvlm",
        "256M",
        "inferred",
        processor_kwargs={"do_image_splitting": False},
        notes=_SMOLVLM_NOTE,
    ),
    Preset(
        "smolvlm2-500m",
        "hf",
        "HuggingFaceTB/SmolVLM2-500M-Video-Instruct",
        "smolvlm",
        "500M",
        "inferred",
        processor_kwargs={"do_image_splitting": False},
        notes=_SMOLVLM_NOTE,
    ),
    Preset(
        "smolvlm2-2.2b",
        "hf",
        "HuggingFaceTB/SmolVLM2-2.2B-Instruct",
        "smolvlm",
        "2.2B",
        "inferred",
        processor_kwargs={"do_image_splitting": False},
        notes=_SMOLVLM_NOTE,
    ),
    Preset(
        "qwen3-vl-2b",
        "hf",
        "Qwen/Qwen3-VL-2B-Instruct",
        "qwen3_vl",
        "2B",
        "no",
        image_size={"longest_edge": 448 * 448},
        notes=_QWEN3_NOTE,
    ),
    Preset(
        "qwen3-vl-4b",
        "hf",
        "Qwen/Qwen3-VL-4B-Instruct",
        "qwen3_vl",
        "4B",
        "no",
        image_size={"longest_edge": 448 * 448},
        notes=_QWEN3_NOTE,
    ),
    Preset(
        "qwen3-vl-8b",
        "hf",
        "Qwen/Qwen3-VL-8B-Instruct",
        "qwen3_vl",
        "8B",
        "yes",
        image_size={"longest_edge": 448 * 448},
        notes=_QWEN3_NOTE,
    ),
    Preset(
        "internvl3-2b",
        "hf",
        "OpenGVLab/InternVL3-2B-hf",
        "internvl",
        "2B",
        "family",
        processor_kwargs={"crop_to_patches": False},
        notes=_INTERNVL_NOTE,
    ),
    Preset(
        "internvl3-8b",
        "hf",
        "OpenGVLab/InternVL3-8B-hf",
        "internvl",
        "8B",
        "family",
        processor_kwargs={"crop_to_patches": False},
        notes=_INTERNVL_NOTE,
    ),
    Preset(
        "videollama3-2b",
        "hf",
        "DAMO-NLP-SG/VideoLLaMA3-2B",
        "videollama3",
        "2B",
        "yes",
        requires_remote_code=True,
        extra={"model_class": "AutoModelForCausalLM"},
        notes=_VL3_NOTE,
    ),
    Preset(
        "videollama3-7b",
        "hf",
        "DAMO-NLP-SG/VideoLLaMA3-7B",
        "videollama3",
        "7B",
        "no",
        requires_remote_code=True,
        extra={"model_class": "AutoModelForCausalLM"},
        notes=_VL3_NOTE,
    ),
    # text-only LLMs for the no-frame / contamination probe (Appendix C.4)
    Preset(
        "qwen2.5-7b-text",
        "hf-text",
        "Qwen/Qwen2.5-7B-Instruct",
        "qwen2",
        "7B",
        "yes",
        notes="The paper says 'Qwen2.5-7B'; we use the instruct checkpoint.",
    ),
    Preset(
        "llama-3.1-8b-text",
        "hf-text",
        "meta-llama/Llama-3.1-8B-Instruct",
        "llama",
        "8B",
        "yes",
        notes="Gated on the hub. The paper says 'Llama-3.1-8B'; we use the instruct checkpoint.",
    ),
    Preset(
        "qwen3-8b-text",
        "hf-text",
        "Qwen/Qwen3-8B",
        "qwen3",
        "8B",
        "yes",
        extra={"chat_template_kwargs": {"enable_thinking": False}},
        notes="Hybrid thinking model: thinking is switched off so the answer comes first.",
    ),
]:
    register_preset(_preset)

#: The paper's eight-VLM panel (see the module docstring for what is verified).
PAPER_PANEL: tuple[str, ...] = (
    "llava-ov-0.5b",
    "llava-ov-7b",
    "videollama3-2b",
    "smolvlm2-256m",
    "smolvlm2-500m",
    "smolvlm2-2.2b",
    "qwen3-vl-8b",
    "internvl3-8b",
)

#: The text-only LLMs of the contamination probe (Appendix C.4).
TEXT_PROBES: tuple[str, ...] = ("qwen2.5-7b-text", "llama-3.1-8b-text", "qwen3-8b-text")


def get_preset(name: str) -> Preset:
    """The preset called ``name`` (with a suggestion for a near miss)."""
    return PRESETS.get(name)  # type: ignore[no-any-return]


def preset_spec(name: str, **overrides: Any) -> ModelSpec:
    """``get_preset(name).spec(**overrides)``."""
    return get_preset(name).spec(**overrides)


__all__ = ["PAPER_PANEL", "PRESETS", "TEXT_PROBES", "Preset", "get_preset", "preset_spec", "register_preset"]
