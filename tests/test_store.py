"""The SQLite run store: round trips, first-write-wins, failures, resume, concurrency, SIGKILL.

This file doubles as the writer script of the crash tests: ``python test_store.py STORE START STOP``
writes batches START..STOP-1 (skipping stored keys, like a resumed run) and prints
``committed <i>`` after each commit.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tempcore.records import Condition, Failure, FrameSet, Prediction
from tempcore.run.store import (
    MIGRATIONS,
    REDACTED,
    SCHEMA_VERSION,
    RunStore,
    StoreError,
    frames_json,
    is_secret_key,
    redact_secrets,
    resolve_store_path,
)

COND = Condition("maxprob", mode="qa", k=8, encoder="siglip2").key
BATCH = 10


def make_prediction(i: int, *, model: str = "m", tag: str = "", condition: str = COND) -> Prediction:
    """A deterministic, fully populated prediction (every field non-default for some i)."""
    n_opt = 3 + i % 3
    answer = None if i % 7 == 0 else i % n_opt
    probs = tuple(round((j + 1) / sum(range(1, n_opt + 1)), 6) for j in range(n_opt)) if i % 2 else None
    return Prediction(
        benchmark=f"bench{i % 2}",
        sample_id=f"s{i:05d}",
        model=model,
        condition=condition,
        response=f"The answer is ({'ABCDE'[answer]})" + tag if answer is not None else "no idea" + tag,
        answer=answer,
        correct=int(answer == 1) if answer is not None else 0,
        frames=FrameSet(
            indices=(i, i + 3, i + 9), timestamps=(i / 10, (i + 3) / 10, (i + 9) / 10), requested=4
        ),
        prompt_hash=f"{i * 2654435761 % 2**32:08x}",
        latency_s=0.25 + i / 1000,
        answer_method="option_scores" if i % 5 == 0 else "generate",
        option_probs=probs,
        parse_error="no letter found" if answer is None else None,
        sample_hash=f"sample{i}",
        model_fingerprint=f"model-{model}",
        encoder_fingerprint="enc" if i % 3 else None,
        n_frames=None if i % 4 == 0 else 20 + i,
        video_damage="truncated" if i % 6 == 1 else None,
    )


def batch_predictions(b: int) -> list[Prediction]:
    return [make_prediction(b * BATCH + j) for j in range(BATCH)]


def comparable(p: Prediction) -> dict:
    """A prediction without the fields that legitimately differ between two runs."""
    d = p.to_dict()
    d.pop("latency_s")
    return d


@pytest.fixture
def store(tmp_path: Path):
    with RunStore(tmp_path / "run" / "store.sqlite") as s:
        yield s


# --- basics -----------------------------------------------------------------------------


def test_round_trip_equals(store: RunStore) -> None:
    run = store.start_run({"config": {"k": 8}})
    preds = [make_prediction(i) for i in range(40)]
    assert store.put(preds, run) == 40
    back = list(store.predictions())
    assert sorted(back, key=lambda p: p.key) == sorted(preds, key=lambda p: p.key)
    assert any(p.frames is not None and p.option_probs is not None for p in back)
    assert any(p.parse_error for p in back) and any(p.answer_method == "option_scores" for p in back)
    # filters
    assert {p.key for p in store.predictions(benchmark="bench0")} == {
        p.key for p in preds if p.benchmark == "bench0"
    }
    assert [p.sample_id for p in store.predictions(sample_id=["s00003", "s00005"])] == ["s00003", "s00005"]
    assert list(store.predictions(model="other")) == []


def test_insert_or_ignore_first_write_wins(store: RunStore) -> None:
    run = store.start_run({})
    first = [make_prediction(i) for i in range(5)]
    second = [make_prediction(i, tag=" (again)") for i in range(3, 8)]
    assert store.put(first, run) == 5
    assert store.put(second, run) == 3  # keys 3, 4 ignored
    rows = {p.sample_id: p for p in store.predictions()}
    assert len(rows) == 8
    assert rows["s00003"] == first[3] and rows["s00006"] == second[3]
    n_rows = store.connection.execute("SELECT COUNT(*) FROM predictions").fetchone()[0]
    assert n_rows == 8
    # an explicit overwrite replaces on purpose
    assert store.put([make_prediction(3, tag=" (rerun)")], run, overwrite=True) == 1
    assert next(store.predictions(sample_id="s00003")).response.endswith("(rerun)")
    assert store.counts().predictions == 8


def test_duplicate_keys_inside_one_batch_keep_the_first(store: RunStore) -> None:
    run = store.start_run({})
    assert store.put([make_prediction(1), make_prediction(1, tag="x")], run) == 1
    assert not next(store.predictions()).response.endswith("x")


def test_put_rejects_bad_batches_whole(store: RunStore) -> None:
    run = store.start_run({})
    with pytest.raises(StoreError, match="no run 'nope'"):
        store.put([make_prediction(0)], "nope")
    bad = make_prediction(2, condition="maxprob|k=oops")
    with pytest.raises(StoreError, match="bad condition key"):
        store.put([make_prediction(1), bad], run)
    with pytest.raises(StoreError, match="takes Predictions"):
        store.put([make_prediction(1).to_dict()], run)  # type: ignore[list-item]
    assert store.counts().predictions == 0


def test_sqlite_errors_become_store_errors(store: RunStore) -> None:
    run = store.start_run({})
    # an I/O error in the middle of a batch (a connection-local trigger stands in for a full disk)
    store.connection.execute(
        "CREATE TEMP TRIGGER fail AFTER INSERT ON main.predictions WHEN NEW.sample_id = 's00003' "
        "BEGIN SELECT RAISE(ABORT, 'simulated disk full'); END"
    )
    with pytest.raises(StoreError, match="write failed, nothing stored: simulated disk full"):
        store.put([make_prediction(i) for i in range(1, 6)], run)
    assert store.counts().predictions == 0 and not store.connection.in_transaction
    store.connection.execute("DROP TRIGGER temp.fail")
    store.connection.execute("PRAGMA query_only = ON")  # a read-only store
    with pytest.raises(StoreError, match="cannot start a write transaction"):
        store.put([make_prediction(1)], run)
    store.connection.execute("PRAGMA query_only = OFF")
    assert store.put([make_prediction(i) for i in range(1, 6)], run) == 5


def test_failures_are_never_predictions(store: RunStore) -> None:
    run = store.start_run({})
    done, later = make_prediction(1), make_prediction(3)
    store.put([done], run)
    f_new = Failure(*later.key, error="HTTP 500", attempts=3)
    f_done = Failure(*done.key, error="timeout")
    assert store.put_failures([f_new, f_done], run) == 1  # the key with a prediction is not a failure
    assert store.counts().failures == 1 and store.counts().predictions == 1
    assert store.missing([later.key]) == [later.key]  # a failed key is retried on resume
    store.put_failures([Failure(*later.key, error="HTTP 429", attempts=2)], run)
    (stored,) = store.failures()
    assert stored.failure == Failure(*later.key, error="HTTP 429", attempts=5) and stored.run_id == run
    assert not store.has(later.key)
    # a later success removes the failure
    store.put([later], run)
    assert store.failures() == [] and store.counts().predictions == 2


def test_missing_and_has_resume(store: RunStore) -> None:
    run = store.start_run({})
    keys = [make_prediction(i).key for i in range(30)]
    store.put([make_prediction(i) for i in range(0, 30, 3)], run)
    missing = store.missing(keys + keys[:2])
    assert missing == [k for i, k in enumerate(keys) if i % 3]
    assert store.has(keys[0]) and not store.has(keys[1])
    assert store.stored_keys() == {keys[i] for i in range(0, 30, 3)}
    assert store.stored_keys(benchmark="bench0") == {keys[i] for i in range(0, 30, 6)}
    assert store.missing([]) == []
    with pytest.raises(StoreError, match="a key is"):
        store.missing([("b", "s", "m")])  # type: ignore[list-item]


def test_keys_with_special_characters(store: RunStore) -> None:
    run = store.start_run({})
    p = Prediction("b'\"", 'id "q" ü\\', "org/model-7B", COND, "r", 0, 1)
    store.put([p], run)
    assert store.missing([p.key, ("b'\"", "other", "org/model-7B", COND)]) == [
        ("b'\"", "other", "org/model-7B", COND)
    ]
    assert list(store.predictions()) == [p]


def test_ten_thousand_keys_lookup_is_fast_and_one_query(store: RunStore) -> None:
    run = store.start_run({})
    preds = [make_prediction(i) for i in range(10_000)]
    for start in range(0, len(preds), 1000):
        store.put(preds[start : start + 1000], run)
    keys = [p.key for p in preds] + [make_prediction(i).key for i in range(10_000, 10_100)]
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    missing = store.missing(keys)
    store.connection.set_trace_callback(None)
    assert missing == keys[10_000:]
    assert len(statements) <= 2, statements  # one query, not one per key (a count, not a wall time)
    statements.clear()
    store.connection.set_trace_callback(statements.append)
    assert len(store.stored_keys()) == 10_000
    store.connection.set_trace_callback(None)
    assert len(statements) <= 2, statements


# --- manifests and secrets ------------------------------------------------------------


def test_manifest_is_stored_redacted_with_environment(store: RunStore) -> None:
    manifest = {
        "config": {"k": 32, "fps": 10, "seeds": [0, 1]},
        "models": [
            {"name": "served", "api_key": "sk-abcdefghijklmnopqrstuvwx", "api_key_env": "OPENAI_API_KEY"},
            {"name": "local", "revision": "abc123", "max_new_tokens": 8},
        ],
        "http": {"headers": {"Authorization": "Bearer xyz", "X-Api-Key": "k"}},
        "argv": ["tempcore", "run", "--api-key", "secret1", "--token=secret2", "--k", "32"],
    }
    run = store.start_run(manifest)
    back = store.manifest(run)
    text = json.dumps(back)
    for secret in ("sk-abcdefghijklmnopqrstuvwx", "Bearer xyz", "secret1", "secret2", '"k"}'):
        assert secret not in text
    assert back["models"][0]["api_key_env"] == "OPENAI_API_KEY"
    assert back["models"][1] == {"name": "local", "revision": "abc123", "max_new_tokens": 8}
    assert back["argv"] == ["tempcore", "run", "--api-key", REDACTED, f"--token={REDACTED}", "--k", "32"]
    assert back["config"] == manifest["config"]
    env = back["environment"]
    assert env["python"] == sys.version.split()[0] and "numpy" in env["packages"]
    assert "git_revision" in env
    # nothing secret reached the file either
    raw = Path(store.path).read_bytes() + (
        Path(f"{store.path}-wal").read_bytes() if Path(f"{store.path}-wal").exists() else b""
    )
    assert b"sk-abcdefghijklmnopqrstuvwx" not in raw and b"secret1" not in raw
    assert store.runs()[0][0] == run
    with pytest.raises(StoreError, match="no run"):
        store.manifest("missing")
    with pytest.raises(StoreError, match="already exists"):
        store.start_run({}, run_id=run)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("api_key", True),
        ("apiKey", True),
        ("OPENAI_API_KEY", True),
        ("x-api-key", True),
        ("token", True),
        ("hf_token", True),
        ("access_token", True),
        ("Authorization", True),
        ("password", True),
        ("client_secret", True),
        ("secret_key", True),
        ("max_new_tokens", False),
        ("tokenizer", False),
        ("api_key_env", False),
        ("token_file", False),
        ("cache_key", False),
        ("api_base", False),
        ("model", False),
    ],
)
def test_is_secret_key(name: str, secret: bool) -> None:
    assert is_secret_key(name) is secret


def test_redact_secrets_recurses_and_copies() -> None:
    data = {"a": [{"token": "t"}, ("x", {"password": "p"})], "b": "hf_abcdefghijklmnopqrstuvwxyz12", "c": 3}
    out = redact_secrets(data)
    assert out == {"a": [{"token": REDACTED}, ["x", {"password": REDACTED}]], "b": REDACTED, "c": 3}
    assert data["a"][0]["token"] == "t"  # the input is not modified


# --- opening, schema, migrations ----------------------------------------------------------


def test_open_run_directory_and_errors(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with RunStore.open(run_dir) as s:
        assert s.path == run_dir / "store.sqlite"
        assert s.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert s.connection.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert s.connection.execute("PRAGMA busy_timeout").fetchone()[0] > 0
        assert s.schema_version == SCHEMA_VERSION == 3
    assert resolve_store_path(run_dir) == run_dir / "store.sqlite"
    assert resolve_store_path(tmp_path / "new_run") == tmp_path / "new_run" / "store.sqlite"
    assert resolve_store_path(tmp_path / "file.db") == tmp_path / "file.db"
    with pytest.raises(StoreError, match="no run store"):
        RunStore(tmp_path / "absent.sqlite", create=False)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database at all, just some text" * 50)
    with pytest.raises(StoreError, match="junk.sqlite"):
        RunStore(junk)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(StoreError, match="not a tempcore run store"):
        RunStore(other)
    with pytest.raises(StoreError, match="synchronous"):
        RunStore(tmp_path / "x.sqlite", synchronous="OFF")


def test_migration_hook_and_newer_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.sqlite"
    with RunStore(path) as s:
        run = s.start_run({})
        s.put([make_prediction(1)], run)

    def add_notes(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE predictions ADD COLUMN notes TEXT")

    monkeypatch.setitem(MIGRATIONS, 3, add_notes)
    monkeypatch.setattr("tempcore.run.store.SCHEMA_VERSION", 4)
    with RunStore(path) as s:
        assert s.schema_version == 4
        cols = [r[1] for r in s.connection.execute("PRAGMA table_info(predictions)")]
        assert "notes" in cols
        assert list(s.predictions()) == [make_prediction(1)]
    monkeypatch.setattr("tempcore.run.store.SCHEMA_VERSION", 3)
    with pytest.raises(StoreError, match="newer tempcore"):
        RunStore(path)


# The v1 layout exactly as tempcore 0.x wrote it (before the identity columns).
_V1_DDL = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE runs (run_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, manifest TEXT NOT NULL);
CREATE TABLE predictions (
    benchmark TEXT NOT NULL, sample_id TEXT NOT NULL, model TEXT NOT NULL, condition TEXT NOT NULL,
    response TEXT NOT NULL, answer INTEGER, correct INTEGER NOT NULL CHECK (correct IN (0, 1)),
    frames TEXT, prompt_hash TEXT NOT NULL, latency_s REAL NOT NULL, answer_method TEXT NOT NULL,
    option_probs TEXT, parse_error TEXT, target INTEGER,
    run_id TEXT NOT NULL REFERENCES runs (run_id), created_at TEXT NOT NULL,
    PRIMARY KEY (benchmark, sample_id, model, condition));
CREATE TABLE failures (
    benchmark TEXT NOT NULL, sample_id TEXT NOT NULL, model TEXT NOT NULL, condition TEXT NOT NULL,
    error TEXT NOT NULL, attempts INTEGER NOT NULL, last_error_at TEXT NOT NULL,
    run_id TEXT REFERENCES runs (run_id), PRIMARY KEY (benchmark, sample_id, model, condition));
INSERT INTO schema_version VALUES (1);
INSERT INTO runs VALUES ('old', '2026-01-01T00:00:00+00:00', '{}');
INSERT INTO predictions VALUES ('b', 's1', 'm', 'uniform|k=8|fps=10|seed=0', '(B)', 1, 1,
    '{"indices":[1,2],"timestamps":[0.1,0.2],"requested":8,"grey":false}', 'ab', 0.5, 'generate',
    '[0.25,0.75]', NULL, 1, 'old', '2026-01-01T00:00:00+00:00');
"""


