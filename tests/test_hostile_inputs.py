"""Hostile annotation and predictions files (issue 13), each with the exact input that broke:
a lone surrogate (the JSON escape ``"\\udc00"``), nesting 100k levels deep, U+2028 / U+2029 /
U+0085 inside JSONL strings, one non-UTF-8 byte, header-only / 0-row predictions tables, and a
predictions JSONL nested 20k levels (which crashed Arrow's JSON reader: run in a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tempcore.benchmarks import load_benchmark
from tempcore.benchmarks.errors import InvalidRowError
from tempcore.cli import main
from tempcore.tidy.table import REQUIRED_COLUMNS, PredictionsTableError, read_predictions

SURROGATE = "\udc00"
DEEP = 100_000

# --- one valid row per format, and how a file of such rows is written --------------------------


def _json_list(path: Path, rows: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[" + ",\n".join(rows) + "]", encoding="utf-8")
    return path


def _jsonl(path: Path, rows: list[str]) -> Path:
    path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    return path


FORMATS: dict[str, tuple[str, Callable[[int, str], dict[str, Any]], Callable[[Path, list[str]], Path]]] = {
    "generic-jsonl": ("generic", lambda i, q: {"id": f"s{i}", "video": "v.mp4", "question": q,
                                               "options": ["a", "b"], "answer": 0},
                      lambda d, rows: _jsonl(d / "a.jsonl", rows)),
    "generic-json": ("generic", lambda i, q: {"id": f"s{i}", "video": "v.mp4", "question": q,
                                              "options": ["a", "b"], "answer": 0},
                     lambda d, rows: _json_list(d / "a.json", rows)),
    "videomme": ("videomme", lambda i, q: {"question_id": f"q{i}", "videoID": "v", "question": q,
                                           "options": ["A. x", "B. y"], "answer": "A"},
                 lambda d, rows: _json_list(d / "videomme.json", rows)),
    "longvideobench": ("longvideobench", lambda i, q: {"id": f"q{i}", "video_path": "v.mp4", "question": q,
                                                       "candidates": ["x", "y"], "correct_choice": 0},
                       lambda d, rows: _json_list(d / "lvb_val.json", rows)),
    "mlvu": ("mlvu", lambda i, q: {"video": "v.mp4", "question": q, "candidates": ["x", "y"], "answer": "x",
                                   "question_type": "plotQA"},
             lambda d, rows: _json_list(d / "json" / "1_plotQA.json", rows).parent),
    "mvbench": ("mvbench", lambda i, q: {"video": "v.mp4", "question": q, "candidates": ["x", "y"], "answer": "x"},
                lambda d, rows: _json_list(d / "json" / "action_antonym.json", rows).parent),
    "tvbench": ("tvbench", lambda i, q: {"video": "v.mp4", "question": q, "candidates": ["x", "y"], "answer": "x"},
                lambda d, rows: _json_list(d / "json" / "action_count.json", rows).parent),
    "temporalbench": ("temporalbench", lambda i, q: {"idx": f"t{i}", "video_name": "v.mp4",
                                                     "question": f"{q}\nA. x\nB. y", "GT": "A"},
                      lambda d, rows: _json_list(d / "temporalbench_short_qa.json", rows)),
    "extremewhenbench": ("extremewhenbench", lambda i, q: {"qid": f"e{i}", "video_id": "v", "question": q,
                                                           "correct_interval": [1, 2]},
                         lambda d, rows: _jsonl(d / "ewb.jsonl", rows)),
    "egoschema": ("egoschema", lambda i, q: {"q_uid": f"u{i}", "question": q, "option 0": "x", "option 1": "y",
                                             "answer": 0},
                  lambda d, rows: _json_list(d / "questions.json", rows)),
}


def _write(tmp_path: Path, fmt: str, rows: list[str]) -> tuple[str, Path]:
    name, _, writer = FORMATS[fmt]
    return name, writer(tmp_path, rows)


def _row(fmt: str, i: int, question: str = "what?", **extra: Any) -> str:
    return json.dumps({**FORMATS[fmt][1](i, question), **extra})  # ensure_ascii: "\udc00" stays an escape


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_lone_surrogate_is_an_invalid_row_in_every_format(tmp_path: Path, fmt: str) -> None:
    rows = [_row(fmt, 0), _row(fmt, 1, f"what{SURROGATE}?"), _row(fmt, 2)]
    assert '"what\\udc00?' in rows[1]  # the exact input: the JSON escape of a lone surrogate
    name, path = _write(tmp_path, fmt, rows)
    result = load_benchmark(name, path, skip_invalid=True)
    assert len(result.samples) == 2
    [bad] = result.invalid
    text = str(bad)
    text.encode("utf-8")  # printable: the surrogate is written as an escape
    assert bad.row == 2 and bad.kind == "bad_text" and "lone surrogate \\udc00" in text
    assert text.startswith(f"{bad.file}:2: [") and bad.sample_id
    with pytest.raises(InvalidRowError) as err:
        load_benchmark(name, path)
    str(err.value).encode("utf-8")


@pytest.mark.parametrize("fmt", ["generic-jsonl", "generic-json", "videomme"])
def test_lone_surrogate_in_the_id_is_named_printably(tmp_path: Path, fmt: str) -> None:
    id_field = {"generic-jsonl": "id", "generic-json": "id", "videomme": "question_id"}[fmt]
    rows = [_row(fmt, 0), json.dumps({**json.loads(_row(fmt, 1)), id_field: SURROGATE})]
    name, path = _write(tmp_path, fmt, rows)
    [bad] = load_benchmark(name, path, skip_invalid=True).invalid
    assert str(bad) == f"{bad.file}:2: [\\udc00] the sample id holds a lone surrogate \\udc00: not valid Unicode text"


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_deep_nesting_is_an_invalid_row_in_every_format(tmp_path: Path, fmt: str) -> None:
    deep = "[" * DEEP + "]" * DEEP
    rows = [_row(fmt, 0), _row(fmt, 1)[:-1] + ', "extra": ' + deep + "}", _row(fmt, 2)]
    name, path = _write(tmp_path, fmt, rows)
    result = load_benchmark(name, path, skip_invalid=True)
    assert len(result.samples) == 2
    [bad] = result.invalid
    assert bad.row == 2 and bad.kind == "too_deep" and "nested deeper than 64 levels" in bad.reason


def test_deep_options_cell_in_csv_is_an_invalid_row(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text('id,video,question,options,answer\ns1,v.mp4,q?,"[""a"",""b""]",0\n'
                    f's2,v.mp4,q?,"{"[" * DEEP}",0\ns3,v.mp4,q?,"[""a"",""b""]",0\n', encoding="utf-8")
    result = load_benchmark("generic", path, skip_invalid=True)
    assert [s.sample_id for s in result.samples] == ["s1", "s3"]
    [bad] = result.invalid
    assert (bad.row, bad.sample_id, bad.kind) == (3, "s2", "too_deep")


def test_deep_side_file_is_a_named_file_error(tmp_path: Path) -> None:
    from tempcore.benchmarks.errors import AnnotationFileError

    _json_list(tmp_path / "questions.json", [_row("egoschema", 0)])
    (tmp_path / "subset_answers.json").write_text('{"u0": ' + "[" * DEEP + "]" * DEEP + "}")
    with pytest.raises(AnnotationFileError, match="subset_answers.json: JSON nested deeper than 64 levels"):
        load_benchmark("egoschema", tmp_path)


def test_jsonl_splits_on_newline_only(tmp_path: Path) -> None:
    rows = [json.dumps({"id": f"s{i}", "video": "v.mp4", "question": f"a\u2028b\u2029c\x85d\x0ce {i}",
                        "options": ["x", "y"], "answer": 0}, ensure_ascii=False) for i in range(3)]
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(rows) + "\n{broken\n", encoding="utf-8")
    result = load_benchmark("generic", path, skip_invalid=True)
    assert [s.question for s in result.samples] == [f"a\u2028b\u2029c\x85d\x0ce {i}" for i in range(3)]
    [bad] = result.invalid
    assert bad.row == 4 and bad.kind == "malformed_json"


def test_one_non_utf8_byte_rejects_only_its_row_and_names_the_line(tmp_path: Path) -> None:
    good = [json.dumps({"id": f"s{i}", "video": "v.mp4", "question": "q?", "options": ["x", "y"], "answer": 0})
            for i in range(3)]
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"\n".join([good[0].encode(), good[1].encode().replace(b"q?", b"q\xff?"), good[2].encode()]))
    result = load_benchmark("generic", path, skip_invalid=True)
    assert [s.sample_id for s in result.samples] == ["s0", "s2"]
    [bad] = result.invalid
    assert str(bad) == f"{path}:2: line is not UTF-8 text (byte 0xff at column {good[1].index('q?') + 2})"

    csv_path = tmp_path / "a.csv"
    csv_path.write_bytes(b'id,video,question,options,answer\ns1,v.mp4,q?,"[""x"",""y""]",0\n'
                         b's2,v.mp4,q\xff?,"[""x"",""y""]",0\ns3,v.mp4,q?,"[""x"",""y""]",0\n')
    result = load_benchmark("generic", csv_path, skip_invalid=True)
    assert [s.sample_id for s in result.samples] == ["s1", "s3"]
    [bad] = result.invalid
    assert bad.row == 3 and bad.sample_id == "s2" and "non-UTF-8 byte 0xff" in bad.reason

    json_path = tmp_path / "b.json"
    json_path.write_bytes(b"[" + b",".join([good[0].encode(), good[1].encode().replace(b"q?", b"q\xff?")]) + b"]")
    result = load_benchmark("generic", json_path, skip_invalid=True)
    assert [s.sample_id for s in result.samples] == ["s0"]
    assert [(b.row, b.sample_id) for b in result.invalid] == [(2, "s1")]


# --- predictions tables ------------------------------------------------------------------------

ROW = {"benchmark": "b", "sample_id": "s1", "model": "m", "strategy": "uniform", "mode": "q", "k": 4,
       "window": None, "correct": 1}


def test_deep_predictions_jsonl_is_an_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(ROW) + "\n" + '{"benchmark": ' + "[" * 20_000 + "]" * 20_000 + "}\n")
    code = ("import sys\nfrom tempcore.tidy.table import read_predictions, PredictionsTableError\n"
            f"try:\n    read_predictions({str(path)!r})\nexcept PredictionsTableError as e:\n"
            "    print(e)\n    sys.exit(3)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr[-2000:]  # a segfault would be -11
    assert proc.stdout.strip() == f"{path}:2: JSON nested deeper than 64 levels"


def test_predictions_jsonl_line_separators_and_bad_text(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(ROW) + "\n" + json.dumps({**ROW, "sample_id": "a\u2028b\x85c"}, ensure_ascii=False)
                    + "\n", encoding="utf-8")
    assert read_predictions(path).column("sample_id").to_pylist() == ["s1", "a\u2028b\x85c"]
    path.write_text(json.dumps(ROW) + "\n" + json.dumps({**ROW, "sample_id": SURROGATE}) + "\n")
    with pytest.raises(PredictionsTableError, match=r"p.jsonl:2: field 'sample_id' holds a lone surrogate"):
        read_predictions(path)
    path.write_bytes(json.dumps(ROW).encode() + b"\n" + json.dumps(ROW).encode().replace(b'"m"', b'"m\xff"'))
    with pytest.raises(PredictionsTableError, match=r"p.jsonl:2: not UTF-8 text \(byte 0xff"):
        read_predictions(path)


def test_empty_predictions_tables_say_0_rows(tmp_path: Path, capsys) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    header_only = tmp_path / "h.csv"
    header_only.write_text(",".join(REQUIRED_COLUMNS) + "\n")
    empty_parquet = tmp_path / "z.parquet"
    pq.write_table(pa.table({c: pa.array([], pa.string()) for c in REQUIRED_COLUMNS}), empty_parquet)
    empty_jsonl = tmp_path / "e.jsonl"
    empty_jsonl.write_text("\n")
    for path in (header_only, empty_parquet, empty_jsonl):
        with pytest.raises(PredictionsTableError, match="0 rows"):
            read_predictions(path)
        assert main(["accuracy", "--predictions", str(path)]) == 1
        err = capsys.readouterr().err
        assert "0 rows" in err and str(path) in err and "null values" not in err


def test_cli_inspect_names_every_hostile_row_without_a_traceback(tmp_path: Path) -> None:
    ok = {"id": "s0", "video": "v.mp4", "question": "q?", "options": ["a", "b"], "answer": 0}
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"\n".join([
        json.dumps(ok).encode(),
        json.dumps({**ok, "id": SURROGATE}).encode(),
        json.dumps({**ok, "id": "s2", "x": 0})[:-1].encode() + b', "deep": ' + b"[" * DEEP + b"]" * DEEP + b"}",
        json.dumps({**ok, "id": "s3"}).encode().replace(b"q?", b"q\xff?"),
        json.dumps({**ok, "id": "s4", "question": "a\u2028b"}, ensure_ascii=False).encode(),
    ]))
    env = {**__import__("os").environ, "PYTHONIOENCODING": "utf-8:strict"}
    base = [sys.executable, "-c", "import sys; from tempcore.cli import main; sys.exit(main())", "benchmarks", "inspect", "generic", "--annotations", str(path)]
    proc = subprocess.run([*base, "--skip-invalid", "--json"], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["invalid"] == 3
    assert {(r["row"], r["kind"]) for r in report["invalid_reasons"]} == {(2, "bad_text"), (3, "too_deep"), (4, "bad_text")}
    proc = subprocess.run(base, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{path}:2: [\\udc00] the sample id holds a lone surrogate" in proc.stderr


def test_tempcore_grounding_reads_hostile_tables_and_submissions_without_crashing(tmp_path: Path) -> None:
    """`tempcore grounding` (new with issue 15) read tables and submissions with its own readers:
    Arrow's JSON reader on a 20k-deep line (the segfault of issue 13.2) and json.loads on a deep
    submission line (RecursionError). Both are now named errors, exit 1, in a child process."""
    deep = "[" * 20_000 + "]" * 20_000
    table = tmp_path / "g.jsonl"
    table.write_text(json.dumps({"sample_id": "a", "model": "m", "strategy": "uniform", "pred_start": 1.0,
                                 "pred_end": 2.0}) + "\n" + '{"sample_id": ' + deep + "}\n")
    submission = tmp_path / "sub.jsonl"
    submission.write_text(json.dumps({"qid": 1, "pred_relevant_windows": [[0, 1, 0.5]]}) + "\n"
                          + '{"qid": 2, "pred_relevant_windows": ' + deep + "}\n")
    annotations = tmp_path / "qv.jsonl"
    annotations.write_text(json.dumps({"qid": 1, "query": "a dog runs", "vid": "v", "duration": 10,
                                       "relevant_windows": [[0, 2]]}) + "\n")
    for args, message in (
        (["--predictions", str(table)], f"{table}:2: JSON nested deeper than 64 levels"),
        (["--predictions", str(submission), "--benchmark", "qvhighlights", "--annotations", str(annotations)],
         f"{submission}:2: JSON nested deeper than 64 levels"),
    ):
        proc = subprocess.run([sys.executable, "-m", "tempcore", "grounding", *args],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])  # a segfault would be -11
        assert message in proc.stderr and "Traceback" not in proc.stderr
