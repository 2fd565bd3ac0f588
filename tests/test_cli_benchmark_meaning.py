"""One meaning of ``--benchmark`` / ``--annotations`` in the analysis commands (issue 30, items 1-2):
the stored benchmark name selects rows, the annotations are read with the format the run recorded
for it (or ``--annotations-format``), a format name matching exactly one stored benchmark still
works, and an analysis with nothing to show exits non-zero naming what the predictions hold."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from tempcore.cli import main
from tempcore.cli._sources import BenchmarkChoiceError, RecordedBenchmark, resolve
from tempcore.run.store import RunStore
from tempcore.tidy.table import write_table


def _bench(tmp_path):
    path = tmp_path / "bench.jsonl"
    rows = [{"id": f"q{i}", "video": f"v{i}.mp4", "question": f"q {i}?", "options": ["a", "b"], "answer": 0,
             "category": "even" if i % 2 == 0 else "odd"} for i in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run_folder(tmp_path, names=("mybench",), fmt="generic", **extra):
    """A run folder: predictions.parquet of benchmark(s) ``names`` and a store whose manifest
    records, like `tempcore run`, the configuration entries and the benchmarks keyed by stored name."""
    run = tmp_path / "run"
    run.mkdir()
    rows = [{"benchmark": b, "sample_id": f"q{i}", "model": "m", "strategy": "uniform", "mode": "none", "k": 8,
             "window": None, "correct": int(i != 3), **extra} for b in names for i in range(4)]
    table = pa.table({c: pa.array([r[c] for r in rows], type={"k": pa.int64(), "window": pa.int64(),
                                                               "correct": pa.int8(), "iou": pa.float64()}.get(c))
                      for c in rows[0]})
    write_table(table, run / "predictions.parquet")
    with RunStore.open(run / "store.sqlite") as store:
        store.start_run({"config": {"seed": 0, "benchmarks": [
            {"name": fmt, "annotations": "bench.jsonl", "options": {"benchmark_name": b}, "binary": False}
            for b in names]}, "benchmarks": {b: {"samples": 4} for b in names}}, environment=False)
    return run


def test_format_name_reads_the_only_benchmark_of_that_format(tmp_path, capsys):
    """The README's `--benchmark generic --annotations bench.jsonl` on a run that set benchmark_name."""
    bench, run = _bench(tmp_path), _run_folder(tmp_path)
    for name in ("generic", "mybench"):
        assert main(["accuracy", "--predictions", str(run / "predictions.parquet"), "--benchmark", name,
                     "--annotations", str(bench), "--by", "category", "--json"]) == 0, capsys.readouterr().err
        groups = json.loads(capsys.readouterr().out)["groups"]
        assert {(g["benchmark"], g["category"], g["n"]) for g in groups} == {("mybench", "even", 2),
                                                                              ("mybench", "odd", 2)}
        assert main(["mba", "--predictions", str(run / "predictions.parquet"), "--benchmark", name, "--annotations", str(bench),
                     "--group-by", "category", "--json"]) == 0, capsys.readouterr().err
        overall = json.loads(capsys.readouterr().out)["overall"]
        assert [(r["benchmark"], r["n_binary"], r["n_groups"]) for r in overall] == [("mybench", 4, 2)]


def test_a_format_shared_by_several_benchmarks_is_an_error_naming_them(tmp_path, capsys):
    bench, run = _bench(tmp_path), _run_folder(tmp_path, names=("b1", "b2"))
    assert main(["accuracy", "--predictions", str(run / "predictions.parquet"), "--benchmark", "generic", "--annotations", str(bench)]) == 1
    err = capsys.readouterr().err
    assert "several benchmarks" in err and "b1, b2" in err
    assert main(["accuracy", "--predictions", str(run / "predictions.parquet"), "--benchmark", "b2", "--annotations", str(bench),
                 "--json"]) == 0
    assert {g["benchmark"] for g in json.loads(capsys.readouterr().out)["groups"]} == {"b2"}


def test_annotations_format_names_the_loader_of_a_bare_table(tmp_path, capsys):
    bench, run = _bench(tmp_path), _run_folder(tmp_path)
    bare = tmp_path / "bare.parquet"
    bare.write_bytes((run / "predictions.parquet").read_bytes())  # no store beside it: nothing recorded
    assert main(["mba", "--predictions", str(bare), "--benchmark", "generic", "--annotations", str(bench),
                 "--group-by", "category"]) == 1
    err = capsys.readouterr().err
    assert "benchmarks mybench" in err and "--benchmark mybench --annotations-format generic" in err
    assert main(["mba", "--predictions", str(bare), "--benchmark", "mybench", "--annotations-format", "generic",
                 "--annotations", str(bench), "--group-by", "category", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"][0]["n_groups"] == 2


def test_resolve_rules():
    table = pa.table({"benchmark": ["w", "w", "g"]})
    rec = {"w": RecordedBenchmark("w", "generic", {"benchmark_name": "w"}, binary=True, seed=5),
           "g": RecordedBenchmark("g", "grounding", {"benchmark_name": "g"})}
    got = resolve("generic", table=table, recorded=rec)
    assert (got.name, got.format, got.options, got.binary, got.seed) == ("w", "generic", {"benchmark_name": "w"},
                                                                         True, 5)
    assert resolve("grounding", table=table, recorded=rec).name == "g"
    assert resolve("g", table=table, recorded=rec).format == "grounding"
    assert resolve(None, table=table, recorded=rec) is None  # several benchmarks: all of them
    assert resolve(None, table=pa.table({"benchmark": ["w"]}), recorded=rec).name == "w"
    # no record: a registered format reads itself, any other name the generic format renamed
    assert resolve("nextqa", table=None).format == "nextqa"
    plain = resolve("mine", table=None)
    assert (plain.format, plain.options) == ("generic", {"benchmark_name": "mine"})
    with pytest.raises(BenchmarkChoiceError, match="benchmarks g, w; models"):
        resolve("nope", table=pa.table({"benchmark": ["w", "g"], "model": ["m", "m"]}), recorded=rec)


def test_empty_analyses_exit_non_zero_naming_what_the_table_holds(tmp_path, capsys):
    run = _run_folder(tmp_path, fmt="grounding", iou=0.5)
    # the case: the loader's name of a run that stored its rows under another name
    assert main(["grounding", "--predictions", str(run / "predictions.parquet"), "--benchmark", "grounding"]) == 0
    assert "m  uniform: n=4" in capsys.readouterr().out
    assert main(["grounding", "--predictions", str(run / "predictions.parquet"), "--benchmark", "zzz"]) == 1
    err = capsys.readouterr().err
    assert "no rows for benchmark 'zzz'" in err and "benchmarks mybench; models m; conditions uniform" in err
    empty = tmp_path / "empty.parquet"
    write_table(pa.table({"benchmark": pa.array([], pa.string()), "sample_id": pa.array([], pa.string()),
                          "model": pa.array([], pa.string()), "strategy": pa.array([], pa.string()),
                          "mode": pa.array([], pa.string()), "k": pa.array([], pa.int64()),
                          "window": pa.array([], pa.int64()), "correct": pa.array([], pa.int8()),
                          "iou": pa.array([], pa.float64())}), empty)
    assert main(["grounding", "--predictions", str(empty), "--json"]) == 1
    assert "nothing to show" in capsys.readouterr().err
    assert main(["diagnose", "--predictions", str(run / "predictions.parquet"), "--benchmark", "zzz"]) == 1
    assert "no rows for benchmark 'zzz'" in capsys.readouterr().err
