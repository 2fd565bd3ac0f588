"""Where the time goes: a small timing collector for the demo (``tempcore demo --profile``) and the runner.

Sections
    ``with section("encode"): ...`` times a block under a name. Sections nest: a section's time is
    *exclusive* (its children's time is subtracted from it), so the sections of one thread add up
    to that thread's wall time. Each section is recorded under its path (the names of the open
    sections of its thread, outermost first), e.g. ``run/answer zoo-mean``.
    :func:`add` records seconds measured by hand (a generator that decodes between its yields) and
    subtracts them from the enclosing section of the same thread, as a child section would be.
Threads
    The thread that called :func:`collect` is the *main* thread: its sections split the wall time.
    Work in other threads (the scoring pipeline decodes and preprocesses frames in background
    threads while the encoder runs) overlaps the main thread; it is recorded under the thread's own
    open sections (usually none, so under its name alone) and reported apart as "alongside".
Cost when off
    With no collector active :func:`section` returns one shared do-nothing context manager and
    :func:`add` returns at once (one global read each), so instrumented code pays nothing that
    matters; sections are placed around batches and passes, never around single frames.
One collector at a time: :func:`collect` while another is active raises ``RuntimeError``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Profile", "active", "add", "collect", "format_profile", "section"]


@dataclass
class Profile:
    """What :func:`collect` gathered: exclusive seconds and entry counts per (thread, path)."""

    wall: float = 0.0
    #: path -> exclusive seconds in the main thread (in the order first entered)
    main: dict[str, float] = field(default_factory=dict)
    #: path -> seconds in other threads
    alongside: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def by_name(self) -> dict[str, float]:
        """Seconds per section name (the last part of a path), main thread and other threads summed."""
        out: dict[str, float] = {}
        for table in (self.main, self.alongside):
            for path, seconds in table.items():
                name = path.rsplit("/", 1)[-1]
                out[name] = out.get(name, 0.0) + seconds
        return out

    def to_json(self) -> dict[str, Any]:
        return {"wall_s": round(self.wall, 3),
                "main_s": {k: round(v, 3) for k, v in self.main.items()},
                "alongside_s": {k: round(v, 3) for k, v in self.alongside.items()},
                "counts": dict(self.counts),
                "by_name_s": {k: round(v, 3) for k, v in self.by_name().items()}}


class _Frame:
    __slots__ = ("children", "path", "start")

    def __init__(self, path: str, start: float) -> None:
        self.path, self.start, self.children = path, start, 0.0


class _Collector:
    def __init__(self) -> None:
        self.profile = Profile()
        self.main_thread = threading.get_ident()
        self.lock = threading.Lock()
        self.local = threading.local()

    def stack(self) -> list[_Frame]:
        st: list[_Frame] | None = getattr(self.local, "stack", None)
        if st is None:
            st = self.local.stack = []
        return st

    def record(self, path: str, seconds: float) -> None:
        table = self.profile.main if threading.get_ident() == self.main_thread else self.profile.alongside
        with self.lock:
            table[path] = table.get(path, 0.0) + seconds
            self.profile.counts[path] = self.profile.counts.get(path, 0) + 1


_ACTIVE: _Collector | None = None
_NOOP = contextlib.nullcontext()


@contextlib.contextmanager
def _timed(collector: _Collector, name: str) -> Iterator[None]:
    stack = collector.stack()
    path = f"{stack[-1].path}/{name}" if stack else name
    if threading.get_ident() == collector.main_thread and path not in collector.profile.main:
        with collector.lock:  # listed in the order entered, so a parent comes before its children
            collector.profile.main.setdefault(path, 0.0)
    frame = _Frame(path, time.perf_counter())
    stack.append(frame)
    try:
        yield
    finally:
        elapsed = time.perf_counter() - frame.start
        stack.pop()
        if stack:
            stack[-1].children += elapsed
        collector.record(path, elapsed - frame.children)


def active() -> bool:
    """Whether a profile is being collected."""
    return _ACTIVE is not None


def section(name: str) -> contextlib.AbstractContextManager[Any]:
    """A context manager timing its block under ``name`` (nothing at all when no collector is active)."""
    collector = _ACTIVE
    if collector is None:
        return _NOOP
    return _timed(collector, name)


def add(name: str, seconds: float) -> None:
    """Record ``seconds`` measured by hand under ``name`` (as a child of the thread's open section)."""
    collector = _ACTIVE
    if collector is None:
        return
    stack = collector.stack()
    if stack:
        stack[-1].children += seconds
    collector.record(f"{stack[-1].path}/{name}" if stack else name, seconds)


@contextlib.contextmanager
def collect() -> Iterator[Profile]:
    """Collect every :func:`section` / :func:`add` of this process until the block ends; yields the
    :class:`Profile`, complete (``wall`` set) once the block has ended."""
    global _ACTIVE
    if _ACTIVE is not None:
        raise RuntimeError("a profile is already being collected")
    collector = _Collector()
    _ACTIVE = collector
    start = time.perf_counter()
    try:
        yield collector.profile
    finally:
        collector.profile.wall = time.perf_counter() - start
        _ACTIVE = None


def format_profile(profile: Profile, *, extra: dict[str, str] | None = None) -> str:
    """The table ``tempcore demo --profile`` prints: per section name (decode, encode, each answerer,
    diagnostics, report, ...) its seconds and share of the wall time, then the main thread's tree
    of sections (exclusive seconds) and the work done alongside in background threads."""
    wall = profile.wall or 1e-9
    lines = [f"where the time goes: {profile.wall:.1f} s wall"]
    names = profile.by_name()
    width = max([len(n) for n in names] + [len(p.rsplit("/", 1)[-1]) + 2 * p.count("/") for p in profile.main] + [10])
    lines.append("  by section (seconds; background-thread work overlaps the main thread, so shares can sum past 100%):")
    for name, seconds in sorted(names.items(), key=lambda kv: -kv[1]):
        lines.append(f"    {name:<{width}} {seconds:8.2f} s {100 * seconds / wall:5.1f}%")
    lines.append("  main thread, nested (exclusive seconds: children are not counted in their parent):")
    for path, seconds in profile.main.items():
        depth = path.count("/")
        label = "  " * depth + path.rsplit("/", 1)[-1]
        lines.append(f"    {label:<{width}} {seconds:8.2f} s {100 * seconds / wall:5.1f}%  x{profile.counts.get(path, 0)}")
    other = profile.wall - sum(profile.main.values())
    lines.append(f"    {'(not in a section)':<{width}} {other:8.2f} s {100 * other / wall:5.1f}%")
    if profile.alongside:
        lines.append("  alongside, in background threads:")
        for path, seconds in profile.alongside.items():
            lines.append(f"    {path:<{width}} {seconds:8.2f} s {100 * seconds / wall:5.1f}%  x{profile.counts.get(path, 0)}")
    for key, value in (extra or {}).items():
        lines.append(f"  {key}: {value}")
    return "\n".join(lines)
