"""The diagnostics kernel: columns of a tidy predictions table as integer codes and masks.

Every analysis of :mod:`tempcore.diagnostics` starts by turning Arrow columns (``benchmark``,
``sample_id``, ``model``, ``strategy``, condition columns, group fields) into dense integer codes
and boolean row masks; this module holds those conversions, one function per numbering:

* :func:`identifier_codes` — codes in the column's dictionary order (a plain column: order of first
  occurrence), no nulls allowed; in the codes' own integer width.
* :func:`dictionary_codes` — the same numbering with nulls as a value of their own (the last code).
* :func:`value_codes` — codes of the *values* (a dictionary column decoded first) by first
  occurrence over the rows, nulls a value of their own; int64, the values as an Arrow array.
* :func:`column_codes` — :func:`value_codes` with fast paths for large columns (one value, a sorted
  column coded from its runs, chunks with small dictionaries), whose numbering may differ (sorted,
  or the dictionaries' order): for counting, where only the partition matters.
* :func:`combine_codes` — dense codes of a combination of code arrays.
* masks: :func:`equal_mask`, :func:`null_mask`; column facts: :func:`distinct`,
  :func:`is_constant`, :func:`constant_value`, :func:`in_dictionary`; numbers: :func:`integers`,
  :func:`chunk_views` (numpy views of a column's chunks).

Where the order or dtype of codes reaches an output (the order of rows, a sort), the analysis picks
the numbering it needs; nothing here reorders silently. pyarrow is imported inside the functions
(``import tempcore`` stays light); numpy at the top.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.errors import TempcoreError

if TYPE_CHECKING:
    import pyarrow as pa


class DiagnosticsError(TempcoreError):
    """The predictions cannot give the asked-for score (missing column, ambiguous condition...)."""


def unify_dictionaries(table: pa.Table) -> pa.Table:
    """``table.unify_dictionaries()``, column by column and only where the chunks do not already share
    one dictionary (a Parquet file's big ``sample_id`` dictionary usually is shared; rebuilding it costs)."""
    import pyarrow as pa

    for i, col in enumerate(table.columns):
        if pa.types.is_dictionary(col.type) and col.num_chunks > 1:
            first = col.chunk(0).dictionary
            if not all(c.dictionary.equals(first) for c in col.chunks[1:]):
                name = table.column_names[i]
                table = table.set_column(i, table.schema.field(i),
                                         pa.Table.from_arrays([col], [name]).unify_dictionaries().column(0))
    return table


# --- facts about a column ---------------------------------------------------------------------


def distinct(column: Any) -> list[Any]:
    """Distinct non-null values of a pyarrow column, sorted (as text when types differ)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks else pa.array([], type=column.type)
    if pa.types.is_dictionary(column.type):
        # the used dictionary entries (unique of the small integer codes), not a cast of every row
        column = column.dictionary.take(pc.unique(column.indices).drop_null())
    return sorted(pc.unique(column).drop_null().to_pylist(), key=lambda v: (str(type(v)), v))


def in_dictionary(column: Any, value: str) -> bool:
    """``False`` when ``column`` is a dictionary column none of whose chunks' dictionaries holds
    ``value`` (so no row equals it: no mask over the rows needed); ``True`` otherwise (maybe)."""
    import pyarrow as pa

    if not pa.types.is_dictionary(column.type):
        return True
    return any(value in c.dictionary.to_pylist() for c in column.chunks)


def is_constant(column: Any) -> bool:
    """Whether a pyarrow column holds one value (or only nulls), checked cheaply; ``False`` when in
    doubt (a text column that is not dictionary-coded)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.null_count == len(column):
        return True
    if column.null_count:
        return False
    if pa.types.is_dictionary(column.type):
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        return all(len(c.dictionary) <= 1 for c in chunks) and len({c.dictionary[0].as_py() for c in chunks
                                                                     if len(c)}) <= 1
    if pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
        mm = pc.min_max(column)
        return bool(mm["min"].as_py() == mm["max"].as_py())
    return False


def constant_value(col: Any) -> Any:
    """The one-value array of a column (no nulls) that holds a single value, else ``None``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    if not chunks:
        return None
    if pa.types.is_dictionary(col.type):
        chunks = [c for c in chunks if len(c)]
        if not chunks:
            return None
        first = chunks[0].dictionary.take(pa.array([chunks[0].indices[0].as_py()]))
        value = first[0].as_py()
        for c in chunks:
            if len(c.dictionary) == 1:  # the usual Parquet case: a one-entry dictionary per chunk
                if c.dictionary[0].as_py() != value:
                    return None
                continue
            idx = pc.min_max(c.indices).as_py()
            if idx["min"] != idx["max"] or c.dictionary[idx["min"]].as_py() != value:
                return None
        return first
    if not (pa.types.is_integer(col.type) or pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return None
    mm = pc.min_max(col).as_py()
    if mm["min"] != mm["max"]:
        return None
    return pa.array([mm["min"]], type=col.type)


# --- masks ------------------------------------------------------------------------------------


def equal_mask(column: Any, value: Any) -> np.ndarray:
    """``pc.fill_null(pc.equal(column, value), False)`` as numpy bool; a dictionary column is
    compared on its (small) dictionary and the result gathered through the codes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(column.type):
        plain: np.ndarray = pc.fill_null(pc.equal(column, value), False).to_numpy(zero_copy_only=False)
        return plain
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = []
    for chunk in chunks:
        lut = pc.fill_null(pc.equal(chunk.dictionary, value), False).to_numpy(zero_copy_only=False)
        if not lut.any():
            parts.append(np.zeros(len(chunk), dtype=bool))
            continue
        idx = chunk.indices
        part = lut[pc.fill_null(idx, 0).to_numpy(zero_copy_only=False) if idx.null_count
                   else idx.to_numpy(zero_copy_only=False)]
        if idx.null_count:
            part &= idx.is_valid().to_numpy(zero_copy_only=False)
        parts.append(part)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)


