"""The scene model of the synthetic world: coloured shapes on a dark background, and their events.

A :class:`Scene` is a pure description (JSON round-trip, no randomness left in it): its size,
frame rate, duration, background and a few :class:`SceneObject` s. Every frame is a pure function
of the scene and a time: :func:`render_frame` / :func:`render_frames` draw it in memory,
:func:`iter_scene_frames` yields the frames a video of the scene holds, and
:func:`captions_for_frame` describes what a frame shows (the encoder's training text).

Layout. The frame is split into four quadrants (slots 0..3: top-left, top-right, bottom-left,
bottom-right); each object owns one slot and drifts slowly around its centre (a few pixels, a
sinusoid per axis), so objects never overlap and frames are never exactly equal.

Events (all intervals are half-open ``[start, end)`` seconds on the frame grid ``i / fps``, so a
frame at time ``t`` shows an event exactly when ``start <= t < end``):

- ``appear``: the object is visible only inside this interval (a *brief* object);
- ``absent``: the object is missing inside this interval (it "left for a while");
- ``recolour``: the object has another colour inside this interval.

An object without events is visible with one colour for the whole video.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "green": (40, 175, 60),
    "blue": (45, 85, 235),
    "yellow": (235, 215, 30),
    "orange": (245, 135, 20),
    "purple": (150, 60, 205),
    "cyan": (30, 205, 215),
    "pink": (245, 135, 195),
    "white": (240, 240, 240),
}
"""Object colours (names used in questions and captions). Chosen to stay apart after H.264 4:2:0."""

BACKGROUNDS: dict[str, tuple[int, int, int]] = {
    "black": (14, 14, 18),
    "navy": (16, 20, 44),
    "charcoal": (40, 40, 40),
    "forest": (14, 34, 22),
}
"""Dark backgrounds, far from every object colour and from the no-frame grey."""

SHAPES = ("square", "circle", "triangle", "diamond")
"""Shapes that can be drawn."""

SLOTS = 4
_BACKGROUND_NOISE = 5  # +- static texture amplitude of the background (grey levels)
_EPS = 1e-9


class SceneError(ValueError):
    """A scene description is invalid (names the field and the reason)."""


@dataclass(frozen=True)
class Interval:
    """Half-open ``[start, end)`` in seconds."""

    start: float
    end: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.start) and math.isfinite(self.end)) or self.end <= self.start:
            raise SceneError(f"interval needs start < end, got [{self.start}, {self.end})")

    def contains(self, t: float) -> bool:
        return self.start <= t + _EPS and t + _EPS < self.end

    def to_list(self) -> list[float]:
        return [self.start, self.end]

    @property
    def length(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class SceneObject:
    """One shape in one slot. ``radius`` and drift amplitudes are fractions of the frame's shorter side.

    ``role`` says why the generator placed it (``anchor``, ``circle``, ``brief``, ``extra``); rendering
    ignores it. ``drift`` = (amplitude_x, amplitude_y, frequency_x Hz, frequency_y Hz, phase_x, phase_y).
    """

    shape: str
    colour: str
    slot: int
    role: str = ""
    radius: float = 0.14
    drift: tuple[float, float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    appear: Interval | None = None
    absent: Interval | None = None
    recolour: Interval | None = None
    recolour_to: str | None = None

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise SceneError(f"unknown shape {self.shape!r} (known: {', '.join(SHAPES)})")
        for name in (self.colour, self.recolour_to):
            if name is not None and name not in COLOURS:
                raise SceneError(f"unknown colour {name!r} (known: {', '.join(COLOURS)})")
        if not 0 <= self.slot < SLOTS:
            raise SceneError(f"slot must be 0..{SLOTS - 1}, not {self.slot}")
        if (self.recolour is None) != (self.recolour_to is None):
            raise SceneError("recolour and recolour_to go together")
        if len(self.drift) != 6:
            raise SceneError("drift needs 6 numbers (ax, ay, fx, fy, phase_x, phase_y)")

    def visible_at(self, t: float) -> bool:
        if self.appear is not None and not self.appear.contains(t):
            return False
        return not (self.absent is not None and self.absent.contains(t))

    def colour_at(self, t: float) -> str:
        if self.recolour is not None and self.recolour.contains(t):
            assert self.recolour_to is not None
            return self.recolour_to
        return self.colour

    @property
    def always_visible(self) -> bool:
        """Visible in every frame (possibly recoloured for a while)."""
        return self.appear is None and self.absent is None

    @property
    def constant(self) -> bool:
        """Visible in every frame with one colour."""
        return self.always_visible and self.recolour is None

    def colours(self) -> tuple[str, ...]:
        """Every colour this object ever shows."""
        return (self.colour,) if self.recolour_to is None else (self.colour, self.recolour_to)

    def to_dict(self) -> dict[str, Any]:
        def iv(x: Interval | None) -> list[float] | None:
            return None if x is None else x.to_list()

        return {
            "shape": self.shape,
            "colour": self.colour,
            "slot": self.slot,
            "role": self.role,
            "radius": self.radius,
            "drift": list(self.drift),
            "appear": iv(self.appear),
            "absent": iv(self.absent),
            "recolour": iv(self.recolour),
            "recolour_to": self.recolour_to,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SceneObject:
        def iv(x: Any) -> Interval | None:
            return None if x is None else Interval(float(x[0]), float(x[1]))

        return cls(
            shape=d["shape"],
            colour=d["colour"],
            slot=int(d["slot"]),
            role=d.get("role", ""),
            radius=float(d.get("radius", 0.14)),
            drift=tuple(float(v) for v in d.get("drift", (0,) * 6)),  # type: ignore[arg-type]
            appear=iv(d.get("appear")),
            absent=iv(d.get("absent")),
            recolour=iv(d.get("recolour")),
            recolour_to=d.get("recolour_to"),
        )


@dataclass(frozen=True)
class Scene:
    """A whole video's content. ``size`` is (width, height); frames are at ``i / fps`` for
    ``i = 0 .. n_frames - 1`` with ``n_frames = round(duration * fps)``."""

    video_id: str
    duration: float
    fps: float = 10.0
    size: tuple[int, int] = (48, 48)
    background: str = "black"
    noise_seed: int = 0
    objects: tuple[SceneObject, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.background not in BACKGROUNDS:
            raise SceneError(f"unknown background {self.background!r} (known: {', '.join(BACKGROUNDS)})")
        if not (self.duration > 0 and self.fps > 0):
            raise SceneError(f"scene {self.video_id}: duration and fps must be positive")
        w, h = self.size
        if w < 16 or h < 16 or w % 2 or h % 2:
            raise SceneError(f"scene {self.video_id}: size must be even and at least 16 px, not {self.size}")
        slots = [o.slot for o in self.objects]
        if len(set(slots)) != len(slots):
            raise SceneError(f"scene {self.video_id}: two objects share a slot ({slots})")

    @property
    def n_frames(self) -> int:
        return int(round(self.duration * self.fps))

    def frame_time(self, index: int) -> float:
        return index / self.fps

    def object(self, role: str) -> SceneObject | None:
        """The first object with ``role`` (or None)."""
        return next((o for o in self.objects if o.role == role), None)

    def colours(self) -> set[str]:
        """Every colour any object shows at any time."""
        return {c for o in self.objects for c in o.colours()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "video_id": self.video_id,
            "duration": self.duration,
            "fps": self.fps,
            "size": list(self.size),
            "background": self.background,
            "noise_seed": self.noise_seed,
            "objects": [o.to_dict() for o in self.objects],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Scene:
        return cls(
            video_id=str(d["video_id"]),
            duration=float(d["duration"]),
            fps=float(d.get("fps", 10.0)),
            size=(int(d["size"][0]), int(d["size"][1])),
            background=d.get("background", "black"),
            noise_seed=int(d.get("noise_seed", 0)),
            objects=tuple(SceneObject.from_dict(o) for o in d.get("objects", ())),
        )


# --- rendering ------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _background(size: tuple[int, int], name: str, noise_seed: int) -> np.ndarray:
    w, h = size
    rng = np.random.default_rng(noise_seed)
    base = np.array(BACKGROUNDS[name], dtype=np.int16)
    noise = rng.integers(-_BACKGROUND_NOISE, _BACKGROUND_NOISE + 1, size=(h, w, 1), dtype=np.int16)
    img: np.ndarray = np.clip(base[None, None, :] + noise, 0, 255).astype(np.uint8)
    img.setflags(write=False)
    return img


@functools.lru_cache(maxsize=16)
def _grid(size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    w, h = size
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    return xs + 0.5, ys + 0.5  # pixel centres


def slot_centre(slot: int, size: tuple[int, int]) -> tuple[float, float]:
    """Centre (x, y) in pixels of a quadrant slot."""
    w, h = size
    return (w * (0.25 + 0.5 * (slot % 2)), h * (0.25 + 0.5 * (slot // 2)))


def object_centre(obj: SceneObject, t: float, size: tuple[int, int]) -> tuple[float, float]:
    """Where ``obj``'s centre is at time ``t`` (pixels)."""
    cx, cy = slot_centre(obj.slot, size)
    side = min(size)
    ax, ay, fx, fy, px, py = obj.drift
    return (
        cx + ax * side * math.sin(2 * math.pi * fx * t + px),
        cy + ay * side * math.sin(2 * math.pi * fy * t + py),
    )


