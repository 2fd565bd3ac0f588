"""MaxProb and MinProb with the paper's per-second temporal-diversity rule (TempCore §3.2).

The rule, as the paper states it: group the frames by the integer second of their timestamp
and select in rounds; in each round take the next-best frame of every second, the round's
candidates ordered by score; stop at K. So the first ``min(K, number of seconds)`` picks come
from distinct seconds. MinProb is the same procedure with the ranking reversed.

Choices the paper leaves open, fixed here:

- *Integer second* is ``floor(timestamp)`` (so a negative timestamp such as -0.3 s falls in
  second -1, not in second 0 together with 0.3 s). Only seconds that contain at least one
  frame take part, so with frames in every second the count is ``ceil(L / fps)`` as in the paper.
- *Ties* (equal scores) are broken by time, earlier first, then by frame index — both within a
  second and when ordering a round's candidates. MinProb uses the same tie rule, which makes
  ``minprob(s) == maxprob(-s)`` exact.
- The frames are *shown* chronologically; :func:`rank_frames` gives the selection order.
"""

from __future__ import annotations

import numpy as np

from tempcore.records import FrameSet
from tempcore.selection._common import Frames, prepare, strategy, top_r


def _selection_order(t: np.ndarray, s: np.ndarray, k: int) -> np.ndarray:
    """Positions (into the chronological arrays) of the first ``k`` picks, in selection order.

    Vectorised; no Python loop over frames. When ``k`` does not exceed the number of seconds,
    only round 1 matters: the best frame of each second (``reduceat``), then the ``k`` best of
    those (``np.partition``). Otherwise every frame gets its rank within its second from one
    ``lexsort`` on (second, -score), and a second ``lexsort`` on (rank, -score) gives the order.
    Both ``lexsort`` calls are stable, so ties fall back to time order.
    """
    n = t.shape[0]
    k = min(k, n)
    sec = np.floor(t).astype(np.int64)
    first_of_second = np.empty(n, dtype=bool)
    first_of_second[0] = True
    np.not_equal(sec[1:], sec[:-1], out=first_of_second[1:])
    starts = np.flatnonzero(first_of_second)
    if k <= starts.shape[0]:
        best = np.maximum.reduceat(s, starts)
        counts = np.diff(np.append(starts, n))
        is_best = s == np.repeat(best, counts)
        leaders = np.minimum.reduceat(np.where(is_best, np.arange(n), n), starts)
        chosen: np.ndarray = leaders[top_r(s[leaders], k)]
        return chosen[np.lexsort((chosen, -s[chosen]))]
    by_second = np.lexsort((-s, sec))
    group = np.cumsum(first_of_second) - 1
    rank = np.empty(n, dtype=np.int64)
    rank[by_second] = np.arange(n) - starts[group]
    return np.lexsort((-s, rank))[:k]


def rank_frames(
    timestamps: np.ndarray,
    scores: np.ndarray,
    k: int | None = None,
    *,
    lowest_first: bool = False,
    sample_id: str = "",
) -> np.ndarray:
    """Frame indices in the order the diversity rule *picks* them (MaxProb; MinProb if ``lowest_first``).

    ``k=None`` ranks every frame. The result has ``min(k, L)`` entries; ``np.sort`` of it is
    what :func:`maxprob` / :func:`minprob` show.
    """
    name = "minprob" if lowest_first else "maxprob"
    frames = prepare(timestamps, scores, 1 if k is None else k, strategy=name, sample_id=sample_id,
                     needs_scores=True)
    kk = frames.n if k is None else frames.k
    assert frames.s is not None  # needs_scores=True
    s = -frames.s if lowest_first else frames.s
    return frames.indices(_selection_order(frames.t, s, kk))


def _diverse(frames: Frames, lowest_first: bool) -> FrameSet:
    assert frames.s is not None
    s = -frames.s if lowest_first else frames.s
    return frames.chronological(_selection_order(frames.t, s, frames.k))


@strategy("maxprob", needs_scores=True)
def maxprob(frames: Frames) -> FrameSet:
    """The K highest-scoring frames under the per-second diversity rule, shown chronologically.

    Worked example (3 seconds x 3 frames, scores in brackets)::

        second 0: f0 (.9) f1 (.1) f2 (.5)   second 1: f3 (.2) f4 (.8) f5 (.3)
        second 2: f6 (.4) f7 (.6) f8 (.7)
        round 1 = best of each second: f0 .9, f4 .8, f8 .7
        round 2 = next best:           f7 .6, f2 .5, f5 .3
        K=4 -> picks f0 f4 f8 f7 -> shown [0, 4, 7, 8]

    ``seed`` is accepted for the common strategy signature and unused (the rule is deterministic).
    Fewer than K frames: all of them, ``requested=k`` records the shortfall.
    """
    return _diverse(frames, lowest_first=False)


@strategy("minprob", needs_scores=True)
def minprob(frames: Frames) -> FrameSet:
    """The K lowest-scoring frames under the same per-second rule (ranking reversed), chronological.

    Equal to :func:`maxprob` of the negated scores, ties included.
    """
    return _diverse(frames, lowest_first=True)
