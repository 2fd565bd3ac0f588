"""Accuracy per model x condition, grouped by any predictions column or any field of the samples.

Input: the tidy predictions table (``tempcore.tidy.table``): one row per prediction with at least
``benchmark, sample_id, model, strategy, mode, k, window, correct``. Definitions and choices:

* Accuracy = correct / n over the predictions of a group, as a fraction, with a Wilson score
  interval (:func:`tempcore.diagnostics.stats.wilson_interval`). A parse failure is a row with
  ``correct = 0`` and counts as wrong; when the table has a ``parse_error`` column its sum is
  reported per group (``parse_errors``).
* A condition is ``strategy`` and ``mode``, plus each of ``k, encoder, fps, seed, variant,
  rotation`` that takes more than one value in the table (a constant column adds nothing; a
  varying one is never mixed into one figure).
* Window oracle (``strategy == "oracle"``, one row per window): the sample is solved when any
  window is answered correctly (paper §3.2). The oracle is reported as strategy ``oracle``
  without a window. A (sample, model) whose observed windows are all wrong but who has fewer
  distinct windows than the most any model has for that sample is *incomplete* (a run cut short
  would otherwise count as a miss): it is excluded from ``n`` and counted in ``incomplete``.
  Per-window rows (``window`` set) are added only when asked (``per_window``).
* Group fields (``by``) come from the predictions when they have such a column, else from the
  benchmark's samples: a :class:`~tempcore.records.Sample` attribute (``n_options``,
  ``answer``, ``answer_letter``, ``media``, ``video``, ``start``, ``end``) or a metadata field
  (NExT-QA ``type``, Video-MME ``duration`` / ``task_type``, ...). Samples are matched on
  ``sample_id`` within ``benchmark`` when it is given, else on (benchmark, sample_id). A sample
  of the predictions that the annotations lack is an error (:class:`AccuracyError`, naming the
  first ids) unless ``unmatched="keep"``, which groups it under a null field value and reports
  the count (``ResultTable.meta["unmatched_samples"]``).
* NExT-QA's official evaluation (``doc-doc/NExT-QA`` ``eval_mc.py``): accuracy per question type
  with TP (previous) merged into TN (before/after) — CW, CH, TN, TC, DC, DL, DO — then the family
  totals C, T, D (pooled over their types) and the overall figure (pooled over all), in that
  order (:func:`nextqa_official`). A type outside those eight is an error.
* Duplicate predictions (same sample, model, condition and window twice) are an error: they
  would be counted twice.
* The table goes through the checks of :mod:`tempcore.diagnostics.table` first (strategy names
  matched ignoring case, unknown ``models`` named, rows of one model name with different
  ``model_fingerprint`` values refused), and a result with no group is a
  :class:`~tempcore.diagnostics.table.TableError`, never an empty table.
* A blank (null) ``rotation`` is rotation 0, the original option order
  (:func:`blank_rotation_is_zero`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.errors import TempcoreError
from tempcore.records import Sample

if TYPE_CHECKING:
    import pyarrow as pa

REQUIRED_COLUMNS = ("benchmark", "sample_id", "model", "strategy", "mode", "k", "window", "correct")
#: condition columns beyond strategy / mode, included in the grouping when they vary
CONDITION_COLUMNS = ("k", "encoder", "fps", "seed", "variant", "rotation")
#: Sample attributes usable as ``by`` fields (metadata fields are usable too)
SAMPLE_ATTRIBUTES = ("n_options", "answer", "answer_letter", "media", "video", "start", "end")
NEXTQA_TYPES = ("CW", "CH", "TN", "TC", "DC", "DL", "DO")
NEXTQA_NAMES = {
    "CW": "Why", "CH": "How", "TN": "Bef&Aft", "TC": "When", "DC": "Cnt", "DL": "Loc", "DO": "Other",
    "C": "Acc_C", "T": "Acc_T", "D": "Acc_D", "all": "All",
}
_ORACLE = "oracle"
_INCOMPLETE = "_incomplete"


class AccuracyError(TempcoreError):
    """Accuracy cannot be computed as asked (unknown field, unmatched samples, duplicates...)."""


# --- result table ----------------------------------------------------------------------------


def _json_value(x: Any) -> Any:
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return None if math.isnan(float(x)) else float(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


@dataclass
class ResultTable:
    """A small table of results: ``rows`` (dicts keyed by ``columns``) plus notes.

    Fractions stay fractions in ``rows`` and in JSON; :meth:`to_text` shows the columns listed
    in ``percent`` as percentages. ``meta`` holds counts a reader needs (excluded samples...).
    """

    name: str
    title: str
    columns: list[str]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    percent: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def column(self, name: str) -> list[Any]:
        return [r.get(name) for r in self.rows]

    def where(self, **equal: Any) -> list[dict[str, Any]]:
        """Rows whose columns equal the given values."""
        return [r for r in self.rows if all(r.get(k) == v for k, v in equal.items())]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "columns": list(self.columns),
            "rows": [{c: _json_value(r.get(c)) for c in self.columns} for r in self.rows],
            "notes": list(self.notes),
            "meta": {k: _json_value(v) for k, v in self.meta.items()},
        }

    def to_text(self, percent: bool = True, digits: int = 1) -> str:
        """Aligned plain text: a title line, a header, one line per row, then the notes."""

        def cell(col: str, v: Any) -> str:
            if v is None or (isinstance(v, float) and math.isnan(v)):
                return "-"
            if isinstance(v, float):
                if percent and col in self.percent:
                    return f"{100 * v:.{digits}f}"
                return f"{v:.3f}"
            return str(v)

        body = [[cell(c, r.get(c)) for c in self.columns] for r in self.rows]
        widths = [max([len(c)] + [len(b[i]) for b in body]) for i, c in enumerate(self.columns)]
        numeric = [
            all(isinstance(r.get(c), (int, float)) or r.get(c) is None for r in self.rows) for c in self.columns
        ]

        def line(cells: list[str]) -> str:
            return "  ".join(x.rjust(w) if num else x.ljust(w) for x, w, num in zip(cells, widths, numeric)).rstrip()

        unit = " (percent columns: " + ", ".join(self.percent) + ")" if percent and self.percent else ""
        out = [self.title + unit, line(list(self.columns)), line(["-" * w for w in widths])]
        out += [line(b) for b in body]
        out += [f"note: {n}" for n in self.notes]
        return "\n".join(out)


# --- grouping helpers ------------------------------------------------------------------------


def group_codes(table: pa.Table, columns: Sequence[str]) -> tuple[np.ndarray, int]:
    """Dense group id per row for the combination of ``columns`` (nulls form their own value)."""
    from tempcore.diagnostics.kernel import value_codes

    n = table.num_rows
    combined = np.zeros(n, dtype=np.int64)
    radix = 1
    for name in columns:
        codes, values = value_codes(table.column(name))
        card = max(len(values), 1)
        if radix * card >= 2**62:
            _, combined = np.unique(combined, return_inverse=True)
            radix = int(combined.max()) + 1 if n else 1
        combined = combined * card + codes
        radix *= card
    if n == 0:
        return combined, 0
    uniq, inverse = np.unique(combined, return_inverse=True)
    return inverse.astype(np.int64).ravel(), int(uniq.size)


def _varying(table: pa.Table, name: str) -> bool:
    import pyarrow.compute as pc

    return name in table.column_names and pc.count_distinct(table.column(name), mode="all").as_py() > 1


def condition_columns(table: pa.Table) -> list[str]:
    """``strategy``, ``mode`` and the condition columns that vary in ``table``."""
    return ["strategy", "mode"] + [c for c in CONDITION_COLUMNS if _varying(table, c)]


def _check_columns(table: pa.Table) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise AccuracyError(f"predictions table lacks column(s) {missing}")


def blank_rotation_is_zero(table: pa.Table) -> pa.Table:
    """``table`` with null ``rotation`` values as 0 (the original option order); unchanged without the column.

    As everywhere else in tempcore (``diagnose``, the analyses, the exports): a table mixing blank
    and 0 has one rotation, so neither a split group nor a ``rotation`` column; a prediction stored
    under both is a duplicate.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if "rotation" not in table.column_names:
        return table
    col = table.column("rotation")
    if col.null_count == 0 and pa.types.is_integer(col.type):
        return table
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    filled = pc.fill_null(col.cast(pa.int64()), 0)
    return table.set_column(table.column_names.index("rotation"), "rotation", filled)


