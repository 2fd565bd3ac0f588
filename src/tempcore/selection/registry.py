"""The strategy registry and ``select``: a Condition (+ frames and scores) -> the frames shown.

:data:`STRATEGIES` is a :class:`tempcore.registry.Registry` of strategy functions. Add one with
``@strategy(name, needs_scores=..., register=True)`` (:func:`tempcore.selection.strategy`), with
``STRATEGIES.register(name, fn)``, or from another package through the ``tempcore.strategies``
entry-point group.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from tempcore.records import Condition, FrameSet
from tempcore.registry import did_you_mean
from tempcore.selection import windows
from tempcore.selection._common import STRATEGIES as STRATEGIES  # its home is _common; looked up here
from tempcore.selection._common import SelectionError, Strategy, prepare

TYPO_CUTOFF = 0.75
"""How close (:func:`difflib.get_close_matches` ratio) an unregistered strategy name must be to a
registered one to be taken for a typo of it rather than another toolkit's strategy."""


def canonical_strategy(name: str) -> str:
    """The registered spelling of a strategy name read from a table made elsewhere.

    Matched ignoring case and surrounding blanks (``MaxProb`` -> ``maxprob``). A name that is not
    registered but close to a registered one (``maxprb``) raises :class:`SelectionError` with the
    suggestion: a typo that would otherwise make a group of its own. A name far from every
    registered one is returned as given: a strategy of another toolkit (a model that samples its own
    frames), which only the analyses that need no known strategy use.
    """
    if name in STRATEGIES:
        return name
    lowered = name.strip().lower()
    if lowered in STRATEGIES:
        return lowered
    known = sorted(STRATEGIES)
    hint = did_you_mean(lowered, known, n=2, cutoff=TYPO_CUTOFF)
    if hint:
        raise SelectionError(f"unknown strategy {name!r}{hint} (known: {', '.join(known)}; names are matched ignoring case)")
    return name


REORDERING = frozenset({"shuffled", "reversed"})
"""Strategies that show a base strategy's frames (named by the variant) in another order."""


def get_strategy(name: str) -> Strategy:
    """The strategy called ``name``; an unknown name raises SelectionError with the closest names."""
    return STRATEGIES.get(name)  # type: ignore[no-any-return]


def needs_scores(strategy: str, variant: str | None = None) -> bool:
    """Whether ``strategy`` (with ``variant``) ranks frames by score, so a run must score the frames.

    The one source of that fact: the ``needs_scores`` attribute :func:`tempcore.selection.strategy`
    gives a strategy (every built-in has it), and for ``shuffled`` / ``reversed`` that of their base.
    """
    if strategy in REORDERING:
        return needs_scores((variant or "uniform").split(":")[0])
    return bool(getattr(STRATEGIES.get(strategy, None), "needs_scores", False))  # unknown: selection says so


def score_based() -> frozenset[str]:
    """Every registered strategy that ranks frames by score (:func:`needs_scores`), plug-ins included
    (computed when called: registering a strategy never depends on this)."""
    return frozenset(name for name in STRATEGIES if needs_scores(name))


def _accepted(fn: Strategy) -> tuple[set[str], bool]:
    sig = inspect.signature(fn)
    names = {p.name for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
    return names, var_kw


def call_strategy(
    name: str,
    timestamps: Any,
    scores: Any,
    k: int | None,
    *,
    seed: int = 0,
    sample_id: str = "",
    variant: str | None = None,
    **params: Any,
) -> FrameSet | list[FrameSet]:
    """Call strategy ``name``, refusing (SelectionError) a variant or parameter it does not take.

    ``k=None`` (a condition whose K is unknown) is refused with a SelectionError by the strategy."""
    fn = get_strategy(name)
    accepted, open_ended = _accepted(fn)
    if variant is not None:
        if "variant" not in accepted:
            raise SelectionError(f"sample {sample_id!r}: {name} has no variants (got {variant!r})")
        params["variant"] = variant
    unknown = sorted(set(params) - accepted) if not open_ended else []
    if unknown:
        known = sorted(accepted - {"seed", "sample_id"})
        raise SelectionError(
            f"sample {sample_id!r}: {name} takes no parameter(s) {unknown} "
            f"(it takes: {', '.join(known) if known else 'none'})"
        )
    return fn(timestamps, scores, k, seed=seed, sample_id=sample_id, **params)


def select(
    condition: Condition,
    timestamps: Any,
    scores: Any,
    *,
    sample_id: str,
    **params: Any,
) -> FrameSet | list[FrameSet]:
    """The frames ``condition`` shows for one sample.

    Uses ``condition.strategy``, ``.k``, ``.seed`` and ``.variant``; strategy parameters
    (``stride`` / ``max_windows`` for oracle, ``t1`` / ``t2`` / ``max_depth`` / ``top_m`` for aks,
    ``alpha`` / ``grid`` for bolt, a base strategy's parameters for shuffled / reversed) come
    as keyword arguments; one the strategy does not take is an error, not ignored. For
    ``oracle``, ``condition.window`` picks one window (a FrameSet); without it, the list of all
    windows is returned. ``condition.window`` on another strategy is an error.
    """
    name = condition.strategy
    if condition.window is not None:
        if name != "oracle":
            raise SelectionError(
                f"sample {sample_id!r}: condition {condition.key!r} sets window but {name} has no windows"
            )
        unknown = sorted(set(params) - {"stride", "max_windows"})
        if unknown:
            raise SelectionError(
                f"sample {sample_id!r}: oracle takes no parameter(s) {unknown} (it takes: max_windows, stride)"
            )
        return oracle_window(timestamps, scores, condition.k, condition.window, sample_id=sample_id,
                             **params)
    return call_strategy(name, timestamps, scores, condition.k, seed=condition.seed, sample_id=sample_id,
                         variant=condition.variant, **params)


def oracle_window(
    timestamps: Any,
    scores: Any,
    k: int | None,
    window: int,
    *,
    sample_id: str = "",
    stride: int | None = None,
    max_windows: int = windows.DEFAULT_MAX_WINDOWS,
) -> FrameSet:
    """Oracle window number ``window`` (0-based, among the windows kept after subsampling); ``k=None``
    (K unknown) is refused with a SelectionError."""
    frames = prepare(timestamps, scores, k, strategy="oracle", sample_id=sample_id, needs_scores=False)
    try:
        starts = windows.window_starts(frames.n, frames.k, stride=stride, max_windows=max_windows)
    except SelectionError as exc:
        raise SelectionError(f"{frames.where}: {exc}") from None
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or not 0 <= window < len(starts):
        raise SelectionError(
            f"{frames.where}: window {window!r} out of range (this video has {len(starts)} window(s))"
        )
    positions = starts[window] + np.arange(min(frames.k, frames.n))
    return frames.frameset(positions)
