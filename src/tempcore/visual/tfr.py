"""Temporal frame retrieval (TFR, paper 002 §3.1, App. A.2): "What happens after / before <anchor>?"
with four options that are frame sequences of the video.

Input: per video, a list of labelled events ``(label, start, end)`` seconds, read from

- Charades: the CSV (``id`` and ``actions`` columns, ``actions`` = ``"c092 11.90 21.20;c147 0.00 12.60"``;
  ``length`` when present is the video's duration) plus the class file (lines ``c092 Someone ...``);
  the video is ``{id}.mp4``;
- the generic JSONL: rows ``{"video": PATH, "events": [{"label", "start", "end"}, ...], "duration"?}``.

Definitions (to the letter of the paper where it speaks; every open choice named):

- **Kept actions**: ``min_duration <= end - start <= max_duration`` (default 1 and 5 s, **both bounds
  inclusive**: the paper drops actions "shorter than 1 s or longer than 5 s"). Videos are never dropped.
- **Neighbours** of an anchor (among kept actions of another label: an action of the anchor's own
  label is never its neighbour, so the text control has distinct options): the *next* action is the
  one with the earliest start among those starting at or after the anchor's end; the *previous*
  action the one with the latest end among those ending at or before the anchor's start (ties: earlier
  start, then shorter, then label). Overlapping actions are neither.
- **Questions**: an anchor with a next action gives an "after" question (correct = next, closest
  distractor = previous); with a previous action a "before" question (correct = previous, distractor
  = next). An anchor without a neighbour on the correct side gives no question.
- **No neighbour on the wrong side**: the closest distractor falls back to **the anchor itself** (as
  the paper's example shows: option C there is the anchor's own span). Such questions carry
  ``distractor_fallback: "anchor"`` and are counted in ``build.json`` (``fallback_anchor``).
- **Options** (``frames_per_option`` frames each, segment centres, see :mod:`.common`):
  ``correct`` (the correct neighbour's span, forward), ``reversed`` (the same times, backward),
  ``neighbor`` (the closest distractor's span, forward), ``scrambled`` (one time drawn uniformly in
  each of ``k`` equal bins of ``[0, duration)``, then put in a random non-sorted order). No option may
  equal another (checked; the scrambled draw is repeated, at most 100 times).
- **Balance**: with ``balance=True`` the more frequent question type is subsampled (seeded) to the
  count of the other; the correct position is balanced within each type.
- **Text control** (App. C): the same question, the options described in text: the correct and the
  neighbour option by their action labels, the reversed and the scrambled option by labels of kept
  actions of *other* videos (seeded; excluding every label of this video), in the same positions as
  the visual question. Its id is ``<id>-text``; both rows name each other in ``pair``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tempcore.visual.common import (
    LABELS,
    VisualBuildError,
    arrange,
    balanced_positions,
    rng_for,
    span_times,
    video_duration,
    write_rows,
)

OPTION_TYPES = ("correct", "scrambled", "reversed", "neighbor")
QUESTION = "What happens {kind} the following action: {anchor}?"


@dataclass(frozen=True)
class Event:
    label: str
    start: float
    end: float
    class_id: str | None = None

    @property
    def length(self) -> float:
        return self.end - self.start

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"label": self.label, "start": self.start, "end": self.end}
        if self.class_id is not None:
            d["class_id"] = self.class_id
        return d


@dataclass(frozen=True)
class VideoEvents:
    video: str
    events: tuple[Event, ...]
    duration: float | None = None

    @property
    def video_id(self) -> str:
        return Path(self.video).stem


# --- reading ---------------------------------------------------------------------------------


def read_classes(path: str | Path) -> dict[str, str]:
    """Charades' class file: ``c000 Holding some clothes`` per line -> ``{"c000": "Holding some clothes"}``."""
    out: dict[str, str] = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        cid, _, name = line.strip().partition(" ")
        if not name.strip():
            raise VisualBuildError(f"{path}:{n}: expected 'CLASS_ID name', got {line!r}")
        out[cid] = name.strip()
    return out


