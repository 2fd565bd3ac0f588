"""Visual-option questions (TFR, VFP; :mod:`tempcore.visual`) from the synthetic world.

The world plants events with known times (:mod:`tempcore.world.scene`): a brief object *appears*
for a window, the circle is *absent* or *recoloured* for one. Each planted window is one labelled
event of its video (``"the red triangle appears"``, ``"the blue circle leaves"``,
``"the blue circle turns green"``), so :func:`tempcore.visual.tfr.build_tfr` builds TFR questions
over the world's real encoded videos; :func:`world_vfp` builds VFP questions from the same videos.
A world video holds at most two planted events, so every world TFR question has its closest
distractor on one side only: it falls back to the anchor (the builder's documented no-neighbour case).
The two objects of an ``appear_order`` scene (roles :data:`~tempcore.world.families.ORDER_ROLES`,
each visible for a quarter of the video) are not TFR events: that keeps "at most two events" true
and leaves their order to the ``appear_order`` question itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tempcore.visual.tfr import Event, VideoEvents, build_tfr
from tempcore.visual.vfp import build_vfp
from tempcore.world.families import ORDER_ROLES
from tempcore.world.generator import VIDEO_DIR, WorldManifest, load_world
from tempcore.world.scene import Scene


def scene_events(scene: Scene) -> list[Event]:
    """The planted events of a scene as labelled events (seconds, half-open windows)."""
    out = []
    for obj in scene.objects:
        if obj.role in ORDER_ROLES:
            continue
        if obj.appear is not None:
            out.append(Event(f"the {obj.colour} {obj.shape} appears", obj.appear.start, obj.appear.end))
        if obj.absent is not None:
            out.append(Event(f"the {obj.colour} {obj.shape} leaves", obj.absent.start, obj.absent.end))
        if obj.recolour is not None:
            out.append(Event(f"the {obj.colour} {obj.shape} turns {obj.recolour_to}",
                             obj.recolour.start, obj.recolour.end))
    return sorted(out, key=lambda e: (e.start, e.label))


def world_events(manifest: WorldManifest, videos: int | None = None) -> list[VideoEvents]:
    """The planted events of the world's videos (the first ``videos`` scenes, in the world's order)."""
    scenes = manifest.scenes if videos is None else manifest.scenes[:videos]
    return [VideoEvents(f"{VIDEO_DIR}/{s.video_id}.mp4", tuple(scene_events(s)), s.duration) for s in scenes]


def world_tfr(world: WorldManifest | str | Path, out_dir: str | Path, *, videos: int | None = None,
              **kwargs: Any) -> dict[str, Any]:
    """TFR questions over a written world (its folder is the video root); ``videos``: the first n only."""
    manifest = world if isinstance(world, WorldManifest) else load_world(world)
    return build_tfr(world_events(manifest, videos), out_dir, video_root=manifest.root,
                     source=f"tempcore-world seed {manifest.config.seed}", **kwargs)


def world_vfp(world: WorldManifest | str | Path, out_dir: str | Path, *, videos: int | None = None,
              **kwargs: Any) -> dict[str, Any]:
    """VFP questions over a written world's videos (video root: ``<world>/videos``); ``videos``: the
    clips of the first n scenes only."""
    manifest = world if isinstance(world, WorldManifest) else load_world(world)
    scenes = manifest.scenes if videos is None else manifest.scenes[:videos]
    clips = None if videos is None else [(f"{s.video_id}.mp4", "video") for s in scenes]
    return build_vfp(manifest.root / VIDEO_DIR, out_dir, source=f"tempcore-world seed {manifest.config.seed}",
                     clips=clips, **kwargs)


__all__ = ["scene_events", "world_events", "world_tfr", "world_vfp"]
