"""The tidy predictions table: building, writing / reading CSV, Parquet and JSONL, validation,
importing tidy tables, and the ``tempcore export`` / ``tempcore import table`` commands
(lmms-eval and response-file imports: test_importers.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from tempcore.cli import main
from tempcore.records import Condition, FrameSet, Prediction, Sample
from tempcore.run.store import RunStore
from tempcore.tidy.table import (
    REQUIRED_COLUMNS,
    PredictionsTableError,
    import_table,
    predictions_table,
    read_predictions,
    table_to_predictions,
    tidy_columns,
    validate_table,
    write_table,
)

MAXPROB = Condition("maxprob", mode="qa", k=8, encoder="siglip2")
ORACLE = Condition("oracle", mode="none", k=8, window=3)
ROTATED = Condition("uniform", k=8, rotation=2, variant="linspace", seed=7, fps=2.5)
NOFRAME = Condition("noframe", k=8)


def _predictions() -> list[Prediction]:
    return [
        Prediction(
            "videomme",
            "001-1",
            "qwen",
            MAXPROB.key,
            'The answer is (B).\nBecause, "quoted", text',
            1,
            1,
            FrameSet((3, 10, 42), (0.3, 1.0, 4.2), requested=8),
            "ab12",
            1.5,
            "generate",
        ),
        Prediction(
            "videomme", "001-2", "qwen", ORACLE.key, "C", 2, 0, FrameSet((5,), (0.5,), 8), "cd34", 0.25
        ),
        Prediction(
            "nextqa",
            "007",
            "llava",
            ROTATED.key,
            "",
            0,
            0,
            None,
            "ef56",
            0.75,
            "option_scores",
            option_probs=(0.5, 0.125, 0.25, 0.125),
        ),
        Prediction(
            "nextqa",
            "008",
            "llava",
            NOFRAME.key,
            "hmm",
            None,
            0,
            FrameSet((), (), 8, grey=True),
            parse_error="no option letter found",
        ),
    ]


SAMPLES = [
    Sample("videomme", "001-1", "v.mp4", "q?", ("a", "b", "c", "d"), 1),
    Sample("videomme", "001-2", "v.mp4", "q?", ("a", "b", "c", "d"), 3),
    Sample("nextqa", "007", "n.mp4", "q?", ("w", "x", "y", "z"), 2),
]


@pytest.fixture
def store(tmp_path: Path):
    with RunStore(tmp_path / "run" / "store.sqlite") as s:
        s.start_run({"config": {}}, run_id="r1")
        s.put(_predictions(), "r1")
        yield s


def _by_key(rows: list[dict]) -> dict:
    return {(r["benchmark"], r["sample_id"], r["model"], r["condition"]): r for r in rows}


def test_table_columns_and_values(store: RunStore) -> None:
    table = predictions_table(store)
    assert table.column_names[: len(REQUIRED_COLUMNS)] == list(REQUIRED_COLUMNS)
    assert table.column_names == tidy_columns()
    assert table.column("p_correct").null_count == table.num_rows  # no targets stored, no samples given
    assert table.schema.field("correct").type == pa.int8()
    rows = _by_key(table.to_pylist())
    r = rows[("videomme", "001-1", "qwen", MAXPROB.key)]
    assert (r["strategy"], r["mode"], r["k"], r["window"], r["encoder"], r["fps"], r["seed"]) == (
        "maxprob",
        "qa",
        8,
        None,
        "siglip2",
        10.0,
        0,
    )
    assert json.loads(r["frame_indices"]) == [3, 10, 42] and json.loads(r["frame_timestamps"]) == [
        0.3,
        1.0,
        4.2,
    ]
    assert (r["frames_requested"], r["frames_grey"], r["run_id"]) == (8, False, "r1")
    assert r["parse_error"] == 0 and r["parse_error_message"] is None and r["n_options"] is None
    o = rows[("videomme", "001-2", "qwen", ORACLE.key)]
    assert (o["strategy"], o["window"], o["mode"]) == ("oracle", 3, "none")
    u = rows[("nextqa", "007", "llava", ROTATED.key)]
    assert (u["rotation"], u["variant"], u["seed"], u["fps"], u["n_options"]) == (2, "linspace", 7, 2.5, 4)
    assert u["frame_indices"] is None and json.loads(u["option_probs"]) == [0.5, 0.125, 0.25, 0.125]
    n = rows[("nextqa", "008", "llava", NOFRAME.key)]
    assert (n["parse_error"], n["parse_error_message"], n["answer"], n["frames_grey"]) == (
        1,
        "no option letter found",
        None,
        True,
    )
    assert predictions_table(store, run_id="other").num_rows == 0


def test_p_correct_from_target_or_samples(store: RunStore) -> None:
    table = predictions_table(store, samples=SAMPLES)
    assert table.column_names[len(REQUIRED_COLUMNS)] == "p_correct"
    rows = _by_key(table.to_pylist())
    assert rows[("nextqa", "007", "llava", ROTATED.key)]["p_correct"] == 0.25  # gold index 2, original order
    assert rows[("videomme", "001-1", "qwen", MAXPROB.key)]["p_correct"] is None  # no probabilities
    assert rows[("videomme", "001-1", "qwen", MAXPROB.key)]["n_options"] == 4
    bad = [Sample("nextqa", "007", "n.mp4", "q?", ("w", "x", "y"), 2)]
    with pytest.raises(PredictionsTableError, match="4 option probabilities do not fit correct option 2 of 3"):
        predictions_table(store, samples=bad)
    # A prediction that carries its target needs no samples.
    p = Prediction("b", "s", "m", MAXPROB.key, "C", 2, 1, option_probs=(0.1, 0.2, 0.7), target=2)
    row = predictions_table([p]).to_pylist()[0]
    assert row["p_correct"] == pytest.approx(0.7) and row["target"] == 2


def test_from_a_sequence_of_predictions() -> None:
    table = predictions_table(_predictions())
    assert table.num_rows == 4 and set(table.column("run_id").to_pylist()) == {None}
    with pytest.raises(PredictionsTableError, match="takes Predictions"):
        predictions_table([{"benchmark": "x"}])  # type: ignore[list-item]


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_write_read_round_trip(store: RunStore, tmp_path: Path, suffix: str) -> None:
    table = predictions_table(store, samples=SAMPLES)
    path = tmp_path / f"out{suffix}"
    write_table(table, path)
    back = read_predictions(path)
    assert back.column_names == table.column_names
    assert back.schema.field("sample_id").type == pa.string()
    original = sorted(validate_table(table).to_pylist(), key=lambda r: r["condition"])
    again = sorted(back.to_pylist(), key=lambda r: r["condition"])
    assert again == original  # CSV too: the writer quotes strings, so "" and null stay apart
    # and back to the very same predictions, the target now known from the samples (the export
    # added it, and the import keeps it: soft scoring still works after a merge)
    got = sorted(table_to_predictions(back, str(path)), key=lambda p: p.key)
    answers = {(s.benchmark, s.sample_id): s.answer for s in SAMPLES}
    expected = [dataclasses.replace(p, target=answers.get((p.benchmark, p.sample_id))) for p in _predictions()]
    assert got == sorted(expected, key=lambda p: p.key)
    assert not list(tmp_path.glob(".*.tmp"))


def test_csv_keeps_leading_zero_ids(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "benchmark,sample_id,model,strategy,mode,k,window,correct\n"
        "nextqa,007,m,maxprob,qa,32,,1\n"
        "nextqa,8,m,oracle,none,32,4,0\n"
    )
    t = read_predictions(path)
    assert t.column("sample_id").to_pylist() == ["007", "8"]
    assert t.column("window").to_pylist() == [None, 4]
    assert t.column("correct").type == pa.int8()


def test_jsonl_with_numeric_ids_and_bool_correct(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    rows = [
        {
            "benchmark": "b",
            "sample_id": 1,
            "model": "m",
            "strategy": "uniform",
            "mode": "none",
            "k": 4,
            "window": None,
            "correct": True,
        },
        {
            "benchmark": "b",
            "sample_id": "x2",
            "model": "m",
            "strategy": "uniform",
            "mode": "none",
            "k": 4,
            "window": None,
            "correct": False,
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    t = read_predictions(path)
    assert t.column("sample_id").to_pylist() == ["1", "x2"]
    assert t.column("correct").to_pylist() == [1, 0]


def _base_rows() -> dict[str, list]:
    return {
        "benchmark": ["b", "b"],
        "sample_id": ["1", "2"],
        "model": ["m", "m"],
        "strategy": ["maxprob", "minprob"],
        "mode": ["qa", "qa"],
        "k": [32, 32],
        "window": pa.array([None, None], pa.int64()),
        "correct": [1, 0],
    }


def test_missing_columns_error_names_file_and_columns(tmp_path: Path) -> None:
    cols = _base_rows()
    del cols["window"], cols["correct"]
    path = tmp_path / "bad.csv"
    pacsv.write_csv(pa.table(cols), path)
    with pytest.raises(PredictionsTableError) as err:
        read_predictions(path)
    assert str(path) in str(err.value) and "window, correct" in str(err.value)


@pytest.mark.parametrize(
    ("column", "values", "message"),
    [
        ("correct", [1, 2], "row 2: correct must be 0 or 1, not 2"),
        ("correct", pa.array([1, None], pa.int64()), "row 2: correct must be 0 or 1"),
        ("correct", [0.5, 1.0], "row 1: correct must be 0 or 1, not 0.5"),
        ("correct", ["yes", "no"], "correct must hold 0 or 1"),
        ("mode", ["qa", "QA"], "row 2: mode must be q, qa or none, not 'QA'"),
        ("k", [32, 0], "row 2: k must be a positive integer"),
        ("sample_id", ["1", ""], "row 2: empty sample_id"),
        ("p_correct", [0.5, 1.5], "row 2: p_correct must lie in"),
    ],
)
def test_value_validation(tmp_path: Path, column: str, values: list, message: str) -> None:
    cols = _base_rows()
    cols[column] = values
    path = tmp_path / "bad.parquet"
    import pyarrow.parquet as pq

    pq.write_table(pa.table(cols), path)
    with pytest.raises(PredictionsTableError, match=message) as err:
        read_predictions(path)
    assert str(path) in str(err.value)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(PredictionsTableError, match="no such file"):
        read_predictions(tmp_path / "none.csv")
    path = tmp_path / "t.txt"
    path.write_text("x")
    with pytest.raises(PredictionsTableError, match="cannot tell the table format"):
        read_predictions(path)
    broken = tmp_path / "t.jsonl"
    broken.write_text('{"benchmark": "b"}\n{oops\n')
    with pytest.raises(PredictionsTableError, match=r"t.jsonl:2: not JSON"):
        read_predictions(broken)


# --- importing tables ---------------------------------------------------------------------


def test_external_table_into_store(tmp_path: Path) -> None:
    cols = _base_rows()
    cols["answer"] = ["B", None]
    cols["parse_error"] = [0, 1]
    path = tmp_path / "ext.csv"
    pacsv.write_csv(pa.table(cols), path)
    with RunStore(tmp_path / "s.sqlite") as s:
        run_id, rows, written = import_table(path, s)
        assert (rows, written) == (2, 2)
        got = {p.sample_id: p for p in s.predictions()}
        assert (
            got["1"].answer == 1
            and got["1"].correct == 1
            and got["1"].condition == "maxprob|mode=qa|k=32|fps=10|seed=0"
        )
        assert got["2"].answer is None and got["2"].parse_error
        manifest = s.manifest(run_id)["import"]
        assert manifest["format"] == "tidy" and len(manifest["sha256"]) == 64
        assert import_table(path, s)[2] == 0  # already stored: first write wins


def test_table_import_needs_answers_and_consistent_conditions(tmp_path: Path) -> None:
    with pytest.raises(PredictionsTableError, match="row 1: no answer"):
        table_to_predictions(pa.table(_base_rows()), "ext.csv")
    cols = _base_rows()
    cols["answer"] = [1, 0]
    cols["condition"] = ["maxprob|mode=qa|k=16", "minprob|mode=qa|k=32"]
    with pytest.raises(PredictionsTableError, match="row 1: column k=32 disagrees"):
        table_to_predictions(pa.table(cols), "ext.csv")


# --- CLI ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_cli_export_predictions(
    store: RunStore, tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture
) -> None:
    run_dir = store.path.parent
    out = tmp_path / f"p.{fmt}"
    assert main(["export", "predictions", "--run", str(run_dir), "--format", fmt, "--out", str(out)]) == 0
    assert f"wrote 4 predictions to {out}" in capsys.readouterr().out
    assert read_predictions(out).num_rows == 4
    # default output next to the store; the store file itself as --run; one run only
    assert main(["export", "predictions", "--run", str(store.path), "--format", fmt, "--run-id", "r1"]) == 0
    assert read_predictions(run_dir / f"predictions.{fmt}").num_rows == 4


def test_cli_export_stdout_and_errors(store: RunStore, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["export", "predictions", "--run", str(store.path), "--format", "jsonl", "--out", "-"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and {json.loads(x)["model"] for x in lines} == {"qwen", "llava"}
    assert main(["export", "predictions", "--run", str(tmp_path / "nowhere"), "--format", "csv"]) == 1
    assert "no run store" in capsys.readouterr().err
    assert (
        main(["export", "predictions", "--run", str(store.path), "--run-id", "zzz", "--format", "csv"]) == 1
    )
    assert "no run 'zzz'" in capsys.readouterr().err
    assert not (tmp_path / "nowhere").exists()


# --- tables from elsewhere (issue 9, defect 4) and the merge path (defect 3) -------------------


def test_empty_mode_and_k_from_elsewhere(tmp_path: Path) -> None:
    path = tmp_path / "hga.csv"
    path.write_text(
        "benchmark,sample_id,model,strategy,mode,k,window,correct,answer\n"
        "b,1,hga,uniform,,8,,1,0\n"
        "b,2,hga,noframe,,,,0,1\n"
        "b,3,hga,hga_native,,,,1,2\n"
    )
    table = read_predictions(path)
    assert table.column("mode").to_pylist() == ["none", "none", "none"]
    assert table.column("k").to_pylist() == [8, None, None]
    preds = {p.sample_id: p for p in table_to_predictions(table, str(path))}
    assert preds["1"].condition == "uniform|mode=none|k=8|fps=10|seed=0"
    assert Condition.from_key(preds["2"].condition).k is None and "k=unknown" in preds["2"].condition
    assert Condition.from_key(preds["3"].condition).strategy == "hga_native"
    with RunStore(tmp_path / "s.sqlite") as s:
        assert import_table(path, s)[1:] == (3, 3)
        again = predictions_table(s)
    assert sorted(again.column("k").to_pylist(), key=str) == [8, None, None]


def test_empty_mode_of_a_score_based_strategy_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("benchmark,sample_id,model,strategy,mode,k,window,correct\nb,1,m,uniform,,8,,1\nb,2,m,maxprob,,8,,0\n")
    with pytest.raises(PredictionsTableError, match=r"t.csv: row 2: empty mode for strategy 'maxprob'.*q or qa"):
        read_predictions(path)


@pytest.mark.parametrize("strategy", ["retrieval", "retrieve_ground", "aks"])
def test_empty_mode_is_refused_for_every_strategy_that_needs_scores(tmp_path: Path, strategy: str) -> None:
    """The validator asks the strategies (needs_scores), as `tempcore run` does: a retrieval row with no
    mode was once filled as 'none' here while the run refuses that mode."""
    from tempcore.selection import SCORE_BASED, needs_scores

    assert strategy in SCORE_BASED and needs_scores(strategy)
    path = tmp_path / "t.csv"
    path.write_text(f"benchmark,sample_id,model,strategy,mode,k,window,correct\nb,1,m,{strategy},,8,,1\n")
    with pytest.raises(PredictionsTableError, match=rf"t.csv: row 1: empty mode for strategy '{strategy}'"):
        read_predictions(path)


def test_score_based_is_what_the_strategies_say() -> None:
    from tempcore.selection import SCORE_BASED, STRATEGIES, needs_scores, score_based

    assert SCORE_BASED == {"maxprob", "minprob", "aks", "bolt", "retrieval", "retrieve_ground"}
    assert score_based() == {name for name in STRATEGIES if needs_scores(name)} >= SCORE_BASED


def test_strategy_names_case_insensitive_or_rejected_with_a_suggestion(tmp_path: Path) -> None:
    cols = _base_rows()
    cols["strategy"] = ["MaxProb", "MINPROB"]
    table = validate_table(pa.table(cols), "t")
    assert table.column("strategy").to_pylist() == ["maxprob", "minprob"]
    cols["condition"] = ["MaxProb|mode=qa|k=32|fps=10|seed=0", "minprob|mode=qa|k=32|fps=10|seed=0"]
    cols["answer"] = [0, 1]
    assert [Condition.from_key(p.condition).strategy for p in table_to_predictions(pa.table(cols))] == [
        "maxprob", "minprob"]
    cols = _base_rows()
    cols["strategy"] = ["maxprob", "maxprb"]
    with pytest.raises(PredictionsTableError, match=r"t: row 2: unknown strategy 'maxprb'; did you mean 'maxprob'"):
        validate_table(pa.table(cols), "t")


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_export_import_export_keeps_p_correct(tmp_path: Path, suffix: str, capsys) -> None:
    """The README's multi-machine path: export a shard, import it elsewhere, export again."""
    answers = {(s.benchmark, s.sample_id): s.answer for s in SAMPLES}
    with RunStore(tmp_path / "shard" / "store.sqlite") as s:
        s.put([dataclasses.replace(p, target=answers.get((p.benchmark, p.sample_id))) for p in _predictions()],
              s.start_run({}))
    shard = tmp_path / f"shard{suffix}"
    assert main(["export", "predictions", "--run", str(tmp_path / "shard"), "--out", str(shard)]) == 0
    first = read_predictions(shard)
    assert first.column("p_correct").null_count < first.num_rows  # option_probs + target known
    merged = tmp_path / "merged"
    assert main(["import", "table", str(shard), "--store", str(merged)]) == 0
    again = tmp_path / f"again{suffix}"
    assert main(["export", "predictions", "--run", str(merged), "--out", str(again)]) == 0
    second = read_predictions(again)
    key = lambda r: (r["sample_id"], r["condition"])  # noqa: E731
    drop = ("run_id", "created_at")
    a = sorted(({k: v for k, v in r.items() if k not in drop} for r in first.to_pylist()), key=key)
    b = sorted(({k: v for k, v in r.items() if k not in drop} for r in second.to_pylist()), key=key)
    assert a == b
    capsys.readouterr()


def test_import_of_stored_rows_says_why_nothing_was_stored(tmp_path: Path, capsys) -> None:
    cols = _base_rows()
    cols["answer"] = [0, 1]
    path = tmp_path / "t.parquet"
    write_table(pa.table(cols), path)
    assert main(["import", "table", str(path), "--store", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert main(["import", "table", str(path), "--store", str(tmp_path / "run")]) == 0
    out = capsys.readouterr()
    text = out.out + out.err
    assert "0 stored" in text and "2 rows" in text and "already stored" in text and "--overwrite" in text


def test_fingerprint_conflicts_name_models_answered_by_different_entries() -> None:
    from tempcore.tidy.table import fingerprint_conflicts

    base = _predictions()
    preds = [dataclasses.replace(p, model_fingerprint=fp) for p, fp in zip(base, ["a", "b", "", "c"])]
    # qwen's two rows come from two model entries; llava has one known fingerprint and one unknown
    assert fingerprint_conflicts(predictions_table(preds)) == {"qwen": ["a", "b"]}
    assert fingerprint_conflicts(predictions_table(base)) == {}
    assert fingerprint_conflicts(pa.table(_base_rows())) == {}
