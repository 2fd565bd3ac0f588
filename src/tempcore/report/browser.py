"""The sample browser's data: per sample its question, options, every model's answer under every
condition, and thumbnails of the MaxProb and MinProb frames.

Choices:

* **Which samples.** Per benchmark at most ``max_samples`` (default 200): every Temporally
  Sensitive sample first (a seeded random ``max_samples`` of them when there are more), then a
  seeded random sample of the others fills the remaining places. The cap, the seed and the
  counts are stated in :attr:`BrowserData.notes` and on the page. Rows are ordered by benchmark,
  then sample id.
* **Answers.** One cell per (model, condition); a condition is the prediction's ``condition`` key
  (built from its columns when the table has none), shown by a readable label
  (:func:`tempcore.report.format.condition_labels`, e.g. ``MaxProb · QA · K=8 · rotation 1``) with
  the key itself as the row's tooltip (``title``). The window oracle's per-window rows collapse
  into one ``oracle`` cell that is correct when any window is, with ``"c of n windows correct"``.
  Responses are cut to ``max_response_chars`` characters (marked with an ellipsis).
* **Frames.** The MaxProb / MinProb rows of the diagnosis' FSS mode (and its ``k`` / ``encoder``
  filters) give ``frame_indices`` / ``frame_timestamps``. Frame selection does not depend on the
  model, so the first model's set is shown; a note says when models saw different frames. The
  frames are decoded with :func:`tempcore.video.decode.read_frames` at the prediction's ``fps`` (and the
  sample's segment and media), scaled to ``thumb_width`` pixels wide and stored as small JPEG
  ``data:`` URIs. A missing or undecodable video leaves a note, never a failure.
* **Opening videos.** Only a regular file (or, for ``media="frames"``, a folder) is opened: a
  named pipe, a device or a socket is refused with a note before anything reads it (opening a
  FIFO blocks until a writer comes). Decoding one sample's thumbnails runs in a daemon thread
  bounded by ``thumb_timeout_s`` (default 60 s); past it the sample gets a note and the report
  goes on. Damage the decoder finds (a truncated file, undecodable data) is noted on the sample
  (``video_note``), while the frames that decoded are still shown.
"""

from __future__ import annotations

import base64
import io
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tempcore.records import LETTERS, Condition, Sample

SENSITIVE = ("temporally_grounded", "visual_bias")
STRATEGY_ORDER = ("maxprob", "minprob", "uniform", "random", "oracle", "noframe")
FRAME_STRATEGIES = ("maxprob", "minprob")
_COLUMNS = ("benchmark", "sample_id", "model", "strategy", "mode", "k", "window", "correct", "condition",
            "answer", "parse_error", "response", "frame_indices", "frame_timestamps", "fps", "encoder",
            "rotation", "seed", "variant")


@dataclass
class BrowserData:
    """Rows for the page (JSON-ready dicts) and what the selection left out."""

    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    max_samples: int = 200
    seed: int = 0
    shown: dict[str, int] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "notes": self.notes, "max_samples": self.max_samples, "seed": self.seed,
                "shown": self.shown, "totals": self.totals}


def select_samples(diagnosis: Any, max_samples: int = 200, seed: int = 0) -> tuple[list[tuple[str, str]], list[str]]:
    """(benchmark, sample_id) pairs to browse, and a note per benchmark on what was left out."""
    if max_samples < 1:
        raise ValueError(f"max_samples must be positive, not {max_samples!r}")
    by_bench: dict[str, tuple[list[str], list[str]]] = {}
    for b, sid, cat in zip(diagnosis.benchmark, diagnosis.sample_id, diagnosis.category):
        sensitive, others = by_bench.setdefault(str(b), ([], []))
        (sensitive if cat in SENSITIVE else others).append(str(sid))
    chosen: list[tuple[str, str]] = []
    notes = []
    for bench in sorted(by_bench):
        sensitive, others = (sorted(x) for x in by_bench[bench])
        rng = random.Random(f"{seed}:{bench}")
        take_s = sensitive if len(sensitive) <= max_samples else rng.sample(sensitive, max_samples)
        room = max_samples - len(take_s)
        take_o = others if len(others) <= room else rng.sample(others, room)
        total = len(sensitive) + len(others)
        if len(take_s) + len(take_o) < total:
            notes.append(
                f"{bench}: showing {len(take_s) + len(take_o)} of {total} samples (cap --max-samples {max_samples}): "
                f"{len(take_s)} of {len(sensitive)} Temporally Sensitive and a random sample (seed {seed}) of "
                f"{len(take_o)} of the {len(others)} others"
            )
        chosen += [(bench, s) for s in sorted(take_s + take_o)]
    return chosen, notes


