"""Question families of the synthetic world, each with the TempCore category it plants.

Every family asks about one element of a :class:`~tempcore.world.scene.Scene` and has four options,
one correct. The correct option's position is chosen by the generator (balanced per family); the
other options fill the remaining positions in a seeded random order. Categories are the paper's
taxonomy (§7.1: Trivial if LIS <= lambda, else by FSS, with FSS = acc(MaxProb frames) -
acc(MinProb frames) in QA-mode). Why each planted category holds is argued in full in
``docs/design/world.md``; in short:

``anchor_colour`` -> frame_agnostic
    "What colour is the square?" The square has one colour in every frame, so any frame set answers
    (FSS ~ 0); the distractors are colours absent from the video (no-frame accuracy ~ 1/4).
``circle_stayed`` -> frame_agnostic
    "What happened to the yellow circle?" -> "it stayed the same throughout": every frame shows it
    (FSS ~ 0); same question and options as the two visual-bias families (no-frame accuracy ~ 1/3).
``brief_colour`` -> temporally_grounded
    "What colour was the triangle that appeared briefly?" It is visible only in a 1-3 s ``window``;
    MaxProb frames show it, MinProb frames only show colours that are not options (FSS ~ 3/4).
``circle_left`` / ``circle_recoloured`` -> visual_bias
    "What happened to the yellow circle?" -> "it left for a while" / "it changed colour for a
    while": MaxProb frames show the unchanged circle and mislead; MinProb frames show the change
    (FSS ~ -1).
``appear_order`` -> temporally_grounded, and *order-sensitive* (:data:`ORDER_SENSITIVE_FAMILIES`)
    "In which order did the shapes appear?" A triangle and a diamond, each in a window of its own
    (25-30% of the video, one after the other); the options are the two orders of the objects shown
    and of two absent ones. Only the order sensitivity is planted for sure; the FSS category is not
    guaranteed (MaxProb frames may all come from one window). :func:`seen_first` gives the answer a
    sequence of shown frame times implies (the planted truth of any reordering).
``shape_sides`` -> trivial (world knowledge)
    "How many sides does a triangle have?" The video is irrelevant (LIS ~ 0).
``anchor_colour_obvious`` -> trivial (one plausible option)
    "What colour is the square?" with one colour among options that are not colours (LIS ~ 0).

For the windowed 1-3 s families the video keeps at least ``k_max`` whole seconds outside the window,
so K <= k_max MaxProb / MinProb frames never need to enter it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tempcore.world.scene import COLOURS, Interval, Scene, SceneObject

PLANTED_CATEGORIES = ("trivial", "frame_agnostic", "temporally_grounded", "visual_bias")
"""The four categories of the paper's taxonomy, as :func:`tempcore.diagnostics.taxonomy` names them."""

ORDER_SENSITIVE_FAMILIES = frozenset({"appear_order"})
"""Families planted *order-sensitive*: their answer changes when the same frames are reordered
(beside the taxonomy category; what the order-sensitivity analysis of issue 14 should recover)."""

N_OPTIONS = 4

HAPPENINGS = (
    "it stayed the same throughout",
    "it left for a while",
    "it changed colour for a while",
    "it grew bigger for a while",
)
"""Options of the circle families ("grew bigger" never happens: a fixed distractor)."""

SIDES = {"triangle": "three", "square": "four", "pentagon": "five", "hexagon": "six"}
NOT_COLOURS = (
    "three",
    "yesterday",
    "loudly",
    "on the left",
    "a triangle",
    "twice",
    "nobody",
    "upside down",
    "a square",
    "slowly",
)
"""Distractors of ``anchor_colour_obvious``: plainly not colours."""

# which element of a scene a family asks about; a video hosts at most one question per slot
SLOT_ANCHOR, SLOT_CIRCLE, SLOT_BRIEF, SLOT_TEXT = "anchor", "circle", "brief", "text"
SLOT_PAIR = "pair"  # the triangle and diamond quadrants of a video without a brief question


