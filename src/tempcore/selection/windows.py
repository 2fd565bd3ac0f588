"""The window oracle (TempCore §3.2): windows of K consecutive frames, one model call per window.

The paper: slide a window of K frames with stride S across the video; when there are more
than W_max (default 50) windows, take W_max uniformly spaced ones. A sample counts as solved
by the oracle if any window is answered correctly (scored elsewhere). Choices left open,
fixed here:

- Default stride S = K (non-overlapping windows), the cheapest stride that still covers
  every frame.
- Window starts are ``0, S, 2S, ...`` while a full window fits. If that leaves frames at the
  end uncovered (``(L - K) % S != 0``), one more window is added, aligned to the end
  (start ``L - K``); it overlaps its predecessor. Every window has exactly K frames, and with
  ``S <= K`` every frame is in some window.
- Fewer frames than K: a single window holding all of them (the FrameSet records the shortfall).
- Subsampling to W_max: window ``round(j * (n - 1) / (W_max - 1))`` for ``j = 0..W_max-1``
  (inclusive of the first and the last window, rounding half up, exact integer arithmetic);
  the spacing exceeds 1, so the chosen windows are distinct. ``W_max = 1`` takes the middle
  window ``(n - 1) // 2``.

Early stop (``early_stop`` of an oracle condition, :func:`window_order`): the windows are asked in
decreasing mean Eq. 1 score of their frames, ties broken by position (window order), and no
more once one is answered correctly; the oracle correctness ("any window correct") is the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tempcore.records import FrameSet
from tempcore.selection._common import Frames, SelectionError, check_k, strategy

DEFAULT_MAX_WINDOWS = 50


def _positive(value: object, name: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise SelectionError(f"{where}: {name} must be a positive int, not {value!r}")
    return int(value)


def window_starts(
    n_frames: int, k: int, *, stride: int | None = None, max_windows: int = DEFAULT_MAX_WINDOWS
) -> np.ndarray:
    """First-frame positions of the oracle windows for a video of ``n_frames`` frames (see module doc).

    ``len(window_starts(...))`` is the number of windows a sample has, e.g. to plan one
    condition per window.
    """
    where = "oracle"
    kk = check_k(k, where=where)
    step = kk if stride is None else _positive(stride, "stride", where)
    cap = _positive(max_windows, "max_windows", where)
    n = int(n_frames)
    if n <= kk:
        return np.zeros(1 if n > 0 else 0, dtype=np.int64)
    starts = np.arange(0, n - kk + 1, step, dtype=np.int64)
    if starts[-1] != n - kk:
        starts = np.append(starts, n - kk)
    count = starts.shape[0]
    if count <= cap:
        return starts
    if cap == 1:
        return starts[[(count - 1) // 2]]
    j = np.arange(cap, dtype=np.int64)
    return starts[(2 * j * (count - 1) + (cap - 1)) // (2 * (cap - 1))]


@strategy("oracle", needs_scores=False)
def oracle(
    frames: Frames, *, stride: int | None = None, max_windows: int = DEFAULT_MAX_WINDOWS
) -> list[FrameSet]:
    """One FrameSet per oracle window, in window order; each holds K consecutive frames, chronologically.

    Example: 10 frames, K=4, S=4 -> starts 0, 4 and the end-aligned 6 -> windows
    [0-3], [4-7], [6-9]. ``scores`` and ``seed`` are ignored.
    """
    starts = window_starts(frames.n, frames.k, stride=stride, max_windows=max_windows)
    width = min(frames.k, frames.n)
    positions = starts[:, None] + np.arange(width, dtype=np.int64)[None, :]
    indices = frames.indices(positions).tolist()
    times = frames.t[positions].tolist()
    return [FrameSet(tuple(i), tuple(t), frames.k) for i, t in zip(indices, times)]


def window_order(windows: Sequence[FrameSet], scores: np.ndarray | None) -> list[int]:
    """The order an early-stopped oracle asks ``windows`` in: window indices (positions in
    ``windows``, which :func:`oracle` lists in position order) by decreasing mean of ``scores``
    over each window's frames (``FrameSet.indices`` index ``scores``), ties by position.

    ``scores=None`` (no scores in the ordering mode, e.g. a grounding sample under ``qa``, which has
    no answer text) gives position order. A window without frames sorts last. The mean is a float64
    ``np.mean``, so the order is the same on every run for the same scores.

    Example: windows [0-3], [4-7], [6-9] with scores 0,0,0,0, 1,1,1,1, 1,1 -> means 0, 1, 1 ->
    order [1, 2, 0].
    """
    if scores is None:
        return list(range(len(windows)))
    s = np.asarray(scores, dtype=np.float64)
    means = []
    for w in windows:
        idx = np.asarray(w.indices, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= s.shape[0]):
            raise SelectionError(f"oracle: a window shows frame {int(idx.max())} but only {s.shape[0]} frames are scored")
        means.append(float(np.mean(s[idx])) if idx.size else -np.inf)
    return sorted(range(len(windows)), key=lambda i: (-means[i], i))