def test_a_v1_store_is_migrated_in_place_keeping_every_row(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite"
    con = sqlite3.connect(path)
    con.executescript(_V1_DDL)
    con.close()
    with RunStore(path) as s:
        assert s.schema_version == 3  # v1 -> v2 -> v3 in one opening transaction
        cols = [r[1] for r in s.connection.execute("PRAGMA table_info(predictions)")]
    with RunStore(tmp_path / "fresh.sqlite") as fresh:
        # same columns (ALTER TABLE appends, so the order differs; every statement names its columns)
        assert sorted(cols) == sorted(r[1] for r in fresh.connection.execute("PRAGMA table_info(predictions)"))
    with RunStore(path) as s:
        (p,) = list(s.predictions())
        assert (p.response, p.answer, p.correct, p.option_probs, p.target) == ("(B)", 1, 1, (0.25, 0.75), 1)
        assert p.frames == FrameSet((1, 2), (0.1, 0.2), requested=8)
        # fingerprints unknown: a run never takes this row for a match
        assert (p.sample_hash, p.model_fingerprint, p.encoder_fingerprint, p.n_frames) == ("", "", None, None)
        assert s.stored_identity([p.key]) == {p.key: ("", "", None)}
        # the migrated store takes new rows with every column
        run = s.start_run({})
        q = make_prediction(3)
        assert s.put([q], run) == 1 and q in list(s.predictions())


# The v2 layout exactly as the tempcore before the grounding columns wrote it.
_V2_DDL = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE runs (run_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, manifest TEXT NOT NULL);
CREATE TABLE predictions (
    benchmark TEXT NOT NULL, sample_id TEXT NOT NULL, model TEXT NOT NULL, condition TEXT NOT NULL,
    response TEXT NOT NULL, answer INTEGER, correct INTEGER NOT NULL CHECK (correct IN (0, 1)),
    frames TEXT, prompt_hash TEXT NOT NULL, latency_s REAL NOT NULL, answer_method TEXT NOT NULL,
    option_probs TEXT, parse_error TEXT, target INTEGER, sample_hash TEXT NOT NULL DEFAULT '',
    model_fingerprint TEXT NOT NULL DEFAULT '', encoder_fingerprint TEXT, n_frames INTEGER,
    video_damage TEXT, run_id TEXT NOT NULL REFERENCES runs (run_id), created_at TEXT NOT NULL,
    PRIMARY KEY (benchmark, sample_id, model, condition));
CREATE TABLE failures (
    benchmark TEXT NOT NULL, sample_id TEXT NOT NULL, model TEXT NOT NULL, condition TEXT NOT NULL,
    error TEXT NOT NULL, attempts INTEGER NOT NULL, last_error_at TEXT NOT NULL,
    run_id TEXT REFERENCES runs (run_id), PRIMARY KEY (benchmark, sample_id, model, condition));
CREATE TABLE fingerprints (hash TEXT PRIMARY KEY, kind TEXT NOT NULL, data TEXT NOT NULL);
INSERT INTO schema_version VALUES (2);
INSERT INTO runs VALUES ('old', '2026-01-01T00:00:00+00:00', '{}');
INSERT INTO predictions VALUES ('b', 's1', 'm', 'uniform|k=8|fps=10|seed=0', '(B)', 1, 1,
    '{"indices":[1,2],"timestamps":[0.1,0.2],"requested":8,"grey":false}', 'ab', 0.5, 'generate',
    '[0.25,0.75]', NULL, 1, 'sh', 'mf', NULL, 310, 'truncated at 3.0 s', 'old', '2026-01-01T00:00:00+00:00');
INSERT INTO predictions VALUES ('b', 's2', 'm', 'uniform|k=8|fps=10|seed=0', 'no idea', NULL, 0,
    NULL, 'cd', 0.25, 'generate', NULL, 'no option letter', NULL, 'sh2', 'mf', NULL, NULL, NULL, 'old',
    '2026-01-01T00:00:00+00:00');
INSERT INTO fingerprints VALUES ('mf', 'model', '{"model":"m"}');
"""


def test_a_v2_store_is_migrated_to_v3_keeping_every_row_and_takes_grounding_rows(tmp_path: Path) -> None:
    import dataclasses

    path = tmp_path / "v2.sqlite"
    con = sqlite3.connect(path)
    con.executescript(_V2_DDL)
    con.close()
    with RunStore(path) as s:
        assert s.schema_version == 3
        cols = [r[1] for r in s.connection.execute("PRAGMA table_info(predictions)")]
    with RunStore(tmp_path / "fresh.sqlite") as fresh:
        assert sorted(cols) == sorted(r[1] for r in fresh.connection.execute("PRAGMA table_info(predictions)"))
    with RunStore(path) as s:
        p1, p2 = sorted(s.predictions(), key=lambda p: p.sample_id)
        assert (p1.response, p1.answer, p1.correct, p1.option_probs, p1.target) == ("(B)", 1, 1, (0.25, 0.75), 1)
        assert (p1.sample_hash, p1.model_fingerprint, p1.n_frames, p1.video_damage) == ("sh", "mf", 310,
                                                                                       "truncated at 3.0 s")
        assert (p2.answer, p2.correct, p2.parse_error) == (None, 0, "no option letter")
        # the old rows have no grounding answer
        assert all((p.pred_start, p.pred_end, p.iou) == (None, None, None) for p in (p1, p2))
        assert s.fingerprint_data(["mf"]) == {"mf": {"model": "m"}}
        run = s.start_run({})
        g = dataclasses.replace(make_prediction(5), answer=None, target=None, option_probs=None, correct=1,
                                pred_start=12.5, pred_end=30.0, iou=0.75, response="[12.5, 30.0]")
        failed = dataclasses.replace(make_prediction(6), answer=None, target=None, option_probs=None, correct=0,
                                     parse_error="no interval", response="somewhere")
        assert s.put([g, failed], run) == 2
        got = {p.key: p for p in s.predictions()}
        assert got[g.key] == g and got[failed.key] == failed
        # the store refuses an IoU outside [0, 1] even from a writer that skips the record checks
        with pytest.raises(sqlite3.IntegrityError):
            s.connection.execute("UPDATE predictions SET iou = 1.5 WHERE sample_id = ?", (g.sample_id,))


def test_identity_columns_round_trip_and_fingerprint_data(store: RunStore) -> None:
    import dataclasses

    run = store.start_run({})
    p = dataclasses.replace(make_prediction(4), sample_hash="sh", model_fingerprint="mf",
                            encoder_fingerprint="ef", n_frames=310, video_damage="truncated at 17.0 s")
    store.put([p], run)
    assert list(store.predictions()) == [p]
    assert store.stored_identity([p.key, ("x", "y", "z", COND)]) == {p.key: ("sh", "mf", "ef")}
    got = store.stored_requests([p.key, ("x", "y", "z", COND)])
    assert list(got) == [p.key] and got[p.key].fingerprints == ("sh", "mf", "ef")
    assert got[p.key].prompt_hash == p.prompt_hash and p.frames is not None
    assert got[p.key].frames == frames_json(p.frames) and FrameSet.from_dict(json.loads(got[p.key].frames)) == p.frames
    assert store.put_fingerprints({"mf": ("model", {"model": "m", "api_key": "sk-secretsecretsecret00"})}) == 1
    assert store.put_fingerprints({"mf": ("model", {"model": "other"})}) == 0  # first write wins
    assert store.fingerprint_data(["mf", "nope"]) == {"mf": {"model": "m", "api_key": REDACTED}}


# --- concurrency ------------------------------------------------------------------------


def _concurrent_writer(path: str, start: int, stop: int, tag: str, barrier, result_queue) -> None:  # noqa: ANN001
    try:
        barrier.wait(timeout=30)  # both create / open the store at the same moment
        with RunStore(path) as s:
            run = s.start_run({"writer": tag})
            barrier.wait(timeout=30)
            written = 0
            for b in range(start, stop, BATCH):
                written += s.put([make_prediction(i, tag=tag) for i in range(b, min(b + BATCH, stop))], run)
                s.put_failures([Failure("bench0", f"f{b}", "m", COND, f"error from {tag}")], run)
                time.sleep(0.002)  # let the other writer in between our transactions
        result_queue.put((tag, written, None))
    except BaseException as exc:  # report anything to the parent
        result_queue.put((tag, 0, repr(exc)))


def test_two_concurrent_writer_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "new" / "store.sqlite")
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_concurrent_writer, args=(path, 0, 600, "A", barrier, queue)),
        ctx.Process(target=_concurrent_writer, args=(path, 300, 900, "B", barrier, queue)),
    ]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    assert [r[2] for r in results] == [None, None], results
    assert sum(r[1] for r in results) == 900  # every key written exactly once
    with RunStore(path) as s:
        assert s.integrity_check() == "ok"
        rows = list(s.predictions())
        assert len(rows) == 900 and len({p.key for p in rows}) == 900
        assert {p.sample_id for p in rows} == {f"s{i:05d}" for i in range(900)}
        for p in rows:
            i = int(p.sample_id[1:])
            allowed = {"A"} if i < 300 else {"B"} if i >= 600 else {"A", "B"}
            assert any(comparable(p) == comparable(make_prediction(i, tag=t)) for t in allowed)
        failures = s.failures()
        assert len(failures) == len({f.failure.sample_id for f in failures})
        assert s.counts().runs == 2
        # the two writers really did interleave their transactions
        order = [r[0] for r in s.connection.execute("SELECT run_id FROM predictions ORDER BY created_at")]
        assert sum(a != b for a, b in zip(order, order[1:])) >= 2


# --- SIGKILL ------------------------------------------------------------------------------

N_BATCHES = 150


def _writer_main(argv: list[str]) -> None:
    path, start, stop = argv[0], int(argv[1]), int(argv[2])
    with RunStore(path) as s:
        run = s.start_run({"writer": "crash-test", "batches": [start, stop]})
        print("ready", flush=True)
        for b in range(start, stop):
            batch = batch_predictions(b)
            todo = set(s.missing([p.key for p in batch]))
            s.put([p for p in batch if p.key in todo], run)
            print(f"committed {b}", flush=True)


def _run_writer(path: Path, start: int, stop: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, __file__, str(path), str(start), str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def _rows(path: Path) -> dict[tuple, dict]:
    with RunStore(path, create=False) as s:
        assert s.integrity_check() == "ok"
        return {p.key: comparable(p) for p in s.predictions()}


def test_sigkill_at_random_points_then_resume(tmp_path: Path) -> None:
    reference = tmp_path / "reference.sqlite"
    with RunStore(reference) as s:
        run = s.start_run({})
        for b in range(N_BATCHES):
            s.put(batch_predictions(b), run)
    expected = _rows(reference)
    assert len(expected) == N_BATCHES * BATCH
    batch_of = {p.key: b for b in range(N_BATCHES) for p in batch_predictions(b)}

    rng = random.Random(20240611)
    killed_mid_run = 0
    for trial in range(4):
        path = tmp_path / f"trial{trial}.sqlite"
        proc = _run_writer(path, 0, N_BATCHES)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
        # kill at a random moment: after a random batch was reported, plus a random sub-batch delay
        target = rng.randrange(0, N_BATCHES - 50)
        seen = []
        while not seen or seen[-1] < target:
            seen.append(int(proc.stdout.readline().split()[1]))
        time.sleep(rng.uniform(0.0, 0.002))
        proc.send_signal(signal.SIGKILL)
        # read the rest through the same buffered reader: communicate() reads the pipe's descriptor
        # directly and would miss lines readline() had already buffered (their batches then looked
        # unreported: present > reported + 1 under load)
        out = proc.stdout.read()
        proc.wait(timeout=30)
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
        reported = seen + [int(line.split()[1]) for line in out.splitlines() if line.startswith("committed")]
        killed_mid_run += proc.returncode == -signal.SIGKILL and len(reported) < N_BATCHES

        rows = _rows(path)
        present = sorted({batch_of[k] for k in rows})
        # every row complete and correct; every batch whole or absent; batches in order
        for k, row in rows.items():
            assert row == expected[k]
        for b in present:
            assert sum(batch_of[k] == b for k in rows) == BATCH
        assert present == list(range(len(present)))
        # nothing reported as committed was lost; at most the batch in flight is extra
        assert len(present) >= len(reported)
        assert len(present) <= len(reported) + 1
        with RunStore(path) as s:
            assert s.count_by("run_id") == ({} if not rows else {(s.runs()[0][0],): len(rows)})

        resume = _run_writer(path, 0, N_BATCHES)
        out, err = resume.communicate(timeout=60)
        assert resume.returncode == 0, err
        assert _rows(path) == expected
        with RunStore(path) as s:
            assert s.counts().predictions == len(expected)
    assert killed_mid_run >= 3  # the kills did land while the writer was working


if __name__ == "__main__":
    _writer_main(sys.argv[1:])


def _open_at_once(path: str, barrier: object, result_queue: object) -> None:
    try:
        barrier.wait(timeout=60)
        with RunStore(path) as s:
            s.start_run({"opener": os.getpid()})
        result_queue.put(None)
    except BaseException as exc:  # report anything to the parent
        result_queue.put(repr(exc))


def test_many_processes_create_one_new_store_at_the_same_moment(tmp_path: Path) -> None:
    """Creating a store switches it to WAL, which SQLite may refuse at once while another process
    does the same; every opener must still succeed."""
    ctx = multiprocessing.get_context("spawn")
    for trial in range(3):
        path = str(tmp_path / f"t{trial}" / "store.sqlite")
        barrier = ctx.Barrier(6)
        queue = ctx.Queue()
        procs = [ctx.Process(target=_open_at_once, args=(path, barrier, queue)) for _ in range(6)]
        for p in procs:
            p.start()
        errors = [queue.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=30)
        assert errors == [None] * 6
        with RunStore(path) as s:
            assert len(s.runs()) == 6 and s.integrity_check() == "ok"


def test_frames_json_is_what_json_dumps_writes() -> None:
    """The hand-built ``frames`` text (the identity check builds one per stored key) is byte for
    byte the ``json.dumps`` of the FrameSet's fields, so stored rows and plans compare as text."""
    rng = random.Random(0)
    for _ in range(500):
        n = rng.randint(0, 40)
        f = FrameSet(tuple(rng.randint(0, 10**6) for _ in range(n)),
                     tuple(rng.random() * rng.choice([1.0, 100.0, 1e6, 1e-7]) for _ in range(n)),
                     requested=rng.randint(0, 64), grey=rng.random() < 0.5)
        want = json.dumps({"indices": list(f.indices), "timestamps": list(f.timestamps), "requested": f.requested,
                           "grey": f.grey}, separators=(",", ":"))
        assert frames_json(f) == want
    assert frames_json(FrameSet((1,), (float("nan"),), 1)) == '{"indices":[1],"timestamps":[NaN],"requested":1,"grey":false}'