def _check_duplicates(table: pa.Table, cond: Sequence[str] | None = None) -> None:
    """Raise on a repeated (sample, model, condition, window); ``cond``: the varying condition columns."""
    cond = condition_columns(table) if cond is None else cond
    keys = ["benchmark", "sample_id", "model", *cond, "window"]
    gid, n_groups = group_codes(table, keys)
    if n_groups == table.num_rows:
        return
    order = np.argsort(gid, kind="stable")
    dup = np.flatnonzero(gid[order][1:] == gid[order][:-1])
    row = table.slice(int(order[dup[0] + 1]), 1).to_pylist()[0]
    raise AccuracyError(
        f"duplicate predictions ({table.num_rows - n_groups} extra row(s)), e.g. sample {row['sample_id']!r} of "
        f"{row['benchmark']!r}, model {row['model']!r}, strategy {row['strategy']!r}, window {row['window']!r}: "
        "each would be counted twice"
    )


def _field_value(sample: Sample, name: str) -> Any:
    if name in sample.metadata:
        return sample.metadata[name]
    if name == "n_options":
        return len(sample.options)
    if name in SAMPLE_ATTRIBUTES:
        return getattr(sample, name)
    return _MISSING


_MISSING = object()


def _to_arrow(values: list[Any]) -> Any:
    """A pyarrow array of field values: native when they share a type, else as text (JSON for containers)."""
    import pyarrow as pa

    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        out = []
        for v in values:
            if v is None or isinstance(v, str):
                out.append(v)
            elif isinstance(v, (list, tuple, dict)):
                out.append(json.dumps(v, sort_keys=True))
            else:
                out.append(str(v))
        return pa.array(out, type=pa.string())


