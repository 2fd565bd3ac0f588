"""Tiny random-weight checkpoints of real architectures, built offline (``tempcore tiny-checkpoints``).

Each builder writes a folder laid out like a hub checkpoint (``config.json``, ``model.safetensors``,
tokenizer, processor, chat template) with ``save_pretrained`` and the real ``transformers`` classes,
so it loads through the code path a user's checkpoint takes: :func:`tempcore.encoders.load_encoder`
for the encoders, :func:`tempcore.models.load_model` with ``backend: hf`` for the VLMs. Weights are
random and seeded: answers are gibberish but deterministic; every model is well under 1 MB.

- Encoders (:data:`ENCODER_FAMILIES`): SigLIP, SigLIP2 (NaFlex) and CLIP, each with the tokenizer
  class its family ships (SentencePiece for SigLIP, needs ``sentencepiece`` and ``protobuf``).
- VLMs (:data:`VLM_FAMILIES`): Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Idefics3 (SmolVLM), SmolVLM2 and
  LLaVA-OneVision; and a tiny Qwen2 text LM (:func:`build_tiny_text_lm`).

Importing this module imports neither torch nor transformers; each builder imports them when it
runs. They work with transformers 5.x on a CPU torch without torchvision: processors that declare a
video processor are built through a subclass without it.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

TINY_LAYERS: dict[str, int] = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                               "num_attention_heads": 2}
"""The size of every tiny tower (text, vision, language model): small enough for a CPU test."""


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def _tf() -> Any:
    """``transformers``, imported when a builder runs (typed loosely: its stubs are partial)."""
    import transformers

    return transformers


# --- encoders ------------------------------------------------------------------------------
_WORDS = (
    "a the person man woman child dog cat bird red blue green yellow black white car ball door "
    "kitchen table chair window street park river tree phone cup box bag walks runs opens closes "
    "holds picks drops throws sits stands jumps enters leaves what who how many why when where "
    "which does did is are was in on at of to and with from after before then video frame scene "
    "shows first last left right up down camera object person's hand"
).split()

SEED = 0


def corpus(n: int = 600, seed: int = SEED) -> list[str]:
    """A deterministic inline corpus to train the tiny tokenizers on."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 14))) for _ in range(n)]


def sentencepiece_model(vocab_size: int = 160) -> bytes:
    """A SentencePiece unigram model (bytes of ``spiece.model``) trained on :func:`corpus`."""
    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus()),
        model_writer=buf,
        vocab_size=vocab_size,
        hard_vocab_limit=False,
        model_type="unigram",
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        minloglevel=2,
        num_threads=1,
    )
    return buf.getvalue()


def _save_preprocessing(path: Path, tokenizer: object, image_processor: object) -> None:
    """Tokenizer files + ``preprocessor_config.json``, as the official hub checkpoints lay them out."""
    tokenizer.save_pretrained(path)  # type: ignore[attr-defined]
    image_processor.save_pretrained(path)  # type: ignore[attr-defined]


def _seed_torch() -> None:
    _seed(SEED)


def _save_siglip(path: Path, tokenizer: Any, max_text_tokens: int, image_size: int, *, bos_token_id: Any) -> Path:
    """A seeded tiny SigLIP-architecture model over ``tokenizer``, its image processor and tokenizer, in ``path``."""
    tf = _tf()
    config = tf.SiglipConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            **TINY_LAYERS,
            max_position_embeddings=max_text_tokens,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        ),
        vision_config=dict(image_size=image_size, patch_size=8, **TINY_LAYERS),
    )
    _seed_torch()
    tf.SiglipModel(config).eval().save_pretrained(path)
    image_processor = tf.SiglipImageProcessorPil(size={"height": image_size, "width": image_size})
    _save_preprocessing(path, tokenizer, image_processor)
    return path


def build_tiny_siglip(path: str | Path, *, max_text_tokens: int = 16, image_size: int = 32) -> Path:
    """SigLIP (v1): fixed-resolution ViT, text padded to ``max_length`` and pooled at the last position."""
    tf = _tf()
    SiglipTokenizer = tf.SiglipTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / "spiece.model").write_bytes(sentencepiece_model())
    tokenizer = SiglipTokenizer(vocab_file=str(path / "spiece.model"), model_max_length=max_text_tokens)
    (path / "spiece.model").unlink()
    return _save_siglip(path, tokenizer, max_text_tokens, image_size, bos_token_id=None)


