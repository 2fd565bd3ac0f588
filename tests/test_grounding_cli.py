"""Grounding samples with several windows (Sample.answer_windows), the Charades-STA / QVHighlights /
generic grounding loaders, and `tempcore grounding` (tables, submissions, JSON keys) (issue 15)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from tempcore.benchmarks import InvalidRowError, load_benchmark
from tempcore.cli import main
from tempcore.records import Sample

# --- Sample.answer_windows --------------------------------------------------------------------


def test_sample_windows_and_interval_fill_each_other_and_round_trip():
    one = Sample("b", "q", "v.mp4", "when?", answer_interval=(1, 2))
    assert one.answer_windows == ((1.0, 2.0),) and one.answer_interval == (1.0, 2.0)
    many = Sample("b", "q", "v.mp4", "when?", answer_windows=[[0, 4], [80, 150]])
    assert many.answer_interval == (0.0, 4.0) and many.answer_windows == ((0.0, 4.0), (80.0, 150.0))
    back = Sample.from_dict(json.loads(json.dumps(many.to_dict())))
    assert back == many and back.answer_windows == many.answer_windows
    old = {k: v for k, v in one.to_dict().items() if k != "answer_windows"}  # JSON written before the field
    assert Sample.from_dict(old) == one
    assert Sample("b", "q", "v.mp4", "x", options=("a", "b"), answer=0).answer_windows == ()
    with pytest.raises(ValueError, match="first answer window"):
        Sample("b", "q", "v.mp4", "when?", answer_interval=(1, 2), answer_windows=[(3, 4)])


# --- loaders ----------------------------------------------------------------------------------

CHARADES = """3MSZA 24.3 30.4##person turn a light on.
3MSZA 24.3 30.4##person flipped the light switch near the door.

