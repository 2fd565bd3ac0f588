"""The tidy predictions table as (condition x sample x model) arrays, for the TVBench ablations.

:func:`prepare` arranges a table's rows of the asked conditions (``strategy`` values: the video
condition, e.g. ``uniform``, and the ablations ``textonly``, ``noframe``, ``single``, ``shuffled``,
``reversed``) into a :class:`Prepared`: per (condition, sample, model) the paper's 0/1 ``correct``
(a parse failure is wrong) and the chosen option, plus each sample's task and option count.
:func:`encode` is :meth:`~tempcore.diagnostics.table.EncodedPredictions.from_table` with narrower
codes. The analyses over these arrays are in :mod:`tempcore.diagnostics.ablations` and
:mod:`tempcore.diagnostics.ordering`.

Rows used: ``rotation`` 0 (or none) and no oracle ``window``. Within a condition, a column among
``k, mode, encoder, fps, seed, variant`` taking several values is an error naming them (choose with
``filters``), never silently pooled; a (sample, model, condition) given twice is an error; a
missing ``correct`` is an error; a task column taking two values for one sample is an error.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.diagnostics.kernel import (
    chunk_views,
    dictionary_codes,
    identifier_codes,
    integers,
    is_constant,
    null_mask,
    unify_dictionaries,
)
from tempcore.diagnostics.kernel import cpu_count as _cpu_count
from tempcore.diagnostics.table import DiagnosticsError, EncodedPredictions, builtin_strategy_name
from tempcore.records import BUILT_IN_STRATEGIES

if TYPE_CHECKING:
    import pyarrow as pa

ABLATIONS = ("textonly", "noframe", "single", "shuffled", "reversed")
"""The ablation conditions of TVBench (plus the grey-frame ``noframe``), after the video condition."""
REORDERINGS = ("shuffled", "reversed")
_BUILT_IN_CONDITIONS = BUILT_IN_STRATEGIES
"""Built-in strategies (registered under exactly these names, so every strategy-name rule returns
them unchanged; ``tests/test_ablations.py`` checks it): a table using only these needs no count."""
_AMBIGUOUS = ("k", "mode", "encoder", "fps", "seed", "variant")


@dataclass
class Prepared:
    """The table as (condition x sample x model) arrays: ``correct`` (NaN: no row) and ``answer``
    (the chosen option index; -1 parse failure; -2 no row), plus per-sample task and option counts."""

    enc: EncodedPredictions
    conditions: list[str]
    correct: np.ndarray  # (C, S, M) float32 (0 / 1 / NaN)
    answer: np.ndarray  # (C, S, M) int16
    task_code: np.ndarray  # (S,) index into tasks
    tasks: list[Any]
    n_options: np.ndarray  # (S,) float64, NaN unknown

    @property
    def models(self) -> list[str]:
        return self.enc.models

    @functools.cached_property
    def benchmarks(self) -> np.ndarray:
        """The benchmark of each sample (an object array, built once)."""
        return np.asarray(self.enc.sample_benchmark, dtype=object)


def encode(table: pa.Table) -> EncodedPredictions:
    """:meth:`EncodedPredictions.from_table` (the same checks, canonical strategy names, samples and
    models in the same order and the same codes) with the per-row codes kept narrow (int32 when every
    (sample, model) cell fits) and the per-sample lists taken without a Python loop over the rows:
    fewer bytes written per row, which is most of the time on millions of rows."""
    from tempcore.diagnostics.table import REQUIRED_COLUMNS, prepare_table

    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise DiagnosticsError(f"predictions table lacks column(s) {missing}")
    table = unify_dictionaries(table)
    if not _strategies_canonical(table):
        table = prepare_table(table)  # renames the strategies, or raises on a near miss
    model_codes, models = identifier_codes(table.column("model"))
    fast = _pairs_by_chunk(table, len(models))
    if fast is not None:
        sample_code, sample_benchmark, sample_ids = fast
        return EncodedPredictions(table, sample_code, model_codes, sample_benchmark, sample_ids, models)
    bench_codes, benches = identifier_codes(table.column("benchmark"))
    id_codes, ids = identifier_codes(table.column("sample_id"))
    width = max(len(ids), 1)
    n_pairs = max(len(benches), 1) * width
    wide = np.int32 if n_pairs * max(len(models), 1) < 2**31 else np.int64
    if len(benches) <= 1:
        combined = id_codes
    else:
        combined = bench_codes.astype(wide)
        combined *= width
        combined += id_codes
    present = np.zeros(n_pairs, dtype=bool)  # the (benchmark, sample_id) pairs present, numbered in order
    present[combined] = True
    uniq = np.flatnonzero(present)
    number = np.cumsum(present, dtype=wide) - 1
    sample_code = number[combined]
    sample_benchmark = np.asarray(benches, dtype=object)[uniq // width].tolist() if len(benches) else []
    sample_ids = np.asarray(ids, dtype=object)[uniq % width].tolist() if ids else []
    return EncodedPredictions(table, sample_code.astype(wide, copy=False), model_codes.astype(wide, copy=False),
                              sample_benchmark, sample_ids, models)


def _pairs_by_chunk(table: pa.Table, n_models: int) -> tuple[np.ndarray, list[str], list[str]] | None:
    """The sample code per row and the per-sample lists of :func:`encode`, chunk by chunk, when
    ``benchmark`` and ``sample_id`` are dictionary columns whose chunks share one dictionary and
    have no nulls (a Parquet file's): the (benchmark, sample_id) pairs present are marked in a
    bitmap and numbered in order, as ``encode`` does, without column-sized code arrays. ``None``
    otherwise."""
    bench_views = chunk_views(table.column("benchmark"))
    id_views = chunk_views(table.column("sample_id"))
    if bench_views is None or id_views is None or not table.num_rows or \
            [(a, b) for a, b, _ in bench_views] != [(a, b) for a, b, _ in id_views]:
        return None
    benches = table.column("benchmark").chunk(0).dictionary.to_pylist()
    ids = table.column("sample_id").chunk(0).dictionary.to_pylist()
    width = max(len(ids), 1)
    n_pairs = max(len(benches), 1) * width
    wide = np.int32 if n_pairs * max(n_models, 1) < 2**31 else np.int64
    present = np.zeros(n_pairs, dtype=bool)
    for (_, _, bench), (_, _, sid) in zip(bench_views, id_views):
        present[bench.astype(wide) * width + sid] = True
    uniq = np.flatnonzero(present)
    number = np.cumsum(present, dtype=wide) - 1
    sample_code = np.empty(table.num_rows, dtype=wide)
    for (a, b, bench), (_, _, sid) in zip(bench_views, id_views):
        sample_code[a:b] = number[bench.astype(wide) * width + sid]
    sample_benchmark = np.asarray(benches, dtype=object)[uniq // width].tolist()
    sample_ids = np.asarray(ids, dtype=object)[uniq % width].tolist()
    return sample_code, sample_benchmark, sample_ids


def _strategies_canonical(table: pa.Table) -> bool:
    """Whether every strategy name used in ``table`` is already canonical (then
    :func:`~tempcore.diagnostics.table.prepare_table` returns the table unchanged). The used names
    of a dictionary column are read from a count of each chunk's small integer codes (no unique
    over every row); ``False`` (let ``prepare_table`` decide) for any other column or a doubt."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "strategy" not in table.column_names:
        return True
    col = table.column("strategy")
    if not pa.types.is_dictionary(col.type):
        return False
    entries = {str(v) for c in col.chunks for v in c.dictionary.to_pylist() if v is not None}
    if entries <= _BUILT_IN_CONDITIONS:
        return True  # every dictionary entry (so every used name) is a built-in strategy: no count needed
    used: set[Any] = set()
    for chunk in col.chunks:
        idx = chunk.indices
        if idx.null_count:
            idx = pc.drop_null(idx)
        if len(idx) == 0 or len(chunk.dictionary) == 0:
            continue
        seen = np.bincount(idx.to_numpy(zero_copy_only=False), minlength=len(chunk.dictionary)) > 0
        entries = chunk.dictionary.to_pylist()
        used.update(entries[i] for i in np.flatnonzero(seen).tolist())
    names = {str(v) for v in used if v is not None} - _BUILT_IN_CONDITIONS
    return all(builtin_strategy_name(v) == v for v in names)


