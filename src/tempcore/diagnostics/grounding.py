"""Temporal-grounding metrics: numbers in, numbers out (no I/O, vectorised over items).

Vocabulary. An *item* is one (sample, model, condition) prediction. Intervals are ``(start,
end)`` seconds. Several ground-truth (GT) windows per item are given *flat*: arrays ``gt_start``,
``gt_end`` and ``gt_item`` (the item each window belongs to, ``0 <= gt_item < n_items``; any
order). Ranked predicted windows (moment-retrieval outputs) are given the same way:
``pred_start``, ``pred_end``, ``pred_score``, ``pred_item``, listed in the submission's order.

Definitions (each stated in full, with the choices made where the papers leave one open, in the
docstring of the function that implements it; each choice a parameter where users may want the other):

* **IoU** of two intervals with the hull as union (ExtremeWhenBench; QVHighlights): :func:`iou`.
* **Several GT windows**: an item's IoU is its best over its windows (QVHighlights' R1 rule):
  :func:`best_iou`.
* **mIoU**, **R@τ** and **parse_fail** over items: :func:`grounding_summary`.
* **Ranked windows**: QVHighlights' R1@τ, mAP and length bins to the letter:
  :func:`moment_retrieval`.
* **Search vs localize** failures: :func:`search_localize`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tempcore.errors import TempcoreError

THRESHOLDS = (0.3, 0.5, 0.7)
MAP_THRESHOLDS = tuple(float(f"{t:.2f}") for t in np.linspace(0.5, 0.95, 10))
R1_THRESHOLDS = (0.5, 0.7)
LENGTH_BINS = {"short": (0.0, 10.0), "middle": (10.0, 30.0), "long": (30.0, float("inf"))}
REVERSED = ("invalid", "swap")


class GroundingError(TempcoreError):
    """Arguments a grounding metric cannot use (mismatched lengths, an item index out of range)."""


def _f(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _check_reversed(reversed: str) -> None:
    if reversed not in REVERSED:
        raise GroundingError(f"reversed must be one of {REVERSED}, not {reversed!r}")


def valid_spans(start: Any, end: Any, *, reversed: str = "invalid") -> tuple[np.ndarray, np.ndarray]:
    """Spans with every invalid one (a NaN or infinite bound; start > end unless
    ``reversed="swap"``, which swaps it) turned into ``(NaN, NaN)``."""
    _check_reversed(reversed)
    s, e = _f(start), _f(end)
    if reversed == "swap":
        s, e = np.minimum(s, e), np.maximum(s, e)
    with np.errstate(invalid="ignore"):
        bad = ~(np.isfinite(s) & np.isfinite(e) & (s <= e))
    if np.any(bad):
        s, e = np.where(bad, np.nan, s), np.where(bad, np.nan, e)
    return s, e


def iou_of_valid(ps: np.ndarray, pe: np.ndarray, gs: np.ndarray, ge: np.ndarray) -> np.ndarray:
    """IoU (broadcasting) of spans already passed through :func:`valid_spans` (NaN spans give 0).

    A positive intersection implies a positive hull, so the division is guarded by the
    intersection alone; NaN compares False."""
    with np.errstate(invalid="ignore"):
        inter = np.minimum(pe, ge)
        inter -= np.maximum(ps, gs)
        hull = np.maximum(pe, ge)
        hull -= np.minimum(ps, gs)
        out = np.zeros(inter.shape, dtype=np.float64)
        np.divide(inter, hull, out=out, where=inter > 0)
    return out


def iou(
    pred_start: Any, pred_end: Any, gt_start: Any, gt_end: Any, *, reversed: str = "invalid"
) -> np.ndarray:
    """Element-wise (broadcasting) IoU of intervals ``[pred_start, pred_end]`` and ``[gt_start, gt_end]``.

    IoU = intersection / hull, hull = ``max(ends) - min(starts)`` (ExtremeWhenBench; QVHighlights'
    paired IoU). For two intervals the hull equals the union whenever they intersect and the
    intersection is 0 otherwise, so this is also the plain union IoU (QVHighlights' cross IoU).
    Defined everywhere, never a division error: a bound that is NaN or infinite (a parse failure)
    gives 0; a *reversed* span (start > end) gives 0 (``reversed="invalid"``, default: it is not an
    interval) or is swapped first (``reversed="swap"``); a zero hull (two identical zero-length
    spans) gives 0, as QVHighlights' ``np.divide(..., where=union != 0)`` does. A zero-length span
    inside the other has intersection 0, hence IoU 0.
    """
    ps, pe = valid_spans(pred_start, pred_end, reversed=reversed)
    gs, ge = valid_spans(gt_start, gt_end, reversed=reversed)
    return iou_of_valid(ps, pe, gs, ge)


def _items(gt_item: Any, n_items: int, n: int, what: str = "gt_item") -> np.ndarray:
    idx = np.asarray(gt_item, dtype=np.int64)
    if idx.shape != (n,):
        raise GroundingError(f"{what} must have one entry per window ({n}), not shape {idx.shape}")
    if n and (idx.min() < 0 or idx.max() >= n_items):
        raise GroundingError(f"{what} holds an item index outside 0..{n_items - 1}")
    return idx


def best_iou(
    pred_start: Any,
    pred_end: Any,
    gt_start: Any,
    gt_end: Any,
    gt_item: Any | None = None,
    *,
    reversed: str = "invalid",
) -> tuple[np.ndarray, np.ndarray]:
    """Per item: the best IoU over its GT windows and the flat index of that window.

    ``pred_start`` / ``pred_end`` have one entry per item (NaN = parse failure). Without
    ``gt_item`` the GT arrays are one window per item. An item's IoU (:func:`iou`) is its best over
    its GT windows (the best-matching window, QVHighlights' R1 rule). Returns ``(iou, window)``:
    ``iou`` NaN and ``window`` -1 for an item without a GT window (not scorable: the summaries
    exclude it, counted as ``n_no_gt``); ties go to the first window in flat order (listed order).
    """
    ps, pe = _f(pred_start), _f(pred_end)
    n = ps.shape[0]
    gs, ge = _f(gt_start), _f(gt_end)
    if gt_item is None:
        if gs.shape != (n,) or ge.shape != (n,):
            raise GroundingError("without gt_item, give one GT window per item")
        return iou(ps, pe, gs, ge, reversed=reversed), np.arange(n)
    idx = _items(gt_item, n, gs.shape[0])
    vals = iou(ps[idx], pe[idx], gs, ge, reversed=reversed)
    best = _reduce(np.maximum, vals, idx, n, -np.inf)
    # the first window (flat order) reaching the item's best
    pos = np.where(vals == best[idx], np.arange(idx.size), idx.size)
    window = _reduce(np.minimum, pos, idx, n, idx.size)
    window[window == idx.size] = -1
    best[window < 0] = np.nan
    return best, window


def _reduce(ufunc: np.ufunc, values: np.ndarray, idx: np.ndarray, n: int, fill: float) -> np.ndarray:
    """``ufunc`` over the values of each item (``fill`` for an item without values): ``reduceat``
    when ``idx`` is sorted (the common, fast case), ``ufunc.at`` otherwise."""
    out = np.full(n, fill, dtype=np.result_type(values, type(fill)))
    if idx.size == 0:
        return out
    if np.all(idx[1:] >= idx[:-1]):
        starts = np.flatnonzero(np.concatenate(([True], idx[1:] != idx[:-1])))
        out[idx[starts]] = ufunc.reduceat(values, starts)
    else:
        ufunc.at(out, idx, values)
    return out


def recall_at(ious: Any, thresholds: Sequence[float] = THRESHOLDS, *, strict: bool = False) -> dict[str, float]:
    """``{"0.3": share of items with IoU >= 0.3, ...}`` (``strict``: IoU > τ); NaN items excluded."""
    v = _f(ious)
    v = v[~np.isnan(v)]
    out = {}
    for t in thresholds:
        hit = v > t if strict else v >= t
        out[_key(t)] = float(hit.mean()) if v.size else float("nan")
    return out


def _key(t: float) -> str:
    return f"{float(t):g}"


def grounding_summary(
    ious: Any,
    parse_fail: Any | None = None,
    thresholds: Sequence[float] = THRESHOLDS,
    *,
    strict: bool = False,
) -> dict[str, Any]:
    """``{"n", "miou", "recall": {...}, "parse_fail", "n_no_gt"}`` over items.

    ``ious`` are per-item IoUs with the best GT window (NaN: no GT window, excluded, counted in
    ``n_no_gt``); a parse failure must already be IoU 0 (``parse_fail`` marks them, for the rate;
    default: none). **mIoU** = mean IoU over all scorable items, parse failures counting 0.
    **R@τ** = share of items with IoU >= τ (ExtremeWhenBench, Charades-STA, QVHighlights);
    ``strict=True`` uses IoU > τ (Ego4D-NLQ). **parse_fail** = share of items whose prediction is
    missing.
    """
    v = _f(ious)
    scorable = ~np.isnan(v)
    pf = np.zeros(v.shape, bool) if parse_fail is None else np.asarray(parse_fail, bool)
    if pf.shape != v.shape:
        raise GroundingError("parse_fail must have one entry per item")
    if np.any(v[scorable & pf] != 0):
        raise GroundingError("a parse failure must have IoU 0")
    n = int(scorable.sum())
    return {
        "n": n,
        "miou": float(v[scorable].mean()) if n else float("nan"),
        "recall": recall_at(v, thresholds, strict=strict),
        "parse_fail": float(pf[scorable].mean()) if n else float("nan"),
        "n_no_gt": int((~scorable).sum()),
    }


def group_summaries(
    group: Any,
    ious: Any,
    parse_fail: Any,
    n_groups: int,
    thresholds: Sequence[float] = THRESHOLDS,
    *,
    strict: bool = False,
) -> dict[str, np.ndarray]:
    """:func:`grounding_summary` for many groups at once (``group``: an int code per item).

    Returns arrays of length ``n_groups``: ``n``, ``miou``, ``parse_fail``, ``n_no_gt`` and
    ``recall@<τ>`` for every τ (NaN where a group has no scorable item)."""
    g = np.asarray(group, dtype=np.int64)
    v = _f(ious)
    pf = np.asarray(parse_fail, dtype=bool)
    ok = ~np.isnan(v)
    n_no_gt = np.bincount(g[~ok], minlength=n_groups)
    if not ok.all():
        g, v, pf = g[ok], v[ok], pf[ok]
    n = np.bincount(g, minlength=n_groups).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {
            "n": n.astype(np.int64),
            "miou": np.bincount(g, weights=v, minlength=n_groups) / n,
            "parse_fail": np.bincount(g, weights=pf, minlength=n_groups) / n,
            "n_no_gt": n_no_gt,
        }
        for t in thresholds:
            hit = (v > t) if strict else (v >= t)
            out[f"recall@{_key(t)}"] = np.bincount(g, weights=hit, minlength=n_groups) / n
    return out


# --- ranked windows (QVHighlights moment retrieval) -----------------------------------------


def _pad(
    item: np.ndarray, n_items: int, *columns: np.ndarray, width: int | None = None, fill: float = np.nan
) -> tuple[list[np.ndarray], np.ndarray]:
    """Flat rows grouped by item -> (n_items, width) arrays, rows kept in their flat order per item."""
    order = np.argsort(item, kind="stable")
    it = item[order]
    counts = np.bincount(it, minlength=n_items)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.arange(it.size) - starts[it]
    w = int(counts.max()) if counts.size and counts.max() > 0 else 1
    w = min(w, width) if width is not None else w
    keep = rank < w
    out = []
    for col in columns:
        arr = np.full((n_items, w), fill, dtype=np.float64)
        arr[it[keep], rank[keep]] = col[order][keep]
        out.append(arr)
    return out, np.minimum(counts, w)


def _cross_iou(ps: np.ndarray, pe: np.ndarray, gs: np.ndarray, ge: np.ndarray, reversed: str) -> np.ndarray:
    """(Q, P) predictions x (Q, G) GT windows -> (Q, P, G) IoU; NaN-padded slots give 0."""
    return iou(ps[:, :, None], pe[:, :, None], gs[:, None, :], ge[:, None, :], reversed=reversed)


def average_precision(
    ious: np.ndarray, n_gt: np.ndarray, thresholds: Sequence[float] = MAP_THRESHOLDS
) -> np.ndarray:
    """Per-query AP at each threshold: ``ious`` (Q, P, G) with predictions already in ranked
    order (padded predictions / GT slots hold IoU 0 and GT slots beyond ``n_gt`` are ignored).
    Returns (Q, T). A query with ``n_gt == 0`` gets NaN."""
    q, p, g = ious.shape
    thr = np.asarray(thresholds, dtype=np.float64)
    gt_valid = np.arange(g)[None, :] < n_gt[:, None]  # (Q, G)
    locked = np.zeros((q, thr.size, g), dtype=bool)
    tp = np.zeros((q, thr.size, p), dtype=np.float64)
    rev = np.arange(g)[::-1]
    for j in range(p):
        cur = ious[:, j, :]  # (Q, G)
        cand = (cur[:, None, :] >= thr[None, :, None]) & gt_valid[:, None, :] & ~locked  # (Q, T, G)
        masked = np.where(cand, cur[:, None, :], -1.0)
        # highest IoU; equal IoUs -> the later window (QVHighlights' argsort()[::-1])
        pick = rev[np.argmax(masked[:, :, ::-1], axis=2)]
        hit = cand.any(axis=2)
        tp[:, :, j] = hit
        qi, ti = np.nonzero(hit)
        locked[qi, ti, pick[qi, ti]] = True
    tp_c = np.cumsum(tp, axis=2)
    ranks = np.arange(1, p + 1, dtype=np.float64)
    precision = tp_c / ranks
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = tp_c / n_gt[:, None, None]
    envelope = np.maximum.accumulate(precision[:, :, ::-1], axis=2)[:, :, ::-1]
    prev = np.concatenate([np.zeros((q, thr.size, 1)), recall[:, :, :-1]], axis=2)
    ap: np.ndarray = np.sum(np.where(recall != prev, (recall - prev) * envelope, 0.0), axis=2)
    ap[n_gt == 0] = np.nan
    return ap


def moment_retrieval(
    pred_start: Any,
    pred_end: Any,
    pred_score: Any,
    pred_item: Any,
    gt_start: Any,
    gt_end: Any,
    gt_item: Any,
    n_items: int,
    *,
    r1_thresholds: Sequence[float] = R1_THRESHOLDS,
    map_thresholds: Sequence[float] = MAP_THRESHOLDS,
    max_pred_windows: int | None = 10,
    bins: dict[str, tuple[float, float]] | None = LENGTH_BINS,
    reversed: str = "invalid",
) -> dict[str, Any]:
    """QVHighlights moment-retrieval metrics over queries ``0..n_items-1``.

    QVHighlights' ``standalone_eval/eval.py`` to the letter: R1@τ scores the *first listed* window
    of a query (not the highest-scored) against its best-IoU GT window; mAP uses the first
    ``max_pred_windows=10`` listed windows sorted by descending score (stable: equal scores keep the
    listed order), greedily matched to unlocked GT windows at each τ (a prediction takes the
    unlocked GT window of highest IoU >= τ; equal IoUs go to the *later* GT window, as
    ``argsort()[::-1]`` does there); AP is the interpolated area under the precision envelope
    (ActivityNet style); per-query APs are averaged over queries, then over τ in 0.5:0.05:0.95
    (thresholds rounded to 2 decimals as there). A query with no predicted window has AP 0 and R1 0
    (the original requires a window for every query). Length bins (QVHighlights): short (0, 10],
    middle (10, 30], long (30, inf) seconds (QVHighlights caps long at 150 s, its clip length; here
    no cap); a query enters a bin with its GT windows of that length only, and only if it has one.

    Returns ``{"n", "r1": {"0.5": x, ...}, "map": mean over τ, "map_at": {"0.5": x, ...,
    "0.95": x}, "bins": {"short": {...same keys...}, ...}}`` (fractions; ``bins`` only when
    given). Queries without a GT window are excluded (``n`` counts the others).
    """
    ps, pe, sc = _f(pred_start), _f(pred_end), _f(pred_score)
    gs, ge = _f(gt_start), _f(gt_end)
    pi = _items(pred_item, n_items, ps.shape[0], "pred_item")
    gi = _items(gt_item, n_items, gs.shape[0])
    if not (ps.shape == pe.shape == sc.shape) or gs.shape != ge.shape:
        raise GroundingError("prediction (start, end, score) and GT (start, end) arrays must match in length")
    out = _mr(ps, pe, sc, pi, gs, ge, gi, n_items, r1_thresholds, map_thresholds, max_pred_windows, reversed)
    if bins:
        length = ge - gs
        out["bins"] = {}
        for name, (lo, hi) in bins.items():
            keep = (length > lo) & (length <= hi)
            out["bins"][name] = _mr(ps, pe, sc, pi, gs[keep], ge[keep], gi[keep], n_items, r1_thresholds,
                                    map_thresholds, max_pred_windows, reversed)
    return out


def _mr(
    ps: np.ndarray, pe: np.ndarray, sc: np.ndarray, pi: np.ndarray,
    gs: np.ndarray, ge: np.ndarray, gi: np.ndarray, n_items: int,
    r1_thresholds: Sequence[float], map_thresholds: Sequence[float], max_pred: int | None, reversed: str,
) -> dict[str, Any]:
    has_gt = np.bincount(gi, minlength=n_items) > 0
    (gS, gE), n_gt = _pad(gi, n_items, gs, ge)
    # R1: the first listed window of each query against its best GT window
    (fS, fE), n_pred_all = _pad(pi, n_items, ps, pe, width=1)
    r1_iou = np.where(n_pred_all > 0, _cross_iou(fS, fE, gS, gE, reversed)[:, 0, :].max(axis=1, initial=0.0), 0.0)
    r1_iou = r1_iou[has_gt]
    # mAP: the first max_pred listed windows, stably sorted by descending score
    (pS, pE, pSc), n_pred = _pad(pi, n_items, ps, pe, sc, width=max_pred)
    ranks = np.argsort(np.where(np.isnan(pSc), np.inf, -pSc), axis=1, kind="stable")
    pS, pE = np.take_along_axis(pS, ranks, 1), np.take_along_axis(pE, ranks, 1)
    ious = _cross_iou(pS, pE, gS, gE, reversed)
    ap = average_precision(ious[has_gt], n_gt[has_gt], map_thresholds)
    n = int(has_gt.sum())
    map_at = {f"{t:g}": (float(ap[:, k].mean()) if n else float("nan")) for k, t in enumerate(map_thresholds)}
    return {
        "n": n,
        "r1": {_key(t): (float((r1_iou >= t).mean()) if n else float("nan")) for t in r1_thresholds},
        "map": float(np.mean(list(map_at.values()))) if n else float("nan"),
        "map_at": map_at,
    }


# --- search vs localize ---------------------------------------------------------------------


def offsets(
    pred_start: Any, pred_end: Any, gt_start: Any, gt_end: Any, gt_item: Any | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Per item: (centre-to-centre, nearest-edge) distance in seconds to its nearest GT window
    under each measure (NaN for a missing prediction or an item without GT)."""
    ps, pe = _f(pred_start), _f(pred_end)
    n = ps.shape[0]
    gs, ge = _f(gt_start), _f(gt_end)
    idx = np.arange(n) if gt_item is None else _items(gt_item, n, gs.shape[0])
    lo, hi = np.minimum(ps, pe)[idx], np.maximum(ps, pe)[idx]
    centre = np.abs((lo + hi) / 2 - (gs + ge) / 2)
    edge = np.clip(np.maximum(lo, gs) - np.minimum(hi, ge), 0.0, None)
    out = []
    for d in (centre, edge):
        best = _reduce(np.minimum, np.where(np.isnan(d), np.inf, d), idx, n, np.inf)
        best[np.isinf(best)] = np.nan
        out.append(best)
    return out[0], out[1]


def search_localize(
    ious: Any,
    parse_fail: Any,
    centre_offset: Any,
    edge_offset: Any,
    *,
    fail_iou: float = 0.05,
    offset_s: float = 300.0,
) -> dict[str, Any]:
    """Split failures (IoU < ``fail_iou``) into search (offset > ``offset_s``) and localize
    failures, under both offsets; parse failures are counted apart. Items with NaN IoU (no GT)
    are excluded. Shares are of all failures (``n_failed``, parse failures included).

    A scorable item with IoU < ``fail_iou`` (0.05) is failed; a parse failure is its own class; a
    failed item with a prediction is a *search* failure when its offset to the GT is > ``offset_s``
    (300 s, ±5 min), else a *localize* failure. Offsets (:func:`offsets`), both reported:
    centre-to-centre ``|c_pred - c_gt|`` and nearest-edge (the gap between the intervals, 0 when
    they touch or overlap). With several GT windows the nearest window under each measure is used.
    """
    v = _f(ious)
    pf = np.asarray(parse_fail, bool)
    ok = ~np.isnan(v)
    failed = ok & (v < fail_iou)
    placed = failed & ~pf
    n_failed = int(failed.sum())
    out: dict[str, Any] = {
        "n": int(ok.sum()),
        "n_failed": n_failed,
        "parse_fail": int((failed & pf).sum()),
        "fail_iou": fail_iou,
        "offset_s": offset_s,
    }
    for name, off in (("centre", _f(centre_offset)), ("edge", _f(edge_offset))):
        far = placed & (off > offset_s)
        near = placed & ~(off > offset_s)
        out[name] = {
            "search": int(far.sum()),
            "localize": int(near.sum()),
            "search_share": float(far.sum() / n_failed) if n_failed else float("nan"),
            "localize_share": float(near.sum() / n_failed) if n_failed else float("nan"),
        }
    return out


__all__ = [
    "LENGTH_BINS",
    "MAP_THRESHOLDS",
    "R1_THRESHOLDS",
    "THRESHOLDS",
    "GroundingError",
    "average_precision",
    "best_iou",
    "group_summaries",
    "grounding_summary",
    "iou",
    "iou_of_valid",
    "moment_retrieval",
    "offsets",
    "recall_at",
    "search_localize",
    "valid_spans",
]
