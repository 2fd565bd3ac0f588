"""Statistics the analyses need: Wilson intervals, a seeded paired bootstrap, rank and
point-biserial correlations, a one-sided Mann–Whitney test, precision / recall / F1.

Pure functions over numbers. scipy is imported inside the functions that need it, so importing
this module stays cheap.

Choices, stated once:

* Wilson score interval for a binomial proportion (no continuity correction), the interval
  ``statsmodels.stats.proportion.proportion_confint(method="wilson")`` gives; ``n = 0`` gives
  ``(nan, nan)``.
* The bootstrap resamples *samples* (benchmark questions) with replacement and keeps each
  sample's pair of values together, so the interval is for a paired difference. It is the
  percentile bootstrap. Resampling n items with replacement and averaging only depends on how
  many times each distinct value is drawn, which is multinomial; we draw those counts directly
  (exactly the same distribution as drawing indices, in O(replicates x distinct values)), so a
  100,000-sample benchmark costs no more than a 100-sample one when values are 0/1 or k/|M|.
* Correlations on fewer than 3 pairs, or with a constant input, are undefined: ``nan``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

DEFAULT_BOOTSTRAP = 2000


def z_value(confidence: float = 0.95) -> float:
    """Two-sided normal quantile: 1.959963984540054 for 0.95."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), not {confidence!r}")
    return NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)


def wilson_interval(
    correct: np.ndarray | Sequence[float] | float,
    n: np.ndarray | Sequence[float] | float,
    confidence: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval(s) for ``correct`` successes out of ``n`` (vectorised).

    ``low, high = (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)`` with ``p = correct / n``.
    Example: 8 of 10 gives (0.4902, 0.9433). Entries with ``n = 0`` are ``nan``.
    """
    c = np.asarray(correct, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    if np.any(c < 0) or np.any(c > m):
        raise ValueError("successes must lie between 0 and n")
    z = z_value(confidence)
    z2 = z * z
    with np.errstate(invalid="ignore", divide="ignore"):
        p = c / m
        denom = 1.0 + z2 / m
        centre = (p + z2 / (2.0 * m)) / denom
        half = z * np.sqrt(p * (1.0 - p) / m + z2 / (4.0 * m * m)) / denom
        # exact at the boundaries (the formula gives 0 / 1 there up to rounding)
        low = np.where(c == 0, 0.0, np.clip(centre - half, 0.0, 1.0))
        high = np.where(c == m, 1.0, np.clip(centre + half, 0.0, 1.0))
    low = np.where(m > 0, low, np.nan)
    high = np.where(m > 0, high, np.nan)
    return low, high


@dataclass(frozen=True)
class BootstrapResult:
    """A mean difference and its percentile bootstrap interval (``nan`` when there is no sample)."""

    estimate: float
    low: float
    high: float
    n: int

    def as_dict(self, prefix: str = "delta") -> dict[str, float | int | None]:
        def num(x: float) -> float | None:
            return None if math.isnan(x) else float(x)

        return {prefix: num(self.estimate), f"{prefix}_ci_low": num(self.low), f"{prefix}_ci_high": num(self.high)}


def bootstrap_mean(
    values: np.ndarray | Sequence[float],
    *,
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Mean of ``values`` with a seeded percentile bootstrap interval (resampling the values).

    The same ``seed`` and data always give the same interval. ``nan`` values are an error: the
    caller decides which samples are paired.
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    if np.isnan(v).any():
        raise ValueError("bootstrap values contain NaN; pass only complete (paired) samples")
    if n_boot < 1:
        raise ValueError(f"n_boot must be positive, not {n_boot!r}")
    n = int(v.size)
    if n == 0:
        return BootstrapResult(math.nan, math.nan, math.nan, 0)
    estimate = float(v.mean())
    distinct, counts = np.unique(v, return_counts=True)
    rng = np.random.default_rng(seed)
    if distinct.size == 1:
        means = np.full(n_boot, distinct[0])
    else:
        draws = rng.multinomial(n, counts / n, size=n_boot)  # (n_boot, distinct)
        means = draws @ distinct / n
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return BootstrapResult(estimate, float(low), float(high), n)


def paired_bootstrap(
    a: np.ndarray | Sequence[float],
    b: np.ndarray | Sequence[float],
    *,
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Difference of means ``mean(b) - mean(a)`` over paired samples, with a seeded bootstrap interval.

    ``a[i]`` and ``b[i]`` belong to the same sample (e.g. a model's 0/1 correctness on question i
    under two conditions, or a panel's mean correctness); pairs where either is ``nan`` are
    dropped before resampling, and ``n`` in the result counts the pairs kept.
    """
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"paired arrays differ in length: {x.size} vs {y.size}")
    keep = ~(np.isnan(x) | np.isnan(y))
    return bootstrap_mean(y[keep] - x[keep], n_boot=n_boot, confidence=confidence, seed=seed)


