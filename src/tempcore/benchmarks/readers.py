"""Reading annotation files row by row, and recording every file read for the content hash.

Row numbers are 1-based: the physical line for JSONL and CSV (the header is line 1, so the
first CSV record is line 2; a record spanning several lines is numbered by its first line),
the list position for JSON lists and Parquet tables. A malformed JSONL line or CSV record
becomes a :class:`RawRow` whose ``data`` is a :class:`InvalidRow`, so the caller can report
it and go on; a file that cannot be parsed at all raises :class:`AnnotationFileError`.

Hostile input (see :mod:`tempcore.safejson`): JSONL lines end at ``\n`` only (U+2028 /
U+2029 / U+0085 inside a string are text); a line that is not UTF-8 is one invalid row naming
the byte and column; a row nested deeper than :data:`~tempcore.safejson.MAX_DEPTH` levels is
an invalid row (``too_deep``) and is never handed to the parser. JSON documents and CSV files
with a non-UTF-8 byte are decoded with ``surrogateescape``, so the bad byte spoils only the row
that holds it (the loader rejects rows holding a surrogate, see
:func:`tempcore.benchmarks.base.run_loader`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tempcore import safejson
from tempcore.benchmarks.choices import InvalidRow
from tempcore.benchmarks.errors import AnnotationFileError

TABLE_SUFFIXES = (".json", ".jsonl", ".csv", ".tsv", ".parquet")


@dataclass(frozen=True)
class RawRow:
    """One row as read from a file: a dict, or a InvalidRow for a line that did not parse."""

    file: Path
    row: int
    data: dict[str, Any] | InvalidRow

    @property
    def fields(self) -> dict[str, Any]:
        """The parsed row (for a loader's ``make``, which :meth:`Loader.convert_rows` calls only
        on rows that parsed); a row that did not parse raises its :class:`InvalidRow`."""
        if isinstance(self.data, InvalidRow):
            raise self.data
        return self.data


@dataclass
class FileLog:
    """The files a load read, in order, with their bytes' sha256 (for ``annotations_hash``)."""

    files: list[Path] = field(default_factory=list)
    digests: dict[Path, str] = field(default_factory=dict)

    def read_bytes(self, path: Path) -> bytes:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise AnnotationFileError(path, "file not found") from None
        except IsADirectoryError:
            raise AnnotationFileError(path, "is a directory, expected a file") from None
        except OSError as exc:
            raise AnnotationFileError(path, f"cannot read: {exc.strerror or exc}") from None
        if path not in self.digests:
            self.files.append(path)
            self.digests[path] = hashlib.sha256(data).hexdigest()
        return data

    def read_text(self, path: Path) -> str:
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise AnnotationFileError(path, f"not UTF-8 text (byte {exc.start})") from None

    def read_text_lenient(self, path: Path) -> str:
        """The file as text; bytes that are not UTF-8 become lone surrogates (``surrogateescape``)
        so that only the rows holding them are rejected."""
        data = self.read_bytes(path)
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        return data.decode("utf-8", "surrogateescape")

    def read_json(self, path: Path) -> Any:
        """A whole JSON document (side files: answers, video maps, task tables); nesting deeper than
        :data:`~tempcore.safejson.MAX_DEPTH` is a file error."""
        value = self._parse_json(path, self.read_text_lenient(path))
        if safejson.value_too_deep(value):
            raise AnnotationFileError(path, f"JSON nested deeper than {safejson.MAX_DEPTH} levels")
        return value

    def _parse_json(self, path: Path, text: str) -> Any:
        try:
            return json.loads(text)
        except RecursionError:
            raise AnnotationFileError(path, f"JSON nested deeper than {safejson.MAX_DEPTH} levels") from None
        except json.JSONDecodeError as exc:
            raise AnnotationFileError(
                path, f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from None

    def combined_hash(self) -> str:
        """sha256 over the per-file digests in the order the files were read (names excluded,
        so the hash follows content, not where the files sit)."""
        h = hashlib.sha256()
        for path in self.files:
            h.update(self.digests[path].encode())
            h.update(b"\n")
        return h.hexdigest()


def read_rows(path: Path, log: FileLog) -> Iterator[RawRow]:
    """Rows of a .json (a list of objects), .jsonl, .csv / .tsv or .parquet file."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        yield from _json_rows(path, log)
    elif suffix == ".jsonl":
        yield from _jsonl_rows(path, log)
    elif suffix in (".csv", ".tsv"):
        yield from _csv_rows(path, log, delimiter="\t" if suffix == ".tsv" else ",")
    elif suffix == ".parquet":
        yield from _parquet_rows(path, log)
    else:
        raise AnnotationFileError(
            path, f"unsupported file type {suffix or '(none)'}; expected one of {TABLE_SUFFIXES}"
        )


def _too_deep() -> InvalidRow:
    return InvalidRow("too_deep", f"JSON nested deeper than {safejson.MAX_DEPTH} levels")


def _json_rows(path: Path, log: FileLog) -> Iterator[RawRow]:
    """Items of a JSON list. When the document is too deep for the parser, it is split into its
    items without parsing them, and each item is parsed (or refused as too deep) on its own."""
    text = log.read_text_lenient(path)
    try:
        data: Any = json.loads(text)
    except RecursionError:
        data = None
        items = safejson.split_array(text)
        if items is None:
            raise AnnotationFileError(path, f"JSON nested deeper than {safejson.MAX_DEPTH} levels") from None
        for i, item_text in enumerate(items, start=1):
            try:
                item = safejson.loads(item_text)
            except safejson.JSONTooDeepError:
                yield RawRow(path, i, _too_deep())
                continue
            except json.JSONDecodeError as exc:
                raise AnnotationFileError(path, f"malformed JSON in list item {i}: {exc.msg}") from None
            yield RawRow(path, i, _checked(item))
        return
    except json.JSONDecodeError as exc:
        raise AnnotationFileError(
            path, f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    if not isinstance(data, list):
        raise AnnotationFileError(
            path, f"expected a JSON list of objects, found a JSON {type(data).__name__}"
        )
    for i, item in enumerate(data, start=1):
        yield RawRow(path, i, _checked(item))


def _checked(item: Any) -> dict[str, Any] | InvalidRow:
    """A parsed row, or why it is not one (not an object; nested too deep: the list is level 1)."""
    if not isinstance(item, dict):
        return _not_object(item)
    if safejson.value_too_deep(item, safejson.MAX_DEPTH - 1):
        return _too_deep()
    return item


def _jsonl_rows(path: Path, log: FileLog) -> Iterator[RawRow]:
    data = log.read_bytes(path)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for lineno, raw_line in safejson.split_lines(data):
        if not raw_line.strip():
            continue
        try:
            line = safejson.decode_line(raw_line)
            item = safejson.loads(line)
        except safejson.JSONTooDeepError:
            yield RawRow(path, lineno, _too_deep())
            continue
        except json.JSONDecodeError as exc:
            yield RawRow(
                path,
                lineno,
                InvalidRow("malformed_json", f"malformed JSON line: {exc.msg} (column {exc.colno})"),
            )
            continue
        except ValueError as exc:  # not UTF-8
            yield RawRow(path, lineno, InvalidRow("bad_text", f"line is {exc}"))
            continue
        yield RawRow(path, lineno, item if isinstance(item, dict) else _not_object(item))


def _not_object(item: Any) -> InvalidRow:
    return InvalidRow("malformed_row", f"expected a JSON object, found {type(item).__name__}")


def _csv_rows(path: Path, log: FileLog, *, delimiter: str) -> Iterator[RawRow]:
    reader = csv.reader(io.StringIO(log.read_text_lenient(path), newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise AnnotationFileError(path, f"malformed CSV header: {exc}") from None
    header = [h.strip() for h in header]
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise AnnotationFileError(path, f"duplicate CSV column(s) {dupes}")
    line_end = reader.line_num
    while True:
        first_line = line_end + 1
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield RawRow(path, first_line, InvalidRow("malformed_row", f"malformed CSV record: {exc}"))
            line_end = reader.line_num
            continue
        line_end = reader.line_num
        if not record or all(not c.strip() for c in record):
            continue
        if len(record) != len(header):
            yield RawRow(
                path,
                first_line,
                InvalidRow(
                    "malformed_row", f"CSV record has {len(record)} fields, the header has {len(header)}"
                ),
            )
            continue
        yield RawRow(path, first_line, dict(zip(header, record)))


def _parquet_rows(path: Path, log: FileLog) -> Iterator[RawRow]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = log.read_bytes(path)
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError) as exc:
        raise AnnotationFileError(path, f"not a readable Parquet file: {exc}") from None
    for i, item in enumerate(table.to_pylist(), start=1):
        yield RawRow(path, i, item)


_NUMBER_PREFIX = re.compile(r"^(\d+)")


def natural_key(path: Path) -> tuple[int, int, str]:
    """Sort key that puts "2_needle.json" before "10_x.json" (MLVU's numbered task files)."""
    m = _NUMBER_PREFIX.match(path.name)
    return (0, int(m.group(1)), path.name) if m else (1, 0, path.name)


__all__ = ["TABLE_SUFFIXES", "FileLog", "RawRow", "natural_key", "read_rows"]