AO8RW 0.0 6.9##a person is putting a book on a shelf.
"""


def test_charades_sta(tmp_path):
    f = tmp_path / "charades_sta_test.txt"
    f.write_text(CHARADES)
    r = load_benchmark("charades_sta", tmp_path)
    assert [s.sample_id for s in r.samples] == ["3MSZA_0", "3MSZA_1", "AO8RW_0"]
    s = r.samples[1]
    assert s.video == "3MSZA.mp4" and s.question == "person flipped the light switch near the door."
    assert s.answer_windows == ((24.3, 30.4),) and s.options == () and s.metadata == {"video_id": "3MSZA"}
    f.write_text(CHARADES + "BAD 5 3##reversed\nnohash 1 2\nX one 2##text\n")
    r = load_benchmark("charades_sta", f, skip_invalid=True)
    assert [(i.row, i.kind, i.sample_id) for i in r.invalid] == [
        (5, "bad_interval", "BAD_0"), (6, "malformed_row", None), (7, "bad_value", "X_0")]
    with pytest.raises(InvalidRowError, match=r"charades_sta_test.txt:5: \[BAD_0\] interval start 5.0 is not before"):
        load_benchmark("charades_sta", f)


def test_qvhighlights(tmp_path):
    rows = [
        {"qid": 2579, "query": "A girl and her mother cooked.", "duration": 150, "vid": "NUsG9BgSes0_210.0_360.0",
         "relevant_clip_ids": [0, 1], "saliency_scores": [[1, 1, 1], [1, 1, 1]],
         "relevant_windows": [[0, 4], [80, 150]]},
        {"qid": 5, "query": "test split row", "duration": 150, "vid": "x_0.0_150.0"},
        {"qid": 6, "query": "past end", "duration": 150, "vid": "x_0.0_150.0", "relevant_windows": [[140, 152]]},
        {"qid": 7, "query": "empty", "duration": 150, "vid": "x_0.0_150.0", "relevant_windows": []},
    ]
    f = tmp_path / "highlight_val_release.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    r = load_benchmark("qvhighlights", f, skip_invalid=True)
    (s,) = r.samples
    assert s.sample_id == "2579" and s.video == "NUsG9BgSes0_210.0_360.0.mp4"
    assert s.answer_windows == ((0.0, 4.0), (80.0, 150.0)) and s.answer_interval == (0.0, 4.0)
    assert s.metadata["duration"] == 150 and "relevant_windows" not in s.metadata
    assert [x.sample_id for x in r.skipped] == ["5"]
    assert [(i.sample_id, i.kind) for i in r.invalid] == [("6", "bad_interval"), ("7", "bad_interval")]
    r = load_benchmark("qvhighlights", f, skip_invalid=True, duration_tolerance="2")
    assert [x.sample_id for x in r.samples] == ["2579", "6"]


def test_generic_grounding_rows(tmp_path):
    rows = [
        {"id": "a", "video": "v1.mp4", "question": "when?", "answer_windows": [[1, 2], [5, 9]], "task": "t"},
        {"id": "b", "video": "v2.mp4", "question": "when?", "answer_interval": [3, 4], "duration": 10},
        {"id": "c", "video": "v2.mp4", "question": "when?"},
        {"id": "d", "video": "v2.mp4", "question": "when?", "answer_interval": [3, 4], "answer_windows": [[5, 6]]},
        {"id": "e", "video": "v2.mp4", "question": "when?", "answer_windows": [[5, 12]], "duration": 10},
    ]
    f = tmp_path / "g.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    r = load_benchmark("grounding", f, skip_invalid=True)
    assert [(s.sample_id, s.answer_windows) for s in r.samples] == [
        ("a", ((1.0, 2.0), (5.0, 9.0))), ("b", ((3.0, 4.0),))]
    assert r.samples[0].metadata == {"task": "t"} and r.samples[1].metadata == {"duration": 10}
    assert [(i.sample_id, i.kind) for i in r.invalid] == [
        ("c", "missing_field"), ("d", "bad_interval"), ("e", "bad_interval")]
    csv = tmp_path / "g.csv"
    csv.write_text('id,video,question,answer_windows\nx,v.mp4,when?,"[[1, 2], [3, 4]]"\n')
    assert load_benchmark("grounding", csv).samples[0].answer_windows == ((1.0, 2.0), (3.0, 4.0))


# --- tempcore grounding -----------------------------------------------------------------------


@pytest.fixture
def charades(tmp_path):
    f = tmp_path / "charades_sta_test.txt"
    f.write_text(CHARADES)
    return f


def run_json(capsys, *argv):
    assert main(["grounding", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


TIDY = ["benchmark", "sample_id", "model", "strategy", "mode", "k", "window", "correct"]


def tidy(rows):
    cols = TIDY + sorted({k for r in rows for k in r} - set(TIDY))
    types = {"window": pa.int64(), "k": pa.int64(), "correct": pa.int8(), "pred_start": pa.float64(),
             "pred_end": pa.float64(), "iou": pa.float64()}
    return pa.table({c: pa.array([r.get(c) for r in rows], type=types.get(c)) for c in cols})


def prow(sid, model, start, end, strategy="uniform", **kw):
    return {"benchmark": "charades_sta", "sample_id": sid, "model": model, "strategy": strategy, "mode": "none",
            "k": 32, "window": None, "correct": 0, "pred_start": start, "pred_end": end, **kw}


def test_cli_table_exact_keys(tmp_path, charades, capsys):
    table = tidy([
        prow("3MSZA_0", "m1", 24.3, 30.4),  # IoU 1
        prow("3MSZA_1", "m1", None, None),  # parse failure
        prow("AO8RW_0", "m1", 0.0, 13.8),  # IoU 0.5
        prow("3MSZA_0", "m2", 0.0, 5.0),
        prow("3MSZA_0", "m2", 24.3, 30.4, strategy="maxprob"),
    ])
    path = tmp_path / "p.parquet"
    pq.write_table(table, path)
    out = run_json(capsys, "--predictions", path, "--benchmark", "charades_sta", "--annotations", charades)
    g = {(x["model"], x["strategy"]): x for x in out["groups"]}
    assert list(out) == ["groups"]
    assert list(g[("m1", "uniform")]) == ["model", "strategy", "n", "miou", "recall", "parse_fail"]
    m1 = g[("m1", "uniform")]
    assert m1["n"] == 3 and m1["miou"] == pytest.approx(0.5) and m1["parse_fail"] == pytest.approx(1 / 3)
    assert m1["recall"] == pytest.approx({"0.3": 2 / 3, "0.5": 2 / 3, "0.7": 1 / 3})
    assert g[("m2", "maxprob")]["miou"] == 1.0 and g[("m2", "uniform")]["miou"] == 0.0
    strict = run_json(capsys, "--predictions", path, "--benchmark", "charades_sta", "--annotations", charades,
                      "--thresholds", "0.5", "--strict")
    assert strict["groups"][0]["recall"] == pytest.approx({"0.5": 1 / 3})


def test_cli_table_iou_column_without_annotations_and_split(tmp_path, charades, capsys):
    path = tmp_path / "p.csv"
    pacsv.write_csv(tidy([prow("a", "m", None, None, iou=0.8), prow("b", "m", None, None, iou=None)]), path)
    out = run_json(capsys, "--predictions", path)
    assert out["groups"][0]["miou"] == pytest.approx(0.4) and out["groups"][0]["parse_fail"] == 0.5
    table = tidy([prow("3MSZA_0", "m", 1000.0, 1010.0), prow("AO8RW_0", "m", 8.0, 9.0)])
    path = tmp_path / "q.parquet"
    pq.write_table(table, path)
    out = run_json(capsys, "--predictions", path, "--benchmark", "charades_sta", "--annotations", charades, "--split")
    split = out["groups"][0]["split"]
    assert split["n_failed"] == 2 and split["centre"]["search"] == 1 and split["edge"]["localize"] == 1


def test_cli_errors(tmp_path, charades, capsys):
    path = tmp_path / "p.parquet"
    pq.write_table(tidy([prow("nope", "m", 0.0, 1.0)]), path)
    assert main(["grounding", "--predictions", str(path), "--benchmark", "charades_sta",
                 "--annotations", str(charades)]) == 1
    assert "'nope' of the predictions is not in the annotations" in capsys.readouterr().err
    assert main(["grounding", "--predictions", str(path)]) == 1
    assert "give --benchmark and --annotations" in capsys.readouterr().err
    assert main(["grounding", "--predictions", str(path), "--annotations", str(charades)]) == 1
    assert "needs --benchmark" in capsys.readouterr().err


def test_cli_submission(tmp_path, capsys):
    gt = [{"qid": 1, "query": "q one", "duration": 150, "vid": "v1", "relevant_windows": [[0, 4], [80, 150]]},
          {"qid": 2, "query": "q two", "duration": 150, "vid": "v2", "relevant_windows": [[10, 20]]},
          {"qid": 3, "query": "q three", "duration": 150, "vid": "v3", "relevant_windows": [[10, 20]]}]
    ann = tmp_path / "highlight_val_release.jsonl"
    ann.write_text("\n".join(json.dumps(r) for r in gt) + "\n")
    sub = tmp_path / "mdetr.jsonl"
    sub.write_text("\n".join(json.dumps(r) for r in [
        {"qid": 1, "pred_relevant_windows": [[0, 4, 0.9], [80, 140, 0.8], [10, 20, 0.3]]},
        {"qid": 2, "pred_relevant_windows": [[10, 15, 0.9]]},
    ]) + "\n")  # qid 3 missing: IoU 0, AP 0
    out = run_json(capsys, "--predictions", sub, "--benchmark", "qvhighlights", "--annotations", ann)
    (g,) = out["groups"]
    assert list(g) == ["model", "strategy", "n", "miou", "recall", "parse_fail", "r1", "map", "map_at"]
    assert g["model"] == "mdetr" and g["n"] == 3 and g["parse_fail"] == pytest.approx(1 / 3)
    assert g["miou"] == pytest.approx((1.0 + 0.5 + 0.0) / 3)
    assert g["r1"] == pytest.approx({"0.5": 2 / 3, "0.7": 1 / 3})
    assert list(g["map_at"]) == ["0.5", "0.75"]
    assert g["map_at"]["0.5"] == pytest.approx(2 / 3) and g["map_at"]["0.75"] == pytest.approx(1 / 3)
    assert g["map"] == pytest.approx((0.9 + 0.1 + 0.0) / 3)  # q2's IoU 0.5 passes only tau = 0.5
    binned = run_json(capsys, "--predictions", sub, "--benchmark", "qvhighlights", "--annotations", ann, "--bins")
    assert set(binned["groups"][0]["bins"]) == {"short", "middle", "long"}
    assert main(["grounding", "--predictions", str(sub)]) == 1
    assert "needs --benchmark and --annotations" in capsys.readouterr().err


def test_cli_queries(charades, capsys):
    assert main(["audit", "queries", "--benchmark", "charades_sta", "--annotations", str(charades), "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["benchmark"] == "charades_sta" and p["n_questions"] == 3 and p["unique_stems"] == 3
    assert {"ttr", "mattr", "mattr_per_query", "distinct", "top5_stem_coverage", "wh_entropy",
            "descriptor_density", "length_mean"} <= set(p)


def test_import_tempcore_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys, tempcore, tempcore.diagnostics.grounding, tempcore.grounding.retrieval, "
            "tempcore.grounding.queries, tempcore.grounding.evaluate, tempcore.cli.grounding; "
            "print('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() \
        == "False"


def test_table_groups_several_benchmarks_and_chunks(charades):
    from tempcore.grounding.evaluate import table_groups

    samples = load_benchmark("charades_sta", charades).samples
    a = tidy([prow("3MSZA_0", "m", 24.3, 30.4), {**prow("3MSZA_0", "m", 0.0, 1.0), "benchmark": "other"}])
    b = tidy([prow("AO8RW_0", "m", 0.0, 13.8)])
    table = pa.concat_tables([a, b])  # two chunks
    table = table.set_column(0, "benchmark", table.column("benchmark").dictionary_encode())
    (g,) = table_groups(table, samples, benchmark="charades_sta")
    assert g["n"] == 2 and g["miou"] == pytest.approx(0.75)
    assert table_groups(table, samples, benchmark="missing") == []


def test_groups_name_the_condition_when_a_strategy_has_several(charades):
    from tempcore.grounding.evaluate import table_groups

    samples = load_benchmark("charades_sta", charades).samples
    table = tidy([prow("3MSZA_0", "m", 24.3, 30.4, condition="uniform|k=32"),
                  prow("3MSZA_0", "m", 0.0, 1.0, condition="uniform|k=8"),
                  prow("3MSZA_0", "m", 24.3, 30.4, strategy="maxprob", condition="maxprob|mode=q|k=32")])
    groups = table_groups(table, samples)
    assert [(g["strategy"], g.get("condition"), g["miou"]) for g in groups] == [
        ("maxprob", None, 1.0), ("uniform", "uniform|k=32", 1.0), ("uniform", "uniform|k=8", 0.0)]
