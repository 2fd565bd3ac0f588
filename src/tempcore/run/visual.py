"""Visual-option questions in ``tempcore run``: how a built sample becomes a work item, its condition
key, its identity in the run store, and its request.

A sample is a **visual-option sample** when its metadata has ``task`` in ``tfr`` / ``vfp`` / ``cmd``
and an ``option_modality`` (``visual`` or ``text``): a row written by ``tempcore visual build``. Such
samples (both forms: the frame-sequence options and their text control) are answered once per model
under one condition, whatever conditions the run lists (those select frames from the video's
timeline at the run's fps, which does not apply to options that are frame sequences):

- **Condition** ``Condition(strategy="visual_options", k=<images shown>)`` (mode ``none``, the
  default fps and seed: neither reaches these requests), key e.g. ``visual_options|mode=none|k=40|fps=10|seed=0``
  — the same key :func:`tempcore.visual.answering.answer_samples` writes. The visual and the text
  form of a question differ in ``k`` (the text form shows no option frames), so their keys differ;
  ``tempcore visual score`` pairs them by strategy.
- **Frames**: the request's images are decoded by time at the video's own rate
  (:func:`tempcore.visual.requests.request_for_sample`), in a local run once per video for every
  model and sample (:func:`expect_visual`, :func:`native_source`: one
  :func:`tempcore.video.decode.read_selected` pass whose frames the run's frame store keeps); the prediction's ``frames`` hold the
  position of every image shown (``0 .. k-1``: context, then each option's frames in label order,
  then the probe frame of a yes/no question) and its presentation time (``-1`` for the probe image).
  ``n_frames`` is ``None`` (the video is not decoded at the run's fps).
- **Identity**: the sample's fingerprint (:func:`tempcore.run.identity.sample_identity`: question,
  options, answer, segment, media, the video's content hash) gets one more entry, ``option frames``
  (:func:`visual_identity`): the times of every option's frames, the context's times, the number of
  video frames shown, the content hash of the CMD probe image and the fixed texts of the request
  forms. A rebuilt question whose option frames moved is therefore never served from the store: the
  run stops and says "N samples changed their option frames" (or replaces them with ``--recompute``).
  The model's fingerprint is the run's, as for every other prediction.
- A visual-option sample whose video is missing is not answered (there is no frameless form of it);
  it is listed with the missing videos. A request that cannot be built (an unreadable video, a
  missing probe image) becomes a :class:`tempcore.records.Failure` of that key.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tempcore.errors import TempcoreError
from tempcore.records import Condition, Failure, FrameSet, Sample
from tempcore.visual.answering import STRATEGY
from tempcore.visual.requests import (
    PROMPT_FORM,
    VIDEO_FRAMES,
    FrameSource,
    decode_params,
    request_for_sample,
    shown_images,
    shown_wants,
)

if TYPE_CHECKING:
    from tempcore.models.base import Model
    from tempcore.run.executor import Identity
    from tempcore.run.framestore import FrameStore
    from tempcore.run.planning import WorkItem
    from tempcore.run.predictions import Answered

VISUAL_STRATEGY = STRATEGY
VISUAL_TASKS = frozenset({"tfr", "vfp", "cmd"})
IDENTITY_KEY = "option frames"
"""The entry of a sample's identity that holds :func:`visual_identity` (its name is how a change is told)."""


def is_visual_sample(sample: Sample) -> bool:
    """Whether ``sample`` is a row of a visual-option build (see the module docstring)."""
    meta = sample.metadata
    return meta.get("task") in VISUAL_TASKS and meta.get("option_modality") in ("visual", "text")


def visual_condition(sample: Sample, context_k: int = VIDEO_FRAMES) -> Condition:
    """The condition a visual-option sample is answered under (``k`` = images shown)."""
    return Condition(strategy=STRATEGY, k=max(1, shown_images(sample, context_k)))


def _file_hash(path: Path) -> str:
    try:
        return "file:" + hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "missing"


def visual_identity(sample: Sample, video_root: str | Path | None, context_k: int = VIDEO_FRAMES) -> dict[str, Any]:
    """What of a visual-option sample's metadata reaches the model (see the module docstring)."""
    meta = sample.metadata
    data: dict[str, Any] = {
        "task": meta.get("task"),
        "form": meta.get("option_modality"),
        "video_frames": context_k,
        "prompt": PROMPT_FORM,
        "options": [list(o.get("times") or []) for o in meta.get("visual_options") or []],
        "context": list((meta.get("context") or {}).get("times") or []),
        "video_duration": meta.get("video_duration"),
        "frames_fps": meta.get("frames_fps"),
        "stimulus_frames": meta.get("stimulus_frames"),
    }
    if meta.get("task") == "cmd" and meta.get("option_modality") == "visual":
        root = Path(video_root) if video_root is not None else Path(".")
        data["probe_image"] = _file_hash(root / str(meta.get("probe_image")))
    return data


def visual_items(samples: Sequence[Sample], sample_hashes: Mapping[str, str],
                 context_k: int = VIDEO_FRAMES) -> list[WorkItem]:
    """One work item per visual-option sample (pure, like :func:`tempcore.run.planning.plan_items`): its
    condition (:func:`visual_condition`), the options as built (no rotation) and an empty FrameSet of
    ``k`` requested images, filled in when the request is built (:func:`visual_request`). Raises
    ``ValueError`` naming the sample when its metadata lacks what the request needs."""
    from tempcore.run.planning import WorkItem

    items = []
    for s in samples:
        cond = visual_condition(s, context_k)
        items.append(WorkItem(s, cond, FrameSet((), (), requested=cond.k or 0), tuple(s.options),
                              tuple(range(len(s.options))), sample_hash=sample_hashes[s.sample_id]))
    return items


