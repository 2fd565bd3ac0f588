"""Importers of predictions made elsewhere: lmms-eval logs (0.7 and pre-0.4 layouts, tempcore-exported
tasks without flags), TemporalBench's {"idx", "response"} and generic {sample_id, response} JSONL, and
their ``tempcore import`` commands. The real lmms-eval round trip: test_lmms_eval_interop.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tempcore.answers import extract_choice
from tempcore.cli import main
from tempcore.interop.importers import (
    ImportFormatError,
    LmmsEvalImportError,
    import_lmms_eval,
    import_responses,
    import_temporalbench,
    lmms_eval_task_name,
)
from tempcore.records import Condition, Sample
from tempcore.run.store import RunStore

VIDEOMME_OPTIONS = ["A. A red car.", "B. A blue bus.", "C. A green bike.", "D. A dog."]


def _write_jsonl(path: Path, lines: list) -> Path:
    path.write_text("".join((json.dumps(x) if not isinstance(x, str) else x) + "\n" for x in lines))
    return path


# --- lmms-eval, pre-0.4 layout (doc, arguments, nested resps) -----------------------------------


def _lmms_lines() -> list[dict]:
    def line(doc_id: int, qid: str, target: object, resp: str, **extra: object) -> dict:
        return {
            "doc_id": doc_id,
            "doc": {"question_id": qid, "options": VIDEOMME_OPTIONS, "question": "What passes by?"},
            "target": target,
            "arguments": [],
            "resps": [[resp]],
            "filtered_resps": [resp],
            "doc_hash": f"h{doc_id}",
            "input": f"prompt {doc_id}",
            "videomme_perception_score": {"question_id": qid, "duration": "short", "pred_answer": resp[:1]},
            **extra,
        }

    return [
        line(0, "001-1", "B", "B"),
        line(1, "001-2", "C", "The answer is (A)."),
        line(2, "001-3", "A. A red car.", "I cannot tell from these frames."),
        line(3, "001-4", "A green bike.", "C. A green bike."),
        line(4, "001-5", 3, "**D**", prompt_hash="fixedhash"),
    ]


def test_lmms_eval_import_pre_04_layout(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "20240601_samples_videomme.jsonl", _lmms_lines())
    result = import_lmms_eval(path, model="llava-ov-7b", k=32, id_field="question_id", benchmark="videomme")
    preds = result.predictions
    cond = Condition("uniform", k=32).key
    assert [(p.benchmark, p.sample_id, p.model, p.condition) for p in preds] == [
        ("videomme", f"001-{i}", "llava-ov-7b", cond) for i in range(1, 6)
    ]
    assert [(p.answer, p.correct, p.target) for p in preds] == [(1, 1, 1), (0, 0, 2), (None, 0, 0), (2, 1, 2),
                                                                (3, 1, 3)]
    assert preds[2].parse_error and preds[1].response == "The answer is (A)."
    assert all(p.frames is None for p in preds) and result.layout == "pre-0.4"
    assert preds[4].prompt_hash == "fixedhash" and len(preds[0].prompt_hash) == 64
    # row numbers as ids only when asked; explicit condition
    other = import_lmms_eval(path, model="m", k=16, benchmark="vmme", id_field="doc_id", variant="linspace")
    assert [p.sample_id for p in other.predictions] == ["0", "1", "2", "3", "4"]
    assert other.predictions[0].condition == Condition("uniform", k=16, variant="linspace").key


def test_lmms_eval_other_task_needs_id_field_and_benchmark(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "samples_videomme.jsonl", _lmms_lines())
    # never ids from row numbers, never a benchmark guessed from the file name: errors list the fields
    with pytest.raises(LmmsEvalImportError, match=r"no id field given.*Fields: doc_id, doc\{question_id, options"):
        import_lmms_eval(path, model="m", k=8, benchmark="videomme")
    with pytest.raises(LmmsEvalImportError, match=r"give the benchmark.*'videomme'.*videomme_perception_score\{"):
        import_lmms_eval(path, model="m", k=8, id_field="question_id")
    with pytest.raises(LmmsEvalImportError, match="no field 'qid'.*Fields:"):
        import_lmms_eval(path, model="m", k=8, id_field="qid", benchmark="videomme")


def test_lmms_eval_without_options_uses_n_options(tmp_path: Path) -> None:
    rows = [
        {"doc_id": 0, "target": "B", "resps": [["Answer: B"]], "filtered_resps": ["Answer: B"], "doc_hash": "x"},
        {"doc_id": 1, "target": "E", "resps": [["E"]], "filtered_resps": ["E"], "doc_hash": "y"},
    ]
    path = _write_jsonl(tmp_path / "samples_mvbench_action.jsonl", rows)
    assert lmms_eval_task_name(path) == "mvbench_action"
    errors: list[ImportFormatError] = []
    result = import_lmms_eval(path, model="m", k=8, n_options=4, errors=errors, id_field="doc_id", benchmark="mvb")
    assert [(p.answer, p.correct) for p in result.predictions] == [(1, 1)]
    assert len(errors) == 1 and "samples_mvbench_action.jsonl:2" in str(errors[0]) and "outside" in str(errors[0])


def test_lmms_eval_bad_lines(tmp_path: Path) -> None:
    lines = _lmms_lines()[:2] + ["{not json", {"doc_id": 9}, _lmms_lines()[0]]
    path = _write_jsonl(tmp_path / "samples_videomme.jsonl", lines)
    kw = dict(model="m", k=8, id_field="question_id", benchmark="videomme")
    with pytest.raises(LmmsEvalImportError, match=r"samples_videomme.jsonl:3: not JSON"):
        import_lmms_eval(path, **kw)
    errors: list[ImportFormatError] = []
    result = import_lmms_eval(path, errors=errors, **kw)
    assert len(result.predictions) == 2
    assert [str(e).split(": ", 1)[0].rsplit(":", 1)[1] for e in errors] == ["3", "4", "5"]
    assert "not an lmms-eval --log_samples line (fields: doc_id)" in str(errors[1])
    assert "already on line 1" in str(errors[2])


def test_lmms_eval_hostile_lines_are_named_and_the_rest_imported(tmp_path: Path) -> None:
    """Issue 13 on the lmms-eval importer: a line nested 100k levels, a non-UTF-8 byte and a lone
    surrogate are bad lines (named, skipped with ``errors``), never a RecursionError; a U+2028
    inside a response is text, not a line break, so later line numbers stay right."""
    first, second, third = _lmms_lines()[:3]
    second["resps"] = [["B\u2028because the bus is blue"]]
    second["filtered_resps"] = ["B\u2028because the bus is blue"]
    raw = b"".join([
        json.dumps(first).encode() + b"\n",
        json.dumps(second, ensure_ascii=False).encode() + b"\n",
        b"[" * 100_000 + b"]" * 100_000 + b"\n",
        json.dumps(third).encode()[:-1] + b', "x": "\xff"}\n',
        json.dumps({**third, "input": "\udc00"}).encode() + b"\n",
    ])
    path = tmp_path / "samples_videomme.jsonl"
    path.write_bytes(raw)
    errors: list[ImportFormatError] = []
    result = import_lmms_eval(path, errors=errors, model="m", k=8, id_field="question_id", benchmark="videomme")
    assert [p.sample_id for p in result.predictions] == ["001-1", "001-2"]
    assert result.predictions[1].response.startswith("B\u2028because")
    where = [str(e).split(": ", 1)[0].rsplit(":", 1)[1] for e in errors]
    assert where == ["3", "4", "5"]
    assert "deeper than" in str(errors[0]) and "not UTF-8" in str(errors[1]) and "surrogate" in str(errors[2])


# --- lmms-eval 0.7 layout (no doc, filtered_resps a string, metric dicts) -------------------------


def _v07_line(doc_id: int, response: str, target: str, **metrics: object) -> dict:
    line: dict = {"doc_id": doc_id, "target": target, "filtered_resps": response, "doc_hash": f"h{doc_id}",
                  "input": f"Question {doc_id}\nA. x\nB. y\nAnswer with the option's letter."}
    line.update(metrics)
    return line


def _tempcore_item(sid: str, options: list[str], answer: int, response: str, **extra: object) -> dict:
    """What the exported task's process_results logs (see tempcore/interop/lmms_task.py)."""
    e = extract_choice(response, options)
    return {"benchmark": "world", "sample_id": sid, "video": f"videos/{sid}.mp4", "options": options,
            "answer": answer, "target": "ABCD"[answer], "category": "visual_bias", "response": response,
            "parsed": e.letter, "parse_method": e.method, "parse_error": e.error,
            "score": float(e.index == answer), "extractor_sha256": "x", **extra}