def prepare(
    table: pa.Table | EncodedPredictions,
    conditions: Sequence[str],
    *,
    by: str | None = None,
    task_of_sample: Mapping[tuple[str, str], Any] | None = None,
    n_options_of_sample: Mapping[tuple[str, str], int] | None = None,
    filters: Mapping[str, Mapping[str, Any]] | None = None,
) -> Prepared:
    """Arrange ``table``'s rows of ``conditions`` (strategy names) into per-condition matrices.

    ``by``: the column giving each sample's task (default: ``task`` when the table has it, else each
    benchmark is one task, ``None``); ``task_of_sample`` (``{(benchmark, sample_id): task}``, e.g.
    from the annotations) takes precedence. ``n_options_of_sample`` likewise for the option counts
    (default: the ``n_options`` column; unknown otherwise, and chance levels are then ``None``).
    ``filters``: ``{condition: {column: value}}`` to pick one value of an ambiguous column.
    """
    import pyarrow as pa

    if not isinstance(table, EncodedPredictions):
        fused = _prepare_by_chunk(table, conditions, by=by, task_of_sample=task_of_sample,
                                  n_options_of_sample=n_options_of_sample, filters=filters)
        if fused is not None:
            return fused
    enc = table if isinstance(table, EncodedPredictions) else encode(table)
    t = enc.table
    conditions = list(dict.fromkeys(conditions))
    n_rows = t.num_rows
    n_c, n_s, n_m = len(conditions), enc.n_samples, len(enc.models)
    wide = np.int32 if n_c * n_s * n_m < 2**31 else np.int64  # the cell index of a row
    strategy = t.column("strategy")
    views = chunk_views(strategy) if pa.types.is_dictionary(strategy.type) and n_rows else None
    if views is not None:  # the condition of each row, chunk by chunk through the dictionary
        s_values = strategy.chunk(0).dictionary.to_pylist()
        lookup = _condition_lookup(s_values, conditions, wide)
        cond: np.ndarray = np.empty(n_rows, dtype=wide)
        for a, b, idx in views:
            cond[a:b] = lookup[idx]
    else:
        s_codes, s_values = dictionary_codes(t.column("strategy"))
        lookup = _condition_lookup(s_values, conditions, wide)
        cond = lookup[s_codes] if n_rows else np.empty(0, dtype=wide)
    keep = cond >= 0
    if "rotation" in t.column_names:
        keep &= enc.rotations() == 0
    keep &= null_mask(t.column("window"))
    filters = dict(filters or {})
    for c, flt in filters.items():
        if c not in conditions:
            continue
        mask = enc.rows(c, None, flt)
        keep &= ~(cond == conditions.index(c)) | mask
    _check_unambiguous(enc, cond, keep, conditions, filters)
    every = bool(keep.all())
    rows: Any = _Identity() if every else np.flatnonzero(keep)  # the row of each kept position
    pick: Any = slice(None) if every else rows  # no gathers (and no arange) when every row is used
    # ((condition * S) + sample) * M + model, in place (on cond itself when every row is used: the
    # condition of a row is then cell // (S * M))
    cell = cond if every and cond.dtype == wide else cond[pick].astype(wide)
    cell *= n_s
    cell += enc.sample_code[pick]
    cell *= n_m
    cell += enc.model_code[pick]
    _check_duplicates(enc, cell, rows, n_s * n_m, conditions)
    correct = np.full(n_c * n_s * n_m, np.nan, dtype=np.float32)  # 0/1 exactly; small: fewer page faults
    views = chunk_views(t.column("correct")) if every else None
    if views is not None:  # chunk by chunk: no copy of the column
        for a, b, v in views:
            if (v < 0).any():
                bad = a + int(np.flatnonzero(v < 0)[0])
                raise DiagnosticsError(f"missing correct for sample {enc.sample_id[enc.sample_code[bad]]!r}")
            correct[cell[a:b]] = v
    else:
        values = integers(t.column("correct"), -1)[pick]
        if (values < 0).any():
            bad = rows[values < 0][0]
            raise DiagnosticsError(f"missing correct for sample {enc.sample_id[enc.sample_code[bad]]!r}")
        correct[cell] = values
    answer = np.full(n_c * n_s * n_m, -2, dtype=np.int16)  # option index (< 26), -1 parse failure, -2 no row
    views = chunk_views(t.column("answer")) if every and "answer" in t.column_names else None
    if views is not None:
        for a, b, v in views:
            answer[cell[a:b]] = v  # the cast of an assignment, as below
    else:
        answer[cell] = integers(t.column("answer"), -1, np.int16)[pick] if "answer" in t.column_names else -1
    task_code, tasks = _tasks(enc, by, task_of_sample)
    n_opt = _n_options(enc, n_options_of_sample)
    return Prepared(enc, conditions, correct.reshape(n_c, n_s, n_m), answer.reshape(n_c, n_s, n_m),
                    task_code, tasks, n_opt)


