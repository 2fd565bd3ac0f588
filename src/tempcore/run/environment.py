"""What a run's manifest records about the software it ran on: tempcore's version, Python, the
platform, the versions of the installed packages that decide results, and tempcore's git revision.

Probing imports nothing heavy (package versions come from installed metadata, not imports) and
never fails a run: no git, no checkout or a slow git gives ``git_revision = None``.
:class:`tempcore.run.store.RunStore` completes every manifest with :func:`environment_info`.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from tempcore._version import __version__

_PACKAGES = (
    "numpy",
    "av",
    "pillow",
    "torch",
    "transformers",
    "tokenizers",
    "safetensors",
    "httpx",
    "pyarrow",
    "vllm",
)


def git_revision(path: str | os.PathLike[str] | None = None) -> str | None:
    """The git commit of the checkout containing ``path`` (default: tempcore's source), ``+dirty``
    appended when it has uncommitted changes; ``None`` when there is no git or no checkout."""
    where = Path(path) if path is not None else Path(__file__).resolve().parent
    try:
        rev = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{rev}+dirty" if dirty else rev or None


def environment_info() -> dict[str, Any]:
    """What a manifest records about the software: tempcore, Python, platform, package versions
    (only installed ones; importing nothing heavy) and tempcore's git revision when available."""
    from importlib import metadata

    packages: dict[str, str] = {}
    for name in _PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {
        "tempcore": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": packages,
        "git_revision": git_revision(),
    }


__all__ = ["environment_info", "git_revision"]
