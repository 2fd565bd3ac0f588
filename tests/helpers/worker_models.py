"""Model factories for the tests of model worker processes (``model_processes``, tempcore.models.hosted).

They are module-level functions, so they reach a worker by pickle (by reference), and they act in
the worker: recording the worker's pid, dying at a call, printing to standard output. Each reads its
instructions from environment variables, which the worker inherits from the test's process."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tempcore.models import load_model

PIDS_ENV = "TEMPCORE_TEST_WORKER_PIDS"
"""A file each loading worker appends its pid to (one line: ``pid model``)."""
DIE_ENV = "TEMPCORE_TEST_WORKER_DIE"
"""``MODEL:N``: the worker holding MODEL exits with status 7 at that model's N-th call."""


class _Wrapped:
    """A loaded model with extra behaviour around ``answer``; everything else is the model's."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self._calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def answer(self, requests: Sequence[Any], *, method: str = "generate") -> Any:
        self._calls += 1
        die = os.environ.get(DIE_ENV, "")
        if die:
            name, n = die.rsplit(":", 1)
            if name == self._model.name and self._calls == int(n):
                os._exit(7)
        print(f"{self._model.name}: call {self._calls}")  # standard output: must not break the pipe
        return self._model.answer(requests, method=method)


def recording_factory(spec: Any) -> Any:
    """``load_model(spec)``, noting the loading process's pid, dying or printing as the environment says."""
    model = load_model(spec)
    pids = os.environ.get(PIDS_ENV)
    if pids:
        with Path(pids).open("a") as f:
            f.write(f"{os.getpid()} {model.name}\n")
    return _Wrapped(model)


class Unpicklable(Exception):
    """An exception that does not survive pickling (its constructor needs two arguments)."""

    def __init__(self, a: str, b: str) -> None:
        super().__init__(f"{a}/{b}")


def failing_factory(spec: Any) -> Any:
    """Raises an exception that cannot be pickled back to the caller."""
    raise Unpicklable("no", "model")