def answer_visual(
    model: Model,
    items: Sequence[WorkItem],
    *,
    video_root: str | None,
    method: str = "generate",
    request_batch: int = 32,
    identity: Identity | None = None,
) -> Iterator[Answered]:
    """Answer visual-option work items (the executor's path for them, see
    :func:`tempcore.run.answering.answer_unit`): build each request, ask ``model`` in batches, yield the
    results. An item whose request cannot be built is a Failure ``visual options: ...`` without a
    call."""
    from tempcore.run.planning import RunError
    from tempcore.run.predictions import Answered, to_prediction

    built: list[tuple[WorkItem, Any]] = []
    for it in items:
        try:
            req, shown = visual_request(it, video_root)
            built.append((shown, req))
        except (TempcoreError, OSError, KeyError, ValueError) as exc:
            fail = Failure(it.sample.benchmark, it.sample.sample_id, model.name, it.condition.key,
                           f"visual options: {exc}")
            yield Answered((it,), (fail,), asked=False)
    step = max(request_batch, 1)
    for start in range(0, len(built), step):
        batch = built[start:start + step]
        responses = model.answer([r for _, r in batch], method=method)
        if len(responses) != len(batch):
            raise RunError(f"model {model.name} returned {len(responses)} responses for {len(batch)} requests")
        yield Answered(tuple(it for it, _ in batch), tuple(to_prediction(it, model.name, req, resp, method, identity)
                                                           for (it, req), resp in zip(batch, responses)))


def visual_request(item: WorkItem, video_root: str | Path | None, *,
                   context_k: int = VIDEO_FRAMES) -> tuple[Any, WorkItem]:
    """The request of a planned visual-option work item, and the item with the frames it shows.

    ``item`` is a :class:`tempcore.run.planning.WorkItem`; raises :class:`tempcore.errors.TempcoreError`
    (a video that does not decode) or ``OSError`` / ``KeyError`` (a missing probe image, a row without
    its metadata), which the runner records as the key's failure."""
    from tempcore.run.framestore import active_store

    store = active_store()
    source = None if store is None else native_source(store)
    req = request_for_sample(item.sample, video_root, context_k=context_k, frames=source)
    n = len(req.images)
    if n != item.condition.k:
        raise ValueError(f"sample {item.sample.sample_id}: the request shows {n} images, its condition "
                         f"{item.condition.key} says {item.condition.k}")
    stamps = req.timestamps or tuple(-1.0 for _ in req.images)
    req = dataclasses.replace(req, key="|".join(item.key_suffix))
    return req, dataclasses.replace(item, frames=FrameSet(tuple(range(n)), tuple(stamps), requested=n))


def expect_visual(store: FrameStore, items: Sequence[WorkItem], video_root_of: Mapping[str, str | None],
                  context_k: int = VIDEO_FRAMES) -> int:
    """Tell ``store`` which frames of each video the visual-option ``items`` (of every model) will
    show, so that the first request of a video decodes it once for all of them
    (:meth:`tempcore.run.framestore.FrameStore.native_frames`); other items are ignored. Returns the
    number of items announced (one whose metadata is incomplete fails when its request is built)."""
    from tempcore.run.framestore import native_key
    from tempcore.video.decode import resolve_video_path

    n = 0
    for it in items:
        if it.condition.strategy != STRATEGY:
            continue
        s = it.sample
        try:
            times, positions = shown_wants(s, context_k)
            path = resolve_video_path(s.video, video_root_of.get(s.benchmark))
        except (KeyError, TypeError, ValueError):
            continue
        store.expect_native(native_key(path, *decode_params(s)), times, positions)
        n += 1
    return n


def native_source(store: FrameStore) -> FrameSource:
    """A :data:`tempcore.visual.requests.FrameSource` that reads ``store``: one decoding pass per video
    (:func:`tempcore.video.decode.read_selected`) for every request of the run, the same frames and
    times as the default's probe-then-read."""
    import numpy as np

    from tempcore.run.framestore import native_key
    from tempcore.video.decode import read_frames, read_selected
    from tempcore.video.types import FrameBatch

    def source(path: Path, media: str | None, folder_fps: float,
               positions_of: Callable[[Sequence[float]], list[int]]) -> FrameBatch:
        positions, times, got = store.native_frames(
            native_key(path, media, folder_fps), positions_of,
            lambda select: read_selected(path, select, media=media, folder_fps=folder_fps),
            lambda wanted: read_frames(path, wanted, None, media=media, folder_fps=folder_fps))
        if not positions:
            return read_frames(path, [], None)
        return FrameBatch(np.stack([got[p] for p in positions]), np.array([times[p] for p in positions], np.float64),
                          np.array(positions, np.int64))

    return source


__all__ = [
    "IDENTITY_KEY",
    "VISUAL_STRATEGY",
    "VISUAL_TASKS",
    "answer_visual",
    "expect_visual",
    "is_visual_sample",
    "native_source",
    "visual_condition",
    "visual_identity",
    "visual_items",
    "visual_request",
]
