"""Training and evaluation data of the zoo: examples drawn from a world with a mix of frame picks."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tempcore.models.base import (
    ModelRequest,
)
from tempcore.world.answerers.constants import GREY, PICKS, TEMPLATES, ZooError
from tempcore.world.answerers.text import TextCodec, _bag, question_text, vocabulary
from tempcore.world.families import ORDER_SENSITIVE_FAMILIES, seen_first


def quadrant_targets(scene: Any, times: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """``(colours, shapes)``, each ``(N, 4)`` int: per frame and quadrant (slot 0..3: top-left,
    top-right, bottom-left, bottom-right), 1 + the index of the colour / shape shown there, 0 if empty."""
    colours, shapes = vocabulary()
    col = np.zeros((len(times), 4), dtype=np.int64)
    shp = np.zeros((len(times), 4), dtype=np.int64)
    for obj in scene.objects:
        for row, t in enumerate(times):
            if obj.visible_at(float(t)):
                col[row, obj.slot] = 1 + colours.index(obj.colour_at(float(t)))
                shp[row, obj.slot] = 1 + shapes.index(obj.shape)
    return col, shp





@dataclass(frozen=True)
class Example:
    """One training / evaluation item: frames as shown, the rendered prompt, options and answer."""

    frames: np.ndarray
    timestamps: tuple[float, ...]
    prompt: str
    options: tuple[str, ...]
    answer: int
    family: str
    planted: str
    pick: str
    sample_id: str = ""

    def request(self) -> ModelRequest:
        """The :class:`ModelRequest` a model is shown for this example."""
        return ModelRequest(
            images=tuple(self.frames), prompt=self.prompt, options=self.options,
            timestamps=self.timestamps, key=self.sample_id,
        )


@dataclass(frozen=True)
class Draw:
    """A planned example: the question, the frames to show (``indices``; ``None``: ``k`` grey images of
    level ``grey``), the rendered prompt."""

    question: int
    video_id: str
    indices: tuple[int, ...] | None
    grey: int
    k: int
    timestamps: tuple[float, ...]
    prompt: str
    options: tuple[str, ...]
    answer: int
    family: str
    planted: str
    pick: str
    sample_id: str
    template: str = "default"
    shown_timestamps: bool = False


def _scene_windows(scene: Any) -> list[Any]:
    out = []
    for obj in scene.objects:
        out += [w for w in (obj.appear, obj.absent, obj.recolour) if w is not None]
    return out


def _frames_in(scene: Any, window: Any) -> np.ndarray:
    idx = np.arange(scene.n_frames)
    times = idx / scene.fps
    inside: np.ndarray = idx[(times + 1e-9 >= window.start) & (times + 1e-9 < window.end)]
    return inside


def _by_distinct_seconds(candidates: np.ndarray, fps: float, k: int, rng: np.random.Generator) -> list[int]:
    """Up to ``k`` frames of ``candidates``, one per randomly chosen second first, then any others."""
    if k <= 0 or candidates.size == 0:
        return []
    seconds = np.floor(candidates / fps + 1e-9).astype(int)
    chosen: list[int] = []
    for s in rng.permutation(np.unique(seconds))[:k]:
        pool = candidates[seconds == s]
        chosen.append(int(pool[rng.integers(pool.size)]))
    if len(chosen) < k:
        rest = np.setdiff1d(candidates, chosen)
        chosen += [int(x) for x in rng.choice(rest, size=min(k - len(chosen), rest.size), replace=False)]
    return chosen


def pick_indices(
    scene: Any, window: Any, pick: str, k: int, rng: np.random.Generator
) -> list[int] | None:
    """Frame indices (sorted) of a pick of ``k`` frames of ``scene`` (``None`` for ``grey``).

    ``window`` is the question's evidence window (or None); the picks are listed in
    ``docs/design/world.md``.
    Fewer than ``k`` indices come back only when the video has fewer than ``k`` frames.
    """
    n = scene.n_frames
    k_eff = min(k, n)
    fps = scene.fps
    if pick == "grey":
        return None
    if pick == "uniform":
        return [int((j + 0.5) * n / k_eff) for j in range(k_eff)]
    if pick == "random":
        return sorted(int(x) for x in rng.choice(n, size=k_eff, replace=False))
    windows = _scene_windows(scene)
    if pick == "dense":
        target = window if (window is not None and rng.random() < 0.7) else None
        if target is None and windows:
            target = windows[int(rng.integers(len(windows)))]
        stride = int(rng.integers(1, 3))
        if (k_eff - 1) * stride + 1 > n:
            stride = 1
        span = (k_eff - 1) * stride + 1
        inside = _frames_in(scene, target) if target is not None else np.empty(0, dtype=int)
        centre = int(inside[rng.integers(inside.size)]) if inside.size else int(rng.integers(n))
        start = int(np.clip(centre - span // 2, 0, n - span))
        return list(range(start, start + span, stride))
    if pick == "mixed":
        target = window
        if target is None and windows:
            target = windows[int(rng.integers(len(windows)))]
        if target is None:
            return pick_indices(scene, window, "random", k, rng)
        inside = _frames_in(scene, target)
        m = int(rng.integers(1, min(3, k_eff, inside.size) + 1)) if inside.size else 0
        chosen = _by_distinct_seconds(inside, fps, m, rng)
        outside = np.setdiff1d(np.arange(n), inside)
        chosen += _by_distinct_seconds(outside, fps, k_eff - len(chosen), rng)
        return sorted(chosen)
    if pick == "outside":
        mask = np.ones(n, dtype=bool)
        for w in [window] if window is not None else windows:
            mask[_frames_in(scene, w)] = False
        candidates = np.arange(n)[mask]
        if candidates.size < k_eff:
            return pick_indices(scene, window, "random", k, rng)
        return sorted(_by_distinct_seconds(candidates, fps, k_eff, rng))
    raise ZooError(f"unknown frame pick {pick!r} (known: {', '.join(PICKS)})")


def degrade(frames: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Frames degraded like H.264 4:2:0 video: chroma averaged over 2 x 2 pixels, slight noise."""
    x = frames.astype(np.float32)
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    y = 0.299 * r + 0.587 * g + 0.114 * b
    u, v = (b - y) * 0.564, (r - y) * 0.713
    n, h, w = y.shape
    if h % 2 == 0 and w % 2 == 0:
        def sub(c: np.ndarray) -> np.ndarray:
            c2 = c.reshape(n, h // 2, 2, w // 2, 2).mean(axis=(2, 4))
            return np.repeat(np.repeat(c2, 2, axis=1), 2, axis=2)

        u, v = sub(u), sub(v)
    r = y + 1.403 * v
    b = y + 1.773 * u
    g = (y - 0.299 * r - 0.114 * b) / 0.587
    out = np.stack([r, g, b], axis=-1) + rng.normal(0.0, rng.uniform(0.0, 3.0), size=x.shape)
    return np.clip(np.round(out), 0, 255).astype(np.uint8)


class ExampleSampler:
    """Training / evaluation examples from a planned world (frames rendered in memory); ``families``
    restricts the questions to those families.

    ``reorder_p``: the probability that a draw shows its frames out of chronological order (half of
    those reversed, half in a random permutation; picks of one frame and grey frames never). The
    answer of a question whose family is order-sensitive
    (:data:`~tempcore.world.families.ORDER_SENSITIVE_FAMILIES`) then follows the shown order
    (:func:`~tempcore.world.families.seen_first`; unchanged when the frames do not show both
    objects); every other family's answer does not depend on the order. 0 (evaluation) draws
    exactly what it drew before this option existed."""

    def __init__(
        self,
        world: Any,
        *,
        picks: Mapping[str, float] | None = None,
        templates: Sequence[str] = TEMPLATES,
        degrade_p: float = 0.7,
        timestamps_p: float = 0.5,
        families: Sequence[str] | None = None,
        reorder_p: float = 0.0,
    ) -> None:
        self.world = world
        self.scenes = world.scene_map()
        self.questions = [q for q in world.questions if families is None or q.question.family in families]
        if not self.questions:
            raise ZooError(f"no question of the world belongs to the families {list(families or [])}")
        self.picks = dict(PICKS if picks is None else picks)
        unknown = sorted(set(self.picks) - set(PICKS))
        if unknown:
            raise ZooError(f"unknown frame picks {unknown} (known: {', '.join(PICKS)})")
        self.templates = tuple(templates)
        self.degrade_p = degrade_p
        self.timestamps_p = timestamps_p
        if not 0.0 <= reorder_p <= 1.0:
            raise ZooError(f"reorder_p must be in [0, 1], not {reorder_p}")
        self.reorder_p = reorder_p

    def prompts(self) -> Iterable[str]:
        """Every question text (:func:`question_text` of a rendered prompt) and option text the sampler
        can produce: the vocabulary's source."""
        from tempcore.prompts import render_prompt

        for wq in self.questions:
            q = wq.question
            for template in sorted(set(self.templates)):
                yield question_text(render_prompt(q.question, q.options, template), len(q.options))
            yield from q.options

    def draw(self, index: int, pick: str, k: int, rng: np.random.Generator) -> Draw:
        """Plan the example of question ``index`` under ``pick`` with ``k`` frames."""
        from tempcore.prompts import render_prompt

        wq = self.questions[index]
        scene = self.scenes[wq.video_id]
        q = wq.question
        idx = pick_indices(scene, q.window, pick, k, rng)
        grey = GREY if rng.random() < 0.7 else int(rng.integers(96, 161))
        answer = q.answer
        if idx is None:
            times = tuple(float(t) for t in np.linspace(0, scene.duration, k, endpoint=False))
        else:
            if self.reorder_p > 0 and len(idx) > 1 and rng.random() < self.reorder_p:
                perm = np.arange(len(idx))[::-1] if rng.random() < 0.5 else rng.permutation(len(idx))
                idx = [idx[int(i)] for i in perm]
            times = tuple(i / scene.fps for i in idx)
            if q.family in ORDER_SENSITIVE_FAMILIES:
                shown_first = seen_first(q, scene, times)
                answer = q.answer if shown_first is None else shown_first
        template = self.templates[int(rng.integers(len(self.templates)))]
        shown = times if rng.random() < self.timestamps_p else None
        prompt = render_prompt(q.question, q.options, template, timestamps=shown)
        return Draw(
            index, wq.video_id, None if idx is None else tuple(idx), grey, k, times, prompt, q.options,
            answer, q.family, q.planted, pick, wq.sample_id, template, shown is not None,
        )

    def rotations(self, draw: Draw) -> list[Draw]:
        """The draw with its options rotated cyclically by 0 .. n-1 (prompt re-rendered, answer moved)."""
        from tempcore.prompts import render_prompt, rotate_index, rotate_options

        question = self.questions[draw.question].question.question
        out = []
        for r in range(len(draw.options)):
            options, _ = rotate_options(draw.options, r)
            shown = draw.timestamps if draw.shown_timestamps else None
            out.append(
                dataclasses.replace(
                    draw, options=options, answer=rotate_index(draw.answer, r, len(options)),
                    prompt=render_prompt(question, options, draw.template, timestamps=shown),
                )
            )
        return out

    def render(self, draw: Draw, rng: np.random.Generator) -> Example:
        """The frames of a draw (rendered; degraded with probability ``degrade_p``)."""
        from tempcore.world.scene import render_frames

        scene = self.scenes[draw.video_id]
        if draw.indices is None:
            w, h = scene.size
            frames = np.full((draw.k, h, w, 3), draw.grey, dtype=np.uint8)
        else:
            frames = render_frames(scene, np.asarray(draw.timestamps))
            if rng.random() < self.degrade_p:
                frames = degrade(frames, rng)
        return Example(
            frames, draw.timestamps, draw.prompt, draw.options, draw.answer, draw.family, draw.planted,
            draw.pick, draw.sample_id,
        )

    def draw_pick(self, rng: np.random.Generator) -> str:
        names = list(self.picks)
        p = np.array([self.picks[x] for x in names], dtype=np.float64)
        return names[int(rng.choice(len(names), p=p / p.sum()))]

    def draws(self, n: int, k: int, rng: np.random.Generator) -> list[Draw]:
        """``n`` draws of random questions, each with its own random pick, ``k`` frames each."""
        return [self.draw(int(rng.integers(len(self.questions))), self.draw_pick(rng), k, rng) for _ in range(n)]

    def batch(self, n: int, k: int, rng: np.random.Generator) -> list[Example]:
        """``n`` rendered examples (see :meth:`draws`)."""
        return [self.render(d, rng) for d in self.draws(n, k, rng)]


def text_inputs(
    codec: TextCodec, prompts: Sequence[str], options: Sequence[Sequence[str]]
) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor], int]:
    """Question and option bags of a batch (every item with the same number of options)."""
    n = len(options[0])
    if any(len(o) != n for o in options):
        raise ZooError("a batch needs the same number of options in every item")
    questions = _bag(codec, [question_text(p, n) for p in prompts])
    return questions, _bag(codec, [o for opts in options for o in opts]), n
