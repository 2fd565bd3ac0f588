"""Stop signals: SIGTERM (what SLURM and Kubernetes send) and SIGHUP handled as Ctrl-C is.

Python turns SIGINT into :class:`KeyboardInterrupt` in the main thread; :func:`stop_signals` turns
SIGTERM and SIGHUP into :class:`Stopped`, a ``KeyboardInterrupt`` too, so every path that stops
cleanly on Ctrl-C (the answering threads stop taking work, what is answered is committed, the run
writes its summary and table) does the same on them. :func:`exit_code` is the shell's convention,
128 + the signal's number: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

#: the signals :func:`stop_signals` handles (SIGHUP where the platform has it)
HANDLED = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Stopped(KeyboardInterrupt):
    """A stop signal other than Ctrl-C, raised in the main thread where it arrived."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    def __reduce__(self) -> tuple[type[Stopped], tuple[int]]:
        return type(self), (self.signum,)


def signal_name(exc: BaseException) -> str:
    """The signal that stopped the work: ``SIGINT`` for a plain KeyboardInterrupt."""
    return signal.Signals(exc.signum).name if isinstance(exc, Stopped) else "SIGINT"


def exit_code(exc: BaseException) -> int:
    """128 + the signal's number (130 for Ctrl-C)."""
    return 128 + (exc.signum if isinstance(exc, Stopped) else int(signal.SIGINT))


@contextmanager
def stop_signals() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Stopped` in the main thread (the handlers
    before are restored after it). Once one has been raised, a second stop signal is ignored, so
    that the summary and table are written; Ctrl-C still interrupts. Outside the main thread it
    does nothing (Python runs signal handlers there only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = False

    def handle(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        raise Stopped(signum)

    before = {s: signal.signal(s, handle) for s in HANDLED}
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h)


__all__ = ["HANDLED", "Stopped", "exit_code", "signal_name", "stop_signals"]
