"""Content-addressed cache of per-frame embeddings: computed once per video x segment x fps x encoder.

Key
    ``sha256`` of the canonical JSON of :class:`CacheKey` fields: the video's *content* hash, the
    media type, the stream, the segment start / end, the decoding fps (and a frame folder's
    ``folder_fps``), the resize applied while decoding, the decoding convention version, and the
    encoder's ``fingerprint`` (weights, image preprocessing, compute dtype). Changing any of them
    gives another entry; moving or renaming a video does not.

Content hash
    A file: sha256 of all its bytes (read in 8 MiB chunks). A frame folder: sha256 over its files
    (recursively, sorted by relative path, dot-files ignored), each contributing its relative path,
    size and the sha256 of its bytes. Hashing a long video costs about a second per GB, so the result
    is memoised in ``<root>/hashes/`` against the path's (size, mtime_ns, inode) — or, for a folder,
    against the sha256 of its listing with those values — and recomputed only when they change. (A
    file rewritten in place with the same size *and* modification time would not be noticed.)

Entry
    ``<root>/v1/<key[:2]>/<key>.npz``: one uncompressed NumPy ``.npz`` (a zip of ``.npy`` members,
    each with a CRC-32) holding ``embeddings`` (L, D) float32, ``timestamps`` (L,) float64 seconds,
    ``indices`` (L,) int64 decoded-frame positions, and ``header``: UTF-8 JSON (format version, key,
    key fields, encoder name and fingerprint, fps, video path, segment, created time, tempcore version,
    shapes, and whether the decoder reported the video truncated). Loaded with ``allow_pickle=False``.

Atomicity
    An entry is written to a temporary file in the same directory, flushed and fsync'ed, then
    ``os.replace``'d into place: readers see the old entry or the new one, never half of one. Two
    processes writing the same key both succeed and leave one complete entry.

Damage
    A truncated file, a bad CRC, a missing member, a header that does not match the key or the
    arrays, wrong dtypes or non-finite values: the entry is reported (logged, counted in ``damaged``
    and listed in ``damaged_entries``), removed, and treated as a miss, so the caller recomputes it.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import tempfile
import threading
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from tempcore._version import __version__
from tempcore.errors import TempcoreError

log = logging.getLogger(__name__)

FORMAT = "tempcore-frame-embeddings"
FORMAT_VERSION = 1
_CHUNK = 8 << 20


class CacheError(TempcoreError):
    """The cache directory cannot be used (names the path and the reason)."""


def default_cache_dir() -> Path:
    """``$TEMPCORE_CACHE`` when set, else ``~/.cache/tempcore/embeddings``."""
    env = os.environ.get("TEMPCORE_CACHE")
    return Path(env).expanduser() if env else Path("~/.cache/tempcore/embeddings").expanduser()


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _folder_files(folder: Path) -> list[Path]:
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        files.extend(Path(dirpath) / name for name in filenames if not name.startswith("."))
    return sorted(files, key=lambda p: p.relative_to(folder).as_posix())


def _hash_folder(folder: Path) -> str:
    h = hashlib.sha256(b"tempcore-folder-v1\n")
    for f in _folder_files(folder):
        rel = f.relative_to(folder).as_posix()
        h.update(f"{rel}\0{f.stat().st_size}\0{_sha256_file(f)}\n".encode())
    return h.hexdigest()


def _signature(path: Path) -> str:
    """What must not change for a memoised content hash to stay valid."""
    st = path.stat()
    if path.is_dir():
        listing = hashlib.sha256()
        for f in _folder_files(path):
            fs = f.stat()
            listing.update(
                f"{f.relative_to(path).as_posix()}\0{fs.st_size}\0{fs.st_mtime_ns}\0{fs.st_ino}\n".encode()
            )
        return f"dir:{listing.hexdigest()}"
    return f"file:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


def content_hash(path: str | os.PathLike[str]) -> str:
    """Content hash of a video file or frame folder (no memo); prefixed ``file:`` or ``dir:``."""
    p = Path(path)
    if p.is_dir():
        return "dir:" + _hash_folder(p)
    if p.is_file():
        return "file:" + _sha256_file(p)
    raise FileNotFoundError(f"{p}: no such video file or frame folder")


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _num(x: float | None) -> float | None:
    return None if x is None else float(x)


@dataclass(frozen=True)
class CacheKey:
    """The identity of one cache entry: ``digest`` (sha256 hex) of the canonical JSON of ``fields``."""

    digest: str
    fields: Mapping[str, Any]

    @classmethod
    def build(
        cls,
        *,
        content: str,
        encoder_fingerprint: str,
        fps: float | None,
        stream: int = 0,
        start: float | None = None,
        end: float | None = None,
        media: str = "video",
        size: tuple[int, int] | None = None,
        folder_fps: float | None = None,
        decoder: str = "",
    ) -> CacheKey:
        fields = {
            "format": FORMAT_VERSION,
            "content": content,
            "media": media,
            "stream": int(stream),
            "start": _num(start),
            "end": _num(end),
            "fps": _num(fps),
            "folder_fps": _num(folder_fps) if media == "frames" else None,
            "size": None if size is None else [int(size[0]), int(size[1])],
            "decoder": decoder,
            "encoder": encoder_fingerprint,
        }
        canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        return cls(hashlib.sha256(canonical.encode()).hexdigest(), fields)


@dataclass(frozen=True)
class CachedEmbeddings:
    """A loaded entry."""

    embeddings: np.ndarray
    timestamps: np.ndarray
    indices: np.ndarray
    header: dict[str, Any]
    path: Path


@dataclass(frozen=True)
class DamagedEntry:
    """An entry found damaged (then removed and recomputed by the caller)."""

    path: Path
    reason: str


class _Damaged(Exception):
    pass


class EmbeddingCache:
    """A directory of frame-embedding entries (see the module docstring for key, layout, damage).

    ``EmbeddingCache()`` uses :func:`default_cache_dir`. ``hits`` / ``misses`` count :meth:`get`
    results (a damaged entry counts as a miss and in ``damaged``); ``writes`` counts :meth:`put`.
    Safe to share between threads and processes.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else default_cache_dir()
        self.hits = self.misses = self.writes = 0
        self.damaged_entries: list[DamagedEntry] = []
        self._lock = threading.Lock()
        self._memo: dict[tuple[str, str], str] = {}
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(f"cache directory {self.root}: {exc.strerror or exc}") from exc
        if not os.access(self.root, os.W_OK):
            raise CacheError(f"cache directory {self.root}: not writable")

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.root)!r}, hits={self.hits}, misses={self.misses})"

    @property
    def damaged(self) -> int:
        return len(self.damaged_entries)

    def stats(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "hits": self.hits,
            "misses": self.misses,
            "writes": self.writes,
            "damaged": self.damaged,
        }

    # --- content hashes --------------------------------------------------------------------

    def content_hash(self, path: str | os.PathLike[str]) -> str:
        """:func:`content_hash`, memoised on disk against the path's size / mtime / inode (see module doc)."""
        p = Path(path)
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such video file or frame folder")
        resolved = str(p.resolve())
        signature = _signature(p)
        memo_key = (resolved, signature)
        with self._lock:
            if memo_key in self._memo:
                return self._memo[memo_key]
        memo_file = self.root / "hashes" / f"{hashlib.sha256(resolved.encode()).hexdigest()[:40]}.json"
        try:
            memo = json.loads(memo_file.read_text())
            if memo.get("path") == resolved and memo.get("signature") == signature:
                digest = str(memo["content"])
                with self._lock:
                    self._memo[memo_key] = digest
                return digest
        except (OSError, ValueError, KeyError, TypeError):
            pass
        digest = content_hash(p)
        if _signature(p) == signature:  # unchanged while hashing: safe to memoise
            record = {"path": resolved, "signature": signature, "content": digest}
            try:
                _atomic_write_bytes(memo_file, json.dumps(record).encode())
            except OSError as exc:
                log.warning("cannot memoise the content hash of %s in %s: %s", p, memo_file, exc)
            with self._lock:
                self._memo[memo_key] = digest
        return digest

    # --- entries ---------------------------------------------------------------------------

    def path_for(self, key: CacheKey) -> Path:
        return self.root / f"v{FORMAT_VERSION}" / key.digest[:2] / f"{key.digest}.npz"

    def contains(self, key: CacheKey) -> bool:
        """Whether an entry file exists (not validated, not counted)."""
        return self.path_for(key).is_file()

    def get(self, key: CacheKey) -> CachedEmbeddings | None:
        """The entry for ``key``, or None (miss). A damaged entry is reported, removed, and a miss."""
        path = self.path_for(key)
        if not path.is_file():
            with self._lock:
                self.misses += 1
            return None
        try:
            entry = self._read(path, key)
        except _Damaged as exc:
            reason = str(exc)
            log.warning("damaged embedding cache entry %s (%s): recomputing", path, reason)
            with self._lock:
                self.damaged_entries.append(DamagedEntry(path, reason))
                self.misses += 1
            path.unlink(missing_ok=True)
            return None
        except FileNotFoundError:  # removed by another process between the check and the read
            with self._lock:
                self.misses += 1
            return None
        with self._lock:
            self.hits += 1
        return entry

    def put(
        self,
        key: CacheKey,
        embeddings: np.ndarray,
        timestamps: np.ndarray,
        indices: np.ndarray,
        header: Mapping[str, Any] | None = None,
    ) -> Path:
        """Write an entry atomically; ``header`` adds descriptive fields (encoder name, video path, ...)."""
        emb = np.ascontiguousarray(embeddings, dtype=np.float32)
        ts = np.ascontiguousarray(timestamps, dtype=np.float64)
        idx = np.ascontiguousarray(indices, dtype=np.int64)
        if emb.ndim != 2 or ts.shape != (emb.shape[0],) or idx.shape != (emb.shape[0],):
            raise ValueError(
                f"cache entry shapes disagree: embeddings {emb.shape}, timestamps {ts.shape}, indices {idx.shape}"
            )
        doc = dict(header or {})
        doc.update(
            {
                "format": FORMAT,
                "format_version": FORMAT_VERSION,
                "key": key.digest,
                "key_fields": dict(key.fields),
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "tempcore_version": __version__,
                "shape": list(emb.shape),
                "dtype": "float32",
            }
        )
        raw = json.dumps(doc, sort_keys=True, default=str).encode()
        buf = io.BytesIO()
        np.savez(buf, embeddings=emb, timestamps=ts, indices=idx, header=np.frombuffer(raw, dtype=np.uint8))
        path = self.path_for(key)
        _atomic_write_bytes(path, buf.getvalue())
        with self._lock:
            self.writes += 1
        return path

    def _read(self, path: Path, key: CacheKey) -> CachedEmbeddings:
        try:
            with np.load(path, allow_pickle=False) as z:
                names = set(z.files)
                missing = {"embeddings", "timestamps", "indices", "header"} - names
                if missing:
                    raise _Damaged(f"missing member(s) {sorted(missing)}")
                emb, ts, idx, raw = z["embeddings"], z["timestamps"], z["indices"], z["header"]
        except FileNotFoundError:
            raise
        except _Damaged:
            raise
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as exc:
            raise _Damaged(f"unreadable: {type(exc).__name__}: {exc}") from exc
        try:
            header = json.loads(raw.tobytes().decode())
        except (UnicodeDecodeError, ValueError) as exc:
            raise _Damaged(f"header is not JSON: {exc}") from exc
        if not isinstance(header, dict):
            raise _Damaged("header is not a JSON object")
        if header.get("format") != FORMAT or header.get("format_version") != FORMAT_VERSION:
            raise _Damaged(
                f"format {header.get('format')!r} v{header.get('format_version')!r} is not v{FORMAT_VERSION}"
            )
        if header.get("key") != key.digest:
            raise _Damaged(f"header key {str(header.get('key'))[:16]}... does not match the entry's key")
        if emb.dtype != np.float32 or emb.ndim != 2:
            raise _Damaged(f"embeddings are {emb.dtype} {emb.shape}, expected float32 (L, D)")
        if list(emb.shape) != header.get("shape"):
            raise _Damaged(f"embeddings shape {list(emb.shape)} != header shape {header.get('shape')}")
        n = emb.shape[0]
        if ts.dtype != np.float64 or ts.shape != (n,) or idx.dtype != np.int64 or idx.shape != (n,):
            raise _Damaged(
                f"timestamps {ts.dtype} {ts.shape} / indices {idx.dtype} {idx.shape} do not fit {n} frames"
            )
        if not (np.all(np.isfinite(emb)) and np.all(np.isfinite(ts))):
            raise _Damaged("non-finite values")
        return CachedEmbeddings(emb, ts, idx, header, path)


__all__ = [
    "CacheError",
    "CacheKey",
    "CachedEmbeddings",
    "DamagedEntry",
    "EmbeddingCache",
    "content_hash",
    "default_cache_dir",
]
