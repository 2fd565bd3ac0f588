"""A virtual environment with the real lmms-eval, built once and cached outside the repository.

Where: ``$TEMPCORE_LMMS_VENV`` if set, else ``~/.cache/tempcore/venv-lmms-<version>`` (``$XDG_CACHE_HOME``
is honoured), so every clone of the repository on a machine (and a CI cache of that folder) reuses it.
A lock file next to it serialises concurrent creation; a stamp file marks a finished install, so an
interrupted install is rebuilt, never trusted.

The recipe (what installing lmms-eval 0.7.3 on these CPU machines needs; found by trying):

1. ``python -m venv`` with the interpreter running the tests;
2. ``pip install torch==2.13.0`` first (the CPU build: these machines' pip finds ``+cpu`` wheels);
3. ``pip install lmms-eval==0.7.3 -c constraints.txt`` with ``torch==2.13.0`` and ``filelock<4``
   pinned. Without the torch pin pip replaces the CPU torch by CUDA torch 2.14.1 plus ~4 GB of
   nvidia-* wheels (6.9 GB venv), because lmms-eval requires ``torchvision`` and the newest
   torchvision (0.29.1) requires torch 2.14.1. Without ``filelock<4`` (pip picks filelock 4.3.1)
   every evaluation stops with "No module named 'filelock._api'" (lmms-eval 0.7.3's
   ``evaluator._enable_reentrant_filelocks`` imports that private module, gone in filelock 4) --
   logged as an error, and ``python -m lmms_eval`` still exits 0;
4. ``pip uninstall -y torchvision``: PyPI's torchvision is CUDA-linked and breaks transformers' image
   processors on CPU machines; lmms-eval's CLI, task loading, the ``dummy`` model and a plain registered
   model class import without it (the video models that need it are not used here).

The result: lmms-eval 0.7.3, torch 2.13.0+cpu, filelock 3.x, datasets 5.2, transformers 5.x; ~2.4 GB.
``LMMS_PIN_EXTRA`` (comma-separated) adds constraints should a future resolution need more. The stamp
file holds the recipe; a venv built by another recipe is rebuilt.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

LMMS_EVAL_VERSION = os.environ.get("TEMPCORE_LMMS_VERSION", "0.7.3")
TORCH = "torch==2.13.0"
PINS = (TORCH, "filelock<4")
STAMP = ".tempcore-lmms-installed"


class LmmsInstallError(RuntimeError):
    """lmms-eval could not be installed; the message holds the failing command and its output."""


def venv_dir(version: str = LMMS_EVAL_VERSION) -> Path:
    env = os.environ.get("TEMPCORE_LMMS_VENV")
    if env:
        return Path(env).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tempcore" / f"venv-lmms-{version}"


def _run(cmd: list[str], log: Path, timeout: float) -> None:
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n")
        fh.flush()
        try:
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise LmmsInstallError(f"timed out after {timeout:.0f} s: {' '.join(cmd)} (log: {log})") from exc
    if proc.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-4000:]
        raise LmmsInstallError(f"failed (exit {proc.returncode}): {' '.join(cmd)}\n--- log tail ---\n{tail}")


def _recipe(version: str) -> str:
    extra = os.environ.get("LMMS_PIN_EXTRA", "")
    return f"lmms-eval=={version}; {'; '.join(PINS)}; {extra}; no torchvision\n"


def ensure_lmms_venv(version: str = LMMS_EVAL_VERSION, timeout: float = 1800.0) -> tuple[Path, float]:
    """The venv's python, building the venv when it is absent; and the seconds spent installing (0 if cached)."""
    root = venv_dir(version)
    python = root / "bin" / "python"
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f"{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another session building it: wait for it
        recipe = _recipe(version)
        stamp = root / STAMP
        if stamp.exists() and python.exists() and stamp.read_text(encoding="utf-8") == recipe:
            return python, 0.0
        start = time.monotonic()
        log = root.parent / f"{root.name}.install.log"
        log.write_text(f"installing lmms-eval {version} into {root}\n", encoding="utf-8")
        if root.exists():
            import shutil

            shutil.rmtree(root)
        _run([sys.executable, "-m", "venv", str(root)], log, 300)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        _run([*pip, TORCH], log, timeout)
        constraints = root / "constraints.txt"
        extra = [c for c in os.environ.get("LMMS_PIN_EXTRA", "").split(",") if c.strip()]
        constraints.write_text("\n".join([*PINS, *extra]) + "\n", encoding="utf-8")
        _run([*pip, f"lmms-eval=={version}", "-c", str(constraints)], log, timeout)
        _run([str(python), "-m", "pip", "uninstall", "-y", "-q", "torchvision"], log, 300)
        _run([str(python), "-c", "import filelock._api, lmms_eval.evaluator, lmms_eval.models, torch; "
              "print(torch.__version__)"], log, 600)
        stamp.write_text(recipe, encoding="utf-8")
        return python, time.monotonic() - start


if __name__ == "__main__":
    py, spent = ensure_lmms_venv()
    print(py, f"{spent:.0f} s")