def sample_field_columns(
    table: pa.Table,
    fields: Sequence[str],
    samples: Iterable[Sample],
    *,
    benchmark: str | None = None,
    unmatched: str = "error",
) -> tuple[dict[str, Any], int]:
    """Per-row arrays of sample ``fields`` for ``table`` (joined as the module doc says).

    Returns ``({field: pyarrow array}, number of unmatched samples)``.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if unmatched not in ("error", "keep"):
        raise AccuracyError(f"unmatched must be 'error' or 'keep', not {unmatched!r}")
    if benchmark is not None:
        lookup: dict[Any, Sample] = {s.sample_id: s for s in samples}
        key_cols = ["sample_id"]
    else:
        lookup = {(s.benchmark, s.sample_id): s for s in samples}
        key_cols = ["benchmark", "sample_id"]
    # distinct keys of the table, and each row's index into them
    gid, n_groups = group_codes(table, key_cols)
    first = np.full(n_groups, -1, dtype=np.int64)
    first[gid[::-1]] = np.arange(table.num_rows - 1, -1, -1)
    keys_tbl = table.select(key_cols).take(pa.array(first))
    if benchmark is not None:
        keys: list[Any] = keys_tbl.column("sample_id").to_pylist()
    else:
        keys = list(zip(keys_tbl.column("benchmark").to_pylist(), keys_tbl.column("sample_id").to_pylist()))
    found = [lookup.get(k) for k in keys]
    missing = [k for k, s in zip(keys, found) if s is None]
    if missing and unmatched == "error":
        shown = ", ".join(repr(m) if isinstance(m, str) else f"{m[1]!r} of {m[0]!r}" for m in missing[:5])
        where = f" of benchmark {benchmark!r}" if benchmark else ""
        raise AccuracyError(
            f"{len(missing)} sample(s){where} in the predictions are not in the annotations, e.g. {shown} "
            "(check the benchmark and annotation file, or keep them as an unmatched group)"
        )
    present = [s for s in found if s is not None]
    out = {}
    for name in fields:
        values = [None if s is None else _field_value(s, name) for s in found]
        if present and all(v is _MISSING for v, s in zip(values, found) if s is not None):
            known = sorted({k for s in present for k in s.metadata} | set(SAMPLE_ATTRIBUTES))
            raise AccuracyError(
                f"no column or sample field {name!r}; the predictions have {sorted(table.column_names)} "
                f"and the samples have {known}"
            )
        values = [None if v is _MISSING else v for v in values]
        out[name] = pc.take(_to_arrow(values), pa.array(gid))
    return out, len(missing)


# --- oracle ----------------------------------------------------------------------------------


def _oracle_rows(oracle: Any, keys: Sequence[str]) -> Any:
    """One row per (sample, model, condition, group): correct = any window correct; ``_incomplete``."""
    import pyarrow as pa

    gid, n_groups = group_codes(oracle, keys)
    correct = oracle.column("correct").to_numpy(zero_copy_only=False).astype(np.int64)
    solved = np.bincount(gid, weights=correct, minlength=n_groups) > 0
    window = oracle.column("window").to_numpy(zero_copy_only=False)
    window = np.nan_to_num(window.astype(np.float64), nan=-1.0).astype(np.int64) + 1
    span = int(window.max()) + 1 if window.size else 1
    pairs = np.unique(gid * span + window)
    n_windows = np.bincount(pairs // span, minlength=n_groups)
    first = np.full(n_groups, -1, dtype=np.int64)
    first[gid[::-1]] = np.arange(oracle.num_rows - 1, -1, -1)
    heads = oracle.take(pa.array(first))
    sample_keys = [k for k in keys if k != "model"]
    sgid, n_sample_groups = group_codes(heads, sample_keys)
    expected = np.zeros(n_sample_groups, dtype=np.int64)
    np.maximum.at(expected, sgid, n_windows)
    complete = solved | (n_windows == expected[sgid])
    out = heads.select(list(keys))
    out = out.append_column("window", pa.nulls(n_groups, type=pa.int64()))
    out = out.append_column("correct", pa.array(solved.astype(np.int64)))
    out = out.append_column(_INCOMPLETE, pa.array((~complete).astype(np.int64)))
    if "parse_error" in oracle.column_names:
        pe = np.nan_to_num(oracle.column("parse_error").to_numpy(zero_copy_only=False).astype(np.float64))
        out = out.append_column("parse_error", pa.array(np.bincount(gid, weights=pe, minlength=n_groups)))
    return out


# --- accuracy --------------------------------------------------------------------------------


def _prepare(
    table: pa.Table,
    by: Sequence[str],
    samples: Iterable[Sample] | None,
    benchmark: str | None,
    models: Sequence[str] | None,
    unmatched: str,
) -> tuple[Any, list[str], list[str], int]:
    import pyarrow as pa
    import pyarrow.compute as pc

    from tempcore.diagnostics.table import check_fingerprints, check_models, prepare_table

    _check_columns(table)
    table = prepare_table(table)
    if benchmark is not None:
        present = sorted(set(pc.unique(table.column("benchmark")).to_pylist()))
        table = table.filter(pc.equal(table.column("benchmark"), benchmark))
        if table.num_rows == 0:
            raise AccuracyError(f"the predictions have no rows for benchmark {benchmark!r} (they have {present})")
    if models is not None:
        check_models(table, models)
        table = table.filter(pc.is_in(table.column("model"), value_set=pa.array(list(models), type=pa.string())))
    check_fingerprints(table, what="accuracy")
    table = blank_rotation_is_zero(table)
    cond = condition_columns(table)
    _check_duplicates(table, cond)
    by_cols: list[str] = []
    derive: list[str] = []
    for name in by:
        if name in ("correct", "sample_id"):
            raise AccuracyError(f"cannot group accuracy by {name!r}")
        if name in ("benchmark", "model", "strategy", "mode") or name in by_cols or name in cond:
            continue
        if name in CONDITION_COLUMNS and name in table.column_names:
            cond.append(name)
            continue
        by_cols.append(name)
        if name not in table.column_names:
            derive.append(name)
    n_unmatched = 0
    if derive:
        if samples is None:
            raise AccuracyError(
                f"no column {derive[0]!r} in the predictions (they have {sorted(table.column_names)}); "
                "give the benchmark's annotations to group by a sample field"
            )
        columns, n_unmatched = sample_field_columns(table, derive, samples, benchmark=benchmark, unmatched=unmatched)
        for name, arr in columns.items():
            table = table.append_column(name, arr)
    return table, cond, by_cols, n_unmatched


def _aggregate(
    table: pa.Table, cond: list[str], by_cols: list[str], per_window: bool
) -> tuple[Any, list[str]]:
    """Group the rows (oracle folded to one row per sample) and sum correct / n / incomplete."""
    import pyarrow as pa
    import pyarrow.compute as pc

    has_pe = "parse_error" in table.column_names
    keys = ["benchmark", "model", *cond, *by_cols]
    row_keys = ["benchmark", "sample_id", "model", *[c for c in cond if c not in ("benchmark", "model")], *by_cols]
    is_oracle = pc.fill_null(pc.equal(table.column("strategy"), _ORACLE), False)
    parts = []

    def shaped(t: Any, with_window: bool) -> Any:
        cols = {k: t.column(k) for k in row_keys}
        for k, col in cols.items():
            if pa.types.is_null(col.type):
                cols[k] = col.cast(pa.string())
        cols["window"] = t.column("window") if with_window else pa.nulls(t.num_rows, type=pa.int64())
        cols["correct"] = t.column("correct").cast(pa.int64())
        cols[_INCOMPLETE] = (
            t.column(_INCOMPLETE) if _INCOMPLETE in t.column_names else pa.array(np.zeros(t.num_rows, np.int64))
        )
        if has_pe:
            cols["parse_error"] = pc.fill_null(t.column("parse_error").cast(pa.float64()), 0.0)
        return pa.table(cols)

    plain = table.filter(pc.invert(is_oracle))
    if plain.num_rows:
        parts.append(shaped(plain, with_window=False))
    oracle = table.filter(is_oracle)
    if oracle.num_rows:
        parts.append(shaped(_oracle_rows(oracle, row_keys), with_window=False))
        if per_window:
            parts.append(shaped(oracle, with_window=True))
    if not parts:
        return None, keys
    work = pa.concat_tables(parts).unify_dictionaries()  # Parquet chunks may carry different dictionaries
    group_keys = keys + (["window"] if per_window else [])
    aggs = [("correct", "sum"), ("correct", "count"), (_INCOMPLETE, "sum")]
    if has_pe:
        aggs.append(("parse_error", "sum"))
    agg = work.group_by(group_keys, use_threads=False).aggregate(aggs)
    return agg, group_keys


def _rows_from(agg: Any, keys: list[str], confidence: float, has_pe: bool) -> list[dict[str, Any]]:
    from tempcore.diagnostics.stats import wilson_interval

    if agg is None or agg.num_rows == 0:
        return []
    total = agg.column("correct_count").to_numpy(zero_copy_only=False).astype(np.int64)
    incomplete = agg.column(f"{_INCOMPLETE}_sum").to_numpy(zero_copy_only=False).astype(np.int64)
    correct = agg.column("correct_sum").to_numpy(zero_copy_only=False).astype(np.int64)
    n = total - incomplete
    low, high = wilson_interval(correct, n, confidence)
    key_values = {k: agg.column(k).to_pylist() for k in keys}
    pe = agg.column("parse_error_sum").to_numpy(zero_copy_only=False) if has_pe else None
    rows = []
    for i in range(agg.num_rows):
        row = {k: key_values[k][i] for k in keys}
        row.update(
            n=int(n[i]),
            correct=int(correct[i]),
            accuracy=float(correct[i] / n[i]) if n[i] else None,
            ci_low=None if n[i] == 0 else float(low[i]),
            ci_high=None if n[i] == 0 else float(high[i]),
            incomplete=int(incomplete[i]),
        )
        if pe is not None:
            row["parse_errors"] = int(pe[i])
        rows.append(row)
    return rows


def _sort_key(keys: Sequence[str]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        out = []
        for k in keys:
            v = row.get(k)
            out.append((v is None, str(type(v).__name__) if v is not None else "", v if v is not None else 0))
        return tuple(out)

    return key


def accuracy_table(
    table: pa.Table,
    by: Sequence[str] = (),
    *,
    samples: Iterable[Sample] | None = None,
    benchmark: str | None = None,
    models: Sequence[str] | None = None,
    per_window: bool = False,
    unmatched: str = "error",
    confidence: float = 0.95,
) -> ResultTable:
    """Accuracy with Wilson intervals per benchmark x model x condition (x ``by`` fields).

    ``table`` is a pyarrow Table in the tidy schema; ``samples`` (the benchmark's Samples) are
    needed only for ``by`` fields the predictions lack; ``benchmark`` restricts the rows to one
    benchmark (and joins samples on ``sample_id`` alone). Rows: ``benchmark, model, strategy,
    mode`` (+ varying condition columns, + ``window`` with ``per_window``), the ``by`` fields,
    ``n, correct, accuracy, ci_low, ci_high, incomplete`` (+ ``parse_errors``). Groups with no
    prediction are omitted. See the module docstring for every rule.
    """
    by = list(by)
    if "window" in by:
        per_window = True
        by.remove("window")
    work, cond, by_cols, n_unmatched = _prepare(table, by, samples, benchmark, models, unmatched)
    agg, keys = _aggregate(work, cond, by_cols, per_window)
    has_pe = "parse_error" in work.column_names
    every = _rows_from(agg, keys, confidence, has_pe)
    rows = sorted((r for r in every if r["n"] > 0), key=_sort_key(keys))
    empty = [r for r in every if r["n"] == 0]
    if not rows:
        from tempcore.diagnostics.table import TableError

        raise TableError(
            f"no accuracy to report: the {work.num_rows} row(s) selected give no complete group"
            + (f" ({sum(r['incomplete'] for r in empty)} incomplete oracle sample(s))" if empty else "")
        )
    columns = keys + ["n", "correct", "accuracy", "ci_low", "ci_high", "incomplete"] + (
        ["parse_errors"] if has_pe else []
    )
    notes = [f"Wilson {confidence:.0%} intervals; parse failures count as wrong"]
    if any(r["strategy"] == _ORACLE for r in rows):
        notes.append("oracle: a sample counts as solved when any window is answered correctly")
    if n_unmatched:
        notes.append(f"{n_unmatched} sample(s) not in the annotations are grouped under a null field value")
    if empty:
        notes.append(
            f"{len(empty)} group(s) omitted: every sample in them is an incomplete oracle "
            f"({sum(r['incomplete'] for r in empty)} in all)"
        )
    return ResultTable(
        name="accuracy",
        title="Accuracy" + (f" by {', '.join(by_cols)}" if by_cols else ""),
        columns=columns,
        rows=rows,
        notes=notes,
        percent=("accuracy", "ci_low", "ci_high"),
        meta={"unmatched_samples": n_unmatched, "confidence": confidence},
    )


def nextqa_official(
    table: pa.Table,
    samples: Iterable[Sample] | None = None,
    *,
    benchmark: str | None = "nextqa",
    by: Sequence[str] = (),
    models: Sequence[str] | None = None,
    type_field: str = "type",
    unmatched: str = "error",
    confidence: float = 0.95,
) -> ResultTable:
    """NExT-QA's official grouping: per question type (TP merged into TN), C / T / D totals, overall.

    The type comes from the predictions' ``type_field`` column if present, else from the samples'
    metadata. Rows carry ``type`` (CW, CH, TN, TC, DC, DL, DO, C, T, D or ``all``), ``type_name``
    (the official labels Why, How, Bef&Aft, When, Cnt, Loc, Other, Acc_C, Acc_T, Acc_D, All) and
    ``level`` (``type``, ``family``, ``overall``). Families and overall pool the counts of their
    types, as the official script does (not a mean of type accuracies). ``benchmark=None`` uses
    every row of the table.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from tempcore.diagnostics.stats import wilson_interval

    by = [b for b in by if b != type_field]
    work, cond, by_cols, n_unmatched = _prepare(table, [*by, type_field], samples, benchmark, models, unmatched)
    types = work.column(type_field).cast(pa.string())
    merged = pc.if_else(pc.equal(types, "TP"), "TN", types)
    valid = pc.is_in(merged, value_set=pa.array(list(NEXTQA_TYPES)))
    bad = pc.invert(pc.fill_null(valid, False))
    if unmatched == "keep":
        bad = pc.and_(bad, pc.is_valid(merged))  # unmatched samples stay as a null type
    if pc.any(bad).as_py():
        odd = sorted({str(v) for v in pc.unique(pc.filter(types, bad)).to_pylist()})
        raise AccuracyError(
            f"NExT-QA question type(s) {odd} are not official types (CW, CH, TN, TC, TP, DC, DL, DO)"
        )
    work = work.set_column(work.column_names.index(type_field), type_field, merged)
    agg, keys = _aggregate(work, cond, by_cols, per_window=False)
    base = [k for k in keys if k != type_field]
    rows = _rows_from(agg, keys, confidence, "parse_error" in work.column_names)
    groups: dict[tuple[Any, ...], dict[str | None, dict[str, int]]] = {}  # type None: no question type
    for r in rows:
        g = groups.setdefault(tuple(r[k] for k in base), {})
        g[r[type_field]] = {"n": r["n"], "correct": r["correct"], "incomplete": r["incomplete"]}
    out = []
    order = [*NEXTQA_TYPES, "C", "T", "D", "all"]
    for gkey in sorted(groups, key=lambda t: tuple((v is None, str(v)) for v in t)):
        per_type = groups[gkey]
        pooled: dict[str, dict[str, int]] = {}
        for code in order:
            if code in NEXTQA_TYPES:
                members = [code]
            elif code == "all":
                members = list(NEXTQA_TYPES)
            else:
                members = [t for t in NEXTQA_TYPES if t[0] == code]
            got = [per_type[t] for t in members if t in per_type]
            if not got:
                continue
            pooled[code] = {k: sum(x[k] for x in got) for k in ("n", "correct", "incomplete")}
        if None in per_type:
            pooled["unknown"] = per_type[None]
        for code, c in pooled.items():
            if c["n"] == 0:
                continue
            low, high = wilson_interval(c["correct"], c["n"], confidence)
            row = dict(zip(base, gkey))
            level = "type" if code in NEXTQA_TYPES else "overall" if code == "all" else (
                "unknown" if code == "unknown" else "family")
            row.update(
                {type_field: None if code == "unknown" else code,
                 "type_name": NEXTQA_NAMES.get(code, "unknown"), "level": level,
                 "n": c["n"], "correct": c["correct"],
                 "accuracy": c["correct"] / c["n"] if c["n"] else None,
                 "ci_low": None if c["n"] == 0 else float(low), "ci_high": None if c["n"] == 0 else float(high),
                 "incomplete": c["incomplete"]}
            )
            out.append(row)
    columns = base + [type_field, "type_name", "level", "n", "correct", "accuracy", "ci_low", "ci_high", "incomplete"]
    notes = [
        "NExT-QA official grouping: TP merged into TN; C, T, D and All pool their types' counts",
        f"Wilson {confidence:.0%} intervals; parse failures count as wrong",
    ]
    if n_unmatched:
        notes.append(f"{n_unmatched} sample(s) not in the annotations are reported under level 'unknown'")
    return ResultTable(
        name="accuracy_nextqa_official",
        title="NExT-QA accuracy by question type (official grouping)",
        columns=columns,
        rows=out,
        notes=notes,
        percent=("accuracy", "ci_low", "ci_high"),
        meta={"unmatched_samples": n_unmatched, "confidence": confidence},
    )


def check_no_duplicates(table: pa.Table) -> None:
    """Raise :class:`AccuracyError` when a prediction appears twice (see the module doc)."""
    _check_columns(table)
    _check_duplicates(blank_rotation_is_zero(table))


def accuracy_groups_json(result: ResultTable) -> dict[str, Any]:
    """The ``tempcore accuracy --json`` object: ``{"groups": [...], ...}``."""
    return {
        "groups": [{c: _json_value(r.get(c)) for c in result.columns} for r in result.rows],
        "notes": list(result.notes),
        **{k: _json_value(v) for k, v in result.meta.items()},
    }


__all__ = [
    "CONDITION_COLUMNS",
    "NEXTQA_NAMES",
    "NEXTQA_TYPES",
    "AccuracyError",
    "ResultTable",
    "accuracy_groups_json",
    "accuracy_table",
    "blank_rotation_is_zero",
    "check_no_duplicates",
    "condition_columns",
    "group_codes",
    "nextqa_official",
    "sample_field_columns",
]
