"""TVBench's time and vision ablations as findings: the ablation table, answer agreement between
conditions, and per-sample order sensitivity (TVBench, "Lost in Time", paper 001; the order
sensitivity per sample is ours, beyond the papers).

Pure, vectorised functions over the tidy predictions table (pyarrow + numpy; see
:mod:`tempcore.tidy.table`). A *condition* is a ``strategy`` of the table: the video condition (a base
strategy, default ``uniform``) and the ablations ``textonly`` (no image at all), ``noframe`` (grey
images), ``single`` (one random frame), ``shuffled`` and ``reversed`` (the base strategy's frames
reordered). Correctness is the paper's 0/1 ``correct`` (a parse failure is wrong).

Definitions, to the letter of the paper where it has one:

* **Accuracy** per model x benchmark x task x condition: correct / n over that condition's rows,
  with a Wilson interval (:func:`tempcore.diagnostics.stats.wilson_interval`).
* **Drop** from video: ``acc(video) - acc(condition)`` over the samples answered under both (the
  pairs), with a seeded percentile paired bootstrap interval
  (:func:`tempcore.diagnostics.stats.paired_bootstrap`; resampling questions). The video row
  itself has no drop. A positive drop is accuracy lost without the video.
* **Benchmark average** the way TVBench reports it: the *unweighted mean over tasks* of the task
  accuracies (``macro``, "TVBench Average"); the pooled figure over all questions (``micro``)
  beside it. ``chance`` is the mean of the per-task chance levels (a task's chance level: the mean
  of ``1 / n_options`` over its questions; 33.3% for TVBench) and ``gain = macro - chance``.
* **Answer agreement** of conditions a and b for one model, over the questions answered under
  both. The paper's "agreement between the correct responses" (e.g. "91.0% between image and
  video") is never defined in its text; the only reading consistent with its own marginals is the
  *inferred definition* ``conditional = |C_b ∩ C_a| / |C_b|`` with ``a`` the video: of the questions
  answered correctly under condition b, the share also answered correctly with the full video.
  Beside it: ``symmetric`` (share of questions with the same correctness), ``same_option`` (share
  with the same chosen option; a parse failure matches nothing) and Cohen's ``kappa`` of the two
  0/1 correctness vectors (``(p_o - p_e) / (1 - p_e)``; undefined, ``None``, when ``p_e = 1``).
  Pairs are taken in the order of the conditions (the video first), so ``a`` is the video for
  every pair involving it.
* **Order sensitivity** (ours, beyond the papers): ``OS_i = 1/|M| sum_m (correct with the base
  frames in order - correct with the same frames shuffled)``, likewise ``reversed``; the panel M of a
  benchmark is every model with rows under the video or the reordering; a sample lacking a panel
  model's value for either has no OS (incomplete), as in FSS. Classes at tau: Key (OS > tau),
  Non-key, Anti-key (:func:`tempcore.diagnostics.core.fss_categories`). *Order-sensitive* (our
  reading): Key under shuffled or under reversed (whichever the table has). Crossed with the FSS x
  LIS taxonomy (:func:`tempcore.diagnostics.diagnose`, when the table has MaxProb / MinProb /
  no-frame rows): the share of order-sensitive samples among all samples with an OS, and among the
  Temporally Sensitive ones — the samples that need *the right frames in the right order*.

Rows used: ``rotation`` 0 (or none) and no oracle ``window``. Within a condition, a column among
``k, mode, encoder, fps, seed, variant`` taking several values is an error naming them (choose with
``filters``), never silently pooled; a (sample, model, condition) given twice is an error.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tempcore.diagnostics.core import fss_categories
from tempcore.diagnostics.kernel import (
    chunk_views,
    dictionary_codes,
    identifier_codes,
    in_dictionary,
    integers,
    is_constant,
    null_mask,
    unify_dictionaries,
)
from tempcore.diagnostics.kernel import cpu_count as _cpu_count
from tempcore.diagnostics.stats import DEFAULT_BOOTSTRAP, wilson_interval
from tempcore.diagnostics.table import DiagnosticsError, EncodedPredictions, builtin_strategy_name
from tempcore.records import BUILT_IN_STRATEGIES

ABLATIONS = ("textonly", "noframe", "single", "shuffled", "reversed")
"""The ablation conditions of TVBench (plus the grey-frame ``noframe``), after the video condition."""
REORDERINGS = ("shuffled", "reversed")
_BUILT_IN_CONDITIONS = BUILT_IN_STRATEGIES
"""Built-in strategies (registered under exactly these names, so every strategy-name rule returns
them unchanged; ``tests/test_ablations.py`` checks it): a table using only these needs no count."""
_AMBIGUOUS = ("k", "mode", "encoder", "fps", "seed", "variant")
_TS = ("temporally_grounded", "visual_bias")


def _num(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


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


def encode(table: Any) -> EncodedPredictions:
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


def _pairs_by_chunk(table: Any, n_models: int) -> tuple[np.ndarray, list[str], list[str]] | None:
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


def _strategies_canonical(table: Any) -> bool:
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
    table: Any,
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
    table: Any,
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

    def __init__(self, table: Any, codes: Any, sample_benchmark: list[str], sample_id: list[str],
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


# --- the ablation table -----------------------------------------------------------------------


def _bootstrap_from_counts(counts: np.ndarray, values: np.ndarray, n_boot: int, confidence: float,
                           seed: int) -> tuple[float, float, float]:
    """Exactly :func:`tempcore.diagnostics.stats.bootstrap_mean` of a sample holding ``counts[j]``
    copies of ``values[j]`` (same seed, same draws), without materialising the sample."""
    estimate, means = _bootstrap_means(counts, values, n_boot, seed)
    if means is None:
        return math.nan, math.nan, math.nan
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return estimate, float(low), float(high)


def _bootstrap_means(counts: np.ndarray, values: np.ndarray, n_boot: int,
                     seed: int) -> tuple[float, np.ndarray | None]:
    """The estimate and the ``n_boot`` resampled means of :func:`_bootstrap_from_counts` (``None``
    for an empty sample); the quantiles of many such rows are taken in one call by the caller."""
    present = counts > 0
    distinct, cnt = values[present], counts[present]
    n = int(cnt.sum())
    if n == 0:
        return math.nan, None
    estimate = float((distinct * cnt).sum() / n)
    rng = np.random.default_rng(seed)
    if distinct.size == 1:
        means = np.full(n_boot, distinct[0])
    else:
        draws = rng.multinomial(n, cnt / n, size=n_boot)
        means = draws @ distinct / n
    return estimate, means


def _bootstrap_block(part: Sequence[np.ndarray], values: np.ndarray, n_boot: int, confidence: float,
                     seed: int) -> list[tuple[float, float, float]]:
    """:func:`_bootstrap_from_counts` of each of ``part`` (the same numbers: every row draws from its
    own ``default_rng(seed)``, and the quantiles of the block are taken in one call, the same linear
    interpolation along each row as one call per row)."""
    alpha = (1.0 - confidence) / 2.0
    drawn = [_bootstrap_means(c, values, n_boot, seed) for c in part]
    means = [m for _, m in drawn if m is not None]
    qs = np.quantile(np.stack(means), [alpha, 1.0 - alpha], axis=1).tolist() if means else [[], []]
    out, at = [], 0
    for est, m in drawn:
        if m is None:
            out.append((est, math.nan, math.nan))
        else:
            out.append((est, qs[0][at], qs[1][at]))
            at += 1
    return out


def _bootstrap_start(counts: Sequence[np.ndarray], values: np.ndarray, n_boot: int, confidence: float,
                     seed: int) -> Callable[[], list[tuple[float, float, float]]]:
    """Start :func:`_bootstrap_block` over ``counts`` and return the function that waits for its
    results (in the order of ``counts``). With more than one CPU and enough rows, blocks of rows run
    in background threads (numpy's multinomial draws and partitions release the GIL) while the
    caller goes on with the other analyses; the numbers do not depend on the split."""
    workers = min(len(counts) // 32, _cpu_count() - 1, 4)  # the caller keeps one CPU
    if workers < 1:
        done = _bootstrap_block(counts, values, n_boot, confidence, seed)
        return lambda: done
    from concurrent.futures import ThreadPoolExecutor

    cuts = np.linspace(0, len(counts), workers + 1).astype(int).tolist()
    pool = ThreadPoolExecutor(workers, thread_name_prefix="tempcore-bootstrap")
    futures = [pool.submit(_bootstrap_block, counts[a:b], values, n_boot, confidence, seed)
               for a, b in zip(cuts[:-1], cuts[1:])]
    pool.shutdown(wait=False)
    return lambda: [r for f in futures for r in f.result()]


def _count_runs(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``np.add.reduceat(mask, starts, axis=0)`` of a boolean (rows, columns) array: the True count
    of each run of rows, summed over the bytes as integers (the same counts, without the boolean
    add loop)."""
    return np.add.reduceat(mask.view(np.uint8), starts, axis=0, dtype=np.int64)


def ablation_table(
    prep: Prepared,
    *,
    video: str = "uniform",
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``models`` rows (accuracy, Wilson interval, drop from video with a paired bootstrap
    interval) and the ``averages`` rows (macro, micro, chance, gain) of the module docstring."""
    rows, averages, complete = _ablation_table(prep, video=video, n_boot=n_boot, confidence=confidence, seed=seed)
    complete()
    return rows, averages


def _ablation_table(
    prep: Prepared,
    *,
    video: str,
    n_boot: int,
    confidence: float,
    seed: int,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Callable[[], None]]:
    """:func:`ablation_table` with the drop intervals still being drawn: the rows get them (``drop``,
    ``drop_ci_low``, ``drop_ci_high``) when the returned function is called."""
    conds = prep.conditions
    if video not in conds:
        raise DiagnosticsError(f"the video condition {video!r} is not among the conditions {conds}")
    vi = conds.index(video)
    n_c, n_s, n_m = prep.correct.shape
    benches = prep.benchmarks
    bench_names = sorted(set(benches.tolist()))
    bench_code = np.zeros(n_s, dtype=np.int64)
    for i, b in enumerate(bench_names[1:], 1):  # a few benchmarks: one comparison each
        bench_code[benches == b] = i
    n_t = len(prep.tasks)
    group = bench_code * n_t + prep.task_code  # (S,) benchmark x task
    n_g = len(bench_names) * n_t
    # sums over the samples of each group: samples sorted by group once, then contiguous reduceat
    order = np.argsort(group, kind="stable")
    g_sorted = group[order]
    starts = np.searchsorted(g_sorted, np.arange(n_g))
    nonempty = np.bincount(group, minlength=n_g) > 0
    n = np.zeros((n_c, n_g, n_m), dtype=np.int64)
    correct = np.zeros((n_c, n_g, n_m), dtype=np.int64)
    p_sorted: list[np.ndarray] = []  # per condition, (S, M) in group order: present, right
    r_sorted: list[np.ndarray] = []
    at = starts[nonempty]
    if n_s:
        for ci in range(n_c):
            c_sorted = prep.correct[ci][order]  # one gather per condition (no (C, S, M) mask)
            p_sorted.append(c_sorted == c_sorted)  # present: not NaN
            n[ci][nonempty] = _count_runs(p_sorted[ci], at)
            r_sorted.append(c_sorted > 0.5)  # right (NaN > 0.5 is False: a right answer is a present one)
            correct[ci][nonempty] = _count_runs(r_sorted[ci], at)
    low, high = wilson_interval(correct, n, confidence)
    # chance per (benchmark, task): mean of 1 / n_options over the task's samples (NaN if any unknown)
    inv = 1.0 / prep.n_options
    g_n = np.bincount(group, minlength=n_g)
    g_sum = np.bincount(group, weights=np.nan_to_num(inv, nan=0.0), minlength=n_g)
    g_unknown = np.bincount(group, weights=np.isnan(inv).astype(np.float64), minlength=n_g)
    with np.errstate(invalid="ignore", divide="ignore"):
        chance = np.where((g_n > 0) & (g_unknown == 0), g_sum / np.maximum(g_n, 1), np.nan)
    # drops: counts of the paired differences (-1, 0, 1) per (c, g, m)
    # (correctness is 0 / 1: video - condition is +1 when only the video is right, -1 when only the
    # condition is, 0 otherwise), summed over the group-sorted samples like the accuracies
    diff_values = np.array([-1.0, 0.0, 1.0])
    rows: list[dict[str, Any]] = []
    drop_counts = np.zeros((n_c, n_g, n_m, 3), dtype=np.int64)
    for ci in range(n_c):
        if ci == vi or not n_s:
            continue
        both = p_sorted[ci] & p_sorted[vi]
        only_video = r_sorted[vi] & ~r_sorted[ci] & both
        only_condition = r_sorted[ci] & ~r_sorted[vi] & both
        n_both = _count_runs(both, at)
        n_plus = _count_runs(only_video, at)
        n_minus = _count_runs(only_condition, at)
        drop_counts[ci][nonempty] = np.stack([n_minus, n_both - n_plus - n_minus, n_plus], axis=-1)
    # the resampled means of every drop, then their quantiles in one call (the same numbers as one
    # np.quantile per row: the same linear interpolation along each row)
    has_drop = drop_counts.sum(axis=3) > 0  # never for the video itself
    # the rows with a drop, in the order of the rows below (model, group, condition)
    boot_cells = np.argwhere(has_drop.transpose(2, 1, 0)).tolist()
    finish = _bootstrap_start([drop_counts[ci, gi, mi] for mi, gi, ci in boot_cells], diff_values, n_boot,
                              confidence, seed)
    boot_rows: list[dict[str, Any]] = []
    n_list, c_list = n.tolist(), correct.tolist()
    low_list, high_list = low.tolist(), high.tolist()
    for mi, model in enumerate(prep.models):
        for gi in range(n_g):
            bench, task = bench_names[gi // n_t], prep.tasks[gi % n_t]
            for ci, cname in enumerate(conds):
                nn = n_list[ci][gi][mi]
                if nn == 0:
                    continue
                row = {
                    "model": model, "benchmark": bench, "task": task, "condition": cname,
                    "n": int(nn), "correct": int(c_list[ci][gi][mi]),
                    "accuracy": float(c_list[ci][gi][mi] / nn),
                    "ci_low": _num(low_list[ci][gi][mi]), "ci_high": _num(high_list[ci][gi][mi]),
                    "drop": None, "drop_ci_low": None, "drop_ci_high": None,
                }
                if ci != vi and has_drop[ci, gi, mi]:
                    boot_rows.append(row)
                rows.append(row)

    def complete() -> None:
        for row, (est, lo, hi) in zip(boot_rows, finish(), strict=True):
            row.update(drop=_num(est), drop_ci_low=_num(lo), drop_ci_high=_num(hi))
    averages: list[dict[str, Any]] = []
    for mi, model in enumerate(prep.models):
        for bi, bench in enumerate(bench_names):
            gs = np.arange(bi * n_t, (bi + 1) * n_t)
            for ci, cname in enumerate(conds):
                nn = n[ci, gs, mi]
                used = gs[nn > 0]
                if used.size == 0:
                    continue
                accs = correct[ci, used, mi] / n[ci, used, mi]
                macro = float(accs.mean())
                micro = float(correct[ci, used, mi].sum() / n[ci, used, mi].sum())
                ch = chance[used]
                ch_mean = None if np.isnan(ch).any() else float(ch.mean())
                averages.append({
                    "model": model, "benchmark": bench, "condition": cname, "macro": macro, "micro": micro,
                    "chance": ch_mean, "gain": None if ch_mean is None else macro - ch_mean,
                })
    return rows, averages, complete


# --- answer agreement -------------------------------------------------------------------------


def agreement(prep: Prepared) -> list[dict[str, Any]]:
    """Answer agreement per model and pair of conditions (a before b in ``prep.conditions``), pooled
    over every benchmark of the table: ``conditional`` (the inferred definition |C_b ∩ C_a| / |C_b|),
    ``symmetric``, ``same_option``, ``kappa`` and ``n`` (questions answered under both).
    Vectorised over models; :func:`agreement_measures` is the same for one pair of vectors."""
    out: list[dict[str, Any]] = []
    conds = prep.conditions
    n_c, n_s, n_m = prep.correct.shape
    # every pair's counts at once, as products of 0/1 matrices per model (exact: integer sums below
    # 2**24 in float32, else float64): both[a, b] = P_a.P_b, right under a among both = R_a.P_b
    # (a right answer is a present one), under b = P_a.R_b, under both = R_a.R_b
    ftype = np.float32 if n_s < 2**24 else np.float64
    gram = np.empty((n_m, 2 * n_c, 2 * n_c), dtype=np.int64)
    x = np.empty((2 * n_c, n_s), dtype=ftype)  # one model's 0/1 matrix, P then R, rewritten per model
    for mi in range(n_m):
        c = prep.correct[:, :, mi]
        np.equal(c, c, out=x[:n_c])  # present: not NaN
        np.greater(c, 0.5, out=x[n_c:])  # right
        gram[mi] = np.rint(np.matmul(x, x.T))
    pp, rp, rr = gram[:, :n_c, :n_c], gram[:, n_c:, :n_c], gram[:, n_c:, n_c:]  # (M, C, C)
    for ai in range(len(conds)):
        for bi in range(ai + 1, len(conds)):
            n, n_a, n_b, n_ab = pp[:, ai, bi], rp[:, ai, bi], rp[:, bi, ai], rr[:, ai, bi]
            n_same = n - n_a - n_b + 2 * n_ab  # both right + both wrong
            xa = prep.answer[ai]
            n_opt = ((xa == prep.answer[bi]) & (xa >= 0)).sum(axis=0)  # an option >= 0 under both: both present
            for mi, model in enumerate(prep.models):
                nn = int(n[mi])
                if nn == 0:
                    continue
                pa, pb, po = n_a[mi] / nn, n_b[mi] / nn, n_same[mi] / nn
                pe = pa * pb + (1 - pa) * (1 - pb)
                out.append({
                    "model": model, "a": conds[ai], "b": conds[bi],
                    "conditional": float(n_ab[mi] / n_b[mi]) if n_b[mi] else None,
                    "symmetric": float(po), "same_option": float(n_opt[mi] / nn),
                    "kappa": None if abs(1.0 - pe) < 1e-15 else float((po - pe) / (1.0 - pe)), "n": nn,
                })
    out.sort(key=lambda r: (prep.models.index(str(r["model"])), conds.index(str(r["a"])), conds.index(str(r["b"]))))
    return out


def agreement_measures(ca: np.ndarray, cb: np.ndarray, xa: np.ndarray | None = None,
                       xb: np.ndarray | None = None) -> dict[str, Any]:
    """The agreement measures of two paired 0/1 correctness vectors (and chosen options, -1 = none)."""
    ca = np.asarray(ca, dtype=bool)
    cb = np.asarray(cb, dtype=bool)
    n = int(ca.size)
    n_b = int(cb.sum())
    conditional = float((ca & cb).sum() / n_b) if n_b else None
    po = float((ca == cb).mean()) if n else math.nan
    pa, pb = float(ca.mean()) if n else math.nan, float(cb.mean()) if n else math.nan
    pe = pa * pb + (1 - pa) * (1 - pb)
    kappa = None if not n or abs(1.0 - pe) < 1e-15 else (po - pe) / (1.0 - pe)
    same = None
    if xa is not None and xb is not None and n:
        xa, xb = np.asarray(xa), np.asarray(xb)
        same = float(((xa == xb) & (xa >= 0)).mean())
    return {"conditional": conditional, "symmetric": _num(po), "same_option": same, "kappa": _num(kappa), "n": n}


# --- order sensitivity ------------------------------------------------------------------------


@dataclass
class OrderSensitivity:
    """Per sample ``os_shuffled`` / ``os_reversed`` (NaN: incomplete or no such rows), their classes,
    whether order-sensitive, the taxonomy category (when computable) and per-benchmark summaries."""

    benchmark: np.ndarray
    sample_id: np.ndarray
    os: dict[str, np.ndarray]
    classes: dict[str, np.ndarray]
    order_sensitive: np.ndarray  # bool, only meaningful where any OS is defined
    category: np.ndarray | None
    benchmarks: dict[str, dict[str, Any]]
    crossed: dict[str, dict[str, dict[str, int]]]

    def samples(self) -> list[dict[str, Any]]:
        osh = self.os.get("shuffled", np.full(self.benchmark.size, np.nan))
        orv = self.os.get("reversed", np.full(self.benchmark.size, np.nan))
        defined = ~(np.isnan(osh) & np.isnan(orv))

        def values(a: np.ndarray) -> list[float | None]:
            kept = a[defined]
            if not np.isnan(kept).any():
                return kept.tolist()  # type: ignore[no-any-return]
            return [None if x != x else x for x in kept.tolist()]  # NaN -> None

        return [
            {"benchmark": b, "sample_id": s, "os_shuffled": x, "os_reversed": y}
            for b, s, x, y in zip(self.benchmark[defined].tolist(), self.sample_id[defined].tolist(),
                                  values(osh), values(orv))
        ]

    def to_json(self) -> dict[str, Any]:
        return {"benchmarks": self.benchmarks, "samples": self.samples()}

    def samples_json(self, prefix: str = "", suffix: str = "") -> str:
        """``prefix + json.dumps(self.samples()) + suffix``, byte for byte, built column-wise: each
        distinct benchmark, OS value and (shuffled, reversed) pair is serialised once (by
        ``json.dumps`` itself), the sample ids by the C string encoder of :mod:`json`, and
        everything joined in one call (no dict per sample, no copy of the text)."""
        import json

        osh = self.os.get("shuffled", np.full(self.benchmark.size, np.nan))
        orv = self.os.get("reversed", np.full(self.benchmark.size, np.nan))
        defined = ~(np.isnan(osh) & np.isnan(orv))
        n = int(defined.sum())
        if n == 0:
            return prefix + "[]" + suffix
        bench_text, bench_code = _json_codes(self.benchmark[defined])
        x_text, x_code = _json_float_codes(osh[defined])
        y_text, y_code = _json_float_codes(orv[defined])
        pair_values, pair_code = _unique_codes(x_code.astype(np.int64) * len(y_text) + y_code)
        tails = [f', "os_shuffled": {x_text[int(v) // len(y_text)]}, "os_reversed": {y_text[int(v) % len(y_text)]}}}'
                 for v in pair_values.tolist()]
        heads = np.array([f'{{"benchmark": {b}, "sample_id": ' for b in bench_text], dtype=object)
        ids = self.sample_id[defined].tolist()
        encode = json.encoder.encode_basestring_ascii
        id_text = list(map(encode, ids)) if set(map(type, ids)) <= {str} else [json.dumps(i) for i in ids]
        parts = np.empty(3 * n + 2, dtype=object)  # prefix + "[", then head, id, tail per row, then "]" + suffix
        parts[0] = prefix + "["
        parts[1:-1:3] = heads[bench_code]
        parts[2:-1:3] = id_text
        parts[3:-1:3] = np.array([t + ", " for t in tails], dtype=object)[pair_code]
        parts[-2] = tails[int(pair_code[-1])]  # the last row: no separator
        parts[-1] = "]" + suffix
        return "".join(parts.tolist())


def _json_codes(values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The ``json.dumps`` text of each distinct value of an object array (first-seen order) and the
    index of each element's text."""
    import json

    items = values.tolist()
    if set(map(type, items)) <= {str}:  # strings: one dict of the distinct values, C-level lookups
        distinct = list(dict.fromkeys(items))
        index = {v: i for i, v in enumerate(distinct)}
        return list(map(json.encoder.encode_basestring_ascii, distinct)), \
            np.fromiter(map(index.__getitem__, items), dtype=np.int64, count=len(items))
    keyed: dict[tuple[type, Any], int] = {}  # keyed by type too: 1 and True are distinct values here
    codes = np.fromiter((keyed.setdefault((type(v), v), len(keyed)) for v in items), dtype=np.int64,
                        count=len(items))
    return [json.dumps(v) for _, v in keyed], codes


def _unique_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of an integer array, by a sort of the values and a
    binary search of each (no argsort: cheaper when few values are distinct)."""
    distinct = np.unique(values)
    return distinct, np.searchsorted(distinct, values)


def _json_float_codes(values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The ``json.dumps`` text of each distinct float64 (distinct by bit pattern, so ``-0.0`` keeps
    its sign; NaN is ``null``, as :meth:`OrderSensitivity.samples` writes ``None``) and the index
    of each element's text."""
    import json

    bits, codes = _unique_codes(np.ascontiguousarray(values, dtype=np.float64).view(np.int64))
    floats = bits.view(np.float64).tolist()
    return ["null" if v != v else json.dumps(v) for v in floats], codes


def order_sensitivity(
    prep: Prepared,
    *,
    video: str = "uniform",
    tau: float = 0.15,
    category: np.ndarray | None = None,
) -> OrderSensitivity:
    """OS per sample for each reordering of ``prep.conditions``, classes at ``tau``, and per benchmark
    ``n`` (samples with an OS), ``order_sensitive`` (share) and
    ``order_sensitive_among_temporally_sensitive`` (share, ``None`` without a taxonomy or without
    Temporally Sensitive samples). ``category``: the taxonomy per sample, in ``prep``'s sample order."""
    conds = prep.conditions
    if video not in conds:
        raise DiagnosticsError(f"the video condition {video!r} is not among the conditions {conds}")
    vi = conds.index(video)
    n_c, n_s, n_m = prep.correct.shape
    benches = prep.benchmarks
    bench_rows = {bench: np.flatnonzero(benches == bench) for bench in sorted(set(benches.tolist()))}
    present_video = ~np.isnan(prep.correct[vi])
    os_values: dict[str, np.ndarray] = {}
    classes: dict[str, np.ndarray] = {}
    for name in REORDERINGS:
        if name not in conds:
            continue
        ri = conds.index(name)
        present_r = ~np.isnan(prep.correct[ri])
        values = np.full(n_s, np.nan)
        for rows in bench_rows.values():
            every_row = rows.size == n_s  # one benchmark: no gather of the rows
            pv, pr = (present_video, present_r) if every_row else (present_video[rows], present_r[rows])
            panel = np.flatnonzero((pv | pr).any(axis=0))
            if panel.size == 0 or not pr.any():
                continue
            a, b = prep.correct[vi], prep.correct[ri]
            if not every_row:
                a, b = a[rows], b[rows]
            if panel.size != n_m:
                a, b = a[:, panel], b[:, panel]
            # the mean of the float64 differences, exactly: the differences are -1 / 0 / 1 (or NaN),
            # so their float32 sum is the same integer, divided in float64 as np.mean divides
            total = np.subtract(a, b, dtype=np.float32).sum(axis=1, dtype=np.float32)
            values[rows] = total.astype(np.float64) / panel.size  # NaN when any panel model lacks either value
        os_values[name] = values
        classes[name] = fss_categories(values, tau)
    sensitive = np.zeros(n_s, dtype=bool)
    defined = np.zeros(n_s, dtype=bool)
    for name, cl in classes.items():
        sensitive |= cl == "key"
        defined |= ~np.isnan(os_values[name])
    ts = None if category is None else np.isin(np.asarray(category, dtype=object), _TS)
    summary: dict[str, dict[str, Any]] = {}
    crossed: dict[str, dict[str, dict[str, int]]] = {}
    for bench in sorted(set(benches.tolist())):
        sel = (benches == bench) & defined
        n = int(sel.sum())
        if not classes:
            continue
        among = None
        if ts is not None and (sel & ts).any():
            among = float((sensitive & sel & ts).sum() / (sel & ts).sum())
        summary[bench] = {
            "n": n,
            "order_sensitive": float((sensitive & sel).sum() / n) if n else None,
            "order_sensitive_among_temporally_sensitive": among,
        }
        if category is not None:
            cat = np.asarray(category, dtype=object)
            table: dict[str, dict[str, int]] = {}
            for c in sorted(set(cat[sel].tolist())):
                m = sel & (cat == c)
                table[str(c)] = {"order_sensitive": int((m & sensitive).sum()), "other": int((m & ~sensitive).sum())}
            crossed[bench] = table
    return OrderSensitivity(benches, np.asarray(prep.enc.sample_id, dtype=object), os_values, classes,
                            sensitive, category, summary, crossed)


def taxonomy_of(prep: Prepared, *, tau: float = 0.15, lam: float = 0.5) -> np.ndarray | None:
    """The FSS x LIS category per sample of ``prep`` (``diagnose`` over the same table), or ``None``
    when the table lacks MaxProb / MinProb / no-frame rows."""
    from tempcore.diagnostics import diagnose

    enc = prep.enc
    for strategy in ("maxprob", "minprob", "noframe"):
        if not in_dictionary(enc.table.column("strategy"), strategy) or not enc.rows(strategy, None).any():
            return None
    try:
        return diagnose(enc, tau=tau, lam=lam).category
    except DiagnosticsError:
        return None


# --- everything of `tempcore audit ablations` -------------------------------------------------


def _audit(
    table: Any,
    *,
    video: str,
    conditions: Sequence[str],
    by: str | None,
    task_of_sample: Mapping[tuple[str, str], Any] | None,
    n_options_of_sample: Mapping[tuple[str, str], int] | None,
    tau: float,
    lam: float,
    n_boot: int,
    confidence: float,
    seed: int,
    filters: Mapping[str, Mapping[str, Any]] | None,
) -> dict[str, Any]:
    """:func:`audit_ablations` with ``order`` still an :class:`OrderSensitivity`."""
    names = [video] + [c for c in conditions if c != video]
    prep = prepare(table, names, by=by, task_of_sample=task_of_sample, n_options_of_sample=n_options_of_sample,
                   filters=filters)
    have = [c for i, c in enumerate(prep.conditions) if c == video or not np.isnan(prep.correct[i]).all()]
    if np.isnan(prep.correct[0]).all():
        raise DiagnosticsError(f"the predictions have no rows of the video condition {video!r}")
    if len(have) < len(prep.conditions):
        keep = [prep.conditions.index(c) for c in have]
        prep = Prepared(prep.enc, have, prep.correct[keep], prep.answer[keep], prep.task_code, prep.tasks,
                        prep.n_options)
    # the drop intervals are drawn (in background threads where there are CPUs) while the other
    # analyses run; complete() waits for them
    rows, averages, complete = _ablation_table(prep, video=video, n_boot=n_boot, confidence=confidence, seed=seed)
    category = taxonomy_of(prep, tau=tau, lam=lam) if any(c in have for c in REORDERINGS) else None
    order = order_sensitivity(prep, video=video, tau=tau, category=category)
    agree = agreement(prep)
    complete()
    return {"models": rows, "averages": averages, "agreement": agree, "order": order}


def audit_ablations(
    table: Any,
    *,
    video: str = "uniform",
    conditions: Sequence[str] = ABLATIONS,
    by: str | None = None,
    task_of_sample: Mapping[tuple[str, str], Any] | None = None,
    n_options_of_sample: Mapping[tuple[str, str], int] | None = None,
    tau: float = 0.15,
    lam: float = 0.5,
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = 0,
    filters: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The JSON object of ``tempcore audit ablations --json``: ``models``, ``averages``, ``agreement``,
    ``order`` (see the module docstring). Conditions without rows are left out."""
    out = _audit(table, video=video, conditions=conditions, by=by, task_of_sample=task_of_sample,
                 n_options_of_sample=n_options_of_sample, tau=tau, lam=lam, n_boot=n_boot,
                 confidence=confidence, seed=seed, filters=filters)
    out["order"] = out["order"].to_json()
    return out


def audit_ablations_json(
    table: Any,
    *,
    video: str = "uniform",
    conditions: Sequence[str] = ABLATIONS,
    by: str | None = None,
    task_of_sample: Mapping[tuple[str, str], Any] | None = None,
    n_options_of_sample: Mapping[tuple[str, str], int] | None = None,
    tau: float = 0.15,
    lam: float = 0.5,
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = 0,
    filters: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """The text ``tempcore audit ablations --json`` prints: ``json.dumps(audit_ablations(...))``
    byte for byte (the same arguments), with the per-sample order rows written column-wise by
    :meth:`OrderSensitivity.samples_json` instead of one dict per sample."""
    import json

    out = _audit(table, video=video, conditions=conditions, by=by, task_of_sample=task_of_sample,
                 n_options_of_sample=n_options_of_sample, tau=tau, lam=lam, n_boot=n_boot,
                 confidence=confidence, seed=seed, filters=filters)
    order: OrderSensitivity = out["order"]
    out["order"] = {"benchmarks": order.benchmarks, "samples": []}
    text = json.dumps(out)
    if not text.endswith('"samples": []}}'):  # the order samples are the last member of the object
        raise AssertionError("audit_ablations_json: the object no longer ends with the order samples")
    return order.samples_json(text[:-len("[]}}")], "}}")


def result_tables(result: Mapping[str, Any]) -> dict[str, Any]:
    """The sections of an :func:`audit_ablations` result as :class:`~tempcore.diagnostics.accuracy.ResultTable`
    objects (``ablation_table``, ``ablation_averages``, ``answer_agreement``, ``order_sensitivity``), the
    form the report renders; fractions stay fractions (shown as percentages)."""
    from tempcore.diagnostics.accuracy import ResultTable

    order_rows = [{"benchmark": b, **v} for b, v in result["order"]["benchmarks"].items()]
    return {
        "ablation_table": ResultTable(
            "ablation_table", "Accuracy per condition and drop from video (TVBench; paired bootstrap 95% CI)",
            ["model", "benchmark", "task", "condition", "n", "correct", "accuracy", "ci_low", "ci_high", "drop",
             "drop_ci_low", "drop_ci_high"], list(result["models"]),
            percent=("accuracy", "ci_low", "ci_high", "drop", "drop_ci_low", "drop_ci_high")),
        "ablation_averages": ResultTable(
            "ablation_averages", "Benchmark averages: macro (unweighted over tasks, TVBench's), micro, chance, gain",
            ["model", "benchmark", "condition", "macro", "micro", "chance", "gain"], list(result["averages"]),
            percent=("macro", "micro", "chance", "gain")),
        "answer_agreement": ResultTable(
            "answer_agreement", "Answer agreement between conditions",
            ["model", "a", "b", "n", "conditional", "symmetric", "same_option", "kappa"], list(result["agreement"]),
            notes=["conditional = |C_b ∩ C_a| / |C_b|: the inferred definition of TVBench's undefined agreement"],
            percent=("conditional", "symmetric", "same_option")),
        "order_sensitivity": ResultTable(
            "order_sensitivity", "Order-sensitive samples (OS > tau under shuffled or reversed)",
            ["benchmark", "n", "order_sensitive", "order_sensitive_among_temporally_sensitive"], order_rows,
            percent=("order_sensitive", "order_sensitive_among_temporally_sensitive")),
    }


__all__ = [
    "ABLATIONS",
    "REORDERINGS",
    "OrderSensitivity",
    "Prepared",
    "ablation_table",
    "agreement",
    "agreement_measures",
    "audit_ablations",
    "audit_ablations_json",
    "order_sensitivity",
    "prepare",
    "result_tables",
    "taxonomy_of",
]
