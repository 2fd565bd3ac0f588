"""Statistics helpers: hand-worked values, naive references, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tempcore.diagnostics.stats import (
    bootstrap_mean,
    mann_whitney_greater,
    mean_sd_se,
    paired_bootstrap,
    point_biserial,
    precision_recall_f1,
    spearman,
    wilson_interval,
    z_value,
)


def test_wilson_known_values():
    # statsmodels proportion_confint(method="wilson"), worked by hand with z = 1.959964:
    # 8/10: centre (0.8 + 0.19207) / 1.38415 = 0.71674, half 1.41600 * sqrt(0.016 + 0.0096037) = 0.22658
    low, high = wilson_interval(8, 10)
    assert (float(low), float(high)) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    # 0/10: the lower bound is 0 and the upper z^2/n / (1 + z^2/n) = 0.38415 / 1.38415 = 0.27753
    low, high = wilson_interval(0, 10)
    assert float(low) == pytest.approx(0.0, abs=1e-12) and float(high) == pytest.approx(0.27753, abs=1e-5)
    # 10/10 mirrors 0/10
    low, high = wilson_interval(10, 10)
    assert float(low) == pytest.approx(1 - 0.27753, abs=1e-5) and float(high) == pytest.approx(1.0)
    # 50/100: half = 1.95996 / 1.038415 * sqrt(0.0025 + 0.000096) = 0.096168
    low, high = wilson_interval(50, 100)
    assert (float(low), float(high)) == pytest.approx((0.4038, 0.5962), abs=1e-4)


def test_wilson_vectorised_and_empty():
    low, high = wilson_interval(np.array([8, 0, 3]), np.array([10, 0, 3]))
    assert low[0] == pytest.approx(0.4902, abs=1e-4)
    assert math.isnan(low[1]) and math.isnan(high[1])  # n = 0: undefined, not 0
    assert high[2] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        wilson_interval(5, 4)


def test_wilson_other_confidence_and_z():
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert z_value(0.90) == pytest.approx(1.644854, abs=1e-6)
    narrow = wilson_interval(8, 10, 0.90)
    wide = wilson_interval(8, 10, 0.99)
    assert wide[0] < narrow[0] and wide[1] > narrow[1]
    with pytest.raises(ValueError):
        z_value(1.0)


def test_bootstrap_is_seeded_and_brackets_the_mean():
    d = np.array([1, 0, 0, -1, 1, 1, 0, 1, 0, 1], dtype=float)
    a = bootstrap_mean(d, seed=7)
    b = bootstrap_mean(d, seed=7)
    assert a == b  # identical reruns
    assert a.estimate == pytest.approx(0.4) and a.n == 10
    assert a.low <= a.estimate <= a.high
    assert -1.0 <= a.low and a.high <= 1.0
    const = bootstrap_mean(np.full(5, 0.25))
    assert (const.low, const.high) == (0.25, 0.25)
    empty = bootstrap_mean([])
    assert empty.n == 0 and math.isnan(empty.estimate)
    with pytest.raises(ValueError):
        bootstrap_mean([1.0, float("nan")])


def test_bootstrap_matches_naive_index_resampling():
    # The multinomial shortcut draws the same distribution as resampling indices: compare quantiles.
    rng = np.random.default_rng(0)
    d = rng.choice([-1.0, 0.0, 0.0, 1.0, 0.5], size=60)
    fast = bootstrap_mean(d, n_boot=20000, seed=1)
    idx = np.random.default_rng(2).integers(0, d.size, size=(20000, d.size))
    naive = d[idx].mean(axis=1)
    lo, hi = np.quantile(naive, [0.025, 0.975])
    assert fast.low == pytest.approx(lo, abs=0.02) and fast.high == pytest.approx(hi, abs=0.02)


def test_paired_bootstrap_drops_unpaired():
    a = np.array([1, 0, 1, np.nan, 0])
    b = np.array([1, 1, 1, 1, np.nan])
    res = paired_bootstrap(a, b, seed=0)
    assert res.n == 3 and res.estimate == pytest.approx(1 / 3)  # b - a over the three pairs
    with pytest.raises(ValueError):
        paired_bootstrap([1, 0], [1])


def _ranks(x):
    # average ranks, naive O(n^2)
    x = np.asarray(x, dtype=float)
    return np.array([(x < v).sum() + ((x == v).sum() + 1) / 2 for v in x])


@pytest.mark.parametrize("seed", range(4))
def test_spearman_matches_naive_rank_pearson(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, 30).astype(float)
    y = x + rng.normal(0, 2, 30).round()
    rho, p = spearman(x, y)
    expected = np.corrcoef(_ranks(x), _ranks(y))[0, 1]
    assert rho == pytest.approx(expected, abs=1e-12)
    assert 0.0 <= p <= 1.0


def test_spearman_undefined_cases():
    assert all(math.isnan(v) for v in spearman([1, 2], [2, 1]))  # fewer than 3 pairs
    assert all(math.isnan(v) for v in spearman([1, 1, 1], [1, 2, 3]))  # constant input
    rho, _ = spearman([1, 2, 3, np.nan], [1, 2, 3, 0])  # NaN pair dropped
    assert rho == pytest.approx(1.0)


def test_point_biserial_is_pearson_with_binary():
    b = [1, 1, 0, 0, 1, 0]
    v = [0.5, 0.25, 0.0, 0.0, 0.5, 0.1]
    r, p = point_biserial(b, v)
    # by hand: cov sum 0.575, sum (b - .5)^2 = 1.5, sum (v - .225)^2 = 0.26875 -> 0.575 / sqrt(0.403125)
    assert r == pytest.approx(0.90562, abs=1e-5)
    with pytest.raises(ValueError):
        point_biserial([0, 2, 1], [1, 2, 3])


def test_mann_whitney_exact_hand_worked():
    # x = [3, 4, 5] vs y = [1, 2]: every x beats every y -> U = 6; exact one-sided p = 1 / C(5, 2) = 0.1
    u, p = mann_whitney_greater([3, 4, 5], [1, 2])
    assert u == 6 and p == pytest.approx(0.1)
    u, p = mann_whitney_greater([1, 2], [3, 4, 5])
    assert u == 0 and p == pytest.approx(1.0)
    assert all(math.isnan(v) for v in mann_whitney_greater([], [1, 2]))


def test_mean_sd_se():
    mean, sd, se = mean_sd_se([1, 2, 3, 4])
    # sd = sqrt((2.25 + 0.25 + 0.25 + 2.25) / 3) = 1.290994; se = sd / 2
    assert (mean, sd, se) == pytest.approx((2.5, 1.290994, 0.645497), abs=1e-6)
    m1, sd1, se1 = mean_sd_se([4])
    assert m1 == 4 and math.isnan(sd1) and math.isnan(se1)
    assert all(math.isnan(v) for v in mean_sd_se([]))


def test_precision_recall_f1():
    c = precision_recall_f1([1, 1, 0, 0, 1, 1], [1, 1, 0, 0, 1, 0])
    assert (c.tp, c.fp, c.fn, c.tn) == (3, 1, 0, 2)
    assert (c.precision, c.recall) == (0.75, 1.0) and c.f1 == pytest.approx(2 * 0.75 / 1.75)
    none = precision_recall_f1([0, 0], [1, 0])
    assert math.isnan(none.precision) and none.recall == 0.0 and math.isnan(none.f1)
    zero = precision_recall_f1([1, 0], [0, 1])
    assert zero.precision == 0.0 and zero.recall == 0.0 and zero.f1 == 0.0