def _clean_pairs(x: np.ndarray | Sequence[float], y: np.ndarray | Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"arrays differ in length: {a.size} vs {b.size}")
    keep = ~(np.isnan(a) | np.isnan(b))
    return a[keep], b[keep]


def _undefined(a: np.ndarray, b: np.ndarray) -> bool:
    return a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0


def spearman(x: np.ndarray | Sequence[float], y: np.ndarray | Sequence[float]) -> tuple[float, float]:
    """Spearman rank correlation and its two-sided p-value (scipy); pairs with a NaN are dropped."""
    a, b = _clean_pairs(x, y)
    if _undefined(a, b):
        return math.nan, math.nan
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.spearmanr(a, b)
    return float(res.statistic), float(res.pvalue)


def point_biserial(
    binary: np.ndarray | Sequence[float], values: np.ndarray | Sequence[float]
) -> tuple[float, float]:
    """Point-biserial correlation of a 0/1 variable with a continuous one (scipy), two-sided p."""
    a, b = _clean_pairs(binary, values)
    if not np.isin(a, (0.0, 1.0)).all():
        raise ValueError("point-biserial: the first variable must be 0/1")
    if _undefined(a, b):
        return math.nan, math.nan
    from scipy import stats

    res = stats.pointbiserialr(a.astype(bool), b)
    return float(res.statistic), float(res.pvalue)


def mann_whitney_greater(
    x: np.ndarray | Sequence[float], y: np.ndarray | Sequence[float]
) -> tuple[float, float]:
    """One-sided Mann–Whitney U test that ``x`` tends to exceed ``y``: (U of x, p).

    scipy's default method (exact for small samples without ties, else the normal approximation
    with tie correction and continuity correction). Either group empty: ``(nan, nan)``.
    """
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if a.size == 0 or b.size == 0:
        return math.nan, math.nan
    from scipy import stats

    res = stats.mannwhitneyu(a, b, alternative="greater")
    return float(res.statistic), float(res.pvalue)


def mean_sd_se(values: np.ndarray | Sequence[float]) -> tuple[float, float, float]:
    """Mean, sample standard deviation (ddof 1) and standard error ``sd / sqrt(n)``; nan when undefined."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[~np.isnan(v)]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(v.mean())
    if v.size < 2:
        return mean, math.nan, math.nan
    sd = float(v.std(ddof=1))
    return mean, sd, sd / math.sqrt(v.size)


@dataclass(frozen=True)
class Classification:
    """Confusion counts and precision / recall / F1 of a binary prediction against a binary truth.

    Undefined ratios (no predicted positives, no true positives in the truth) are ``nan``; F1 is
    ``nan`` when precision or recall is, and 0 when both are 0.
    """

    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float:
        d = self.tp + self.fp
        return self.tp / d if d else math.nan

    @property
    def recall(self) -> float:
        d = self.tp + self.fn
        return self.tp / d if d else math.nan

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        if math.isnan(p) or math.isnan(r):
            return math.nan
        return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def precision_recall_f1(predicted: np.ndarray | Sequence[bool], truth: np.ndarray | Sequence[bool]) -> Classification:
    """Confusion counts of ``predicted`` against ``truth`` (boolean arrays of equal length)."""
    p = np.asarray(predicted, dtype=bool).ravel()
    t = np.asarray(truth, dtype=bool).ravel()
    if p.shape != t.shape:
        raise ValueError(f"arrays differ in length: {p.size} vs {t.size}")
    return Classification(
        tp=int((p & t).sum()), fp=int((p & ~t).sum()), fn=int((~p & t).sum()), tn=int((~p & ~t).sum())
    )


__all__ = [
    "DEFAULT_BOOTSTRAP",
    "BootstrapResult",
    "Classification",
    "bootstrap_mean",
    "mann_whitney_greater",
    "mean_sd_se",
    "paired_bootstrap",
    "point_biserial",
    "precision_recall_f1",
    "spearman",
    "wilson_interval",
    "z_value",
]
