"""Models loaded and answered in a worker process (``model_processes: true``).

Several local models answering side by side in one process (``parallel_models``) share its
interpreter lock: torch releases it inside its kernels, but a VLM's image processor (PIL resizes,
numpy) and the Python around every layer hold it. Measured on a 2-core machine with two copies of
the zoo's Idefics3 (``zoo-idefics3``, batches of 64 requests of 8 frames, one torch thread each):
1.29x the throughput of one copy in two threads of one process, 1.94x in two processes.

A :class:`ModelHost` is one worker process (``python -c`` importing this module: nothing of the
caller's ``__main__`` is imported again, so a script without an ``if __name__ == "__main__"`` guard
is safe). It loads models with the caller's model factory (sent by pickle, so a module-level
function such as :func:`tempcore.models.load_model`; a closure is refused with a named error) and
answers their calls; :meth:`ModelHost.load` returns a :class:`HostedModel`, which is a
:class:`~tempcore.models.base.Model` whose ``answer`` sends the requests over a pipe and waits.

Choices:

- the worker runs as many torch threads as the caller had when the host started (torch's default
  when the caller had not imported torch), so a model computes the same numbers, to the last bit,
  in the worker as in the caller (tested);
- the worker inherits the environment and ``sys.path``; its standard output is redirected to its
  standard error (the pipe to the caller is a private copy of the original descriptor), so model
  code that prints cannot corrupt the protocol;
- it ignores SIGINT: an interrupt is the caller's to handle; the caller closes its hosts, and a
  worker whose caller has gone (its pipe closed) exits;
- an error raised while loading or answering comes back as the same exception where it pickles,
  else as :class:`~tempcore.models.base.ModelError` with its type, message and the worker's
  traceback; a worker that dies (killed, out of memory, a crash in native code) raises
  ``ModelError`` naming the model, the process and its exit status. A failed call is never an
  answer: the caller's run stops as for any model error, with what was committed kept.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import IO, Any

from tempcore import profiling
from tempcore.models.base import Model, ModelError, ModelRequest, ModelResponse, ModelSpec

Factory = Callable[[ModelSpec], Model]

_BOOT = "from tempcore.models.hosted import serve; serve()"
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding the tempcore package
WARM_MODULES = ("torch", "transformers.modeling_utils", "transformers.processing_utils",
                "transformers.image_processing_utils")
"""What a worker asked to warm imports besides the backends' own modules (where installed): the
bulk of a first model load's time (about 4 s of 4.5 s for the zoo's Idefics3 on this machine)."""


def load_quietly(factory: Callable[[ModelSpec], Model], spec: ModelSpec, progress: bool) -> Model:
    """``factory(spec)``, timed as ``load models`` (:mod:`tempcore.profiling`); with progress off,
    transformers' "Loading weights" bars are off too (not for a served model, whose spec does not
    ``loads_weights``: importing transformers only to silence its bars would cost seconds)."""
    with profiling.section("load models"):
        if progress or not spec.loads_weights:
            return factory(spec)
        from tempcore.encoders.hf import progress_bars

        with progress_bars(False):
            return factory(spec)


class ModelHost:
    """One worker process that loads models (:meth:`load`) and answers their calls.

    Calls go one at a time (a lock); a caller with several threads gives each its own host.
    ``close`` ends the process (also on an interrupt); a host is a context manager."""

    def __init__(self, *, torch_threads: int | None = None, warm: Sequence[str] = ()) -> None:
        """Start the worker. ``torch_threads``: ``torch.set_num_threads`` in the worker (``None``: the
        caller's current setting when it has imported torch, else torch's default). ``warm``: model
        backends whose modules the worker imports at once, while the caller goes on (a run starts its
        hosts before scoring the frames, so the imports overlap the scoring)."""
        if torch_threads is None and "torch" in sys.modules:
            torch_threads = int(sys.modules["torch"].get_num_threads())
        self._lock = threading.Lock()
        self._next = 0
        env = dict(os.environ)  # the worker imports this very tempcore, wherever it was imported from
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-c", _BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
        )
        self._send(("init", list(sys.path), torch_threads, list(warm)))

    @property
    def pid(self) -> int | None:
        """The worker's process id (``None`` once closed)."""
        return None if self._proc is None else self._proc.pid

    def load(self, spec: ModelSpec, factory: Factory, *, quiet: bool = True) -> HostedModel:
        """Load ``factory(spec)`` in the worker (``quiet``: transformers' loading bars off there)."""
        try:
            pickle.dumps(factory)
        except Exception as exc:  # noqa: BLE001 - any pickling failure means it cannot be sent
            raise ModelError(
                f"model {spec.display_name}: model_processes loads models in worker processes, and the "
                f"model factory {factory!r} cannot be sent to one ({type(exc).__name__}: {exc}); give a "
                "module-level function (the default, tempcore.models.load_model, is one)") from exc
        with self._lock:
            self._next += 1
            handle = self._next
            info = self._call(spec.display_name, ("load", handle, spec, factory, quiet))
        return HostedModel(self, handle, info)

    def call(self, name: str, message: tuple[Any, ...]) -> Any:
        """Send one message for model ``name`` and return the worker's answer (raising its error)."""
        with self._lock:
            return self._call(name, message)

    def _call(self, name: str, message: tuple[Any, ...]) -> Any:
        proc = self._proc
        if proc is None:
            raise ModelError(f"model {name}: its worker process was closed")
        try:
            self._send(message)
            status, value = pickle.load(proc.stdout)  # type: ignore[arg-type]  # stdout is a pipe
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            raise ModelError(f"model {name}: its worker process (pid {proc.pid}) "
                             f"{_ended(proc)} ({type(exc).__name__})") from None
        if status == "ok":
            return value
        if isinstance(value, BaseException):
            raise value
        raise ModelError(f"model {name}: {value}")

    def _send(self, message: tuple[Any, ...]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)  # whole first: a message that
        self._proc.stdin.write(data)  # does not pickle fails here, before a byte reaches the pipe
        self._proc.stdin.flush()

    def close(self) -> None:
        """End the worker (its models with it): the pipe is closed, then the process is waited for
        (killed after 10 s). :func:`close_all` closes several at once."""
        close_all([self])

    def _hang_up(self) -> subprocess.Popen[bytes] | None:
        proc, self._proc = self._proc, None
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
        return proc

    def __enter__(self) -> ModelHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # a host dropped without close (an error path): no orphan process
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def close_all(hosts: Sequence[ModelHost]) -> None:
    """Close ``hosts``: every pipe first, so the workers end together, then wait for each."""
    for proc in [p for p in (h._hang_up() for h in hosts) if p is not None]:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _ended(proc: subprocess.Popen[bytes]) -> str:
    """How a worker ended: its exit status, or the signal that killed it."""
    try:
        code = proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return "stopped answering"
    if code < 0:
        return f"was killed by signal {-code}"
    return f"exited with status {code}"


