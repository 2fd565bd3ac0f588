"""The tidy predictions table: one row per prediction, the interchange format of tempcore.

Every diagnostic reads this table, whether it came from a run store (``tempcore export
predictions``), from lmms-eval logs, or from a file a user made elsewhere. The columns, their
types, which are required and what they mean are declared once in :data:`tempcore.schema.TIDY_COLUMNS`
(the README's table is :func:`tempcore.schema.markdown_table`); this module derives the Arrow
schema, the export, the validation and the import back into Predictions from that declaration.

Only the required columns must be present in a file given to :func:`read_predictions`; the
others are carried along when present. pyarrow is imported inside the functions.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from tempcore.errors import TempcoreError
from tempcore.records import LETTERS, Condition, FrameSet, Prediction, Sample
from tempcore.schema import (
    FLOAT_COLUMNS,
    INT_COLUMNS,
    KEY_COLUMNS,
    PASSTHROUGH,
    REQUIRED_COLUMNS,
    STRING_COLUMNS,
    TIDY_COLUMNS,
    arrow_schema,
)

_CONDITION_COLUMNS = tuple(c.name for c in TIDY_COLUMNS if c.origin == "condition")

if TYPE_CHECKING:
    import pyarrow as pa

    from tempcore.store import RunStore

FORMATS = ("parquet", "csv", "jsonl")
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
_STRING_COLUMNS = STRING_COLUMNS
_ID_COLUMNS = ("benchmark", "sample_id", "model", "strategy")
# ``answer`` may be a letter in a table made elsewhere: :func:`_answer_of` reads it, not a cast.
_INT_COLUMNS = tuple(n for n in INT_COLUMNS if n != "answer")
_FLOAT_COLUMNS = FLOAT_COLUMNS


class PredictionsTableError(TempcoreError):
    """A predictions table is unusable: names the file, the row and the reason."""


def _schema() -> pa.Schema:
    return arrow_schema()


def tidy_columns() -> list[str]:
    """The column names :func:`predictions_table` produces, in order."""
    return _schema().names


@lru_cache(maxsize=4096)
def _condition(key: str) -> Condition:
    return Condition.from_key(key)


# --- building -----------------------------------------------------------------------------

# What the builder needs of each prediction, in this order: the key, the Prediction fields the
# tidy table passes through unchanged (tempcore.schema.PASSTHROUGH), then the parts the builder
# derives columns from. The store computes the frame parts and the option count in SQL; a
# Prediction is converted in Python.
_FIELDS = (*KEY_COLUMNS, *(n for n in PASSTHROUGH if n not in KEY_COLUMNS))
_DERIVED_SQL = {
    "parse_error": "parse_error",
    "frame_indices": "json_extract(frames, '$.indices')",
    "frame_timestamps": "json_extract(frames, '$.timestamps')",
    "frames_requested": "json_extract(frames, '$.requested')",
    "frames_grey": "json_extract(frames, '$.grey')",
    "n_probs": "json_array_length(option_probs)",
    "option_probs": "option_probs",
    "run_id": "run_id",
    "created_at": "created_at",
}
_RAW = (*_FIELDS, *_DERIVED_SQL)
_STORE_SQL = (
    f"SELECT {', '.join((*_FIELDS, *_DERIVED_SQL.values()))} FROM predictions {{where}} "
    f"ORDER BY {', '.join(KEY_COLUMNS)}"
)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _prediction_raw(p: Prediction) -> tuple[Any, ...]:
    if not isinstance(p, Prediction):
        raise PredictionsTableError(f"predictions_table() takes Predictions, got {type(p).__name__}")
    f = p.frames
    return (
        *(getattr(p, name) for name in _FIELDS),
        p.parse_error,
        None if f is None else _compact(list(f.indices)),
        None if f is None else _compact(list(f.timestamps)),
        None if f is None else f.requested,
        None if f is None else int(f.grey),
        None if p.option_probs is None else len(p.option_probs),
        None if p.option_probs is None else _compact(list(p.option_probs)),
        None,
        None,
    )


def _raw_batches(
    source: RunStore | Iterable[Prediction], run_id: str | None, batch_rows: int
) -> Iterator[list[tuple[Any, ...]]]:
    from tempcore.store import RunStore

    if isinstance(source, RunStore):
        where, params = ("WHERE run_id = ?", [run_id]) if run_id is not None else ("", [])
        yield from source.iter_query(_STORE_SQL.format(where=where), params, batch_size=batch_rows)
        return
    batch: list[tuple[Any, ...]] = []
    for p in source:
        batch.append(_prediction_raw(p))
        if len(batch) >= batch_rows:
            yield batch
            batch = []
    if batch:
        yield batch


def _sample_index(samples: Iterable[Sample] | Mapping[tuple[str, str], Sample] | None) -> dict | None:
    if samples is None:
        return None
    if isinstance(samples, Mapping):
        return dict(samples)
    return {(s.benchmark, s.sample_id): s for s in samples}


def _parsed_conditions(keys: Iterable[str], rows: Sequence[tuple[Any, ...]]) -> dict[str, Condition]:
    out = {}
    for key in set(keys):
        try:
            out[key] = _condition(key)
        except ValueError as exc:
            row = next(r for r in rows if r[3] == key)  # the key comes first: condition is r[3]
            raise PredictionsTableError(f"prediction {tuple(row[:4])}: bad condition key: {exc}") from exc
    return out


def _record_batch(rows: list[tuple[Any, ...]], schema: pa.Schema, index: dict | None) -> pa.RecordBatch:
    import pyarrow as pa

    raw = dict(zip(_RAW, zip(*rows)))
    conds = _parsed_conditions(raw["condition"], rows)
    per_row = [conds[k] for k in raw["condition"]]
    cols: dict[str, Any] = {name: raw[name] for name in _RAW if name in schema.names}
    for name in _CONDITION_COLUMNS:
        cols[name] = [getattr(c, name) for c in per_row]
    cols["parse_error_message"] = raw["parse_error"]
    cols["parse_error"] = [0 if e is None else 1 for e in raw["parse_error"]]
    cols["frames_grey"] = [None if g is None else bool(g) for g in raw["frames_grey"]]
    n_options = list(raw["n_probs"])
    targets = list(raw["target"])
    p_correct: list[float | None] = []
    for i, (b, sid, probs) in enumerate(zip(raw["benchmark"], raw["sample_id"], raw["option_probs"])):
        sample = None if index is None else index.get((b, sid))
        if sample is not None:
            if sample.options:
                n_options[i] = len(sample.options)
            if targets[i] is None:
                targets[i] = sample.answer
        if probs is None or targets[i] is None:
            p_correct.append(None)
            continue
        values = json.loads(probs)
        if targets[i] >= len(values) or (sample is not None and len(values) != len(sample.options)):
            raise PredictionsTableError(
                f"prediction {tuple(rows[i][:4])}: {len(values)} option probabilities do not fit "
                f"correct option {targets[i]}" + (f" of {len(sample.options)}" if sample is not None else "")
            )
        p_correct.append(float(values[targets[i]]))
    cols["p_correct"] = p_correct
    cols["target"] = targets
    cols["n_options"] = n_options
    return pa.record_batch([pa.array(cols[f.name], type=f.type) for f in schema], schema=schema)


def iter_prediction_batches(
    source: RunStore | Iterable[Prediction],
    *,
    samples: Iterable[Sample] | Mapping[tuple[str, str], Sample] | None = None,
    run_id: str | None = None,
    batch_rows: int = 65536,
) -> Iterator[pa.RecordBatch]:
    """The tidy table as a stream of record batches (constant memory); see :func:`predictions_table`."""
    index = _sample_index(samples)
    schema = _schema()
    for rows in _raw_batches(source, run_id, batch_rows):
        yield _record_batch(rows, schema, index)


def predictions_table(
    source: RunStore | Iterable[Prediction],
    *,
    samples: Iterable[Sample] | Mapping[tuple[str, str], Sample] | None = None,
    run_id: str | None = None,
) -> pa.Table:
    """The tidy table (module docstring) of a run store or of a sequence of predictions.

    The condition columns come from :meth:`Condition.from_key` of each prediction's condition.
    ``samples`` (the benchmark's samples, or a mapping ``(benchmark, sample_id) -> Sample``) adds
    ``p_correct`` — the probability the model put on the correct option, which a prediction alone
    cannot know when it is wrong — and ``n_options``; without them ``n_options`` falls back on the
    length of ``option_probs`` and there is no ``p_correct`` column. ``run_id`` restricts a store
    export to one run. Rows of a store come in key order.
    """
    import pyarrow as pa

    schema = _schema()
    batches = list(iter_prediction_batches(source, samples=samples, run_id=run_id))
    return pa.Table.from_batches(batches, schema=schema)


# --- writing ------------------------------------------------------------------------------


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
                writer.write_batch(batch)
                n += batch.num_rows
    else:
        for batch in batches:
            lines = [json.dumps(row, ensure_ascii=False, allow_nan=False) for row in batch.to_pylist()]
            if lines:
                out.write(("\n".join(lines) + "\n").encode("utf-8"))
            n += batch.num_rows
    return n


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
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            n = _write_stream(batches, schema, fh, fmt)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return n


def write_table(table: pa.Table, path: str | os.PathLike[str] | IO[bytes], format: str | None = None) -> int:
    """Write ``table`` as Parquet, CSV or JSONL (see :func:`write_batches`); return the number of rows."""
    return write_batches(table.to_batches(), table.schema, path, format)


# --- reading ------------------------------------------------------------------------------


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
            return pacsv.read_csv(
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
            )
        data = path.read_bytes()
        _check_jsonl(path, data)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:  # the line-by-line reader names the line
            return _read_jsonl_slow(path, data)
        try:
            return pajson.read_json(pa.BufferReader(data))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return _read_jsonl_slow(path, data)
    except OSError as exc:
        raise PredictionsTableError(f"{path}: cannot read: {exc}") from exc
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise PredictionsTableError(f"{path}: not a readable {fmt} table: {exc}") from exc


def _first_bad_row(mask: Any) -> int:
    import numpy as np

    return int(np.flatnonzero(np.asarray(mask))[0]) + 1


def validate_table(table: pa.Table, source: str = "<table>") -> pa.Table:
    """Check and normalise a predictions table; return it with canonical column types.

    Checks: the required columns are present; identifiers (benchmark, sample_id, model, strategy)
    are non-empty; strategy names are matched case-insensitively (:func:`_normalise_strategies`);
    an empty ``mode`` means ``none`` for strategies that take no text mode and is an error for
    score-based ones; ``mode`` is then q, qa or none; ``k`` a positive integer or empty (unknown,
    kept as its own group); ``window`` an integer or null; ``correct`` 0 or 1 (booleans accepted) with no nulls; ``p_correct`` in
    [0, 1] or null. Errors name ``source``, the column and the first bad row (1 = first data row).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise PredictionsTableError(
            f"{source}: missing required column(s) {', '.join(missing)} "
            f"(a predictions table needs {', '.join(REQUIRED_COLUMNS)})"
        )
    columns = {}
    for name in table.column_names:
        col = table.column(name)
        try:
            if name in _STRING_COLUMNS and not pa.types.is_string(col.type):
                if pa.types.is_floating(col.type) and name in _ID_COLUMNS:
                    raise PredictionsTableError(
                        f"{source}: column {name} holds floats; ids must be text or integers"
                    )
                col = col.cast(pa.string())
            elif name in _INT_COLUMNS and not pa.types.is_int64(col.type):
                col = col.cast(pa.int64())
            elif name in _FLOAT_COLUMNS and not pa.types.is_float64(col.type):
                col = col.cast(pa.float64())
        except pa.ArrowException as exc:  # invalid values or an impossible cast
            raise PredictionsTableError(
                f"{source}: column {name} has values of the wrong type: {exc}"
            ) from exc
        columns[name] = col
    for name in _ID_COLUMNS:
        col = columns[name]
        bad = pc.or_(pc.is_null(col), pc.equal(pc.utf8_length(pc.fill_null(col, "")), 0))
        if pc.any(bad).as_py():
            raise PredictionsTableError(f"{source}: row {_first_bad_row(bad)}: empty {name}")
    columns["strategy"] = _normalise_strategies(columns["strategy"], source)
    columns["mode"] = _fill_modes(columns["mode"], columns["strategy"], source)
    bad = pc.invert(pc.is_in(columns["mode"], value_set=pa.array(["q", "qa", "none"])))
    if pc.any(bad).as_py():
        row = _first_bad_row(bad)
        value = columns["mode"][row - 1].as_py()
        raise PredictionsTableError(f"{source}: row {row}: mode must be q, qa or none, not {value!r}")
    k = columns["k"]
    bad = pc.fill_null(pc.less_equal(k, 0), False)  # null = unknown K, its own group
    if pc.any(bad).as_py():
        raise PredictionsTableError(
            f"{source}: row {_first_bad_row(bad)}: k must be a positive integer (or empty for unknown)"
        )
    correct = columns["correct"]
    if pa.types.is_boolean(correct.type):
        correct = correct.cast(pa.int8())
    if not (pa.types.is_integer(correct.type) or pa.types.is_floating(correct.type)):
        raise PredictionsTableError(f"{source}: column correct must hold 0 or 1, found {correct.type} values")
    bad = pc.fill_null(pc.invert(pc.is_in(correct, value_set=pa.array([0, 1], type=correct.type))), True)
    if pc.any(bad).as_py():
        row = _first_bad_row(bad)
        raise PredictionsTableError(
            f"{source}: row {row}: correct must be 0 or 1, not {correct[row - 1].as_py()!r}"
        )
    columns["correct"] = correct.cast(pa.int8())
    if "p_correct" in columns:
        p = columns["p_correct"]
        bad = pc.fill_null(pc.or_(pc.less(p, 0.0), pc.greater(p, 1.0)), False)
        bad = pc.or_(bad, pc.fill_null(pc.is_nan(p), False))
        if pc.any(bad).as_py():
            raise PredictionsTableError(f"{source}: row {_first_bad_row(bad)}: p_correct must lie in [0, 1]")
    for flag in ("parse_error",):
        if flag in columns:
            col = columns[flag]
            if pa.types.is_boolean(col.type):
                col = col.cast(pa.int8())
            try:
                columns[flag] = col.cast(pa.int8())
            except pa.ArrowException as exc:  # invalid values or an impossible cast
                raise PredictionsTableError(f"{source}: column {flag} must hold 0 or 1: {exc}") from exc
    return pa.table(columns)


def _known_strategies() -> tuple[frozenset[str], frozenset[str]]:
    """(every registered strategy, the score-based ones), without importing the selection code
    when it is not needed elsewhere (it is light: numpy only)."""
    from tempcore.selection.registry import SCORE_BASED, STRATEGIES

    return frozenset(STRATEGIES), frozenset(SCORE_BASED)


def _normalise_strategies(col: Any, source: str) -> Any:
    """Strategy names matched case-insensitively to the registered ones (``MaxProb`` -> ``maxprob``).

    A name that is not registered but close to a registered one (``maxprb``) is rejected with a
    suggestion: it is a typo that would otherwise make a group of its own. A name far from every
    registered one is kept as given: a strategy of a toolkit that is not tempcore's (e.g. a model that
    samples its own frames), which only the analyses that do not need a known strategy use.
    """

    import pyarrow as pa

    from tempcore.selection import SelectionError
    from tempcore.selection.registry import canonical_strategy

    values = col.to_pylist()
    mapping: dict[str, str] = {}
    for i, name in enumerate(values, start=1):
        if name in mapping:
            continue
        try:
            mapping[name] = canonical_strategy(name)
        except SelectionError as exc:
            raise PredictionsTableError(f"{source}: row {i}: {exc}") from exc
    if all(k == v for k, v in mapping.items()):
        return col
    return pa.chunked_array([pa.array([mapping[v] for v in values], type=pa.string())])


def _fill_modes(mode: Any, strategy: Any, source: str) -> Any:
    """Empty ``mode`` means ``none`` for strategies that take no text mode; a score-based strategy
    (maxprob, minprob, aks, bolt) with an empty mode is an error (q or qa changes its frames)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    empty = pc.or_(pc.is_null(mode), pc.equal(pc.utf8_length(pc.fill_null(mode, "")), 0))
    if not pc.any(empty).as_py():
        return mode
    _known, score_based = _known_strategies()
    needs = pc.and_(empty, pc.is_in(strategy, value_set=pa.array(sorted(score_based))))
    if pc.any(needs).as_py():
        row = _first_bad_row(needs)
        raise PredictionsTableError(
            f"{source}: row {row}: empty mode for strategy {strategy[row - 1].as_py()!r}, which ranks frames by "
            "score and needs mode q or qa"
        )
    return pc.if_else(empty, pa.scalar("none"), mode)


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


# --- from a table back to predictions -----------------------------------------------------


def _condition_of(row: Mapping[str, Any], where: str) -> str:
    try:
        if row.get("condition"):
            cond = Condition.from_key(row["condition"])
            if row.get("strategy") and cond.strategy != row["strategy"] and cond.strategy.lower() == row["strategy"]:
                cond = cond.replace(strategy=row["strategy"])  # matched case-insensitively, as the column
            for name in ("strategy", "mode", "k", "window"):
                if row.get(name) is not None and row[name] != getattr(cond, name):
                    raise PredictionsTableError(
                        f"{where}: column {name}={row[name]!r} disagrees with condition {row['condition']!r}"
                    )
            return cond.key
        k = row.get("k")
        kwargs: dict[str, Any] = {"strategy": row["strategy"], "mode": row["mode"],
                                  "k": None if k is None else int(k)}
        for name in ("window", "encoder", "fps", "seed", "rotation", "variant"):
            if row.get(name) is not None and row.get(name) != "":
                kwargs[name] = row[name]
        return Condition(**kwargs).key
    except (ValueError, TypeError) as exc:
        raise PredictionsTableError(f"{where}: bad condition: {exc}") from exc


def _answer_of(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if len(text) == 1 and text.upper() in LETTERS:
            return LETTERS.index(text.upper())
        if text.lstrip("-").isdigit():
            value = int(text)
        else:
            raise PredictionsTableError(f"{where}: answer {value!r} is neither an option index nor a letter")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or value < 0:
        raise PredictionsTableError(f"{where}: answer {value!r} is not an option index")
    return value


def _json_list(value: Any, where: str, name: str) -> list[Any] | None:
    if value is None or value == "":
        return None
    from tempcore.safejson import loads

    try:
        parsed = loads(value) if isinstance(value, str) else value
    except ValueError as exc:  # JSONDecodeError, or nesting deeper than safejson.MAX_DEPTH
        raise PredictionsTableError(f"{where}: {name} is not a JSON list: {exc}") from exc
    if not isinstance(parsed, list):
        raise PredictionsTableError(f"{where}: {name} is not a JSON list")
    return parsed


def table_to_predictions(table: pa.Table, source: str = "<table>") -> list[Prediction]:
    """Predictions from a (validated) tidy table, e.g. to bring a table made elsewhere into a store.

    The condition is the ``condition`` column when present (checked against strategy, mode, k,
    window), else built from the condition columns (an empty ``k`` is an unknown K: ``k=unknown``).
    Every Prediction field is read back from its column(s) (:data:`tempcore.schema.TIDY_COLUMNS`), so
    store -> export -> import keeps every column but ``run_id`` / ``created_at`` (the import's run). A store needs the parsed ``answer`` (index or
    letter) of every row, or for a grounding row its ``pred_start`` / ``pred_end`` (``iou`` and ``correct``
    are checked against each other: ``correct`` = ``iou >= 0.5``): a row without either must be a parse
    failure (``parse_error`` = 1, and then ``correct`` = 0; a NaN ``pred_start`` reads as none). Absent optional columns take the record defaults (empty response, no frames).
    """
    table = validate_table(table, source)
    out: list[Prediction] = []
    for i, row in enumerate(table.to_pylist(), start=1):
        where = f"{source}: row {i}"
        answer = _answer_of(row.get("answer"), where)
        flagged = bool(row.get("parse_error")) or bool(row.get("parse_error_message"))
        parse_error = None
        pred_start, pred_end, iou = (_optional_float(row.get(n)) for n in ("pred_start", "pred_end", "iou"))
        if answer is None and pred_start is None:
            if not flagged:
                raise PredictionsTableError(
                    f"{where}: no answer; a store needs the parsed option index (column answer) or, for a "
                    "grounding row, pred_start / pred_end of every prediction, or parse_error = 1 for a "
                    "response that could not be parsed"
                )
            parse_error = row.get("parse_error_message") or "parse failure (imported table)"
        indices = _json_list(row.get("frame_indices"), where, "frame_indices")
        timestamps = _json_list(row.get("frame_timestamps"), where, "frame_timestamps")
        frames = None
        if indices is not None or timestamps is not None:
            try:
                frames = FrameSet(
                    indices=tuple(indices or ()),
                    timestamps=tuple(timestamps or ()),
                    requested=int(row.get("frames_requested") or 0),
                    grey=bool(row.get("frames_grey")),
                )
            except (ValueError, TypeError) as exc:
                raise PredictionsTableError(f"{where}: bad frames: {exc}") from exc
        probs = _json_list(row.get("option_probs"), where, "option_probs")
        try:
            out.append(
                Prediction(
                    benchmark=row["benchmark"],
                    sample_id=row["sample_id"],
                    model=row["model"],
                    condition=_condition_of(row, where),
                    response=row.get("response") or "",
                    answer=answer,
                    correct=int(row["correct"]),
                    frames=frames,
                    prompt_hash=row.get("prompt_hash") or "",
                    latency_s=float(row.get("latency_s") or 0.0),
                    answer_method=row.get("answer_method") or "generate",
                    option_probs=None if probs is None else tuple(float(x) for x in probs),
                    parse_error=parse_error,
                    target=_optional_int(row.get("target"), where, "target"),
                    sample_hash=row.get("sample_hash") or "",
                    model_fingerprint=row.get("model_fingerprint") or "",
                    encoder_fingerprint=row.get("encoder_fingerprint") or None,
                    n_frames=_optional_int(row.get("n_frames"), where, "n_frames"),
                    video_damage=row.get("video_damage") or None,
                    pred_start=pred_start,
                    pred_end=pred_end,
                    iou=iou,
                )
            )
        except ValueError as exc:
            raise PredictionsTableError(f"{where}: {exc}") from exc
    return out


def _optional_float(value: Any) -> float | None:
    """A float column's value; null and NaN (a parse failure, as grounding tables write it) are None."""
    if value is None:
        return None
    value = float(value)
    return None if value != value else value


def _optional_int(value: Any, where: str, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PredictionsTableError(f"{where}: {name} must be a non-negative integer or empty, not {value!r}")
    return value


def import_table(
    path: str | os.PathLike[str], store: RunStore, *, overwrite: bool = False, format: str | None = None
) -> tuple[str, int, int]:
    """Read a tidy table and store its predictions as a new run; return (run_id, rows, written).

    Keys already in the store are kept (first write wins) unless ``overwrite``; nothing is stored
    if any row is invalid.
    """
    predictions = table_to_predictions(read_predictions(path, format), str(path))
    manifest = {
        "import": {"format": "tidy", "source": str(Path(path).resolve()), "sha256": file_sha256(path)}
    }
    run_id = store.start_run(manifest)
    return run_id, len(predictions), store.put(predictions, run_id, overwrite=overwrite)


def fingerprint_conflicts(table: pa.Table) -> dict[str, list[str]]:
    """Models whose rows carry more than one ``model_fingerprint``: ``model -> sorted fingerprints``.

    For ``diagnose`` / ``accuracy``, which must not pool rows of one model name answered by different
    model entries (another prompt, revision, method ...). Empty fingerprints (unknown: tables made
    elsewhere, stores before schema v2) are not a conflict by themselves, and a table without the
    column has none."""
    if "model_fingerprint" not in table.column_names:
        return {}
    seen: dict[str, set[str]] = {}
    for model, fp in zip(table.column("model").to_pylist(), table.column("model_fingerprint").to_pylist()):
        if fp:
            seen.setdefault(model, set()).add(fp)
    return {m: sorted(fps) for m, fps in sorted(seen.items()) if len(fps) > 1}


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 (hex) of a file's bytes, recorded in import manifests."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def store_predictions(
    store: RunStore,
    predictions: Sequence[Prediction],
    manifest: Mapping[str, Any],
    *,
    overwrite: bool = False,
) -> tuple[str, int]:
    """Store imported predictions as one new run in one transaction; return (run_id, rows written)."""
    run_id = store.start_run(manifest)
    return run_id, store.put(predictions, run_id, overwrite=overwrite)


__all__ = [
    "FORMATS",
    "REQUIRED_COLUMNS",
    "PredictionsTableError",
    "file_sha256",
    "fingerprint_conflicts",
    "import_table",
    "infer_format",
    "iter_prediction_batches",
    "predictions_table",
    "read_predictions",
    "store_predictions",
    "table_to_predictions",
    "tidy_columns",
    "validate_table",
    "write_batches",
    "write_table",
]
