"""The frame-level retrieval baseline of ExtremeWhenBench as pure, vectorised functions.

Input: score tracks, one row per query, one column per frame decoded at ``fps`` (the paper:
CLIP ViT-L/14-336 at 1 fps, frames scored by the cosine similarity of the frame and query
embeddings). A 2-D array ``(queries, frames)``; shorter tracks are NaN-padded at the end (NaN = no
frame). Frame ``i`` has timestamp ``t0 + i / fps`` and stands for ``[t, t + 1/fps)``; a track's
duration is ``t0 + n_frames / fps`` unless ``durations`` are given.

The paper gives "1 fps, peak β = 0.7, clip [4, 60]" and, for the hybrid, "top-K ± 1 min, NMS
60 s". The choices it leaves open, made here (each a parameter; in full, with the reasons, in
``docs/design/grounding.md``):

* **The score** (:data:`SCORES`, the run's ``score`` parameter; these functions take whichever
  track they are given): ``cosine``, the raw cosine the paper's CLIP baseline scores frames by
  (the default), or ``sigmoid``, TempCore's Eq. 1 ``sigmoid(cos)``. The rule "score >= β·peak" is
  not invariant under the sigmoid: ``sigmoid(cos)`` lies in [0.269, 0.731], so ``0.7 * peak`` is
  below almost every frame's score and the window grows to the whole track (then is clipped to
  ``max_len``); on the cosine it keeps the frames within 30 % of the peak's similarity.
* **Smoothing**: a centred moving average over ``smooth_frames`` frames (default 5; 1 disables
  it) of the frames that exist; peaks and windows are taken on the smoothed track.
* **Peak**: the frame of the highest smoothed score (the first on ties).
* **Window**: the maximal run of consecutive frames around the peak whose smoothed score is
  >= ``beta * peak`` (β = 0.7; ``floor="zero"``, the paper's rule, the default) or
  >= ``m + beta * (peak - m)``, ``m`` the query's smallest smoothed score (``floor="min"``);
  it covers ``[t_first, t_last + 1/fps]``. A cosine can be negative: a track whose peak is <= 0
  (no frame resembles the query) gives, under ``floor="zero"``, the peak frame alone (then the
  length clip), since ``beta * peak >= peak`` there.
* **Clip the length to [min_len, max_len]** (4, 60 s), then shift it (never shorten it) to lie
  inside ``[t0, duration]``; a video shorter than ``min_len`` gives ``[t0, duration]``.
* **Top-K candidates** (:func:`candidate_windows`): greedy non-maximum suppression on the smoothed
  track (``nms_s`` = 60 s); each candidate is ``[t_peak - pad_s, t_peak + pad_s]`` (± 60 s)
  clipped to the video. Fewer than K candidates (short video) leaves NaN slots.
* **Candidate recall@K** (:func:`candidate_recall`): a query is covered when one of its GT windows
  is covered by one of the first K candidates, counted both ways: *contained* and *overlap* (an
  intersection of positive length). Queries without a GT window are excluded.
* **Retrieve-then-ground helpers**: :func:`merge_windows` (the union of a query's candidates),
  :func:`to_absolute` (times on the concatenated union back to video time) and :func:`to_shown`
  (video time onto the concatenated union).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tempcore.diagnostics.grounding import GroundingError


def _tracks(scores: Any) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 1:
        s = s[None, :]
    if s.ndim != 2:
        raise GroundingError(f"score tracks must be (queries, frames), not shape {s.shape}")
    if np.any(np.isinf(s)):
        raise GroundingError("retrieval scores must be finite (NaN marks a missing frame)")
    return s


def smooth(scores: Any, smooth_frames: int = 5) -> np.ndarray:
    """Centred moving average over ``smooth_frames`` frames, ignoring missing (NaN) frames;
    NaN frames stay NaN."""
    s = np.asarray(scores, dtype=np.float64)
    one = s.ndim == 1
    s = s[None, :] if one else s
    if smooth_frames < 1 or smooth_frames % 2 == 0:
        raise GroundingError(f"smooth_frames must be a positive odd number, not {smooth_frames}")
    if smooth_frames == 1:
        return s[0].copy() if one else s.copy()
    h = smooth_frames // 2
    valid = ~np.isnan(s)
    vals = np.where(valid, s, 0.0)
    pad = ((0, 0), (h + 1, h))
    cs = np.cumsum(np.pad(vals, pad), axis=1)
    cn = np.cumsum(np.pad(valid.astype(np.float64), pad), axis=1)
    w = smooth_frames
    total = cs[:, w:] - cs[:, :-w]
    count = cn[:, w:] - cn[:, :-w]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(valid, np.round(total / count, 12), np.nan)
    return out[0] if one else out


def _durations(s: np.ndarray, fps: float, t0: float, durations: Any | None) -> np.ndarray:
    n_valid = np.where(np.isnan(s).all(axis=1), 0, s.shape[1] - np.argmax(~np.isnan(s[:, ::-1]), axis=1))
    if durations is None:
        return t0 + n_valid / fps
    d = np.broadcast_to(np.asarray(durations, dtype=np.float64), (s.shape[0],)).copy()
    return d


def retrieval_windows(
    scores: Any,
    *,
    fps: float = 1.0,
    t0: float = 0.0,
    beta: float = 0.7,
    smooth_frames: int = 5,
    min_len: float = 4.0,
    max_len: float = 60.0,
    durations: Any | None = None,
    floor: str = "zero",
) -> dict[str, np.ndarray]:
    """One predicted window per query: ``{"start", "end", "peak_time", "peak_score"}`` arrays
    (NaN for a query without frames). See the module doc for every rule."""
    if not 0 < beta <= 1:
        raise GroundingError(f"beta must lie in (0, 1], not {beta}")
    if floor not in FLOORS:
        raise GroundingError(f"floor must be one of {', '.join(FLOORS)}, not {floor!r}")
    if not 0 <= min_len <= max_len:
        raise GroundingError(f"need 0 <= min_len <= max_len, not [{min_len}, {max_len}]")
    s = _tracks(scores)
    dur = _durations(s, fps, t0, durations)
    parts = [
        _windows(s[i : i + _CHUNK], fps, t0, beta, smooth_frames, min_len, max_len, dur[i : i + _CHUNK], floor)
        for i in range(0, s.shape[0], _CHUNK)
    ]
    return {k: np.concatenate([p[k] for p in parts]) if parts else np.zeros(0) for k in _KEYS}


_CHUNK = 512  # queries per block: bounds the temporaries to a few (512, frames) arrays
_KEYS = ("start", "end", "peak_time", "peak_score")
FLOORS = ("zero", "min")


def _windows(
    s: np.ndarray, fps: float, t0: float, beta: float, smooth_frames: int, min_len: float, max_len: float,
    dur: np.ndarray, floor: str = "zero",
) -> dict[str, np.ndarray]:
    q, n = s.shape
    sm = smooth(s, smooth_frames)
    filled = np.where(np.isnan(sm), -np.inf, sm)
    peak = np.argmax(filled, axis=1)
    rows = np.arange(q)
    peak_score = filled[rows, peak]
    empty = ~np.isfinite(peak_score)
    if floor == "min":
        base = np.where(empty, 0.0, np.min(np.where(np.isnan(sm), np.inf, sm), axis=1))
        with np.errstate(invalid="ignore"):
            keep = filled >= (base + beta * (peak_score - base))[:, None]
    else:
        keep = filled >= (beta * peak_score)[:, None]
    idx = np.arange(n)[None, :]
    below = ~keep
    left_break = np.where(below & (idx < peak[:, None]), idx, -1).max(axis=1)
    right_break = np.where(below & (idx > peak[:, None]), idx, n).min(axis=1)
    first, last = left_break + 1, right_break - 1
    step = 1.0 / fps
    g_start, g_end = t0 + first * step, t0 + (last + 1) * step
    start, end = g_start.copy(), g_end.copy()
    length = end - start
    short = length < min_len
    c = (start + end) / 2
    start[short], end[short] = c[short] - min_len / 2, c[short] + min_len / 2
    long_ = length > max_len
    pc = t0 + (peak + 0.5) * step
    ls = np.clip(pc - max_len / 2, g_start, g_end - max_len)
    start[long_], end[long_] = ls[long_], ls[long_] + max_len
    shift = np.where(start < t0, t0 - start, 0.0)
    start, end = start + shift, end + shift
    shift = np.where(end > dur, end - dur, 0.0)
    start, end = np.maximum(start - shift, t0), end - shift
    out = {"start": start, "end": end, "peak_time": t0 + peak * step, "peak_score": peak_score}
    for v in out.values():
        v[empty] = np.nan
    return out


def candidate_windows(
    scores: Any,
    *,
    k: int = 3,
    fps: float = 1.0,
    t0: float = 0.0,
    nms_s: float = 60.0,
    pad_s: float = 60.0,
    smooth_frames: int = 5,
    durations: Any | None = None,
) -> dict[str, np.ndarray]:
    """Top-``k`` candidate windows per query after NMS: ``{"start", "end", "peak_time",
    "peak_score"}``, each ``(queries, k)`` in rank order (NaN where fewer than k remain)."""
    if k < 1:
        raise GroundingError(f"k must be >= 1, not {k}")
    s = _tracks(scores)
    dur = _durations(s, fps, t0, durations)
    parts = [
        _candidates(s[i : i + _CHUNK], k, fps, t0, nms_s, pad_s, smooth_frames, dur[i : i + _CHUNK])
        for i in range(0, s.shape[0], _CHUNK)
    ]
    return {key: np.concatenate([p[key] for p in parts]) if parts else np.zeros((0, k)) for key in _KEYS}


def _candidates(
    s: np.ndarray, k: int, fps: float, t0: float, nms_s: float, pad_s: float, smooth_frames: int, dur: np.ndarray,
) -> dict[str, np.ndarray]:
    q, n = s.shape
    sm = np.where(np.isnan(s), -np.inf, smooth(s, smooth_frames))
    sm = np.where(np.isnan(sm), -np.inf, sm)
    step = 1.0 / fps
    radius = nms_s * fps  # in frames: suppress |i - p| < radius
    idx = np.arange(n)[None, :]
    rows = np.arange(q)
    peaks = np.full((q, k), -1, dtype=np.int64)
    values = np.full((q, k), np.nan)
    for j in range(k):
        p = np.argmax(sm, axis=1)
        v = sm[rows, p]
        ok = np.isfinite(v)
        peaks[ok, j] = p[ok]
        values[ok, j] = v[ok]
        sm = np.where(np.abs(idx - p[:, None]) < radius, -np.inf, sm)
    dur = dur[:, None]
    t = np.where(peaks >= 0, t0 + peaks * step, np.nan)
    start = np.maximum(t - pad_s, t0)
    end = np.minimum(t + pad_s, dur)
    return {"start": start, "end": end, "peak_time": t, "peak_score": values}


def candidate_recall(
    cand_start: Any,
    cand_end: Any,
    gt_start: Any,
    gt_end: Any,
    gt_item: Any | None = None,
    ks: Sequence[int] | None = None,
) -> dict[str, dict[str, float]]:
    """``{"contained": {"1": x, ..., "K": x}, "overlap": {...}, "n": queries}``: the share of
    queries whose GT is covered by one of the first k candidates (module doc)."""
    cs, ce = np.atleast_2d(np.asarray(cand_start, float)), np.atleast_2d(np.asarray(cand_end, float))
    q, kmax = cs.shape
    gs, ge = np.asarray(gt_start, float), np.asarray(gt_end, float)
    gi = np.arange(q) if gt_item is None else np.asarray(gt_item, dtype=np.int64)
    if gi.shape != gs.shape or gs.shape != ge.shape:
        raise GroundingError("gt_start, gt_end and gt_item must have the same length")
    if gi.size and (gi.min() < 0 or gi.max() >= q):
        raise GroundingError("gt_item holds a query index outside the candidate rows")
    with np.errstate(invalid="ignore"):
        contained = (cs[gi] <= gs[:, None]) & (ge[:, None] <= ce[gi])
        overlap = (np.minimum(ce[gi], ge[:, None]) - np.maximum(cs[gi], gs[:, None])) > 0
    has_gt = np.bincount(gi, minlength=q) > 0
    out: dict[str, Any] = {"n": int(has_gt.sum())}
    ks = list(range(1, kmax + 1)) if ks is None else list(ks)
    for name, hit in (("contained", contained), ("overlap", overlap)):
        first = np.where(hit.any(axis=1), np.argmax(hit, axis=1), kmax)  # rank of the first covering candidate
        best = np.full(q, kmax)
        np.minimum.at(best, gi, first)
        b = best[has_gt]
        out[name] = {str(kk): (float((b < kk).mean()) if b.size else float("nan")) for kk in ks}
    return out


def merge_windows(starts: Any, ends: Any) -> list[tuple[float, float]]:
    """The union of one query's candidate windows as sorted, disjoint ``(start, end)`` spans
    (windows that touch or overlap merge; NaN slots are ignored): what retrieve-then-ground shows
    the VLM."""
    s, e = np.asarray(starts, float).ravel(), np.asarray(ends, float).ravel()
    keep = ~(np.isnan(s) | np.isnan(e))
    order = np.argsort(s[keep], kind="stable")
    out: list[tuple[float, float]] = []
    for a, b in zip(s[keep][order], e[keep][order]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], float(b)))
        else:
            out.append((float(a), float(b)))
    return out


def _span_arrays(spans: Sequence[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    if not spans:
        raise GroundingError("no spans to map times into")
    a = np.asarray([sp[0] for sp in spans], float)
    lengths = np.asarray([sp[1] - sp[0] for sp in spans], float)
    if np.any(~np.isfinite(a)) or np.any(~(lengths >= 0)) or np.any(a[1:] < (a + lengths)[:-1]):
        raise GroundingError(f"spans must be finite, sorted and disjoint (start <= end): {list(spans)}")
    return a, np.concatenate(([0.0], np.cumsum(lengths)))


def to_absolute(t: Any, spans: Sequence[tuple[float, float]], *, junction: str = "later") -> np.ndarray:
    """Times on the concatenation of ``spans`` (0 = the first span's start) mapped back to
    absolute video time. A time exactly at a junction maps to the start of the later span
    (``junction="later"``, for a start time) or to the end of the earlier one (``"earlier"``, for
    an end time, so an interval ending at a junction does not reach into the next span); times
    past the total length stay in the last span's end (clipped); negative times clip to 0."""
    if junction not in ("later", "earlier"):
        raise GroundingError(f"junction must be 'later' or 'earlier', not {junction!r}")
    a, cum = _span_arrays(spans)
    x = np.clip(np.asarray(t, float), 0.0, cum[-1])
    pos = np.searchsorted(cum, x, side="right") if junction == "later" else np.searchsorted(cum, x, side="left")
    k = np.clip(pos - 1, 0, len(spans) - 1)
    out: np.ndarray = a[k] + (x - cum[k])
    return out


def to_shown(t: Any, spans: Sequence[tuple[float, float]]) -> np.ndarray:
    """Absolute video times mapped onto the concatenation of ``spans`` (the inverse of
    :func:`to_absolute` inside the spans): a time in span ``k`` becomes ``cum_k + (t - start_k)``;
    a time in a gap between spans maps to the junction, before the first span to 0, after the
    last to the total length."""
    a, cum = _span_arrays(spans)
    ends = a + np.diff(cum)
    x = np.asarray(t, float)
    k = np.clip(np.searchsorted(a, x, side="right") - 1, 0, len(spans) - 1)
    out: np.ndarray = cum[k] + np.clip(x - a[k], 0.0, ends[k] - a[k])
    return out


def score_track(timestamps: Any, scores: Any, what: str) -> tuple[np.ndarray, np.ndarray]:
    """One frame-score track as float arrays sorted by time (stable), checked: one score per frame,
    at least one frame (else a :class:`GroundingError` naming ``what``)."""
    t = np.asarray(timestamps, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    if t.shape != s.shape or t.ndim != 1 or t.shape[0] == 0:
        raise GroundingError(f"{what}: need one score per frame, got {s.shape} scores for {t.shape} frames")
    order = np.argsort(t, kind="stable")
    return t[order], s[order]


def _fps_of(t: np.ndarray) -> float:
    if t.shape[0] < 2:
        return 1.0
    step = float(np.median(np.diff(t)))
    return 1.0 / step if step > 0 else 1.0


# The retrieval baseline's names in the run store (the condition's strategy, the model and answer
# method of its predictions, the answer method of a retrieve-then-ground condition's candidates).
RETRIEVAL_STRATEGY = "retrieval"
RETRIEVAL_MODEL = "retrieval"
"""The model name of the baseline's predictions (it answers grounding samples without a model)."""
RETRIEVAL_METHOD = "retrieval"
"""``answer_method`` of the baseline's predictions."""
CANDIDATES_METHOD = "candidates"
"""``answer_method`` of the retrieval stage's stored candidates (a ``retrieve_ground`` condition)."""
SCORES = ("cosine", "sigmoid")
"""The frame scores the baseline can run on: ``cosine`` (the raw cosine, the paper's CLIP score) or
``sigmoid`` (TempCore's Eq. 1 ``sigmoid(cos)``)."""
DEFAULTS: dict[str, Any] = {"beta": 0.7, "smooth_frames": 5, "min_len": 4.0, "max_len": 60.0, "floor": "zero",
                            "score": "cosine"}
"""The baseline's parameters and their defaults (:data:`tempcore.selection.retrieval.PARAMS`): the
window parameters of :func:`track_window` and ``score``, which of a frame's scores the caller gives
it (:data:`SCORES`)."""
TEXT_PARAMS = ("floor", "score")
"""The parameters that are names, not numbers."""


def track_window(
    timestamps: Any,
    scores: Any,
    *,
    fps: float | None = None,
    beta: float = DEFAULTS["beta"],
    smooth_frames: int = int(DEFAULTS["smooth_frames"]),
    min_len: float = DEFAULTS["min_len"],
    max_len: float = DEFAULTS["max_len"],
    floor: str = DEFAULTS["floor"],
) -> tuple[float, float]:
    """The baseline's window ``(start, end)`` seconds on one score track (frames in time order).

    ``fps`` defaults to the track's median frame rate."""
    t, s = score_track(timestamps, scores, "retrieval")
    rate = _fps_of(t) if fps is None else float(fps)
    w = retrieval_windows(s, fps=rate, t0=float(t[0]), beta=beta, smooth_frames=int(smooth_frames),
                          min_len=min_len, max_len=max_len, durations=float(t[-1]) + 1.0 / rate, floor=floor)
    return float(w["start"][0]), float(w["end"][0])


__all__ = [
    "CANDIDATES_METHOD",
    "DEFAULTS",
    "RETRIEVAL_METHOD",
    "RETRIEVAL_MODEL",
    "RETRIEVAL_STRATEGY",
    "SCORES",
    "TEXT_PARAMS",
    "candidate_recall",
    "candidate_windows",
    "merge_windows",
    "retrieval_windows",
    "score_track",
    "smooth",
    "to_absolute",
    "to_shown",
    "track_window",
]
