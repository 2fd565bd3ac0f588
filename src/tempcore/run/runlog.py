"""Logging as an operator reads it: the ``tempcore`` logger, its terminal handler and a run's log file.

Every module logs through ``logging.getLogger(__name__)`` (children of ``tempcore``). Two kinds of
handler read them:

* the terminal: :func:`configure` (the CLI's ``--log-level``, default ``warning``) adds one handler
  on stderr at that level. The narrative of a run (what ``tempcore run`` prints on stdout: plans,
  skipped and stored counts, the summary) is printed, not logged there twice;
* the run folder: :func:`run_log` writes ``run.log`` in the run folder at every level (HTTP
  retries, every failed request, the resume decisions, the narrative), appending across resumes.
  It takes the records of its own run only: those logged in the run's context or in the threads it
  starts (:func:`tempcore.run.ordered.in_context`), so two runs in one process keep separate logs.
"""

from __future__ import annotations

import contextvars
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: the file a run writes its log to, in its run folder
RUN_LOG_FILENAME = "run.log"
#: what ``--log-level`` takes
LEVELS = ("debug", "info", "warning", "error")

ROOT = "tempcore"
_SHOWN = "tempcore_shown"
#: ``extra=`` of a record the user has been shown otherwise (the narrative, an error the CLI prints):
#: the run's log file takes it, the terminal handler leaves it out
SHOWN = {_SHOWN: True}
_RUN: contextvars.ContextVar[object | None] = contextvars.ContextVar("tempcore_run_log", default=None)
_log = logging.getLogger(f"{ROOT}.run")
_open_lock = threading.Lock()
_open_logs: list[Any] = []  # the level before the first open run log, then the open runs' handlers


class _Terminal(logging.StreamHandler):  # type: ignore[type-arg]
    """The stderr handler :func:`configure` installs (one at most): it writes to ``sys.stderr`` as it
    is when a record comes (a caller that swaps stderr, as tests do, is followed)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def configure(level: str = "warning") -> None:
    """Show the ``tempcore`` loggers' records of ``level`` and above on stderr (the narrative of a
    run, printed already, is not repeated). Called again, it changes the level."""
    if level not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}, not {level!r}")
    root = logging.getLogger(ROOT)
    handler = next((h for h in root.handlers if isinstance(h, _Terminal)), None)
    if handler is None:
        handler = _Terminal()
        handler.setFormatter(logging.Formatter("tempcore: %(levelname)s: %(message)s"))
        handler.addFilter(lambda r: not getattr(r, _SHOWN, False))
        root.addHandler(handler)
    handler.setLevel(level.upper())
    with _open_lock:  # while a run's log is open (every level), the level to restore after it
        if _open_logs:
            _open_logs[0] = _letting_through(_open_logs[0], handler.level)
        else:
            root.setLevel(_letting_through(root.level, handler.level))


def _letting_through(now: int, wanted: int) -> int:
    """The package logger's level that lets records of ``wanted`` through: ``now`` when it already
    does (never raised: a caller's own logging, pytest's caplog say, keeps what it asked for)."""
    effective = now if now != logging.NOTSET else logging.getLogger().getEffectiveLevel()
    return wanted if wanted < effective else now


@contextmanager
def run_log(folder: Path) -> Iterator[Path]:
    """Append every record of this run (its context and the threads it starts) to
    ``folder / run.log``, at every level, with times; yields the file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / RUN_LOG_FILENAME
    marker = object()
    token = _RUN.set(marker)
    handler = logging.FileHandler(path, encoding="utf-8", delay=False)
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(lambda _r: _RUN.get() is marker)
    root = logging.getLogger(ROOT)
    with _open_lock:
        if not _open_logs:
            _open_logs.append(root.level)  # restored when the last run log closes
        _open_logs.append(handler)
        root.addHandler(handler)
        root.setLevel(logging.DEBUG)
    try:
        yield path
    finally:
        with _open_lock:
            root.removeHandler(handler)
            _open_logs.remove(handler)
            if len(_open_logs) == 1:
                root.setLevel(_open_logs.pop())
        handler.close()
        _RUN.reset(token)


def narrated(log: Callable[[str], None]) -> Callable[[str], None]:
    """``log``, each line also recorded (INFO, ``tempcore.run``) for the run's log file; the
    terminal handler leaves these out, since ``log`` showed them already."""

    def say(message: str) -> None:
        log(message)
        _log.info(message, extra=SHOWN)

    return say


__all__ = ["LEVELS", "RUN_LOG_FILENAME", "SHOWN", "configure", "narrated", "run_log"]
