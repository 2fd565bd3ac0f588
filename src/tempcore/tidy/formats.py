"""The file formats of the tidy predictions table: Parquet, CSV and JSONL, written atomically and
read back with the checks Arrow's readers lack (UTF-8, JSON nesting depth checked before Arrow sees
a line, exact error positions), then validated (:func:`tempcore.tidy.validation.validate_table`).
pyarrow is imported inside the functions.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from tempcore.tidy.schema import STRING_COLUMNS

if TYPE_CHECKING:
    import pyarrow as pa

from tempcore.tidy.validation import PredictionsTableError, validate_table

_STRING_COLUMNS = STRING_COLUMNS

FORMATS = ("parquet", "csv", "jsonl")
#: a JSONL line that holds something other than an object (blank lines aside)
_NOT_AN_OBJECT = re.compile(rb"(?m)^[ \t\r]*[^{ \t\r\n]")
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def infer_format(path: str | os.PathLike[str], format: str | None = None) -> str:
    """``format`` if given (checked), else the one the suffix of ``path`` names."""
    if format is not None:
        if format not in FORMATS:
            raise PredictionsTableError(
                f"unknown table format {format!r}; choose one of {', '.join(FORMATS)}"
            )
        return format
    suffix = Path(path).suffix.lower()
    if suffix not in _SUFFIXES:
        raise PredictionsTableError(
            f"{path}: cannot tell the table format from the suffix {suffix!r}; use "
            f"{', '.join(sorted(_SUFFIXES))} or give the format"
        )
    return _SUFFIXES[suffix]


#: a CSV cell a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``, tab, carriage return
#: first), after any single quotes: written with one more ``'`` in front (as OWASP's spreadsheet-safe
#: CSV does), which :func:`_read_raw_unchecked` takes off again, so a CSV export round-trips exactly
_FORMULA = r"^('*[=+\-@\t\r])"
_ESCAPED_FORMULA = r"^'('*[=+\-@\t\r])"


def spreadsheet_safe(text: str) -> str:
    """``text`` as a CSV cell no spreadsheet runs as a formula (see :data:`_FORMULA`)."""
    return "'" + text if re.match(_FORMULA, text) else text


def _csv_cells(batch: pa.RecordBatch, escape: bool) -> pa.RecordBatch:
    """The string columns of ``batch`` with formulas neutralised (``escape``) or restored."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for col in batch.columns:
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            col = (pc.replace_substring_regex(col, _FORMULA, "'\\1", max_replacements=1) if escape
                   else pc.replace_substring_regex(col, _ESCAPED_FORMULA, "\\1", max_replacements=1))
        columns.append(col)
    return pa.record_batch(columns, schema=batch.schema)


