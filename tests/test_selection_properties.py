"""Property tests (hypothesis) of the selection strategies, and agreement with naive references."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tempcore.selection import (
    STRATEGIES,
    aks,
    bolt,
    maxprob,
    minprob,
    oracle,
    random,
    rank_frames,
    shuffled,
    single,
    window_starts,
)
from tempcore.selection import reference as ref

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def videos(draw, max_frames: int = 60):
    """(timestamps, scores, k): unsorted timestamps with repeats, scores with many ties."""
    n = draw(st.integers(1, max_frames))
    # timestamps on a 0.25 s grid over up to 8 s (so seconds hold 0..4+ frames), shuffled
    ticks = draw(st.lists(st.integers(-4, 32), min_size=n, max_size=n))
    t = np.array(ticks, dtype=np.float64) / 4.0
    if draw(st.booleans()):
        t = np.sort(t)
    levels = draw(st.sampled_from([3, 10, 1000]))
    s = np.array(draw(st.lists(st.integers(0, levels), min_size=n, max_size=n)), dtype=np.float64) / levels
    k = draw(st.integers(1, n + 5))
    return t, s, k


def _seconds(t: np.ndarray, idx) -> list[int]:
    return [math.floor(t[i]) for i in idx]


@SETTINGS
@given(videos())
def test_maxprob_matches_the_naive_reference(video):
    t, s, k = video
    tl, sl = t.tolist(), s.tolist()
    assert list(rank_frames(t, s, k)) == ref.diversity_order(tl, sl, k)
    assert list(maxprob(t, s, k).indices) == ref.maxprob_indices(tl, sl, k)
    assert list(minprob(t, s, k).indices) == ref.minprob_indices(tl, sl, k)


@SETTINGS
@given(videos())
def test_first_picks_come_from_distinct_seconds(video):
    t, s, k = video
    n_seconds = len({math.floor(x) for x in t})
    for lowest_first in (False, True):
        order = rank_frames(t, s, k, lowest_first=lowest_first)
        head = _seconds(t, order[: min(k, n_seconds)])
        assert len(set(head)) == len(head)


@SETTINGS
@given(videos())
def test_minprob_is_maxprob_of_negated_scores(video):
    t, s, k = video
    assert minprob(t, s, k) == maxprob(t, -s, k)
    assert list(rank_frames(t, s, k, lowest_first=True)) == list(rank_frames(t, -s, k))


@SETTINGS
# the grounding crops (gtcrop, retrieve_ground) show only frames inside their spans, fewer than K when
# the spans hold fewer (and gtcrop needs the ground truth): tests/test_grounding_crops.py
@given(videos(), st.sampled_from(sorted(set(STRATEGIES) - {"oracle", "noframe", "textonly", "gtcrop",
                                                           "retrieve_ground"})), st.integers(0, 3))
def test_every_strategy_returns_distinct_real_frames(video, name, seed):
    t, s, k = video
    fs = STRATEGIES[name](t, s, k, seed=seed, sample_id="p")
    idx = list(fs.indices)
    want = 1 if name == "single" else min(k, len(t))
    assert len(idx) == want and len(set(idx)) == want
    assert all(0 <= i < len(t) for i in idx)
    assert fs.timestamps == tuple(t[idx].tolist())
    assert fs.requested == (1 if name == "single" else k)
    assert fs.shortfall == (0 if name == "single" else max(0, k - len(t)))
    if name not in ("shuffled", "reversed"):  # shown chronologically (time, then index)
        assert idx == sorted(idx, key=lambda i: (t[i], i))
    if name == "reversed":
        assert idx == sorted(idx, key=lambda i: (t[i], i), reverse=True)


@settings(max_examples=40, deadline=None)
@given(videos(), st.integers(0, 5), st.text(max_size=8))
def test_seeded_strategies_are_deterministic(video, seed, sample_id):
    t, s, k = video
    for fn in (random, single, shuffled):
        assert fn(t, s, k, seed=seed, sample_id=sample_id) == fn(t, s, k, seed=seed, sample_id=sample_id)


def test_seeded_strategies_vary_across_sample_ids():
    t = np.arange(400) / 10
    for fn in (random, single, shuffled):
        picks = {fn(t, None, 12, seed=0, sample_id=f"id{i}").indices for i in range(30)}
        assert len(picks) >= 25, fn.__name__


@SETTINGS
@given(st.integers(1, 400), st.integers(1, 40), st.integers(1, 50), st.integers(1, 60))
def test_oracle_windows(n, k, stride, max_windows):
    t = np.arange(n) / 10
    wins = oracle(t, None, k, stride=stride, max_windows=max_windows)
    starts = window_starts(n, k, stride=stride, max_windows=max_windows)
    assert 1 <= len(wins) == len(starts) <= max_windows
    assert list(starts) == sorted(set(starts.tolist()))
    width = min(k, n)
    for w, a in zip(wins, starts):
        assert w.indices == tuple(range(a, a + width)) and w.requested == k
    every = list(range(0, n - k + 1, stride))
    if n > k and every[-1] != n - k:
        every.append(n - k)
    if len(every) <= max_windows:
        assert list(starts) == (every if n > k else [0])
        if stride <= k:  # then every frame is in some window
            assert set().union(*(set(w.indices) for w in wins)) == set(range(n))
    else:
        assert starts[0] == every[0] and starts[-1] == every[-1] or max_windows == 1


@SETTINGS
@given(videos(max_frames=80), st.sampled_from([-1.0, 0.0731, 0.3183, 0.7071, 2.0]), st.integers(0, 9), st.integers(1, 6))
def test_aks_matches_the_naive_recursion(video, t1, depth, top_m):
    # t1 values off the grid of the scores: a judge exactly at the threshold would hinge on float rounding
    _, s, k = video
    t = np.arange(len(s)) / 10
    for m in (None, top_m):
        got = aks(t, s, k, t1=t1, max_depth=depth, top_m=m)
        assert list(got.indices) == ref.aks_indices(s.tolist(), k, t1=t1, max_depth=depth, top_m=m)


@SETTINGS
@given(
    videos(max_frames=80),
    st.sampled_from([0.0, 0.5, 1.0, 2.5, 3.0]),
    st.sampled_from(["midpoint", "bolt"]),
)
def test_bolt_matches_the_naive_loop(video, alpha, grid):
    _, s, k = video
    t = np.arange(len(s)) / 10
    got = bolt(t, s, k, alpha=alpha, grid=grid)
    assert list(got.indices) == ref.bolt_indices(s.tolist(), k, alpha=alpha, grid=grid)


@SETTINGS
@given(st.integers(2, 60), st.integers(1, 70), st.data())
def test_permuting_the_input_selects_the_same_frames(n, k, data):
    # distinct timestamps and distinct scores: the selection is a function of the frames, not of their order
    t = np.arange(n) * 0.35
    s = np.array(data.draw(st.permutations(list(range(n))))) / n
    perm = np.array(data.draw(st.permutations(list(range(n)))))
    for name in ("maxprob", "minprob", "uniform", "aks", "bolt"):
        a = STRATEGIES[name](t, s, k)
        b = STRATEGIES[name](t[perm], s[perm], k)
        assert [int(perm[i]) for i in b.indices] == list(a.indices)
