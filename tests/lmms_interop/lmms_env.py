"""A virtual environment with the real lmms-eval, built once and cached outside the repository.

Where: ``$TEMPCORE_LMMS_VENV`` if set, else ``~/.cache/tempcore/venv-lmms-<version>`` (``$XDG_CACHE_HOME``
is honoured), so every clone of the repository on a machine (and a CI cache of that folder) reuses it.
A lock file next to it serialises concurrent creation; a stamp file marks a finished install, so an
interrupted install is rebuilt, never trusted.

The recipe (what installing lmms-eval 0.7.3 on these CPU machines needs; found by trying):

1. ``python -m venv`` with the interpreter running the tests;
2. ``pip install torch==2.13.0`` first (the CPU build: these machines' pip finds ``+cpu`` wheels);
3. ``pip install lmms-eval==0.7.3 -c constraints.txt`` with ``torch==2.13.0`` pinned: without the pin
   pip replaces the CPU torch by CUDA torch 2.14.1 plus ~4 GB of nvidia-* wheels, because lmms-eval
   requires ``torchvision`` and the newest torchvision (0.29.1) requires torch 2.14.1;
4. ``pip uninstall -y torchvision``: PyPI's torchvision is CUDA-linked and breaks transformers' image
   processors on CPU machines; lmms-eval's CLI, task loading, the ``dummy`` model and a plain registered
   model class import without it (the video models that need it are not used here).

``filelock``: lmms-eval 0.7.3 itself works with the filelock 4.x that torch pulls in here
(datasets 5.x accepts it); no ``filelock<4`` pin was needed in this recipe. ``LMMS_PIN_EXTRA`` adds
constraints (e.g. ``filelock<4``) if a future resolution needs them.
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


def ensure_lmms_venv(version: str = LMMS_EVAL_VERSION, timeout: float = 1800.0) -> tuple[Path, float]:
    """The venv's python, building the venv when it is absent; and the seconds spent installing (0 if cached)."""
    root = venv_dir(version)
    python = root / "bin" / "python"
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f"{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another session building it: wait for it
        if (root / STAMP).exists() and python.exists():
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
        constraints.write_text("\n".join([TORCH, *extra]) + "\n", encoding="utf-8")
        _run([*pip, f"lmms-eval=={version}", "-c", str(constraints)], log, timeout)
        _run([str(python), "-m", "pip", "uninstall", "-y", "-q", "torchvision"], log, 300)
        _run([str(python), "-c", "import lmms_eval.evaluator, lmms_eval.models, torch; print(torch.__version__)"],
             log, 600)
        (root / STAMP).write_text(version + "\n", encoding="utf-8")
        return python, time.monotonic() - start


if __name__ == "__main__":
    py, spent = ensure_lmms_venv()
    print(py, f"{spent:.0f} s")