class FamilyError(ValueError):
    """A family cannot be asked about a scene (names the family, the video and the reason)."""


@dataclass(frozen=True)
class Question:
    """One generated question: text, options, the correct index and where its evidence lies."""

    family: str
    planted: str
    question: str
    options: tuple[str, ...]
    answer: int
    window: Interval | None = None
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Family:
    """A question family: its planted category, the scene slot it uses, and what it needs there.

    ``circle_event``: the circle event the scene must have for this family (``none`` / ``absent`` /
    ``recolour``), or None when the family does not ask about the circle. ``needs_brief``: the
    scene must have a brief object. ``needs_order``: the scene must have the two order objects
    (roles ``order_a`` / ``order_b``, each visible in one window).
    """

    name: str
    planted: str
    slot: str
    make: Callable[[Scene, np.random.Generator, int], Question]
    circle_event: str | None = None
    needs_brief: bool = False
    needs_order: bool = False
    summary: str = ""


def _place(correct: str, distractors: Sequence[str], position: int, rng: np.random.Generator) -> tuple[str, ...]:
    """Options with ``correct`` at ``position`` and the distractors in a random order elsewhere."""
    others = [distractors[i] for i in rng.permutation(len(distractors))]
    return tuple(others[:position] + [correct] + others[position:])


def _pick(values: Collection[str], n: int, rng: np.random.Generator) -> list[str]:
    pool = sorted(values)  # a set's order is not reproducible; sorted is
    if len(pool) < n:
        raise FamilyError(f"need {n} distinct values, the pool has only {pool}")
    return [pool[i] for i in rng.choice(len(pool), size=n, replace=False)]


def _require(scene: Scene, role: str, family: str) -> SceneObject:
    obj = scene.object(role)
    if obj is None:
        raise FamilyError(f"family {family}: video {scene.video_id} has no {role} object")
    return obj


def _anchor_colour(scene: Scene, rng: np.random.Generator, position: int) -> Question:
    square = _require(scene, "anchor", "anchor_colour")
    if not square.constant:
        raise FamilyError(f"anchor_colour: the anchor of {scene.video_id} is not constant")
    free = set(COLOURS) - scene.colours()
    options = _place(square.colour, _pick(free, N_OPTIONS - 1, rng), position, rng)
    return Question(
        "anchor_colour",
        "frame_agnostic",
        f"What colour is the {square.shape}?",
        options,
        position,
        None,
        {"role": "anchor", "shape": square.shape, "colour": square.colour},
    )


def _circle_question(kind: str) -> Callable[[Scene, np.random.Generator, int], Question]:
    answer = {"none": HAPPENINGS[0], "absent": HAPPENINGS[1], "recolour": HAPPENINGS[2]}[kind]
    name = {"none": "circle_stayed", "absent": "circle_left", "recolour": "circle_recoloured"}[kind]
    planted = "frame_agnostic" if kind == "none" else "visual_bias"

    def make(scene: Scene, rng: np.random.Generator, position: int) -> Question:
        circle = _require(scene, "circle", name)
        if circle_event(circle) != kind:
            raise FamilyError(f"{name}: the circle of {scene.video_id} has event {circle_event(circle)!r}")
        window = circle.absent if kind == "absent" else circle.recolour
        others = [h for h in HAPPENINGS if h != answer]
        evidence: dict[str, Any] = {"role": "circle", "shape": circle.shape, "colour": circle.colour,
                                    "event": kind}
        if kind == "recolour":
            evidence["recolour_to"] = circle.recolour_to
        return Question(
            name,
            planted,
            f"What happened to the {circle.colour} {circle.shape}?",
            _place(answer, others, position, rng),
            position,
            window,
            evidence,
        )

    return make


def circle_event(circle: SceneObject) -> str:
    """``none``, ``absent`` or ``recolour``: what happens to a circle object."""
    if circle.absent is not None:
        return "absent"
    if circle.recolour is not None:
        return "recolour"
    return "none"


