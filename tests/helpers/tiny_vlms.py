"""Tiny random-weight models of the real VLM architectures (and a tiny text-only causal LM).

Each builder writes a complete checkpoint folder (config + safetensors weights + tokenizer +
processor + chat template) with ``save_pretrained``, so tests load it exactly as a user's hub
checkpoint is loaded (``ModelSpec(backend="hf", model=str(folder))``). Weights are random and
seeded, so answers are gibberish but deterministic. Every model is well under 1 MB.

Recipes follow ``shared/notes/tiny-models.md`` (transformers 5.x, torch CPU, no torchvision):
processors that declare a video processor are built through a subclass without it.

Reusable by other tests: ``build_tiny_vlm(family, folder)`` / ``build_tiny_text_lm(folder)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tempcore.models.hf_vlm import without_video_processor

CORPUS = [
    "What happens in the video? Answer with the option's letter from the given choices directly.",
    "A. a man walks to the door B. a dog runs in the park C. a car stops at the light D. a cat sleeps",
    "The answer is B. Answer: C. (D) the person opens the box",
    "Question: Which event happens first in the clip? Options: (A) red (B) green (C) blue (D) yellow",
    "Select the best answer to the following multiple-choice question based on the video.",
    "system user assistant You are a helpful assistant.",
]

FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "idefics3", "smolvlm", "llava_onevision")

# --- tokenizers ---------------------------------------------------------------------------


def _train_bpe(vocab_size: int = 320) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(CORPUS * 10, trainer)
    return tok


def _bpe_vocab_merges() -> tuple[dict[str, int], list[tuple[str, str]]]:
    tok = _train_bpe()
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return dict(model["vocab"]), merges  # type: ignore[return-value]


def qwen_tokenizer(extra_special: tuple[str, ...] = ()) -> Any:
    """A Qwen2Tokenizer over a small trained BPE, with the Qwen chat / vision special tokens."""
    from transformers import Qwen2Tokenizer

    vocab, merges = _bpe_vocab_merges()
    vocab = {"<|endoftext|>": len(vocab), **vocab} if "<|endoftext|>" not in vocab else vocab
    tok = Qwen2Tokenizer(vocab=vocab, merges=merges)
    specials = [
        "<|im_start|>",
        "<|im_end|>",
        "<|vision_start|>",
        "<|vision_end|>",
        "<|image_pad|>",
        "<|video_pad|>",
    ]
    tok.add_special_tokens({"additional_special_tokens": [*specials, *extra_special]})
    return tok


def fast_tokenizer(special: list[str], *, bos: str | None, eos: str, pad: str) -> Any:
    """A generic PreTrainedTokenizerFast over the trained BPE with the given special tokens."""
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_object=_train_bpe())
    names = {"eos_token": eos, "pad_token": pad}
    if bos:
        names["bos_token"] = bos
    tok.add_special_tokens(names)
    tok.add_special_tokens({"additional_special_tokens": special})
    return tok


# --- chat templates (the real checkpoints ship their own; these follow their shape) -------

QWEN_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

IDEFICS3_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)

LLAVA_OV_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' %}<image>\n"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


# --- text side shared by every family ----------------------------------------------------

TEXT = dict(
    hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2
)


def _save(model: Any, processor: Any, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    processor.save_pretrained(folder)
    return folder


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def build_qwen_vl(folder: Path, version: str = "2", seed: int = 0) -> Path:
    """Qwen2-VL (``version="2"``), Qwen2.5-VL (``"2.5"``) or Qwen3-VL (``"3"``)."""
    import transformers as tf

    tok = qwen_tokenizer()
    ids = {
        t: tok.convert_tokens_to_ids(t)
        for t in ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>")
    }
    common = dict(
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    text = dict(
        TEXT,
        vocab_size=len(tok),
        max_position_embeddings=2048,
        bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tok.pad_token_id,
    )
    patch = 14
    if version == "2":
        rope = {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [2, 3, 3]}
        config = tf.Qwen2VLConfig(
            text_config=dict(text, rope_parameters=rope),
            vision_config=dict(
                depth=1, embed_dim=32, hidden_size=64, num_heads=2, mlp_ratio=2, patch_size=patch
            ),
            **common,
        )
        model_cls, proc_cls = tf.Qwen2VLForConditionalGeneration, tf.Qwen2VLProcessor
    elif version == "2.5":
        rope = {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [2, 3, 3]}
        config = tf.Qwen2_5_VLConfig(
            text_config=dict(text, rope_parameters=rope),
            vision_config=dict(
                depth=1,
                hidden_size=32,
                intermediate_size=64,
                num_heads=2,
                out_hidden_size=64,
                patch_size=patch,
                window_size=56,
                fullatt_block_indexes=[0],
            ),
            **common,
        )
        model_cls, proc_cls = tf.Qwen2_5_VLForConditionalGeneration, tf.Qwen2_5_VLProcessor
    elif version == "3":
        patch = 16
        rope = {
            "rope_type": "default",
            "rope_theta": 1e4,
            "mrope_section": [2, 3, 3],
            "mrope_interleaved": True,
        }
        config = tf.Qwen3VLConfig(
            text_config=dict(text, head_dim=16, rope_parameters=rope),
            vision_config=dict(
                depth=2,
                hidden_size=32,
                intermediate_size=64,
                num_heads=2,
                out_hidden_size=64,
                patch_size=patch,
                num_position_embeddings=16,
                deepstack_visual_indexes=[1],
            ),
            **common,
        )
        model_cls, proc_cls = tf.Qwen3VLForConditionalGeneration, tf.Qwen3VLProcessor
    else:
        raise ValueError(f"unknown Qwen-VL version {version!r}")
    side = patch * 4
    image_processor = tf.Qwen2VLImageProcessor(
        size={"shortest_edge": side * side, "longest_edge": side * side}, patch_size=patch
    )
    _seed(seed)
    model = model_cls(config).eval()
    processor = without_video_processor(proc_cls)(
        image_processor=image_processor, tokenizer=tok, chat_template=QWEN_TEMPLATE
    )
    return _save(model, processor, folder)


IDEFICS_SPECIALS = [
    "<fake_token_around_image>",
    "<image>",
    "<global-img>",
    "<end_of_utterance>",
    "<|im_start|>",
    *[f"<row_{r}_col_{c}>" for r in range(1, 5) for c in range(1, 5)],
]


def build_idefics3(folder: Path, smolvlm2: bool = False, seed: int = 0) -> Path:
    """Idefics3 (SmolVLM-256M/500M architecture) or, with ``smolvlm2=True``, SmolVLM2."""
    import transformers as tf

    tok = fast_tokenizer(IDEFICS_SPECIALS, bos="<|im_start|>", eos="<end_of_utterance>", pad="<|endoftext|>")
    text = dict(
        TEXT,
        vocab_size=len(tok),
        max_position_embeddings=2048,
        model_type="llama",
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    vision = dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=32,
        patch_size=8,
    )
    image_kwargs = dict(
        size={"longest_edge": 64}, max_image_size={"longest_edge": 32}, do_image_splitting=True
    )
    cfg_cls, model_cls, proc_cls, improc_cls = (
        (tf.SmolVLMConfig, tf.SmolVLMForConditionalGeneration, tf.SmolVLMProcessor, tf.SmolVLMImageProcessor)
        if smolvlm2
        else (
            tf.Idefics3Config,
            tf.Idefics3ForConditionalGeneration,
            tf.Idefics3Processor,
            tf.Idefics3ImageProcessor,
        )
    )
    config = cfg_cls(
        text_config=text,
        vision_config=vision,
        scale_factor=2,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        pad_token_id=tok.pad_token_id,
    )
    _seed(seed)
    model = model_cls(config).eval()
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    processor_cls = without_video_processor(proc_cls) if smolvlm2 else proc_cls
    extra: dict[str, Any] = {"video_processor": None} if smolvlm2 else {}
    processor = processor_cls(
        image_processor=improc_cls(**image_kwargs),
        tokenizer=tok,
        image_seq_len=4,
        chat_template=IDEFICS3_TEMPLATE,
        **extra,
    )
    return _save(model, processor, folder)


def build_llava_onevision(folder: Path, seed: int = 0) -> Path:
    """LLaVA-OneVision (SigLIP vision tower + Qwen2 text side, anyres image grids)."""
    import transformers as tf

    tok = qwen_tokenizer(extra_special=("<image>", "<video>"))
    text = dict(
        TEXT,
        model_type="qwen2",
        vocab_size=len(tok),
        max_position_embeddings=4096,
        bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tok.pad_token_id,
    )
    pinpoints = [[32, 32], [32, 64], [64, 32], [64, 64]]
    vision = dict(
        model_type="siglip_vision_model",
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=32,
        patch_size=8,
    )
    config = tf.LlavaOnevisionConfig(
        text_config=text,
        vision_config=vision,
        image_grid_pinpoints=pinpoints,
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        video_token_index=tok.convert_tokens_to_ids("<video>"),
        vision_feature_layer=-1,
        vision_aspect_ratio="anyres_max_9",
    )
    _seed(seed)
    model = tf.LlavaOnevisionForConditionalGeneration(config).eval()
    image_processor = tf.LlavaOnevisionImageProcessor(
        size={"height": 32, "width": 32},
        crop_size={"height": 32, "width": 32},
        image_grid_pinpoints=pinpoints,
    )
    processor = without_video_processor(tf.LlavaOnevisionProcessor)(
        image_processor=image_processor,
        tokenizer=tok,
        num_image_tokens=16,
        vision_feature_select_strategy="full",
        chat_template=LLAVA_OV_TEMPLATE,
    )
    return _save(model, processor, folder)


def build_tiny_vlm(family: str, folder: Path, seed: int = 0) -> Path:
    """Build the tiny checkpoint of ``family`` (one of :data:`FAMILIES`) into ``folder``."""
    builders: dict[str, Callable[[], Path]] = {
        "qwen2_vl": lambda: build_qwen_vl(folder, "2", seed),
        "qwen2_5_vl": lambda: build_qwen_vl(folder, "2.5", seed),
        "qwen3_vl": lambda: build_qwen_vl(folder, "3", seed),
        "idefics3": lambda: build_idefics3(folder, smolvlm2=False, seed=seed),
        "smolvlm": lambda: build_idefics3(folder, smolvlm2=True, seed=seed),
        "llava_onevision": lambda: build_llava_onevision(folder, seed),
    }
    if family not in builders:
        raise ValueError(f"unknown tiny VLM family {family!r}; choose from {FAMILIES}")
    return builders[family]()


CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tiny_text_lm(folder: Path, *, chat_template: bool = True, seed: int = 0) -> Path:
    """A tiny Qwen2 causal LM (text only), with a ChatML chat template unless ``chat_template=False``."""
    import transformers as tf

    tok = qwen_tokenizer()
    if chat_template:
        tok.chat_template = CHATML_TEMPLATE
    config = tf.Qwen2Config(
        **TEXT,
        vocab_size=len(tok),
        max_position_embeddings=1024,
        bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tok.pad_token_id,
    )
    _seed(seed)
    model = tf.Qwen2ForCausalLM(config).eval()
    return _save(model, tok, folder)
