"""The embedded answerer zoo: small models trained on the synthetic world, behind the :class:`Model` interface.

The synthetic world (:mod:`tempcore.world.generator`) plants what each question needs; a panel of
answerers that *learned* the world lets an audit (FSS, LIS, the taxonomy) be scored against that
truth on any laptop. The panel mirrors the paper's: models that differ in how they use frames, one
that sees no frames at all, and one real generative VLM architecture (:mod:`tempcore.world.hf_answerer`).

Members (``ModelSpec(backend="zoo", model=NAME)``; weights in ``tempcore/world/zoo/answerers/``):
``zoo-text`` (the prompt text only: at chance on every visual question), ``zoo-mean`` (frame
features averaged: order-blind), ``zoo-max`` (max-pooled: one frame with the evidence is enough),
``zoo-attn`` (attention over frames per option) and ``zoo-order`` (frame ranks embedded and mixed by
a transformer layer: the only member whose input changes when frames are shuffled or reversed).

Each frame member reads frames with its own frozen copy of the :class:`FrameEncoder` (a small CNN),
conditions the features on the question, pools them, and scores each option with shared weights
(so it is equivariant to option order). It answers with ``option_logprobs = log_softmax(scores)``
and ``text`` = the argmax letter, the same for ``method="generate"`` and ``"option_scores"``.

Input conventions:

- Text: the question is the prompt minus its option lines, ``Options:`` header and ``Frame
  timestamps`` line, encoded as the mean embedding of its lower-cased words and hashed bigrams over
  the closed training vocabulary; options are encoded the same way.
- Frames: any size, resized to 32 x 32; used in the order given; timestamps are ignored. A request
  without images is answered as if shown one mid-grey frame (the no-frame condition's input).
- Inference runs on CPU in float32 unless the spec names another device; it is deterministic.

Training (:func:`train_answerers`, :func:`train_all`; ``tempcore world train``) uses worlds planned
from ``TRAIN_SEED_BASE + seed`` (never a demo world) and a mix of frame picks per example; the
architecture and the training recipe in full are in ``docs/design/world.md``.

Modules: :mod:`.constants` (no torch), :mod:`.text`, :mod:`.nets`, :mod:`.model` (:class:`ZooModel`,
the ``zoo`` backend), :mod:`.sampling`, :mod:`.training` and :mod:`.evaluation`. A run imports
:mod:`.model` only. Every name of the submodules is readable here (``answerers.train_all``),
imported on first access, so ``import tempcore.world.answerers`` imports no torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE: dict[str, str] = {
    "FORMAT": "constants",
    "ZOO_DIR": "constants",
    "ANSWERER_DIR": "constants",
    "MEMBERS": "constants",
    "KINDS": "constants",
    "IMAGE_SIDE": "constants",
    "DIM": "constants",
    "BIGRAM_BUCKETS": "constants",
    "GREY": "constants",
    "TRAIN_SEED_BASE": "constants",
    "PICKS": "constants",
    "K_CHOICES": "constants",
    "REORDER_P": "constants",
    "TEMPLATES": "constants",
    "ZooError": "constants",
    "_WORD": "text",
    "_OPTION_LINE": "text",
    "words": "text",
    "question_text": "text",
    "TextCodec": "text",
    "_bag": "text",
    "vocabulary": "text",
    "frames_tensor": "nets",
    "rank_features": "nets",
    "_conv": "nets",
    "FrameEncoder": "nets",
    "AnswererNet": "nets",
    "Answerer": "model",
    "_grey_image": "model",
    "member_paths": "model",
    "load_answerer": "model",
    "save_answerer": "model",
    "ZooModel": "model",
    "zoo_specs": "model",
    "quadrant_targets": "sampling",
    "Example": "sampling",
    "Draw": "sampling",
    "_scene_windows": "sampling",
    "_frames_in": "sampling",
    "_by_distinct_seconds": "sampling",
    "pick_indices": "sampling",
    "degrade": "sampling",
    "ExampleSampler": "sampling",
    "text_inputs": "sampling",
    "training_world": "training",
    "_cosine": "training",
    "train_frame_encoder": "training",
    "_encoder_batch": "training",
    "feature_bank": "training",
    "grey_features": "training",
    "gather_features": "training",
    "build_nets": "training",
    "TrainLog": "training",
    "train_members": "training",
    "train_answerers": "training",
    "train_all": "training",
    "evaluate": "evaluation",
    "_per_family": "evaluation",
    "format_table": "evaluation",
}
"""Name -> the submodule that defines it (read lazily by :func:`__getattr__`)."""


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


__all__ = [
    "ANSWERER_DIR",
    "FORMAT",
    "K_CHOICES",
    "MEMBERS",
    "PICKS",
    "Answerer",
    "AnswererNet",
    "Draw",
    "Example",
    "ExampleSampler",
    "FrameEncoder",
    "TextCodec",
    "TrainLog",
    "ZooError",
    "ZooModel",
    "evaluate",
    "feature_bank",
    "format_table",
    "frames_tensor",
    "load_answerer",
    "pick_indices",
    "quadrant_targets",
    "question_text",
    "save_answerer",
    "train_all",
    "train_answerers",
    "train_frame_encoder",
    "train_members",
    "training_world",
    "vocabulary",
    "zoo_specs",
]