def _num(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _condition_key(row: Mapping[str, Any], drop_window: bool = False) -> str:
    try:
        if row.get("condition"):
            cond = Condition.from_key(row["condition"])
        else:
            kwargs = {"strategy": row["strategy"], "mode": row["mode"], "k": int(row["k"])}
            for name in ("window", "encoder", "fps", "seed", "rotation", "variant"):
                if row.get(name) is not None:
                    kwargs[name] = row[name]
            cond = Condition(**kwargs)
        return (cond.replace(window=None) if drop_window else cond).key
    except (TypeError, ValueError):
        return str(row.get("condition") or f"{row['strategy']}|mode={row['mode']}|k={row['k']}")


def _strategy_rank(key: str) -> tuple[int, str]:
    strategy = key.split("|", 1)[0]
    return (STRATEGY_ORDER.index(strategy) if strategy in STRATEGY_ORDER else len(STRATEGY_ORDER), key)


def _short(text: Any, limit: int) -> str | None:
    if text is None:
        return None
    s = str(text)
    return s if len(s) <= limit else s[: limit - 1] + "\u2026"


def answer_cells(rows: Sequence[Mapping[str, Any]], max_response_chars: int = 300) -> list[dict[str, Any]]:
    """One cell per (model, condition) of one sample's prediction rows (oracle windows collapsed)."""
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        oracle = r["strategy"] == "oracle"
        key = (str(r["model"]), _condition_key(r, drop_window=oracle))
        if oracle:
            cell = cells.setdefault(key, {"model": key[0], "condition": key[1], "strategy": "oracle",
                                          "answer": None, "correct": 0, "windows": 0, "windows_correct": 0})
            cell["windows"] += 1
            cell["windows_correct"] += int(r["correct"])
            cell["correct"] = int(cell["windows_correct"] > 0)
            cell["detail"] = f"{cell['windows_correct']} of {cell['windows']} windows correct"
            continue
        answer = r.get("answer")
        cells[key] = {
            "model": key[0],
            "condition": key[1],
            "strategy": str(r["strategy"]),
            "answer": None if answer is None else (LETTERS[int(answer)] if 0 <= int(answer) < len(LETTERS)
                                                   else str(answer)),
            "correct": int(r["correct"]),
            "parse_error": bool(r.get("parse_error") or 0),
            "response": _short(r.get("response"), max_response_chars),
        }
    from tempcore.report.format import condition_labels

    labels = condition_labels(sorted({c["condition"] for c in cells.values()}))
    for c in cells.values():
        c["condition_label"] = labels[c["condition"]]
    return sorted(cells.values(), key=lambda c: (_strategy_rank(c["condition"]), c["model"]))


def _json_list(value: Any) -> list[Any] | None:
    if value is None or value == "":
        return None
    from tempcore import safejson

    try:  # the table is untrusted: a frame list nested 20k levels deep must not crash the report
        parsed = safejson.loads(value) if isinstance(value, str) else list(value)
    except (ValueError, TypeError):
        return None
    return parsed if isinstance(parsed, list) else None


def frame_sets(rows: Sequence[Mapping[str, Any]], fss_mode: str, filters: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per MaxProb / MinProb: the frame indices, timestamps and fps the models were shown."""
    out: dict[str, dict[str, Any]] = {}
    for strategy in FRAME_STRATEGIES:
        chosen = [r for r in rows if r["strategy"] == strategy and r["mode"] == fss_mode
                  and not r.get("rotation")
                  and all(v is None or r.get(c) == v for c, v in filters.items())]
        chosen.sort(key=lambda r: str(r["model"]))
        listed = [(r, _json_list(r.get("frame_indices"))) for r in chosen]
        sets = [(r, idx) for r, idx in listed if idx]
        if not sets:
            if chosen:
                out[strategy] = {"indices": [], "timestamps": [], "note": "the predictions do not record the frames"}
            continue
        first, indices = sets[0]
        stamps = _json_list(first.get("frame_timestamps")) or [None] * len(indices)
        entry: dict[str, Any] = {"indices": [int(i) for i in indices], "timestamps": [_num(t) for t in stamps],
                                 "fps": _num(first.get("fps")), "note": None}
        if any(idx != indices for _, idx in sets[1:]):
            entry["note"] = f"models saw different frames; shown: {first['model']}'s"
        out[strategy] = entry
    return out


def _native_size(path: Path, media: str) -> tuple[int, int] | None:
    try:
        if media == "frames":
            from PIL import Image

            from tempcore.video.types import IMAGE_SUFFIXES

            first = next(p for p in sorted(path.iterdir()) if p.suffix.lower() in IMAGE_SUFFIXES)
            with Image.open(first) as im:
                return im.size
        import av

        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            return int(stream.codec_context.width), int(stream.codec_context.height)
    except Exception:  # noqa: BLE001 - any failure just means "decode at native size"
        return None


SEEK_AFTER_S = 120.0


def _frame_near(path: Path, t: float, size: tuple[int, int] | None, media: str) -> Any:
    """The decoded frame whose presentation time is nearest ``t`` (a short seek-and-decode window)."""
    from tempcore.video.decode import VideoReader

    best, best_d = None, math.inf
    for batch in VideoReader(path, fps=None, start=max(0.0, t - 0.05), end=t + 0.05, size=size, media=media):
        for frame, ts in zip(batch.frames, batch.timestamps):
            if abs(float(ts) - t) < best_d:
                best, best_d = frame.copy(), abs(float(ts) - t)
    if best is None:
        raise ValueError(f"no frame near {t:.3f} s")
    return best


THUMB_TIMEOUT_S = 60.0


def openable_video(path: Path, media: str) -> str | None:
    """Why ``path`` must not be opened for decoding (not a regular file / folder), else None.
    Never opens the path: a FIFO would block the caller."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return f"video not found: {path}" if not path.exists() else f"cannot read video {path}: {exc.strerror}"
    if stat.S_ISDIR(mode):
        return None if media == "frames" else f"video is a folder, not a file: {path}"
    if not stat.S_ISREG(mode):
        kind = "a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        return f"video is {kind}, not a regular file (not opened): {path}"
    return None


def _run_bounded(fn: Any, timeout_s: float) -> Any:
    """``fn()`` in a daemon thread; TimeoutError when it takes longer than ``timeout_s``."""
    import threading

    from tempcore.run.ordered import in_context

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=in_context(target), name="tempcore-thumbnails", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise TimeoutError(f"decoding took longer than {timeout_s:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def thumbnails(
    path: Path,
    indices: Sequence[int],
    *,
    fps: float | None,
    timestamps: Sequence[float | None] | None = None,
    start: float | None = None,
    end: float | None = None,
    media: str = "video",
    width: int = 96,
    quality: int = 70,
    seek_after_s: float = SEEK_AFTER_S,
    damage: list[str] | None = None,
) -> list[str]:
    """JPEG ``data:`` URIs of the decoded frames at ``indices`` (order kept), ``width`` pixels wide.

    ``path`` must be a regular file (a folder for ``media="frames"``): anything else raises
    ``ValueError`` without being opened. When ``damage`` is a list, the decoder's damage reason
    (see :mod:`tempcore.video.decode`) is appended to it.

    Frames are decoded with :func:`tempcore.video.decode.read_frames` at ``fps`` in one streaming pass,
    which reads the video up to the last index. When the frames lie more than ``seek_after_s``
    seconds into the video (long videos) and their ``timestamps`` are known, each frame is found
    instead by seeking near its timestamp and taking the decoded frame whose presentation time is
    nearest, so a thumbnail an hour into a video does not cost decoding the hour before it.
    """
    from PIL import Image

    from tempcore.video.decode import read_frames

    refused = openable_video(path, media)
    if refused is not None:
        raise ValueError(refused)
    size = None
    native = _native_size(path, media)
    if native and native[0] > 0:
        height = max(2, int(round(width * native[1] / native[0] / 2)) * 2)
        size = (int(width), height)
    stamps = [t for t in timestamps if t is not None] if timestamps is not None else []
    known = timestamps is not None and len(timestamps) == len(indices) and len(stamps) == len(timestamps)
    if known and media != "frames" and max(stamps) - (start or 0.0) > seek_after_s:
        frames = [_frame_near(path, float(t), size, media) for t in stamps]
    else:
        batch = read_frames(path, list(indices), fps=fps, start=start, end=end, size=size, media=media)
        frames = list(batch.frames)
        if damage is not None and batch.damage:
            damage.append(batch.damage)
    out = []
    for frame in frames:
        image = Image.fromarray(frame)
        if size is None:
            image.thumbnail((width, width * 4))
        buf = io.BytesIO()
        image.save(buf, format="JPEG", quality=quality)
        out.append("data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii"))
    return out


def _attach_thumbnails(
    entry: dict[str, dict[str, Any]],
    sample: Sample,
    root: Any,
    width: int,
    quality: int = 70,
    timeout_s: float = THUMB_TIMEOUT_S,
) -> str | None:
    """Decode both frame sets of one sample in one pass; returns a note when the video is unusable
    or damaged (see "Opening videos" in the module docstring)."""
    from tempcore.benchmarks import resolve_video

    given = [i for s in entry.values() for i in s.get("indices", [])]
    if any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in given):
        return "frame indices in the predictions are not non-negative integers; no thumbnails"
    wanted = sorted(set(given))
    if not wanted:
        return None
    path = resolve_video(sample, root)
    refused = openable_video(path, sample.media)
    if refused is not None:
        return refused
    fps = next((s.get("fps") for s in entry.values() if s.get("fps")), None)
    stamps: dict[int, float | None] = {}
    for s in entry.values():
        for i, t in zip(s.get("indices", []), s.get("timestamps", [])):
            stamps.setdefault(i, t)
    damage: list[str] = []
    try:
        thumbs = _run_bounded(
            lambda: thumbnails(path, wanted, fps=fps, timestamps=[stamps.get(i) for i in wanted],
                               start=sample.start, end=sample.end, media=sample.media, width=width,
                               quality=quality, damage=damage),
            timeout_s,
        )
    except TimeoutError as exc:
        return f"video not decoded: {exc} ({path})"
    except Exception as exc:  # noqa: BLE001 - a bad video must not stop the report
        return f"video not decodable: {type(exc).__name__}: {exc}"
    by_index = dict(zip(wanted, thumbs))
    for s in entry.values():
        s["thumbs"] = [by_index[i] for i in s.get("indices", [])]
    return f"video damaged: {damage[0]}; the frames that decoded are shown" if damage else None