def _write_stream(batches: Iterable[pa.RecordBatch], schema: pa.Schema, out: Any, fmt: str) -> int:
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    n = 0
    if fmt == "parquet":
        with pq.ParquetWriter(out, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
                n += batch.num_rows
    elif fmt == "csv":
        with pacsv.CSVWriter(out, schema) as writer:
            for batch in batches:
                writer.write_batch(_csv_cells(batch, escape=True))
                n += batch.num_rows
    else:
        for batch in batches:
            lines = [json.dumps(row, ensure_ascii=False, allow_nan=False) for row in batch.to_pylist()]
            if lines:
                out.write(("\n".join(lines) + "\n").encode("utf-8"))
            n += batch.num_rows
    return n


#: the longest part of an output's name its temporary file's name repeats (a name over 255 bytes
#: cannot be a file name; a temporary one must stay shorter than its target's)
_TMP_NAME_CHARS = 64


def _tmp_prefix(target: Path) -> str:
    return f".{target.name[:_TMP_NAME_CHARS]}."


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # another user's process: alive
    return True


def clean_stale_tmp(target: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files :func:`atomic_output` left beside ``target`` when its writer was
    killed (``.<name>.<pid>.<random>.tmp`` of a process that no longer runs); return them. Those of
    a live writer (another process exporting now) stay."""
    target = Path(target)
    removed = []
    prefix = _tmp_prefix(target)
    try:
        names = [n for n in os.listdir(target.parent) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return []
    for name in names:
        pid = name[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            try:
                os.unlink(target.parent / name)
                removed.append(target.parent / name)
            except OSError:
                pass
    return removed


@functools.lru_cache(maxsize=1)
def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """Write ``path`` atomically: a binary file opened in the same folder (``.<name>.<pid>.<random>.tmp``),
    flushed and fsynced, then renamed over ``path`` (and the folder fsynced). A kill or a full disk
    leaves the old file (or none), never a partial one; the rename replaces a symlink planted at
    ``path`` instead of writing through it. Temporary files of killed writers are removed first
    (:func:`clean_stale_tmp`); this one is removed on any error. The one output writer of tempcore."""
    import tempfile

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_tmp(target)
    fd, tmp = tempfile.mkstemp(prefix=f"{_tmp_prefix(target)}{os.getpid()}.", suffix=".tmp", dir=target.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would change what others may read
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # the rename itself durable (not every file system allows it)
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def atomic_write(path: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` with :func:`atomic_output`; return the path."""
    with atomic_output(path) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)


def write_batches(
    batches: Iterable[pa.RecordBatch],
    schema: pa.Schema,
    path: str | os.PathLike[str] | IO[bytes],
    format: str | None = None,
) -> int:
    """Write a stream of record batches as Parquet, CSV or JSONL; return the number of rows.

    The format comes from the suffix unless given. A path is written atomically (a temporary file
    in the same folder, renamed at the end), so an interrupted export never leaves half a file. A
    binary stream (e.g. ``sys.stdout.buffer``) takes CSV or JSONL, and then ``format`` is required.
    """
    if not isinstance(path, (str, os.PathLike)):
        if format not in ("csv", "jsonl"):
            raise PredictionsTableError("writing to a stream needs format='csv' or 'jsonl'")
        return _write_stream(batches, schema, path, format)
    target = Path(path)
    fmt = infer_format(target, format)
    with atomic_output(target) as fh:
        n = _write_stream(batches, schema, fh, fmt)
    return n


def write_table(table: pa.Table, path: str | os.PathLike[str] | IO[bytes], format: str | None = None) -> int:
    """Write ``table`` as Parquet, CSV or JSONL (see :func:`write_batches`); return the number of rows."""
    return write_batches(table.to_batches(), table.schema, path, format)



def _check_jsonl(path: Path, data: bytes) -> None:
    """Refuse a JSONL file with a line nested deeper than :data:`~tempcore.safejson.MAX_DEPTH`
    *before* Arrow's JSON reader sees it (deep nesting crashes that reader, killing the process)."""
    from tempcore import safejson

    if not safejson.too_deep(data):  # cheap: counts brackets of the whole file first
        return
    for n, line in safejson.split_lines(data):
        if safejson.too_deep(line):
            raise PredictionsTableError(f"{path}:{n}: JSON nested deeper than {safejson.MAX_DEPTH} levels")


def _read_jsonl_slow(path: Path, data: bytes | None = None) -> pa.Table:
    """Line-by-line JSONL reader: exact error positions and tolerant of mixed id types.

    Lines end at ``\\n`` only (U+2028 / U+2029 / U+0085 inside strings are text); a line that is
    not UTF-8, nested too deep, or holding a lone surrogate (``"\\udc00"``) is an error naming
    the line."""
    import pyarrow as pa

    from tempcore import safejson

    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise PredictionsTableError(f"{path}: cannot read: {exc}") from exc
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    rows = []
    for n, raw_line in safejson.split_lines(data):
        if not raw_line.strip():
            continue
        try:
            row = safejson.loads(safejson.decode_line(raw_line))
        except safejson.JSONTooDeepError as exc:
            raise PredictionsTableError(f"{path}:{n}: {exc}") from None
        except json.JSONDecodeError as exc:
            raise PredictionsTableError(f"{path}:{n}: not JSON: {exc}") from exc
        except ValueError as exc:
            raise PredictionsTableError(f"{path}:{n}: {exc}") from None
        if not isinstance(row, dict):
            raise PredictionsTableError(f"{path}:{n}: expected a JSON object, got {type(row).__name__}")
        problem = safejson.text_problem(row)
        if problem is not None:
            raise PredictionsTableError(f"{path}:{n}: {problem}")
        for name in _STRING_COLUMNS:
            value = row.get(name)
            if value is not None and not isinstance(value, str):
                row[name] = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
        rows.append(row)
    if not rows:
        return pa.table({})
    try:
        return pa.Table.from_pylist(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise PredictionsTableError(f"{path}: a column mixes value types: {exc}") from exc


def _read_raw(path: Path, fmt: str) -> pa.Table:
    import pyarrow as pa

    table = _read_raw_unchecked(path, fmt)
    try:
        table.validate(full=True)  # Arrow keeps bytes that are not UTF-8 in strings; they fail later
        table.column_names  # noqa: B018 - names are decoded here (a Parquet file may hold any bytes)
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        raise PredictionsTableError(f"{path}: not a valid {fmt} table: {exc}") from exc
    return table


def _check_utf8(path: Path, data: bytes) -> None:
    """A CSV table must be UTF-8 text: the error names the line and byte of the first bad one."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise PredictionsTableError(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x})"
        ) from None


def _unescaped(table: pa.Table) -> pa.Table:
    """A CSV table's formula cells as they were before :func:`_csv_cells` neutralised them."""
    import pyarrow as pa

    return pa.Table.from_batches([_csv_cells(b, escape=False) for b in table.to_batches()], schema=table.schema)


def _read_raw_unchecked(path: Path, fmt: str) -> pa.Table:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.json as pajson
    import pyarrow.parquet as pq

    try:
        if fmt == "parquet":
            return pq.read_table(path)
        if fmt == "csv":
            data = path.read_bytes()
            _check_utf8(path, data)
            header = data.split(b"\n", 1)[0].decode("utf-8").strip().split(",")
            types = {name.strip('"'): pa.string() for name in header if name.strip('"') in _STRING_COLUMNS}
            return _unescaped(pacsv.read_csv(
                pa.BufferReader(data),
                parse_options=pacsv.ParseOptions(newlines_in_values=True),
                # only an unquoted empty field is null: the writer quotes every string, so
                # "NaN", "null", "NA" or a quoted "" are the strings they spell
                convert_options=pacsv.ConvertOptions(
                    column_types=types,
                    null_values=[""],
                    strings_can_be_null=True,
                    quoted_strings_can_be_null=False,
                ),
            ))
        data = path.read_bytes()
        _check_jsonl(path, data)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:  # the line-by-line reader names the line
            return _read_jsonl_slow(path, data)
        if _NOT_AN_OBJECT.search(data):  # Arrow's reader crashes the process on a leading `null` line
            return _read_jsonl_slow(path, data)  # ... this one names the line
        try:
            return pajson.read_json(pa.BufferReader(data))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return _read_jsonl_slow(path, data)
    except OSError as exc:
        raise PredictionsTableError(f"{path}: cannot read: {exc}") from exc
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise PredictionsTableError(f"{path}: not a readable {fmt} table: {exc}") from exc


def read_table_file(path: str | os.PathLike[str], format: str | None = None) -> pa.Table:
    """A CSV, Parquet or JSONL table read with the same guards as :func:`read_predictions` (UTF-8,
    JSON depth, ``\n``-only lines, CSV null spellings) but without its column validation: for
    tables of other shapes (grounding submissions, partial exports)."""
    p = Path(path)
    if not p.is_file():
        raise PredictionsTableError(f"{p}: no such file" if not p.exists() else f"{p}: not a regular file")
    return _read_raw(p, infer_format(p, format))


def read_predictions(path: str | os.PathLike[str], format: str | None = None) -> pa.Table:
    """Read and validate a tidy predictions table from CSV, Parquet or JSONL (see :func:`validate_table`).

    A table with 0 rows (a header-only CSV, an empty Parquet or JSONL file) is an error that says
    so: every analysis needs predictions. A JSONL line nested deeper than
    :data:`tempcore.safejson.MAX_DEPTH` is an error naming the line (checked before Arrow reads
    the file)."""
    p = Path(path)
    if not p.is_file():
        raise PredictionsTableError(f"{p}: no such file" if not p.exists() else f"{p}: not a regular file")
    table = _read_raw(p, infer_format(p, format))
    if table.num_rows == 0:
        raise PredictionsTableError(
            f"{p}: 0 rows: the predictions table holds no prediction (nothing to analyse)"
        )
    return validate_table(table, str(p))



def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 (hex) of a file's bytes, recorded in import manifests."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()



__all__ = ["FORMATS", "file_sha256", "infer_format", "read_predictions", "write_batches", "write_table"]