def null_mask(column: Any) -> np.ndarray:
    """Per-row null mask of a pyarrow column, as numpy bool."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.null_count == len(column):
        return np.ones(len(column), dtype=bool)
    if column.null_count == 0:
        return np.zeros(len(column), dtype=bool)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    mask: np.ndarray = pc.is_null(column).to_numpy(zero_copy_only=False)
    return mask


# --- numbers ----------------------------------------------------------------------------------


def integers(column: Any, null: int, dtype: Any = None) -> np.ndarray:
    """A numeric pyarrow column as integer numpy (its own width, or ``dtype``: an integer column
    without nulls is then written chunk by chunk into it, no wide copy), nulls as ``null`` (floats
    rounded)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if dtype is not None and column.null_count == 0 and pa.types.is_integer(column.type):
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        narrow = np.empty(len(column), dtype=dtype)
        at = 0
        for chunk in chunks:
            narrow[at:at + len(chunk)] = chunk.to_numpy(zero_copy_only=False)  # the cast of an assignment
            at += len(chunk)
        return narrow
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks else pa.array([], type=pa.int64())
    if pa.types.is_null(column.type):
        return np.full(len(column), null, dtype=np.int64)
    if pa.types.is_floating(column.type):
        column = pc.round(column)
    if column.null_count:
        column = pc.fill_null(column.cast(pa.int64()), null)
    out: np.ndarray = column.to_numpy(zero_copy_only=False)
    return out if np.issubdtype(out.dtype, np.integer) else out.astype(np.int64)  # int8 stays int8: no copy


def chunk_views(column: Any) -> list[tuple[int, int, np.ndarray]] | None:
    """``(start, stop, values)`` per chunk of an integer column without nulls, or of the indices of
    a dictionary column without nulls whose chunks share one dictionary: numpy views of the
    chunks' own buffers, so per-row work runs chunk by chunk (cache-sized, nothing the size of the
    column allocated). ``None`` for any other column (the caller takes the general path)."""
    import pyarrow as pa

    if column.null_count:
        return None
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    if pa.types.is_dictionary(column.type):
        if chunks and not all(c.dictionary.equals(chunks[0].dictionary) for c in chunks[1:]):
            return None
        arrays = [c.indices for c in chunks]
    elif pa.types.is_integer(column.type):
        arrays = list(chunks)
    else:
        return None
    out, at = [], 0
    for a in arrays:
        out.append((at, at + len(a), a.to_numpy(zero_copy_only=False)))
        at += len(a)
    return out