def build_browser(
    table: Any,
    diagnosis: Any,
    samples_by_benchmark: Mapping[str, Sequence[Sample]] | None = None,
    video_roots: Mapping[str, Any] | None = None,
    *,
    max_samples: int = 200,
    seed: int = 0,
    thumbnails_enabled: bool = True,
    thumb_width: int = 80,
    thumb_quality: int = 60,
    max_thumbnail_samples: int = 40,
    max_response_chars: int = 300,
) -> BrowserData:
    """The browser rows for the samples :func:`select_samples` picks (see the module docstring)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chosen, notes = select_samples(diagnosis, max_samples, seed)
    params = diagnosis.params
    fss_mode = params.get("fss_mode", "qa")
    filters = {k: v for k, v in (params.get("filters") or {}).items() if v is not None}
    samples = {b: {s.sample_id: s for s in ss} for b, ss in (samples_by_benchmark or {}).items()}
    roots = dict(video_roots or {})
    scores = {(str(b), str(s)): (f, li, fc, c) for b, s, f, li, fc, c in zip(
        diagnosis.benchmark, diagnosis.sample_id, diagnosis.fss, diagnosis.lis, diagnosis.fss_category,
        diagnosis.category)}
    cols = [c for c in _COLUMNS if c in table.column_names]
    wanted = set(chosen)
    ids = pa.array(sorted({s for _, s in chosen}), type=pa.string())
    sub = table.filter(pc.fill_null(pc.is_in(table.column("sample_id"), value_set=ids), False)).select(cols)
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in sub.to_pylist():
        key = (str(r["benchmark"]), str(r["sample_id"]))
        if key in wanted:
            grouped.setdefault(key, []).append(r)
    # thumbnails for at most max_thumbnail_samples per benchmark: Temporally Sensitive ones first
    with_thumbs: set[tuple[str, str]] = set()
    if thumbnails_enabled:
        for bench in sorted({b for b, _ in chosen}):
            mine = [(b, s) for b, s in chosen if b == bench]
            mine.sort(key=lambda key: (scores[key][3] not in SENSITIVE, key[1]))
            with_thumbs.update(mine[:max(0, max_thumbnail_samples)])
            if len(mine) > max_thumbnail_samples:
                notes.append(f"{bench}: frame thumbnails for {max_thumbnail_samples} of the {len(mine)} browsed "
                             "samples (Temporally Sensitive first; --max-thumbnail-samples); the others list "
                             "frame indices and timestamps")
    rows = []
    missing_annotations: dict[str, int] = {}
    for bench, sid in chosen:
        f, li, fc, c = scores[(bench, sid)]
        preds = grouped.get((bench, sid), [])
        sample = samples.get(bench, {}).get(sid)
        frames = frame_sets(preds, fss_mode, filters)
        video_note = None
        if sample is None:
            if bench in samples:
                missing_annotations[bench] = missing_annotations.get(bench, 0) + 1
        elif (bench, sid) in with_thumbs and frames:
            video_note = _attach_thumbnails(frames, sample, roots.get(bench), thumb_width, thumb_quality)
        rows.append({
            "benchmark": bench,
            "sample_id": sid,
            "category": str(c),
            "fss_category": str(fc),
            "fss": _num(f),
            "lis": _num(li),
            "question": None if sample is None else sample.question,
            "options": [] if sample is None else list(sample.options),
            "answer": None if sample is None else sample.answer,
            "video": None if sample is None else sample.video,
            "segment": None if sample is None or (sample.start is None and sample.end is None)
            else [sample.start, sample.end],
            "cells": answer_cells(preds, max_response_chars),
            "frames": frames,
            "video_note": video_note,
        })
    for bench, n in sorted(missing_annotations.items()):
        notes.append(f"{bench}: {n} browsed sample(s) are not in the annotations given (no question shown)")
    no_annotations = sorted({b for b, _ in chosen} - set(samples))
    if no_annotations:
        notes.append(f"no annotations given for {', '.join(no_annotations)}: questions and options not shown "
                     "(pass --annotations NAME=PATH)")
    unknown = sorted(set(samples) - {str(b) for b in diagnosis.benchmark})
    if unknown:
        notes.append(f"annotations given for {', '.join(unknown)}, which the predictions do not hold")
    shown: dict[str, int] = {}
    for b, _ in chosen:
        shown[b] = shown.get(b, 0) + 1
    totals: dict[str, int] = {}
    for b in diagnosis.benchmark:
        totals[str(b)] = totals.get(str(b), 0) + 1
    return BrowserData(rows, notes, max_samples, seed, shown, totals)


__all__ = ["BrowserData", "answer_cells", "build_browser", "frame_sets", "select_samples", "thumbnails"]
