"""Video future prediction (VFP, paper 002 §3.2, App. A.3): the model sees the first frames of a clip
and picks which of four frame sequences is its true future.

Input: a folder of clips (video files) or of frame folders (a sub-folder of images per clip, shown
at ``folder_fps``). Every clip is decoded with PyAV at its own rate (``fps=None``: every frame once,
by presentation time); ``L`` = number of decoded frames.

- **Context** = decoded frames ``0 .. c-1`` (``context_frames``, default 8); **future** = the last
  ``f`` frames ``L-f .. L-1`` (``future_frames``, default 8; the paper's "first eight" and "last
  eight"). A clip with ``L < c + f`` gives no question (counted in ``build.json`` as ``too_short``).
- **Options**: ``correct`` (the future, forward), ``rev_correct`` (the future reversed), ``rev_input``
  (the context reversed), ``scrambled`` (the future with its first and last frames kept and the
  middle permuted by a seeded permutation that is never the identity; needs ``f >= 4``). The
  paper's option names are kept as the option types.
- The question's ``video`` is the clip; ``end`` is the time of frame ``c`` so a reader of the sample's
  segment sees the context only (``metadata.context`` lists its frames as well).
- **Text control**: only when ``captions`` is given (``{clip name: {option type: text}}``); the paper
  captions the visual options with an LLM, which tempcore does not do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tempcore.visual.common import (
    LABELS,
    VisualBuildError,
    arrange,
    balanced_positions,
    non_identity_permutation,
    rng_for,
    write_rows,
)

OPTION_TYPES = ("correct", "rev_correct", "rev_input", "scrambled")
QUESTION = "Which option shows what happens next in the video?"
VIDEO_SUFFIXES = frozenset({".mp4", ".mkv", ".webm", ".mov", ".avi", ".gif", ".m4v"})


def find_clips(root: str | Path) -> list[tuple[str, str]]:
    """``(relative path, media)`` of every clip in ``root`` (video files, or folders of images), sorted."""
    from tempcore.video.types import IMAGE_SUFFIXES

    root = Path(root)
    if not root.is_dir():
        raise VisualBuildError(f"{root}: not a folder of clips")
    out = []
    for p in sorted(root.iterdir()):
        if p.is_file() and p.suffix.lower() in VIDEO_SUFFIXES:
            out.append((p.name, "gif" if p.suffix.lower() == ".gif" else "video"))
        elif p.is_dir() and any(q.suffix.lower() in IMAGE_SUFFIXES for q in p.iterdir()):
            out.append((p.name, "frames"))
    return out


def build_vfp(
    video_root: str | Path,
    out_dir: str | Path,
    *,
    seed: int = 0,
    context_frames: int = 8,
    future_frames: int = 8,
    folder_fps: float = 3.0,
    question: str = QUESTION,
    captions: Mapping[str, Mapping[str, str]] | str | Path | None = None,
    clips: list[tuple[str, str]] | None = None,
    source: str = "",
) -> dict[str, Any]:
    """Build VFP questions for every clip of ``video_root`` (see the module docstring)."""
    from tempcore.video.decode import probe
    from tempcore.video.types import VideoError

    if context_frames < 1:
        raise VisualBuildError(f"context_frames must be >= 1, not {context_frames}")
    if future_frames < 4:
        raise VisualBuildError(
            f"future_frames must be >= 4 (the scrambled option keeps the first and last frames and "
            f"permutes the middle, which must not stay in order), not {future_frames}"
        )
    caption_map: Mapping[str, Mapping[str, str]] = (
        json.loads(Path(captions).read_text(encoding="utf-8")) if isinstance(captions, (str, Path))
        else captions or {})
    root = Path(video_root)
    clips = find_clips(root) if clips is None else clips
    usable: list[tuple[str, str, list[float]]] = []
    too_short: list[str] = []
    for name, media in clips:
        try:
            info = probe(root / name, fps=None, media=media, folder_fps=folder_fps)
        except VideoError as exc:
            raise VisualBuildError(f"{root / name}: cannot decode: {exc}") from exc
        if info.frames < context_frames + future_frames:
            too_short.append(name)
            continue
        usable.append((name, media, [round(t, 6) for t in info.timestamps]))
    positions = balanced_positions(len(usable), 4, rng_for(seed, "positions"))
    rows: list[dict[str, Any]] = []
    for (name, media, ts), position in zip(usable, positions):
        sid = Path(name).stem if media != "frames" else name
        n = len(ts)
        ctx = list(range(context_frames))
        fut = list(range(n - future_frames, n))
        perm = non_identity_permutation(future_frames - 2, rng_for(seed, f"{sid}/scrambled"))
        middle = fut[1:-1]
        scr = [fut[0], *[middle[i] for i in perm], fut[-1]]
        made: dict[str, dict[str, Any]] = {
            "correct": {"frames": fut, "order": "forward", "from": "future"},
            "rev_correct": {"frames": fut[::-1], "order": "backward", "from": "future"},
            "rev_input": {"frames": ctx[::-1], "order": "backward", "from": "context"},
            "scrambled": {"frames": scr, "order": "middle_permuted", "from": "future", "permutation": perm},
        }
        order, answer = arrange("correct", ["rev_correct", "rev_input", "scrambled"], position,
                                rng_for(seed, f"{sid}/order"))
        visual_options = [
            {"label": LABELS[i], "type": t, **made[t], "times": [ts[j] for j in made[t]["frames"]]}
            for i, t in enumerate(order)
        ]
        seqs = [tuple(o["frames"]) for o in visual_options]
        if len(set(seqs)) != len(seqs):  # pragma: no cover - excluded by the checks above
            raise VisualBuildError(f"{sid}: two options have the same frames")
        common = {
            "task": "vfp",
            "media": media,
            "end": ts[context_frames],
            "option_types": order,
            "context": {"frames": ctx, "times": [ts[j] for j in ctx]},
            "clip_frames": n,
            "seed": seed,
        }
        if media == "frames":
            common["frames_fps"] = folder_fps
        cap = caption_map.get(name) or caption_map.get(sid)
        rows.append({
            "id": sid, "video": name, "question": question, "options": list(LABELS), "answer": answer,
            "option_modality": "visual", **common, "visual_options": visual_options,
            "pair": f"{sid}-text" if cap else None,
        })
        if cap:
            missing = [t for t in OPTION_TYPES if not str(cap.get(t, "")).strip()]
            if missing:
                raise VisualBuildError(f"captions of {name}: no text for {', '.join(missing)}")
            rows.append({
                "id": f"{sid}-text", "video": name, "question": question,
                "options": [str(cap[t]) for t in order], "answer": answer, "option_modality": "text",
                **common, "pair": sid,
            })
    build = {
        "task": "vfp", "source": source, "video_root": str(root), "seed": seed,
        "context_frames": context_frames, "future_frames": future_frames, "folder_fps": folder_fps,
        "clips": len(clips), "questions": len(usable), "too_short": too_short, "rows": len(rows),
        "text_control": bool(caption_map),
    }
    write_rows(out_dir, rows, build)
    return build


__all__ = ["OPTION_TYPES", "build_vfp", "find_clips"]