def _inside(shape: str, dx: np.ndarray, dy: np.ndarray, r: np.float32) -> np.ndarray:
    inside: np.ndarray
    if shape == "square":
        inside = np.maximum(np.abs(dx), np.abs(dy)) <= 0.82 * r
    elif shape == "circle":
        inside = dx * dx + dy * dy <= r * r
    elif shape == "triangle":  # pointing up
        inside = (dy >= -r) & (dy <= 0.8 * r) & (np.abs(dx) <= (dy + r) * 0.62)
    elif shape == "diamond":
        inside = np.abs(dx) + np.abs(dy) <= 1.1 * r
    else:
        raise SceneError(f"unknown shape {shape!r}")
    return inside


def _box(centre: tuple[float, float], radius_px: float, size: tuple[int, int]) -> tuple[int, int, int, int]:
    w, h = size
    reach = 1.2 * radius_px + 1
    x0, x1 = max(0, int(centre[0] - reach)), min(w, int(math.ceil(centre[0] + reach)))
    y0, y1 = max(0, int(centre[1] - reach)), min(h, int(math.ceil(centre[1] + reach)))
    return x0, x1, y0, y1


def shape_mask(shape: str, centre: tuple[float, float], radius_px: float, size: tuple[int, int]) -> np.ndarray:
    """Boolean (H, W) mask of a shape of circumradius ``radius_px`` centred at ``centre``.

    A pixel belongs to the shape when its centre does (no anti-aliasing: colours stay exact).
    """
    w, h = size
    out = np.zeros((h, w), dtype=bool)
    x0, x1, y0, y1 = _box(centre, radius_px, size)
    if x0 < x1 and y0 < y1:
        xs, ys = _grid(size)
        dx = xs[y0:y1, x0:x1] - np.float32(centre[0])
        dy = ys[y0:y1, x0:x1] - np.float32(centre[1])
        out[y0:y1, x0:x1] = _inside(shape, dx, dy, np.float32(radius_px))
    return out


