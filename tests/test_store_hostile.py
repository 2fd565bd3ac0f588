"""Hostile rows for the run store (issue 31): numbers a prediction cannot hold refused at the door
(``import table``), and a damaged row already in a store named, with a repair path, while the other
rows survive."""

from __future__ import annotations

import math
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from tempcore.records import Condition, FrameSet, Prediction
from tempcore.run.store import RunStore, StoreError
from tempcore.tidy.table import PredictionsTableError, import_table, predictions_table

COND = Condition("uniform", k=4).key


def prediction(sid: str, probs: tuple[float, ...] | None = (0.1, 0.6, 0.2, 0.1), **kw: object) -> Prediction:
    return Prediction("toy", sid, "m", COND, "B", 1, 1, frames=FrameSet((0, 1), (0.0, 0.5), requested=2),
                      option_probs=probs, target=1, **kw)  # type: ignore[arg-type]


def store_with(path: Path, *predictions: Prediction) -> RunStore:
    store = RunStore(path)
    store.put(list(predictions), store.start_run({"test": True}))
    return store


@pytest.mark.parametrize(
    ("probs", "message"),
    [("[0.1, -3.0, 0.2, 0.1]", "finite numbers in \\[0, 1\\], found -3.0"),
     ("[NaN, 0.5, 0.3, 0.2]", "finite numbers in \\[0, 1\\], found nan"),
     ("[0.1, Infinity, 0.2, 0.1]", "found inf"),
     ("[0.1, 1.5, 0.2, 0.1]", "found 1.5"),
     ('[0.1, "x", 0.2, 0.1]', "")],
)
def test_import_table_refuses_impossible_option_probs_naming_the_row(tmp_path: Path, probs: str, message: str) -> None:
    with store_with(tmp_path / "a.sqlite", prediction("s1"), prediction("s2")) as a:
        table = predictions_table(a)
    i = table.column_names.index("option_probs")
    table = table.set_column(i, "option_probs", pa.array([table.column(i)[0].as_py(), probs]))
    pacsv.write_csv(table, tmp_path / "t.csv")
    with RunStore(tmp_path / "b.sqlite") as b:
        with pytest.raises(PredictionsTableError, match=f"row 2: .*option_probs.*{message}"):
            import_table(tmp_path / "t.csv", b)
        assert b.counts().predictions == 0  # nothing stored, and the store reads
        assert list(b.predictions()) == []