def cpu_count() -> int:
    """The CPUs this process may run on."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# --- codes ------------------------------------------------------------------------------------


def identifier_codes(column: Any) -> tuple[np.ndarray, list[Any]]:
    """Codes of an identifier column (no nulls: :class:`DiagnosticsError`) and its distinct values:
    the dictionary's order for a dictionary column (its chunks' dictionaries unified), else the order
    of first occurrence. The codes keep their own integer width (int32 for Arrow's dictionaries): a
    chunked dictionary column whose chunks share one dictionary has its chunks' indices copied into
    one int32 array (no concatenation that compares the dictionaries again)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else []
    if chunks and pa.types.is_dictionary(column.type) and not column.null_count:
        first = chunks[0].dictionary
        if all(c.dictionary.equals(first) for c in chunks[1:]):
            codes = np.empty(len(column), dtype=np.int32)
            at = 0
            for c in chunks:
                codes[at:at + len(c)] = c.indices.to_numpy(zero_copy_only=False)
                at += len(c)
            return codes, first.to_pylist()
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    if column.null_count:
        raise DiagnosticsError("identifier columns (benchmark, sample_id, model) may not contain nulls")
    return column.indices.to_numpy(zero_copy_only=False), column.dictionary.to_pylist()


def dictionary_codes(column: Any) -> tuple[np.ndarray, list[Any]]:
    """Codes per row in the numbering of :func:`identifier_codes` (dictionary order, else first
    occurrence), nulls encoded as a value of their own (``None``, the last code), and the values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = column
    if isinstance(col, pa.ChunkedArray) and col.num_chunks and pa.types.is_dictionary(col.type) and \
            all(c.dictionary.equals(col.chunk(0).dictionary) for c in col.chunks[1:]):
        # chunks sharing one dictionary (a Parquet file's): their indices copied into one array
        values = col.chunk(0).dictionary.to_pylist()
        out = np.empty(len(col), dtype=np.int32)
        at = 0
        for c in col.chunks:
            idx = c.indices
            out[at:at + len(c)] = (pc.fill_null(idx, len(values)) if idx.null_count else idx).to_numpy(
                zero_copy_only=False)
            at += len(c)
        return out, values + [None] if col.null_count else values
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks else pa.array([], type=col.type)
    if pa.types.is_dictionary(col.type):
        values = col.dictionary.to_pylist()
        idx = col.indices
        codes = pc.fill_null(idx, len(values)).to_numpy(zero_copy_only=False)  # int32 kept: no 5M-row copy
        if idx.null_count:
            values = values + [None]
        return codes, values
    if pa.types.is_null(col.type):
        return np.zeros(len(col), dtype=np.int64), [None]
    enc = pc.dictionary_encode(col, null_encoding="encode")
    return enc.indices.to_numpy(zero_copy_only=False), enc.dictionary.to_pylist()


def value_codes(column: Any) -> tuple[np.ndarray, pa.Array]:
    """int64 codes of the values of a column by first occurrence over the rows (a dictionary column
    decoded first; nulls a value of their own, numbered where they first occur) and the values as an
    Arrow array (a null column: one null value, none when empty)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = column
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks else pa.array([], type=col.type)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if pa.types.is_null(col.type):
        return np.zeros(len(col), np.int64), pa.nulls(1 if len(col) else 0)
    enc = pc.dictionary_encode(col, null_encoding="encode")
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary


def _is_text(t: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                or pa.types.is_large_binary(t))


def sorted_runs(c: np.ndarray, card: int) -> np.ndarray | None:
    """The first position of each code when ``c`` is non-decreasing and takes every value of
    ``0..card-1`` (codes of a sorted column: contiguous runs), else ``None``. ``c`` itself when it is
    ``0, 1, ..., n-1`` (no copy)."""
    n = c.size
    if n == 0 or card < 1 or int(c[0]) != 0 or int(c[-1]) != card - 1:
        return None
    if not bool((c[1:] >= c[:-1]).all()):
        return None
    change = c[1:] != c[:-1]
    k = int(np.count_nonzero(change))
    if k != card - 1:  # a step larger than one: some code in between is absent
        return None
    if card == n:
        return c  # 0..n-1: each row the first of its own code
    first = np.empty(card, dtype=np.int64)
    first[0] = 0
    first[1:] = np.flatnonzero(change) + 1
    return first


def column_codes(col: Any, *, runs_above: int, need_values: bool = True) -> tuple[np.ndarray, Any]:
    """Dense integer codes of a column (nulls get a code of their own) and the value of each code.

    Codes are numbered by first occurrence (:func:`value_codes`), by the dictionary, or in sorted
    order (a sorted text column of more than ``runs_above`` rows: codes from its runs, ``0..n-1``
    when every value differs); int32 or int64. ``need_values=False``: the caller only counts the
    values; a sorted column may then return a range of that length instead of them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(col)
    big = n > runs_above and col.null_count == 0
    if big and (not _is_text(col.type) or col[0].as_py() == col[-1].as_py()):
        # one value in every row (a model, a strategy, a K): no per-row codes to compute
        # (np.zeros is lazily zeroed memory); a text column whose ends differ is not even tried
        one = constant_value(col)
        if one is not None:
            return np.zeros(n, np.int64), one
    if big and _is_text(col.type):
        # a sorted column (a store export is in key order): codes from runs of equal values, no
        # hashing (and no copy of a chunked column)
        head, tail = col.slice(0, n - 1), col.slice(1)
        wide = np.int32 if n < 2**31 else np.int64  # narrow: fewer pages to touch
        less = pc.less(head, tail)
        if pc.all(less).as_py():  # strictly increasing: every row its own value, in order
            return np.arange(n, dtype=wide), col
        same = pc.equal(head, tail)
        if pc.all(pc.or_(less, same)).as_py():
            change = pc.invert(same).to_numpy(zero_copy_only=False)
            codes = np.empty(n, dtype=wide)
            codes[0] = 0
            np.cumsum(change.view(np.int8), out=codes[1:], dtype=wide)
            if not need_values:
                return codes, range(int(codes[-1]) + 1)
            starts = np.concatenate([[True], change])
            return codes, col.filter(pa.array(starts))
    if isinstance(col, pa.ChunkedArray) and pa.types.is_dictionary(col.type):
        if col.num_chunks and sum(len(c.dictionary) for c in col.chunks) <= runs_above:
            return _small_dictionary_codes(col)
        col = col.unify_dictionaries()
        if col.num_chunks == 0:
            return np.zeros(0, np.int64), pa.array([], type=col.type.value_type)
        dictionary = col.chunk(0).dictionary
        indices = np.concatenate(
            [pc.fill_null(c.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64) for c in col.chunks]
        )
        dedup = pc.dictionary_encode(dictionary)
        remap = dedup.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        values = dedup.dictionary
        codes = remap[np.maximum(indices, 0)] if remap.size else np.zeros(indices.size, np.int64)
        if (indices < 0).any():
            codes[indices < 0] = len(values)
            values = pa.concat_arrays([values, pa.nulls(1, type=values.type)])
        return codes, values
    return value_codes(col)


def _small_dictionary_codes(col: Any) -> tuple[np.ndarray, Any]:
    """:func:`column_codes` of a chunked dictionary column whose chunks carry small dictionaries (a
    Parquet file's row groups): each chunk's indices mapped through a lookup table of its dictionary,
    written in place (no unified copy of the column). The values are those of the unified dictionary,
    in the same order (first occurrence over the chunks' dictionaries), a null last when there are nulls."""
    import pyarrow as pa
    import pyarrow.compute as pc

    dictionaries = [c.dictionary for c in col.chunks]
    dedup = pc.dictionary_encode(pa.concat_arrays(dictionaries))
    lut_all = dedup.indices.to_numpy(zero_copy_only=False).astype(np.int32)
    values = dedup.dictionary
    null_code = len(values)
    codes = np.empty(len(col), dtype=np.int32)
    at = start = 0
    for c, d in zip(col.chunks, dictionaries):
        lut = lut_all[start:start + len(d)]
        start += len(d)
        if len(c) == 0:
            continue
        idx = c.indices
        part = codes[at:at + len(c)]
        if idx.null_count:
            filled = pc.fill_null(idx, 0).to_numpy(zero_copy_only=False)
            part[:] = lut[filled] if lut.size else null_code
            part[~idx.is_valid().to_numpy(zero_copy_only=False)] = null_code
        else:
            part[:] = lut[idx.to_numpy(zero_copy_only=False)]
        at += len(c)
    if col.null_count:
        values = pa.concat_arrays([values, pa.nulls(1, type=values.type)])
    return codes, values


def combine_codes(
    codes: Sequence[np.ndarray], cards: Sequence[int], n: int, *, runs_above: int, need_first: bool = True
) -> tuple[np.ndarray, int, np.ndarray]:
    """Dense ids of the combination of code arrays (``cards``: each array's number of codes), their
    number, and the first position of each id (an empty array when not ``need_first``). The ids
    follow the order of the combined key (the first array most significant).

    Small key ranges are densified with a bincount (O(n)); large ones with ``np.unique``; one varying
    code array of more than ``runs_above`` sorted codes gives its first positions from its runs.
    """
    keep = [(c, int(card)) for c, card in zip(codes, cards) if int(card) > 1]
    if not keep and n:  # every code constant: one id
        return np.zeros(n, np.int64), 1, np.zeros(1, np.int64)
    if len(keep) == 1 and n:
        # one varying code: dense already when every code occurs (then no remapping is needed)
        c, card = keep[0]
        if n > runs_above:
            first_of_run = sorted_runs(c, card)  # sorted codes: first positions without a scatter
            if first_of_run is not None:
                return c, card, first_of_run if need_first else np.zeros(0, np.int64)
        counts = np.bincount(c, minlength=card)
        if counts.size == card and (counts > 0).all():
            if not need_first:
                return c, card, np.zeros(0, np.int64)
            first = np.empty(card, dtype=np.int64)
            first[c[::-1]] = np.arange(n - 1, -1, -1)
            return c, card, first
    combined = np.zeros(n, dtype=np.int64)
    radix = 1
    for c, card in keep:
        card = max(int(card), 1)
        if radix * card >= 2**62:
            _, combined = np.unique(combined, return_inverse=True)
            combined = combined.astype(np.int64).ravel()
            radix = int(combined.max()) + 1 if n else 1
        combined = combined * card + c
        radix *= card
    if n == 0:
        return combined, 0, np.zeros(0, np.int64)
    if radix <= max(4 * n, 1 << 16):
        present = np.bincount(combined, minlength=radix) > 0
        remap = np.cumsum(present) - 1
        ids = remap[combined]
        k = int(present.sum())
    else:
        _, ids = np.unique(combined, return_inverse=True)
        ids = ids.astype(np.int64).ravel()
        k = int(ids.max()) + 1
    if not need_first:
        return ids, k, np.zeros(0, np.int64)
    first = np.empty(k, dtype=np.int64)
    first[ids[::-1]] = np.arange(n - 1, -1, -1)
    return ids, k, first


__all__ = [
    "DiagnosticsError",
    "chunk_views",
    "column_codes",
    "combine_codes",
    "constant_value",
    "cpu_count",
    "dictionary_codes",
    "distinct",
    "equal_mask",
    "identifier_codes",
    "in_dictionary",
    "integers",
    "is_constant",
    "null_mask",
    "sorted_runs",
    "unify_dictionaries",
    "value_codes",
]
