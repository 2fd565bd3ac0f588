"""The synthetic world: procedural videos with planted temporal ground truth, and their questions.

:func:`plan_world` decides everything (scenes and questions) from a seed, in memory;
:func:`generate_world` also writes it: the videos as real encoded files (H.264 in MP4 through
:func:`tempcore.video.synthetic.write_video`), ``annotations.jsonl`` in the generic benchmark format
(``docs/benchmark-format.md``) and ``world.json`` (the configuration and every scene, so that
:func:`load_world` can render any frame again without decoding).

Every random draw comes from a generator seeded by ``(seed, purpose, index)``, so the same seed gives
the same world, byte for byte, on any machine. The steps (each in full in ``docs/design/world.md``):

1. **Question counts**: ``n_questions`` split over the families of :mod:`tempcore.world.families` in
   proportion to ``weights`` (largest remainder); the default mix plants a quarter of the questions
   in each category.
2. **Videos**: a video hosts at most one question per scene slot (square, circle, brief triangle,
   shape pair); ``appear_order`` videos never also host a ``brief_colour`` question.
3. **Scenes**: all colours in a scene are distinct; event windows lie on the frame grid, at least
   1 s from either end and from each other. A video with an event lasts at least ``k_max + 6``
   seconds, so at least ``k_max`` whole seconds lie outside any 1-3 s window: MaxProb / MinProb with
   K <= ``k_max`` frames from distinct seconds never *have* to enter (or leave) one. Other videos
   last ``duration[0]`` .. ``duration[1]`` whole seconds.
4. **Answers**: the correct option's position is balanced per family (each position correct for
   ``count / 4`` questions, +-1), as is which object of an order question shows first.

Annotation rows (one per question, JSONL, keys in this order): ``id`` (``{video_id}-{family}``),
``video`` (``videos/{video_id}.mp4``), ``question``, ``options`` (4 texts), ``answer`` (0-based JSON
integer), ``planted`` (the category), ``family``, ``window`` (``[start, end)`` seconds of the
evidence: the brief triangle's appearance for ``brief_colour``, the circle's absence / recolouring
for the visual-bias families; ``null`` otherwise), ``video_duration`` (s) and ``evidence`` (what
the question is about). Every field but the generic ones lands in ``Sample.metadata``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tempcore.errors import TempcoreError
from tempcore.records import Sample
from tempcore.world.families import (
    DEFAULT_WEIGHTS,
    FAMILIES,
    N_OPTIONS,
    ORDER_ROLES,
    PLANTED_CATEGORIES,
    SLOT_ANCHOR,
    SLOT_BRIEF,
    SLOT_CIRCLE,
    SLOT_PAIR,
    SLOT_TEXT,
    FamilyError,
    Question,
    make_question,
)
from tempcore.world.scene import BACKGROUNDS, COLOURS, Interval, Scene, SceneObject, iter_scene_frames

WORLD_FORMAT = "tempcore-world/1"
BENCHMARK_NAME = "tempcore-world"
ANNOTATIONS_FILE = "annotations.jsonl"
WORLD_FILE = "world.json"
VIDEO_DIR = "videos"
SLOT_ORDER = (SLOT_ANCHOR, SLOT_CIRCLE, SLOT_BRIEF, SLOT_TEXT, SLOT_PAIR)
_ROLE_RADIUS = {"anchor": 0.14, "circle": 0.14, "brief": 0.15, "extra": 0.13, "order_a": 0.15, "order_b": 0.14}
_ROLE_SHAPE = {"anchor": "square", "circle": "circle", "brief": "triangle", "extra": "diamond",
               "order_a": "triangle", "order_b": "diamond"}
_ORDER_WINDOW = (0.25, 0.30)  # each order object's window, as a fraction of the video
_P_BRIEF_DISTRACTOR = 0.3
_P_EXTRA = 0.5
_EVENT_MARGIN_S = 1.0
_EVENT_LEAD_S = 6  # an event video lasts >= k_max + this many seconds


class WorldError(TempcoreError):
    """A world cannot be generated or read as asked (names the file or parameter and the reason)."""


# --- configuration ------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorldConfig:
    """Everything that determines a world (``world.json`` stores it).

    size: (width, height) in pixels (even, >= 16); fps: frame rate of the videos; duration: (min, max)
    seconds of a video; window: (min, max) seconds of an event window; k_max: the largest K for which
    the planted MaxProb / MinProb guarantees hold (see the module docstring); crf: x264 quality of the
    written videos (lower is closer to the rendered frames).
    """

    n_questions: int = 400
    seed: int = 0
    size: tuple[int, int] = (48, 48)
    fps: float = 10.0
    duration: tuple[float, float] = (10.0, 40.0)
    window: tuple[float, float] = (1.0, 3.0)
    k_max: int = 8
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    crf: int = 18

    def __post_init__(self) -> None:
        if not isinstance(self.n_questions, int) or self.n_questions < 1:
            raise WorldError(f"n_questions must be a positive integer, not {self.n_questions!r}")
        w, h = self.size
        if w < 16 or h < 16 or w % 2 or h % 2:
            raise WorldError(f"size must be even and at least 16 x 16 pixels, not {self.size}")
        if not self.fps > 0:
            raise WorldError(f"fps must be positive, not {self.fps}")
        lo, hi = self.duration
        if not 2 <= lo <= hi:
            raise WorldError(f"duration must be (min, max) seconds with 2 <= min <= max, not {self.duration}")
        wlo, whi = self.window
        if not 0 < wlo <= whi or whi * self.fps < 1:
            raise WorldError(f"window must be (min, max) seconds with 0 < min <= max, not {self.window}")
        if self.k_max < 1:
            raise WorldError(f"k_max must be >= 1, not {self.k_max}")
        unknown = sorted(set(self.weights) - set(FAMILIES))
        if unknown:
            raise WorldError(f"unknown families in weights: {unknown} (known: {', '.join(FAMILIES)})")
        if any(not (v >= 0 and math.isfinite(v)) for v in self.weights.values()) or sum(self.weights.values()) <= 0:
            raise WorldError(f"weights must be non-negative with a positive sum: {dict(self.weights)}")
        if self.needs_events and self.event_min_duration > hi:
            raise WorldError(
                f"videos with an event must last >= k_max + {_EVENT_LEAD_S} = {self.event_min_duration} s, "
                f"but duration max is {hi} s; raise it or lower k_max"
            )

    @property
    def needs_events(self) -> bool:
        return any(
            self.weights.get(name, 0) > 0
            for name in ("brief_colour", "circle_left", "circle_recoloured", "appear_order")
        )

    @property
    def event_min_duration(self) -> float:
        return float(max(self.duration[0], self.k_max + _EVENT_LEAD_S, 2 * self.window[1] + 3))

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_questions": self.n_questions,
            "seed": self.seed,
            "size": list(self.size),
            "fps": self.fps,
            "duration": list(self.duration),
            "window": list(self.window),
            "k_max": self.k_max,
            "weights": {k: float(self.weights[k]) for k in FAMILIES if k in self.weights},
            "crf": self.crf,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WorldConfig:
        return cls(
            n_questions=int(d["n_questions"]),
            seed=int(d["seed"]),
            size=(int(d["size"][0]), int(d["size"][1])),
            fps=float(d["fps"]),
            duration=(float(d["duration"][0]), float(d["duration"][1])),
            window=(float(d["window"][0]), float(d["window"][1])),
            k_max=int(d["k_max"]),
            weights={str(k): float(v) for k, v in d["weights"].items()},
            crf=int(d.get("crf", 18)),
        )


# --- the in-memory world ------------------------------------------------------------------------


@dataclass(frozen=True)
class WorldQuestion:
    """A question about one scene; ``sample`` is the benchmark sample it becomes."""

    sample_id: str
    video_id: str
    question: Question

    def row(self, scene: Scene) -> dict[str, Any]:
        """The annotation row (generic format)."""
        q = self.question
        return {
            "id": self.sample_id,
            "video": f"{VIDEO_DIR}/{self.video_id}.mp4",
            "question": q.question,
            "options": list(q.options),
            "answer": q.answer,
            "planted": q.planted,
            "family": q.family,
            "window": None if q.window is None else [q.window.start, q.window.end],
            "video_duration": scene.duration,
            "evidence": dict(q.evidence),
        }

    def sample(self, scene: Scene, benchmark: str = BENCHMARK_NAME) -> Sample:
        row = self.row(scene)
        meta = {k: row[k] for k in ("planted", "family", "window", "video_duration", "evidence")}
        return Sample(
            benchmark=benchmark,
            sample_id=self.sample_id,
            video=row["video"],
            question=row["question"],
            options=tuple(row["options"]),
            answer=row["answer"],
            metadata=meta,
        )


@dataclass(frozen=True)
class World:
    """A planned world: its configuration, scenes (one per video) and questions."""

    config: WorldConfig
    scenes: tuple[Scene, ...]
    questions: tuple[WorldQuestion, ...]

    def scene(self, video_id: str) -> Scene:
        for s in self.scenes:
            if s.video_id == video_id:
                return s
        raise KeyError(video_id)

    def scene_map(self) -> dict[str, Scene]:
        return {s.video_id: s for s in self.scenes}

    def samples(self, benchmark: str = BENCHMARK_NAME) -> list[Sample]:
        scenes = self.scene_map()
        return [q.sample(scenes[q.video_id], benchmark) for q in self.questions]

    def rows(self) -> list[dict[str, Any]]:
        scenes = self.scene_map()
        return [q.row(scenes[q.video_id]) for q in self.questions]

    def planted(self) -> dict[str, str]:
        """``{sample_id: planted category}``."""
        return {q.sample_id: q.question.planted for q in self.questions}

    def counts(self) -> dict[str, dict[str, int]]:
        fam = {name: 0 for name in FAMILIES}
        cat = {name: 0 for name in PLANTED_CATEGORIES}
        for q in self.questions:
            fam[q.question.family] += 1
            cat[q.question.planted] += 1
        return {"families": fam, "planted": cat}


def _rng(seed: int, *purpose: int) -> np.random.Generator:
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, *purpose])


def family_counts(n: int, weights: Mapping[str, float]) -> dict[str, int]:
    """Split ``n`` over the families in proportion to ``weights`` (largest remainder; ties by family order)."""
    names = [f for f in FAMILIES if weights.get(f, 0) > 0]
    total = sum(weights[f] for f in names)
    exact = [n * weights[f] / total for f in names]
    counts = [int(math.floor(x)) for x in exact]
    order = sorted(range(len(names)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[: n - sum(counts)]:
        counts[i] += 1
    return {f: c for f, c in zip(names, counts) if c}


def _window(rng: np.random.Generator, n_frames: int, fps: float, cfg: WorldConfig,
            taken: list[tuple[int, int]]) -> tuple[int, int]:
    """A window ``[s, e)`` in frames, >= 1 s from both ends and from every window in ``taken``."""
    lo_len = max(1, int(round(cfg.window[0] * fps)))
    hi_len = max(lo_len, int(round(cfg.window[1] * fps)))
    margin = int(round(_EVENT_MARGIN_S * fps))
    for _ in range(1000):
        length = int(rng.integers(lo_len, hi_len + 1))
        last_start = n_frames - margin - length
        if last_start < margin:
            break
        start = int(rng.integers(margin, last_start + 1))
        if all(start >= e + margin or start + length + margin <= s for s, e in taken):
            return start, start + length
    raise WorldError(f"no room for a {cfg.window} s window in a {n_frames / fps:.1f} s video")


def _order_windows(rng: np.random.Generator, n_frames: int, fps: float) -> tuple[tuple[int, int], tuple[int, int]]:
    """Two windows ``[s, e)`` in frames, one after the other, each :data:`_ORDER_WINDOW` of the video,
    >= 1 s from both ends and from each other."""
    margin = int(round(_EVENT_MARGIN_S * fps))
    lo, hi = (max(1, int(math.ceil(f * n_frames))) for f in _ORDER_WINDOW)
    la, lb = (int(rng.integers(lo, max(lo, hi) + 1)) for _ in range(2))
    free = n_frames - 3 * margin - la - lb
    if free < 0:
        raise WorldError(f"no room for two order windows in a {n_frames / fps:.1f} s video")
    u1, u2 = sorted(int(x) for x in rng.integers(0, free + 1, size=2))
    start_a = margin + u1
    start_b = start_a + la + margin + (u2 - u1)
    return (start_a, start_a + la), (start_b, start_b + lb)


def _drift(rng: np.random.Generator) -> tuple[float, float, float, float, float, float]:
    ax, ay = rng.uniform(0.01, 0.05, size=2)
    fx, fy = rng.uniform(0.05, 0.25, size=2)
    px, py = rng.uniform(0.0, 2 * math.pi, size=2)
    return tuple(round(float(v), 4) for v in (ax, ay, fx, fy, px, py))  # type: ignore[return-value]


def make_scene(
    video_id: str,
    rng: np.random.Generator,
    cfg: WorldConfig,
    *,
    circle_event: str | None = None,
    brief: bool | None = None,
    order: bool = False,
    order_first: str | None = None,
) -> Scene:
    """A random scene. ``circle_event`` (``none`` / ``absent`` / ``recolour``) and ``brief`` fix what a
    question needs; ``None`` draws them (circle: none 1/2, absent 1/4, recolour 1/4; brief 0.3).
    ``order``: the scene of an ``appear_order`` question: no brief triangle and no diamond, but a
    triangle (role ``order_a``) and a diamond (``order_b``) in those quadrants, each visible only in a
    window of :data:`_ORDER_WINDOW` of the video (on the frame grid, >= 1 s from either end and from
    each other). They may overlap the circle's event window (other quadrant). ``order_first``
    (``order_a`` / ``order_b``, see :data:`~tempcore.world.families.ORDER_ROLES`): the role whose window
    comes first; ``None`` draws it (1/2 each). The draw is made in either case, so the rest of the
    scene is the same whichever is asked for."""
    if order and brief:
        raise WorldError(f"scene {video_id}: an order scene has no brief object")
    if order_first is not None and (not order or order_first not in ORDER_ROLES):
        raise WorldError(f"scene {video_id}: order_first {order_first!r} needs an order scene and one of "
                         f"{', '.join(ORDER_ROLES)}")
    if order:
        brief = False
    if circle_event is None:
        circle_event = ("none", "none", "absent", "recolour")[int(rng.integers(4))]
    if circle_event not in ("none", "absent", "recolour"):
        raise WorldError(f"unknown circle event {circle_event!r}")
    if brief is None:
        brief = bool(rng.random() < _P_BRIEF_DISTRACTOR)
    extra = bool(rng.random() < _P_EXTRA)
    has_event = brief or order or circle_event != "none"
    lo = cfg.event_min_duration if has_event else cfg.duration[0]
    duration = float(rng.integers(int(math.ceil(lo)), int(math.floor(cfg.duration[1])) + 1))
    fps = float(cfg.fps)
    n_frames = int(round(duration * fps))
    slots = [int(s) for s in rng.permutation(4)]
    palette = sorted(COLOURS)
    colours = [palette[i] for i in rng.permutation(len(palette))]
    taken: list[tuple[int, int]] = []

    def interval(frames: tuple[int, int]) -> Interval:
        return Interval(frames[0] / fps, frames[1] / fps)

    def obj(role: str, slot: int, colour: str, **kw: Any) -> SceneObject:
        return SceneObject(_ROLE_SHAPE[role], colour, slot, role, _ROLE_RADIUS[role], _drift(rng), **kw)

    objects = [obj("anchor", slots[0], colours.pop())]
    circle_colour = colours.pop()
    if circle_event == "none":
        objects.append(obj("circle", slots[1], circle_colour))
    else:
        frames = _window(rng, n_frames, fps, cfg, taken)
        taken.append(frames)
        if circle_event == "absent":
            objects.append(obj("circle", slots[1], circle_colour, absent=interval(frames)))
        else:
            objects.append(obj("circle", slots[1], circle_colour, recolour=interval(frames),
                               recolour_to=colours.pop()))
    if brief:
        frames = _window(rng, n_frames, fps, cfg, taken)
        taken.append(frames)
        objects.append(obj("brief", slots[2], colours.pop(), appear=interval(frames)))
    if order:
        frames_a, frames_b = _order_windows(rng, n_frames, fps)  # the first window, then the second
        drawn_b_first = bool(rng.random() < 0.5)  # always drawn: the same random stream either way
        b_first = drawn_b_first if order_first is None else order_first == ORDER_ROLES[1]
        if b_first:
            frames_a, frames_b = frames_b, frames_a
        objects.append(obj("order_a", slots[2], colours.pop(), appear=interval(frames_a)))
        objects.append(obj("order_b", slots[3], colours.pop(), appear=interval(frames_b)))
    elif extra:
        objects.append(obj("extra", slots[3], colours.pop()))
    backgrounds = sorted(BACKGROUNDS)
    return Scene(
        video_id=video_id,
        duration=duration,
        fps=fps,
        size=(int(cfg.size[0]), int(cfg.size[1])),
        background=backgrounds[int(rng.integers(len(backgrounds)))],
        noise_seed=int(rng.integers(2**31)),
        objects=tuple(objects),
    )


def plan_world(
    n_questions: int = 400,
    seed: int = 0,
    *,
    size: tuple[int, int] | int = (48, 48),
    fps: float = 10.0,
    duration: tuple[float, float] = (10.0, 40.0),
    window: tuple[float, float] = (1.0, 3.0),
    k_max: int = 8,
    weights: Mapping[str, float] | None = None,
    crf: int = 18,
) -> World:
    """Plan a world in memory (no files): scenes and questions, deterministic in ``seed``.

    Render its frames with :func:`tempcore.world.render_frames`; write it with :func:`generate_world`.
    """
    if isinstance(size, int):
        size = (size, size)
    cfg = WorldConfig(n_questions, seed, tuple(size), float(fps), tuple(duration), tuple(window),  # type: ignore[arg-type]
                      k_max, dict(DEFAULT_WEIGHTS if weights is None else weights), crf)
    return plan_from_config(cfg)


def plan_from_config(cfg: WorldConfig) -> World:
    """:func:`plan_world` for a :class:`WorldConfig`."""
    counts = family_counts(cfg.n_questions, cfg.weights)
    plan_rng = _rng(cfg.seed, 0)
    jobs: dict[str, list[str]] = {slot: [] for slot in SLOT_ORDER}
    for name, count in counts.items():
        jobs[FAMILIES[name].slot].extend([name] * count)
    for slot in SLOT_ORDER:
        order = plan_rng.permutation(len(jobs[slot]))
        jobs[slot] = [jobs[slot][i] for i in order]
    positions: dict[str, list[int]] = {}
    for name, count in counts.items():
        balanced = [j % N_OPTIONS for j in range(count)]
        positions[name] = [balanced[i] for i in plan_rng.permutation(count)]
    # which object of each order question shows first: order_a (the triangle) for half, order_b (the
    # diamond) for the other half, permuted; drawn after the positions, so they do not change
    n_pair = len(jobs[SLOT_PAIR])
    first_roles = [ORDER_ROLES[j % 2] for j in range(n_pair)]
    order_first = [first_roles[i] for i in plan_rng.permutation(n_pair)]
    used = {name: 0 for name in counts}
    family_index = {name: i for i, name in enumerate(FAMILIES)}

    # the order questions' scenes use the brief triangle's quadrant: they go to the videos after those
    # of the brief questions (videos len(brief jobs), len(brief jobs) + 1, ...)
    pair_first = len(jobs[SLOT_BRIEF])
    n_videos = max(max(len(v) for s, v in jobs.items() if s != SLOT_PAIR), pair_first + len(jobs[SLOT_PAIR]))
    width = max(4, len(str(n_videos - 1)))
    scenes: list[Scene] = []
    questions: list[WorldQuestion] = []
    for v in range(n_videos):
        video_id = f"v{v:0{width}d}"
        mine = {slot: jobs[slot][v] for slot in SLOT_ORDER if slot != SLOT_PAIR and v < len(jobs[slot])}
        first_role = None
        if 0 <= v - pair_first < len(jobs[SLOT_PAIR]):
            mine[SLOT_PAIR] = jobs[SLOT_PAIR][v - pair_first]
            first_role = order_first[v - pair_first]
        circle_family = mine.get(SLOT_CIRCLE)
        scene = make_scene(
            video_id,
            _rng(cfg.seed, 1, v),
            cfg,
            circle_event=FAMILIES[circle_family].circle_event if circle_family else None,
            brief=True if SLOT_BRIEF in mine else None,
            order=SLOT_PAIR in mine,
            order_first=first_role,
        )
        scenes.append(scene)
        for slot in SLOT_ORDER:
            if slot not in mine:
                continue
            name = mine[slot]
            position = positions[name][used[name]]
            used[name] += 1
            try:
                q = make_question(name, scene, _rng(cfg.seed, 2, v, family_index[name]), position)
            except FamilyError as exc:  # a bug in the planner, never bad user input
                raise WorldError(f"world seed {cfg.seed}: {exc}") from exc
            questions.append(WorldQuestion(f"{video_id}-{name}", video_id, q))
    return World(cfg, tuple(scenes), tuple(questions))


# --- files --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorldManifest:
    """A world on disk: where its files are, and the planned world they hold."""

    root: Path
    annotations: Path
    world_file: Path
    world: World

    @property
    def config(self) -> WorldConfig:
        return self.world.config

    @property
    def scenes(self) -> tuple[Scene, ...]:
        return self.world.scenes

    @property
    def grounding(self) -> Path:
        """``grounding.jsonl``: the world's grounding questions (:mod:`tempcore.world.grounding`)."""
        from tempcore.world.grounding import GROUNDING_FILE

        return self.root / GROUNDING_FILE

    def video_path(self, video_id: str) -> Path:
        return self.root / VIDEO_DIR / f"{video_id}.mp4"

    @property
    def videos(self) -> list[Path]:
        return [self.video_path(s.video_id) for s in self.world.scenes]

    def samples(self, benchmark: str = BENCHMARK_NAME) -> list[Sample]:
        """The questions as samples (``video`` relative to :attr:`root`, the video root)."""
        return self.world.samples(benchmark)

    def planted(self) -> dict[str, str]:
        return self.world.planted()

    def counts(self) -> dict[str, dict[str, int]]:
        return self.world.counts()

    def summary(self) -> dict[str, Any]:
        """A JSON-able summary (what ``tempcore world generate --json`` prints)."""
        frames = sum(s.n_frames for s in self.world.scenes)
        return {
            "root": str(self.root),
            "annotations": str(self.annotations),
            "grounding": str(self.grounding),
            "world": str(self.world_file),
            "questions": len(self.world.questions),
            "videos": len(self.world.scenes),
            "frames": frames,
            "seconds": round(sum(s.duration for s in self.world.scenes), 3),
            **self.counts(),
            "config": self.config.to_dict(),
        }


