"""The zoo's real generative VLM: a tiny Idefics3 (SmolVLM's architecture) trained on the synthetic world.

It is an ordinary Hugging Face checkpoint folder (``config.json``, ``model.safetensors``, tokenizer,
processor and chat template), shipped as ``tempcore/world/zoo/zoo-idefics3/`` and loaded by exactly
the adapter a user's SmolVLM goes through: ``load_model(hf_spec())`` -> backend ``hf``
(:mod:`tempcore.models.hf_vlm`, ``AutoModelForImageTextToText`` + ``AutoProcessor``). It sees each
frame as an image of one user turn followed by the prompt text, and generates the option letter
followed by the option's text (``" B. red"``, then ``<end_of_utterance>``); option scores come from
the adapter's letter scoring (the first generated position restricted to the letter tokens).

Architecture: ``Idefics3ForConditionalGeneration`` (0.57 M parameters), a SigLIP-style ViT over
48 x 48 frames whose pixel shuffle turns every frame into 4 image tokens (one per quadrant), a small
Llama text model with a byte-level BPE tokenizer trained on the world's text (every letter after a
space is one token), ``Idefics3Processor`` with ``image_seq_len=4`` and SmolVLM's chat template.

Training (:func:`train_hf_answerer`) follows the usual VLM recipe on the same data as the other zoo
members (:class:`tempcore.world.answerers.ExampleSampler`): captioning single frames first, then
letter answers to the text-answerable questions, then every family; the loss is on the answer
tokens only. Sizes and the recipe in full are in ``docs/design/world.md``.

What the shipped weights learned: the answer format, the letter binding (the text-answerable
questions right, in every option order) and the captions; *not* to answer the visual questions with a
letter: on held-out worlds it is at chance on them with any frames, like the text-only member. In the
panel it therefore behaves as a second text-prior model that happens to be a real generative VLM
loaded through the ``hf`` adapter.

This module imports torch and transformers when its functions run; nothing imports it at
``import tempcore`` time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tempcore.models.base import ModelSpec

HF_NAME = "zoo-idefics3"
"""Folder name (inside the zoo) and model name of the HF answerer."""

IMAGE_SIDE = 48
IMAGE_SEQ_LEN = 4
K_CHOICES = (1, 4, 8, 8)
CAPTION_PROMPT = "What does this frame show?"
"""The captioning task's prompt (the alignment stage of training)."""
OPEN_INSTRUCTION = "Answer with the text of the correct option only."
"""The instruction of the open-answer task (answer with the option's text, no letter)."""
TEXT_FAMILIES = ("shape_sides", "anchor_colour_obvious")
"""The text-answerable families the first phase of training uses (see :func:`train_hf_answerer`)."""

SPECIALS = [
    "<fake_token_around_image>",
    "<image>",
    "<global-img>",
    "<end_of_utterance>",
    "<|im_start|>",
    *[f"<row_{r}_col_{c}>" for r in range(1, 5) for c in range(1, 5)],
]

CHAT_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)
"""SmolVLM's chat template shape (user turn with images, then ``Assistant:``)."""


def hf_path(zoo_dir: str | Path | None = None) -> Path:
    """Folder of the HF answerer (``zoo_dir`` / :data:`HF_NAME`, default the shipped zoo)."""
    from tempcore.world.answerers.constants import ZOO_DIR

    return Path(zoo_dir if zoo_dir is not None else ZOO_DIR) / HF_NAME


def hf_spec(zoo_dir: str | Path | None = None, **overrides: Any) -> ModelSpec:
    """The :class:`ModelSpec` that loads the HF answerer through the ``hf`` backend (float32).

    ``max_new_tokens=1``: on the world's four-option questions the answer is the reply's first
    token, the option letter (the model was trained to reply "B. <option text>"). Measured on a
    40-question world under every demo condition: the same 880 answers as with 8 new tokens, and
    one forward pass per batch instead of about 6.5 (the HF answerer was half of the demo's time).
    Where the letter does not decide (two-option binary questions, which it answers with C or D
    too), ask for the whole reply (``max_new_tokens=8``: :data:`tempcore.demo.BINARY_REPLY_TOKENS`)."""
    fields: dict[str, Any] = dict(
        backend="hf", model=str(hf_path(zoo_dir)), name=HF_NAME, dtype="float32", max_new_tokens=1, batch_size=16
    )
    fields.update(overrides)
    return ModelSpec(**fields)


# --- building ------------------------------------------------------------------------------------


