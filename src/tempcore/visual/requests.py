"""Asking a model a visual-option question: the interleaved prompt (paper 002, App. B).

A :class:`InterleavedRequest` is a :class:`tempcore.models.ModelRequest` with a ``layout``: text pieces
and image positions in the order the model sees them. Images appear in the layout exactly once, in
order (0, 1, 2, ...), so an adapter that ignores the layout (the zoo, an older adapter) still sees
the same images in the same order followed by ``prompt`` (the flat text form). Adapters that
honour it: the transformers VLM adapter (``hf``; one ``{"type": "image"}`` entry per image of the
chat template, several per option) and the OpenAI-compatible client (``image_url`` parts), through
:func:`hf_content` / :func:`openai_parts`.

Forms:

- **Multiple choice** (TFR, VFP)::

      <instruction> Question: <q>  [Context: <context frames>]  Options:
      "A": <frames of A> "B": <frames of B> ...  <answer instruction>

- **Yes / no** (CMD): ``<video frames> Did this frame appear in the video?: <probe frame> Answer only
  Yes or No.`` (options ``("Yes", "No")``, so option scoring and the letter extractor both apply).

:func:`option_frames` decodes the frames of each option (PyAV, by presentation time: the frame
shown at each recorded time), and the returned timestamps are stored with the request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.models.interleaved import InterleavedRequest as InterleavedRequest  # its home is models/
from tempcore.models.interleaved import hf_content as hf_content
from tempcore.models.interleaved import openai_parts as openai_parts
from tempcore.records import Sample
from tempcore.video.types import DEFAULT_FOLDER_FPS

if TYPE_CHECKING:
    from tempcore.video.types import FrameBatch

INSTRUCTION = ("You are an expert at video understanding. You will be shown a video and a multiple-choice "
               "question about events in it, whose options are sequences of frames.")
ANSWER = 'Show your reasoning steps, and then end your response with "The final answer is: <your answer from options {letters}>"'
SHORT_ANSWER = "Answer with the option's letter from the given choices directly."
YES_NO = "Did this frame appear in the video?: "
YES_NO_ANSWER = "Answer only Yes or No."


def multiple_choice_request(
    question: str,
    options: Sequence[Sequence[np.ndarray]],
    *,
    context: Sequence[np.ndarray] = (),
    option_timestamps: Sequence[Sequence[float]] | None = None,
    context_timestamps: Sequence[float] | None = None,
    reasoning: bool = False,
    key: str = "",
    max_new_tokens: int | None = None,
) -> InterleavedRequest:
    """``"A": <frames> "B": <frames> ...`` after the question (and the context frames, when given)."""
    letters = [chr(ord("A") + i) for i in range(len(options))]
    images: list[np.ndarray] = []
    layout: list[str | int] = [f"{INSTRUCTION}\n\n"]
    flat = [INSTRUCTION, ""]
    if context:
        layout.append("Video:\n")
        for im in context:
            layout.append(len(images))
            images.append(im)
        layout.append("\n\n")
    layout.append(f"Question: {question}\n\nOptions:\n")
    flat.append(f"Question: {question}\n\nOptions:")
    for letter, frames in zip(letters, options):
        layout.append(f'"{letter}": ')
        first = len(images)
        for im in frames:
            layout.append(len(images))
            images.append(im)
        layout.append("\n")
        flat.append(f'"{letter}": <frames {first + 1}-{len(images)}>')
    tail = ANSWER.format(letters="/".join(letters)) if reasoning else SHORT_ANSWER
    layout.append(f"\n{tail}")
    flat.extend(["", tail])
    stamps = None
    if option_timestamps is not None:
        stamps = [*(context_timestamps or [0.0] * len(context)), *(t for ts in option_timestamps for t in ts)]
    return InterleavedRequest(images=tuple(images), prompt="\n".join(flat), options=tuple(letters),
                              timestamps=None if stamps is None else tuple(stamps), key=key,
                              max_new_tokens=max_new_tokens, layout=tuple(layout))


def yes_no_request(
    video_frames: Sequence[np.ndarray],
    probe_frame: np.ndarray,
    *,
    timestamps: Sequence[float] | None = None,
    key: str = "",
) -> InterleavedRequest:
    """``<video frames> Did this frame appear in the video?: <probe> Answer only Yes or No.``"""
    n = len(video_frames)
    layout: list[str | int] = [*range(n), f"\n{YES_NO}", n, f"\n{YES_NO_ANSWER}"]
    stamps = None if timestamps is None else (*timestamps, -1.0)
    return InterleavedRequest(images=(*video_frames, probe_frame), prompt=f"{YES_NO}<probe frame>\n{YES_NO_ANSWER}",
                              options=("Yes", "No"), timestamps=stamps, key=key, layout=tuple(layout))


def frames_at(path: Path, times: Sequence[float], *, media: str | None = None, size: tuple[int, int] | None = None,
              folder_fps: float = 3.0) -> tuple[list[np.ndarray], list[float]]:
    """The frame shown at each time (the last whose presentation time <= t; the first for earlier t)."""
    from tempcore.video.decode import probe, read_frames

    ts = probe(path, fps=None, media=media, folder_fps=folder_fps).timestamps
    idx = [max(0, int(np.searchsorted(ts, t + 1e-9, side="right")) - 1) for t in times]
    batch = read_frames(path, idx, None, media=media, size=size, folder_fps=folder_fps)
    return list(batch.frames), [float(t) for t in batch.timestamps]


VIDEO_FRAMES = 8
"""Frames of the video shown before a TFR question's options and of a CMD stimulus (``context_k``).
Choice: 8, the paper's VFP context length (a VFP question shows the context its build recorded)."""