def test_lmms_eval_07_layout_of_another_task(tmp_path: Path) -> None:
    lines = [_v07_line(0, "B", "B", mvbench_accuracy={"question_id": "q7", "pred_answer": "B", "answer": "B"}),
             _v07_line(1, "The answer is A", "B", mvbench_accuracy={"question_id": "q8", "answer": "B"})]
    path = _write_jsonl(tmp_path / "20250101_samples_mvbench.jsonl", lines)
    result = import_lmms_eval(path, model="m", k=8, id_field="question_id", benchmark="mvbench", n_options=2)
    assert [(p.sample_id, p.answer, p.correct) for p in result.predictions] == [("q7", 1, 1), ("q8", 0, 0)]
    assert result.layout == "0.7" and result.predictions[0].response == "B"
    with pytest.raises(LmmsEvalImportError, match=r"Fields: doc_id, target, filtered_resps, doc_hash, input, "
                                                  r"mvbench_accuracy\{question_id, pred_answer, answer\}"):
        import_lmms_eval(path, model="m", k=8, benchmark="mvbench")


def test_lmms_eval_log_of_a_tempcore_task_needs_no_flags(tmp_path: Path) -> None:
    opts = ["red", "blue", "green"]
    responses = ["**B**", "I think it's C", "green", "<answer>A</answer>", "no idea"]
    answers = [1, 1, 2, 0, 0]
    lines = []
    for i, (r, a) in enumerate(zip(responses, answers)):
        item = _tempcore_item(f"s{i}", opts, a, r)
        lines.append(_v07_line(i, r, "ABC"[a], tempcore_accuracy=item, tempcore_visual_bias_accuracy=item))
    lines[1]["resps"] = "<think>hm</think>I think it's C"  # raw response differs from the filtered one
    path = _write_jsonl(tmp_path / "samples_tempcore_world.jsonl", lines)
    result = import_lmms_eval(path, model="m", k=8)
    preds = result.predictions
    assert result.benchmark == "world" and result.id_source == "tempcore metric items"
    assert [p.sample_id for p in preds] == ["s0", "s1", "s2", "s3", "s4"]
    assert [p.correct for p in preds] == [1, 0, 1, 1, 0] and [p.target for p in preds] == answers
    assert preds[1].response.startswith("<think>") and preds[4].parse_error
    assert result.disagreements == 0
    # the log's own scores are compared: an item scored by another extractor is counted
    lines[0]["tempcore_accuracy"] = dict(lines[0]["tempcore_accuracy"], score=0.0)
    assert import_lmms_eval(_write_jsonl(tmp_path / "b.jsonl", lines), model="m", k=8).disagreements == 1
    with pytest.raises(LmmsEvalImportError, match="name benchmark 'world', not 'other'"):
        import_lmms_eval(path, model="m", k=8, benchmark="other")
    # joined with the annotations: ids and options must match
    samples = [Sample("world", f"s{i}", f"videos/s{i}.mp4", "q?", tuple(opts), a) for i, a in enumerate(answers)]
    joined = import_lmms_eval(path, model="m", k=8, samples=samples[:4] + [samples[4]])
    assert joined.without_response == [] and len(joined.predictions) == 5
    with pytest.raises(LmmsEvalImportError, match="'s4' is not in the annotations of 'world'"):
        import_lmms_eval(path, model="m", k=8, samples=samples[:4])
    changed = [Sample("world", s.sample_id, s.video, s.question, ("red", "blue", "cyan"), s.answer) for s in samples]
    with pytest.raises(LmmsEvalImportError, match="differ from the annotations"):
        import_lmms_eval(path, model="m", k=8, samples=changed)


