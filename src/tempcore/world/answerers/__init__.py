"""The embedded answerer zoo: small models trained on the synthetic world, behind the :class:`Model` interface.

The synthetic world (:mod:`tempcore.world.generator`) plants what each question needs; a panel of
answerers that *learned* the world lets an audit (FSS, LIS, the taxonomy) be scored against that
truth on any laptop. The panel mirrors the paper's: models that differ in how they use frames, one
that sees no frames at all, and one real generative VLM architecture (:mod:`tempcore.world.hf_answerer`).

Members (``ModelSpec(backend="zoo", model=NAME)``; weights in ``tempcore/world/zoo/answerers/``):

``zoo-text``
    Sees only the prompt text: bag of words of the question and of each option. It learns the world's
    text priors (the sides of a polygon, the one option that is a colour) and nothing else, so it is
    at chance on every visual question.
``zoo-mean``
    Bag of frames: each frame's features, conditioned on the question, are averaged. Order-blind;
    evidence in few frames is diluted.
``zoo-max``
    The same, max-pooled over frames: one frame that shows the evidence is enough.
``zoo-attn``
    Attention over frames conditioned on the question *and each option* (one attention per option):
    the option "red" looks for red frames.
``zoo-order``
    Order-aware: the frame features plus an embedding of each frame's rank in the order shown, mixed
    by a one-layer transformer encoder, then averaged. Shuffling or reversing the frames changes its
    input (the other members are invariant to the order).

Frames are read by a small CNN, the :class:`FrameEncoder`, trained first on its own to say which
colour and which shape each quadrant of a frame shows (the world puts at most one object per
quadrant), then frozen; every frame member carries its own copy of it, as real VLMs carry a
pretrained vision tower. Per frame, a member conditions the encoder's features on the question
(``g_t = MLP([f_t, q, f_t * q])``), pools them as above into ``h``, and scores each option with
``score_i = MLP([h_i, q, o_i, h_i * o_i, q * o_i])`` (``q`` the question, ``o_i`` the option).
It answers with ``option_logprobs = log_softmax(scores)`` over the options and ``text`` = the argmax
letter; the response is the same for ``method="generate"`` and ``"option_scores"`` (the letter
parses with the shared answer extractor). Options are scored independently with shared weights,
so a member is equivariant to option order (circular evaluation rotates its probabilities with the
options).

Input conventions (choices, stated once):

- Text. The question is the prompt minus its option lines (``"A. ..."`` / ``"(A) ..."`` up to the
  number of options), the ``Options:`` header and the ``Frame timestamps`` line; it is encoded as the
  mean embedding of its lower-cased words and hashed word bigrams (CRC-32 into :data:`BIGRAM_BUCKETS`
  buckets), over the closed vocabulary seen in training (unknown words share one id). Options are
  encoded the same way, with the same embedding table.
- Frames. Any size: each image is resized to 32 x 32 (bilinear, antialiased), scaled to [-2, 2].
  Frames are used in the order given; timestamps are ignored. A request without images (a text-only
  probe) is answered as if shown one mid-grey frame, the no-frame condition's input.
- Inference runs on CPU in float32 unless the spec names another device; it is deterministic.

Training (:func:`train_answerers`, :func:`train_all`; ``tempcore world train`` calls the latter, and
``--only members`` the former, without the HF answerer):
questions of a world planned from the training seed (never a demo world: the demo's worlds use small
seeds, training uses ``TRAIN_SEED_BASE + seed``), rendered in memory. First the frame encoder
(:func:`train_frame_encoder`); then the features of every frame of the training world are computed
once (:func:`feature_bank`), and the members' heads train on them with a *mix of frame picks* per
example, so that no member learns a shortcut that breaks on MaxProb / MinProb frames:

- ``uniform`` (segment centres), ``random`` (distinct frames);
- ``dense``: K consecutive frames (stride 1 or 2) around a point inside an event window of the scene
  (the question's own window when it has one, 70% of the time), as the oracle windows show;
- ``mixed``: 1-3 frames inside an event window plus frames from distinct seconds outside it, the
  shape of QA-mode MaxProb frames for a temporally grounded question (and of MinProb frames for a
  visual-bias one);
- ``outside``: frames from distinct seconds outside the question's window (outside every event
  window for questions without one), the shape of MinProb frames for a temporally grounded question;
- ``grey``: uniform grey images (the no-frame condition), so that without frames a member falls back
  on the text prior: trivial questions stay answerable, visual ones go to chance.

K is drawn per batch from :data:`K_CHOICES`. 70% of the videos are degraded like H.264 4:2:0 video
(chroma averaged over 2 x 2 pixels, rounding, slight noise), since audited frames are decoded from
encoded files. All members train on the same batches, each from its own seed, with AdamW and
cross-entropy over the options. Prompts are rendered with :data:`TEMPLATES`, with the frame
timestamps shown half of the time. :data:`REORDER_P` of the draws show their frames out of time
order (reversed or shuffled); the answer of an order question (``appear_order``) then follows the
shown order, every other answer stays: the pooling members cannot tell the difference, ``zoo-order``
learns that the sequence of its frames is their time order.

Modules, by concern: :mod:`.constants` (members, sizes, the training mix, :class:`ZooError`; no
torch), :mod:`.text` (the text codec), :mod:`.nets` (frame tensors, the frame encoder, the heads),
:mod:`.model` (a loaded member, safetensors I/O, :class:`ZooModel`: the ``zoo`` backend, registered
through tempcore's ``tempcore.models`` entry point), :mod:`.sampling` (training and evaluation
examples), :mod:`.training` and :mod:`.evaluation`. A run imports :mod:`.model` only; the training
code is imported when training (``tempcore world train``) or when one of its names is read from this
package. Every name of the submodules is readable here (``answerers.train_all``), imported on first
access, so ``import tempcore.world.answerers`` imports no torch.
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
