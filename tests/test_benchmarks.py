"""Benchmark loading core: option / answer rules, the generic format, bad rows, hashing,
the preflight and the `tempcore benchmarks` CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tempcore.benchmarks import (
    AnnotationFileError,
    BenchmarkOptionError,
    InvalidRowError,
    UnknownBenchmarkError,
    available,
    build_choices,
    load_benchmark,
    preflight,
    resolve_answer,
    resolve_video,
    strip_option_prefixes,
)
from tempcore.benchmarks.choices import InvalidRow
from tempcore.cli import main
from tempcore.errors import TempcoreError
from tempcore.records import Sample

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmark-format.md"


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def row(i: int | str, **fields) -> dict:
    base = {
        "id": f"s{i}",
        "video": f"v{i}.mp4",
        "question": f"question {i}?",
        "options": ["x", "y", "z"],
        "answer": 0,
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not ...}


# --- options and answers -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["A. Apples.", "B. Candles.", "C. Berries."], ["Apples.", "Candles.", "Berries."]),
        (["(A) red", "(B) blue"], ["red", "blue"]),
        (["A) red", "B) blue", "C) green"], ["red", "blue", "green"]),
        (["A: up", "B: down"], ["up", "down"]),
        # one option without a prefix: nothing is stripped
        (["A. Apples.", "Candles.", "C. Berries."], ["A. Apples.", "Candles.", "C. Berries."]),
        # letters out of sequence: not prefixes
        (["B. one", "A. two"], ["B. one", "A. two"]),
        # a legit text that starts with a capital and a period
        (["B. B. King", "Muddy Waters", "Howlin' Wolf"], ["B. B. King", "Muddy Waters", "Howlin' Wolf"]),
        # "A." glued to the next letter is not a prefix
        (["A.M. train", "B.M. train"], ["A.M. train", "B.M. train"]),
        # padding without a prefix does not block stripping
        (["A. x", "B. y", "N/A", None], ["x", "y", "N/A", None]),
    ],
)
def test_strip_option_prefixes(options, expected):
    assert strip_option_prefixes(options) == expected


def test_padding_is_dropped_unless_it_is_the_answer():
    assert build_choices(["x", "N/A", "y", "", None], 2, answer_kind="index") == (("x", "y"), 1)
    assert build_choices(["x", "y", "n/a"], "C", answer_kind="letter") == (("x", "y", "n/a"), 2)
    assert build_choices(["A. x", "B. y", "C. N/A", "D. "], "B", answer_kind="letter") == (("x", "y"), 1)


@pytest.mark.parametrize(
    ("answer", "kind", "expected"),
    [
        ("C", "letter", 2),
        ("(b)", "letter", 1),
        ("D.", "letter", 3),
        (2, "index", 2),
        ("3", "index", 3),
        (1.0, "index", 1),
        ("Berries", "text", 2),
        ("  the THREE   kinds ", "text", 3),
        ("A. Apples", "text", 0),  # matches the option as given, before prefix stripping
        (3, "auto", 3),
        ("B", "auto", 1),
        ("Candles", "auto", 1),
        ("0", "auto", 0),
    ],
)
def test_resolve_answer(answer, kind, expected):
    raw = ["A. Apples", "B. Candles", "C. Berries", "D. The three kinds"]
    assert resolve_answer(answer, strip_option_prefixes(raw), kind, raw_options=raw) == expected


@pytest.mark.parametrize(
    ("options", "answer", "kind", "what"),
    [
        (["x", "y"], "C", "letter", "unresolvable_answer"),
        (["x", "y"], 2, "index", "unresolvable_answer"),
        (["x", "y"], -1, "index", "unresolvable_answer"),
        (["x", "y"], "w", "text", "unresolvable_answer"),
        (["x", "y"], "x", "letter", "unresolvable_answer"),
        (["x", "y"], True, "auto", "unresolvable_answer"),
        (["x", "y"], 0.5, "index", "unresolvable_answer"),
        (["3", "2", "1"], "2", "auto", "ambiguous_answer"),  # index 2 or the text "2"
        (["B", "A"], "A", "auto", "ambiguous_answer"),  # letter A or the text "A"
        (["same", "Same"], "SAME", "text", "ambiguous_answer"),  # no exact match, two normalised ones
        (["x", "y"], None, "auto", "missing_field"),
        (["x", "y"], "", "auto", "missing_field"),
    ],
)
def test_unresolvable_answers(options, answer, kind, what):
    with pytest.raises(InvalidRow) as err:
        resolve_answer(answer, options, kind)
    assert err.value.kind == what


@pytest.mark.parametrize(
    ("options", "kind"),
    [
        ([], "no_options"),
        (None, "no_options"),
        (["N/A", "", None], "no_options"),
        ("x, y", "no_options"),
        (["only"], "single_option"),
        (["only", "N/A"], "single_option"),
        ([f"o{i}" for i in range(27)], "too_many_options"),
    ],
)
def test_bad_option_lists(options, kind):
    with pytest.raises(InvalidRow) as err:
        build_choices(options, 0, answer_kind="index")
    assert err.value.kind == kind


# --- the generic format ------------------------------------------------------------------


def test_generic_jsonl_variable_options_answers_and_metadata(tmp_path):
    rows = [
        row(1, options=["a", "b", "c"], answer="B"),  # letter
        row(2, options=["a", "b", "c", "d"], answer=3),  # index
        row(3, options=["a", "b", "c", "d", "e"], answer="e"),  # text
        row(4, options=[f"o{i}" for i in range(6)], answer="(F)", planted={"key_second": 7, "kind": "order"}),
        row(5, video="frames/v5", media="frames", start=1.5, end=4),
        row(6, video="anim/v6.gif"),
        row(7, options=..., answer=..., answer_interval=[2.0, 5.5]),
    ]
    result = load_benchmark("generic", write_jsonl(tmp_path / "b.jsonl", rows))
    by_id = {s.sample_id: s for s in result.samples}
    assert [len(by_id[f"s{i}"].options) for i in range(1, 5)] == [3, 4, 5, 6]
    assert [by_id[f"s{i}"].answer for i in range(1, 5)] == [1, 3, 4, 5]
    assert by_id["s4"].metadata["planted"] == {"key_second": 7, "kind": "order"}
    assert (by_id["s5"].media, by_id["s5"].start, by_id["s5"].end) == ("frames", 1.5, 4.0)
    assert by_id["s6"].media == "gif"
    g = by_id["s7"]
    assert g.options == () and g.answer is None and g.answer_interval == (2.0, 5.5)
    assert all(s.benchmark == "generic" for s in result.samples)
    assert result.invalid == [] and result.skipped == []
    named = load_benchmark("generic", tmp_path / "b.jsonl", benchmark_name="world")
    assert {s.benchmark for s in named.samples} == {"world"}


def test_generic_csv_numbered_columns_padding_and_json_options(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text(
        "id,video,question,option_0,option_1,option_2,option_3,answer,task\n"
        "q1,v1.mp4,first?,up,down,,,1,order\n"
        'q2,v2.mp4,"multi\nline?",2,3,4,5,B,count\n'
        "q3,v3.mp4,third?,red,green,N/A,blue,blue,color\n"
    )
    result = load_benchmark("generic", path)
    s1, s2, s3 = result.samples
    assert s1.options == ("up", "down") and s1.answer == 1
    assert s2.question == "multi\nline?" and s2.answer == 1 and s2.metadata == {"task": "count"}
    assert s3.options == ("red", "green", "blue") and s3.answer == 2
    a_cols = tmp_path / "a.csv"
    a_cols.write_text("id,video,question,a0,a1,a2,answer\nz,v.mp4,q?,p,q,r,2\n")
    assert load_benchmark("generic", a_cols).samples[0].answer_text == "r"
    cell = tmp_path / "cell.csv"
    cell.write_text('id,video,question,options,answer\nz,v.mp4,q?,"[""p"", ""q""]",q\n')
    assert load_benchmark("generic", cell).samples[0].options == ("p", "q")


def _doc_block(lang: str) -> str:
    text = DOCS.read_text()
    section = text.split("## The generic format", 1)[1]
    return re.search(rf"```{lang}\n(.*?)```", section, re.S).group(1)


def test_documented_generic_examples_load(tmp_path):
    jsonl = load_benchmark("generic", write_jsonl(tmp_path / "doc.jsonl", _doc_block("json").splitlines()))
    q1, q2, q3 = jsonl.samples
    assert q1.options == ("A cup falls", "A door opens") and q1.answer_text == "A door opens"
    assert q2.answer_interval == (3.5, 6.0)
    assert q3.options == ("red", "blue", "green") and q3.answer == 2 and q3.media == "frames"
    assert q3.metadata["planted"] == {"key_second": 8}
    (tmp_path / "doc.csv").write_text(_doc_block("csv"))
    c1, c2 = load_benchmark("generic", tmp_path / "doc.csv").samples
    assert c1.options == ("A cup falls", "A door opens") and c1.answer == 1
    assert c2.answer_text == "3"


BAD_ROWS = [
    (row(1, video=...), "missing_field", "video"),
    (row(1, question="  "), "missing_field", "question"),
    (row(1, id=...), "missing_field", "id"),
    (row(1, options=[]), "no_options", "no options"),
    (row(1, options=..., answer=...), "no_options", "no options"),
    (row(1, options=["only"]), "single_option", "single option"),
    (row(1, answer="Q"), "unresolvable_answer", "cannot be resolved"),
    (row(1, answer=7), "unresolvable_answer", "outside 3 options"),
    (row(1, answer=...), "missing_field", "answer"),
    (row(1, start=5, end=2), "bad_interval", "not before"),
    (row(1, start="soon"), "bad_value", "start"),
    (row(1, media="film"), "bad_value", "media"),
    (row(1, options=..., answer=..., answer_interval=[4, 4]), "bad_interval", "not before"),
    ("{not json", "malformed_json", "malformed JSON line"),
    ("[1, 2]", "malformed_row", "expected a JSON object"),
]


@pytest.mark.parametrize(("bad", "kind", "says"), BAD_ROWS)
def test_every_bad_row_raises_with_file_row_and_reason(tmp_path, bad, kind, says):
    path = write_jsonl(tmp_path / "b.jsonl", [row("ok"), "", bad, row("after")])
    with pytest.raises(InvalidRowError) as err:
        load_benchmark("generic", path)
    exc = err.value
    assert isinstance(exc, TempcoreError)
    assert exc.file == path and exc.row == 3 and exc.invalid.kind == kind  # line 3 (line 2 is blank)
    assert says in exc.reason and f"{path}:3:" in str(exc)
    result = load_benchmark("generic", path, skip_invalid=True)
    assert [s.sample_id for s in result.samples] == ["sok", "safter"]
    assert [(r.row, r.kind) for r in result.invalid] == [(3, kind)]


def test_duplicate_ids_and_skip_invalid_counts(tmp_path):
    path = write_jsonl(
        tmp_path / "b.jsonl",
        [row(1), row(2), row(1, answer=1), row(3, options=["x"]), "{", row(2)],
    )
    with pytest.raises(InvalidRowError, match=r"b\.jsonl:3: \[s1\] duplicate id 's1' \(first at row 1\)"):
        load_benchmark("generic", path)
    result = load_benchmark("generic", path, skip_invalid=True)
    assert [s.sample_id for s in result.samples] == ["s1", "s2"]
    assert result.samples[0].answer == 0  # the first occurrence is kept, the duplicate reported
    assert [(r.row, r.kind, r.sample_id) for r in result.invalid] == [
        (3, "duplicate_id", "s1"),
        (4, "single_option", "s3"),
        (5, "malformed_json", None),
        (6, "duplicate_id", "s2"),
    ]


def test_csv_record_with_wrong_field_count_is_invalid(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text(
        "id,video,question,option_0,option_1,answer\nq1,v.mp4,q?,a,b,0\nq2,v.mp4,q?,a,b,0,extra\n"
    )
    with pytest.raises(InvalidRowError) as err:
        load_benchmark("generic", path)
    assert err.value.row == 3 and "7 fields, the header has 6" in err.value.reason


def test_generic_folder_loads_all_files_with_unique_ids(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [row(1)])
    (tmp_path / "b.csv").write_text(
        "id,video,question,option_0,option_1,answer\ns1,v.mp4,q?,a,b,0\ns2,v.mp4,q?,a,b,1\n"
    )
    result = load_benchmark("generic", tmp_path, skip_invalid=True)
    assert [s.sample_id for s in result.samples] == ["s1", "s2"]
    assert [(r.file.name, r.row, r.kind) for r in result.invalid] == [("b.csv", 2, "duplicate_id")]
    assert "a.jsonl:1" in result.invalid[0].reason
    assert [p.name for p in result.source_files] == ["a.jsonl", "b.csv"]


# --- registry, options, files ------------------------------------------------------------


def test_registry_names_and_suggestions():
    assert available() == sorted(
        ["videomme", "longvideobench", "nextqa", "mlvu", "egoschema", "mvbench", "tvbench", "temporalbench"]
        + ["extremewhenbench", "generic", "charades_sta", "qvhighlights", "grounding"]
    )
    with pytest.raises(UnknownBenchmarkError, match="did you mean 'videomme'") as err:
        load_benchmark("video-mme", "x.json")
    assert isinstance(err.value, TempcoreError) and err.value.suggestions == ["videomme"]
    with pytest.raises(UnknownBenchmarkError, match="did you mean 'mvbench'"):
        load_benchmark("mvbnech", "x.json")


def test_unknown_option_is_named_with_a_suggestion(tmp_path):
    path = write_jsonl(tmp_path / "b.jsonl", [row(1)])
    with pytest.raises(BenchmarkOptionError, match=r"'benchmark_nme' \(did you mean 'benchmark_name'\?\)"):
        load_benchmark("generic", path, benchmark_nme="x")


def test_unreadable_annotation_files(tmp_path):
    with pytest.raises(AnnotationFileError, match="annotations not found"):
        load_benchmark("generic", tmp_path / "nope.jsonl")
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": 1,}')
    with pytest.raises(AnnotationFileError, match=r"bad\.json: malformed JSON at line 1"):
        load_benchmark("generic", bad)
    obj = tmp_path / "obj.json"
    obj.write_text('{"id": 1}')
    with pytest.raises(AnnotationFileError, match="expected a JSON list"):
        load_benchmark("generic", obj)
    odd = tmp_path / "b.txt"
    odd.write_text("x")
    with pytest.raises(AnnotationFileError, match="unsupported file type"):
        load_benchmark("generic", odd)
    (tmp_path / "empty").mkdir()
    with pytest.raises(AnnotationFileError, match="no generic annotation file"):
        load_benchmark("generic", tmp_path / "empty")


def test_annotations_hash_follows_content_not_name(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", [row(1), row(2)])
    first = load_benchmark("generic", a)
    assert len(first.annotations_hash) == 64 and first.source_files == [a]
    assert load_benchmark("generic", a).annotations_hash == first.annotations_hash
    b = tmp_path / "renamed.jsonl"
    b.write_bytes(a.read_bytes())
    assert load_benchmark("generic", b).annotations_hash == first.annotations_hash
    write_jsonl(a, [row(1), row(2, answer=1)])
    assert load_benchmark("generic", a).annotations_hash != first.annotations_hash


# --- videos ------------------------------------------------------------------------------


def test_preflight_lists_every_missing_video_at_once(tmp_path):
    root = tmp_path / "videos"
    (root / "frames" / "present").mkdir(parents=True)
    (root / "ok.mp4").write_bytes(b"\0")
    (root / "anim.gif").write_bytes(b"GIF89a")
    (root / "dir.mp4").mkdir()
    (root / "frames" / "is_a_file").write_bytes(b"\0")
    absolute = tmp_path / "elsewhere.mp4"
    samples = [
        Sample("b", "1", "ok.mp4", "q"),
        Sample("b", "2", "gone.mp4", "q"),
        Sample("b", "3", "gone.mp4", "q"),
        Sample("b", "4", "also/gone.mkv", "q"),
        Sample("b", "5", "anim.gif", "q", media="gif"),
        Sample("b", "6", "frames/present", "q", media="frames"),
        Sample("b", "7", "frames/absent", "q", media="frames"),
        Sample("b", "8", "dir.mp4", "q"),
        Sample("b", "9", "frames/is_a_file", "q", media="frames"),
        Sample("b", "10", str(absolute), "q"),
    ]
    missing = preflight(samples, root)
    assert [(m.video, m.sample_ids) for m in missing] == [
        ("gone.mp4", ("2", "3")),
        ("also/gone.mkv", ("4",)),
        ("frames/absent", ("7",)),
        ("dir.mp4", ("8",)),
        ("frames/is_a_file", ("9",)),
        (str(absolute), ("10",)),
    ]
    reasons = {m.video: (m.expected, m.reason) for m in missing}
    assert reasons["frames/absent"] == ("directory", "frame folder not found")
    assert reasons["dir.mp4"] == ("file", "is a directory, expected a video file")
    assert reasons["frames/is_a_file"] == ("directory", "is a file, expected a frame folder")
    assert missing[0].path == root / "gone.mp4"
    absolute.write_bytes(b"\0")
    assert len(preflight(samples, root)) == 5
    assert resolve_video(samples[0], root) == root / "ok.mp4"
    assert resolve_video(samples[9], root) == absolute


# --- CLI ---------------------------------------------------------------------------------


def test_cli_list(capsys):
    assert main(["benchmarks", "list"]) == 0
    out = capsys.readouterr().out
    for name in available():
        assert re.search(rf"^{name}\s+\S", out, re.M)
    assert main(["benchmarks", "list", "--json"]) == 0
    assert sorted(json.loads(capsys.readouterr().out)) == available()


def test_cli_inspect_json(tmp_path, capsys):
    root = tmp_path / "videos"
    root.mkdir()
    (root / "v1.mp4").write_bytes(b"\0")
    path = write_jsonl(
        tmp_path / "b.jsonl",
        [
            row(1, options=["a", "b"], answer=1),
            row(2, options=["a", "b", "c"], answer=1),
            row(3, options=["a", "b", "c"], answer=2),
            row(4, answer="nope"),
            "{",
        ],
    )
    args = ["benchmarks", "inspect", "generic", "--annotations", str(path)]
    assert main([*args, "--skip-invalid", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["samples"] == 3 and out["invalid"] == 2 and out["skipped"] == 0
    assert out["options_histogram"] == {"2": 1, "3": 2}
    assert out["answer_histogram"] == {"1": 2, "2": 1}
    assert out["invalid_by_kind"] == {"unresolvable_answer": 1, "malformed_json": 1}
    assert [r["row"] for r in out["invalid_reasons"]] == [4, 5]
    assert "missing_videos" not in out and out["annotations_hash"]
    assert main([*args, "--skip-invalid", "--json", "--video-root", str(root), "--max-list", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["missing_videos"] == 2 and out["samples_missing_video"] == 2
    assert [m["video"] for m in out["missing"]] == ["v2.mp4"] and len(out["invalid_reasons"]) == 1
    assert main([*args, "--skip-invalid", "--video-root", str(root)]) == 0
    text = capsys.readouterr().out
    assert "samples          3" in text and "missing videos   2" in text and "v3.mp4: video not found" in text


def test_cli_inspect_invalid_row_exits_1_with_location(tmp_path, capsys):
    path = write_jsonl(tmp_path / "b.jsonl", [row(1), row(2, options=["x"])])
    assert main(["benchmarks", "inspect", "generic", "--annotations", str(path), "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{path}:2: [s2] single option" in captured.err
    assert main(["benchmarks", "inspect", "generik", "--annotations", str(path)]) == 1
    assert "did you mean 'generic'" in capsys.readouterr().err
    assert main(["benchmarks", "inspect", "generic", "--annotations", str(path), "-o", "nokey"]) == 1
    assert "KEY=VALUE" in capsys.readouterr().err
