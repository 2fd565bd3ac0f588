"""CSV exports are spreadsheet-safe (issue 31, item 15): a cell starting with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return (after any single quotes) is written with one more ``'`` in front, and
tempcore's CSV reader takes it off again, so export -> import is lossless."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow as pa

from tempcore.tidy.formats import read_table_file, spreadsheet_safe, write_batches

HOSTILE = ['=HYPERLINK("http://evil.example","x")', "+1", "-2+3", "@SUM(A1)", "\tx", "\rx", "'=already",
           "''+twice", "'tis plain", "a = b", "plain", "", "-"]


def test_formula_cells_are_neutralised_and_read_back_exactly(tmp_path: Path) -> None:
    schema = pa.schema([("response", pa.string()), ("n", pa.int64())])
    batch = pa.record_batch([pa.array([*HOSTILE, None]), pa.array(range(len(HOSTILE) + 1))], schema=schema)
    path = tmp_path / "t.csv"
    write_batches([batch], schema, path)
    with open(path, newline="", encoding="utf-8") as fh:
        cells = [row[0] for row in csv.reader(fh)][1:]
    for cell in cells:
        assert not cell or cell[0] not in "=+-@\t\r", cell  # no spreadsheet runs it
    assert cells[0] == '\'=HYPERLINK("http://evil.example","x")' and cells[8] == "'tis plain"
    assert read_table_file(path).column("response").to_pylist() == [*HOSTILE, None]
    assert read_table_file(path).column("n").to_pylist() == list(range(len(HOSTILE) + 1))
    assert [spreadsheet_safe(t) for t in ("=1", "x", "'-")] == ["'=1", "x", "''-"]
