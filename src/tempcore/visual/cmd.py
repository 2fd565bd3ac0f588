"""Causal memory distortion (CMD, paper 002 §3.3, App. A.4, B.3): "Did this frame appear in the video?"
asked with the contact frame after each of four synthesised stimuli.

Annotation (JSONL, one row per source video; times in seconds of the source video)::

    {"video": "10M0F.mp4", "contact": 12.4, "excise": [12.2, 12.9], "unrelated": [20.0, 27.0],
     "segment": [6.0, 18.0], "contact_label": "the ball leaves the hand", "id": "10M0F"}

``segment`` (default: the whole video) is the sub-range holding the target action; ``excise`` the
interval removed in the incomplete stimuli (it must hold the contact frame: the frame being shown
at ``contact``, whose own presentation time must be >= ``excise[0]``); ``unrelated`` same-scene
footage unrelated to the contact; ``id`` defaults to the video's stem; ``contact_label`` (optional)
enables the text control.

Stimuli (each a real H.264 MP4 written with PyAV from the decoded source frames, at the source's
nominal frame rate; a frame is "in" an interval ``[a, b)`` when its presentation time is):

- ``complete``: the segment ``[s, e)`` as is. Answer **yes**.
- ``incomplete_with_implication``: ``[s, x0)`` + ``[x1, e)`` (the contact removed, the consequence
  kept). Answer **no**.
- ``incomplete_without_implication``: ``[s, x0)`` + the first ``n`` frames of the unrelated interval,
  ``n`` = the number of consequence frames (the consequence replaced). Answer **no**.
- ``scrambled``: the frames of ``incomplete_with_implication`` cut into ``n_segments`` (default 4)
  contiguous pieces of equal frame count (the last takes the remainder), shown in a seeded
  non-identity order. Answer **no** (the contact is not in it; the paper's example lists it so).

The paper's text speaks of six variants (complete / incomplete x three conditions); its example and
this builder make four. **Time matching**: every stimulus must last within ``tolerance`` (default
1 s, the paper's bound) of ``complete``; otherwise the row is refused, naming the stimulus. The probe
image (the contact frame, PNG) is written to ``frames/{id}_contact.png``; the stimuli to
``videos/{id}_{stimulus}.mp4`` (paths in the rows are relative to the output folder: use it as the
video root). Each row records the pieces of source time it is made of (``pieces``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tempcore.visual.common import VisualBuildError, non_identity_permutation, rng_for, write_rows

STIMULI = ("complete", "incomplete_with_implication", "incomplete_without_implication", "scrambled")
ANSWERS = {"complete": "yes", "incomplete_with_implication": "no",
           "incomplete_without_implication": "no", "scrambled": "no"}
QUESTION = "Did this frame appear in the video?"
OPTIONS = ("Yes", "No")


def _interval(row: dict[str, Any], name: str, where: str) -> tuple[float, float] | None:
    value = row.get(name)
    if value is None:
        return None
    try:
        a, b = float(value[0]), float(value[1])
    except (TypeError, ValueError, IndexError, KeyError):
        raise VisualBuildError(f"{where}: {name} must be [start, end] seconds, not {value!r}") from None
    if not 0 <= a < b:
        raise VisualBuildError(f"{where}: {name} needs 0 <= start < end, not {value!r}")
    return a, b


def read_cmd_annotations(path: str | Path) -> list[dict[str, Any]]:
    """The annotation rows, checked (named errors ``FILE:LINE: reason``)."""
    rows = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise VisualBuildError(f"{where}: not JSON: {exc}") from None
        if not isinstance(row, dict) or not isinstance(row.get("video"), str):
            raise VisualBuildError(f"{where}: a row needs 'video'")
        for name in ("contact", "excise", "unrelated"):
            if row.get(name) is None:
                raise VisualBuildError(f"{where}: missing {name!r}")
        try:
            contact = float(row["contact"])
        except (TypeError, ValueError):
            raise VisualBuildError(f"{where}: contact must be seconds, not {row['contact']!r}") from None
        excise = _interval(row, "excise", where)
        unrelated = _interval(row, "unrelated", where)
        segment = _interval(row, "segment", where)
        assert excise is not None and unrelated is not None
        if not excise[0] <= contact < excise[1]:
            raise VisualBuildError(f"{where}: the contact time {contact} is not inside excise {list(excise)}")
        if segment is not None and not (segment[0] < excise[0] and excise[1] < segment[1]):
            raise VisualBuildError(f"{where}: excise {list(excise)} must lie strictly inside segment {list(segment)}")
        if unrelated[0] < excise[1] and excise[0] < unrelated[1]:
            raise VisualBuildError(f"{where}: unrelated {list(unrelated)} overlaps excise {list(excise)}")
        rows.append({"id": str(row.get("id") or Path(row["video"]).stem), "video": row["video"], "contact": contact,
                     "excise": excise, "unrelated": unrelated, "segment": segment,
                     "contact_label": row.get("contact_label"), "where": where})
    ids = [r["id"] for r in rows]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise VisualBuildError(f"{path}: duplicate id(s) {dup}")
    return rows


def _runs(indices: Sequence[int]) -> list[tuple[int, int]]:
    """Contiguous runs ``[first, last]`` of an index list, in order."""
    runs: list[tuple[int, int]] = []
    for i in indices:
        if runs and i == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def _frames(path: Path, ts: Sequence[float], indices: Sequence[int], size: tuple[int, int]) -> Iterator[np.ndarray]:
    """The source frames ``indices`` (positions in the every-frame decode), streamed run by run."""
    from tempcore.video.decode import VideoReader

    eps = 1e-6
    for first, last in _runs(indices):
        t0, t1 = ts[first], ts[last]
        reader = VideoReader(path, None, start=t0, end=t1 + eps, size=size, threads=1)
        emitted = 0
        for batch in reader:
            for frame, t in zip(batch.frames, batch.timestamps):
                if t0 - eps <= t <= t1 + eps:
                    emitted += 1
                    yield frame
        if emitted != last - first + 1:
            raise VisualBuildError(f"{path}: decoding [{t0}, {t1}] gave {emitted} frames, expected {last - first + 1}")


def build_cmd(
    annotations: str | Path,
    video_root: str | Path,
    out_dir: str | Path,
    *,
    seed: int = 0,
    tolerance: float = 1.0,
    n_segments: int = 4,
    crf: int = 18,
    text_control: bool = True,
) -> dict[str, Any]:
    """Synthesise the four stimuli of every annotated video and write the yes/no questions."""
    from PIL import Image

    from tempcore.video.decode import probe, read_frames
    from tempcore.video.synthetic import write_video
    from tempcore.video.types import VideoError

    if n_segments < 2:
        raise VisualBuildError(f"n_segments must be >= 2, not {n_segments}")
    out = Path(out_dir)
    rows_out: list[dict[str, Any]] = []
    for ann in read_cmd_annotations(annotations):
        where, vid = ann["where"], ann["id"]
        src = Path(video_root) / ann["video"]
        try:
            info = probe(src, fps=None)
        except VideoError as exc:
            raise VisualBuildError(f"{where}: {exc}") from exc
        ts = info.timestamps
        fps = info.nominal_fps or (1.0 / float(np.median(np.diff(ts))) if len(ts) > 1 else 1.0)
        seg = ann["segment"] or (0.0, info.duration)
        x0, x1 = ann["excise"]
        u0, u1 = ann["unrelated"]
        shown = [i for i, t in enumerate(ts) if t <= ann["contact"] + 1e-9]
        if not shown:
            raise VisualBuildError(f"{where}: no frame is shown at the contact time {ann['contact']}")
        contact_idx = shown[-1]
        if ts[contact_idx] < x0 - 1e-9:
            raise VisualBuildError(
                f"{where}: the contact frame starts at {ts[contact_idx]:.6f} s, before excise start {x0}; "
                "the excised interval must hold the contact frame's own time"
            )
        prefix = [i for i, t in enumerate(ts) if seg[0] - 1e-9 <= t < x0 - 1e-9]
        consequence = [i for i, t in enumerate(ts) if x1 - 1e-9 <= t < seg[1] - 1e-9]
        excised = [i for i, t in enumerate(ts) if x0 - 1e-9 <= t < x1 - 1e-9]
        unrelated_all = [i for i, t in enumerate(ts) if u0 - 1e-9 <= t < u1 - 1e-9]
        if not prefix or not consequence:
            raise VisualBuildError(f"{where}: the segment needs frames before and after the excised interval")
        unrelated = unrelated_all[: len(consequence)]
        if not unrelated:
            raise VisualBuildError(f"{where}: the unrelated interval holds no frame")
        if contact_idx in unrelated:
            raise VisualBuildError(f"{where}: the unrelated footage holds the contact frame")
        incomplete = prefix + consequence
        rng = rng_for(seed, f"{vid}/scrambled")
        size = max(1, len(incomplete) // n_segments)
        pieces = [incomplete[j * size:(j + 1) * size] for j in range(n_segments - 1)]
        pieces.append(incomplete[(n_segments - 1) * size:])
        perm = non_identity_permutation(n_segments, rng)
        stimuli = {
            "complete": prefix + excised + consequence,
            "incomplete_with_implication": incomplete,
            "incomplete_without_implication": prefix + unrelated,
            "scrambled": [i for j in perm for i in pieces[j]],
        }
        durations = {k: len(v) / fps for k, v in stimuli.items()}
        for k, d in durations.items():
            if abs(d - durations["complete"]) > tolerance + 1e-9:
                raise VisualBuildError(
                    f"{where}: stimulus {k} lasts {d:.3f} s, more than {tolerance} s from complete "
                    f"({durations['complete']:.3f} s); shorten excise or lengthen unrelated"
                )
        width, height = info.width - info.width % 2, info.height - info.height % 2
        probe_rel = f"frames/{vid}_contact.png"
        (out / "frames").mkdir(parents=True, exist_ok=True)
        image = read_frames(src, [contact_idx], None, size=(width, height)).frames[0]
        Image.fromarray(image).save(out / probe_rel)
        for k, indices in stimuli.items():
            rel = f"videos/{vid}_{k}.mp4"
            write_video(out / rel, _frames(src, ts, indices, (width, height)), fps=fps, size=(width, height),
                        crf=crf, codec_options={"threads": "1"})
            answer = ANSWERS[k]
            made = [{"source": [ts[a], ts[b]], "frames": [a, b]} for a, b in _runs(indices)]
            common = {
                "task": "cmd", "stimulus": k, "source_video": ann["video"], "video_id": vid,
                "expected": answer, "contact": {"time": ann["contact"], "frame": contact_idx,
                                                "frame_time": ts[contact_idx], "image": probe_rel},
                "probe_image": probe_rel, "pieces": made, "stimulus_frames": len(indices),
                "stimulus_duration": round(durations[k], 6), "fps": fps,
                "annotation": {"excise": [x0, x1], "unrelated": [u0, u1], "segment": list(seg)},
                "seed": seed,
            }
            if k == "scrambled":
                common["permutation"] = perm
            sid = f"{vid}_{k}"
            rows_out.append({"id": sid, "video": rel, "question": QUESTION, "options": list(OPTIONS),
                             "answer": 0 if answer == "yes" else 1, "option_modality": "visual", **common,
                             "pair": f"{sid}-text" if text_control and ann["contact_label"] else None})
            if text_control and ann["contact_label"]:
                rows_out.append({"id": f"{sid}-text", "video": rel,
                                 "question": f"Did this moment appear in the video: {ann['contact_label']}?",
                                 "options": list(OPTIONS), "answer": 0 if answer == "yes" else 1,
                                 "option_modality": "text", **common, "pair": sid})
    build = {"task": "cmd", "annotations": str(annotations), "video_root": str(video_root), "seed": seed,
             "tolerance": tolerance, "n_segments": n_segments, "stimuli": list(STIMULI),
             "videos": len({r["video_id"] for r in rows_out}), "rows": len(rows_out)}
    write_rows(out, rows_out, build)
    return build


__all__ = ["ANSWERS", "OPTIONS", "QUESTION", "STIMULI", "build_cmd", "read_cmd_annotations"]