def visible_objects(scene: Scene, t: float) -> tuple[tuple[str, str], ...]:
    """``(colour, shape)`` of every object visible at ``t``, in slot order."""
    return tuple(
        (o.colour_at(t), o.shape) for o in sorted(scene.objects, key=lambda o: o.slot) if o.visible_at(t)
    )


def render_frame(scene: Scene, t: float) -> np.ndarray:
    """The (H, W, 3) uint8 RGB frame of ``scene`` at time ``t`` (seconds). Pure and deterministic."""
    size = scene.size
    frame = _background(size, scene.background, scene.noise_seed).copy()
    side = min(size)
    for obj in scene.objects:
        if not obj.visible_at(t):
            continue
        centre = object_centre(obj, t, size)
        radius = obj.radius * side
        x0, x1, y0, y1 = _box(centre, radius, size)
        if x0 >= x1 or y0 >= y1:
            continue
        xs, ys = _grid(size)
        dx = xs[y0:y1, x0:x1] - np.float32(centre[0])
        dy = ys[y0:y1, x0:x1] - np.float32(centre[1])
        frame[y0:y1, x0:x1][_inside(obj.shape, dx, dy, np.float32(radius))] = COLOURS[obj.colour_at(t)]
    return frame


def render_frames(scene: Scene, t: float | Sequence[float] | np.ndarray) -> np.ndarray:
    """Frames at one time (``(H, W, 3)``) or at many times (``(N, H, W, 3)``), uint8 RGB."""
    if np.ndim(t) == 0:
        return render_frame(scene, float(t))  # type: ignore[arg-type]
    times = np.asarray(t, dtype=np.float64).reshape(-1)
    w, h = scene.size
    out = np.empty((times.shape[0], h, w, 3), dtype=np.uint8)
    for i, ti in enumerate(times):
        out[i] = render_frame(scene, float(ti))
    return out