def _float(value: Any, where: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise VisualBuildError(f"{where}: {value!r} is not a number") from None
    if x != x or x < 0:
        raise VisualBuildError(f"{where}: {value!r} is not a non-negative number")
    return x


def read_charades(path: str | Path, classes: Mapping[str, str]) -> list[VideoEvents]:
    """Charades CSV rows (``id``, ``actions``, optional ``length``) as :class:`VideoEvents`."""
    out = []
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or "id" not in reader.fieldnames or "actions" not in reader.fieldnames:
            raise VisualBuildError(f"{path}: a Charades CSV needs 'id' and 'actions' columns")
        for n, row in enumerate(reader, 2):
            events = []
            for part in (row.get("actions") or "").split(";"):
                if not part.strip():
                    continue
                bits = part.split()
                if len(bits) != 3:
                    raise VisualBuildError(f"{path}:{n}: action {part!r} is not 'CLASS START END'")
                cid = bits[0]
                if cid not in classes:
                    raise VisualBuildError(f"{path}:{n}: class {cid!r} is not in the class file")
                s, e = _float(bits[1], f"{path}:{n}"), _float(bits[2], f"{path}:{n}")
                if e <= s:
                    continue  # a zero-length action: never kept (below any minimum duration)
                events.append(Event(classes[cid], s, e, cid))
            length = row.get("length")
            out.append(VideoEvents(f"{row['id']}.mp4", tuple(events),
                                   _float(length, f"{path}:{n}: length") if length not in (None, "") else None))
    return out


def read_event_jsonl(path: str | Path) -> list[VideoEvents]:
    """Generic rows ``{"video", "events": [{"label", "start", "end"}], "duration"?}``."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise VisualBuildError(f"{path}:{n}: not JSON: {exc}") from None
        if not isinstance(row, dict) or not isinstance(row.get("video"), str) or not isinstance(row.get("events"), list):
            raise VisualBuildError(f"{path}:{n}: a row needs 'video' (text) and 'events' (a list)")
        events = []
        for j, ev in enumerate(row["events"]):
            if not isinstance(ev, dict) or not str(ev.get("label", "")).strip():
                raise VisualBuildError(f"{path}:{n}: event {j} needs a non-empty 'label'")
            s, e = _float(ev.get("start"), f"{path}:{n}: event {j}"), _float(ev.get("end"), f"{path}:{n}: event {j}")
            if e <= s:
                raise VisualBuildError(f"{path}:{n}: event {j} has start >= end ({s}, {e})")
            events.append(Event(str(ev["label"]).strip(), s, e, ev.get("class_id")))
        dur = row.get("duration")
        out.append(VideoEvents(row["video"], tuple(events), None if dur is None else _float(dur, f"{path}:{n}: duration")))
    return out


def read_annotations(path: str | Path, classes: str | Path | None = None) -> list[VideoEvents]:
    """Charades CSV (needs ``classes``) or generic JSONL, by the file's suffix."""
    p = Path(path)
    if p.suffix.lower() == ".csv":
        if classes is None:
            raise VisualBuildError(f"{p}: a Charades CSV needs the class file (--classes)")
        return read_charades(p, read_classes(classes))
    return read_event_jsonl(p)


# --- building --------------------------------------------------------------------------------


def kept_events(events: Iterable[Event], min_duration: float = 1.0, max_duration: float = 5.0) -> list[Event]:
    """Events with ``min_duration <= length <= max_duration`` (inclusive), sorted by (start, end, label)."""
    eps = 1e-9
    keep = [e for e in events if min_duration - eps <= e.length <= max_duration + eps]
    return sorted(keep, key=lambda e: (e.start, e.end, e.label))


def next_event(anchor: Event, events: Sequence[Event]) -> Event | None:
    cands = [e for e in events if e.label != anchor.label and e.start >= anchor.end - 1e-9]
    return min(cands, key=lambda e: (e.start, e.length, e.label)) if cands else None


def previous_event(anchor: Event, events: Sequence[Event]) -> Event | None:
    cands = [e for e in events if e.label != anchor.label and e.end <= anchor.start + 1e-9]
    return min(cands, key=lambda e: (-e.end, e.start, e.length, e.label)) if cands else None


def scrambled_times(duration: float, k: int, rng: Any) -> list[float]:
    """One uniform time per equal bin of ``[0, duration)``, in a random order that is not sorted."""
    from tempcore.visual.common import non_identity_permutation

    edges = [duration * i / k for i in range(k + 1)]
    times = [round(float(rng.uniform(edges[i], edges[i + 1])), 6) for i in range(k)]
    perm = non_identity_permutation(k, rng)
    return [times[i] for i in perm]


@dataclass(frozen=True)
class _Draft:
    sample_id: str
    video: VideoEvents
    kind: str
    anchor: Event
    correct: Event
    distractor: Event
    fallback: bool


def build_tfr(
    videos: Sequence[VideoEvents],
    out_dir: str | Path,
    *,
    video_root: str | Path | None = None,
    seed: int = 0,
    frames_per_option: int = 8,
    min_duration: float = 1.0,
    max_duration: float = 5.0,
    balance: bool = True,
    text_control: bool = True,
    source: str = "",
) -> dict[str, Any]:
    """Build TFR questions (see the module docstring); write ``out_dir/annotations.jsonl`` and
    ``build.json``; return the build summary. ``video`` paths stay relative to ``video_root``."""
    if frames_per_option < 2:
        raise VisualBuildError("TFR needs at least 2 frames per option (a reversed span must differ)")
    if not 0 <= min_duration <= max_duration:
        raise VisualBuildError(f"need 0 <= min_duration <= max_duration, not {min_duration}, {max_duration}")
    drafts: list[_Draft] = []
    kept_by_video: dict[str, list[Event]] = {}
    for v in videos:
        kept = kept_events(v.events, min_duration, max_duration)
        kept_by_video[v.video] = kept
        for i, anchor in enumerate(kept):
            nxt, prev = next_event(anchor, kept), previous_event(anchor, kept)
            base = f"{v.video_id}_{i:04d}"
            if nxt is not None:
                drafts.append(_Draft(f"{base}_after", v, "after", anchor, nxt, prev or anchor, prev is None))
            if prev is not None:
                drafts.append(_Draft(f"{base}_before", v, "before", anchor, prev, nxt or anchor, nxt is None))
    counts_before_balance = {k: sum(d.kind == k for d in drafts) for k in ("after", "before")}
    if balance and all(counts_before_balance.values()):
        n = min(counts_before_balance.values())
        kept_drafts: list[_Draft] = []
        for kind in ("after", "before"):
            mine = [d for d in drafts if d.kind == kind]
            rng = rng_for(seed, f"balance/{kind}")
            chosen = sorted(int(i) for i in rng.choice(len(mine), size=n, replace=False))
            kept_drafts.extend(mine[i] for i in chosen)
        drafts = sorted(kept_drafts, key=lambda d: d.sample_id)
    positions: dict[str, int] = {}
    for kind in ("after", "before"):
        mine = [d for d in drafts if d.kind == kind]
        for d, p in zip(mine, balanced_positions(len(mine), 4, rng_for(seed, f"positions/{kind}"))):
            positions[d.sample_id] = p
    durations: dict[str, float] = {}
    rows: list[dict[str, Any]] = []
    for d in drafts:
        if d.video.video not in durations:
            path = Path(d.video.video) if video_root is None else Path(video_root) / d.video.video
            durations[d.video.video] = video_duration(path, d.video.duration)
        duration = durations[d.video.video]
        rows.extend(_rows(d, duration, positions[d.sample_id], seed, frames_per_option, text_control, kept_by_video))
    fallback = sum(d.fallback for d in drafts)
    build = {
        "task": "tfr",
        "source": source,
        "video_root": None if video_root is None else str(video_root),
        "seed": seed,
        "frames_per_option": frames_per_option,
        "min_duration": min_duration,
        "max_duration": max_duration,
        "bounds": "inclusive",
        "balance": balance,
        "videos": len(videos),
        "kept_actions": sum(len(v) for v in kept_by_video.values()),
        "candidates": counts_before_balance,
        "questions": len(drafts),
        "by_type": {k: sum(d.kind == k for d in drafts) for k in ("after", "before")},
        "fallback_anchor": fallback,
        "rows": len(rows),
        "text_control": text_control,
    }
    write_rows(out_dir, rows, build)
    return build


def _rows(
    d: _Draft, duration: float, position: int, seed: int, k: int, text_control: bool,
    kept_by_video: Mapping[str, Sequence[Event]],
) -> list[dict[str, Any]]:
    correct_times = span_times(d.correct.start, d.correct.end, k)
    built: dict[str, dict[str, Any]] = {
        "correct": {"type": "correct", "order": "forward", "span": [d.correct.start, d.correct.end],
                    "times": correct_times, "event": d.correct.to_dict()},
        "reversed": {"type": "reversed", "order": "backward", "span": [d.correct.start, d.correct.end],
                     "times": correct_times[::-1], "event": d.correct.to_dict()},
        "neighbor": {"type": "neighbor", "order": "forward", "span": [d.distractor.start, d.distractor.end],
                     "times": span_times(d.distractor.start, d.distractor.end, k),
                     "event": d.distractor.to_dict(), "fallback": "anchor" if d.fallback else None},
    }
    rng = rng_for(seed, f"{d.sample_id}/scrambled")
    for _ in range(100):
        times = scrambled_times(duration, k, rng)
        if all(times != o["times"] for o in built.values()):
            break
    else:  # pragma: no cover - measure-zero event
        raise VisualBuildError(f"{d.sample_id}: could not draw a scrambled option unlike the others")
    built["scrambled"] = {"type": "scrambled", "order": "shuffled", "span": [0.0, duration], "times": times,
                          "event": None}
    seqs = [tuple(o["times"]) for o in built.values()]
    if len(set(seqs)) != len(seqs):
        raise VisualBuildError(f"{d.sample_id}: two options have the same frames")
    order, answer = arrange("correct", ["scrambled", "reversed", "neighbor"], position, rng_for(seed, f"{d.sample_id}/order"))
    visual_options = [{"label": LABELS[i], **built[t]} for i, t in enumerate(order)]
    question = QUESTION.format(kind=d.kind, anchor=d.anchor.label)
    common = {
        "task": "tfr",
        "question_type": d.kind,
        "video_id": d.video.video_id,
        "video_duration": duration,
        "anchor": d.anchor.to_dict(),
        "distractor_fallback": "anchor" if d.fallback else None,
        "seed": seed,
    }
    visual = {
        "id": d.sample_id,
        "video": d.video.video,
        "question": question,
        "options": list(LABELS),
        "answer": answer,
        "option_modality": "visual",
        "option_types": order,
        "visual_options": visual_options,
        **common,
        "pair": f"{d.sample_id}-text" if text_control else None,
    }
    rows = [visual]
    if text_control:
        texts = _text_options(d, kept_by_video, seed)
        rows.append({
            "id": f"{d.sample_id}-text",
            "video": d.video.video,
            "question": question,
            "options": [texts[t] for t in order],
            "answer": answer,
            "option_modality": "text",
            "option_types": order,
            **common,
            "pair": d.sample_id,
        })
    return rows


def _text_options(d: _Draft, kept_by_video: Mapping[str, Sequence[Event]], seed: int) -> dict[str, str]:
    own = {e.label for e in d.video.events}
    others = sorted({e.label for v, evs in kept_by_video.items() if v != d.video.video for e in evs} - own)
    taken = {d.correct.label, d.distractor.label}
    rng = rng_for(seed, f"{d.sample_id}/text")
    pool = [x for x in others if x not in taken]
    if len(pool) < 2:  # a corpus too small: any label not already an option (stated in the row)
        pool = sorted({e.label for evs in kept_by_video.values() for e in evs} - taken)
    if len(pool) < 2:
        raise VisualBuildError(
            f"{d.sample_id}: the corpus has too few action labels for the text control's reversed and "
            "scrambled options (pass text_control=False / --no-text-control)"
        )
    picks = [pool[int(i)] for i in rng.choice(len(pool), size=2, replace=False)]
    return {"correct": d.correct.label, "neighbor": d.distractor.label, "reversed": picks[0], "scrambled": picks[1]}


__all__ = [
    "OPTION_TYPES",
    "Event",
    "VideoEvents",
    "build_tfr",
    "kept_events",
    "next_event",
    "previous_event",
    "read_annotations",
    "read_charades",
    "read_classes",
    "read_event_jsonl",
]
