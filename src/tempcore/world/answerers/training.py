"""Training the zoo: the frame encoder, the feature bank, the members' heads, ``train_all``."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tempcore.world.answerers.constants import (
    IMAGE_SIDE,
    K_CHOICES,
    MEMBERS,
    REORDER_P,
    TRAIN_SEED_BASE,
    ZooError,
)
from tempcore.world.answerers.model import save_answerer
from tempcore.world.answerers.nets import AnswererNet, FrameEncoder, frames_tensor
from tempcore.world.answerers.sampling import (
    Draw,
    ExampleSampler,
    _frames_in,
    _scene_windows,
    degrade,
    quadrant_targets,
    text_inputs,
)
from tempcore.world.answerers.text import TextCodec, vocabulary

ANSWERER_STEPS = 3000
"""Default training steps of the members' heads (:func:`train_answerers`, :func:`train_all`)."""
ANSWERER_ENCODER_STEPS = 600
"""Default training steps of the members' frame encoder (:func:`train_frame_encoder` via :func:`train_answerers`)."""


def training_world(seed: int, n_questions: int) -> Any:
    """The world the answerers train on: ``plan_world(n_questions, TRAIN_SEED_BASE + seed)``."""
    from tempcore.world.generator import plan_world

    return plan_world(n_questions, TRAIN_SEED_BASE + seed)


def _cosine(lr: float, step: int, steps: int) -> float:
    warm = max(1, steps // 20)
    if step < warm:
        return lr * (step + 1) / warm
    return lr * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, steps - warm)))