def test_predictions_refuse_non_finite_numbers() -> None:
    for bad in ({"latency_s": math.nan}, {"latency_s": -1.0}, {"probs": (0.5, math.inf)}):
        probs = bad.pop("probs", (0.1, 0.6, 0.2, 0.1))
        with pytest.raises(ValueError, match="must be finite|finite number"):
            prediction("s", probs, **bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timestamps must be finite"):
        Prediction("toy", "s", "m", COND, "B", 1, 1, frames=FrameSet((0,), (math.nan,)))
    assert prediction("s", (0.0, 1.0, 0.0, 0.0)).p_correct == 1.0


@pytest.mark.parametrize(("column", "damage"), [
    ("option_probs", "[NaN,0.5,0.3,0.2]"),  # what an older tempcore wrote: SQLite's JSON reader fails
    ("option_probs", "[0.1,-3.0,0.2,0.1]"),  # valid JSON, not a probability: p_correct would be -3
    ("frames", '{"indices":[0],"timestamps":[NaN],"requested":1,"grey":false}'),
])
def test_a_damaged_stored_row_is_a_named_error_and_the_others_survive(tmp_path: Path, column: str,
                                                                       damage: str) -> None:
    path = tmp_path / "s.sqlite"
    store_with(path, prediction("s1"), prediction("s2"), prediction("s3")).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE predictions SET {column} = ? WHERE sample_id = 's2'", (damage,))
    with RunStore(path) as store:
        for read in (lambda: predictions_table(store), lambda: list(store.predictions())):
            with pytest.raises(StoreError, match=r"stored prediction \('toy', 's2', 'm', .*\) is damaged") as err:
                read()
            assert "DELETE FROM predictions WHERE benchmark = 'toy' AND sample_id = 's2'" in str(err.value)
        assert store.integrity_check() == "ok"
    with sqlite3.connect(path) as conn:  # the repair the message names
        conn.execute("DELETE FROM predictions WHERE sample_id = 's2'")
    with RunStore(path) as store:
        table = predictions_table(store)
        assert table.column("sample_id").to_pylist() == ["s1", "s3"]
        assert [p.sample_id for p in store.predictions()] == ["s1", "s3"]


# --- two configurations sharing a store (item 3) -------------------------------------------------


def test_a_key_stored_by_another_model_is_a_conflict_naming_both(tmp_path: Path) -> None:
    from tempcore.run.store import FingerprintConflictError

    with RunStore(tmp_path / "s.sqlite") as store:
        store.put_fingerprints({"fp-mean": ("model", {"model": "zoo-mean"}), "fp-max": ("model", {"model": "zoo-max"})})
        first, second = store.start_run({"config": 1}), store.start_run({"config": 2})
        assert store.put([prediction("s1", model_fingerprint="fp-mean")], first) == 1
        mine = [prediction("s2", model_fingerprint="fp-max"), prediction("s1", model_fingerprint="fp-max")]
        with pytest.raises(FingerprintConflictError, match=r"prediction \('toy', 's1', 'm', .*\) is already stored "
                           r"with another identity: model fingerprint fp-mean = .*zoo-mean.* \(stored by run "
                           rf"{first}\) vs fp-max = .*zoo-max.* \(run {second}\)"):
            store.put(mine, second)
        assert sorted(store.stored_keys()) == [prediction("s1").key]  # nothing of the batch was stored
        assert [p.model_fingerprint for p in store.predictions()] == ["fp-mean"]
        # the same identity, or one not known on either side: first write wins, silently, as before
        assert store.put([prediction("s1", model_fingerprint="fp-mean")], second) == 0
        assert store.put([prediction("s1")], second) == 0
        assert store.put([prediction("s1", model_fingerprint="fp-max")], second, overwrite=True) == 1
        with pytest.raises(FingerprintConflictError, match="sample hash"):  # a repeated key within one batch
            store.put([prediction("s3", sample_hash="a"), prediction("s3", sample_hash="b")], second)


# --- a full disk at commit (item 4) --------------------------------------------------------------

FULL_AT_COMMIT = """
import os, resource, signal, sys
from tempcore.records import Condition, Prediction
from tempcore.run.store import RunStore, StoreError
path = sys.argv[1]
store = RunStore(path)
run = store.start_run({})
store._conn.execute("PRAGMA cache_size = -65536")  # nothing spills before COMMIT writes the pages
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
limit = max(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p)) + 4096
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
rows = [Prediction("toy", f"s{i}", "m", Condition("uniform", k=4).key, "x" * 2000, 1, 1) for i in range(500)]
try:
    store.put(rows, run)
except StoreError as exc:
    print("StoreError:", exc)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE / SIGXFSZ")
def test_a_write_failing_at_commit_names_the_write_error_not_the_rollback(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    done = subprocess.run([sys.executable, "-c", FULL_AT_COMMIT, str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "cannot rollback" not in done.stdout + done.stderr
    assert re.search(r"StoreError: .*s\.sqlite: commit failed, nothing stored: (disk I/O error|database or disk is "
                     r"full)", done.stdout), done.stdout
    with RunStore(path) as store:
        assert store.counts().predictions == 0 and store.integrity_check() == "ok"


# --- another writer stored the same rows first (item 10) -----------------------------------------


def test_rows_another_writer_stored_first_are_not_counted_in_the_summary(tmp_path: Path) -> None:
    from tempcore.run.answering import commit
    from tempcore.run.executor import ModelSummary
    from tempcore.run.predictions import Answered

    rows = [prediction(f"s{i}", model_fingerprint="fp") for i in range(4)]
    with RunStore(tmp_path / "s.sqlite") as store:
        other, mine = store.start_run({"writer": 1}), store.start_run({"writer": 2})
        store.put(rows[:3], other)  # stored meanwhile by another process
        summary = ModelSummary("m", planned=4)
        commit(store, mine, Answered((), tuple(rows)), summary)
        assert (summary.done, summary.discarded, summary.correct) == (1, 3, 1)
        assert summary.correct <= summary.done
