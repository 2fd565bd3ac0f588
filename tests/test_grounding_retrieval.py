"""The frame-level retrieval baseline on synthetic score tracks with planted peaks, top-K candidates
with NMS and their recall (contained / overlap), and the query profile (issue 15)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from tempcore.diagnostics.grounding import GroundingError
from tempcore.grounding.queries import mattr, query_profile, tokenize
from tempcore.grounding.retrieval import candidate_recall, candidate_windows, retrieval_windows, smooth


def track(n=600, base=0.1):
    return np.full(n, base)


def test_smooth_centred_ignores_missing_frames():
    s = np.array([0.0, 3.0, 6.0, np.nan, 9.0])
    out = smooth(s, 3)
    np.testing.assert_allclose(out[:3], [1.5, 3.0, 4.5])
    assert math.isnan(out[3]) and out[4] == 9.0  # only itself: its neighbour is missing
    np.testing.assert_array_equal(smooth(s, 1)[[0, 1, 2, 4]], s[[0, 1, 2, 4]])
    rng = np.random.default_rng(1)
    x = rng.random((3, 40))
    naive = np.array([[x[r, max(0, i - 2): i + 3].mean() for i in range(40)] for r in range(3)])
    np.testing.assert_allclose(smooth(x, 5), naive, atol=1e-11)
    with pytest.raises(GroundingError, match="odd"):
        smooth(x, 4)


def test_planted_peak_grows_while_above_beta_peak():
    s = track()
    s[200:220] = 0.9  # a 20 s event
    w = retrieval_windows(s, smooth_frames=1)
    assert (w["start"][0], w["end"][0]) == (200.0, 220.0)
    assert w["peak_time"][0] == 200.0 and w["peak_score"][0] == 0.9
    # a shoulder above 0.7 * peak joins the window, one below does not
    s[220:230] = 0.64
    s[190:200] = 0.62
    w = retrieval_windows(s, smooth_frames=1)
    assert (w["start"][0], w["end"][0]) == (200.0, 230.0)
    w = retrieval_windows(s, smooth_frames=1, beta=0.6)
    assert (w["start"][0], w["end"][0]) == (190.0, 230.0)


def test_length_clipped_to_min_and_max():
    s = track()
    s[300] = 0.9  # a 1 s spike -> grown to 4 s about its centre
    w = retrieval_windows(s, smooth_frames=1)
    assert (w["start"][0], w["end"][0]) == (298.5, 302.5)
    s = track()
    s[100:300] = 0.8
    s[120] = 0.9  # a 200 s plateau above 0.7 * peak, peak near its left edge: 60 s centred on the peak,
    w = retrieval_windows(s, smooth_frames=1)  # shifted to stay inside the plateau
    assert (w["start"][0], w["end"][0]) == (100.0, 160.0)
    s[250] = 0.95
    w = retrieval_windows(s, smooth_frames=1)
    assert (w["start"][0], w["end"][0]) == pytest.approx((220.5, 280.5))


def test_window_stays_inside_the_video_and_time_offset():
    s = track(50)
    s[0] = 0.9
    w = retrieval_windows(s, smooth_frames=1)
    assert (w["start"][0], w["end"][0]) == (0.0, 4.0)
    s = track(50)
    s[49] = 0.9
    w = retrieval_windows(s, smooth_frames=1)
    assert (w["start"][0], w["end"][0]) == (46.0, 50.0)
    w = retrieval_windows(track(3), smooth_frames=1)  # a 3 s video: the whole video
    assert (w["start"][0], w["end"][0]) == (0.0, 3.0)
    s = track(100)
    s[10] = 0.9
    w = retrieval_windows(s, smooth_frames=1, fps=2.0, t0=30.0)  # frame 10 at 2 fps = 35 s
    assert w["peak_time"][0] == 35.0 and (w["start"][0], w["end"][0]) == (33.25, 37.25)


def test_ragged_tracks_many_queries_and_errors():
    rng = np.random.default_rng(0)
    n_q, n = 40, 900
    s = rng.uniform(0.0, 0.3, (n_q, n))
    planted = rng.integers(10, 800, n_q)
    for q, p in enumerate(planted):
        s[q, p: p + 15] = 0.95
    s[5, 500:] = np.nan  # a shorter video
    planted[5] = min(planted[5], 400)
    s[5, :] = np.where(np.isnan(s[5]), np.nan, rng.uniform(0.0, 0.3, n))
    s[5, planted[5]: planted[5] + 15] = 0.95
    w = retrieval_windows(s)
    assert np.all(w["start"] <= planted + 2) and np.all(w["end"] >= planted + 13)
    assert np.all((w["end"] - w["start"] >= 4 - 1e-9) & (w["end"] - w["start"] <= 60 + 1e-9))
    assert w["end"][5] <= 500
    empty = retrieval_windows(np.full((1, 10), np.nan))
    assert math.isnan(empty["start"][0])
    # raw cosines may be negative; a non-positive peak keeps the peak frame alone (then min_len)
    neg = retrieval_windows([-0.3, 0.2, -0.1, -0.3], smooth_frames=1, min_len=0.0)
    assert (neg["start"][0], neg["end"][0]) == (1.0, 2.0)
    low = retrieval_windows([-0.3, -0.2, -0.25, -0.3], smooth_frames=1, min_len=0.0)
    assert (low["start"][0], low["end"][0], low["peak_score"][0]) == (1.0, 2.0, -0.2)
    with pytest.raises(GroundingError, match="finite"):
        retrieval_windows([np.inf, 0.2])
    with pytest.raises(GroundingError, match="beta"):
        retrieval_windows([0.1], beta=0)


def naive_candidates(s, k, nms, pad, dur):
    s = list(s)
    out = []
    alive = [True] * len(s)
    for _ in range(k):
        best = None
        for i, v in enumerate(s):
            if alive[i] and not math.isnan(v) and (best is None or v > s[best]):
                best = i
        if best is None:
            break
        out.append((max(best - pad, 0), min(best + pad, dur)))
        for i in range(len(s)):
            if abs(i - best) < nms:
                alive[i] = False
    return out


def test_candidates_nms_against_naive():
    rng = np.random.default_rng(5)
    s = np.round(rng.random((20, 700)), 3)  # with ties
    got = candidate_windows(s, k=5, smooth_frames=1)
    for q in range(20):
        ref = naive_candidates(s[q], 5, 60, 60, 700)
        assert list(zip(got["start"][q], got["end"][q])) == [tuple(map(float, r)) for r in ref]
    short = candidate_windows(track(100), k=3, smooth_frames=1)  # 100 s: two peaks fit, a third does not
    assert short["peak_time"][0].tolist()[:2] == [0.0, 60.0] and math.isnan(short["start"][0, 2])


def test_top3_candidates_are_six_minutes_and_find_planted_events():
    s = track(3600)
    for t in (500, 1500, 3000):
        s[t: t + 8] = 0.9
    c = candidate_windows(s, k=3)
    assert sorted(c["peak_time"][0].tolist()) == [502.0, 1502.0, 3002.0]
    assert np.sum(c["end"] - c["start"]) == 360.0


def test_candidate_recall_contained_vs_overlap():
    cs = np.array([[0.0, 100.0], [0.0, 100.0], [0.0, 100.0]])
    ce = np.array([[120.0, 220.0], [120.0, 220.0], [120.0, 220.0]])
    # q0: GT [50, 60] contained in cand 1; q1: GT [110, 130] overlaps both, contained in cand 2 only;
    # q2: two GT windows, [500, 510] (nowhere) and [210, 230] (overlaps cand 2)
    gs, ge, gi = [50, 110, 500, 210], [60, 130, 510, 230], [0, 1, 2, 2]
    r = candidate_recall(cs, ce, gs, ge, gi)
    assert r["n"] == 3
    assert r["contained"] == {"1": 1 / 3, "2": 2 / 3}
    assert r["overlap"] == {"1": 2 / 3, "2": 1.0}
    # touching is no overlap
    assert candidate_recall([[0.0]], [[10.0]], [10.0], [20.0])["overlap"] == {"1": 0.0}


# --- query profile ----------------------------------------------------------------------------


def naive_mattr(t, w):
    if len(t) <= w:
        return len(set(t)) / len(t)
    return sum(len(set(t[i: i + w])) for i in range(len(t) - w + 1)) / (len(t) - w + 1) / w


def test_mattr_against_naive():
    rnd = random.Random(2)
    for _ in range(300):
        t = [rnd.choice("abcdefgh") for _ in range(rnd.randint(1, 120))]
        w = rnd.randint(1, 60)
        assert mattr(t, w) == pytest.approx(naive_mattr(t, w), abs=1e-12)


def test_query_profile_hand_worked():
    qs = ["When does the red car stop?", "When does the man jump?", "What happens after the dog sits?",
          "When does the red car stop?"]
    assert tokenize("Where's the CAR, left?") == ["where's", "the", "car", "left"]
    p = query_profile(qs, window=50)
    assert p["n_questions"] == 4 and p["tokens"] == 23
    assert p["length_mean"] == 23 / 4 and p["length_median"] == 6.0
    assert p["ttr"] == pytest.approx(13 / 23)  # when does the red car stop man jump what happens after dog sits
    assert p["mattr"] == pytest.approx(13 / 23)  # shorter than the window
    assert p["distinct"]["1"] == pytest.approx(13 / 23)
    assert p["unique_stems"] == 3 and p["top5_stem_coverage"] == 1.0
    assert p["top5_stems"][0] == "when does the red"
    assert p["wh_counts"] == {"what": 1, "when": 3}
    assert p["wh_entropy"] == pytest.approx(-(0.25 * math.log2(0.25) + 0.75 * math.log2(0.75)))
    assert p["descriptor_density"] == pytest.approx((1 / 6 + 0 + 0 + 1 / 6) / 4)  # "red"
    ng = query_profile(qs, distinct_denominator="ngrams")
    assert ng["distinct"]["2"] == pytest.approx(len({("when", "does"), ("does", "the"), ("the", "red"),
                                                      ("red", "car"), ("car", "stop"), ("the", "man"),
                                                      ("man", "jump"), ("what", "happens"), ("happens", "after"),
                                                      ("after", "the"), ("the", "dog"), ("dog", "sits")}) / 19)


def test_top5_stem_coverage_ties_by_first_appearance():
    qs = [f"q{i} a b c" for i in range(7)] + ["q6 a b c"]
    p = query_profile(qs)
    assert p["top5_stems"] == ["q6 a b c", "q0 a b c", "q1 a b c", "q2 a b c", "q3 a b c"]
    assert p["top5_stem_coverage"] == 6 / 8


def test_blocks_of_queries_give_the_same_windows_as_one_query_at_a_time():
    rng = np.random.default_rng(9)
    s = rng.random((1100, 120))
    s[700, 60:] = np.nan
    w = retrieval_windows(s)
    c = candidate_windows(s, k=2)
    for q in (0, 511, 512, 700, 1023, 1024, 1099):
        one = retrieval_windows(s[q])
        assert (w["start"][q], w["end"][q]) == (one["start"][0], one["end"][0])
        one_c = candidate_windows(s[q], k=2)
        np.testing.assert_array_equal(c["start"][q], one_c["start"][0])
    assert c["end"][700][0] <= 60.0 and math.isnan(c["end"][700][1])  # 60 s: one candidate only


def test_merge_windows_and_times_back_to_the_video():
    from tempcore.grounding.retrieval import merge_windows, to_absolute

    spans = merge_windows([400.0, 0.0, 100.0, np.nan], [520.0, 120.0, 220.0, np.nan])
    assert spans == [(0.0, 220.0), (400.0, 520.0)]
    assert merge_windows([0.0, 10.0], [10.0, 20.0]) == [(0.0, 20.0)]  # touching windows merge
    # local time on the concatenation (220 s + 120 s) -> absolute
    np.testing.assert_allclose(to_absolute([0.0, 219.0, 220.0, 230.0, 340.0, 999.0, -5.0], spans),
                               [0.0, 219.0, 400.0, 410.0, 520.0, 520.0, 0.0])
    with pytest.raises(GroundingError):
        to_absolute([1.0], [])


def test_grow_includes_frames_exactly_at_beta_peak():
    s = track(100, base=0.25)
    s[50:55] = 1.0
    s[55:60] = 0.5  # exactly beta * peak: inside (score >= beta * peak)
    w = retrieval_windows(s, smooth_frames=1, beta=0.5)
    assert (w["start"][0], w["end"][0]) == (50.0, 60.0)
