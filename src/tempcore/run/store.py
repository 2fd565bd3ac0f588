"""The run store: one SQLite file holding every prediction, failure and run manifest of an audit.

Layout (schema version 3; the prediction columns come from :data:`tempcore.tidy.schema.STORE_COLUMNS`)::

    schema_version(version)                         one row; bumped by migrations
    runs(run_id, created_at, manifest)              manifest = JSON (config, packages, seeds, models, git)
    predictions(benchmark, sample_id, model, condition,  -- PRIMARY KEY
                response, answer, correct, frames, prompt_hash, latency_s, answer_method,
                option_probs, parse_error, target, sample_hash, model_fingerprint,
                encoder_fingerprint, n_frames, video_damage, pred_start, pred_end, iou,
                run_id, created_at)
    fingerprints(hash, kind, data)                  what each sample / model / encoder fingerprint
                                                    stood for (JSON), to say what changed
    failures(benchmark, sample_id, model, condition,     -- PRIMARY KEY
             error, attempts, last_error_at, run_id)

A prediction is keyed by ``(benchmark, sample_id, model, condition key)`` — the key of
:class:`tempcore.records.Prediction`. ``frames`` is the JSON of the :class:`FrameSet` (indices,
timestamps, requested, grey) and ``option_probs`` a JSON list; both are ``NULL`` when absent. For a
grounding row, ``answer`` / ``target`` are NULL and ``correct`` means ``iou >= 0.5``
(:data:`tempcore.records.GROUNDING_CORRECT_IOU`); a parse failure keeps ``pred_start``, ``pred_end``
and ``iou`` NULL, with ``parse_error`` set and ``correct`` = 0.

An older store is migrated in place when opened, every row kept (rows without fingerprints are never
reused silently: :mod:`tempcore.run.identity`); a store from a newer tempcore is refused.

Durability and concurrency (the choices the design leaves open; the reasons in ``docs/design/run.md``):

* **WAL journal, ``synchronous=FULL`` by default**: every :meth:`RunStore.put` is one transaction; a
  killed process loses at most the one in flight, a power loss none that committed.
  ``synchronous="NORMAL"`` trades the power-loss guarantee for speed.
* **Several processes may write one store** (e.g. one per GPU), on a local file system (not NFS).
* **First write wins**: storing a stored key changes nothing; ``overwrite=True`` replaces on purpose.
* **A failure is never a prediction**: failed calls go to ``failures``; a prediction for a key
  deletes its failure, so resume (which asks only for predictions) retries failed keys.
* **No secrets**: manifests pass through :func:`redact_secrets` before they are written.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from tempcore._version import __version__
from tempcore.records import Condition, Failure, Prediction
from tempcore.redaction import REDACTED as REDACTED
from tempcore.redaction import is_secret_key, redact_secrets, redact_text
from tempcore.run.environment import environment_info, git_revision
from tempcore.run.store_rows import (
    _IDENTITY_NAMES,
    FingerprintConflictError,
    FloatText,
    StoreError,
    _prediction_row,
    damaged_row_error,
    frames_json,
    row_to_prediction,
)
from tempcore.tidy.schema import KEY_COLUMNS, PASSTHROUGH, predictions_ddl, store_column_names

Key = tuple[str, str, str, str]
"""(benchmark, sample_id, model, condition key)."""

STORE_FILENAME = "store.sqlite"
SCHEMA_VERSION = 3

_KEY_COLUMNS = KEY_COLUMNS
_PREDICTION_COLUMNS = store_column_names()
_COUNT_FIELDS = (*_KEY_COLUMNS, "answer_method", "run_id", "correct", "model_fingerprint", "sample_hash")

#: what :meth:`RunStore.export_rows` reads as ``frame_indices`` of a row whose ``frames`` JSON SQLite
#: cannot read (the table names the row: :func:`damaged_row_error`)
DAMAGED = "<damaged>"

# What the tidy export reads of each prediction (RunStore.export_rows), in this order.
EXPORT_FIELDS: tuple[str, ...] = (*KEY_COLUMNS, *(n for n in PASSTHROUGH if n not in KEY_COLUMNS))
_EXPORT_DERIVED_SQL = {
    "parse_error": "parse_error",
    # a damaged row (JSON SQLite cannot read, e.g. NaN written by an older tempcore) must not fail the
    # whole query: its parts read as NULL (frame_indices as DAMAGED), for the table to name the row
    "frame_indices": f"CASE WHEN json_valid(frames) THEN json_extract(frames, '$.indices') "
                     f"WHEN frames IS NOT NULL THEN '{DAMAGED}' END",
    "frame_timestamps": "CASE WHEN json_valid(frames) THEN json_extract(frames, '$.timestamps') END",
    "frames_requested": "CASE WHEN json_valid(frames) THEN json_extract(frames, '$.requested') END",
    "frames_grey": "CASE WHEN json_valid(frames) THEN json_extract(frames, '$.grey') END",
    "n_probs": "CASE WHEN json_valid(option_probs) THEN json_array_length(option_probs) END",
    "option_probs": "option_probs",
    "run_id": "run_id",
    "created_at": "created_at",
}
EXPORT_COLUMNS: tuple[str, ...] = (*EXPORT_FIELDS, *_EXPORT_DERIVED_SQL)
"""The columns of :meth:`RunStore.export_rows`' rows."""