def iter_scene_frames(
    scene: Scene, *, start: int = 0, stop: int | None = None, step: int = 1
) -> Iterator[tuple[int, float, np.ndarray]]:
    """``(index, time, frame)`` for the frames a video of ``scene`` holds (frame ``i`` at ``i / fps``).

    ``start`` / ``stop`` / ``step`` select frame indices like ``range`` (default: all of them).
    Frames are rendered one at a time (nothing is kept).
    """
    end = scene.n_frames if stop is None else min(stop, scene.n_frames)
    for i in range(start, end, step):
        t = scene.frame_time(i)
        yield i, t, render_frame(scene, t)


# --- captions -------------------------------------------------------------------------------


def phrase(colour: str | None, shape: str | None) -> str:
    """``"a red triangle"``, ``"a triangle"``, ``"something red"``."""
    if colour and shape:
        return f"{_article(colour)} {colour} {shape}"
    if shape:
        return f"{_article(shape)} {shape}"
    if colour:
        return f"something {colour}"
    raise ValueError("a phrase needs a colour or a shape")


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def join_phrases(parts: Sequence[str]) -> str:
    """``"a, b and c"``."""
    if not parts:
        return "an empty frame"
    if len(parts) == 1:
        return parts[0]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def captions_for_frame(scene: Scene, t: float) -> list[str]:
    """Every canonical caption of the frame at ``t``: the full description first, then one per object.

    ``["a blue square, a yellow circle and a red triangle", "a blue square", "a yellow circle",
    "a red triangle"]``; an empty frame gives ``["an empty frame"]``. Deterministic. (The encoder's
    training draws further, randomised captions with :func:`tempcore.world.encoder_zoo.sample_caption`.)
    """
    objs = visible_objects(scene, t)
    full = join_phrases([phrase(c, s) for c, s in objs])
    if len(objs) <= 1:
        return [full]
    return [full] + [phrase(c, s) for c, s in objs]


__all__ = [
    "BACKGROUNDS",
    "COLOURS",
    "SHAPES",
    "SLOTS",
    "Interval",
    "Scene",
    "SceneError",
    "SceneObject",
    "captions_for_frame",
    "iter_scene_frames",
    "join_phrases",
    "object_centre",
    "phrase",
    "render_frame",
    "render_frames",
    "shape_mask",
    "slot_centre",
    "visible_objects",
]