def train_frame_encoder(
    world: Any,
    seed: int = 0,
    *,
    steps: int = 600,
    batch_size: int = 128,
    lr: float = 3e-3,
    log_every: int = 100,
    log: Callable[[str], None] | None = print,
) -> tuple[FrameEncoder, list[float]]:
    """Train the shared :class:`FrameEncoder` to read each quadrant's colour and shape (cross-entropy
    per quadrant, "empty" included). Each batch: frames of random scenes, half of them inside an event
    window (so brief, absent and recoloured states are common), 70% of the scenes degraded like video,
    4% of the frames grey (every quadrant empty). Returns the encoder (in eval mode) and the mean loss
    of each logged interval."""
    torch.manual_seed(seed * 1000 + 999)
    colours, shapes = vocabulary()
    encoder = FrameEncoder(len(colours), len(shapes))
    opt = torch.optim.AdamW(encoder.parameters(), lr=lr, weight_decay=1e-4)
    rng = np.random.default_rng([TRAIN_SEED_BASE, seed, 5])
    scenes = list(world.scenes)
    per_scene = 8
    losses: list[float] = []
    running: list[float] = []
    exact: list[float] = []
    encoder.train()
    start = time.perf_counter()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = _cosine(lr, step, steps)
        frames, col, shp = _encoder_batch(scenes, max(1, batch_size // per_scene), per_scene, rng)
        lc, ls = encoder.logits(frames_tensor(frames))
        loss = F.cross_entropy(lc.reshape(-1, lc.shape[-1]), col.reshape(-1)) + F.cross_entropy(
            ls.reshape(-1, ls.shape[-1]), shp.reshape(-1)
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call, unused-ignore]  # torch: Tensor.backward is unannotated
        opt.step()
        running.append(float(loss.detach()))
        exact.append(float(((lc.argmax(-1) == col) & (ls.argmax(-1) == shp)).all(dim=1).float().mean()))
        if (step + 1) % log_every == 0 or step + 1 == steps:
            losses.append(float(np.mean(running)))
            if log is not None:
                log(
                    f"frame encoder step {step + 1}/{steps} ({time.perf_counter() - start:.0f}s) "
                    f"loss {losses[-1]:.4f} frames read exactly {np.mean(exact):.3f}"
                )
            running.clear()
            exact.clear()
    return encoder.eval(), losses


def _encoder_batch(
    scenes: Sequence[Any], n_scenes: int, per_scene: int, rng: np.random.Generator
) -> tuple[list[np.ndarray], torch.Tensor, torch.Tensor]:
    from tempcore.world.scene import render_frames

    frames: list[np.ndarray] = []
    cols, shps = [], []
    for i in rng.integers(len(scenes), size=n_scenes):
        scene = scenes[int(i)]
        windows = _scene_windows(scene)
        idx = rng.integers(scene.n_frames, size=per_scene)
        for j in range(per_scene // 2):
            if windows:
                inside = _frames_in(scene, windows[int(rng.integers(len(windows)))])
                if inside.size:
                    idx[j] = inside[rng.integers(inside.size)]
        times = idx / scene.fps
        shown = render_frames(scene, times)
        if rng.random() < 0.7:
            shown = degrade(shown, rng)
        col, shp = quadrant_targets(scene, times)
        grey = rng.random(per_scene) < 0.04
        shown[grey] = int(rng.integers(96, 161))
        col[grey] = 0
        shp[grey] = 0
        frames += list(shown)
        cols.append(col)
        shps.append(shp)
    return frames, torch.from_numpy(np.concatenate(cols)), torch.from_numpy(np.concatenate(shps))


def feature_bank(
    world: Any, encoder: FrameEncoder, seed: int = 0, *, degrade_p: float = 0.7, chunk: int = 2048
) -> dict[str, torch.Tensor]:
    """Encoder features (float16) of every frame of every scene of ``world``: ``{video_id: (n_frames, F)}``.

    A scene's frames are degraded like video with probability ``degrade_p`` (one draw per scene)."""
    from tempcore.world.scene import render_frames

    rng = np.random.default_rng([TRAIN_SEED_BASE, seed, 9])
    bank: dict[str, torch.Tensor] = {}
    with torch.inference_mode():
        for scene in world.scenes:
            frames = render_frames(scene, np.arange(scene.n_frames) / scene.fps)
            if rng.random() < degrade_p:
                frames = degrade(frames, rng)
            parts = [encoder(frames_tensor(list(frames[i : i + chunk]))) for i in range(0, len(frames), chunk)]
            bank[scene.video_id] = torch.cat(parts).half()
    return bank


def grey_features(encoder: FrameEncoder) -> torch.Tensor:
    """``(256, F)``: encoder features of a uniform grey frame of each level 0..255."""
    levels = np.arange(256, dtype=np.uint8)[:, None, None, None] * np.ones((1, IMAGE_SIDE, IMAGE_SIDE, 3), np.uint8)
    with torch.inference_mode():
        features: torch.Tensor = encoder(frames_tensor(list(levels)))
    return features


def gather_features(draws: Sequence[Draw], bank: Mapping[str, torch.Tensor], grey: torch.Tensor) -> torch.Tensor:
    """``(B, K, F)`` float32 features of a batch of draws (all with the same K)."""
    rows = []
    for d in draws:
        if d.indices is None:
            rows.append(grey[d.grey][None].expand(d.k, -1))
        else:
            rows.append(bank[d.video_id][list(d.indices)].float())
    return torch.stack(rows)


def build_nets(
    codec: TextCodec, seed: int, members: Sequence[str], encoder: FrameEncoder | None = None
) -> dict[str, AnswererNet]:
    """Freshly initialised members (member ``i`` from torch seed ``seed * 1000 + i``); frame members get a
    frozen copy of ``encoder``'s weights when given."""
    nets = {}
    colours, shapes = vocabulary()
    for i, name in enumerate(members):
        if name not in MEMBERS:
            raise ZooError(f"unknown zoo member {name!r} (known: {', '.join(MEMBERS)})")
        torch.manual_seed(seed * 1000 + i)
        net = AnswererNet(MEMBERS[name], codec.size, len(colours), len(shapes))
        if net.kind != "text":
            if encoder is not None:
                net.encoder.load_state_dict(encoder.state_dict())
            net.encoder.requires_grad_(False)
        nets[name] = net
    return nets


@dataclass
class TrainLog:
    """Mean training loss of each logged interval, per member (and ``"frame-encoder"``)."""

    losses: dict[str, list[float]]
    steps: int
    seconds: float


def train_members(
    nets: Mapping[str, AnswererNet],
    sampler: ExampleSampler,
    codec: TextCodec,
    bank: Mapping[str, torch.Tensor],
    grey: torch.Tensor,
    seed: int = 0,
    *,
    steps: int = 3000,
    batch_size: int = 128,
    lr: float = 3e-3,
    log_every: int = 100,
    log: Callable[[str], None] | None = print,
) -> dict[str, list[float]]:
    """Train the members' heads (the frame encoder stays frozen) on one shared stream of batches.

    Each step draws K from :data:`K_CHOICES` and ``batch_size`` examples, and takes one AdamW step per
    member (cosine decay after a 5% warm-up, gradient norm clipped at 1). Returns the mean loss of each
    logged interval per member."""
    opts = {m: torch.optim.AdamW(net.head_parameters(), lr=lr, weight_decay=1e-4) for m, net in nets.items()}
    rng = np.random.default_rng([TRAIN_SEED_BASE, seed, 7])
    losses: dict[str, list[float]] = {m: [] for m in nets}
    running: dict[str, list[float]] = {m: [] for m in nets}
    correct: dict[str, list[float]] = {m: [] for m in nets}
    for net in nets.values():
        net.train()
    start = time.perf_counter()
    for step in range(steps):
        k = int(K_CHOICES[int(rng.integers(len(K_CHOICES)))])
        draws = sampler.draws(batch_size, k, rng)
        features = gather_features(draws, bank, grey)
        questions, options, n = text_inputs(codec, [d.prompt for d in draws], [d.options for d in draws])
        answers = torch.tensor([d.answer for d in draws], dtype=torch.long)
        for name, net in nets.items():
            for group in opts[name].param_groups:
                group["lr"] = _cosine(lr, step, steps)
            scores = net(None, questions, options, n, features=features)
            loss = F.cross_entropy(scores, answers)
            opts[name].zero_grad(set_to_none=True)
            loss.backward()  # type: ignore[no-untyped-call, unused-ignore]  # torch: Tensor.backward is unannotated
            nn.utils.clip_grad_norm_(net.head_parameters(), 1.0)
            opts[name].step()
            running[name].append(float(loss.detach()))
            correct[name].append(float((scores.detach().argmax(-1) == answers).float().mean()))
        if (step + 1) % log_every == 0 or step + 1 == steps:
            parts = []
            for name in nets:
                losses[name].append(float(np.mean(running[name])))
                parts.append(f"{name} {losses[name][-1]:.3f}/{np.mean(correct[name]):.2f}")
                running[name].clear()
                correct[name].clear()
            if log is not None:
                log(f"step {step + 1}/{steps} ({time.perf_counter() - start:.0f}s) loss/acc: " + "  ".join(parts))
    for net in nets.values():
        net.eval()
    return losses


def train_answerers(
    out_dir: str | Path | None,
    seed: int = 0,
    *,
    steps: int = ANSWERER_STEPS,
    encoder_steps: int = ANSWERER_ENCODER_STEPS,
    members: Sequence[str] = tuple(MEMBERS),
    n_questions: int = 8000,
    batch_size: int = 128,
    log_every: int = 100,
    log: Callable[[str], None] | None = print,
    world: Any = None,
) -> tuple[dict[str, AnswererNet], TextCodec, TrainLog]:
    """Train the whole zoo (frame encoder, then every member) from ``seed``; save into ``out_dir`` if given.

    Deterministic for a seed on a given machine and torch thread count."""
    start = time.perf_counter()
    world = world if world is not None else training_world(seed, n_questions)
    sampler = ExampleSampler(world, reorder_p=REORDER_P)
    codec = TextCodec.build(sampler.prompts())
    losses: dict[str, list[float]] = {}
    encoder = None
    if any(MEMBERS.get(m) != "text" for m in members):
        encoder, losses["frame-encoder"] = train_frame_encoder(
            world, seed, steps=encoder_steps, log_every=log_every, log=log
        )
        t0 = time.perf_counter()
        bank = feature_bank(world, encoder, seed)
        grey = grey_features(encoder)
        if log is not None:
            frames = sum(int(v.shape[0]) for v in bank.values())
            log(f"feature bank: {frames} frames of {len(bank)} videos ({time.perf_counter() - t0:.0f}s)")
    else:
        bank, grey = {}, torch.zeros(256, 1)
    nets = build_nets(codec, seed, members, encoder)
    losses.update(
        train_members(nets, sampler, codec, bank, grey, seed, steps=steps, batch_size=batch_size,
                      log_every=log_every, log=log)
    )
    train_log = TrainLog(losses, steps, time.perf_counter() - start)
    if out_dir is not None:
        for name, net in nets.items():
            save_answerer(
                out_dir, name, net, codec,
                {"trained": {"seed": seed, "steps": steps, "encoder_steps": encoder_steps,
                             "n_questions": len(sampler.questions), "train_world_seed": world.config.seed,
                             "final_loss": losses[name][-1] if losses.get(name) else None}},
            )
    return nets, codec, train_log


def train_all(
    out_dir: str | Path,
    seed: int = 0,
    *,
    steps: int = ANSWERER_STEPS,
    encoder_steps: int = ANSWERER_ENCODER_STEPS,
    hf_steps: int | None = None,
    include_hf: bool = True,
    log: Callable[[str], None] | None = print,
) -> dict[str, Any]:
    """Rebuild every answerer from ``seed`` into ``out_dir``: ``answerers/`` (the zoo members) and the
    HF answerer's folder (:data:`tempcore.world.hf_answerer.HF_NAME`). Returns a summary (seconds,
    final losses, paths)."""
    out = Path(out_dir)
    start = time.perf_counter()
    _, _, zoo_log = train_answerers(out / "answerers", seed, steps=steps, encoder_steps=encoder_steps, log=log)
    summary: dict[str, Any] = {
        "answerers": str(out / "answerers"),
        "answerer_seconds": round(zoo_log.seconds, 1),
        "final_loss": {m: v[-1] for m, v in zoo_log.losses.items() if v},
    }
    if include_hf:
        from tempcore.world.hf_answerer import HF_NAME, train_hf_answerer

        kwargs: dict[str, Any] = {} if hf_steps is None else {"steps": hf_steps}
        hf_log = train_hf_answerer(out / HF_NAME, seed, log=log, **kwargs)
        summary["hf"] = str(out / HF_NAME)
        summary["hf_seconds"] = round(hf_log.seconds, 1)
        summary["final_loss"][HF_NAME] = hf_log.losses[-1] if hf_log.losses else None
    summary["seconds"] = round(time.perf_counter() - start, 1)
    return summary
