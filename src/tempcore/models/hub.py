"""Failing fast when a checkpoint named by a hub id cannot be had: the hub is unreachable (or
``HF_HUB_OFFLINE`` is set) and the local hub cache does not hold it.

Without this check transformers retries the hub for tens of seconds before its own offline error.
:func:`hub_problem` answers in at most :data:`CONNECT_TIMEOUT_S` (one TCP connection to the hub's
host, remembered per process) with a message that says the hub is unreachable and how to point the
entry at a local folder; the HF model backends and the HF encoders call it before loading. A local
folder, a name that is not ``owner/name``, or a checkpoint in the local hub cache is never checked.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

CONNECT_TIMEOUT_S = 3.0
"""How long the one connection to the hub's host may take before the hub counts as unreachable."""

_TRUE = {"1", "on", "yes", "true"}
_reachable: dict[tuple[str, int], bool] = {}


def looks_like_hub_id(name: str) -> bool:
    """``owner/name`` that is not an existing path (nor spelt like one: ``./x``, ``/x``, ``~/x``)."""
    if name.startswith((".", "/", "~")) or "\\" in name or name.count("/") != 1:
        return False
    return not Path(name).expanduser().exists()


def offline_setting() -> str | None:
    """The environment variable that puts the hub offline (``HF_HUB_OFFLINE``, ``TRANSFORMERS_OFFLINE``), if set."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in _TRUE:
            return var
    return None


def _endpoint() -> tuple[str, int]:
    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    return url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)


def hub_reachable(timeout: float = CONNECT_TIMEOUT_S) -> bool:
    """Whether a TCP connection to the hub's host (``HF_ENDPOINT``) opens within ``timeout`` (remembered)."""
    where = _endpoint()
    if where not in _reachable:
        try:
            with socket.create_connection(where, timeout=timeout):
                _reachable[where] = True
        except OSError:
            _reachable[where] = False
    return _reachable[where]


def in_hub_cache(repo_id: str, revision: str | None = None) -> bool:
    """Whether the local hub cache holds the checkpoint's ``config.json`` (``True`` without huggingface_hub:
    the loader then reports what is missing)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - installed with transformers
        return True
    try:
        found = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except Exception:  # noqa: BLE001 - an odd id or cache: let the loader say it
        return True
    return isinstance(found, str)


def hub_problem(what: str, name: str, revision: str | None = None, *, key: str = "model") -> str | None:
    """``None`` when ``name`` can be loaded as far as the hub goes, else why not and what to do.

    ``what`` names the entry (``model qwen``, ``encoder siglip2``); ``key`` is the configuration key
    that takes a local folder instead."""
    if not looks_like_hub_id(name) or in_hub_cache(name, revision):
        return None
    setting = offline_setting()
    if setting is None and hub_reachable():
        return None
    host, _port = _endpoint()
    why = f"{setting} is set" if setting else f"no connection to {host} within {CONNECT_TIMEOUT_S:g} s"
    return (f"{what}: {name!r} is a hub id, the Hugging Face hub is unreachable ({why}) and the local hub "
            f"cache does not hold it; point `{key}:` at a local folder holding the checkpoint "
            f"(config.json, *.safetensors, the tokenizer and processor files; e.g. one made with "
            f"`huggingface-cli download {name} --local-dir DIR` where the hub is reachable)"
            + (f", or unset {setting} where the hub is reachable" if setting else ", or retry once it is reachable"))


__all__ = ["CONNECT_TIMEOUT_S", "hub_problem", "hub_reachable", "in_hub_cache", "looks_like_hub_id", "offline_setting"]
