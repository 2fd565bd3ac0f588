"""Shared pieces of the selection strategies: the error, seeds, input checks, small numpy helpers,
and the :func:`strategy` decorator.

Every strategy works on the frames in chronological order. :func:`prepare` validates the
inputs once and, if the timestamps are not already non-decreasing, sorts them (stably, so
frames with equal timestamps keep their index order); the strategies then pick *positions*
in that order and :meth:`Frames.frameset` maps them back to the caller's frame indices.
:func:`strategy` turns a kernel over :class:`Frames` into a strategy with the common signature,
owning that preparation and the ``sample 'id': name:`` prefix of its errors.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from tempcore.errors import TempcoreError
from tempcore.records import FrameSet
from tempcore.registry import GROUPS, Registry, did_you_mean


class SelectionError(TempcoreError):
    """Frame selection refused its input (empty video, NaN score, bad K, ...); the message says why."""


Strategy = Callable[..., "FrameSet | list[FrameSet]"]


def _unknown_strategy(name: str, known: list[str]) -> SelectionError:
    return SelectionError(f"unknown strategy {name!r}{did_you_mean(name, known, cutoff=0.5)} (known: {', '.join(known)})")


def _check_strategy(name: str, fn: Any) -> None:
    if not callable(fn):
        raise SelectionError(f"strategy {name!r}: {fn!r} is not callable")


STRATEGIES: Registry[Strategy] = Registry(
    "strategy", group=GROUPS["strategies"], check=_check_strategy, unknown=_unknown_strategy, error=SelectionError
)
"""Every strategy by name. Each is ``f(timestamps, scores, k, *, seed, sample_id, **params)``."""

def derive_seed(global_seed: int, sample_id: str, salt: str = "") -> int:
    """A per-sample seed in ``[0, 2**64)``, stable across processes, machines and Python versions.

    SHA-256 of ``"tempcore-seed\\0{global_seed}\\0{sample_id}\\0{salt}"`` (UTF-8), first 8 bytes,
    big-endian. Python's ``hash()`` is salted per process and is never used. ``salt``
    separates streams that must not coincide for the same sample (the strategies use
    ``""`` for ``random``, ``"single"`` and ``"shuffled"``).
    """
    if isinstance(global_seed, bool) or not isinstance(global_seed, numbers.Integral):
        raise SelectionError(f"seed must be an int, not {global_seed!r}")
    if not isinstance(sample_id, str) or not isinstance(salt, str):
        raise SelectionError(f"sample_id and salt must be str, not {sample_id!r} / {salt!r}")
    text = f"tempcore-seed\0{int(global_seed)}\0{sample_id}\0{salt}".encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big")


def random_keys(seed: int, n: int) -> np.ndarray:
    """``n`` raw 64-bit outputs of PCG64 seeded with ``seed`` (via NumPy's SeedSequence).

    Raw PCG64 output is fixed by the algorithm itself, unlike ``Generator`` methods such as
    ``choice`` or ``permutation`` whose streams NumPy may change between releases, so the
    random strategies built on these keys give the same frames on every NumPy version.
    """
    return np.random.PCG64(seed).random_raw(n)


def check_k(k: object, *, where: str) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k <= 0:
        raise SelectionError(f"{where}: K must be a positive int, not {k!r}")
    return int(k)


def _finite_1d(values: object, name: str, where: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise SelectionError(f"{where}: {name} are not numbers ({exc})") from None
    if arr.ndim != 1:
        raise SelectionError(f"{where}: {name} must be a 1-D array, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise SelectionError(f"{where}: {name}[{bad}] is {arr[bad]} (NaN and inf are refused)")
    return arr


@dataclass(frozen=True)
class Frames:
    """Validated candidate frames in chronological order.

    ``t`` / ``s``: timestamps and scores (``s`` is ``None`` when none were given), sorted by
    time; ``perm[p]`` is the caller's index of position ``p`` (``None`` when the input was
    already chronological, so position == index).
    """

    t: np.ndarray
    s: np.ndarray | None
    perm: np.ndarray | None
    k: int
    where: str

    @property
    def n(self) -> int:
        return int(self.t.shape[0])

    def indices(self, positions: np.ndarray) -> np.ndarray:
        return positions if self.perm is None else self.perm[positions]

    def frameset(self, positions: np.ndarray, requested: int | None = None) -> FrameSet:
        """FrameSet of the frames at ``positions``, shown in the order given."""
        positions = np.asarray(positions, dtype=np.int64)
        return FrameSet(
            tuple(self.indices(positions).tolist()),
            tuple(self.t[positions].tolist()),
            requested=self.k if requested is None else requested,
        )

    def chronological(self, positions: np.ndarray, requested: int | None = None) -> FrameSet:
        return self.frameset(np.sort(positions), requested)

    def crop(self, start: float | None, end: float | None) -> Frames:
        """The frames with ``start <= t <= end`` (seconds; either bound may be ``None``), keeping the
        caller's indices: the sample's ``[start, end]`` segment (TVBench's bound) before a strategy runs."""
        if start is None and end is None:
            return self
        keep = np.ones(self.n, dtype=bool)
        if start is not None:
            keep &= self.t >= float(start)
        if end is not None:
            keep &= self.t <= float(end)
        pos = np.flatnonzero(keep)
        if pos.size == 0:
            raise SelectionError(f"{self.where}: no frame inside the segment [{start}, {end}]")
        return Frames(self.t[pos], None if self.s is None else self.s[pos], self.indices(pos), self.k, self.where)


def prepare(
    timestamps: object,
    scores: object,
    k: object,
    *,
    strategy: str,
    sample_id: str,
    needs_scores: bool,
) -> Frames:
    """Validate one selection call; raise :class:`SelectionError` naming the sample and the reason."""
    where = f"sample {sample_id!r}: {strategy}"
    kk = check_k(k, where=where)
    if timestamps is None:
        raise SelectionError(f"{where}: no timestamps given")
    t = _finite_1d(timestamps, "timestamps", where)
    if t.shape[0] == 0:
        raise SelectionError(f"{where}: the video has no frames (empty timestamps)")
    s: np.ndarray | None = None
    if scores is not None:
        s = _finite_1d(scores, "scores", where)
        if s.shape[0] != t.shape[0]:
            raise SelectionError(
                f"{where}: {s.shape[0]} scores for {t.shape[0]} timestamps (lengths must match)"
            )
    elif needs_scores:
        raise SelectionError(f"{where}: this strategy ranks frames by score, but no scores were given")
    perm: np.ndarray | None = None
    if t.shape[0] > 1 and not (t[1:] >= t[:-1]).all():
        perm = np.argsort(t, kind="stable")
        t = t[perm]
        if s is not None:
            s = s[perm]
    return Frames(t, s, perm, kk, where)


def top_r(values: np.ndarray, r: int) -> np.ndarray:
    """Positions of the ``r`` largest ``values``, ties broken by lower position; sorted by position.

    O(n): one ``np.partition`` finds the r-th largest value ``v``; every value above ``v`` is
    taken, then the earliest values equal to ``v`` fill the rest.
    """
    n = values.shape[0]
    if r >= n:
        return np.arange(n)
    if r <= 0:
        return np.empty(0, dtype=np.int64)
    v = np.partition(values, n - r)[n - r]
    above = np.flatnonzero(values > v)
    equal = np.flatnonzero(values == v)[: r - above.shape[0]]
    return np.sort(np.concatenate([above, equal]))


R = TypeVar("R", bound="FrameSet | list[FrameSet]")  # what a strategy kernel returns


def strategy(
    name: str, *, needs_scores: bool, register: bool = False
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Make a selection strategy from a kernel over validated :class:`Frames`.

    The kernel is ``kernel(frames, **params)``: ``frames`` holds the candidate frames in time order
    (``frames.t``, ``frames.s``, ``frames.k``, ``frames.n``); it returns ``frames.frameset(positions)``
    (or a list of FrameSets). Its keyword-only parameters are the strategy's parameters; it receives
    ``seed`` and ``sample_id`` only if it declares them. The strategy made from it has the common
    signature ``f(timestamps, scores, k, *, seed=0, sample_id="", **params)``: it calls
    :func:`prepare` (``needs_scores``: refuse a call without scores) and prefixes every
    :class:`SelectionError` the kernel raises with ``sample 'id': name:`` (once). The strategy
    carries ``needs_scores`` and ``strategy_name``; ``register=True`` also adds it to
    :data:`tempcore.selection.STRATEGIES` under ``name``.

    >>> @strategy("first", needs_scores=False)
    ... def first(frames: Frames) -> FrameSet:
    ...     return frames.frameset(np.arange(min(frames.k, frames.n)))
    """

    def wrap(kernel: Callable[..., R]) -> Callable[..., R]:
        sig = inspect.signature(kernel)
        params = list(sig.parameters.values())
        if not params or params[0].kind not in (
            inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD
        ):
            raise TypeError(f"strategy {name!r}: the kernel's first parameter must be the Frames")
        own = [p for p in params[1:] if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)]
        if len(own) != len(params) - 1:
            raise TypeError(f"strategy {name!r}: the kernel's parameters after the Frames must be keyword-only")
        wants = {p.name for p in own} & {"seed", "sample_id"}

        @functools.wraps(kernel)
        def run(timestamps: Any, scores: Any, k: int, *, seed: int = 0, sample_id: str = "", **kw: Any) -> R:
            frames = prepare(timestamps, scores, k, strategy=name, sample_id=sample_id, needs_scores=needs_scores)
            if "seed" in wants:
                kw["seed"] = seed
            if "sample_id" in wants:
                kw["sample_id"] = sample_id
            try:
                return kernel(frames, **kw)
            except SelectionError as exc:
                message = str(exc)
                if message.startswith(frames.where):
                    raise
                raise SelectionError(f"{frames.where}: {message}") from None

        keyword = inspect.Parameter.KEYWORD_ONLY
        positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
        common = [
            inspect.Parameter("timestamps", positional, annotation="np.ndarray"),
            inspect.Parameter("scores", positional, annotation="np.ndarray | None"),
            inspect.Parameter("k", positional, annotation="int"),
            inspect.Parameter("seed", keyword, default=0, annotation="int"),
            inspect.Parameter("sample_id", keyword, default="", annotation="str"),
        ]
        rest = [p for p in own if p.name not in ("seed", "sample_id")]
        run.__signature__ = sig.replace(parameters=common + rest)  # type: ignore[attr-defined]
        run.needs_scores = needs_scores  # type: ignore[attr-defined]
        run.strategy_name = name  # type: ignore[attr-defined]
        if register:
            STRATEGIES.register(name, run)
        return run

    return wrap
