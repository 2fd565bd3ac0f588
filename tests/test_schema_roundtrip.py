"""One schema: every prediction column survives store -> export -> import -> export, in every format.

The property test draws arbitrary predictions (every field, incl. the identity and provenance
columns, and grounding rows with ``pred_start`` / ``pred_end`` / ``iou`` or a parse failure), stores them, exports the tidy table as Parquet, CSV and JSONL, imports each file into a
second store and exports again: the predictions and the tables must be equal (``run_id`` and
``created_at`` excepted: an import is a new run).
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tempcore.records import Condition, FrameSet, Prediction
from tempcore.run.store import RunStore
from tempcore.tidy import schema
from tempcore.tidy.table import (
    import_table,
    predictions_table,
    read_predictions,
    table_to_predictions,
    validate_table,
    write_table,
)

# the spellings CSV readers take for null by default (pyarrow's list): a string column must keep them
NULL_SPELLINGS = ("NaN", "nan", "-NaN", "-nan", "NA", "N/A", "n/a", "#N/A", "#N/A N/A", "#NA", "NULL",
                  "null", "None", "1.#IND", "-1.#IND", "1.#QNAN", "-1.#QNAN", "<NA>")
_TEXT = st.one_of(st.sampled_from(NULL_SPELLINGS), st.text(
    st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12).filter(
    lambda t: t.strip() == t and t.strip() != ""
))
_OPT_TEXT = st.one_of(st.sampled_from(NULL_SPELLINGS), st.text(
    st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12).filter(
    lambda t: t.strip() == t and t != ""
))
_PROB = st.floats(0.0, 1.0, allow_nan=False, width=32).map(float)


@st.composite
def conditions(draw: st.DrawFn) -> str:
    strategy = draw(st.sampled_from(["maxprob", "minprob", "uniform", "random", "oracle", "noframe"]))
    mode = draw(st.sampled_from(["q", "qa"])) if strategy in ("maxprob", "minprob") else "none"
    return Condition(
        strategy,
        mode=mode,
        k=draw(st.one_of(st.none(), st.integers(1, 64))),
        window=draw(st.integers(0, 9)) if strategy == "oracle" else None,
        encoder="siglip2" if mode != "none" else None,
        fps=draw(st.sampled_from([1.0, 2.5, 10.0])),
        seed=draw(st.integers(0, 3)),
        rotation=draw(st.integers(0, 3)),
    ).key


_SECONDS = st.floats(-1e6, 1e7, allow_nan=False, allow_infinity=False)
_IOU = st.one_of(st.sampled_from([0.0, 0.5, 1.0, 0.49999999999999994]),
                 st.floats(0.0, 1.0, allow_nan=False))


@st.composite
def predictions(draw: st.DrawFn, i: int) -> Prediction:
    n_opt = draw(st.integers(2, 5))
    grounding = draw(st.booleans())  # a grounding row: pred_start / pred_end / iou, no option answer
    answer = None if grounding else draw(st.one_of(st.none(), st.integers(0, n_opt - 1)))
    target = None if grounding else draw(st.one_of(st.none(), st.integers(0, n_opt - 1)))
    correct = 0 if answer is None else (int(answer == target) if target is not None else draw(st.integers(0, 1)))
    pred_start = pred_end = iou = None
    if grounding and draw(st.integers(0, 3)):  # one in four grounding rows is a parse failure
        pred_start, pred_end = draw(_SECONDS), draw(_SECONDS)  # reversed spans are stored as given
        iou = draw(st.one_of(st.none(), _IOU))
        correct = 0 if iou is None else int(iou >= 0.5)
    parsed = answer is not None or pred_start is not None
    grey = draw(st.booleans())
    frames = draw(st.one_of(st.none(), st.just(FrameSet((), (), requested=4, grey=True)) if grey else st.lists(
        st.integers(0, 500), min_size=1, max_size=5, unique=True).map(
        lambda ix: FrameSet(tuple(ix), tuple(j / 10 for j in ix), requested=len(ix) + 1))))
    probs = None if grounding else draw(st.one_of(st.none(), st.lists(_PROB, min_size=n_opt, max_size=n_opt).map(tuple)))
    return Prediction(
        benchmark=draw(_TEXT),
        sample_id=f"{i}-" + draw(_TEXT),
        model=draw(_TEXT),
        condition=draw(conditions()),
        response=draw(_OPT_TEXT),
        answer=answer,
        correct=correct,
        frames=frames,
        prompt_hash=draw(st.from_regex(re.compile(r"[0-9a-f]{1,16}"), fullmatch=True)),
        latency_s=draw(st.floats(0.0, 100.0, allow_nan=False)),
        answer_method=draw(st.sampled_from(["generate", "option_scores"])),
        option_probs=probs,
        parse_error=None if parsed else draw(_OPT_TEXT),
        target=target,
        sample_hash=draw(st.from_regex(re.compile(r"[0-9a-f]{0,8}"), fullmatch=True)),
        model_fingerprint=draw(st.from_regex(re.compile(r"[0-9a-f]{0,8}"), fullmatch=True)),
        encoder_fingerprint=draw(st.one_of(st.none(), st.from_regex(re.compile(r"[0-9a-f]{1,8}"), fullmatch=True))),
        n_frames=draw(st.one_of(st.none(), st.integers(0, 10**6))),
        video_damage=draw(st.one_of(st.none(), _OPT_TEXT)),
        pred_start=pred_start,
        pred_end=pred_end,
        iou=iou,
    )


@st.composite
def prediction_lists(draw: st.DrawFn) -> list[Prediction]:
    n = draw(st.integers(1, 6))
    return [draw(predictions(i)) for i in range(n)]


def _rows(table: pa.Table) -> list[dict]:
    rows = [{k: v for k, v in r.items() if k not in ("run_id", "created_at")} for r in table.to_pylist()]
    return sorted(rows, key=lambda r: (r["benchmark"], r["sample_id"], r["model"], r["condition"]))


def test_store_columns_are_the_prediction_fields_and_the_tidy_table_carries_them() -> None:
    schema.check_against_prediction()
    fields = {f.name for f in dataclasses.fields(Prediction)}
    tidy = {c.name for c in schema.TIDY_COLUMNS}
    # every field is a tidy column or derived into some (frames, option_probs, parse_error)
    assert fields - tidy <= {"frames"}
    assert {"frame_indices", "frame_timestamps", "frames_requested", "frames_grey"} <= tidy
    assert set(schema.PASSTHROUGH) <= fields
    assert schema.arrow_schema().names == [c.name for c in schema.TIDY_COLUMNS]
    ddl = schema.predictions_ddl()
    for c in schema.STORE_COLUMNS:
        assert f" {c.name} " in ddl


def test_the_docs_column_table_is_generated_from_the_declaration() -> None:
    root = Path(__file__).parent.parent
    assert "<!-- generated: predictions-schema -->" in (root / "docs" / "reference" / "predictions-schema.md").read_text()
    hooks = (root / "tools" / "mkdocs_hooks.py").read_text()
    assert "from tempcore.tidy.schema import markdown_table" in hooks


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(preds=prediction_lists())
def test_every_column_survives_store_export_import_export(tmp_path: Path, suffix: str, preds: list[Prediction]) -> None:
    keys = {p.key for p in preds}
    if len(keys) != len(preds):
        return  # a duplicate key: first write wins (tested in test_store.py)
    work = tmp_path / uuid.uuid4().hex  # hypothesis reuses the fixture's folder across examples
    with RunStore(work / "a.sqlite", synchronous="NORMAL") as a:
        a.put(preds, a.start_run({}, environment=False))
        assert sorted(a.predictions(), key=lambda p: p.key) == sorted(preds, key=lambda p: p.key)
        first = predictions_table(a)
    path = work / f"t{suffix}"
    write_table(first, path)
    with RunStore(work / "b.sqlite", synchronous="NORMAL") as b:
        _run, rows, written = import_table(path, b)
        assert rows == written == len(preds)
        back = sorted(b.predictions(), key=lambda p: p.key)
        second = predictions_table(b)
    assert back == sorted(preds, key=lambda p: p.key)
    assert _rows(second) == _rows(first)
    # the file itself reads back as the table written ("" and null stay apart in CSV too)
    assert _rows(read_predictions(path)) == _rows(validate_table(first))


def test_import_of_a_table_from_a_sequence_equals_the_store_export() -> None:
    p = Prediction("b", "s", "m", Condition("uniform", k=None).key, "A", 0, 1, target=0, n_frames=12)
    table = predictions_table([p])
    assert table.column("k").to_pylist() == [None] and table.column("n_frames").to_pylist() == [12]
    assert table_to_predictions(table) == [p]


@pytest.mark.parametrize("spelling", NULL_SPELLINGS)
def test_a_csv_string_that_spells_null_stays_a_string(tmp_path: Path, spelling: str) -> None:
    """Regression (CI, hypothesis): a model named "NaN" or a response "NaN" read back from CSV as null."""
    pred = Prediction(
        benchmark=spelling, sample_id=spelling, model=spelling,
        condition=Condition("uniform", k=4).key, response=spelling, answer=None, correct=0,
        frames=None, prompt_hash="0", latency_s=0.0, parse_error=spelling, video_damage=spelling,
    )
    with RunStore(tmp_path / "a.sqlite", synchronous="NORMAL") as a:
        a.put([pred], a.start_run({}, environment=False))
        first = predictions_table(a)
    write_table(first, tmp_path / "t.csv")
    with RunStore(tmp_path / "b.sqlite", synchronous="NORMAL") as b:
        import_table(tmp_path / "t.csv", b)
        assert list(b.predictions()) == [pred]



def test_a_grounding_row_round_trips_and_its_correct_is_iou_at_least_half() -> None:
    cond = Condition("uniform", k=8).key
    hit = Prediction("b", "s1", "m", cond, "[10.0, 20.0]", None, 1, pred_start=10.0, pred_end=20.0, iou=0.5)
    miss = Prediction("b", "s2", "m", cond, "[10, 20]", None, 0, pred_start=10, pred_end=20, iou=0.25)
    failed = Prediction("b", "s3", "m", cond, "no idea", None, 0, parse_error="no interval")
    table = predictions_table([hit, miss, failed])
    assert table.column("pred_start").to_pylist() == [10.0, 10.0, None]
    assert table.column("iou").to_pylist() == [0.5, 0.25, None]
    assert table.column("parse_error").to_pylist() == [0, 0, 1]
    assert table_to_predictions(table) == [hit, miss, failed]
    with pytest.raises(ValueError, match="contradicts iou"):
        Prediction("b", "s", "m", cond, "x", None, 0, pred_start=1.0, pred_end=2.0, iou=0.7)
    with pytest.raises(ValueError, match="contradicts iou"):
        Prediction("b", "s", "m", cond, "x", None, 1, pred_start=1.0, pred_end=2.0)  # no GT: never correct
    with pytest.raises(ValueError, match="a parse failure cannot be correct"):
        Prediction("b", "s", "m", cond, "x", None, 1, parse_error="no interval")
    with pytest.raises(ValueError, match="parse failure has no pred_start"):
        Prediction("b", "s", "m", cond, "x", None, 0, pred_start=1.0, pred_end=2.0, parse_error="e")
    with pytest.raises(ValueError, match="together"):
        Prediction("b", "s", "m", cond, "x", None, 0, pred_start=1.0)
    with pytest.raises(ValueError, match="without pred_start"):
        Prediction("b", "s", "m", cond, "x", None, 0, iou=0.0)
    with pytest.raises(ValueError, match="no option"):
        Prediction("b", "s", "m", cond, "x", 0, 0, pred_start=1.0, pred_end=2.0)
    with pytest.raises(ValueError, match="finite"):
        Prediction("b", "s", "m", cond, "x", None, 0, pred_start=float("nan"), pred_end=2.0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        Prediction("b", "s", "m", cond, "x", None, 1, pred_start=1.0, pred_end=2.0, iou=1.5)


def test_a_grounding_table_with_nan_for_a_parse_failure_imports_as_one() -> None:
    """Tables made elsewhere (and ``tempcore grounding``'s input) write a parse failure as NaN."""
    cond = Condition("uniform", k=8).key
    rows = [{"benchmark": "b", "sample_id": "s", "model": "m", "strategy": "uniform", "mode": "none", "k": 8,
             "window": None, "condition": cond, "correct": 0, "parse_error": 1, "pred_start": float("nan"),
             "pred_end": float("nan"), "iou": float("nan")}]
    (p,) = table_to_predictions(pa.Table.from_pylist(rows))
    assert (p.pred_start, p.pred_end, p.iou, p.parse_error is not None, p.correct) == (None, None, None, True, 0)
    rows[0]["parse_error"] = 0
    with pytest.raises(Exception, match="row 1: no answer"):
        table_to_predictions(pa.Table.from_pylist(rows))