PROMPT_FORM = {"instruction": INSTRUCTION, "answer": ANSWER, "short_answer": SHORT_ANSWER, "yes_no": YES_NO,
               "yes_no_answer": YES_NO_ANSWER, "version": 1}
"""Every fixed text of the request forms (part of a visual sample's identity in the run store)."""


def _cmd_picks(n_frames: int, context_k: int) -> list[int]:
    """Positions of the stimulus frames shown: ``min(context_k, n)`` evenly spaced, first and last included."""
    return [int(i) for i in np.linspace(0, n_frames - 1, min(context_k, n_frames)).round()]


def _tfr_context(meta: dict[str, Any], context_k: int) -> list[float]:
    """Segment centres of ``[0, video_duration]``: ``context_k`` frames spread over the whole video."""
    duration = float(meta.get("video_duration") or 0.0)
    return [duration * (i + 0.5) / context_k for i in range(context_k)]


def shown_images(sample: Sample, context_k: int = VIDEO_FRAMES) -> int:
    """The number of images :func:`request_for_sample` shows for ``sample``, from its metadata alone.

    TFR: ``context_k`` + the option frames (text control: ``context_k``); VFP: the recorded context +
    the option frames (text control: the context); CMD: ``min(context_k, stimulus frames)`` + the probe
    frame (text control: no probe)."""
    meta = sample.metadata
    task, text = meta.get("task"), meta.get("option_modality") == "text"
    try:
        if task == "cmd":
            return min(context_k, int(meta["stimulus_frames"])) + (0 if text else 1)
        context = context_k if task == "tfr" else len(meta["context"]["times"])
        if text:
            return context
        return context + sum(len(o["times"]) for o in meta["visual_options"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"sample {sample.sample_id}: its visual-option metadata lacks {exc} "
                         f"(not a row written by `tempcore visual build {task}`?)") from None


def decode_params(sample: Sample) -> tuple[str | None, float]:
    """(media, folder_fps) :func:`request_for_sample` decodes ``sample``'s video with (at its own rate)."""
    if sample.metadata.get("task") == "cmd":
        return None, DEFAULT_FOLDER_FPS
    return sample.media, float(sample.metadata.get("frames_fps", 3.0))


def _time_groups(sample: Sample, context_k: int) -> list[list[float]]:
    """The times of the frames a TFR / VFP request shows: the context, then each option's (visual form)."""
    meta = sample.metadata
    context_times = meta["context"]["times"] if meta.get("task") == "vfp" else _tfr_context(meta, context_k)
    text = meta.get("option_modality") == "text"
    return [list(context_times)] + ([] if text else [list(o["times"]) for o in meta["visual_options"]])


def _at(timestamps: Sequence[float], t: float) -> int:
    """The position of the frame shown at ``t`` (the last whose time <= t; the first for earlier t)."""
    return max(0, int(np.searchsorted(timestamps, t + 1e-9, side="right")) - 1)


def shown_positions(sample: Sample, timestamps: Sequence[float], context_k: int = VIDEO_FRAMES) -> list[int]:
    """The positions (in the video's frame sequence at its own rate, whose presentation times are
    ``timestamps``) of the video frames :func:`request_for_sample` shows, in the order shown."""
    if sample.metadata.get("task") == "cmd":
        return _cmd_picks(len(timestamps), context_k)
    return [_at(timestamps, t) for g in _time_groups(sample, context_k) for t in g]


def shown_wants(sample: Sample, context_k: int = VIDEO_FRAMES) -> tuple[list[float], list[int]]:
    """What :func:`shown_positions` will ask for, before the video's times are known: the times
    (TFR / VFP) and the positions expected from the metadata (CMD: ``stimulus_frames`` frames)."""
    meta = sample.metadata
    if meta.get("task") == "cmd":
        return [], _cmd_picks(int(meta.get("stimulus_frames") or 0), context_k) if meta.get("stimulus_frames") else []
    return [t for g in _time_groups(sample, context_k) for t in g], []


FrameSource = Callable[[Path, "str | None", float, Callable[[Sequence[float]], list[int]]], "FrameBatch"]
"""Frames of a video at its own rate for :func:`request_for_sample`: ``source(path, media, folder_fps,
positions_of)`` returns the frames at ``positions_of(timestamps)`` (in that order, with their
presentation times) as :func:`tempcore.video.decode.read_frames` decodes them. The default probes the
video then reads the frames (two passes per request); a run shares one pass per video
(:func:`tempcore.run.visual.visual_request`)."""


def _probe_then_read(size: tuple[int, int] | None) -> FrameSource:
    def source(path: Path, media: str | None, folder_fps: float,
               positions_of: Callable[[Sequence[float]], list[int]]) -> FrameBatch:
        from tempcore.video.decode import probe, read_frames

        ts = probe(path, fps=None, media=media, folder_fps=folder_fps).timestamps
        return read_frames(path, positions_of(ts), None, media=media, size=size, folder_fps=folder_fps)

    return source


def request_for_sample(sample: Sample, video_root: str | Path | None = None, *, context_k: int = VIDEO_FRAMES,
                       size: tuple[int, int] | None = None, reasoning: bool = False,
                       frames: FrameSource | None = None) -> InterleavedRequest:
    """The request of a built TFR / VFP / CMD sample (visual options or its text control).

    The video is probed once and every frame shown (context and options) decoded in one pass;
    ``frames`` (:data:`FrameSource`, used only when ``size`` is ``None``) gives them instead."""
    from PIL import Image

    from tempcore.video.decode import resolve_video_path

    meta = sample.metadata
    path = resolve_video_path(sample.video, video_root)
    task = meta.get("task")
    source = frames if frames is not None and size is None else _probe_then_read(size)
    media, folder_fps = decode_params(sample)
    batch = source(path, media, folder_fps, lambda ts: shown_positions(sample, ts, context_k))
    if task == "cmd":
        frames_, stamps = list(batch.frames), [float(t) for t in batch.timestamps]
        if meta.get("option_modality") == "text":  # the control: the contact described, no probe frame
            layout_t: list[str | int] = [*range(len(frames_)), f"\n{sample.question}\n{YES_NO_ANSWER}"]
            return InterleavedRequest(images=tuple(frames_), prompt=f"{sample.question}\n{YES_NO_ANSWER}",
                                      options=("Yes", "No"), timestamps=tuple(stamps), key=sample.sample_id,
                                      layout=tuple(layout_t))
        root = Path(video_root) if video_root is not None else Path(".")
        probe_img = np.asarray(Image.open(root / meta["probe_image"]).convert("RGB"))
        if size is not None:
            probe_img = np.asarray(Image.fromarray(probe_img).resize(size))
        return yes_no_request(frames_, probe_img, timestamps=stamps, key=sample.sample_id)
    text = meta.get("option_modality") == "text"
    groups = _time_groups(sample, context_k)
    images, stamps_all = list(batch.frames), [float(t) for t in batch.timestamps]
    cut, pieces = 0, []
    for g in groups:
        pieces.append((images[cut:cut + len(g)], stamps_all[cut:cut + len(g)]))
        cut += len(g)
    context, cstamps = pieces[0]
    if text:
        letters = [chr(ord("A") + i) for i in range(len(sample.options))]
        listing = "\n".join(f'"{ltr}": {o}' for ltr, o in zip(letters, sample.options))
        layout: list[str | int] = [f"{INSTRUCTION}\n\nVideo:\n", *range(len(context)),
                                   f"\n\nQuestion: {sample.question}\n\nOptions:\n{listing}\n\n{SHORT_ANSWER}"]
        return InterleavedRequest(images=tuple(context), prompt=str(layout[-1]), options=tuple(sample.options),
                                  timestamps=tuple(cstamps), key=sample.sample_id, layout=tuple(layout))
    return multiple_choice_request(sample.question, [f for f, _ in pieces[1:]], context=context,
                                   option_timestamps=[s for _, s in pieces[1:]], context_timestamps=cstamps,
                                   reasoning=reasoning, key=sample.sample_id)


__all__ = [
    "PROMPT_FORM",
    "VIDEO_FRAMES",
    "InterleavedRequest",
    "frames_at",
    "hf_content",
    "multiple_choice_request",
    "openai_parts",
    "FrameSource",
    "decode_params",
    "request_for_sample",
    "shown_positions",
    "shown_wants",
    "shown_images",
    "yes_no_request",
]