def corpus(sampler: Any) -> list[str]:
    """Texts the tokenizer is trained on: every question / option / instruction text of the world and
    the captions of the first frame of every scene."""
    from tempcore.prompts import render_prompt
    from tempcore.records import LETTERS
    from tempcore.world.scene import captions_for_frame

    texts = [CAPTION_PROMPT] + [c for scene in sampler.world.scenes for c in captions_for_frame(scene, 0.0)]
    for wq in sampler.questions:
        q = wq.question
        for template in sorted(set(sampler.templates)):
            texts.append(render_prompt(q.question, q.options, template, timestamps=[0.5, 12.25]))
    texts.append(OPEN_INSTRUCTION)
    texts += ["Assistant: " + " ".join(LETTERS)] * 2000  # every " X" letter becomes one token
    return texts


def build_tokenizer(texts: Sequence[str], vocab_size: int = 512) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` with Idefics3's special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(list(texts), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok)  # type: ignore[no-untyped-call, unused-ignore]  # transformers: unannotated
    fast.add_special_tokens({"bos_token": "<|im_start|>", "eos_token": "<end_of_utterance>",
                             "pad_token": "<|endoftext|>"})
    fast.add_special_tokens({"additional_special_tokens": SPECIALS})
    from tempcore.records import LETTERS
    from tempcore.world.answerers.constants import ZooError

    split = [letter for letter in LETTERS if len(fast.encode(f" {letter}", add_special_tokens=False)) != 1]
    if split:  # the hf adapter scores and the model must emit the same single letter tokens
        raise ZooError(f"the answerer's tokenizer splits the letters {split} (after a space) into several tokens")
    return fast


def build_model(tokenizer: Any, seed: int, *, text_layers: int = 4) -> tuple[Any, Any]:
    """A freshly initialised ``Idefics3ForConditionalGeneration`` and its processor."""
    import torch
    import transformers as tf

    text = dict(
        model_type="llama",
        vocab_size=len(tokenizer),
        hidden_size=96,
        intermediate_size=192,
        num_hidden_layers=text_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    vision = dict(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
        image_size=IMAGE_SIDE, patch_size=8,
    )
    config = tf.Idefics3Config(
        text_config=text,
        vision_config=vision,
        scale_factor=3,
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        # not in Idefics3Config's signature; kept as an extra attribute (written to config.json)
        pad_token_id=tokenizer.pad_token_id,  # type: ignore[call-arg, unused-ignore]
    )
    torch.manual_seed(seed)
    model = tf.Idefics3ForConditionalGeneration(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    image_processor = _image_processor_class()(
        size={"longest_edge": IMAGE_SIDE}, max_image_size={"longest_edge": IMAGE_SIDE}, do_image_splitting=False
    )
    processor = tf.Idefics3Processor(
        image_processor=image_processor, tokenizer=tokenizer, image_seq_len=IMAGE_SEQ_LEN,
        chat_template=CHAT_TEMPLATE,
    )
    return model, processor


def _image_processor_class() -> Any:
    """Idefics3's PIL image processor when torchvision is absent (what ``AutoProcessor`` falls back to)."""
    import transformers as tf
    from transformers.utils.import_utils import is_torchvision_available

    if not is_torchvision_available() and hasattr(tf, "Idefics3ImageProcessorPil"):
        return tf.Idefics3ImageProcessorPil
    return tf.Idefics3ImageProcessor


# --- training ------------------------------------------------------------------------------------


def render_chat(tokenizer: Any, n_images: int, prompt: str) -> str:
    """The text the ``hf`` adapter feeds for a request (user turn with images + generation prompt)."""
    content: list[dict[str, Any]] = [{"type": "image"} for _ in range(n_images)]
    content.append({"type": "text", "text": prompt})
    text: str = tokenizer.apply_chat_template(
        [{"role": "user", "content": content}], chat_template=CHAT_TEMPLATE, tokenize=False,
        add_generation_prompt=True,
    )
    return text


def answer_text(example: Any, echo: bool = True) -> str:
    """The trained continuation: ``" B"`` (+ ``". " + option text`` when ``echo``) + end of turn."""
    from tempcore.records import LETTERS

    text = f" {LETTERS[example.answer]}"
    if echo:
        text += f". {example.options[example.answer]}"
    return text + "<end_of_utterance>"


def _chat_inputs(
    processor: Any, frames: Sequence[Sequence[np.ndarray]], prompts: Sequence[str], answers: Sequence[str]
) -> tuple[Any, list[int]]:
    """Inputs for ``chat(frames, prompt) + answer`` rows with the loss on the answers only, and the
    position of each answer's first token."""
    import torch

    from tempcore.models._images import to_pil

    tok = processor.tokenizer
    texts = [render_chat(tok, len(f), p) + a for f, p, a in zip(frames, prompts, answers)]
    tok.padding_side = "right"
    inputs = processor(
        text=texts, images=[[to_pil(x) for x in f] for f in frames], return_tensors="pt", padding=True,
        add_special_tokens=False,
    )
    labels = torch.full_like(inputs["input_ids"], -100)
    first = []
    for row, answer in enumerate(answers):
        n_answer = len(tok.encode(answer, add_special_tokens=False))
        length = int(inputs["attention_mask"][row].sum())
        labels[row, length - n_answer : length] = inputs["input_ids"][row, length - n_answer : length]
        first.append(length - n_answer)
    inputs["labels"] = labels
    return inputs, first


def training_inputs(processor: Any, examples: Sequence[Any], *, echo: bool = True) -> tuple[Any, list[int]]:
    """Model inputs with ``labels`` (chat text + :func:`answer_text`, loss on the answer only) and, per
    row, the position of the answer's first token (the letter)."""
    return _chat_inputs(
        processor, [e.frames for e in examples], [e.prompt for e in examples],
        [answer_text(e, echo) for e in examples],
    )


def rotated_batch(sampler: Any, n: int, k: int, rng: np.random.Generator) -> list[Any]:
    """``n`` examples: ``n / n_options`` random draws, each rendered once and shown in every cyclic
    rotation of its options, so the letter can only be learned from the content, never from a prior
    over positions."""
    import dataclasses

    out: list[Any] = []
    while len(out) < n:
        (draw,) = sampler.draws(1, k, rng)
        example = sampler.render(draw, rng)
        for rotated in sampler.rotations(draw):
            out.append(dataclasses.replace(example, prompt=rotated.prompt, options=rotated.options,
                                           answer=rotated.answer))
    return out[:n]


def open_prompt(question: str, options: Sequence[str]) -> str:
    """The open-answer task's prompt: the question and options, asking for the option's text."""
    from tempcore.prompts import format_options

    return f"Question: {question}\nOptions:\n{format_options(options)}\n{OPEN_INSTRUCTION}"


def open_inputs(processor: Any, sampler: Any, n: int, k: int, rng: np.random.Generator) -> tuple[Any, list[int]]:
    """``n`` open-answer rows: a random draw's frames and :func:`open_prompt`, answered with the correct
    option's text (no letter)."""
    draws = sampler.draws(n, k, rng)
    frames = [sampler.render(d, rng).frames for d in draws]
    prompts = [open_prompt(sampler.questions[d.question].question.question, d.options) for d in draws]
    answers = [f" {d.options[d.answer]}<end_of_utterance>" for d in draws]
    return _chat_inputs(processor, frames, prompts, answers)


def caption_inputs(processor: Any, world: Any, n: int, rng: np.random.Generator) -> tuple[Any, list[int]]:
    """``n`` captioning rows: one frame of a random scene (half inside an event window, 70% degraded like
    video) asked :data:`CAPTION_PROMPT`, answered with its full caption (:func:`captions_for_frame`)."""
    from tempcore.world.answerers.sampling import _frames_in, _scene_windows, degrade
    from tempcore.world.scene import captions_for_frame, render_frames

    frames, captions = [], []
    scenes = world.scenes
    for _ in range(n):
        scene = scenes[int(rng.integers(len(scenes)))]
        windows = _scene_windows(scene)
        index = int(rng.integers(scene.n_frames))
        if windows and rng.random() < 0.5:
            inside = _frames_in(scene, windows[int(rng.integers(len(windows)))])
            index = int(inside[rng.integers(inside.size)]) if inside.size else index
        t = index / scene.fps
        frame = render_frames(scene, [t])
        if rng.random() < 0.7:
            frame = degrade(frame, rng)
        frames.append(list(frame))
        captions.append(f" {captions_for_frame(scene, t)[0]}<end_of_utterance>")
    return _chat_inputs(processor, frames, [CAPTION_PROMPT] * n, captions)


@dataclass
class HFTrainLog:
    """Per logged interval: mean answer loss and letter cross-entropy of the question batches, and mean
    loss of the captioning batches (NaN for an interval without such batches)."""

    losses: list[float]
    letter_losses: list[float]
    caption_losses: list[float]
    steps: int
    seconds: float


def _stage(step: int, steps: int, caption_first: float, text_until: float) -> str:
    """Which task the batch of ``step`` trains (see :func:`train_hf_answerer`)."""
    if step < caption_first * steps:
        return "caption"
    if step < text_until * steps:
        return "caption" if step % 4 == 0 else "text"
    return ("caption", "open", "letter", "letter")[step % 4]


def train_hf_answerer(
    out_dir: str | Path | None,
    seed: int = 0,
    *,
    steps: int = 12000,
    batch_size: int = 16,
    n_questions: int = 8000,
    lr: float = 1e-3,
    echo: bool = True,
    caption_first: float = 0.1,
    text_until: float = 0.25,
    log_every: int = 100,
    log: Callable[[str], None] | None = print,
    world: Any = None,
) -> HFTrainLog:
    """Train the HF answerer from ``seed`` and ``save_pretrained`` it (model + processor) into ``out_dir``.

    Stages (fractions of ``steps``), as a VLM is trained: alignment (captioning only) until
    ``caption_first``; then, until ``text_until``, letter answers to the text-answerable families
    (three batches in four; captioning in the fourth); then every family, cycling captioning, open
    answers (the option's text, :func:`open_inputs`) and two batches of letter answers. Letter batches
    show each question in every rotation of its options (:func:`rotated_batch`); with ``echo`` the
    letter is followed by the option's text.
    """
    import torch

    from tempcore.world.answerers.constants import TRAIN_SEED_BASE
    from tempcore.world.answerers.sampling import ExampleSampler
    from tempcore.world.answerers.training import training_world

    world = world if world is not None else training_world(seed, n_questions)
    sampler = ExampleSampler(world)
    text_sampler = ExampleSampler(world, families=TEXT_FAMILIES)
    tokenizer = build_tokenizer(corpus(sampler))
    model, processor = build_model(tokenizer, seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    warm = max(1, steps // 20)
    rng = np.random.default_rng([TRAIN_SEED_BASE, seed, 11])
    tasks = ("letter", "open", "caption")
    logged: dict[str, list[float]] = {t: [] for t in tasks}
    running: dict[str, list[float]] = {t: [] for t in tasks}
    running_letter: list[float] = []
    letter_losses: list[float] = []
    model.train()
    start = time.perf_counter()
    for step in range(steps):
        scale = (step + 1) / warm if step < warm else 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, steps - warm)))
        for group in opt.param_groups:
            group["lr"] = lr * scale
        k = int(K_CHOICES[int(rng.integers(len(K_CHOICES)))])
        stage = _stage(step, steps, caption_first, text_until)
        if stage == "caption":
            inputs, first = caption_inputs(processor, world, batch_size, rng)
        elif stage == "open":
            inputs, first = open_inputs(processor, sampler, batch_size, k, rng)
        else:
            source = text_sampler if stage == "text" else sampler
            inputs, first = training_inputs(processor, rotated_batch(source, batch_size, k, rng), echo=echo)
        out = model(**inputs)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        task = "letter" if stage == "text" else stage
        running[task].append(float(out.loss.detach()))
        if task == "letter":
            with torch.no_grad():
                rows = torch.arange(len(first))
                at = torch.tensor(first)
                logp = torch.log_softmax(out.logits[rows, at - 1].float(), dim=-1)
                running_letter.append(float(-logp[rows, inputs["input_ids"][rows, at]].mean()))
        if (step + 1) % log_every == 0 or step + 1 == steps:
            for t in tasks:
                logged[t].append(_mean(running[t]))
                running[t].clear()
            letter_losses.append(_mean(running_letter))
            running_letter.clear()
            if log is not None:
                log(
                    f"{HF_NAME} step {step + 1}/{steps} ({time.perf_counter() - start:.0f}s) {stage}: "
                    f"letter answers {logged['letter'][-1]:.3f} (letter {letter_losses[-1]:.3f}) "
                    f"open answers {logged['open'][-1]:.3f} captions {logged['caption'][-1]:.3f}"
                )
    model.eval()
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out, safe_serialization=True)
        processor.tokenizer.padding_side = "left"
        processor.save_pretrained(out)
    return HFTrainLog(logged["letter"], letter_losses, logged["caption"], steps, time.perf_counter() - start)


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


__all__ = [
    "CHAT_TEMPLATE",
    "answer_text",
    "caption_inputs",
    "open_inputs",
    "open_prompt",
    "rotated_batch",
    "HF_NAME",
    "HFTrainLog",
    "build_model",
    "build_tokenizer",
    "hf_path",
    "hf_spec",
    "render_chat",
    "train_hf_answerer",
    "training_inputs",
]