def test_cli_import_of_a_tempcore_log_needs_no_flags(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """`tempcore import lmms-eval FILE --store S`: ids, benchmark and options from the metric items,
    the model from the run's {date}_results.json, K unknown (lmms-eval does not log it)."""
    opts = ["red", "blue", "green"]
    lines = [_v07_line(i, r, "ABC"[a], tempcore_accuracy=_tempcore_item(f"s{i}", opts, a, r))
             for i, (r, a) in enumerate([("**B**", 1), ("green", 2)])]
    log = _write_jsonl(tmp_path / "20261201_101010_samples_tempcore_world.jsonl", lines)
    store = tmp_path / "run"
    assert main(["import", "lmms-eval", str(log), "--store", str(store)]) == 1  # no results file: says so
    assert "no --model given and no {date}_results.json" in capsys.readouterr().err
    (tmp_path / "20261201_101010_results.json").write_text(json.dumps({"model_name": "", "model_source": "dummy",
                                                                       "config": {"model": "dummy"}}))
    assert main(["import", "lmms-eval", str(log), "--store", str(store)]) == 0
    assert "2 predictions of world read" in capsys.readouterr().out
    with RunStore.open(store, create=False) as s:
        preds = list(s.predictions())
    assert {p.model for p in preds} == {"dummy"} and [p.correct for p in preds] == [1, 1]
    assert all(Condition.from_key(p.condition).k is None for p in preds)


# --- response files ------------------------------------------------------------------------------


def _samples(benchmark: str = "bench") -> list[Sample]:
    return [Sample(benchmark, str(i), f"v{i}.mp4", f"q{i}?", ("cat", "dog", "bird", "fish"), i % 4) for i in range(5)]


def test_responses_joined_with_samples(tmp_path: Path) -> None:
    lines = [{"sample_id": "0", "response": "A"}, {"sample_id": "1", "response": "[B]"},
             {"sample_id": "2", "response": "Best guess: D"}, {"sample_id": "3", "response": "fish"}]
    path = _write_jsonl(tmp_path / "r.jsonl", lines)
    result = import_responses(path, _samples(), model="m", k=4)
    assert [(p.sample_id, p.answer, p.correct) for p in result.predictions] == [
        ("0", 0, 1), ("1", 1, 1), ("2", 3, 0), ("3", 3, 1)]
    assert result.benchmark == "bench" and result.without_response == ["4"]
    bad = _write_jsonl(tmp_path / "bad.jsonl", [{"sample_id": "9", "response": "A"}, {"id": "1", "response": "B"},
                                                {"sample_id": "0", "response": 3}, {"sample_id": "0", "response": "A"},
                                                {"sample_id": "0", "response": "B"}])
    errors: list[ImportFormatError] = []
    result = import_responses(bad, _samples(), model="m", k=4, errors=errors)
    assert len(result.predictions) == 1
    messages = [str(e) for e in errors]
    assert "bad.jsonl:1: sample id '9' is not in the annotations of 'bench'" in messages[0]
    assert "no field 'sample_id'. Fields: id, response" in messages[1]
    assert "not text" in messages[2] and "already on line 4" in messages[3]
    with pytest.raises(ImportFormatError, match="bad.jsonl:1"):
        import_responses(bad, _samples(), model="m", k=4)


def test_temporalbench_idx_response(tmp_path: Path) -> None:
    samples = [Sample("temporalbench", str(i), "a.mp4", "Which caption?", ("x", "y"), i % 2) for i in range(3)]
    path = _write_jsonl(tmp_path / "tb.jsonl", [{"idx": 0, "response": "A"}, {"idx": 1, "response": "A"},
                                                {"idx": 2, "response": "The answer is A."}])
    result = import_temporalbench(path, samples, model="m", k=8)
    assert [(p.sample_id, p.correct) for p in result.predictions] == [("0", 1), ("1", 0), ("2", 1)]
    assert result.format == "temporalbench" and result.id_source == "idx"


# --- CLI -------------------------------------------------------------------------------------------


def test_cli_import_lmms_eval_and_table(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    log = _write_jsonl(tmp_path / "samples_videomme.jsonl", _lmms_lines())
    run_dir = tmp_path / "imported"
    argv = ["import", "lmms-eval", str(log), "--store", str(run_dir), "--model", "m", "--k", "32",
            "--id-field", "question_id", "--benchmark", "videomme"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "5 predictions of videomme read (1 parse failures, 0 lines skipped; ids from question_id), 5 stored" in out
    assert main(argv) == 0 and "0 stored" in capsys.readouterr().out  # rerun: nothing duplicated
    with RunStore.open(run_dir, create=False) as s:
        assert s.counts().predictions == 5 and s.counts().parse_errors == 1
        manifest = s.manifest(s.runs()[0][0])["import"]
        assert manifest["format"] == "lmms-eval" and manifest["id_field"] == "question_id"
        assert manifest["benchmark"] == "videomme" and manifest["layout"] == "pre-0.4"
    # a tidy table exported from it goes into another store unchanged
    table = tmp_path / "t.parquet"
    assert main(["export", "predictions", "--run", str(run_dir), "--out", str(table)]) == 0
    assert main(["import", "table", str(table), "--store", str(tmp_path / "other.sqlite")]) == 0
    assert "5 predictions read, 5 stored" in capsys.readouterr().out.splitlines()[-1]
    with RunStore(run_dir / "store.sqlite") as a, RunStore(tmp_path / "other.sqlite") as b:
        assert list(a.predictions()) == list(b.predictions())  # every column, target included
        assert [x.target for x in a.predictions()] == [1, 2, 0, 2, 3]
    # a bad line aborts the import unless --skip-bad; without --id-field the error lists the fields
    bad = _write_jsonl(tmp_path / "samples_x.jsonl", [*_lmms_lines()[:1], "{oops"])
    base = ["import", "lmms-eval", str(bad), "--store", str(tmp_path / "x.sqlite"), "--model", "m", "--k", "8",
            "--benchmark", "videomme"]
    assert main(base) == 1 and "no id field given" in capsys.readouterr().err
    base += ["--id-field", "question_id"]
    assert main(base) == 1 and "samples_x.jsonl:2" in capsys.readouterr().err
    assert main([*base, "--skip-bad"]) == 0
    captured = capsys.readouterr()
    assert "skipped" in captured.err and "1 lines skipped; ids from question_id), 1 stored" in captured.out


def test_cli_import_responses_and_temporalbench(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    ann = tmp_path / "bench.jsonl"
    ann.write_text("".join(json.dumps({"id": s.sample_id, "video": s.video, "question": s.question,
                                       "options": list(s.options), "answer": s.answer}) + "\n" for s in _samples()))
    resp = _write_jsonl(tmp_path / "r.jsonl", [{"qid": "0", "text": "(A)"}, {"qid": "1", "text": "dog"}])
    argv = ["import", "responses", str(resp), "--benchmark", "bench", "--annotations", str(ann), "--store",
            str(tmp_path / "s.sqlite"), "--model", "m", "--k", "4", "--id-field", "qid", "--response-field", "text"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "2 predictions of bench read (0 parse failures" in out and "3 sample(s) of bench have no response" in out
    with RunStore(tmp_path / "s.sqlite") as s:
        assert sorted((p.sample_id, p.correct) for p in s.predictions()) == [("0", 1), ("1", 1)]

    tb_ann = tmp_path / "temporalbench_short_qa.json"
    tb_ann.write_text(json.dumps([
        {"idx": i, "video_name": f"v{i}.mp4", "category": "Action", "dataset": "FineGym",
         "question": "Which caption matches the video?\nA. The gymnast jumps.\nB. The gymnast falls.",
         "GT": "AB"[i % 2]} for i in range(2)]))
    tb = _write_jsonl(tmp_path / "tb.jsonl", [{"idx": 0, "response": "A"}, {"idx": 1, "response": "A"}])
    argv = ["import", "temporalbench", str(tb), "--annotations", str(tb_ann), "--store", str(tmp_path / "t.sqlite"),
            "--model", "m", "--k", "8"]
    assert main(argv) == 0
    assert "2 predictions of temporalbench read" in capsys.readouterr().out
    with RunStore(tmp_path / "t.sqlite") as s:
        assert sorted((p.sample_id, p.correct) for p in s.predictions()) == [("0", 1), ("1", 0)]
    # an id the annotations lack is an error naming the file and line
    bad = _write_jsonl(tmp_path / "tb_bad.jsonl", [{"idx": 7, "response": "A"}])
    assert main([*argv[:2], str(bad), *argv[3:]]) == 1
    assert "tb_bad.jsonl:1: sample id '7' is not in the annotations of 'temporalbench'" in capsys.readouterr().err