def _dump_line(row: Mapping[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, separators=(", ", ": ")) + "\n"


def write_annotations(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write annotation rows as JSONL (deterministic bytes)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(_dump_line(row))
    tmp.replace(path)
    return path


#: x264 options under which the world's videos are reproducible (see :func:`write_scene_video`)
DETERMINISTIC_X264 = {"threads": "1", "x264-params": "mbtree=0"}


def write_scene_video(scene: Scene, path: str | Path, *, crf: int = 18) -> Path:
    """Encode a scene's frames into ``path`` (H.264, yuv420p, constant ``scene.fps``), streaming.

    Byte-identical for the same scene on one machine: x264 runs single-threaded and without its
    macroblock-tree rate control (``mbtree=0``). With mbtree on, x264 gave a different file for the
    same frames in about 1 encode of 40 at 48 x 48 (measured: 5 of 200 encodes of one world video;
    0 of 200 with ``mbtree=0``), so a regenerated world could change its answers."""
    from tempcore.video.synthetic import write_video

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp" + path.suffix)
    write_video(
        tmp,
        (frame for _, _, frame in iter_scene_frames(scene)),
        fps=scene.fps,
        duration=scene.n_frames / scene.fps,
        size=scene.size,
        codec="libx264",
        crf=crf,
        codec_options=DETERMINISTIC_X264,
    )
    tmp.replace(path)
    return path


def generate_world(
    out_dir: str | Path,
    n_questions: int = 400,
    seed: int = 0,
    *,
    size: tuple[int, int] | int = (48, 48),
    fps: float = 10.0,
    duration: tuple[float, float] = (10.0, 40.0),
    window: tuple[float, float] = (1.0, 3.0),
    k_max: int = 8,
    weights: Mapping[str, float] | None = None,
    crf: int = 18,
    progress: Callable[[int, int], None] | None = None,
) -> WorldManifest:
    """Plan a world and write it into ``out_dir``: ``videos/*.mp4``, ``annotations.jsonl``, ``world.json``
    and ``grounding.jsonl`` (the grounding questions of the same scenes, :mod:`tempcore.world.grounding`).

    The same arguments give byte-identical ``annotations.jsonl`` / ``world.json`` and videos that
    decode to identical frames. Files of an earlier world in ``out_dir`` are overwritten (videos of
    the earlier world that this one lacks are left alone). ``progress(done, total)`` is called after
    each video.
    """
    world = plan_world(n_questions, seed, size=size, fps=fps, duration=duration, window=window,
                       k_max=k_max, weights=weights, crf=crf)
    return write_world(world, out_dir, progress=progress)


VIDEO_WRITERS = 2
"""Videos a world writes at once (each x264 encoder single-threaded, so the files are the same bytes
as written one at a time, tested). Rendering is numpy, encoding is libx264 without the GIL.

The writers are forked processes where that is safe: the platform forks and this process runs no
other thread (a fork copies no lock another thread could hold); otherwise threads. Processes do
not share an interpreter lock, which the rendering's many small numpy operations hold: the
demo's 150 videos in 4.9-5.0 s with two processes against 8.0 s with two threads, the same bytes
(``benchmarks/world_writers.py`` on a 2-core machine)."""


def _writer_pool(n: int) -> Any:
    """``n`` video writers: forked processes when :data:`VIDEO_WRITERS` says it is safe, else threads."""
    import multiprocessing
    import threading
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    if n > 1 and threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("fork"))
    return ThreadPoolExecutor(max_workers=n, thread_name_prefix="tempcore-world")


def _write_scene(task: tuple[Scene, Path, int]) -> Path:
    scene, path, crf = task
    return write_scene_video(scene, path, crf=crf)


def write_world(world: World, out_dir: str | Path, *,
                progress: Callable[[int, int], None] | None = None, writers: int | None = None) -> WorldManifest:
    """Write a planned world into ``out_dir`` (see :func:`generate_world`); ``writers``: videos
    written at once (default :data:`VIDEO_WRITERS`, at most the machine's cores)."""
    root = Path(out_dir)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WorldError(f"{root}: cannot create the world folder: {exc}") from exc
    total = len(world.scenes)
    n = max(1, min(writers or VIDEO_WRITERS, os.cpu_count() or 1, total or 1))

    tasks = [(scene, root / VIDEO_DIR / f"{scene.video_id}.mp4", world.config.crf) for scene in world.scenes]
    with _writer_pool(n) as pool:
        for i, _path in enumerate(pool.map(_write_scene, tasks)):
            if progress is not None:
                progress(i + 1, total)
    annotations = write_annotations(root / ANNOTATIONS_FILE, world.rows())
    from tempcore.world.grounding import write_grounding

    write_grounding(root, world.scenes)  # the grounding questions of the same scenes (grounding.jsonl)
    doc = {
        "format": WORLD_FORMAT,
        "config": world.config.to_dict(),
        "annotations": ANNOTATIONS_FILE,
        "counts": world.counts(),
        "scenes": [s.to_dict() for s in world.scenes],
    }
    world_file = root / WORLD_FILE
    tmp = world_file.with_name(world_file.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    tmp.replace(world_file)
    return WorldManifest(root, annotations, world_file, world)


def load_world(root: str | Path) -> WorldManifest:
    """Read a world written by :func:`generate_world` (re-planned from its stored configuration and
    checked against the stored scenes, so a hand-edited or foreign ``world.json`` is refused)."""
    root = Path(root)
    world_file = root / WORLD_FILE
    try:
        doc = json.loads(world_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WorldError(f"{world_file}: not found (is {root} a world folder?)") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise WorldError(f"{world_file}: unreadable: {exc}") from exc
    if doc.get("format") != WORLD_FORMAT:
        raise WorldError(f"{world_file}: format {doc.get('format')!r}, expected {WORLD_FORMAT!r}")
    try:
        cfg = WorldConfig.from_dict(doc["config"])
        stored = [Scene.from_dict(s) for s in doc["scenes"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise WorldError(f"{world_file}: malformed: {exc}") from exc
    world = plan_from_config(cfg)
    if [s.to_dict() for s in world.scenes] != [s.to_dict() for s in stored]:
        raise WorldError(
            f"{world_file}: its scenes differ from those its configuration generates "
            "(edited by hand, or written by another version of the generator)"
        )
    return WorldManifest(root, root / doc.get("annotations", ANNOTATIONS_FILE), world_file, world)


__all__ = [
    "ANNOTATIONS_FILE",
    "BENCHMARK_NAME",
    "World",
    "WorldConfig",
    "WorldError",
    "WorldManifest",
    "WorldQuestion",
    "family_counts",
    "generate_world",
    "load_world",
    "make_scene",
    "plan_from_config",
    "plan_world",
    "write_annotations",
    "write_scene_video",
    "write_world",
]