def _brief_colour(scene: Scene, rng: np.random.Generator, position: int) -> Question:
    brief = _require(scene, "brief", "brief_colour")
    if brief.appear is None or brief.recolour is not None:
        raise FamilyError(f"brief_colour: the brief object of {scene.video_id} has no single appearance")
    elsewhere = {c for o in scene.objects if o is not brief for c in o.colours()}
    free = set(COLOURS) - elsewhere - {brief.colour}
    options = _place(brief.colour, _pick(free, N_OPTIONS - 1, rng), position, rng)
    return Question(
        "brief_colour",
        "temporally_grounded",
        f"What colour was the {brief.shape} that appeared briefly?",
        options,
        position,
        brief.appear,
        {"role": "brief", "shape": brief.shape, "colour": brief.colour},
    )


ORDER_ROLES = ("order_a", "order_b")
"""Roles of the two objects of an ``appear_order`` scene (a triangle and a diamond)."""


def order_option(first: SceneObject | dict[str, Any], second: SceneObject | dict[str, Any]) -> str:
    """The option text of an order: ``"the red triangle, then the blue diamond"``."""
    def name(o: SceneObject | dict[str, Any]) -> str:
        return f"{o['colour']} {o['shape']}" if isinstance(o, dict) else f"{o.colour} {o.shape}"

    return f"the {name(first)}, then the {name(second)}"


def _appear_order(scene: Scene, rng: np.random.Generator, position: int) -> Question:
    objs = [_require(scene, role, "appear_order") for role in ORDER_ROLES]
    if any(o.appear is None or o.absent is not None or o.recolour is not None for o in objs):
        raise FamilyError(f"appear_order: the order objects of {scene.video_id} need one appearance each")
    first, second = sorted(objs, key=lambda o: o.appear.start if o.appear else 0.0)
    assert first.appear is not None and second.appear is not None
    if first.appear.end > second.appear.start:
        raise FamilyError(f"appear_order: the windows of {scene.video_id} overlap")
    free = sorted(set(COLOURS) - scene.colours())
    x, y = _pick(free, 2, rng)
    fx = {"colour": x, "shape": first.shape}
    sy = {"colour": y, "shape": second.shape}
    distractors = [order_option(second, first), order_option(fx, sy), order_option(sy, fx)]
    options = _place(order_option(first, second), distractors, position, rng)
    return Question(
        "appear_order",
        "temporally_grounded",
        "In which order did the shapes appear?",
        options,
        position,
        None,
        {"order": True,
         "first": {"shape": first.shape, "colour": first.colour, "window": first.appear.to_list()},
         "second": {"shape": second.shape, "colour": second.colour, "window": second.appear.to_list()}},
    )


def seen_first(question: Question, scene: Scene, times: Sequence[float]) -> int | None:
    """The option an ``appear_order`` question's answer is *as shown*: the order in which the two
    objects first show in ``times`` (shown frame times, in the order shown), or ``None`` when the
    frames do not show both (or show both first in the same frame, which the scenes never do). For
    frames in chronological order that hold both windows this is ``question.answer``; for the same
    frames reversed it is the reversed order's option."""
    if question.family not in ORDER_SENSITIVE_FAMILIES:
        raise FamilyError(f"seen_first: {question.family} is not an order family")
    pos: dict[str, int] = {}
    for key in ("first", "second"):
        ev = question.evidence[key]
        obj = next((o for o in scene.objects if o.shape == ev["shape"] and o.colour == ev["colour"]), None)
        if obj is None:
            raise FamilyError(f"seen_first: video {scene.video_id} has no {ev['colour']} {ev['shape']}")
        at = [i for i, t in enumerate(times) if obj.visible_at(float(t))]
        if not at:
            return None
        pos[key] = at[0]
    if pos["first"] == pos["second"]:
        return None
    a, b = ("first", "second") if pos["first"] < pos["second"] else ("second", "first")
    return question.options.index(order_option(question.evidence[a], question.evidence[b]))