def build_tiny_siglip2(
    path: str | Path, *, max_text_tokens: int = 16, patch_size: int = 8, max_num_patches: int = 16
) -> Path:
    """SigLIP2 NaFlex: variable aspect ratio, at most ``max_num_patches`` patches of ``patch_size``.

    The saved image processor deliberately differs from ``Siglip2Processor``'s call-time defaults
    (patch 16, 256 patches): an adapter that lets those defaults win breaks on this checkpoint.
    """
    tf = _tf()
    Siglip2Config = tf.Siglip2Config
    Siglip2ImageProcessorPil = tf.Siglip2ImageProcessorPil
    Siglip2Model = tf.Siglip2Model
    Siglip2Tokenizer = tf.Siglip2Tokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = Siglip2Tokenizer().train_new_from_iterator(corpus(), vocab_size=600)
    tokenizer.model_max_length = max_text_tokens
    config = Siglip2Config(
        text_config=dict(
            vocab_size=len(tokenizer),
            **TINY_LAYERS,
            max_position_embeddings=max_text_tokens,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            bos_token_id=tokenizer.bos_token_id,
        ),
        vision_config=dict(
            patch_size=patch_size,
            num_patches=max_num_patches,
            **TINY_LAYERS,
        ),
    )
    _seed_torch()
    Siglip2Model(config).eval().save_pretrained(path)
    image_processor = Siglip2ImageProcessorPil(patch_size=patch_size, max_num_patches=max_num_patches)
    _save_preprocessing(path, tokenizer, image_processor)
    return path


def build_tiny_siglip2_fixres(path: str | Path, *, max_text_tokens: int = 16, image_size: int = 32) -> Path:
    """SigLIP2 at a fixed resolution, laid out as the official FixRes checkpoints are
    (``google/siglip2-so400m-patch14-384``, the paper's default): the SigLIP architecture
    (``model_type: siglip``) with a plain ``GemmaTokenizer``, which does not lower-case."""
    tf = _tf()
    GemmaTokenizer = tf.GemmaTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = GemmaTokenizer().train_new_from_iterator(corpus(), vocab_size=600)
    tokenizer.model_max_length = max_text_tokens
    tokenizer.padding_side = "right"
    return _save_siglip(path, tokenizer, max_text_tokens, image_size, bos_token_id=tokenizer.bos_token_id)


def build_tiny_clip(path: str | Path, *, max_text_tokens: int = 16, image_size: int = 32) -> Path:
    """CLIP: shortest-edge resize + centre crop; text pooled at the end-of-text token."""
    tf = _tf()
    CLIPConfig = tf.CLIPConfig
    CLIPImageProcessorPil = tf.CLIPImageProcessorPil
    CLIPModel = tf.CLIPModel
    CLIPTokenizer = tf.CLIPTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = CLIPTokenizer().train_new_from_iterator(corpus(), vocab_size=600)
    tokenizer.model_max_length = max_text_tokens
    config = CLIPConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            **TINY_LAYERS,
            max_position_embeddings=max_text_tokens,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        ),
        vision_config=dict(
            image_size=image_size,
            patch_size=8,
            **TINY_LAYERS,
        ),
        projection_dim=24,
    )
    _seed_torch()
    CLIPModel(config).eval().save_pretrained(path)
    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
    )
    _save_preprocessing(path, tokenizer, image_processor)
    return path


ENCODER_BUILDERS: dict[str, Callable[..., Path]] = {"siglip": build_tiny_siglip, "siglip2": build_tiny_siglip2, "clip": build_tiny_clip}


def build_tiny_encoder(family: str, path: str | Path, **kwargs: object) -> Path:
    """Build the tiny checkpoint of ``family`` (``siglip``, ``siglip2`` or ``clip``) in ``path``."""
    if family not in ENCODER_BUILDERS:
        raise ValueError(f"unknown tiny encoder family {family!r}; choose from {ENCODER_FAMILIES}")
    return ENCODER_BUILDERS[family](path, **kwargs)


ENCODER_FAMILIES = tuple(ENCODER_BUILDERS)


