"""Naive pure-Python reference implementations, written straight from the paper's words.

They are slow (Python loops over frames) and exist to check the vectorised strategies: the
tests compare both on random inputs, and ``benchmarks/selection.py`` reports the speed-up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def diversity_order(timestamps: Sequence[float], scores: Sequence[float], k: int | None = None) -> list[int]:
    """MaxProb's selection order by the literal rule: rounds over integer seconds.

    Group frames by ``floor(timestamp)``; sort each group best-first (ties: earlier time, then
    lower index); round r takes the r-th frame of every group that has one, orders those by
    score (ties: earlier time, then lower index) and appends them; stop at k.
    """
    n = len(timestamps)
    k = n if k is None else min(k, n)
    groups: dict[int, list[int]] = {}
    for i, t in enumerate(timestamps):
        groups.setdefault(math.floor(t), []).append(i)

    def better_first(i: int) -> tuple[float, float, int]:
        return (-scores[i], timestamps[i], i)

    ranked = [sorted(members, key=better_first) for members in groups.values()]
    order: list[int] = []
    r = 0
    while len(order) < k:
        this_round = [members[r] for members in ranked if len(members) > r]
        this_round.sort(key=better_first)
        order.extend(this_round)
        r += 1
    return order[:k]


def maxprob_indices(timestamps: Sequence[float], scores: Sequence[float], k: int) -> list[int]:
    """The frames MaxProb shows, chronologically (time, then index)."""
    chosen = diversity_order(timestamps, scores, k)
    return sorted(chosen, key=lambda i: (timestamps[i], i))


def minprob_indices(timestamps: Sequence[float], scores: Sequence[float], k: int) -> list[int]:
    return maxprob_indices(timestamps, [-s for s in scores], k)


def _minmax(scores: Sequence[float]) -> list[float]:
    lo, hi = min(scores), max(scores)
    return [0.0 if hi == lo else (x - lo) / (hi - lo) for x in scores]


def _best_first(values: Sequence[float], members: Sequence[int]) -> list[int]:
    return sorted(members, key=lambda i: (-values[i], i))


def aks_indices(
    scores: Sequence[float], k: int, *, t1: float = 0.8, t2: float = -100.0, max_depth: int = 5,
    top_m: int | None = None,
) -> list[int]:
    """AKS by literal recursion (judge, split at len // 2), with tempcore's fill of missing slots.

    Frames are assumed chronological (index = time order). Returns sorted indices.
    """
    n = len(scores)
    if k >= n:
        return list(range(n))
    m = k if top_m is None else top_m
    s = _minmax(scores)
    picks: list[int] = []

    def visit(lo: int, hi: int, depth: int) -> None:
        seg = s[lo:hi]
        keep = False
        if seg:
            mean = sum(seg) / len(seg)
            std = math.sqrt(max(sum(x * x for x in seg) / len(seg) - mean * mean, 0.0))
            top = sorted(seg, reverse=True)[:m]
            keep = sum(top) / len(top) - mean > t1 and std > t2
        if keep or depth == max_depth:
            picks.extend(_best_first(s, range(lo, hi))[: k >> depth])
        else:
            mid = lo + (hi - lo) // 2
            visit(lo, mid, depth + 1)
            visit(mid, hi, depth + 1)

    visit(0, n, 0)
    taken = set(picks)
    rest = [i for i in _best_first(s, range(n)) if i not in taken]
    return sorted(picks + rest[: k - len(picks)])


def bolt_indices(scores: Sequence[float], k: int, *, alpha: float = 3.0, grid: str = "midpoint") -> list[int]:
    """BOLT inverse transform sampling, one quantile at a time, collisions pushed later then packed back."""
    n = len(scores)
    if k >= n:
        return list(range(n))
    weights = [x**alpha for x in _minmax(scores)]
    if sum(weights) <= 0:
        weights = [1.0] * n
    cdf, acc = [], 0.0
    for w in weights:
        acc += w
        cdf.append(acc)
    total = cdf[-1]
    if grid == "midpoint":
        quantiles = [(j + 0.5) / k for j in range(k)]
    else:
        start, stop = 1 / k, 1 - 1 / k  # numpy.linspace(start, stop, k): the last point is stop exactly
        quantiles = [start + j * ((stop - start) / (k - 1)) for j in range(k - 1)] + [stop] if k > 1 else [start]
    picks: list[int] = []
    for q in quantiles:
        target = q * total
        raw = next((i for i, c in enumerate(cdf) if c >= target), n - 1)
        if picks and raw <= picks[-1]:
            raw = picks[-1] + 1
        picks.append(raw)
    for j in range(k - 1, -1, -1):  # pack a tail that ran past the end back against it
        limit = n - k + j
        if picks[j] > limit:
            picks[j] = limit
    return picks
