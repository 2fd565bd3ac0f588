"""The synthetic world: videos with planted temporal ground truth, and the embedded model zoo.

The paper calls temporal necessity "a latent property that cannot be observed directly". Here it is
planted: every question of a generated world is frame-agnostic, temporally grounded, trivial
(text-answerable) or visually biased *by construction* (see :mod:`tempcore.world.families` for each
family and why its category holds), so a full audit can be scored against the truth
(:func:`recovery`).

- :func:`generate_world` / :func:`plan_world` / :func:`load_world`: the world (:mod:`.generator`);
- :func:`render_frames` / :func:`iter_scene_frames` / :func:`captions_for_frame`: frames and captions
  of a :class:`Scene`, in memory (:mod:`.scene`);
- :func:`recovery`: planted x recovered confusion and precision / recall (:mod:`.recovery`);
- :func:`encoder_path`: the shipped frame-text encoder (a SigLIP-architecture HF folder, loaded with
  :func:`tempcore.encoders.load_encoder`, also by the name ``tempcore-world``);
  :func:`tempcore.world.encoder_zoo.train_encoder` rebuilds it.
- the ``zoo`` model backend (:class:`tempcore.world.answerers.ZooModel`) and the ``tempcore-world``
  encoder are registered by entry points of tempcore's own ``pyproject.toml``; the library does not
  import this package.

Importing this package does not import torch or transformers.
"""

from pathlib import Path

from tempcore.world.families import FAMILIES, PLANTED_CATEGORIES, Family, Question
from tempcore.world.generator import (
    BENCHMARK_NAME,
    World,
    WorldConfig,
    WorldError,
    WorldManifest,
    WorldQuestion,
    generate_world,
    load_world,
    plan_world,
)
from tempcore.world.recovery import RECOVERED_CATEGORIES, RecoveryError, recovery
from tempcore.world.scene import (
    Interval,
    Scene,
    SceneObject,
    captions_for_frame,
    iter_scene_frames,
    render_frame,
    render_frames,
    visible_objects,
)

ZOO = Path(__file__).parent / "zoo"
"""Folder of the shipped model weights."""

ENCODER_DIR = Path(__file__).resolve().parent / "zoo" / "encoder"
"""Folder of the shipped encoder; the ``tempcore-world`` encoder name (an entry point of tempcore's
``tempcore.encoders`` group) stands for it."""


def encoder_path() -> Path:
    """Folder of the shipped encoder (``tempcore.encoders.load_encoder(encoder_path())`` loads it)."""
    return ZOO / "encoder"


__all__ = [
    "BENCHMARK_NAME",
    "ENCODER_DIR",
    "FAMILIES",
    "PLANTED_CATEGORIES",
    "RECOVERED_CATEGORIES",
    "ZOO",
    "Family",
    "Interval",
    "Question",
    "RecoveryError",
    "Scene",
    "SceneObject",
    "World",
    "WorldConfig",
    "WorldError",
    "WorldManifest",
    "WorldQuestion",
    "captions_for_frame",
    "encoder_path",
    "generate_world",
    "iter_scene_frames",
    "load_world",
    "plan_world",
    "recovery",
    "render_frame",
    "render_frames",
    "visible_objects",
]
