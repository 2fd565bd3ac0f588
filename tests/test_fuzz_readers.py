"""Fuzzing the annotation readers of every format and the predictions readers (issue 13).

Inputs: arbitrary bytes, valid rows of the format mixed with hostile fragments (deep nesting,
lone surrogates, U+2028 / U+2029 / U+0085, bytes that are not UTF-8, NULs, huge lines). Every
input must end in samples, named invalid rows or one named file error: never another
exception, a hang, or a crash of the process. The predictions readers reach Arrow's C++ JSON /
CSV / Parquet readers, so they are fuzzed in a child process whose exit status is checked (a
segfault is seen as a negative status). Bounded: a fixed number of examples, no database.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tempcore.benchmarks import load_benchmark
from tempcore.benchmarks.errors import AnnotationFileError
from tempcore.records import Sample
from test_hostile_inputs import FORMATS

HERE = Path(__file__).parent
#: one scratch folder per process (hypothesis examples cannot take function-scoped fixtures)
_TMP = Path(tempfile.mkdtemp(prefix="tempcore-fuzz-"))
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
# format -> (loader, file written, path handed to the loader)
LAYOUT = {
    "generic-jsonl": ("generic", "a.jsonl", "a.jsonl"),
    "generic-json": ("generic", "a.json", "a.json"),
    "generic-csv": ("generic", "a.csv", "a.csv"),
    "videomme": ("videomme", "videomme.json", "videomme.json"),
    "videomme-parquet": ("videomme", "videomme.parquet", "videomme.parquet"),
    "longvideobench": ("longvideobench", "lvb_val.json", "lvb_val.json"),
    "nextqa": ("nextqa", "val.csv", "val.csv"),
    "mlvu": ("mlvu", "json/1_plotQA.json", "json"),
    "mvbench": ("mvbench", "json/action_antonym.json", "json"),
    "tvbench": ("tvbench", "json/action_count.json", "json"),
    "temporalbench": ("temporalbench", "temporalbench_short_qa.json", "temporalbench_short_qa.json"),
    "extremewhenbench": ("extremewhenbench", "ewb.jsonl", "ewb.jsonl"),
    "egoschema": ("egoschema", "questions.json", "questions.json"),
}
CSV_HEADERS = {"generic-csv": "id,video,question,options,answer", "nextqa": "video,qid,question,answer,a0,a1"}

FRAGMENTS = st.sampled_from([
    "[", "]", "{", "}", '"', ",", ":", "\\", "\\udc00", "\\ud800\\udc00", "\udc00", "\u2028", "\u2029",
    "\x85", "\x0c", "\r", "\n", "\x00", "\ufeff", "null", "1e999", "-0", '"id"', '"options"', '["a","b"]',
    "é", "🎬", "\u202e", "a" * 50,
])


@st.composite
def hostile_text(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.one_of(FRAGMENTS, st.text(max_size=20)), max_size=12))
    depth = draw(st.sampled_from([0, 0, 0, 70, 5_000, 60_000]))
    if depth:
        parts.insert(draw(st.integers(0, len(parts))), draw(st.sampled_from(["[", "{\"a\":"])) * depth)
    return "".join(parts)


@st.composite
def annotation_file(draw: st.DrawFn) -> tuple[str, bytes]:
    fmt = draw(st.sampled_from(sorted(LAYOUT)))
    base = {"generic-csv": "generic-jsonl", "videomme-parquet": "videomme"}.get(fmt, fmt)
    make_row = FORMATS[base][1] if base in FORMATS else FORMATS["generic-jsonl"][1]
    lines: list[str] = []
    for i in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["valid", "mutated", "hostile", "huge"]))
        row = make_row(i, "what?")
        if kind == "valid":
            lines.append(json.dumps(row))
        elif kind == "mutated":
            key = draw(st.sampled_from(sorted(row)))
            text = json.dumps({**row, key: draw(hostile_text())}, ensure_ascii=draw(st.booleans()))
            cut = draw(st.integers(0, len(text)))
            lines.append(text if draw(st.booleans()) else text[:cut] + draw(hostile_text()) + text[cut:])
        elif kind == "hostile":
            lines.append(draw(hostile_text()))
        else:
            lines.append(json.dumps({**row, "question": "q" * draw(st.integers(100_000, 400_000))}))
    if fmt in CSV_HEADERS:
        body = CSV_HEADERS[fmt] + "\n" + "\n".join(
            ",".join(json.dumps(v) if not isinstance(v, str) else v for v in json.loads(line).values())
            if _is_json_object(line) else line for line in lines)
    elif fmt.endswith("jsonl") or fmt == "extremewhenbench":
        body = "\n".join(lines)
    else:
        body = "[" + ",".join(lines) + "]" if draw(st.booleans()) else "".join(lines)
    data = body.encode("utf-8", "surrogatepass")
    if draw(st.booleans()):  # splice in raw bytes (not UTF-8, NUL, truncation)
        junk = draw(st.binary(max_size=40))
        at = draw(st.integers(0, len(data)))
        data = data[:at] + junk + data[at:]
    if draw(st.integers(0, 9)) == 0:
        data = draw(st.binary(max_size=3000))
    return fmt, data


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


def _check_annotations(tmp: Path, fmt: str, data: bytes) -> None:
    name, written, given_path = LAYOUT[fmt]
    target = tmp / written
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    try:
        result = load_benchmark(name, tmp / given_path, skip_invalid=True)
    except AnnotationFileError as exc:
        assert str(exc.path) in str(exc)
        str(exc).encode("utf-8")
        return
    finally:
        target.unlink()
    for sample in result.samples:
        assert isinstance(sample, Sample)
        json.dumps(sample.to_dict(), ensure_ascii=False).encode("utf-8")  # storable
    for bad in result.invalid + result.skipped:
        text = str(bad)
        text.encode("utf-8")
        assert text.startswith(f"{bad.file}:{bad.row}:")


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(annotation_file())
def test_annotation_readers_survive_hostile_files(case: tuple[str, bytes]) -> None:
    _check_annotations(_TMP, *case)


# --- predictions readers, in a child process ------------------------------------------------------

PRED_ROW = {"benchmark": "b", "sample_id": "s1", "model": "m", "strategy": "uniform", "mode": "q", "k": 4,
            "window": None, "correct": 1}


@st.composite
def predictions_file(draw: st.DrawFn) -> tuple[str, bytes]:
    suffix = draw(st.sampled_from([".jsonl", ".jsonl", ".csv", ".parquet"]))
    lines = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["valid", "mutated", "hostile"]))
        if kind == "valid":
            lines.append(json.dumps(PRED_ROW))
        elif kind == "mutated":
            key = draw(st.sampled_from(sorted(PRED_ROW)))
            lines.append(json.dumps({**PRED_ROW, key: draw(hostile_text())}, ensure_ascii=draw(st.booleans())))
        else:
            lines.append(draw(hostile_text()))
    if suffix == ".csv":
        lines = [",".join(PRED_ROW)] + [line if not _is_json_object(line) else ",".join(
            "" if v is None else str(v) for v in json.loads(line).values()) for line in lines]
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        junk = draw(st.binary(max_size=40))
        at = draw(st.integers(0, len(data)))
        data = data[:at] + junk + data[at:]
    return suffix, data


@settings(max_examples=120, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(predictions_file())
def fuzz_predictions(case: tuple[str, bytes]) -> None:
    """Run in the child process (see the test below)."""
    from tempcore.tidy.table import PredictionsTableError, read_predictions

    suffix, data = case
    path = _TMP / f"p{suffix}"
    path.write_bytes(data)
    try:
        table = read_predictions(path)
    except PredictionsTableError as exc:
        assert str(path) in str(exc)
        str(exc).encode("utf-8")
        return
    assert table.num_rows > 0
    table.to_pylist()  # every value readable


def test_predictions_readers_survive_hostile_files_without_crashing() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", "import test_fuzz_readers as t; t.fuzz_predictions()"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=str(HERE))
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def leading_null_lines() -> None:
    """Run in the child process (see the test below)."""
    import pytest

    from tempcore.cli.report import ReportInputError, read_rows
    from tempcore.tidy.table import PredictionsTableError, read_predictions

    row = json.dumps(PRED_ROW)
    for n, text in enumerate(["null", " null\n" + row, "\nnull\n" + row, "null\u2028x\n" + row]):
        path = _TMP / f"null{n}.jsonl"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(PredictionsTableError, match=rf"{path}:\d+: "):
            read_predictions(path)
        with pytest.raises(ReportInputError, match=str(path)):
            read_rows(path)


def test_a_leading_null_line_is_a_named_error_not_a_crash() -> None:
    # found by the fuzzer above: Arrow's JSON reader segfaults on a file whose first line is `null`
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", "import test_fuzz_readers as t; t.leading_null_lines()"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=str(HERE))
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
