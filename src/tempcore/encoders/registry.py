"""Which encoder a name means, and loading it: ``load_encoder("siglip2")``, a hub id, or a folder.

Resolution order of ``id_or_path``:

1. a name registered in :data:`ENCODERS` (:func:`register_encoder`, or the ``tempcore.encoders``
   entry-point group): a factory of your own encoder, or an alias to a checkpoint folder / hub id
   (the synthetic world registers ``tempcore-world``, its shipped encoder's folder, this way);
2. an alias of :data:`ALIASES` (the paper's default and its ablation encoders), mapped to its hub id;
3. an existing local folder (a checkpoint laid out like a hub repo);
4. a hub id ``owner/name`` (downloaded or read from the local hub cache by transformers).

Anything else is an :class:`UnknownEncoderError` with close matches suggested.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tempcore.encoders.base import EncoderLoadError, FrameTextEncoder
from tempcore.registry import GROUPS, Registry, RegistryError, did_you_mean

ALIASES: dict[str, str] = {
    "siglip2": "google/siglip2-so400m-patch14-384",
    "siglip2-so400m": "google/siglip2-so400m-patch14-384",
    "siglip": "google/siglip-so400m-patch14-384",
    "siglip-so400m": "google/siglip-so400m-patch14-384",
    "clip": "openai/clip-vit-large-patch14",
    "clip-vit-l14": "openai/clip-vit-large-patch14",
}
"""Short names: ``siglip2`` is the paper's default (SigLIP2-400M); ``siglip`` and ``clip`` its ablations.
(``tempcore-world``, the small encoder shipped for the synthetic world, is in :data:`ENCODERS`.)"""

DEFAULT_ENCODER = "siglip2"

EncoderFactory = Callable[..., FrameTextEncoder]


class UnknownEncoderError(EncoderLoadError):
    """Neither a registered name, an alias, a folder nor a hub id."""


class EncoderRegistryError(EncoderLoadError, RegistryError):
    """An encoder registration refused (bad name, another entry of that name) or an invalid entry."""


def _valid_name(name: str) -> None:
    if not name or "|" in name:
        raise ValueError(f"invalid encoder name {name!r}")


def _check_entry(name: str, entry: Any) -> None:
    if not (callable(entry) or isinstance(entry, (str, Path))):
        raise EncoderRegistryError(
            f"encoder {name!r}: {entry!r} is neither a factory nor a checkpoint folder / hub id"
        )


ENCODERS: Registry[EncoderFactory | str | Path] = Registry(
    "encoder", group=GROUPS["encoders"], check=_check_entry, error=EncoderRegistryError, valid_name=_valid_name
)
"""Registered encoders: name -> a factory (called with :func:`load_encoder`'s keyword arguments) or an
alias (a checkpoint folder or hub id, loaded like one). An entry point of the ``tempcore.encoders``
group names either (``"mypkg.encoders:load_mine"``, ``"mypkg:CHECKPOINT_DIR"``)."""


def register_encoder(name: str, factory: EncoderFactory | str | Path, *, replace: bool = False) -> None:
    """Make ``load_encoder(name, **kw)`` call ``factory(**kw)`` (same keyword arguments as ``load_encoder``),
    or, for a folder / hub id, load that checkpoint under ``name``.

    The same factory again is a no-op; another one under a registered name needs ``replace=True``.
    """
    ENCODERS.register(name, factory, replace=replace)


def available_encoders() -> list[str]:
    """Registered names and aliases (sorted)."""
    return sorted(set(ENCODERS) | set(ALIASES))


def resolve_encoder_id(id_or_path: str | Path) -> str:
    """The hub id or folder ``id_or_path`` stands for (aliases mapped; registered factories returned as is)."""
    ident = str(id_or_path)
    if ident in ENCODERS:
        entry = ENCODERS[ident]
        return str(entry) if isinstance(entry, (str, Path)) else ident
    if ident in ALIASES:
        return ALIASES[ident]
    if Path(ident).expanduser().is_dir():
        return ident
    looks_like_path = ident.startswith((".", "/", "~")) or "\\" in ident or ident.count("/") > 1
    if "/" in ident and not looks_like_path:
        return ident
    if looks_like_path:
        raise UnknownEncoderError(f"encoder {ident}: no such folder")
    hint = did_you_mean(ident, available_encoders(), quote=False)
    raise UnknownEncoderError(
        f"unknown encoder {ident!r}: not a registered name ({', '.join(available_encoders())}), "
        f"a checkpoint folder or a hub id owner/name{hint}"
    )


def load_encoder(
    id_or_path: str | Path,
    *,
    device: str | None = None,
    dtype: str | Any | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
    batch_size: int = 32,
) -> FrameTextEncoder:
    """Load a frame-text encoder by registered name, alias, folder or hub id.

    ``device`` / ``dtype`` default to automatic (see :mod:`tempcore.encoders.hf`); ``revision`` pins a
    hub branch / tag / commit; only safetensors weights are loaded; ``trust_remote_code`` stays off
    unless asked. ``batch_size`` frames go through the vision tower at once.
    """
    ident = str(id_or_path)
    kwargs: dict[str, Any] = {
        "device": device,
        "dtype": dtype,
        "revision": revision,
        "trust_remote_code": trust_remote_code,
        "batch_size": batch_size,
    }
    entry: EncoderFactory | str | Path | None = ENCODERS.get(ident, None)
    if entry is not None and not isinstance(entry, (str, Path)):
        return entry(**kwargs)
    resolved = resolve_encoder_id(ident)
    from tempcore.encoders.hf import HFFrameTextEncoder

    return HFFrameTextEncoder.from_pretrained(resolved, name=ident, **kwargs)


__all__ = [
    "ALIASES",
    "DEFAULT_ENCODER",
    "ENCODERS",
    "EncoderRegistryError",
    "UnknownEncoderError",
    "available_encoders",
    "load_encoder",
    "register_encoder",
    "resolve_encoder_id",
]
