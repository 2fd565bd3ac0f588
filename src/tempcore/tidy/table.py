"""The tidy predictions table: one row per prediction, the interchange format of tempcore.

Every diagnostic reads this table, whether it came from a run store (``tempcore export
predictions``), from lmms-eval logs, or from a file a user made elsewhere. The columns, their
types, which are required and what they mean are declared once in :data:`tempcore.tidy.schema.TIDY_COLUMNS`
(the README's table is :func:`tempcore.tidy.schema.markdown_table`); this module derives the Arrow
schema, the export, the validation and the import back into Predictions from that declaration.

Only the required columns must be present in a file given to :func:`read_predictions`; the
others are carried along when present. pyarrow is imported inside the functions.

This module builds the table (from a :class:`~tempcore.run.store.RunStore`, read only through its
methods, or from Predictions) and turns a table back into Predictions; the file formats are in
:mod:`tempcore.tidy.formats` and the validation in :mod:`tempcore.tidy.validation` (their names
are importable from here too).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tempcore.records import LETTERS, Condition, FrameSet, Prediction, Sample, option_probs_problem
from tempcore.run.store import DAMAGED, EXPORT_COLUMNS, EXPORT_FIELDS, RunStore, damaged_row_error
from tempcore.tidy.formats import (
    FORMATS,
    file_sha256,
    infer_format,
    read_predictions,
    write_batches,
    write_table,
)
from tempcore.tidy.schema import REQUIRED_COLUMNS, TIDY_COLUMNS, arrow_schema
from tempcore.tidy.validation import PredictionsTableError, validate_table

if TYPE_CHECKING:
    import pyarrow as pa

_CONDITION_COLUMNS = tuple(c.name for c in TIDY_COLUMNS if c.origin == "condition")


def _schema() -> pa.Schema:
    return arrow_schema()


def tidy_columns() -> list[str]:
    """The column names :func:`predictions_table` produces, in order."""
    return list(_schema().names)


@lru_cache(maxsize=4096)
def _condition(key: str) -> Condition:
    return Condition.from_key(key)


# --- building -----------------------------------------------------------------------------

# What the builder needs of each prediction, in this order (tempcore.run.store.EXPORT_COLUMNS): the key,
# the Prediction fields the tidy table passes through unchanged (tempcore.tidy.schema.PASSTHROUGH), then
# the parts the builder derives columns from. The store reads the frame parts and the option count
# out of its JSON (RunStore.export_rows); a Prediction is converted in Python (_prediction_raw).
_FIELDS = EXPORT_FIELDS
_RAW = EXPORT_COLUMNS


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
    if isinstance(source, RunStore):
        yield from source.export_rows(run_id=run_id, batch_size=batch_rows)
        return
    batch: list[tuple[Any, ...]] = []
    for p in source:
        batch.append(_prediction_raw(p))
        if len(batch) >= batch_rows:
            yield batch
            batch = []
    if batch:
        yield batch


def _sample_index(samples: Iterable[Sample] | Mapping[tuple[str, str], Sample] | None) -> dict[tuple[str, str], Sample] | None:
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


def _stored_probs(text: Any, row: Sequence[Any]) -> list[Any]:
    """A stored row's ``option_probs`` JSON, checked (:func:`tempcore.records.option_probs_problem`);
    a damaged one is a :class:`tempcore.run.store.StoreError` naming the row and how to repair it."""
    try:
        values = json.loads(text) if isinstance(text, (str, bytes)) else text
    except ValueError as exc:
        raise damaged_row_error(row, f"option_probs {str(text)[:80]!r} is not JSON ({exc})") from exc
    problem = option_probs_problem(values)
    if problem:
        raise damaged_row_error(row, problem)
    return list(values)


def _record_batch(rows: list[tuple[Any, ...]], schema: pa.Schema, index: dict[tuple[str, str], Sample] | None) -> pa.RecordBatch:
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
    for i, indices in enumerate(raw["frame_indices"]):
        if indices == DAMAGED:
            raise damaged_row_error(rows[i], "its frames are not JSON that SQLite can read")
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
        if probs is None:
            p_correct.append(None)
            continue
        values = _stored_probs(probs, rows[i])
        if targets[i] is None:
            p_correct.append(None)
            continue
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
    Every Prediction field is read back from its column(s) (:data:`tempcore.tidy.schema.TIDY_COLUMNS`), so
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
        problem = option_probs_problem(probs)
        if problem:
            raise PredictionsTableError(f"{where}: {problem}")
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