def _shape_sides(scene: Scene, rng: np.random.Generator, position: int) -> Question:
    shapes = sorted(SIDES)
    shape = shapes[int(rng.integers(len(shapes)))]
    answer = SIDES[shape]
    others = [v for v in SIDES.values() if v != answer]
    return Question(
        "shape_sides",
        "trivial",
        f"How many sides does a {shape} have?",
        _place(answer, others, position, rng),
        position,
        None,
        {"knowledge": f"a {shape} has {answer} sides"},
    )


def _anchor_colour_obvious(scene: Scene, rng: np.random.Generator, position: int) -> Question:
    square = _require(scene, "anchor", "anchor_colour_obvious")
    options = _place(square.colour, _pick(NOT_COLOURS, N_OPTIONS - 1, rng), position, rng)
    return Question(
        "anchor_colour_obvious",
        "trivial",
        f"What colour is the {square.shape}?",
        options,
        position,
        None,
        {"role": "anchor", "shape": square.shape, "colour": square.colour, "only_plausible_option": True},
    )


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("anchor_colour", "frame_agnostic", SLOT_ANCHOR, _anchor_colour,
               summary="colour of the square that is in every frame"),
        Family("circle_stayed", "frame_agnostic", SLOT_CIRCLE, _circle_question("none"), circle_event="none",
               summary="the circle never changes"),
        Family("brief_colour", "temporally_grounded", SLOT_BRIEF, _brief_colour, needs_brief=True,
               summary="colour of a triangle visible only for 1-3 s"),
        Family("circle_left", "visual_bias", SLOT_CIRCLE, _circle_question("absent"), circle_event="absent",
               summary="the circle is gone for 1-3 s; its frames mislead"),
        Family("circle_recoloured", "visual_bias", SLOT_CIRCLE, _circle_question("recolour"),
               circle_event="recolour", summary="the circle changes colour for 1-3 s; its frames mislead"),
        Family("shape_sides", "trivial", SLOT_TEXT, _shape_sides,
               summary="world knowledge: sides of a polygon"),
        Family("anchor_colour_obvious", "trivial", SLOT_ANCHOR, _anchor_colour_obvious,
               summary="only one option is a colour"),
        Family("appear_order", "temporally_grounded", SLOT_PAIR, _appear_order, needs_order=True,
               summary="which of two shapes, each visible in its own window, appeared first"),
    )
}
"""Every family by name."""

DEFAULT_WEIGHTS: dict[str, float] = {
    "anchor_colour": 1.0,
    "circle_stayed": 1.0,
    "brief_colour": 1.5,
    "circle_left": 1.0,
    "circle_recoloured": 1.0,
    "shape_sides": 1.0,
    "anchor_colour_obvious": 1.0,
    "appear_order": 0.5,
}
"""Default mix: a quarter of the questions per planted category (temporally grounded: three
``brief_colour`` to one ``appear_order``); the circle answers balanced."""


def make_question(family: str, scene: Scene, rng: np.random.Generator, position: int) -> Question:
    """Ask ``family`` about ``scene`` with the correct option at ``position`` (0..3)."""
    if family not in FAMILIES:
        raise FamilyError(f"unknown family {family!r} (known: {', '.join(FAMILIES)})")
    if not 0 <= position < N_OPTIONS:
        raise FamilyError(f"answer position must be 0..{N_OPTIONS - 1}, not {position}")
    return FAMILIES[family].make(scene, rng, position)


__all__ = [
    "DEFAULT_WEIGHTS",
    "FAMILIES",
    "HAPPENINGS",
    "N_OPTIONS",
    "NOT_COLOURS",
    "ORDER_ROLES",
    "ORDER_SENSITIVE_FAMILIES",
    "PLANTED_CATEGORIES",
    "SIDES",
    "Family",
    "FamilyError",
    "Question",
    "circle_event",
    "make_question",
    "order_option",
    "seen_first",
]
