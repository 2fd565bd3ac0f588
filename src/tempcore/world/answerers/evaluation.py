"""Evaluating zoo members on a world per family and pick, and printing the table."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from tempcore.models.base import (
    ModelRequest,
    ModelResponse,
)
from tempcore.world.answerers.constants import GREY, ZooError
from tempcore.world.answerers.sampling import Example, _frames_in, pick_indices


def evaluate(
    models: Mapping[str, Any],
    world: Any,
    *,
    picks: Sequence[str] = ("uniform", "grey", "dense_in_window"),
    k: int = 8,
    seed: int = 0,
    frames: Callable[[Any, list[int]], np.ndarray] | None = None,
    batch_size: int = 32,
) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """Per model x pick x family: accuracy (argmax) and mean probability on the correct option.

    ``picks`` are :data:`PICKS` names plus ``dense_in_window`` (K consecutive frames centred in the
    question's window; a uniform pick for questions without one). ``frames(scene, indices)`` supplies
    frames (default: rendered in memory; pass a decoder to evaluate on the encoded videos). Every model
    sees the same frames. Returns ``{model: {pick: {family: {"acc", "p_correct", "n"}}}}`` with an
    ``"all"`` family too.
    """
    from tempcore.prompts import render_prompt
    from tempcore.world.scene import render_frames

    scenes = world.scene_map()
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = {m: {} for m in models}
    for pick in picks:
        rng = np.random.default_rng([seed, zlib.crc32(pick.encode())])
        examples = []
        for wq in world.questions:
            scene = scenes[wq.video_id]
            q = wq.question
            if pick == "dense_in_window":
                if q.window is None:
                    idx: list[int] | None = pick_indices(scene, None, "uniform", k, rng)
                else:
                    inside = _frames_in(scene, q.window)
                    centre = int(inside[inside.size // 2])
                    start = int(np.clip(centre - k // 2, 0, max(0, scene.n_frames - k)))
                    idx = list(range(start, min(scene.n_frames, start + k)))
            else:
                idx = pick_indices(scene, q.window, pick, k, rng)
            if idx is None:
                w, h = scene.size
                images = np.full((k, h, w, 3), GREY, dtype=np.uint8)
            else:
                images = frames(scene, idx) if frames is not None else render_frames(scene, np.array(idx) / scene.fps)
            prompt = render_prompt(q.question, q.options, "default")
            examples.append(
                Example(images, (), prompt, q.options, q.answer, q.family, q.planted, pick, wq.sample_id)
            )
        requests = [
            ModelRequest(images=tuple(e.frames), prompt=e.prompt, options=e.options, key=e.sample_id)
            for e in examples
        ]
        for name, model in models.items():
            responses: list[ModelResponse] = []
            for i in range(0, len(requests), batch_size):
                responses += model.answer(requests[i : i + batch_size], method="option_scores")
            out[name][pick] = _per_family(examples, responses)
    return out


def _per_family(examples: Sequence[Example], responses: Sequence[ModelResponse]) -> dict[str, dict[str, float]]:
    acc: dict[str, list[float]] = {}
    prob: dict[str, list[float]] = {}
    for e, r in zip(examples, responses):
        if not r.ok or r.option_probs is None:
            raise ZooError(f"sample {e.sample_id}: the model failed: {r.error}")
        probs = r.option_probs
        right = float(int(np.argmax(probs)) == e.answer)
        for fam in (e.family, "all"):
            acc.setdefault(fam, []).append(right)
            prob.setdefault(fam, []).append(float(probs[e.answer]))
    return {
        fam: {"acc": float(np.mean(acc[fam])), "p_correct": float(np.mean(prob[fam])), "n": len(acc[fam])}
        for fam in acc
    }


def format_table(results: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]], key: str = "acc") -> str:
    """A Markdown table: one row per model x pick, one column per family (``key``: acc or p_correct)."""
    families: list[str] = []
    for per_pick in results.values():
        for per_family in per_pick.values():
            for fam in per_family:
                if fam not in families and fam != "all":
                    families.append(fam)
    families.append("all")
    lines = ["| model | frames | " + " | ".join(families) + " |", "|" + "---|" * (len(families) + 2)]
    for model, per_pick in results.items():
        for pick, per_family in per_pick.items():
            cells = [f"{per_family[f][key]:.2f}" if f in per_family else "" for f in families]
            lines.append(f"| {model} | {pick} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
