"""Tiny random-weight SigLIP, SigLIP2 (NaFlex) and CLIP checkpoints, built offline for tests.

Each builder writes a folder laid out exactly like a hub checkpoint (``config.json``,
``model.safetensors``, ``preprocessor_config.json``, the tokenizer files) with the real
architecture classes of ``transformers`` and the real tokenizer class each family ships with:

- SigLIP: ``SiglipTokenizer`` over a SentencePiece unigram model trained here (the real
  checkpoints ship ``spiece.model``; needs ``sentencepiece`` and ``protobuf``).
- SigLIP2: ``Siglip2Tokenizer`` (Gemma BPE + lower-casing) trained here; ``AutoTokenizer``
  resolves a siglip2 config to this class, so a generic tokenizer would be swapped and its ids
  would change.
- CLIP: ``CLIPTokenizer`` (byte-level BPE with ``</w>``) trained here; the config's
  ``eos_token_id`` is the tokenizer's, so the text tower pools at the end-of-text token.

The models are well under 1 MB and run in milliseconds. Tests load them through
``tempcore.encoders.load_encoder(path)``, the same code path a user's checkpoint takes.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

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
    import torch

    torch.manual_seed(SEED)


def build_tiny_siglip(path: str | Path, *, max_text_tokens: int = 16, image_size: int = 32) -> Path:
    """SigLIP (v1): fixed-resolution ViT, text padded to ``max_length`` and pooled at the last position."""
    from transformers import (
        SiglipConfig,
        SiglipImageProcessorPil,
        SiglipModel,
        SiglipTokenizer,
    )

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / "spiece.model").write_bytes(sentencepiece_model())
    tokenizer = SiglipTokenizer(vocab_file=str(path / "spiece.model"), model_max_length=max_text_tokens)
    (path / "spiece.model").unlink()
    config = SiglipConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            max_position_embeddings=max_text_tokens,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=None,
            eos_token_id=tokenizer.eos_token_id,
        ),
        vision_config=dict(
            image_size=image_size,
            patch_size=8,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
        ),
    )
    _seed_torch()
    SiglipModel(config).eval().save_pretrained(path)
    image_processor = SiglipImageProcessorPil(size={"height": image_size, "width": image_size})
    _save_preprocessing(path, tokenizer, image_processor)
    return path


def build_tiny_siglip2(
    path: str | Path, *, max_text_tokens: int = 16, patch_size: int = 8, max_num_patches: int = 16
) -> Path:
    """SigLIP2 NaFlex: variable aspect ratio, at most ``max_num_patches`` patches of ``patch_size``.

    The saved image processor deliberately differs from ``Siglip2Processor``'s call-time defaults
    (patch 16, 256 patches): an adapter that lets those defaults win breaks on this checkpoint.
    """
    from transformers import (
        Siglip2Config,
        Siglip2ImageProcessorPil,
        Siglip2Model,
        Siglip2Tokenizer,
    )

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = Siglip2Tokenizer().train_new_from_iterator(corpus(), vocab_size=600)
    tokenizer.model_max_length = max_text_tokens
    config = Siglip2Config(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            max_position_embeddings=max_text_tokens,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            bos_token_id=tokenizer.bos_token_id,
        ),
        vision_config=dict(
            patch_size=patch_size,
            num_patches=max_num_patches,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
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
    from transformers import GemmaTokenizer, SiglipConfig, SiglipImageProcessorPil, SiglipModel

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = GemmaTokenizer().train_new_from_iterator(corpus(), vocab_size=600)
    tokenizer.model_max_length = max_text_tokens
    tokenizer.padding_side = "right"
    config = SiglipConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            max_position_embeddings=max_text_tokens,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        ),
        vision_config=dict(
            image_size=image_size,
            patch_size=8,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
        ),
    )
    _seed_torch()
    SiglipModel(config).eval().save_pretrained(path)
    image_processor = SiglipImageProcessorPil(size={"height": image_size, "width": image_size})
    _save_preprocessing(path, tokenizer, image_processor)
    return path


def build_tiny_clip(path: str | Path, *, max_text_tokens: int = 16, image_size: int = 32) -> Path:
    """CLIP: shortest-edge resize + centre crop; text pooled at the end-of-text token."""
    from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel, CLIPTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = CLIPTokenizer().train_new_from_iterator(corpus(), vocab_size=600)
    tokenizer.model_max_length = max_text_tokens
    config = CLIPConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            max_position_embeddings=max_text_tokens,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        ),
        vision_config=dict(
            image_size=image_size,
            patch_size=8,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
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


BUILDERS = {"siglip": build_tiny_siglip, "siglip2": build_tiny_siglip2, "clip": build_tiny_clip}


def build_tiny_encoder(family: str, path: str | Path, **kwargs: object) -> Path:
    """Build the tiny checkpoint of ``family`` (``siglip``, ``siglip2`` or ``clip``) in ``path``."""
    return BUILDERS[family](path, **kwargs)  # type: ignore[operator]


FAMILIES = tuple(BUILDERS)


def tiny_checkpoints(base: str | Path) -> dict[str, Path]:
    """The three tiny checkpoints under ``base`` (built on first use; a finished folder has ``.done``).

    Test modules share one set by passing the same ``base`` (e.g. from ``tmp_path_factory``).
    """
    base = Path(base)
    out = {}
    for family in FAMILIES:
        folder = base / family
        if not (folder / ".done").is_file():
            build_tiny_encoder(family, folder)
            (folder / ".done").touch()
        out[family] = folder
    return out
