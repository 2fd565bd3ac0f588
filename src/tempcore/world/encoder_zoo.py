"""The world's frame-text encoder: a small SigLIP trained on (frame, caption-of-frame) pairs.

The shipped encoder (``tempcore/world/zoo/encoder/``) is an ordinary Hugging Face folder
(``config.json``, ``model.safetensors``, ``tokenizer.json`` / ``tokenizer_config.json``,
``preprocessor_config.json``) of the real ``SiglipModel`` architecture, loaded by exactly the
adapter a user's SigLIP / SigLIP2 checkpoint goes through: ``tempcore.encoders.load_encoder(path)``.
:func:`train_encoder` rebuilds it from a seed on a CPU in minutes (``tempcore world train --only encoder``).

Model: SigLIP with a 48 x 48 input (8 x 8 patches), hidden size 64, two layers per tower, text
limit 32 tokens; ~0.2 M parameters. Tokenizer: byte-level BPE with lower-casing, trained on the
world's vocabulary (:func:`tokenizer_corpus`), appending ``</s>``; texts are padded to 32 tokens
(SigLIP pools the text at the last position), exactly as the adapter pads them.

Training data: frames rendered in memory from random training scenes (their own seed, never the
demo world's), half of them inside an event window (a brief triangle, an absent or recoloured
circle) so that the frames of one video differ in what they show. Each frame gets one caption
drawn by :func:`sample_caption`: a random non-empty subset of the visible objects, each named by
colour and shape ("a red triangle"), colour only ("something red") or shape only ("a triangle"),
and, half of the time, wrapped in distractor words (the function words of the world's questions,
never a colour or shape word) so that the text tower learns to ignore them, as web alt-text
training teaches real SigLIP to. Frames are degraded like H.264 4:2:0 video half of the time
(chroma averaged over 2 x 2 pixels, slight noise), since the audited frames come from encoded files.

Loss: SigLIP's sigmoid loss over every (frame, caption) pair of a batch, with *multi-positive*
labels: a caption is a positive for every frame of the batch that shows everything it mentions
(captions of other frames of the same video often are), a negative otherwise. The learned bias
starts at -2 (about the log-odds of a positive pair here) instead of SigLIP's -10, which assumes
one positive among ~32k pairs.

Schedule: 2400 steps of 128 frames, AdamW at 2e-3 with warm-up and cosine decay; one torch thread
(on two busy cores, two threads were many times slower for a model this small). About 4-6 minutes
on this project's 2-core machines; bit-for-bit reproducible for a given seed, torch build and
thread count. ``training.json`` in the saved folder records the settings, the final training loss
and the loss on a held-out batch before and after training.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tempcore.world.families import HAPPENINGS, NOT_COLOURS, SIDES
from tempcore.world.generator import WorldConfig, make_scene
from tempcore.world.scene import (
    COLOURS,
    SHAPES,
    Scene,
    join_phrases,
    phrase,
    render_frame,
    visible_objects,
)

IMAGE_SIZE = 48
MAX_TEXT_TOKENS = 32
VOCAB_SIZE = 512
DEFAULT_STEPS = 2400
DEFAULT_BATCH = 128
FRAMES_PER_SCENE = 4
TRAIN_SEED_OFFSET = 7_000_003  # training scenes never coincide with a world generated with a small seed
PAD, EOS, UNK = "<pad>", "</s>", "<unk>"
INITIAL_BIAS = -2.0

Mention = tuple[str | None, str | None]


# --- text ------------------------------------------------------------------------------------


def _question_words() -> list[str]:
    texts = [
        "What colour is the square?",
        "What colour was the triangle that appeared briefly?",
        "What happened to the yellow circle?",
        "How many sides does a pentagon have?",
        *HAPPENINGS,
        *NOT_COLOURS,
        *SIDES,
        *SIDES.values(),
        "there is in this frame of the video shown with",
    ]
    content = set(COLOURS) | set(SHAPES)
    words: list[str] = []
    for text in texts:
        for w in text.lower().replace("?", " ? ").split():
            if w not in content and w not in words:
                words.append(w)
    return words


FILLER_WORDS: tuple[str, ...] = tuple(_question_words())
"""Distractor words of training captions: the non-content words of the world's questions."""