def tiny_encoder_checkpoints(base: str | Path) -> dict[str, Path]:
    """The three tiny checkpoints under ``base`` (built on first use; a finished folder has ``.done``).

    Test modules share one set by passing the same ``base`` (e.g. from ``tmp_path_factory``).
    """
    base = Path(base)
    out = {}
    for family in ENCODER_FAMILIES:
        folder = base / family
        if not (folder / ".done").is_file():
            build_tiny_encoder(family, folder)
            (folder / ".done").touch()
        out[family] = folder
    return out


# --- VLMs and a text LM -------------------------------------------------------------------
VLM_CORPUS = [
    "What happens in the video? Answer with the option's letter from the given choices directly.",
    "A. a man walks to the door B. a dog runs in the park C. a car stops at the light D. a cat sleeps",
    "The answer is B. Answer: C. (D) the person opens the box",
    "Question: Which event happens first in the clip? Options: (A) red (B) green (C) blue (D) yellow",
    "Select the best answer to the following multiple-choice question based on the video.",
    "system user assistant You are a helpful assistant.",
]

VLM_FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "idefics3", "smolvlm", "llava_onevision")

# --- tokenizers ---------------------------------------------------------------------------


def _train_bpe(vocab_size: int = 320) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(VLM_CORPUS * 10, trainer)
    return tok


def _bpe_vocab_merges() -> tuple[dict[str, int], list[tuple[str, str]]]:
    tok = _train_bpe()
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return dict(model["vocab"]), merges  # type: ignore[return-value]


def qwen_tokenizer(extra_special: tuple[str, ...] = ()) -> Any:
    """A Qwen2Tokenizer over a small trained BPE, with the Qwen chat / vision special tokens."""
    tf = _tf()
    Qwen2Tokenizer = tf.Qwen2Tokenizer

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
    tf = _tf()
    PreTrainedTokenizerFast = tf.PreTrainedTokenizerFast

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


def build_qwen_vl(folder: Path, version: str = "2", seed: int = 0) -> Path:
    """Qwen2-VL (``version="2"``), Qwen2.5-VL (``"2.5"``) or Qwen3-VL (``"3"``)."""
    tf = _tf()

    from tempcore.models.hf_vlm import without_video_processor

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
    tf = _tf()

    from tempcore.models.hf_vlm import without_video_processor

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
    tf = _tf()

    from tempcore.models.hf_vlm import without_video_processor

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
    """Build the tiny checkpoint of ``family`` (one of :data:`VLM_FAMILIES`) into ``folder``."""
    builders: dict[str, Callable[[], Path]] = {
        "qwen2_vl": lambda: build_qwen_vl(folder, "2", seed),
        "qwen2_5_vl": lambda: build_qwen_vl(folder, "2.5", seed),
        "qwen3_vl": lambda: build_qwen_vl(folder, "3", seed),
        "idefics3": lambda: build_idefics3(folder, smolvlm2=False, seed=seed),
        "smolvlm": lambda: build_idefics3(folder, smolvlm2=True, seed=seed),
        "llava_onevision": lambda: build_llava_onevision(folder, seed),
    }
    if family not in builders:
        raise ValueError(f"unknown tiny VLM family {family!r}; choose from {VLM_FAMILIES}")
    return builders[family]()


CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tiny_text_lm(folder: Path, *, chat_template: bool = True, seed: int = 0) -> Path:
    """A tiny Qwen2 causal LM (text only), with a ChatML chat template unless ``chat_template=False``."""
    tf = _tf()

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


DEFAULT_ENCODER = "siglip"
DEFAULT_VLM = "idefics3"


def write_tiny_checkpoints(
    out: str | Path, *, encoders: tuple[str, ...] = (DEFAULT_ENCODER,), vlms: tuple[str, ...] = (DEFAULT_VLM,)
) -> dict[str, Path]:
    """Write the tiny checkpoints of ``encoders`` and ``vlms`` as ``out/<family>``; returns family -> folder.

    ``tempcore tiny-checkpoints OUT`` calls this. A family in both tuples is an error (they are
    distinct names). Existing folders are overwritten.
    """
    out = Path(out)
    paths: dict[str, Path] = {}
    for family in encoders:
        paths[family] = build_tiny_encoder(family, out / family)
    for family in vlms:
        paths[family] = build_tiny_vlm(family, out / family)
    return paths
