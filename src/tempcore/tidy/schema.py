"""The prediction columns, declared once.

Every other form of a prediction is derived from the two declarations below:

* :data:`STORE_COLUMNS` — one entry per field of :class:`tempcore.records.Prediction`, in field order,
  with its SQLite type. The run store's ``predictions`` DDL, its INSERT / SELECT column lists and
  the row <-> Prediction conversion (:mod:`tempcore.run.store`) are built from it.
* :data:`TIDY_COLUMNS` — the tidy predictions table (:mod:`tempcore.tidy.table`), in order, with its
  Arrow type, whether a table given to ``read_predictions`` must hold it, where its values come
  from (``origin``) and what it means. The Arrow schema, the export, the import back into
  Predictions, the type normalisation of :func:`tempcore.tidy.table.validate_table` and the column table
  of the README (:func:`markdown_table`) are built from it.

``origin`` of a tidy column:

* ``field``     — the Prediction field of the same name, value unchanged;
* ``condition`` — the attribute of the same name of :meth:`Condition.from_key` of ``condition``;
* ``derived``   — computed from one or more fields (frames, option probabilities, parse error, the
  samples); :func:`tempcore.tidy.table.table_to_predictions` computes the fields back from them;
* ``store``     — a property of the stored row, not of the prediction (the run that stored it and
  when). An import stores rows under a new run, so these two are the only columns an
  export -> import -> export round trip does not keep; the import run's manifest names the file.

A test checks that every Prediction field has a store column and is recovered from the tidy
columns, so a field added to Prediction without a column here fails the tests at once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class StoreColumn:
    """One column of the store's ``predictions`` table: a Prediction field and its SQLite form.

    ``encoding`` is ``plain`` (the value itself) or ``json`` (a FrameSet / tuple stored as compact JSON
    text). ``sql`` is the column's SQLite declaration (type and constraints).
    """

    name: str
    sql: str
    encoding: str = "plain"


@dataclass(frozen=True)
class TidyColumn:
    """One column of the tidy table (see the module docstring for ``origin``)."""

    name: str
    type: str  # string | int64 | int8 | float64 | bool
    doc: str
    origin: str = "field"
    required: bool = False


KEY_COLUMNS = ("benchmark", "sample_id", "model", "condition")

STORE_COLUMNS: tuple[StoreColumn, ...] = (
    StoreColumn("benchmark", "TEXT NOT NULL"),
    StoreColumn("sample_id", "TEXT NOT NULL"),
    StoreColumn("model", "TEXT NOT NULL"),
    StoreColumn("condition", "TEXT NOT NULL"),
    StoreColumn("response", "TEXT NOT NULL"),
    StoreColumn("answer", "INTEGER"),
    StoreColumn("correct", "INTEGER NOT NULL CHECK (correct IN (0, 1))"),
    StoreColumn("frames", "TEXT", "json"),
    StoreColumn("prompt_hash", "TEXT NOT NULL"),
    StoreColumn("latency_s", "REAL NOT NULL"),
    StoreColumn("answer_method", "TEXT NOT NULL"),
    StoreColumn("option_probs", "TEXT", "json"),
    StoreColumn("parse_error", "TEXT"),
    StoreColumn("target", "INTEGER"),
    StoreColumn("sample_hash", "TEXT NOT NULL DEFAULT ''"),
    StoreColumn("model_fingerprint", "TEXT NOT NULL DEFAULT ''"),
    StoreColumn("encoder_fingerprint", "TEXT"),
    StoreColumn("n_frames", "INTEGER"),
    StoreColumn("video_damage", "TEXT"),
    StoreColumn("pred_start", "REAL"),
    StoreColumn("pred_end", "REAL"),
    StoreColumn("iou", "REAL CHECK (iou IS NULL OR (iou >= 0 AND iou <= 1))"),
)
#: Columns of a stored row that are not Prediction fields.
STORE_META_COLUMNS: tuple[StoreColumn, ...] = (
    StoreColumn("run_id", "TEXT NOT NULL REFERENCES runs (run_id)"),
    StoreColumn("created_at", "TEXT NOT NULL"),
)

TIDY_COLUMNS: tuple[TidyColumn, ...] = (
    TidyColumn("benchmark", "string", "benchmark name", required=True),
    TidyColumn("sample_id", "string", "the benchmark's sample id", required=True),
    TidyColumn("model", "string", "model name", required=True),
    TidyColumn("strategy", "string", "frame-selection strategy of the condition (matched case-insensitively)",
               "condition", required=True),
    TidyColumn("mode", "string", "text mode: `q`, `qa` or `none`; empty means `none` for strategies "
               "that take no text mode", "condition", required=True),
    TidyColumn("k", "int64", "frames shown; null = unknown (a model that samples its own frames)",
               "condition", required=True),
    TidyColumn("window", "int64", "oracle window index, null otherwise", "condition", required=True),
    TidyColumn("correct", "int8", "0 / 1; a parse failure is 0; a grounding row: 1 when `iou` >= 0.5",
               required=True),
    TidyColumn("p_correct", "float64", "probability on the correct option (needs option_probs and the "
               "target or the samples)", "derived"),
    TidyColumn("rotation", "int64", "cyclic option rotation (0 = original order)", "condition"),
    TidyColumn("encoder", "string", "frame-text encoder of score-based strategies, else null", "condition"),
    TidyColumn("fps", "float64", "decoding rate of the candidate frames", "condition"),
    TidyColumn("seed", "int64", "global seed of the condition", "condition"),
    TidyColumn("variant", "string", "strategy variant, else null", "condition"),
    TidyColumn("condition", "string", "the full condition key (`Condition.key`)"),
    TidyColumn("answer", "int64", "parsed option index in the original order, null on parse failure "
               "and for grounding rows (see `pred_start`)"),
    TidyColumn("parse_error", "int8", "1 when the response could not be parsed", "derived"),
    TidyColumn("parse_error_message", "string", "why, else null", "derived"),
    TidyColumn("answer_method", "string", "`generate` or `option_scores`"),
    TidyColumn("latency_s", "float64", "seconds the call took"),
    TidyColumn("response", "string", "the model's raw response"),
    TidyColumn("frame_indices", "string", "JSON list of the decoded-frame indices shown, in order; null "
               "if unknown", "derived"),
    TidyColumn("frame_timestamps", "string", "JSON list of their timestamps (s); null if unknown", "derived"),
    TidyColumn("frames_requested", "int64", "K asked for (`frame_indices` may be shorter); null if unknown",
               "derived"),
    TidyColumn("frames_grey", "bool", "true for the no-frame condition (grey images)", "derived"),
    TidyColumn("prompt_hash", "string", "SHA-256 of the exact prompt"),
    TidyColumn("n_options", "int64", "number of options (from the samples, else from option_probs)",
               "derived"),
    TidyColumn("option_probs", "string", "JSON list of the probabilities over the original options, or null",
               "derived"),
    TidyColumn("target", "int64", "index of the correct option (original order), when known"),
    TidyColumn("sample_hash", "string", "fingerprint of the sample's content and video (see "
               "`tempcore.run.identity`); empty when unknown"),
    TidyColumn("model_fingerprint", "string", "fingerprint of the model entry that answered (see "
               "`tempcore.run.identity`); empty when unknown"),
    TidyColumn("encoder_fingerprint", "string", "fingerprint of the encoder that scored the frames "
               "(score-based strategies), else null"),
    TidyColumn("n_frames", "int64", "L: decoded frames of the sample's video or segment at the run's fps; "
               "null if unknown"),
    TidyColumn("video_damage", "string", "damage found while decoding the video (truncation, corrupt "
               "data), null when the decode was clean or unknown"),
    TidyColumn("pred_start", "float64", "grounding: predicted start (s, absolute video time); null for "
               "multiple choice and on a parse failure"),
    TidyColumn("pred_end", "float64", "grounding: predicted end (s, absolute video time); null as `pred_start`"),
    TidyColumn("iou", "float64", "grounding: best IoU over the sample's ground-truth windows; null on a "
               "parse failure (scored 0, counted apart) or without ground truth"),
    TidyColumn("run_id", "string", "run that stored the prediction (null outside a store)", "store"),
    TidyColumn("created_at", "string", "when it was stored (ISO 8601, UTC; null outside a store)", "store"),
)

REQUIRED_COLUMNS: tuple[str, ...] = tuple(c.name for c in TIDY_COLUMNS if c.required)
STRING_COLUMNS: tuple[str, ...] = tuple(c.name for c in TIDY_COLUMNS if c.type == "string")
INT_COLUMNS: tuple[str, ...] = tuple(c.name for c in TIDY_COLUMNS if c.type == "int64")
FLOAT_COLUMNS: tuple[str, ...] = tuple(c.name for c in TIDY_COLUMNS if c.type == "float64")
#: Tidy columns whose values are Prediction fields passed through unchanged.
PASSTHROUGH: tuple[str, ...] = tuple(c.name for c in TIDY_COLUMNS if c.origin == "field")


def store_column_names() -> tuple[str, ...]:
    return tuple(c.name for c in STORE_COLUMNS)


def predictions_ddl() -> str:
    """The ``CREATE TABLE predictions`` statement of the current store schema."""
    lines = [f"    {c.name:<20} {c.sql}" for c in (*STORE_COLUMNS, *STORE_META_COLUMNS)]
    lines.append(f"    PRIMARY KEY ({', '.join(KEY_COLUMNS)})")
    return "CREATE TABLE IF NOT EXISTS predictions (\n" + ",\n".join(lines) + "\n)"


def arrow_schema() -> pa.Schema:
    """The Arrow schema of the tidy table."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "int8": pa.int8(), "float64": pa.float64(),
             "bool": pa.bool_()}
    return pa.schema([(c.name, types[c.type]) for c in TIDY_COLUMNS])


def markdown_table() -> str:
    """The README's column table of the tidy predictions table."""
    rows = ["| column | type | required | meaning |", "|---|---|---|---|"]
    for c in TIDY_COLUMNS:
        rows.append(f"| `{c.name}` | {c.type} | {'yes' if c.required else ''} | {c.doc} |")
    return "\n".join(rows)


def check_against_prediction() -> None:
    """Raise AssertionError when the store columns and the Prediction fields disagree."""
    from tempcore.records import Prediction

    fields = tuple(f.name for f in dataclasses.fields(Prediction))
    if fields != store_column_names():
        raise AssertionError(f"store columns {store_column_names()} != Prediction fields {fields}")


__all__ = [
    "FLOAT_COLUMNS",
    "INT_COLUMNS",
    "KEY_COLUMNS",
    "PASSTHROUGH",
    "REQUIRED_COLUMNS",
    "STORE_COLUMNS",
    "STORE_META_COLUMNS",
    "STRING_COLUMNS",
    "TIDY_COLUMNS",
    "StoreColumn",
    "TidyColumn",
    "arrow_schema",
    "markdown_table",
    "predictions_ddl",
]