def tokenizer_corpus() -> list[str]:
    """The text the tokenizer is trained on: captions and questions over the whole vocabulary."""
    out: list[str] = []
    colours, shapes = sorted(COLOURS), list(SHAPES)
    for c in colours:
        out.append(phrase(c, None))
        for s in shapes:
            out.append(phrase(c, s))
            out.append(f"What colour was the {s} that appeared briefly? {c}")
            out.append(f"What colour is the {s}? {c}")
            for h in HAPPENINGS:
                out.append(f"What happened to the {c} {s}? {h}")
    for s in shapes:
        out.append(phrase(None, s))
    for shape, n in SIDES.items():
        out.append(f"How many sides does a {shape} have? {n}")
    out.extend(NOT_COLOURS)
    out.append(" ".join(FILLER_WORDS))
    for i in range(len(colours)):
        parts = [phrase(colours[(i + j) % len(colours)], shapes[j]) for j in range(4)]
        out.append(join_phrases(parts))
    return out


def build_tokenizer(max_length: int = MAX_TEXT_TOKENS, vocab_size: int = VOCAB_SIZE) -> Any:
    """Byte-level BPE (lower-casing, ``</s>`` appended) trained on :func:`tokenizer_corpus`.

    Returned as a ``transformers.PreTrainedTokenizerFast`` with ``<pad>`` / ``</s>`` / ``<unk>``.
    Deterministic (the BPE trainer is single-pass and ordered).
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=1,
        special_tokens=[PAD, EOS, UNK],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(tokenizer_corpus(), trainer)
    tok.post_processor = processors.TemplateProcessing(
        single=f"$A {EOS}", special_tokens=[(EOS, tok.token_to_id(EOS))]
    )
    return PreTrainedTokenizerFast(  # type: ignore[no-untyped-call, unused-ignore]  # transformers: unannotated __init__
        tokenizer_object=tok, pad_token=PAD, eos_token=EOS, unk_token=UNK, model_max_length=max_length
    )


def mention_text(mentions: Sequence[Mention]) -> str:
    return join_phrases([phrase(c, s) for c, s in mentions])


def sample_caption(scene: Scene, t: float, rng: np.random.Generator) -> tuple[str, tuple[Mention, ...]]:
    """A random true caption of the frame at ``t`` and the (colour, shape) mentions it makes.

    A non-empty random subset of the visible objects (in random order), each named by colour and
    shape (p = 0.7), colour only (0.15) or shape only (0.15); half of the captions are wrapped in
    0-6 distractor words before and 0-4 after (:data:`FILLER_WORDS`).
    """
    objs = list(visible_objects(scene, t))
    if not objs:
        return "an empty frame", ()
    n = int(rng.integers(1, len(objs) + 1))
    chosen = [objs[i] for i in rng.permutation(len(objs))[:n]]
    mentions: list[Mention] = []
    for colour, shape in chosen:
        u = rng.random()
        mentions.append((colour, shape) if u < 0.7 else (colour, None) if u < 0.85 else (None, shape))
    text = mention_text(mentions)
    if rng.random() < 0.5:
        before = [FILLER_WORDS[i] for i in rng.integers(len(FILLER_WORDS), size=int(rng.integers(0, 7)))]
        after = [FILLER_WORDS[i] for i in rng.integers(len(FILLER_WORDS), size=int(rng.integers(0, 5)))]
        text = " ".join([*before, text, *after])
    return text, tuple(mentions)


def caption_matches(mentions: Sequence[Mention], visible: Sequence[tuple[str, str]]) -> bool:
    """True when every mention is shown by some visible (colour, shape)."""
    return all(
        any((c is None or c == vc) and (s is None or s == vs) for vc, vs in visible) for c, s in mentions
    )


# --- data -------------------------------------------------------------------------------------


def training_scenes(n: int, seed: int, size: int = IMAGE_SIZE) -> list[Scene]:
    """``n`` random scenes for training (seeded by ``seed``; a brief triangle in 60% of them)."""
    cfg = WorldConfig(n_questions=1, seed=seed, size=(size, size))
    scenes = []
    for i in range(n):
        rng = np.random.default_rng([TRAIN_SEED_OFFSET, int(seed) & 0xFFFFFFFF, i])
        scenes.append(make_scene(f"train{i:05d}", rng, cfg, brief=bool(rng.random() < 0.6)))
    return scenes


def _event_windows(scene: Scene) -> list[tuple[float, float]]:
    out = []
    for o in scene.objects:
        for iv in (o.appear, o.absent, o.recolour):
            if iv is not None:
                out.append((iv.start, iv.end))
    return out


@dataclass
class Batch:
    frames: np.ndarray  # (B, H, W, 3) uint8
    texts: list[str]
    labels: np.ndarray  # (B, B) float32: 1 where caption j is true of frame i


def make_batch(scenes: Sequence[Scene], rng: np.random.Generator, batch_size: int = DEFAULT_BATCH) -> Batch:
    """``batch_size`` frames (``FRAMES_PER_SCENE`` per scene, about half inside event windows), one
    caption each, and the multi-positive label matrix."""
    frames: list[np.ndarray] = []
    texts, mentions, visible = [], [], []
    while len(frames) < batch_size:
        scene = scenes[int(rng.integers(len(scenes)))]
        windows = _event_windows(scene)
        for _ in range(min(FRAMES_PER_SCENE, batch_size - len(frames))):
            if windows and rng.random() < 0.5:
                s, e = windows[int(rng.integers(len(windows)))]
                i = int(rng.integers(int(round(s * scene.fps)), int(round(e * scene.fps))))
            else:
                i = int(rng.integers(scene.n_frames))
            t = scene.frame_time(i)
            frames.append(render_frame(scene, t))
            text, m = sample_caption(scene, t, rng)
            texts.append(text)
            mentions.append(m)
            visible.append(visible_objects(scene, t))
    labels = np.array([[caption_matches(m, v) for m in mentions] for v in visible], dtype=np.float32)
    return Batch(np.stack(frames), texts, labels)


def degrade(frames: Any, generator: Any) -> Any:
    """Like H.264 4:2:0 coding: chroma averaged over 2 x 2 pixels, plus Gaussian noise (sigma 2).

    ``frames``: float tensor (B, 3, H, W) in [0, 255]. Returns a new tensor.
    """
    import torch
    import torch.nn.functional as F

    r, g, b = frames[:, 0], frames[:, 1], frames[:, 2]
    y = 0.299 * r + 0.587 * g + 0.114 * b
    cb = -0.168736 * r - 0.331264 * g + 0.5 * b
    cr = 0.5 * r - 0.418688 * g - 0.081312 * b
    chroma = torch.stack([cb, cr], dim=1)
    chroma = F.interpolate(F.avg_pool2d(chroma, 2), scale_factor=2, mode="nearest")
    cb, cr = chroma[:, 0], chroma[:, 1]
    out = torch.stack([y + 1.402 * cr, y - 0.344136 * cb - 0.714136 * cr, y + 1.772 * cb], dim=1)
    out = out + 2.0 * torch.randn(out.shape, generator=generator)
    return out.clamp(0, 255).round()


# --- model ------------------------------------------------------------------------------------


def encoder_config(vocab_size: int, tokenizer: Any, image_size: int = IMAGE_SIZE) -> Any:
    """The ``SiglipConfig`` of the world encoder."""
    from transformers import SiglipConfig

    return SiglipConfig(
        text_config=dict(
            vocab_size=vocab_size,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
            max_position_embeddings=MAX_TEXT_TOKENS,
            projection_size=64,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            bos_token_id=None,
        ),
        vision_config=dict(
            image_size=image_size,
            patch_size=8,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
        ),
    )


def sigmoid_loss(model: Any, tokenizer: Any, pixels: Any, texts: Sequence[str], labels: np.ndarray) -> Any:
    """SigLIP's sigmoid loss with multi-positive ``labels`` (B x B, 1 = caption j is true of frame i).

    ``pixels``: float (B, 3, H, W) in [0, 255], normalised here exactly as the saved image processor
    does (rescale 1/255, mean 0.5, std 0.5); texts are padded to ``MAX_TEXT_TOKENS`` as the adapter
    pads them. Loss = -sum over pairs of log sigmoid(sign * (scale * cos + bias)) / B.
    """
    import torch

    pixels = (pixels / 255.0 - 0.5) / 0.5
    tok = tokenizer(list(texts), padding="max_length", truncation=True, max_length=MAX_TEXT_TOKENS,
                    return_tensors="pt")
    img = model.get_image_features(pixel_values=pixels).pooler_output
    txt = model.get_text_features(input_ids=tok["input_ids"], attention_mask=tok["attention_mask"]).pooler_output
    img = img / img.norm(dim=-1, keepdim=True)
    txt = txt / txt.norm(dim=-1, keepdim=True)
    logits = img @ txt.t() * model.logit_scale.exp() + model.logit_bias
    signs = 2 * torch.from_numpy(np.asarray(labels, dtype=np.float32)) - 1
    return -torch.nn.functional.logsigmoid(signs * logits).sum() / len(texts)


def evaluate_loss(model: Any, tokenizer: Any, batch: Batch) -> float:
    """:func:`sigmoid_loss` of ``batch`` (clean frames) without gradients, in eval mode."""
    import torch

    was_training = model.training
    model.eval()
    with torch.no_grad():
        pixels = torch.from_numpy(batch.frames).permute(0, 3, 1, 2).float()
        value = float(sigmoid_loss(model, tokenizer, pixels, batch.texts, batch.labels))
    model.train(was_training)
    return value


@dataclass
class TrainResult:
    """What :func:`train_encoder` did: the folder written, the loss curve, the time it took."""

    path: Path
    steps: int
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    parameters: int = 0
    eval_before: float = float("nan")
    eval_after: float = float("nan")

    def first_last(self, window: int = 20) -> tuple[float, float]:
        """Mean loss over the first and the last ``window`` steps."""
        w = max(1, min(window, len(self.losses) // 2 or 1))
        return float(np.mean(self.losses[:w])), float(np.mean(self.losses[-w:]))


def train_encoder(
    out_dir: str | Path,
    seed: int = 0,
    steps: int = DEFAULT_STEPS,
    *,
    batch_size: int = DEFAULT_BATCH,
    lr: float = 2e-3,
    n_scenes: int = 3000,
    threads: int | None = 1,
    log: Callable[[str], None] | None = None,
    log_every: int = 100,
) -> TrainResult:
    """Train the world encoder from ``seed`` and save it as an HF folder in ``out_dir``.

    AdamW (weight decay 1e-4), linear warm-up over the first 5% of steps then cosine decay to 0,
    gradient norm clipped at 1. ``threads`` fixes torch's CPU threads for the run (the result is
    bit-for-bit reproducible for the same seed, thread count and torch build; ``None`` leaves
    torch's setting). ``log`` receives progress lines every ``log_every`` steps. Returns a
    :class:`TrainResult` with the loss curve and the held-out loss before / after.
    """
    import torch

    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(int(threads))
    try:
        return _train(Path(out_dir), seed, steps, batch_size, lr, n_scenes, threads, log, log_every)
    finally:
        torch.set_num_threads(before)


def _train(out: Path, seed: int, steps: int, batch_size: int, lr: float, n_scenes: int, threads: int | None,
           log: Callable[[str], None] | None, log_every: int) -> TrainResult:
    import torch
    from transformers import SiglipImageProcessorPil, SiglipModel

    t0 = time.time()
    torch.manual_seed(seed)
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 11])
    gen = torch.Generator().manual_seed(int(seed))

    tokenizer = build_tokenizer()
    config = encoder_config(len(tokenizer), tokenizer)
    model = SiglipModel(config)
    with torch.no_grad():
        # SigLIP starts its bias at -10 for batches of ~32k pairs with one positive per row; here about
        # an eighth of the pairs are positives (multi-positive labels), so start at their log-odds.
        model.logit_bias.fill_(INITIAL_BIAS)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    scenes = training_scenes(n_scenes, seed)

    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    warmup = max(1, steps // 20)

    def lr_at(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, steps - warmup)
        return 0.5 * (1 + math.cos(math.pi * progress))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    held_out = make_batch(scenes, np.random.default_rng([int(seed) & 0xFFFFFFFF, 12]), batch_size)
    eval_before = evaluate_loss(model, tokenizer, held_out)
    losses: list[float] = []
    for step in range(steps):
        batch = make_batch(scenes, rng, batch_size)
        pixels = torch.from_numpy(batch.frames).permute(0, 3, 1, 2).float()
        if rng.random() < 0.5:
            pixels = degrade(pixels, gen)
        loss = sigmoid_loss(model, tokenizer, pixels, batch.texts, batch.labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if log is not None and (step + 1) % log_every == 0:
            recent = float(np.mean(losses[-log_every:]))
            log(f"step {step + 1}/{steps}: loss {recent:.4f} ({time.time() - t0:.0f} s)")
    eval_after = evaluate_loss(model, tokenizer, held_out)

    out.mkdir(parents=True, exist_ok=True)
    model.eval()  # type: ignore[no-untyped-call, unused-ignore]  # transformers: unannotated
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call, unused-ignore]  # saving builds a default SiglipConfig, which warns about its own defaults
    try:
        model.save_pretrained(out)
    finally:
        hf_logging.set_verbosity(verbosity)
    os.chmod(out / "model.safetensors", 0o644)  # safetensors writes 0600; a shared install must read it
    tokenizer.save_pretrained(out)
    SiglipImageProcessorPil(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}).save_pretrained(out)
    seconds = time.time() - t0
    card = {
        "what": "tempcore world encoder (SigLIP architecture), trained by tempcore.world.encoder_zoo",
        "seed": seed,
        "steps": steps,
        "batch_size": batch_size,
        "lr": lr,
        "n_scenes": n_scenes,
        "threads": threads,
        "parameters": n_params,
        "final_loss": float(np.mean(losses[-20:])) if losses else None,
        "held_out_loss": {"before": eval_before, "after": eval_after},
        "torch": torch.__version__,
        "command": f"tempcore world train --only encoder --seed {seed} --encoder-steps {steps}",
    }
    (out / "training.json").write_text(json.dumps(card, indent=1) + "\n")
    return TrainResult(out, steps, losses, seconds, n_params, eval_before, eval_after)


__all__ = [
    "DEFAULT_BATCH",
    "DEFAULT_STEPS",
    "FILLER_WORDS",
    "IMAGE_SIZE",
    "MAX_TEXT_TOKENS",
    "Batch",
    "TrainResult",
    "build_tokenizer",
    "evaluate_loss",
    "caption_matches",
    "degrade",
    "encoder_config",
    "make_batch",
    "mention_text",
    "sample_caption",
    "sigmoid_loss",
    "tokenizer_corpus",
    "train_encoder",
    "training_scenes",
]
