"""Issue 9, the analysis commands: no silent emptiness, one model name = one model entry.

Every test here failed on main before the fix: the commands exited 0 with every sample
incomplete (or a circular score equal to the hard one), or pooled rows of different model entries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from tempcore.cli import main
from tempcore.diagnostics import TableError, diagnose
from tempcore.diagnostics.accuracy import accuracy_table

# sample -> (maxprob, minprob, noframe) correctness of models m1, m2
DESIGN = {
    "s1": ((1, 1), (0, 0), (0, 0)),  # temporally grounded
    "s2": ((0, 0), (1, 1), (0, 0)),  # visual bias
    "s3": ((1, 1), (1, 1), (1, 1)),  # trivial
}
MODELS = ("m1", "m2")


def rows(*, k: int = 8, strategy_names: dict[str, str] | None = None, fingerprints: dict | None = None,
         encoder: str = "siglip") -> list[dict]:
    names = strategy_names or {}
    out = []
    for sid, triple in DESIGN.items():
        for strategy, mode, values in zip(("maxprob", "minprob", "noframe"), ("qa", "qa", "none"), triple):
            for model, value in zip(MODELS, values):
                r = {"benchmark": "b", "sample_id": sid, "model": model, "strategy": names.get(strategy, strategy),
                     "mode": mode, "k": k, "window": None, "correct": value,
                     "encoder": encoder if strategy != "noframe" else None}
                if fingerprints is not None:
                    r["model_fingerprint"] = fingerprints.get((model, sid, strategy), fingerprints.get(model))
                out.append(r)
    return out


def table(rs: list[dict]) -> pa.Table:
    cols = sorted({c for r in rs for c in r})
    types = {"window": pa.int64(), "k": pa.int64(), "correct": pa.int8(), "rotation": pa.int64(),
             "p_correct": pa.float64(), "encoder": pa.string(), "model_fingerprint": pa.string()}
    return pa.table({c: pa.array([r.get(c) for r in rs], type=types.get(c)) for c in cols})


def write(tmp_path: Path, rs: list[dict], name: str = "pred.csv") -> Path:
    path = tmp_path / name
    pacsv.write_csv(table(rs), path)
    return path


def annotations(tmp_path: Path) -> Path:
    path = tmp_path / "ann.jsonl"
    lines = [{"id": sid, "video": f"videos/{sid}.mp4", "question": f"q {sid}?", "options": ["a", "b"], "answer": 0}
             for sid in DESIGN]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# --- filters that select nothing --------------------------------------------------------------------


def test_k_filter_that_matches_nothing_names_the_table_k() -> None:
    with pytest.raises(TableError, match="the table has k 8; --k asked for 32"):
        diagnose(table(rows(k=8)), filters={"k": 32}, noframe_filters={"k": 32})
    # the same table with the right K diagnoses every sample
    d = diagnose(table(rows(k=8)), filters={"k": 8})
    assert d.benchmarks["b"]["incomplete"] == 0 and d.benchmarks["b"]["temporally_sensitive"] == 2


@pytest.mark.parametrize("command", ["diagnose", "report", "export"])
def test_every_command_exits_nonzero_on_an_empty_k(command: str, tmp_path: Path, capsys) -> None:
    pred = write(tmp_path, rows(k=8))
    argv = {
        "diagnose": ["diagnose", "--predictions", str(pred), "--k", "32"],
        "report": ["report", "--predictions", str(pred), "--out", str(tmp_path / "rep"), "--k", "32"],
        "export": ["export", "tempcore", "--predictions", str(pred), "--annotations", f"b={annotations(tmp_path)}",
                   "--out", str(tmp_path / "sub"), "--k", "32"],
    }[command]
    code, out, err = run_cli(argv, capsys)
    assert code == 1
    assert "the table has k 8; --k asked for 32" in err
    assert not (tmp_path / "rep" / "report.html").exists() and not (tmp_path / "sub").exists()


def test_noframe_k_is_named_by_its_own_flag(tmp_path: Path, capsys) -> None:
    pred = write(tmp_path, rows(k=8))
    code, _, err = run_cli(["diagnose", "--predictions", str(pred), "--k", "8", "--noframe-k", "4"], capsys)
    assert code == 1 and "noframe: the table has k 8; --noframe-k asked for 4" in err


def test_encoder_mode_and_model_filters_name_what_the_table_holds(tmp_path: Path, capsys) -> None:
    pred = write(tmp_path, rows())
    code, _, err = run_cli(["diagnose", "--predictions", str(pred), "--encoder", "clip"], capsys)
    assert code == 1 and "the table has encoder siglip; --encoder asked for clip" in err
    code, _, err = run_cli(["diagnose", "--predictions", str(pred), "--fss-mode", "q"], capsys)
    assert code == 1 and "maxprob rows have mode qa; --fss-mode asked for q" in err
    # a model of the table with no MaxProb rows: its panel would be empty
    rs = rows() + [{"benchmark": "b", "sample_id": "s1", "model": "llm", "strategy": "noframe", "mode": "none",
                    "k": 8, "window": None, "correct": 0, "encoder": None}]
    pred = write(tmp_path, rs, "with_llm.csv")
    code, _, err = run_cli(["diagnose", "--predictions", str(pred), "--models", "llm"], capsys)
    assert code == 1 and "of model(s) m1, m2; --models asked for llm" in err
    code, _, err = run_cli(["diagnose", "--predictions", str(pred), "--models", "nobody"], capsys)
    assert code == 1 and "unknown model(s) ['nobody']; the predictions have ['llm', 'm1', 'm2']" in err


def test_a_table_without_noframe_rows_is_an_error_not_an_undefined_tpi() -> None:
    rs = [r for r in rows() if r["strategy"] != "noframe"]
    with pytest.raises(TableError, match=r"no noframe predictions.*its strategies: maxprob, minprob"):
        diagnose(table(rs))


def test_nothing_complete_is_an_error_naming_the_models_per_condition() -> None:
    # m1 has only MaxProb, m2 only MinProb: every sample lacks a result
    rs = [r for r in rows() if not (r["strategy"] == "minprob" and r["model"] == "m1")
          and not (r["strategy"] == "maxprob" and r["model"] == "m2")]
    with pytest.raises(TableError, match=r"no sample of the 3 is complete.*maxprob \(qa-mode\) rows of model\(s\) m1;"
                                         r" minprob \(qa-mode\) rows of model\(s\) m2"):
        diagnose(table(rs))


def test_accuracy_never_returns_an_empty_table(tmp_path: Path, capsys) -> None:
    pred = write(tmp_path, rows())
    code, _, err = run_cli(["accuracy", "--predictions", str(pred), "--models", "m3"], capsys)
    assert code == 1 and "unknown model(s) ['m3']; the predictions have ['m1', 'm2']" in err
    with pytest.raises(TableError, match="no accuracy to report: the 0 row"):
        accuracy_table(table(rows()).slice(0, 0))


# --- strategy names -------------------------------------------------------------------------------


def test_strategy_names_match_ignoring_case(tmp_path: Path, capsys) -> None:
    plain = diagnose(table(rows())).to_json()
    mixed = rows(strategy_names={"maxprob": "MaxProb", "minprob": "MINPROB", "noframe": "NoFrame"})
    assert diagnose(table(mixed)).to_json() == plain
    pred = write(tmp_path, mixed)
    code, out, _ = run_cli(["accuracy", "--predictions", str(pred), "--json"], capsys)
    assert code == 0
    assert {g["strategy"] for g in json.loads(out)["groups"]} == {"maxprob", "minprob", "noframe"}


def test_a_misspelt_strategy_is_rejected_with_a_suggestion(tmp_path: Path, capsys) -> None:
    pred = write(tmp_path, rows(strategy_names={"maxprob": "maxprb"}))
    for argv in (["diagnose", "--predictions", str(pred)], ["accuracy", "--predictions", str(pred)]):
        code, _, err = run_cli(argv, capsys)
        assert code == 1 and "unknown strategy 'maxprb'" in err and "did you mean 'maxprob'?" in err
    # a custom strategy far from any known name is kept (a table made elsewhere)
    rs = rows() + [{"benchmark": "b", "sample_id": "s1", "model": "m1", "strategy": "hga_own_frames",
                    "mode": "none", "k": 8, "window": None, "correct": 1}]
    res = accuracy_table(table(rs))
    assert res.where(strategy="hga_own_frames", model="m1")[0]["n"] == 1


# --- scorings that the table cannot give ----------------------------------------------------------


def test_circular_without_rotations_is_an_error(tmp_path: Path, capsys) -> None:
    pred = write(tmp_path, rows())
    code, _, err = run_cli(["diagnose", "--predictions", str(pred), "--scoring", "circular"], capsys)
    assert code == 1 and "the table has no rotation column" in err
    only_zero = [dict(r, rotation=0) for r in rows()]
    with pytest.raises(TableError, match="have rotation 0 only"):
        diagnose(table(only_zero), scoring="circular")
    rotated = only_zero + [dict(r, rotation=1) for r in rows()]
    assert diagnose(table(rotated), scoring="circular").benchmarks["b"]["incomplete"] == 0


def test_soft_without_p_correct_is_an_error(tmp_path: Path, capsys) -> None:
    pred = write(tmp_path, rows())
    code, _, err = run_cli(["diagnose", "--predictions", str(pred), "--scoring", "soft"], capsys)
    assert code == 1 and "the table has no p_correct column" in err
    empty_p = [dict(r, p_correct=None) for r in rows()]
    with pytest.raises(TableError, match="p_correct is empty"):
        diagnose(table(empty_p), scoring="soft")


# --- model fingerprints ---------------------------------------------------------------------------


def test_rows_of_one_model_with_two_fingerprints_are_not_pooled(tmp_path: Path, capsys) -> None:
    fps = {"m1": "aaaa1111", "m2": "bbbb2222", ("m1", "s3", "maxprob"): "cccc3333"}
    pred = write(tmp_path, rows(fingerprints=fps))
    for argv in (["diagnose", "--predictions", str(pred)], ["accuracy", "--predictions", str(pred)]):
        code, _, err = run_cli(argv, capsys)
        assert code == 1
        assert "model 'm1' has 2 model_fingerprint values: aaaa1111 (8 rows), cccc3333 (1 rows)" in err
        assert "'m2'" not in err
    # one fingerprint per model (different between models) is fine, and so are null fingerprints
    ok = rows(fingerprints={"m1": "aaaa1111", "m2": "bbbb2222", ("m2", "s1", "noframe"): None})
    assert diagnose(table(ok)).benchmarks["b"]["temporally_sensitive"] == 2
    assert accuracy_table(table(ok)).where(model="m1", strategy="maxprob")[0]["n"] == 3


def test_fingerprints_of_rows_a_diagnosis_does_not_use_do_not_matter() -> None:
    fps = {"m1": "aaaa1111", "m2": "bbbb2222"}
    rs = rows(fingerprints=fps) + [
        {"benchmark": "b", "sample_id": "s1", "model": "m1", "strategy": "maxprob", "mode": "qa", "k": 4,
         "window": None, "correct": 1, "encoder": "siglip", "model_fingerprint": "dddd4444"}]
    assert diagnose(table(rs), filters={"k": 8}).benchmarks["b"]["incomplete"] == 0
    # accuracy reports every row, the K=4 one too, so it refuses
    with pytest.raises(TableError, match="model 'm1' has 2 model_fingerprint values"):
        accuracy_table(table(rs))


# --- one --annotations convention; run folders as --predictions ------------------------------------


@pytest.fixture
def world(tmp_path: Path, capsys) -> Path:
    out = tmp_path / "world"
    assert main(["world", "generate", "--out", str(out), "--n", "12", "--seed", "0", "--min-duration", "9",
                 "--max-duration", "10", "--size", "16", "--k-max", "2"]) == 0
    capsys.readouterr()
    return out


def _world_predictions(world: Path, tmp_path: Path) -> tuple[Path, dict[str, int], dict[str, int]]:
    """Uniform predictions of one model over a world: right on the even-numbered questions."""
    anns = [json.loads(line) for line in (world / "annotations.jsonl").read_text().splitlines()]
    rs, n, right = [], {}, {}
    for i, a in enumerate(anns):
        ok = int(i % 2 == 0)
        rs.append({"benchmark": "tempcore-world", "sample_id": a["id"], "model": "m", "strategy": "uniform",
                   "mode": "none", "k": 4, "window": None, "correct": ok, "answer": a["answer"] if ok else
                   (a["answer"] + 1) % len(a["options"])})
        n[a["planted"]] = n.get(a["planted"], 0) + 1
        right[a["planted"]] = right.get(a["planted"], 0) + ok
    return write(tmp_path, rs, "world_pred.csv"), n, right


def test_accuracy_by_a_field_of_the_world_annotations(world: Path, tmp_path: Path, capsys) -> None:
    pred, n, right = _world_predictions(world, tmp_path)
    ann = world / "annotations.jsonl"
    for form in (["--benchmark", "tempcore-world", "--annotations", str(ann)],
                 ["--annotations", f"tempcore-world={ann}"]):
        code, out, err = run_cli(["accuracy", "--predictions", str(pred), "--by", "planted", "--json", *form], capsys)
        assert code == 0, err
        groups = json.loads(out)["groups"]
        assert {g["planted"]: (g["n"], g["correct"]) for g in groups} == {p: (n[p], right[p]) for p in n}


def test_a_misspelt_benchmark_name_says_it_was_read_as_generic(world: Path, tmp_path: Path, capsys) -> None:
    pred, _, _ = _world_predictions(world, tmp_path)
    bad = tmp_path / "videomme.json"
    bad.write_text(json.dumps([{"videoID": "x", "question": "q?", "options": ["A. a"], "answer": "A"}]))
    code, _, err = run_cli(["accuracy", "--predictions", str(pred), "--by", "planted",
                            "--annotations", f"videome={bad}"], capsys)
    assert code == 1 and "'videome' is not a registered benchmark format" in err and "did you mean 'videomme'?" in err


def test_score_and_world_validate_take_the_same_annotations_forms(world: Path, tmp_path: Path, capsys) -> None:
    from tempcore.cli._common import BenchmarkArgumentError, parse_annotations, parse_one_annotations

    ann = world / "annotations.jsonl"
    assert parse_annotations([str(ann)], "tempcore-world") == {"tempcore-world": ann}
    assert parse_annotations([f"tempcore-world={ann}"], None) == {"tempcore-world": ann}
    assert parse_one_annotations(str(ann), None) == (None, ann)
    assert parse_one_annotations(f"tempcore-world={ann}", None) == ("tempcore-world", ann)
    with pytest.raises(BenchmarkArgumentError, match="expected NAME=PATH"):
        parse_annotations([str(ann)], None)
    with pytest.raises(BenchmarkArgumentError, match="names benchmark 'a', --benchmark 'b'"):
        parse_one_annotations(f"a={ann}", "b")
    # score: NAME=PATH naming another benchmark than --benchmark is refused before any encoder loads
    code, _, err = run_cli(["score", "--benchmark", "tempcore-world", "--annotations", f"other={ann}",
                            "--encoder", "tempcore-world"], capsys)
    assert code == 1 and "--benchmark 'tempcore-world' has no --annotations PATH (given: other)" in err


def test_diagnose_reads_a_run_folder(tmp_path: Path, capsys) -> None:
    rs = [dict(r, answer=0 if r["correct"] else 1) for r in rows()]
    pred = write(tmp_path, rs)
    expected = diagnose(table(rs)).to_json()["benchmarks"]
    assert main(["import", "table", str(pred), "--store", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    for path in (tmp_path / "run", tmp_path / "run" / "store.sqlite"):
        code, out, err = run_cli(["diagnose", "--predictions", str(path), "--json"], capsys)
        assert code == 0, err
        assert json.loads(out)["benchmarks"] == expected
    code, out, _ = run_cli(["accuracy", "--predictions", str(tmp_path / "run"), "--json"], capsys)
    assert code == 0 and len(json.loads(out)["groups"]) == 6
    # a folder with only an exported table is read through it; an unrelated folder says what it looked for
    only = tmp_path / "exported"
    only.mkdir()
    pacsv.write_csv(table(rs), only / "predictions.csv")
    code, out, _ = run_cli(["diagnose", "--predictions", str(only), "--json"], capsys)
    assert code == 0 and json.loads(out)["benchmarks"] == expected
    code, _, err = run_cli(["diagnose", "--predictions", str(tmp_path / "world_none")], capsys)
    assert code == 1
    (tmp_path / "empty").mkdir()
    code, _, err = run_cli(["diagnose", "--predictions", str(tmp_path / "empty")], capsys)
    assert code == 1 and "looked for store.sqlite, predictions.parquet" in err


def test_every_analysis_command_reads_a_run_folder_or_store_like_a_table(tmp_path, capsys):
    """One ``--predictions`` convention: mba, audit ablations and audit options read a run folder
    and a store file exactly as the table exported from them (they took table files only)."""
    import json as _json

    from tempcore.cli import main
    from tempcore.records import Condition, Prediction
    from tempcore.run.store import RunStore
    from tempcore.tidy.table import predictions_table, write_table

    preds = [Prediction(benchmark="b", sample_id=f"v{g}#b{i}", model="m", condition=cond.key,
                        response="A", answer=0, correct=int((g + i + j) % 3 != 0), frames=None,
                        prompt_hash="0", latency_s=0.0)
             for g in range(4) for i in range(2)
             for j, cond in enumerate((Condition("uniform", k=4), Condition("textonly", k=4)))]
    run = tmp_path / "run"
    run.mkdir()
    with RunStore(run / "store.sqlite") as store:
        store.put(preds, store.start_run({}, environment=False))
        write_table(predictions_table(store), tmp_path / "t.parquet")
    for command in (["mba"], ["audit", "ablations"]):
        outputs = []
        for source in (tmp_path / "t.parquet", run, run / "store.sqlite"):
            assert main([*command, "--predictions", str(source), "--json"]) == 0
            outputs.append(_json.loads(capsys.readouterr().out))
        assert outputs[0] == outputs[1] == outputs[2]