_FINGERPRINTS_DDL = """
CREATE TABLE IF NOT EXISTS fingerprints (
    hash  TEXT PRIMARY KEY,
    kind  TEXT NOT NULL,
    data  TEXT NOT NULL
)"""

_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id      TEXT PRIMARY KEY,
    created_at  TEXT NOT NULL,
    manifest    TEXT NOT NULL
);
"""
    + predictions_ddl()
    + """;
CREATE TABLE IF NOT EXISTS failures (
    benchmark     TEXT NOT NULL,
    sample_id     TEXT NOT NULL,
    model         TEXT NOT NULL,
    condition     TEXT NOT NULL,
    error         TEXT NOT NULL,
    attempts      INTEGER NOT NULL,
    last_error_at TEXT NOT NULL,
    run_id        TEXT REFERENCES runs (run_id),
    PRIMARY KEY (benchmark, sample_id, model, condition)
);
"""
    + _FINGERPRINTS_DDL
)

#: The columns schema v2 added to ``predictions`` (frozen here: a migration never follows later edits).
_V2_COLUMNS = (
    ("sample_hash", "TEXT NOT NULL DEFAULT ''"),
    ("model_fingerprint", "TEXT NOT NULL DEFAULT ''"),
    ("encoder_fingerprint", "TEXT"),
    ("n_frames", "INTEGER"),
    ("video_damage", "TEXT"),
)


def _migrate_v1_to_v2(conn: sqlite3.Connection) -> None:
    """v1 -> v2: the identity and provenance columns and the ``fingerprints`` table.

    Rows of a v1 store keep every value; their fingerprints are empty (unknown), so ``tempcore run``
    treats them as changed (never silently reused) and ``--recompute`` replaces them.
    """
    have = {r[1] for r in conn.execute("PRAGMA table_info(predictions)")}
    for name, decl in _V2_COLUMNS:
        if name not in have:
            conn.execute(f"ALTER TABLE predictions ADD COLUMN {name} {decl}")
    conn.execute(_FINGERPRINTS_DDL)


#: The columns schema v3 added to ``predictions`` (frozen, as ``_V2_COLUMNS``).
_V3_COLUMNS = (
    ("pred_start", "REAL"),
    ("pred_end", "REAL"),
    ("iou", "REAL CHECK (iou IS NULL OR (iou >= 0 AND iou <= 1))"),
)


def _migrate_v2_to_v3(conn: sqlite3.Connection) -> None:
    """v2 -> v3: the grounding answer columns ``pred_start``, ``pred_end``, ``iou`` (NULL on every
    existing row: a v2 store holds multiple-choice answers and parse failures only)."""
    have = {r[1] for r in conn.execute("PRAGMA table_info(predictions)")}
    for name, decl in _V3_COLUMNS:
        if name not in have:
            conn.execute(f"ALTER TABLE predictions ADD COLUMN {name} {decl}")


# version v -> function upgrading a store from v to v + 1 (run inside the opening transaction).
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _migrate_v1_to_v2, 2: _migrate_v2_to_v3}




# --- secrets -------------------------------------------------------------------------------

# is_secret_key / redact_secrets live in :mod:`tempcore.redaction` (the one redaction function);
# they are imported above and re-exported here for existing callers.


# git / environment probing lives in :mod:`tempcore.run.environment` (re-exported here).


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")


def resolve_store_path(run: str | os.PathLike[str]) -> Path:
    """The store file of ``run``: a directory means ``<run>/store.sqlite``, and so does a path
    that does not exist yet and has no suffix (a run directory to be made); anything else is the
    store file itself (``.sqlite``, ``.db``, ...)."""
    path = Path(run)
    if path.is_dir() or (not path.exists() and not path.suffix):
        return path / STORE_FILENAME
    return path


@lru_cache(maxsize=4096)
def _check_condition(key: str) -> None:
    Condition.from_key(key)


@dataclass(frozen=True)
class StoreCounts:
    runs: int
    predictions: int
    failures: int
    parse_errors: int


@dataclass(frozen=True)
class StoredFailure:
    """A failure row: the :class:`Failure` plus when it last happened and in which run."""

    failure: Failure
    last_error_at: str
    run_id: str | None


class StoredRequest(NamedTuple):
    """What a stored prediction was asked (:meth:`RunStore.stored_requests`)."""

    sample_hash: str
    model_fingerprint: str
    encoder_fingerprint: str | None
    #: the ``frames`` JSON text as stored (:func:`frames_json`), ``None`` when not recorded
    frames: str | None
    prompt_hash: str

    @property
    def fingerprints(self) -> tuple[str, str, str | None]:
        """``(sample_hash, model_fingerprint, encoder_fingerprint)``."""
        return (self.sample_hash, self.model_fingerprint, self.encoder_fingerprint)


# --- the store -----------------------------------------------------------------------------


class RunStore:
    """An open run store (see the module docstring for the layout and the guarantees).

    ``RunStore(path)`` opens the SQLite file ``path``, creating it (and its parent folders) when
    ``create`` is true. Use it as a context manager or call :meth:`close`. Methods are safe to call
    from several threads of one process (a lock serialises them) and from several processes.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        busy_timeout_s: float = 60.0,
        synchronous: str = "FULL",
    ) -> None:
        self.path = Path(path)
        if synchronous.upper() not in ("NORMAL", "FULL", "EXTRA"):
            raise StoreError(f"{self.path}: synchronous must be NORMAL, FULL or EXTRA, not {synchronous!r}")
        if self.path.is_dir():
            raise StoreError(
                f"{self.path}: is a directory (the store is a file; try {self.path / STORE_FILENAME})"
            )
        if not self.path.exists():
            if not create:
                raise StoreError(f"{self.path}: no run store there")
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            self._conn = sqlite3.connect(
                str(self.path), timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open: {exc}") from exc
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            # Switching a new file to WAL takes an exclusive lock and SQLite may answer "database is
            # locked" at once, without its busy handler, when another process opens it at the same
            # moment: retry until the busy timeout.
            deadline = time.monotonic() + busy_timeout_s
            while True:
                try:
                    mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.01)
            if str(mode).lower() != "wal":
                raise StoreError(f"{self.path}: cannot switch to WAL journal mode (got {mode!r})")
            self._conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._init_schema(create)
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise StoreError(f"{self.path}: not a usable SQLite run store: {exc}") from exc
        except BaseException:
            self._conn.close()
            raise

    @classmethod
    def open(cls, run: str | os.PathLike[str], *, create: bool = True, **kwargs: Any) -> RunStore:
        """Open the store of ``run``: a ``.sqlite`` file, or a run directory holding ``store.sqlite``."""
        return cls(resolve_store_path(run), create=create, **kwargs)

    # -- lifecycle --

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection, for read-only ad-hoc queries (do not write through it)."""
        return self._conn

    def _begin(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def _transaction(self) -> _Transaction:
        return _Transaction(self)

    def _read_version(self) -> int | None:
        """The schema version, ``None`` for an empty file; refuses other SQLite files."""
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "schema_version" not in tables:
            if tables:
                raise StoreError(
                    f"{self.path}: an SQLite file but not a tempcore run store (tables {sorted(tables)})"
                )
            return None
        row = self._conn.execute("SELECT version FROM schema_version").fetchone()
        if row is None:
            raise StoreError(f"{self.path}: damaged run store (no schema version recorded)")
        return int(row[0])

    def _init_schema(self, create: bool) -> None:
        with self._lock:
            if self._read_version() == SCHEMA_VERSION:
                return  # the common case: no write transaction just to open
            with self._transaction():  # re-read under the write lock: another process may be here too
                version = self._read_version()
                if version is None:
                    if not create:
                        raise StoreError(f"{self.path}: empty file, not a tempcore run store")
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            self._conn.execute(statement)
                    self._conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
                    return
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path}: written by a newer tempcore (store schema v{version}; this tempcore "
                        f"{__version__} reads up to v{SCHEMA_VERSION}); upgrade tempcore"
                    )
                while version < SCHEMA_VERSION:
                    migrate = MIGRATIONS.get(version)
                    if migrate is None:
                        raise StoreError(f"{self.path}: no migration from store schema v{version}")
                    migrate(self._conn)
                    version += 1
                    self._conn.execute("UPDATE schema_version SET version = ?", (version,))

    @property
    def schema_version(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT version FROM schema_version").fetchone()[0])

    # -- runs --

    def start_run(
        self, manifest: Mapping[str, Any], *, run_id: str | None = None, environment: bool = True
    ) -> str:
        """Record a run and return its id (``YYYYmmddTHHMMSSZ-<8 hex>`` unless given).

        The manifest is redacted (:func:`redact_secrets`) and, when ``environment`` is true and it
        has no ``environment`` entry, completed with :func:`environment_info`.
        """
        data = dict(manifest)
        if environment and "environment" not in data:
            data["environment"] = environment_info()
        try:
            text = json.dumps(redact_secrets(data), sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"{self.path}: run manifest is not plain JSON: {exc}") from exc
        now = _dt.datetime.now(_dt.timezone.utc)
        run_id = run_id or f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
        with self._lock, self._transaction():
            try:
                self._conn.execute(
                    "INSERT INTO runs (run_id, created_at, manifest) VALUES (?, ?, ?)",
                    (run_id, now.isoformat(timespec="microseconds"), text),
                )
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"{self.path}: run id {run_id!r} already exists") from exc
        return run_id

    def manifest(self, run_id: str) -> dict[str, Any]:
        with self._lock:
            row = self._conn.execute("SELECT manifest FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no run {run_id!r}")
        manifest: dict[str, Any] = json.loads(row[0])
        return manifest

    def runs(self) -> list[tuple[str, str]]:
        """(run_id, created_at) of every run, oldest first."""
        with self._lock:
            return [
                tuple(r)
                for r in self._conn.execute("SELECT run_id, created_at FROM runs ORDER BY created_at")
            ]

    # -- writing --

    def put(self, predictions: Sequence[Prediction], run_id: str, *, overwrite: bool = False) -> int:
        """Store one batch in one transaction; return how many rows were written.

        Keys already stored are left alone (first write wins) unless ``overwrite`` — but only over a
        row of the same identity: a key stored with another sample hash, model or encoder fingerprint
        (both known) raises :class:`FingerprintConflictError` naming both, and nothing of the batch is
        stored (two configurations giving one model name to two models must not swap answers). A
        batch with a non-Prediction, an unknown ``run_id`` or a malformed condition key is rejected
        whole. Storing a prediction deletes the failure recorded for its key.
        """
        return len(self.put_new(predictions, run_id, overwrite=overwrite))

    def put_new(self, predictions: Sequence[Prediction], run_id: str, *, overwrite: bool = False) -> list[Prediction]:
        """:meth:`put`, returning the predictions written (without ``overwrite``: those whose key was
        not stored yet, the first of a key repeated in the batch)."""
        rows = []
        for p in predictions:
            if not isinstance(p, Prediction):
                raise StoreError(f"{self.path}: put() takes Predictions, got {type(p).__name__}")
            try:
                _check_condition(p.condition)
            except ValueError as exc:
                raise StoreError(f"{self.path}: prediction {p.key}: bad condition key: {exc}") from exc
            rows.append(_prediction_row(p))
        if not rows:
            return []
        now = _now()
        verb = "INSERT OR REPLACE" if overwrite else "INSERT OR IGNORE"
        sql = (
            f"{verb} INTO predictions ({', '.join(_PREDICTION_COLUMNS)}, run_id, created_at) "
            f"VALUES ({', '.join('?' * (len(_PREDICTION_COLUMNS) + 2))})"
        )
        written = list(predictions)
        with self._lock:
            self._require_run(run_id)
            with self._transaction():
                if not overwrite:  # inside the write transaction: no other writer between check and write
                    keep = self._new_rows(written, run_id)
                    written = [written[i] for i in keep]
                    rows = [rows[i] for i in keep]
                if rows:
                    self._conn.executemany(sql, [(*r, run_id, now) for r in rows])
                    self._conn.executemany(
                        "DELETE FROM failures WHERE benchmark = ? AND sample_id = ? AND model = ? "
                        "AND condition = ?",
                        [r[:4] for r in rows],
                    )
        return written

    def _new_rows(self, predictions: Sequence[Prediction], run_id: str) -> list[int]:
        """Positions of the predictions to insert (keys not stored, first of a repeated key); raises
        :class:`FingerprintConflictError` when a stored (or earlier) row of a key has another identity."""
        wanted = list(dict.fromkeys(p.key for p in predictions))
        rows = self._conn.execute(
            """
            SELECT CAST(j.key AS INTEGER), p.sample_hash, p.model_fingerprint, p.encoder_fingerprint, p.run_id
            FROM json_each(?) AS j JOIN predictions AS p
              ON p.benchmark = json_extract(j.value, '$[0]')
             AND p.sample_id = json_extract(j.value, '$[1]')
             AND p.model = json_extract(j.value, '$[2]')
             AND p.condition = json_extract(j.value, '$[3]')
            """,
            (json.dumps(wanted),),
        ).fetchall()
        seen: dict[Key, tuple[tuple[str, str, str | None], str | None]] = {
            wanted[r[0]]: ((r[1], r[2], r[3]), r[4]) for r in rows
        }
        keep: list[int] = []
        for i, p in enumerate(predictions):
            mine = (p.sample_hash, p.model_fingerprint, p.encoder_fingerprint)
            if p.key not in seen:
                seen[p.key] = (mine, run_id)
                keep.append(i)
                continue
            theirs, their_run = seen[p.key]
            differ = [name for name, a, b in zip(_IDENTITY_NAMES, theirs, mine) if a and b and a != b]
            if differ:
                raise self._conflict(p, differ, theirs, their_run, mine, run_id)
        return keep

    def _conflict(self, p: Prediction, differ: list[str], theirs: tuple[Any, ...], their_run: str | None,
                  mine: tuple[Any, ...], run_id: str) -> FingerprintConflictError:
        data = self._fingerprint_text([v for v in (*theirs, *mine) if v])
        parts = []
        for name in differ:
            i = _IDENTITY_NAMES.index(name)
            a, b = theirs[i], mine[i]
            parts.append(f"{name} {a}{data.get(a, '')} (stored by run {their_run}) vs {b}{data.get(b, '')} "
                         f"(run {run_id})")
        return FingerprintConflictError(
            f"{self.path}: prediction {p.key} is already stored with another identity: {'; '.join(parts)}. "
            f"Two configurations name different models (or samples) alike in one store; nothing of this "
            f"batch was stored. Give the model another name, or use another store"
        )

    def _fingerprint_text(self, hashes: list[str]) -> dict[str, str]:
        """`` hash -> " = {what it stood for}"`` (short) for the hashes the store knows."""
        if not hashes:
            return {}
        rows = self._conn.execute(
            f"SELECT hash, data FROM fingerprints WHERE hash IN ({', '.join('?' * len(hashes))})", hashes
        ).fetchall()
        return {h: f" = {redact_text(str(d))[:160]}" for h, d in rows}

    def put_failures(self, failures: Iterable[Failure], run_id: str | None = None) -> int:
        """Record failed calls in one transaction; return how many were recorded.

        A key that already has a failure accumulates ``attempts`` and keeps the latest error; a key
        that already has a prediction is skipped (the call succeeded elsewhere).
        """
        rows = []
        for f in failures:
            if not isinstance(f, Failure):
                raise StoreError(f"{self.path}: put_failures() takes Failures, got {type(f).__name__}")
            # any backend's error text (a server may echo its request) is redacted before it is kept
            rows.append((f.benchmark, f.sample_id, f.model, f.condition, redact_text(f.error), int(f.attempts)))
        if not rows:
            return 0
        now = _now()
        with self._lock:
            if run_id is not None:
                self._require_run(run_id)
            with self._transaction():
                before = self._conn.total_changes
                self._conn.executemany(
                    """
                    INSERT INTO failures (benchmark, sample_id, model, condition, error, attempts,
                                          last_error_at, run_id)
                    SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
                    WHERE NOT EXISTS (SELECT 1 FROM predictions WHERE benchmark = ?1 AND sample_id = ?2
                                      AND model = ?3 AND condition = ?4)
                    ON CONFLICT (benchmark, sample_id, model, condition) DO UPDATE SET
                        error = excluded.error, attempts = failures.attempts + excluded.attempts,
                        last_error_at = excluded.last_error_at, run_id = excluded.run_id
                    """,
                    [(*r, now, run_id) for r in rows],
                )
                return self._conn.total_changes - before

    def _require_run(self, run_id: str) -> None:
        if not self._conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
            raise StoreError(f"{self.path}: no run {run_id!r}; call start_run() first")

    # -- reading --

    def has(self, key: Key) -> bool:
        """Whether a prediction is stored for ``key``."""
        with self._lock:
            return (
                self._conn.execute(
                    "SELECT 1 FROM predictions WHERE benchmark = ? AND sample_id = ? AND model = ? AND condition = ?",
                    tuple(key),
                ).fetchone()
                is not None
            )

    def missing(self, keys: Iterable[Key]) -> list[Key]:
        """The keys (in the given order, duplicates kept once) that have no stored prediction.

        One SQL query whatever the number of keys: the keys travel as one JSON array and are
        probed against the primary-key index inside SQLite (100k keys take a fraction of a second).
        """
        wanted = list(dict.fromkeys(tuple(k) for k in keys))
        if not wanted:
            return []
        for k in wanted:
            if len(k) != 4:
                raise StoreError(f"{self.path}: a key is (benchmark, sample_id, model, condition), not {k!r}")
        payload = json.dumps(wanted)
        with self._lock:
            rows = self._conn.execute(
                """
                SELECT CAST(j.key AS INTEGER) FROM json_each(?) AS j
                WHERE NOT EXISTS (
                    SELECT 1 FROM predictions AS p
                    WHERE p.benchmark = json_extract(j.value, '$[0]')
                      AND p.sample_id = json_extract(j.value, '$[1]')
                      AND p.model = json_extract(j.value, '$[2]')
                      AND p.condition = json_extract(j.value, '$[3]'))
                ORDER BY j.key
                """,
                (payload,),
            ).fetchall()
        return [wanted[i] for (i,) in rows]

    def stored_identity(self, keys: Iterable[Key]) -> dict[Key, tuple[str, str, str | None]]:
        """``key -> (sample_hash, model_fingerprint, encoder_fingerprint)`` of the given keys that are
        stored (one query, like :meth:`missing`)."""
        return {k: r.fingerprints for k, r in self.stored_requests(keys).items()}

    def stored_requests(self, keys: Iterable[Key]) -> dict[Key, StoredRequest]:
        """What each stored prediction among ``keys`` was asked (one query, like :meth:`missing`):
        its fingerprints, the frames it was shown (the stored ``frames`` JSON text, ``None`` when not
        recorded) and its prompt hash. The run's identity check compares them with its plan."""
        wanted = list(dict.fromkeys(tuple(k) for k in keys))
        if not wanted:
            return {}
        payload = json.dumps(wanted)
        with self._lock:
            rows = self._conn.execute(
                """
                SELECT CAST(j.key AS INTEGER), p.sample_hash, p.model_fingerprint, p.encoder_fingerprint,
                       p.frames, p.prompt_hash
                FROM json_each(?) AS j JOIN predictions AS p
                  ON p.benchmark = json_extract(j.value, '$[0]')
                 AND p.sample_id = json_extract(j.value, '$[1]')
                 AND p.model = json_extract(j.value, '$[2]')
                 AND p.condition = json_extract(j.value, '$[3]')
                """,
                (payload,),
            ).fetchall()
        make = StoredRequest._make
        return {wanted[r[0]]: make(r[1:]) for r in rows}

    def put_fingerprints(self, entries: Mapping[str, tuple[str, Mapping[str, Any]]]) -> int:
        """Record what fingerprints stand for: ``hash -> (kind, data)``; kinds are ``sample``,
        ``model`` and ``encoder``. Known hashes are left alone. The data is redacted
        (:func:`redact_secrets`) and lets a later run say *what* changed (see :mod:`tempcore.run.identity`)."""
        rows = []
        for digest, (kind, data) in entries.items():
            try:
                text = json.dumps(redact_secrets(dict(data)), sort_keys=True, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise StoreError(f"{self.path}: fingerprint {digest}: data is not plain JSON: {exc}") from exc
            rows.append((digest, kind, text))
        if not rows:
            return 0
        with self._lock, self._transaction():
            before = self._conn.total_changes
            self._conn.executemany("INSERT OR IGNORE INTO fingerprints (hash, kind, data) VALUES (?, ?, ?)", rows)
            return self._conn.total_changes - before

    def fingerprint_data(self, hashes: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``hash -> data`` of the recorded fingerprints among ``hashes``."""
        wanted = sorted({h for h in hashes if h})
        out: dict[str, dict[str, Any]] = {}
        with self._lock:
            for i in range(0, len(wanted), 500):
                part = wanted[i : i + 500]
                for digest, data in self._conn.execute(
                    f"SELECT hash, data FROM fingerprints WHERE hash IN ({', '.join('?' * len(part))})", part
                ):
                    out[digest] = json.loads(data)
        return out

    def stored_keys(self, benchmark: str | None = None, model: str | None = None) -> set[Key]:
        """Every stored prediction key (optionally of one benchmark / model), in one query."""
        where, params = _where({"benchmark": benchmark, "model": model})
        with self._lock:
            return {
                tuple(r)
                for r in self._conn.execute(
                    f"SELECT benchmark, sample_id, model, condition FROM predictions{where}", params
                )
            }

    def predictions(
        self,
        *,
        benchmark: str | Sequence[str] | None = None,
        model: str | Sequence[str] | None = None,
        condition: str | Sequence[str] | None = None,
        sample_id: str | Sequence[str] | None = None,
        run_id: str | Sequence[str] | None = None,
        batch_size: int = 2048,
    ) -> Iterator[Prediction]:
        """Stored predictions matching every given filter (a value or a list of values), in key order."""
        for row in self.prediction_rows(
            benchmark=benchmark,
            model=model,
            condition=condition,
            sample_id=sample_id,
            run_id=run_id,
            batch_size=batch_size,
        ):
            yield row_to_prediction(row)

    def prediction_rows(
        self,
        *,
        benchmark: str | Sequence[str] | None = None,
        model: str | Sequence[str] | None = None,
        condition: str | Sequence[str] | None = None,
        sample_id: str | Sequence[str] | None = None,
        run_id: str | Sequence[str] | None = None,
        batch_size: int = 2048,
    ) -> Iterator[dict[str, Any]]:
        """Like :meth:`predictions` but yields raw rows (dicts of the columns, JSON left as text,
        plus ``run_id`` and ``created_at``) — the fast path for exports."""
        where, params = _where(
            {
                "benchmark": benchmark,
                "model": model,
                "condition": condition,
                "sample_id": sample_id,
                "run_id": run_id,
            }
        )
        names = (*_PREDICTION_COLUMNS, "run_id", "created_at")
        sql = f"SELECT {', '.join(names)} FROM predictions{where} ORDER BY {', '.join(_KEY_COLUMNS)}"
        # A separate cursor; reads in WAL mode see one consistent snapshot per statement.
        with self._lock:
            cursor = self._conn.execute(sql, params)
        while True:
            with self._lock:
                batch = cursor.fetchmany(batch_size)
            if not batch:
                return
            for r in batch:
                yield dict(zip(names, r))

    def export_rows(self, *, run_id: str | None = None, batch_size: int = 2048) -> Iterator[list[tuple[Any, ...]]]:
        """The rows the tidy table (:mod:`tempcore.tidy.table`) is built from, in key order, in batches.

        Each row is a tuple of :data:`EXPORT_COLUMNS`: the key, the Prediction fields the tidy table
        passes through (:data:`tempcore.tidy.schema.PASSTHROUGH`), then the parts it derives columns from,
        read out of the stored JSON here (frame indices / timestamps as JSON text, requested, grey,
        the number of option probabilities, the probabilities as JSON text), and ``run_id`` /
        ``created_at``. ``run_id`` restricts the rows to one run.
        """
        where, params = ("WHERE run_id = ?", [run_id]) if run_id is not None else ("", [])
        sql = (f"SELECT {', '.join((*EXPORT_FIELDS, *_EXPORT_DERIVED_SQL.values()))} FROM predictions {where} "
               f"ORDER BY {', '.join(_KEY_COLUMNS)}")
        yield from self.iter_query(sql, params, batch_size=batch_size)

    def iter_query(
        self, sql: str, params: Sequence[Any] = (), *, batch_size: int = 2048
    ) -> Iterator[list[tuple[Any, ...]]]:
        """Run a read-only query and yield its rows in batches (for exports and ad-hoc analysis)."""
        if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
            raise StoreError(f"{self.path}: iter_query() runs SELECT queries only")
        with self._lock:
            cursor = self._conn.execute(sql, tuple(params))
        while True:
            with self._lock:
                batch = cursor.fetchmany(batch_size)
            if not batch:
                return
            yield batch

    def failures(
        self, *, benchmark: str | None = None, model: str | None = None, condition: str | None = None
    ) -> list[StoredFailure]:
        where, params = _where({"benchmark": benchmark, "model": model, "condition": condition})
        with self._lock:
            rows = self._conn.execute(
                "SELECT benchmark, sample_id, model, condition, error, attempts, last_error_at, run_id "
                f"FROM failures{where} ORDER BY benchmark, sample_id, model, condition",
                params,
            ).fetchall()
        return [StoredFailure(Failure(r[0], r[1], r[2], r[3], error=r[4], attempts=int(r[5])), r[6], r[7])
                for r in rows]

    def counts(self) -> StoreCounts:
        with self._lock:
            runs = self._conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
            preds, parse_errors = self._conn.execute(
                "SELECT COUNT(*), COUNT(parse_error) FROM predictions"
            ).fetchone()
            fails = self._conn.execute("SELECT COUNT(*) FROM failures").fetchone()[0]
        return StoreCounts(runs=runs, predictions=preds, failures=fails, parse_errors=parse_errors)

    def count_by(self, *fields: str) -> dict[tuple[Any, ...], int]:
        """Number of predictions per distinct value of ``fields`` (e.g. ``"model", "condition"``)."""
        bad = [f for f in fields if f not in _COUNT_FIELDS]
        if bad or not fields:
            raise StoreError(f"count_by() takes some of {', '.join(_COUNT_FIELDS)}, not {list(fields)}")
        cols = ", ".join(fields)
        with self._lock:
            rows = self._conn.execute(f"SELECT {cols}, COUNT(*) FROM predictions GROUP BY {cols}").fetchall()
        return {tuple(r[:-1]): int(r[-1]) for r in rows}

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check``: ``"ok"`` for a sound file."""
        with self._lock:
            return "\n".join(r[0] for r in self._conn.execute("PRAGMA integrity_check"))


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any exception)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store

    def __enter__(self) -> None:
        try:
            self.store._begin()
        except sqlite3.OperationalError as exc:
            raise StoreError(f"{self.store.path}: cannot start a write transaction: {exc}") from exc

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        conn = self.store._conn
        if exc_type is None:
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as err:
                _rollback(conn)  # SQLite may have rolled back already (disk full, I/O error)
                raise StoreError(f"{self.store.path}: commit failed, nothing stored: {err}") from err
        else:
            _rollback(conn)
            if isinstance(exc, sqlite3.Error):  # disk full, read-only file, I/O error ...
                raise StoreError(f"{self.store.path}: write failed, nothing stored: {exc}") from exc


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already; a failing rollback never masks the
    error that led to it."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def _where(filters: Mapping[str, Any]) -> tuple[str, list[Any]]:
    clauses, params = [], []
    for column, value in filters.items():
        if value is None:
            continue
        if isinstance(value, str):
            clauses.append(f"{column} = ?")
            params.append(value)
        else:
            values = list(value)
            if not values:
                clauses.append("0")
                continue
            clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
            params.extend(values)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


__all__ = [
    "EXPORT_COLUMNS",
    "EXPORT_FIELDS",
    "FingerprintConflictError",
    "FloatText",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "STORE_FILENAME",
    "Key",
    "RunStore",
    "StoreCounts",
    "StoreError",
    "StoredFailure",
    "damaged_row_error",
    "environment_info",
    "frames_json",
    "git_revision",
    "is_secret_key",
    "redact_secrets",
    "resolve_store_path",
    "row_to_prediction",
]
