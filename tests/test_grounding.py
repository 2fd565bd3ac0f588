"""Temporal-grounding metrics (issue 15): hand-worked IoU / recall / mAP examples (ties, several
GT windows, zero-length and reversed spans), QVHighlights' moment-retrieval evaluation against
an independent naive transcription on random predictions, and the search / localize split."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from tempcore.diagnostics import grounding as gm
from tempcore.diagnostics.grounding import GroundingError

NAN = float("nan")


# --- IoU ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pred", "gt", "expected"),
    [
        ((0, 10), (5, 15), 5 / 15),  # partial overlap: hull 15
        ((0, 10), (0, 10), 1.0),
        ((2, 4), (0, 10), 0.2),  # contained
        ((0, 5), (5, 10), 0.0),  # touching
        ((0, 2), (8, 10), 0.0),  # disjoint: hull 10, no division by the gap
        ((5, 5), (0, 10), 0.0),  # zero-length prediction inside the GT
        ((5, 5), (5, 5), 0.0),  # two identical zero-length spans: hull 0 -> 0 (QVHighlights' where=union!=0)
        ((NAN, NAN), (0, 10), 0.0),  # parse failure
        ((0, math.inf), (0, 10), 0.0),
        ((10, 0), (0, 10), 0.0),  # reversed: not an interval
        ((0, 10), (10, 0), 0.0),
    ],
)
def test_iou_hand_worked(pred, gt, expected):
    assert gm.iou(pred[0], pred[1], gt[0], gt[1]) == pytest.approx(expected)


def test_iou_reversed_swap_and_broadcast():
    assert gm.iou(10, 0, 0, 10, reversed="swap") == 1.0
    assert gm.iou(15, 5, 0, 10, reversed="swap") == pytest.approx(5 / 15)
    out = gm.iou([0, 0, 2], [10, 5, 3], 0, 10)
    np.testing.assert_allclose(out, [1.0, 0.5, 0.1])
    with pytest.raises(GroundingError, match="reversed"):
        gm.iou(0, 1, 0, 1, reversed="flip")


def test_hull_iou_equals_union_iou_for_valid_spans():
    rng = np.random.default_rng(0)
    a = np.sort(rng.uniform(0, 100, (5000, 2)), axis=1)
    b = np.sort(rng.uniform(0, 100, (5000, 2)), axis=1)
    inter = np.clip(np.minimum(a[:, 1], b[:, 1]) - np.maximum(a[:, 0], b[:, 0]), 0, None)
    union = (a[:, 1] - a[:, 0]) + (b[:, 1] - b[:, 0]) - inter
    np.testing.assert_allclose(gm.iou(a[:, 0], a[:, 1], b[:, 0], b[:, 1]), inter / union)


# --- several GT windows, recall, summaries ------------------------------------------------------


def test_best_iou_several_windows_and_ties():
    # item 0: windows [50,60] (0), [0,10] (1 -> IoU 1), item 1: [100,110] and [100,110] (tie -> first),
    # item 2: no window
    best, win = gm.best_iou(
        [0, 100, 0], [10, 110, 1], [50, 0, 100, 100], [60, 10, 110, 110], [0, 0, 1, 1]
    )
    np.testing.assert_allclose(best[:2], [1.0, 1.0])
    assert math.isnan(best[2])
    assert win.tolist() == [1, 2, -1]
    # flat order need not be grouped by item
    best2, win2 = gm.best_iou([0, 100], [10, 110], [100, 50, 0], [110, 60, 10], [1, 0, 0])
    assert best2.tolist() == [1.0, 1.0] and win2.tolist() == [2, 0]
    with pytest.raises(GroundingError, match="outside"):
        gm.best_iou([0], [1], [0], [1], [3])


def test_recall_at_inclusive_and_strict():
    ious = [0.5, 0.3, 0.7, 0.0, NAN]  # NaN: no GT, excluded
    assert gm.recall_at(ious) == {"0.3": 0.75, "0.5": 0.5, "0.7": 0.25}
    assert gm.recall_at(ious, strict=True) == {"0.3": 0.5, "0.5": 0.25, "0.7": 0.0}
    # an IoU of exactly 0.5 from real intervals: [0, 10] vs [0, 20]
    v = gm.iou(0, 10, 0, 20)
    assert v == 0.5 and gm.recall_at([v], [0.5])["0.5"] == 1.0 and gm.recall_at([v], [0.5], strict=True)["0.5"] == 0


def test_grounding_summary_parse_failures_count_zero():
    ious = np.array([1.0, 0.0, 0.6, 0.0, NAN])
    pf = np.array([False, True, False, True, False])
    s = gm.grounding_summary(ious, pf)
    assert s["n"] == 4 and s["n_no_gt"] == 1
    assert s["miou"] == pytest.approx(0.4)
    assert s["parse_fail"] == 0.5
    assert s["recall"] == {"0.3": 0.5, "0.5": 0.5, "0.7": 0.25}
    with pytest.raises(GroundingError, match="IoU 0"):
        gm.grounding_summary([0.5], [True])


def test_group_summaries_match_one_group_at_a_time():
    rng = np.random.default_rng(3)
    n, k = 2000, 7
    group = rng.integers(0, k, n)
    ious = rng.uniform(0, 1, n)
    ious[rng.random(n) < 0.1] = NAN
    pf = rng.random(n) < 0.2
    ious[pf & ~np.isnan(ious)] = 0.0
    got = gm.group_summaries(group, ious, pf, k, (0.3, 0.5), strict=True)
    for g in range(k):
        ref = gm.grounding_summary(ious[group == g], pf[group == g], (0.3, 0.5), strict=True)
        assert got["n"][g] == ref["n"] and got["n_no_gt"][g] == ref["n_no_gt"]
        assert got["miou"][g] == pytest.approx(ref["miou"])
        assert got["parse_fail"][g] == pytest.approx(ref["parse_fail"])
        assert got["recall@0.5"][g] == pytest.approx(ref["recall"]["0.5"])


# --- ranked windows: QVHighlights -------------------------------------------------------------


def mr(preds, gts, **kw):
    """preds: {query: [(s, e, score), ...]} listed order; gts: {query: [(s, e), ...]}."""
    n = max([*preds, *gts]) + 1
    ps = [(p[0], p[1], p[2], q) for q, ws in preds.items() for p in ws]
    gs = [(g[0], g[1], q) for q, ws in gts.items() for g in ws]
    return gm.moment_retrieval(
        [p[0] for p in ps], [p[1] for p in ps], [p[2] for p in ps], [p[3] for p in ps],
        [g[0] for g in gs], [g[1] for g in gs], [g[2] for g in gs], n, **kw)


def test_map_hand_worked_two_windows():
    # GT [0,4], [80,150]; ranked [0,4] (IoU 1), [80,140] (IoU 60/70 = 0.857), [10,20] (0)
    out = mr({0: [(0, 4, 0.9), (80, 140, 0.8), (10, 20, 0.3)]}, {0: [(0, 4), (80, 150)]})
    assert out["map_at"]["0.85"] == 1.0 and out["map_at"]["0.9"] == 0.5 and out["map_at"]["0.95"] == 0.5
    assert out["map"] == pytest.approx(0.9)
    assert out["r1"] == {"0.5": 1.0, "0.7": 1.0}
    # long bin: only [80,150] remains; [0,4] is a false positive ranked first -> AP 0.5 at tau <= 0.85
    long_ = out["bins"]["long"]
    assert long_["n"] == 1 and long_["map_at"]["0.5"] == 0.5 and long_["map_at"]["0.9"] == 0.0
    assert long_["map"] == pytest.approx(0.4)
    assert long_["r1"]["0.5"] == 0.0  # R1 reads the first *listed* window
    assert out["bins"]["middle"]["n"] == 0 and math.isnan(out["bins"]["middle"]["map"])


def test_r1_uses_first_listed_window_not_the_best_score():
    out = mr({0: [(50, 60, 0.1), (0, 10, 0.9)]}, {0: [(0, 10)]}, bins=None)
    assert out["r1"]["0.5"] == 0.0  # first listed [50, 60] misses
    assert out["map_at"]["0.5"] == 1.0  # mAP sorts by score: [0, 10] first


def test_map_score_ties_keep_listed_order():
    # equal scores: the listed order decides the ranking (stable sort)
    first_hit = mr({0: [(0, 10, 0.5), (50, 60, 0.5)]}, {0: [(0, 10)]}, bins=None, map_thresholds=(0.5,))
    first_miss = mr({0: [(50, 60, 0.5), (0, 10, 0.5)]}, {0: [(0, 10)]}, bins=None, map_thresholds=(0.5,))
    assert first_hit["map"] == 1.0 and first_miss["map"] == 0.5


def test_map_gt_iou_tie_goes_to_the_later_window():
    # pred [5,10] has IoU 0.5 with both GT windows; QVHighlights' argsort()[::-1] locks the later one (B),
    # so pred [5,15] (IoU 1 with B, 1/3 with A) is a false positive at 0.5: AP = 0.5 (not 1)
    out = mr({0: [(5, 10, 0.9), (5, 15, 0.8)]}, {0: [(0, 10), (5, 15)]}, bins=None, map_thresholds=(0.5,))
    assert out["map"] == 0.5


def test_map_missing_predictions_and_gt():
    # query 1 has no prediction: AP 0, R1 0; query 2 has no GT: excluded
    out = mr({0: [(0, 10, 1.0)], 2: [(0, 1, 1.0)]}, {0: [(0, 10)], 1: [(0, 10)]}, bins=None)
    assert out["n"] == 2 and out["map"] == 0.5 and out["r1"]["0.5"] == 0.5


def test_map_uses_only_the_first_ten_listed_windows():
    preds = [(100 + 10 * i, 105 + 10 * i, 0.9) for i in range(10)] + [(0, 10, 1.0)]
    assert mr({0: preds}, {0: [(0, 10)]}, bins=None)["map"] == 0.0
    assert mr({0: preds}, {0: [(0, 10)]}, bins=None, max_pred_windows=None)["map"] == 1.0


# An independent transcription of QVHighlights' standalone_eval/eval.py (loops and dicts).


def naive_interp_ap(precision, recall):
    mprec = [0.0, *precision, 0.0]
    mrec = [0.0, *recall, 1.0]
    for i in range(len(mprec) - 2, -1, -1):
        mprec[i] = max(mprec[i], mprec[i + 1])
    return sum((mrec[i] - mrec[i - 1]) * mprec[i] for i in range(1, len(mrec)) if mrec[i] != mrec[i - 1])


def naive_cross_iou(p, g):
    inter = max(0.0, min(p[1], g[1]) - max(p[0], g[0]))
    return inter / ((p[1] - p[0]) + (g[1] - g[0]) - inter)


def naive_ap(gts, preds, thresholds):
    if not preds:
        return [0.0] * len(thresholds)
    preds = sorted(preds, key=lambda x: -x[2])
    aps = []
    for thr in thresholds:
        lock = [False] * len(gts)
        tp, fp = [], []
        for p in preds:
            ious = [naive_cross_iou(p, g) for g in gts]
            order = sorted(range(len(gts)), key=lambda j: (ious[j], j), reverse=True)
            hit = False
            for j in order:
                if ious[j] < thr:
                    break
                if lock[j]:
                    continue
                lock[j] = hit = True
                break
            tp.append(1 if hit else 0)
            fp.append(0 if hit else 1)
        ctp = np.cumsum(tp)
        cfp = np.cumsum(fp)
        aps.append(naive_interp_ap(list(ctp / (ctp + cfp)), list(ctp / len(gts))))
    return aps


def test_moment_retrieval_against_naive_on_random_predictions():
    rnd = random.Random(7)
    thresholds = gm.MAP_THRESHOLDS
    for trial in range(6):
        preds, gts = {}, {}
        for q in range(60):
            gts[q] = []
            for _ in range(rnd.randint(1, 4)):
                s = 2 * rnd.randint(0, 70)
                gts[q].append((s, s + 2 * rnd.randint(1, 12)))
            preds[q] = []
            for _ in range(rnd.randint(1, 13)):
                s = 2 * rnd.randint(0, 70)
                preds[q].append((s, s + 2 * rnd.randint(1, 12), round(rnd.random(), 1)))  # score ties
        got = mr(preds, gts)
        aps = np.array([naive_ap(gts[q], preds[q][:10], thresholds) for q in gts])
        for k, t in enumerate(thresholds):
            assert got["map_at"][f"{t:g}"] == pytest.approx(aps[:, k].mean(), abs=1e-12), (trial, t)
        assert got["map"] == pytest.approx(aps.mean(), abs=1e-12)
        for t in (0.5, 0.7):
            r1 = np.mean([max(naive_cross_iou(preds[q][0], g) for g in gts[q]) >= t for q in gts])
            assert got["r1"][f"{t:g}"] == pytest.approx(r1)
        # length bins: filter GT windows by length, drop queries without one
        for name, (lo, hi) in gm.LENGTH_BINS.items():
            keep = {q: [g for g in gts[q] if lo < g[1] - g[0] <= hi] for q in gts}
            keep = {q: w for q, w in keep.items() if w}
            b = got["bins"][name]
            assert b["n"] == len(keep)
            if keep:
                ref = np.mean([np.mean(naive_ap(w, preds[q][:10], thresholds)) for q, w in keep.items()])
                assert b["map"] == pytest.approx(ref, abs=1e-12)


# --- search vs localize -----------------------------------------------------------------------


def test_offsets_centre_and_edge_with_several_windows():
    # pred [1000, 1010]; GT windows [0, 10] and [1300, 1400] -> centre: min(1000, 345) ; edge: min(990, 290)
    c, e = gm.offsets([1000, NAN], [1010, NAN], [0, 1300, 0], [10, 1400, 10], [0, 0, 1])
    assert c[0] == 345.0 and e[0] == 290.0
    assert math.isnan(c[1]) and math.isnan(e[1])
    c, e = gm.offsets([5], [20], [10], [30])
    assert c == [7.5] and e == [0.0]  # overlapping: nearest-edge 0


def test_search_localize_split():
    # items: hit (IoU .8), near miss (centre 100 s), far miss by centre but near by edge, far miss, parse failure,
    # no GT (excluded)
    ious = [0.8, 0.0, 0.01, 0.0, 0.0, NAN]
    pf = [False, False, False, False, True, False]
    centre = [1.0, 100.0, 320.0, 900.0, NAN, NAN]
    edge = [0.0, 90.0, 250.0, 880.0, NAN, NAN]
    s = gm.search_localize(ious, pf, centre, edge)
    assert s["n"] == 5 and s["n_failed"] == 4 and s["parse_fail"] == 1
    assert s["centre"]["search"] == 2 and s["centre"]["localize"] == 1
    assert s["edge"]["search"] == 1 and s["edge"]["localize"] == 2
    assert s["centre"]["search_share"] == 0.5 and s["edge"]["localize_share"] == 0.5
    # exactly at the offset is not "farther than": localize
    s = gm.search_localize([0.0], [False], [300.0], [300.0])
    assert s["centre"]["localize"] == 1 and s["edge"]["localize"] == 1
    s = gm.search_localize([0.04, 0.05], [False, False], [0.0, 0.0], [0.0, 0.0], fail_iou=0.05)
    assert s["n_failed"] == 1
