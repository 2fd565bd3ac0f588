"""One report over several runs (issue 30, item 5): ``--predictions`` repeated; each section reads
the runs that hold its rows; a model name given to another model entry in a later run is renamed
there; a cell two runs hold is taken from the first."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tempcore.cli import main
from tempcore.report.runs import combine_runs
from test_report import make_inputs, md_section_table


def test_one_report_over_two_runs(tmp_path: Path) -> None:
    paths = make_inputs(tmp_path / "in")
    table = pq.read_table(paths["predictions"])
    tempcore = pc.is_in(table.column("strategy"), value_set=pa.array(["maxprob", "minprob", "noframe"]))
    run_a, run_b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(table.filter(tempcore), run_a)
    # run B: the oracle and uniform rows, and again the no-frame rows of alpha (the first run's are kept)
    again = pc.and_(pc.equal(table.column("strategy"), "noframe"), pc.equal(table.column("benchmark"), "alpha"))
    pq.write_table(table.filter(pc.or_(pc.invert(tempcore), again)), run_b)
    out = tmp_path / "out"
    assert main(["report", "--predictions", str(run_a), "--predictions", str(run_b), "--out", str(out),
                 "--no-thumbnails", "--bootstrap", "50"]) == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    # the oracle gap needs A's diagnosis and B's oracle and uniform rows
    oracle = md_section_table(md, "Oracle gap by FSS category (Table 2)")
    assert {r["fss_category"] for r in oracle} >= {"key", "anti_key", "all"}
    acc = md_section_table(md, "Accuracy per model x condition with Wilson 95% intervals")
    assert {r["strategy"] for r in acc} >= {"maxprob", "minprob", "noframe", "uniform", "oracle"}
    noframe = [r for r in acc if r["strategy"] == "noframe" and r["benchmark"] == "alpha" and r["model"] == "m1"]
    assert [r["n"] for r in noframe] == ["12"]  # not counted twice
    assert "**alpha**: TPI 0.667" in md  # the summary card, from run A
    assert f"- predictions: {run_a}, {run_b}" in md
    runs = next(line for line in md.splitlines() if line.startswith("- runs: "))
    assert f"strategies maxprob, minprob, noframe; {run_b}: " in runs  # one run after another, apart
    assert "24 row(s) repeat a cell" in md and "0 of them with another correctness" in md


def test_a_later_run_with_another_model_entry_is_renamed() -> None:
    def run(fp: str, strategy: str) -> pa.Table:
        return pa.table({"benchmark": ["b", "b"], "sample_id": ["s1", "s2"], "model": ["m", "m"],
                         "strategy": [strategy] * 2, "correct": [1, 0], "model_fingerprint": [fp, fp]})

    table, notes = combine_runs([run("aaa", "uniform"), run("aaa", "shuffled"), run("bbb", "uniform")],
                                ["runs/main", "runs/order", "runs/binary/"])
    assert table.column("model").to_pylist() == ["m", "m", "m", "m", "m @binary", "m @binary"]
    assert any("runs/binary/: model(s) m are other model entries" in n for n in notes)
    assert not any("repeat a cell" in n for n in notes)
