"""Grounding questions of the synthetic world: "when does it happen?" with a planted window.

Every scene event that makes something visible *only* inside a window becomes one grounding
question whose ground truth is that window (issue 15). Two kinds, both planted by the scene
planner (:func:`tempcore.world.generator.make_scene`), none added for grounding:

* ``appear`` — a brief object (the triangle of a ``brief_colour`` question, or the triangle the
  planner draws as a distractor) is visible only inside ``appear``: "When does the red triangle
  appear?", ground truth ``appear``;
* ``recolour`` — the circle takes another colour inside ``recolour``; that colour is no other
  object's in the scene (the planner draws all colours distinct), so "When is the circle pink?"
  is answered by exactly the window: ground truth ``recolour``.

A circle that is *absent* for a while is not asked: its window is where a phrase stops matching,
which a frame-text similarity search cannot find as a peak (the retrieval baseline looks for the
frames most like the query). Windows are half-open ``[start, end)`` seconds on the frame grid, 1-3 s
long (the world's ``window``), at least 1 s from either end of a 10-40 s video. The two objects of
an ``appear_order`` scene (roles :data:`~tempcore.world.families.ORDER_ROLES`) are not asked: their
windows are a quarter of the video each, not the world's 1-3 s, and the order question is theirs.

Rows (``grounding.jsonl`` next to ``annotations.jsonl``, the generic grounding format of
:mod:`tempcore.benchmarks.grounding`, read by the ``grounding`` loader): ``id``
(``{video_id}-when-{kind}``), ``video``, ``question``, ``answer_windows`` (one window),
``duration`` (the video's, seconds), ``kind``, ``object`` (the phrase the window shows, e.g.
``a red triangle``). Every field but the generic ones lands in ``Sample.metadata``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tempcore.records import Sample
from tempcore.world.families import ORDER_ROLES
from tempcore.world.scene import Scene, phrase

GROUNDING_FILE = "grounding.jsonl"
GROUNDING_BENCHMARK = "tempcore-world-grounding"
KINDS = ("appear", "recolour")


def scene_grounding_rows(scene: Scene, video_dir: str = "videos") -> list[dict[str, Any]]:
    """The grounding rows of one scene (module docstring), in object order."""
    rows: list[dict[str, Any]] = []
    for obj in scene.objects:
        if obj.role in ORDER_ROLES:  # the two objects of an appear_order scene: see the module docstring
            continue
        if obj.appear is not None and obj.recolour is None:
            kind, window, colour = "appear", obj.appear, obj.colour
            question = f"When does the {colour} {obj.shape} appear?"
        elif obj.recolour is not None and obj.recolour_to is not None and obj.appear is None:
            kind, window, colour = "recolour", obj.recolour, obj.recolour_to
            question = f"When is the {obj.shape} {colour}?"
        else:
            continue
        rows.append({
            "id": f"{scene.video_id}-when-{kind}",
            "video": f"{video_dir}/{scene.video_id}.mp4",
            "question": question,
            "answer_windows": [[window.start, window.end]],
            "duration": scene.duration,
            "kind": kind,
            "object": phrase(colour, obj.shape),
        })
    return rows


def grounding_rows(scenes: Iterable[Scene]) -> list[dict[str, Any]]:
    """The grounding rows of a world's scenes, scene by scene."""
    return [row for scene in scenes for row in scene_grounding_rows(scene)]


def grounding_samples(scenes: Iterable[Scene], benchmark: str = GROUNDING_BENCHMARK) -> list[Sample]:
    """The grounding questions as samples, as the ``grounding`` loader reads them from the file."""
    out = []
    for row in grounding_rows(scenes):
        out.append(Sample(
            benchmark=benchmark, sample_id=row["id"], video=row["video"], question=row["question"],
            answer_windows=tuple((float(s), float(e)) for s, e in row["answer_windows"]),
            metadata={"duration": row["duration"], "kind": row["kind"], "object": row["object"]},
        ))
    return out


def write_grounding(root: str | Path, scenes: Iterable[Scene]) -> Path:
    """Write ``grounding.jsonl`` into the world folder ``root`` (deterministic bytes)."""
    from tempcore.world.generator import write_annotations

    return write_annotations(Path(root) / GROUNDING_FILE, grounding_rows(scenes))


__all__ = [
    "GROUNDING_BENCHMARK",
    "GROUNDING_FILE",
    "KINDS",
    "grounding_rows",
    "grounding_samples",
    "scene_grounding_rows",
    "write_grounding",
]
