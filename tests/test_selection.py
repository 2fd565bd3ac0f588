"""Frame selection strategies: hand-worked examples, errors, the registry and ``select``."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

from tempcore.errors import TempcoreError
from tempcore.records import Condition, FrameSet
from tempcore.selection import (
    STRATEGIES,
    SelectionError,
    aks,
    bolt,
    derive_seed,
    get_strategy,
    maxprob,
    minprob,
    noframe,
    oracle,
    random,
    rank_frames,
    reversed,
    select,
    shuffled,
    single,
    uniform,
    window_starts,
)

# 3 seconds x 3 frames (timestamps k/3 s), scores:
#   second 0: f0 .9  f1 .1  f2 .5
#   second 1: f3 .2  f4 .8  f5 .3
#   second 2: f6 .4  f7 .6  f8 .7
T9 = np.arange(9) / 3.0
S9 = np.array([0.9, 0.1, 0.5, 0.2, 0.8, 0.3, 0.4, 0.6, 0.7])


# --- maxprob / minprob -------------------------------------------------------------------


def test_maxprob_hand_worked_k4():
    # round 1 = best of every second, by score: f0 .9, f4 .8, f8 .7; round 2 starts with f7 .6
    fs = maxprob(T9, S9, 4, sample_id="a")
    assert fs.indices == (0, 4, 7, 8)  # shown chronologically
    assert fs.timestamps == tuple(T9[[0, 4, 7, 8]])
    assert fs.requested == 4 and fs.shortfall == 0 and not fs.grey
    assert list(rank_frames(T9, S9, 4)) == [0, 4, 8, 7]


def test_maxprob_hand_worked_k7():
    # round 2 = next best of every second: f2 .5 (s0), f5 .3 (s1), f7 .6 (s2) -> f7, f2, f5
    # round 3 = the rest: f1 .1, f3 .2, f6 .4 -> f6 first
    assert list(rank_frames(T9, S9, 7)) == [0, 4, 8, 7, 2, 5, 6]
    assert maxprob(T9, S9, 7).indices == (0, 2, 4, 5, 6, 7, 8)
    assert list(rank_frames(T9, S9)) == [0, 4, 8, 7, 2, 5, 6, 3, 1]


def test_maxprob_prefers_diversity_over_raw_top_k():
    s = np.array([0.9, 0.95, 0.85, 0.1, 0.2, 0.15, 0.3, 0.05, 0.0])
    # plain top-3 = f1, f0, f2 (all in second 0); the rule takes the best of each second: f1 .95, f6 .3, f4 .2
    assert maxprob(T9, s, 3).indices == (1, 4, 6)


def test_minprob_hand_worked():
    # worst of every second: f1 .1, f3 .2, f6 .4; next-worst: f5 .3 (s1) before f2 .5, f7 .6
    assert minprob(T9, S9, 4).indices == (1, 3, 5, 6)
    assert list(rank_frames(T9, S9, 4, lowest_first=True)) == [1, 3, 6, 5]
    assert minprob(T9, S9, 4) == maxprob(T9, -S9, 4)


def test_ties_go_to_the_earlier_frame():
    flat = np.full(9, 0.5)
    # every frame ties: the leader of each second is its first frame, rounds ordered by time
    assert list(rank_frames(T9, flat, 5)) == [0, 3, 6, 1, 4]
    assert maxprob(T9, flat, 2).indices == (0, 3)
    assert minprob(T9, flat, 2).indices == (0, 3)


def test_shortfall_returns_every_frame_chronologically():
    fs = maxprob(T9, S9, 12)
    assert fs.indices == tuple(range(9)) and fs.requested == 12 and fs.shortfall == 3
    assert minprob(T9, S9, 9).shortfall == 0


def test_seconds_are_floored_and_may_be_uneven():
    # 0.2 -> 0, 0.9 -> 0, 1.0 -> 1, -0.5 -> -1, -0.1 -> -1 ; unsorted input, indices are the caller's
    t = np.array([1.0, 0.2, -0.5, 0.9, -0.1])
    s = np.array([0.1, 0.3, 0.2, 0.4, 0.9])
    # seconds: -1 {f2 .2, f4 .9}, 0 {f1 .3, f3 .4}, 1 {f0 .1}; round 1: f4 .9, f3 .4, f0 .1
    assert list(rank_frames(t, s, 3)) == [4, 3, 0]
    fs = maxprob(t, s, 3)
    assert fs.indices == (4, 3, 0) and fs.timestamps == (-0.1, 0.9, 1.0)  # chronological
    # round 2: f2 .2 (s -1), f1 .3 (s 0) -> f1 first
    assert list(rank_frames(t, s)) == [4, 3, 0, 1, 2]


def test_equal_timestamps_keep_index_order():
    t = np.array([0.5, 0.5, 0.5, 1.5])
    s = np.array([0.2, 0.7, 0.7, 0.1])
    assert list(rank_frames(t, s)) == [1, 3, 2, 0]
    assert maxprob(t, s, 3).indices == (1, 2, 3)


# --- uniform / random / single / noframe -------------------------------------------------


def test_uniform_centres_and_lmms_eval_linspace():
    t = np.arange(10) * 0.1
    # centres: floor((i + 1/2) * 10 / 4) = floor(1.25, 3.75, 6.25, 8.75)
    assert uniform(t, None, 4).indices == (1, 3, 6, 8)
    assert uniform(t, None, 4, variant="centres").indices == (1, 3, 6, 8)
    # lmms-eval: np.linspace(0, 9, 4, dtype=int) = 0, 3, 6, 9
    assert uniform(t, None, 4, variant="linspace").indices == (0, 3, 6, 9)
    t8 = np.arange(8.0)
    # linspace(0, 7, 3) = 0, 3.5, 7: lmms-eval truncates 3.5 to 3, qwen-vl-utils rounds half to even (4)
    assert uniform(t8, None, 3, variant="linspace").indices == (0, 3, 7)
    assert uniform(t8, None, 3, variant="linspace_round").indices == (0, 4, 7)
    assert uniform(t8, None, 3).indices == (1, 4, 6)  # floor(8/6, 24/6, 40/6)
    assert uniform(t8, None, 20).indices == tuple(range(8))
    assert uniform(t8, None, 20).shortfall == 12


def test_uniform_spacing_is_by_time_order_for_unsorted_input():
    t = np.array([3.0, 0.0, 2.0, 1.0])
    fs = uniform(t, None, 2, variant="linspace")
    assert fs.timestamps == (0.0, 3.0) and fs.indices == (1, 0)


def test_random_is_seeded_per_sample_and_reproducible():
    t = np.arange(200) / 10
    a = random(t, None, 16, seed=7, sample_id="v1")
    assert a == random(t, None, 16, seed=7, sample_id="v1")
    assert len(set(a.indices)) == 16 and list(a.indices) == sorted(a.indices)
    others = {random(t, None, 16, seed=7, sample_id=f"v{i}").indices for i in range(2, 12)}
    assert len(others) == 10 and a.indices not in others
    assert random(t, None, 16, seed=8, sample_id="v1") != a
    assert random(t[:5], None, 16, seed=7, sample_id="v1").indices == (0, 1, 2, 3, 4)


def test_random_covers_every_frame_about_equally():
    t = np.arange(20.0)
    counts = np.zeros(20)
    for i in range(400):
        counts[list(random(t, None, 5, sample_id=f"s{i}").indices)] += 1
    # 400 draws x 5 / 20 frames = 100 expected per frame; a binomial sd of ~8.7
    assert counts.min() > 60 and counts.max() < 140


def test_single_is_one_seeded_frame():
    t = np.arange(100) / 10
    fs = single(t, None, 32, seed=0, sample_id="x")
    assert len(fs) == 1 and fs.requested == 1 and fs.shortfall == 0
    assert fs == single(t, None, 32, seed=0, sample_id="x")
    assert len({single(t, None, 32, sample_id=f"x{i}").indices for i in range(20)}) > 5


def test_noframe_is_grey_and_needs_no_frames():
    fs = noframe(None, None, 32, sample_id="x")
    assert fs == FrameSet((), (), requested=32, grey=True) and fs.shortfall == 0
    assert noframe(np.array([]), None, 4) == FrameSet((), (), requested=4, grey=True)
    with pytest.raises(SelectionError, match="K must be a positive int"):
        noframe(None, None, 0)


def test_derive_seed_is_sha256_of_the_documented_text():
    expected = int.from_bytes(hashlib.sha256(b"tempcore-seed\x003\x00vid/1\x00salt").digest()[:8], "big")
    assert derive_seed(3, "vid/1", "salt") == expected
    assert derive_seed(3, "vid/1") != derive_seed(3, "vid/2") != derive_seed(4, "vid/2")
    assert derive_seed(3, "vid/1") != derive_seed(3, "vid/1", "single")


def test_seeded_strategies_agree_across_processes():
    code = (
        "import numpy as np; from tempcore.selection import random, shuffled, derive_seed;"
        "t = np.arange(300) / 10;"
        "print(derive_seed(5, 'q1'), random(t, None, 8, seed=5, sample_id='q1').indices,"
        " shuffled(t, None, 8, seed=5, sample_id='q1').indices)"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    t = np.arange(300) / 10
    here = f"{derive_seed(5, 'q1')} {random(t, None, 8, seed=5, sample_id='q1').indices} " \
           f"{shuffled(t, None, 8, seed=5, sample_id='q1').indices}"
    assert out.stdout.strip() == here


# --- oracle ------------------------------------------------------------------------------


def test_oracle_windows_hand_worked():
    t = np.arange(10) / 10
    # K=4, stride 4: starts 0, 4, then 8 would overflow -> one end-aligned window at 6
    wins = oracle(t, None, 4)
    assert [w.indices for w in wins] == [(0, 1, 2, 3), (4, 5, 6, 7), (6, 7, 8, 9)]
    assert all(w.requested == 4 for w in wins)
    assert wins[1].timestamps == (0.4, 0.5, 0.6, 0.7)
    # stride 3: 0, 3, 6 (6 + 4 = 10 fits exactly, no extra window)
    assert [w.indices[0] for w in oracle(t, None, 4, stride=3)] == [0, 3, 6]
    # fewer frames than K: one window with all of them
    short = oracle(t[:3], None, 4)
    assert len(short) == 1 and short[0].indices == (0, 1, 2) and short[0].shortfall == 1


def test_oracle_subsamples_to_max_windows_uniformly():
    # 100 frames, K=2, stride 1 -> 99 windows; keep round(j * 98 / 4) for j = 0..4 = 0, 24.5->25, 49, 73.5->74, 98
    assert list(window_starts(100, 2, stride=1, max_windows=5)) == [0, 25, 49, 74, 98]
    assert list(window_starts(100, 2, stride=1, max_windows=1)) == [49]
    starts = window_starts(6000, 32)
    assert len(starts) == 50 and starts[0] == 0 and starts[-1] == 6000 - 32
    assert len(oracle(np.arange(6000) / 10, None, 32)) == 50


def test_oracle_window_via_select():
    t = np.arange(10) / 10
    cond = Condition("oracle", k=4, window=2)
    assert select(cond, t, None, sample_id="s") == oracle(t, None, 4)[2]
    assert select(Condition("oracle", k=4), t, None, sample_id="s") == oracle(t, None, 4)
    assert select(Condition("oracle", k=4, window=1), t, None, sample_id="s", stride=3).indices == (3, 4, 5, 6)
    with pytest.raises(SelectionError, match=r"window 3 out of range \(this video has 3 window"):
        select(Condition("oracle", k=4, window=3), t, None, sample_id="s")
    with pytest.raises(SelectionError, match=r"oracle takes no parameter\(s\) \['alpha'\]"):
        select(Condition("oracle", k=4, window=0), t, None, sample_id="s", alpha=1.0)
    with pytest.raises(SelectionError, match=r"oracle takes no parameter\(s\) \['alpha'\]"):
        select(Condition("oracle", k=4), t, None, sample_id="s", alpha=1.0)


# --- ablations -------------------------------------------------------------------------


def test_reversed_and_shuffled_reorder_the_base_frames():
    t = np.arange(100) / 10
    base = uniform(t, None, 8)
    rev = reversed(t, None, 8)
    assert rev.indices == base.indices[::-1] and rev.timestamps == base.timestamps[::-1]
    sh = shuffled(t, None, 8, seed=1, sample_id="a")
    assert sorted(sh.indices) == list(base.indices) and sh.indices != base.indices
    assert sh == shuffled(t, None, 8, seed=1, sample_id="a")
    assert len({shuffled(t, None, 8, seed=1, sample_id=f"a{i}").indices for i in range(10)}) == 10
    # another base, with its own variant and parameters
    assert reversed(T9, S9, 4, variant="maxprob").indices == (8, 7, 4, 0)
    assert reversed(t, None, 4, variant="uniform:linspace").indices == (99, 66, 33, 0)
    s = np.linspace(0, 1, 100)
    assert sorted(shuffled(t, s, 4, variant="bolt", alpha=1.0).indices) == list(bolt(t, s, 4, alpha=1.0).indices)
    with pytest.raises(SelectionError, match="base strategy 'oracle' cannot be shuffled"):
        shuffled(t, None, 4, variant="oracle")
    with pytest.raises(SelectionError, match="unknown strategy 'maxprb'; did you mean 'maxprob'"):
        reversed(t, None, 4, variant="maxprb")


# --- aks / bolt ---------------------------------------------------------------------------


def test_aks_hand_worked_splits():
    t = np.arange(8) / 10
    s = np.arange(8) / 7.0  # already min-max normalised: 0, 1/7, ..., 1
    # t1 = -1: the root is always kept -> its K top frames (plain top-K)
    assert aks(t, s, 2, t1=-1.0).indices == (6, 7)
    # t1 = 2: never kept; depth 1 -> halves [0-3] [4-7], each gets K // 2 = 1 -> their best
    assert aks(t, s, 2, t1=2.0, max_depth=1).indices == (3, 7)
    # depth 2 -> quarters, one frame each
    assert aks(t, s, 4, t1=2.0, max_depth=2).indices == (1, 3, 5, 7)
    # K=3 at depth 1: shares 1 + 1 = 2, the missing slot goes to the best frame left (6)
    assert aks(t, s, 3, t1=2.0, max_depth=1).indices == (3, 6, 7)


def test_aks_judge_keeps_a_peaked_segment():
    t = np.arange(8) / 10
    s = np.array([0, 0, 0, 0, 0, 0, 0, 1.0])
    # root: top-4 mean .25 - mean .125 = .125.  t1 = .1 keeps the root -> top 4 = f7 then the earliest ties
    assert aks(t, s, 4, t1=0.1, max_depth=2).indices == (0, 1, 2, 7)
    # t1 = .2 splits: left half flat (0 - 0), right [0 0 0 1]: top-4 mean .25 - .25 = 0 -> split again;
    # quarters get one frame each: f0, f2, f4, f7
    assert aks(t, s, 4, t1=0.2, max_depth=2).indices == (0, 2, 4, 7)


def test_bolt_hand_worked():
    t = np.arange(6.0)
    # weights 0 .5 0 0 .5 0 -> CDF 0 .5 .5 .5 1 1; midpoint quantiles .25, .75 -> frames 1, 4
    assert bolt(t, np.array([0, 1, 0, 0, 1, 0.0]), 2, alpha=1.0).indices == (1, 4)
    # all mass on f2: every quantile lands on f2 -> collisions pushed later: 2, 3, 4
    assert bolt(t[:5], np.array([0, 0, 1, 0, 0.0]), 3).indices == (2, 3, 4)
    # all mass on the last frame: pushed past the end, packed back: 2, 3, 4
    assert bolt(t[:5], np.array([0, 0, 0, 0, 1.0]), 3).indices == (2, 3, 4)
    # constant scores: uniform distribution, quantiles 1/8.. of CDF 1..8 -> 0, 2, 4, 6
    assert bolt(np.arange(8.0), np.full(8, 0.3), 4).indices == (0, 2, 4, 6)
    # BOLT's own grid linspace(1/4, 3/4, 4) on a linear ramp, alpha 1: weights i/7, CDF i(i+1)/14, total 4;
    # targets 1, 1.667, 2.333, 3 -> first CDF >= target: frames 4, 5, 6, 6 (CDF[6] = 3) -> the collision moves to 7
    assert bolt(np.arange(8.0), np.arange(8.0), 4, alpha=1.0, grid="bolt").indices == (4, 5, 6, 7)


def test_bolt_alpha_concentrates_frames_on_high_scores():
    t = np.arange(1000) / 10
    s = np.exp(-(((np.arange(1000) - 700) / 40.0) ** 2))
    flat = np.array(bolt(t, s, 16, alpha=0.0).indices)
    sharp = np.array(bolt(t, s, 16, alpha=3.0).indices)
    assert np.abs(sharp - 700).mean() < np.abs(flat - 700).mean() / 3


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(set(STRATEGIES) - {"noframe", "textonly"}))  # frameless: take no frames
def test_every_strategy_refuses_bad_input(name):
    fn = get_strategy(name)
    t, s = np.arange(5.0), np.arange(5.0)
    with pytest.raises(SelectionError, match="no frames"):
        fn(np.array([]), np.array([]), 2, sample_id="q7")
    with pytest.raises(SelectionError, match=r"sample 'q7'.*scores\[1\] is nan"):
        fn(t, np.array([0, np.nan, 0, 0, 0]), 2, sample_id="q7")
    with pytest.raises(SelectionError, match=r"timestamps\[4\] is inf"):
        fn(np.array([0, 1, 2, 3, np.inf]), s, 2, sample_id="q7")
    for bad_k in (0, -1, True, 2.0):
        with pytest.raises(SelectionError, match="K must be a positive int"):
            fn(t, s, bad_k, sample_id="q7")
    with pytest.raises(SelectionError, match="4 scores for 5 timestamps"):
        fn(t, s[:4], 2, sample_id="q7")
    with pytest.raises(SelectionError, match="1-D"):
        fn(t.reshape(5, 1), s, 2, sample_id="q7")


@pytest.mark.parametrize("name", ["maxprob", "minprob", "aks", "bolt"])
def test_score_based_strategies_need_scores(name):
    with pytest.raises(SelectionError, match="no scores were given"):
        get_strategy(name)(np.arange(5.0), None, 2, sample_id="q1")


def test_selection_error_is_a_tempcore_error_and_names_things():
    assert issubclass(SelectionError, TempcoreError)
    with pytest.raises(SelectionError, match="unknown strategy 'unifrom'; did you mean 'uniform'"):
        get_strategy("unifrom")
    t = np.arange(10.0)
    with pytest.raises(SelectionError, match="maxprob has no variants"):
        select(Condition("maxprob", k=2, variant="x"), t, t, sample_id="a")
    with pytest.raises(SelectionError, match=r"maxprob takes no parameter\(s\) \['stride'\]"):
        select(Condition("maxprob", k=2), t, t, sample_id="a", stride=2)
    with pytest.raises(SelectionError, match="sets window but uniform has no windows"):
        select(Condition("uniform", k=2, window=0), t, None, sample_id="a")
    with pytest.raises(SelectionError, match="unknown variant 'middle'"):
        uniform(t, None, 2, variant="middle")
    with pytest.raises(SelectionError, match="stride must be a positive int"):
        oracle(t, None, 2, stride=0)
    with pytest.raises(SelectionError, match="max_windows must be a positive int"):
        oracle(t, None, 2, max_windows=0)
    with pytest.raises(SelectionError, match="alpha must be >= 0"):
        bolt(t, t, 2, alpha=-1.0)
    with pytest.raises(SelectionError, match="unknown grid"):
        bolt(t, t, 2, grid="bad")
    with pytest.raises(SelectionError, match="max_depth must be an int >= 0"):
        aks(t, t, 2, max_depth=-1)
    with pytest.raises(SelectionError, match="are not numbers"):
        uniform(["a", "b"], None, 1)


# --- select --------------------------------------------------------------------------------


def test_select_dispatches_on_the_condition():
    t = np.arange(300) / 10
    s = np.sin(np.arange(300) / 7.0)
    assert select(Condition("maxprob", "qa", 8), t, s, sample_id="a") == maxprob(t, s, 8)
    assert select(Condition("minprob", "q", 8), t, s, sample_id="a") == minprob(t, s, 8)
    assert select(Condition("uniform", k=8, variant="linspace"), t, None, sample_id="a") == uniform(
        t, None, 8, variant="linspace"
    )
    assert select(Condition("random", k=8, seed=3), t, None, sample_id="a") == random(
        t, None, 8, seed=3, sample_id="a"
    )
    assert select(Condition("shuffled", k=8, seed=3, variant="maxprob"), t, s, sample_id="a") == shuffled(
        t, s, 8, seed=3, sample_id="a", variant="maxprob"
    )
    assert select(Condition("noframe", k=8), t, None, sample_id="a").grey
    assert select(Condition("bolt", "qa", 8), t, s, sample_id="a", alpha=2.0) == bolt(t, s, 8, alpha=2.0)
    assert select(Condition("aks", "qa", 8), t, s, sample_id="a", t1=0.3) == aks(t, s, 8, t1=0.3)
