"""One class per row outcome (InvalidRow, SkippedRow) from the loader to the load's result; the
former names RowInvalid / RowSkipped are deprecated aliases of the same classes."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from tempcore.benchmarks import InvalidRow, InvalidRowError, SkippedRow, load_benchmark


def test_a_row_is_located_made_printable_and_keeps_its_value() -> None:
    raw = InvalidRow("bad_value", "bad \udc00 value", "id\udc01")
    assert str(raw) == "bad \udc00 value" and raw.file is None and raw.row is None
    bad = raw.at(Path("a.jsonl"), 3)
    assert (bad.file, bad.row, bad.kind, bad.sample_id) == (Path("a.jsonl"), 3, "bad_value", "id\\udc01")
    assert str(bad) == "a.jsonl:3: [id\\udc01] bad \\udc00 value"
    assert bad.to_dict() == {"file": "a.jsonl", "row": 3, "sample_id": "id\\udc01", "kind": "bad_value",
                             "reason": "bad \\udc00 value"}
    assert bad == pickle.loads(pickle.dumps(bad)) and hash(bad) == hash(raw.at(Path("a.jsonl"), 3))
    assert bad != raw.at(Path("a.jsonl"), 4)
    skip = SkippedRow("open-ended", "q1").at(Path("b.json"), 2)
    assert str(skip) == "b.json:2: [q1] skipped: open-ended" and pickle.loads(pickle.dumps(skip)) == skip
    assert skip.to_dict() == {"file": "b.json", "row": 2, "sample_id": "q1", "reason": "open-ended"}


def test_the_load_records_and_raises_the_same_class(tmp_path: Path) -> None:
    ann = tmp_path / "t.jsonl"
    ann.write_text('{"id": "a", "video": "v.mp4", "question": "q", "options": ["x", "y"], "answer": 0}\n'
                   '{"id": "b", "video": "v.mp4", "question": "q", "options": ["x"], "answer": 0}\n')
    result = load_benchmark("generic", ann, skip_invalid=True)
    [bad] = result.invalid
    assert type(bad) is InvalidRow and (bad.file, bad.row, bad.sample_id, bad.kind) == (ann, 2, "b", "single_option")
    with pytest.raises(InvalidRowError) as err:
        load_benchmark("generic", ann)
    assert err.value.invalid == bad and err.value.row == 2


def test_the_former_names_are_deprecated_aliases() -> None:
    from tempcore.benchmarks import choices

    with pytest.warns(DeprecationWarning, match="use tempcore.benchmarks.InvalidRow"):
        assert choices.RowInvalid is InvalidRow
    with pytest.warns(DeprecationWarning, match="use tempcore.benchmarks.SkippedRow"):
        assert choices.RowSkipped is SkippedRow