class HostedModel:
    """A model loaded in a :class:`ModelHost`: the :class:`~tempcore.models.base.Model` interface,
    each ``answer`` one round trip (the requests' frames are pickled; frames shared by requests,
    such as a sample's under its option rotations, are sent once per call)."""

    def __init__(self, host: ModelHost, handle: int, info: dict[str, Any]) -> None:
        self._host = host
        self._handle = handle
        self.name: str = info["name"]
        self.revision: str | None = info["revision"]
        self.supports_option_scores: bool = info["supports_option_scores"]
        self._open = True

    def answer(self, requests: Sequence[ModelRequest], *, method: str = "generate") -> list[ModelResponse]:
        responses: list[ModelResponse] = self._host.call(self.name, ("answer", self._handle, list(requests), method))
        return responses

    def close(self) -> None:
        """Drop the model in the worker (the worker stays for the next model)."""
        if self._open:
            self._open = False
            try:
                self._host.call(self.name, ("close", self._handle))
            except ModelError:
                pass  # the worker is gone: nothing left to drop

    def __repr__(self) -> str:
        return f"HostedModel(name={self.name!r}, pid={self._host.pid})"


# --- the worker ----------------------------------------------------------------------------------


def serve() -> None:
    """The worker's loop: read a message from standard input, answer on the original standard output."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what model code prints goes to standard error
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer
    models: dict[int, Model] = {}
    while True:
        try:
            message = pickle.load(inp)
        except EOFError:
            break
        try:
            reply: tuple[str, Any] = ("ok", _handle(message, models))
        except BaseException as exc:  # noqa: BLE001 - every error goes back to the caller
            reply = ("error", _portable(exc))
        if message[0] == "init":
            continue  # no reply: the caller does not wait for the start-up
        try:
            _write(out, reply)
        except OSError:  # the caller hung up mid-call (closed on an interrupt): nothing to answer
            break
    for model in models.values():
        model.close()
    sys.stderr.flush()
    os._exit(0)  # nothing left to tear down: skip the interpreter's (about a second with torch loaded)


def _handle(message: tuple[Any, ...], models: dict[int, Model]) -> Any:
    op = message[0]
    if op == "init":
        _, path, threads, warm = message
        sys.path[:] = path
        if threads is not None:
            import torch

            torch.set_num_threads(threads)
        import importlib

        from tempcore.models.registry import resolve_factory

        for step in [*(partial(resolve_factory, b) for b in warm),
                     *(partial(importlib.import_module, m) for m in (WARM_MODULES if warm else ()))]:
            try:
                step()
            except Exception:  # noqa: BLE001 - warming is a head start only; load reports the error
                pass
        return None
    if op == "load":
        _, handle, spec, factory, quiet = message
        if quiet:

            model = load_quietly(factory, spec, progress=False)
        else:
            model = factory(spec)
        models[handle] = model
        return {"name": model.name, "revision": getattr(model, "revision", None),
                "supports_option_scores": bool(getattr(model, "supports_option_scores", False))}
    if op == "answer":
        _, handle, requests, method = message
        return models[handle].answer(requests, method=method)
    if op == "close":
        models.pop(message[1]).close()
        return None
    raise ModelError(f"unknown message {op!r} to a model worker")


def _portable(exc: BaseException) -> BaseException | str:
    """The exception itself where it survives pickling, else its description with the worker's traceback."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()
        return f"{type(exc).__name__}: {exc}\n(in the model's worker process)\n{tb}"


def _write(out: IO[bytes], reply: tuple[str, Any]) -> None:
    try:
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - an answer that does not pickle is an error, not a hang
        data = pickle.dumps(("error", f"the worker's reply cannot be sent back: {type(exc).__name__}: {exc}"))
    out.write(data)
    out.flush()


__all__ = ["HostedModel", "ModelHost", "close_all"]