def _prepare_by_chunk(
    table: pa.Table,
    conditions: Sequence[str],
    *,
    by: str | None,
    task_of_sample: Mapping[tuple[str, str], Any] | None,
    n_options_of_sample: Mapping[tuple[str, str], int] | None,
    filters: Mapping[str, Mapping[str, Any]] | None,
) -> Prepared | None:
    """:func:`prepare` of a pyarrow table (after :func:`encode`'s checks) in one pass over its chunks,
    when the columns are chunked alike (a Parquet file's row groups): ``benchmark``, ``sample_id``,
    ``model`` and ``strategy`` dictionary columns whose chunks share one dictionary and have no
    nulls, integer ``correct`` (no nulls), ``answer`` and ``n_options``. Per chunk, the sample,
    model and cell of each row and the scatters of correctness, answer, task and option count run
    on cache-sized pieces (the two halves of the chunks at once where there are two CPUs); nothing
    the size of the column is built (the per-row codes of :class:`EncodedPredictions` only when
    asked for). The same arrays as the general path, with the samples and models numbered as
    :func:`encode` numbers them. ``None`` (take the general path, which also
    raises its errors) for any other table, a ``rotation`` column, an oracle window, a filter on an
    asked condition, an ambiguous column mixing values within a condition, a missing correctness,
    a duplicate cell or a task column varying within a sample."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from tempcore.diagnostics.table import REQUIRED_COLUMNS, prepare_table

    conditions = list(dict.fromkeys(conditions))
    names = table.column_names
    if any(c not in names for c in REQUIRED_COLUMNS) or "rotation" in names or not table.num_rows:
        return None
    if any(c in conditions and flt for c, flt in (filters or {}).items()):
        return None
    t = unify_dictionaries(table)
    if not _strategies_canonical(t):
        t = prepare_table(t)
    if t.column("window").null_count != t.num_rows:
        return None

    def dictionary_views(name: str) -> list[tuple[int, int, np.ndarray]] | None:
        column = t.column(name)
        return chunk_views(column) if pa.types.is_dictionary(column.type) else None

    views = {name: dictionary_views(name) for name in ("benchmark", "sample_id", "model", "strategy")}
    first = views["benchmark"]
    if first is None:
        return None
    bounds = [(a, b) for a, b, _ in first]

    def aligned(v: list[tuple[int, int, np.ndarray]] | None) -> list[np.ndarray] | None:
        return None if v is None or [(a, b) for a, b, _ in v] != bounds else [x for _, _, x in v]

    def integers(name: str, null: int) -> tuple[list[np.ndarray], bool] | None:
        column = t.column(name)
        if not pa.types.is_integer(column.type) or [len(c) for c in column.chunks] != [b - a for a, b in bounds]:
            return None
        return [(pc.fill_null(c.cast(pa.int64()), null) if c.null_count else c).to_numpy(zero_copy_only=False)
                for c in column.chunks], bool(column.null_count)

    bench_v, id_v, model_v, strat_v = (aligned(views[n]) for n in ("benchmark", "sample_id", "model", "strategy"))
    correct_c = integers("correct", -1)
    if bench_v is None or id_v is None or model_v is None or strat_v is None or correct_c is None or correct_c[1]:
        return None
    answer_c = integers("answer", -1) if "answer" in names else None
    if "answer" in names and answer_c is None:
        return None
    ambiguous: list[tuple[list[np.ndarray], list[Any], str]] = []
    for col in _AMBIGUOUS:
        if col not in names or is_constant(t.column(col)):
            continue
        col_codes = aligned(dictionary_views(col))
        if col_codes is None:
            return None
        ambiguous.append((col_codes, t.column(col).chunk(0).dictionary.to_pylist(), col))
    task_by = by if by is not None else ("task" if "task" in names else None)
    task_v = None
    if task_of_sample is None and task_by is not None and task_by in names:
        task_v = aligned(dictionary_views(task_by))
    nopt_c = integers("n_options", -1) if n_options_of_sample is None and "n_options" in names else None

    benches = t.column("benchmark").chunk(0).dictionary.to_pylist()
    ids = t.column("sample_id").chunk(0).dictionary.to_pylist()
    models = t.column("model").chunk(0).dictionary.to_pylist()
    width = max(len(ids), 1)
    n_pairs = max(len(benches), 1) * width
    wide_s = np.int32 if n_pairs * max(len(models), 1) < 2**31 else np.int64

    def pair_key(i: int) -> np.ndarray:  # benchmark * width + sample_id of chunk i (recomputed: cache-sized)
        key: np.ndarray = bench_v[i].astype(wide_s)
        key *= width
        key += id_v[i]
        return key

    present = np.zeros(n_pairs, dtype=bool)  # the (benchmark, sample_id) pairs present, numbered in order
    for i in range(len(bounds)):
        present[pair_key(i)] = True
    uniq = np.flatnonzero(present)
    number = np.cumsum(present, dtype=wide_s) - 1
    sample_benchmark = np.asarray(benches, dtype=object)[uniq // width].tolist()
    sample_ids = np.asarray(ids, dtype=object)[uniq % width].tolist()
    n_c, n_s, n_m = len(conditions), int(uniq.size), len(models)
    wide = np.int32 if n_c * n_s * n_m < 2**31 else np.int64
    lookup = _condition_lookup(t.column("strategy").chunk(0).dictionary.to_pylist(), conditions, wide)
    every_strategy = bool((lookup[:-1] >= 0).all())  # every dictionary entry is an asked condition: all rows kept
    correct = np.full(n_c * n_s * n_m, np.nan, dtype=np.float32)
    answer = np.full(n_c * n_s * n_m, -2, dtype=np.int16)
    n_opt = np.full(n_s, np.nan)
    mixes = [np.zeros(n_c * len(values), dtype=bool) for _, values, _ in ambiguous]
    n_t = 0
    if task_v is not None:  # the (sample, task) pairs present: one per sample, or the task varies
        n_t = max(len(t.column(str(task_by)).chunk(0).dictionary), 1)
        if n_s * n_t > 2**26:
            return None
        task_pairs = np.zeros(n_s * n_t, dtype=bool)

    def fill(chunks: range, n_opt_part: np.ndarray) -> int:
        """Scatter the rows of ``chunks`` (in order); the number of rows kept, -1 on a missing
        correctness. Chunks write disjoint cells (a duplicate is caught by the count below), and
        the bitmaps only ever get ``True``, so two ranges may fill at once."""
        kept = 0
        for i in chunks:
            sc = number[pair_key(i)]
            mc = model_v[i]
            if task_v is not None:
                pair = sc.astype(np.int64) if n_s * n_t >= 2**31 else sc.copy()
                pair *= n_t
                pair += task_v[i]
                task_pairs[pair] = True
            if nopt_c is not None:
                counts = nopt_c[0][i]
                if nopt_c[1]:
                    ok = counts >= 0
                    n_opt_part[sc[ok]] = counts[ok]
                else:
                    n_opt_part[sc] = counts
            cond = lookup[strat_v[i]]
            v = correct_c[0][i]
            x = answer_c[0][i] if answer_c is not None else None
            sel = None if every_strategy else cond >= 0
            if sel is not None and not sel.all():
                cond, sc, mc, v = cond[sel], sc[sel], mc[sel], v[sel]
                x = None if x is None else x[sel]
                extra = [codes[i][sel] for codes, _, _ in ambiguous]
            else:
                extra = [codes[i] for codes, _, _ in ambiguous]
            if v.size and v.min() < 0:
                return -1
            for mix, codes, (_, values, _) in zip(mixes, extra, ambiguous):
                mix[cond * len(values) + codes] = True
            cell = cond.astype(wide)  # ((condition * S) + sample) * M + model
            cell *= n_s
            cell += sc
            cell *= n_m
            cell += mc
            correct[cell] = v
            answer[cell] = -1 if x is None else x  # the cast of an assignment, as the general path
            kept += cell.size
        return kept

    if len(bounds) >= 8 and _cpu_count() >= 2:  # two halves at once (numpy's gathers and scatters release the GIL)
        from concurrent.futures import ThreadPoolExecutor

        half = len(bounds) // 2
        later_opt = np.full(n_s, np.nan)
        with ThreadPoolExecutor(1, thread_name_prefix="tempcore-prepare") as pool:
            second = pool.submit(fill, range(half, len(bounds)), later_opt)
            first_kept = fill(range(half), n_opt)
            second_kept = second.result()
        written = ~np.isnan(later_opt)  # a sample's option count from its last row, as in one pass
        n_opt[written] = later_opt[written]
        kept = -1 if min(first_kept, second_kept) < 0 else first_kept + second_kept
    else:
        kept = fill(range(len(bounds)), n_opt)
    if kept < 0:
        return None  # a missing correctness: the general path names it
    if any((mix.reshape(n_c, -1).sum(axis=1) > 1).any() for mix in mixes):
        return None  # a condition mixes values of an ambiguous column: the general path names them
    if int(np.count_nonzero(~np.isnan(correct))) != kept:
        return None  # a cell given twice: the general path names it
    if task_v is not None:
        per_sample = task_pairs.reshape(n_s, n_t)
        if (per_sample.sum(axis=1) != 1).any():
            return None  # a task varying within a sample: the general path names it
        task_code = per_sample.argmax(axis=1).astype(np.int32)

    def row_codes() -> tuple[np.ndarray, np.ndarray]:  # the per-row codes of encode, when first asked for
        sample_code = np.empty(t.num_rows, dtype=wide_s)
        model_code = np.empty(t.num_rows, dtype=np.int32)
        for i, (a, b) in enumerate(bounds):
            sample_code[a:b] = number[pair_key(i)]
            model_code[a:b] = model_v[i]
        return sample_code, model_code

    enc = _LazyCodes(t, row_codes, sample_benchmark, sample_ids, models)
    if task_v is not None:
        column = t.column(str(task_by))
        tasks: list[Any] = column.chunk(0).dictionary.to_pylist() if column.num_chunks else []
    else:
        task_code, tasks = _tasks(enc, by, task_of_sample)
    if nopt_c is None:
        n_opt = _n_options(enc, n_options_of_sample)
    return Prepared(enc, conditions, correct.reshape(n_c, n_s, n_m), answer.reshape(n_c, n_s, n_m),
                    task_code, tasks, n_opt)


class _LazyCodes(EncodedPredictions):
    """:class:`EncodedPredictions` whose per-row ``sample_code`` and ``model_code`` are computed on
    first use (by ``codes``, from the table's chunks): the analyses of the audit read the
    (condition x sample x model) arrays, not the rows, so a plain audit never builds them (two
    column-sized arrays fewer to write)."""

    def __init__(self, table: pa.Table, codes: Any, sample_benchmark: list[str], sample_id: list[str],
                 models: list[str]) -> None:  # the dataclass fields but the two codes, set by hand
        self.table = table
        self.sample_benchmark = sample_benchmark
        self.sample_id = sample_id
        self.models = models
        self._codes = codes

    def _built(self) -> tuple[np.ndarray, np.ndarray]:
        built: tuple[np.ndarray, np.ndarray] | None = self.__dict__.get("_built_codes")
        if built is None:
            built = self.__dict__["_built_codes"] = self._codes()
        return built

    @property
    def sample_code(self) -> np.ndarray:  # type: ignore[override]
        return self._built()[0]

    @property
    def model_code(self) -> np.ndarray:  # type: ignore[override]
        return self._built()[1]


def _condition_lookup(s_values: Sequence[Any], conditions: list[str], wide: Any) -> np.ndarray:
    """Per strategy code (and one more, a null's): the index of the condition, -1 when not asked for."""
    lookup = np.full(len(s_values) + 1, -1, dtype=wide)
    for i, v in enumerate(s_values):
        if v in conditions:
            lookup[i] = conditions.index(v)
    return lookup


class _Identity:
    """``np.arange(n)`` for indexing (``_Identity()[i] == i``, also for arrays), without allocating it."""

    def __getitem__(self, index: Any) -> Any:
        return np.flatnonzero(index) if isinstance(index, np.ndarray) and index.dtype == bool else index


def _check_unambiguous(enc: EncodedPredictions, cond: np.ndarray, keep: np.ndarray, conditions: list[str],
                       filters: Mapping[str, Mapping[str, Any]]) -> None:
    t = enc.table
    for col in _AMBIGUOUS:
        if col not in t.column_names:
            continue
        if is_constant(t.column(col)):
            continue
        codes, values = dictionary_codes(t.column(col))
        width = len(values)
        flat = np.zeros(len(conditions) * width, dtype=bool)  # bitmap of (condition, value): O(rows)
        flat[cond[keep] * width + codes[keep]] = True
        present = flat.reshape(len(conditions), width)
        for ci in np.flatnonzero(present.sum(axis=1) > 1):
            name = conditions[int(ci)]
            if col in filters.get(name, {}):
                continue
            seen = sorted((values[int(v)] for v in np.flatnonzero(present[ci])), key=str)
            raise DiagnosticsError(
                f"condition {name!r}: predictions mix several {col} values {seen}; choose one "
                f"(filters={{{name!r}: {{{col!r}: {seen[0]!r}}}}})"
            )


def _check_duplicates(enc: EncodedPredictions, cell: np.ndarray, rows: np.ndarray, per_condition: int,
                      conditions: list[str]) -> None:
    """Raise on a cell given twice; ``per_condition`` = S * M (a kept row's condition is its cell // that)."""
    if cell.size == 0:
        return
    filled = np.zeros(int(cell.max()) + 1, dtype=bool)
    filled[cell] = True
    if int(np.count_nonzero(filled)) != cell.size:
        order = np.argsort(cell, kind="stable")
        same = np.flatnonzero(cell[order][1:] == cell[order][:-1])
        p = order[same[0] + 1]
        r = rows[p]
        raise DiagnosticsError(
            f"duplicate predictions for sample {enc.sample_id[enc.sample_code[r]]!r} of "
            f"{enc.sample_benchmark[enc.sample_code[r]]!r}, model {enc.models[enc.model_code[r]]!r}, "
            f"condition {conditions[int(cell[p]) // per_condition]!r}"
        )


def _tasks(enc: EncodedPredictions, by: str | None,
           task_of_sample: Mapping[tuple[str, str], Any] | None) -> tuple[np.ndarray, list[Any]]:
    import pyarrow as pa

    n_s = enc.n_samples
    if task_of_sample is not None:
        values = [task_of_sample.get((b, s)) for b, s in zip(enc.sample_benchmark, enc.sample_id)]
        distinct = list(dict.fromkeys(values))
        index = {v: i for i, v in enumerate(distinct)}
        return np.array([index[v] for v in values], dtype=np.int64), distinct
    t = enc.table
    if by is None:
        by = "task" if "task" in t.column_names else None
    if by is None:
        return np.zeros(n_s, dtype=np.int64), [None]
    if by not in t.column_names:
        raise DiagnosticsError(
            f"no column {by!r} in the predictions (they have {sorted(t.column_names)}); give the annotations "
            "to take the task from the samples"
        )
    column = t.column(by)
    views = chunk_views(column) if pa.types.is_dictionary(column.type) else None
    if views is not None:  # chunk by chunk: each sample's task, then every row checked against it
        values = column.chunk(0).dictionary.to_pylist() if column.num_chunks else []
        per_sample = np.full(n_s, -1, dtype=np.int32)
        for a, b, idx in views:
            per_sample[enc.sample_code[a:b]] = idx
        r = -1
        for a, b, idx in views:
            bad = np.flatnonzero(per_sample[enc.sample_code[a:b]] != idx)
            if bad.size:
                r = a + int(bad[0])
                break
        if r < 0:
            return per_sample, values
    else:
        codes, values = dictionary_codes(t.column(by))
        per_sample = np.full(n_s, -1, dtype=codes.dtype if codes.dtype.itemsize >= 4 else np.int64)
        per_sample[enc.sample_code] = codes
        bad = np.flatnonzero(per_sample[enc.sample_code] != codes)
        r = int(bad[0]) if bad.size else -1
    if r >= 0:
        raise DiagnosticsError(
            f"column {by!r} takes several values for sample {enc.sample_id[enc.sample_code[r]]!r}; "
            "a task is a property of the sample"
        )
    return per_sample, values


def _n_options(enc: EncodedPredictions, given: Mapping[tuple[str, str], int] | None) -> np.ndarray:
    import pyarrow as pa

    n_s = enc.n_samples
    out = np.full(n_s, np.nan)
    if given is not None:
        for i, key in enumerate(zip(enc.sample_benchmark, enc.sample_id)):
            v = given.get(key)
            if v is not None:
                out[i] = float(v)
        return out
    if "n_options" in enc.table.column_names:
        column = enc.table.column("n_options")
        views = chunk_views(column) if pa.types.is_integer(column.type) else None
        if views is not None:  # chunk by chunk: no copy of the column
            for a, b, counts in views:
                out[enc.sample_code[a:b]] = counts
            return out
        vals = integers(column, -1, np.int32)
        if column.null_count:
            ok = vals >= 0
            out[enc.sample_code[ok]] = vals[ok]
        else:
            out[enc.sample_code] = vals
    return out


__all__ = ["ABLATIONS", "REORDERINGS", "Prepared", "encode", "prepare"]
