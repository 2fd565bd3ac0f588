"""Binary accuracy (BA) and multiple binary accuracy (MBA), TemporalBench (Cai et al., 2024, §3.3).

A multiple-choice question with one correct description C and M negatives N_1..N_M becomes M binary
questions {C, N_i}; the M binary questions of one C form a *group*. Over the tidy predictions table
(``tempcore.tidy.table``), per model x condition:

* **BA** = correct binary questions / binary questions.
* **MBA** = groups with every binary question correct / groups.
* **chance MBA** = mean over the groups of the product, over the group's questions, of
  ``1 / n_options`` (``0.5 ** M`` for a group of M binary questions): the MBA of a model that picks
  uniformly at random. ``None`` when a scored group has a question whose option count is unknown
  (neither the annotations nor an ``n_options`` column say).
* Overall figures are micro averages (pooled over all questions / groups), as the paper reports.
  ``by_dataset`` and ``by_category`` repeat the figures per value of the sample's ``dataset`` /
  ``category`` field; there the group is (dataset, group) and (category, group), as TemporalBench's
  scorer (``get_qa_acc.py``) keys its per-dataset and per-category dictionaries by video within the
  dataset / category. A group whose questions fall in two categories therefore counts once in each.
* Each figure carries its counts and a Wilson interval (:func:`tempcore.diagnostics.stats.wilson_interval`).

The rules :func:`mba_table` applies (the group of a sample, the correctness of a binary question,
incomplete groups, the rows used) are stated in its docstring.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.diagnostics.kernel import column_codes, combine_codes, constant_value, sorted_runs
from tempcore.errors import TempcoreError
from tempcore.records import LETTERS, Sample

if TYPE_CHECKING:
    import pyarrow as pa

PARSES = ("extract", "first-char")
INCOMPLETE_POLICIES = ("exclude", "present")
REQUIRED_COLUMNS = ("benchmark", "sample_id", "model", "strategy", "mode", "correct")
GROUP_FIELDS = ("binary_group", "video_name")
BINARY_SUFFIX = r"#b[0-9]+$"
VIEWS = ("overall", "by_dataset", "by_category")
FIGURE_KEYS = (
    "n_binary", "correct_binary", "ba", "ba_ci_low", "ba_ci_high",
    "n_groups", "correct_groups", "mba", "mba_ci_low", "mba_ci_high", "chance_mba", "incomplete_groups",
)


class MBAError(TempcoreError):
    """BA / MBA cannot be computed as asked (missing columns, unknown groups, duplicates...)."""


@dataclass
class MBAResult:
    """The three views (lists of row dicts) and notes. ``to_json()`` is the ``tempcore mba --json`` object."""

    overall: list[dict[str, Any]]
    by_dataset: list[dict[str, Any]]
    by_category: list[dict[str, Any]]
    condition_columns: list[str]
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"overall": self.overall, "by_dataset": self.by_dataset, "by_category": self.by_category,
                "notes": list(self.notes), **self.meta}

    def to_text(self, digits: int = 1) -> str:
        """Plain text: one block per view; BA / MBA / chance in percent."""
        out = []
        for view in VIEWS:
            rows = getattr(self, view)
            if not rows:
                continue
            extra = [] if view == "overall" else [view[3:]]
            cols = ["benchmark", "model", *self.condition_columns, *extra]
            if "parse" in rows[0]:
                cols.append("parse")
            cols += ["n_binary", "ba", "n_groups", "mba", "chance_mba", "gap", "incomplete_groups"]

            def cell(r: dict[str, Any], c: str) -> str:
                v = r["ba"] - r["mba"] if c == "gap" and r["mba"] is not None else r.get(c)
                if v is None:
                    return "-"
                if isinstance(v, float):
                    return f"{100 * v:.{digits}f}"
                return str(v)

            body = [[cell(r, c) for c in cols] for r in rows]
            widths = [max([len(c)] + [len(b[i]) for b in body]) for i, c in enumerate(cols)]
            out.append(f"{view.replace('_', ' ')} (ba, mba, chance_mba, gap = ba - mba in percent)")
            out.append("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip())
            out += ["  ".join(x.ljust(w) for x, w in zip(b, widths)).rstrip() for b in body]
            out.append("")
        out += [f"note: {n}" for n in self.notes]
        return "\n".join(out).rstrip()


# --- dense codes ---------------------------------------------------------------------------

#: Above this many rows the run-based fast paths are tried (sorted columns coded from runs of equal
#: values, aggregates over contiguous runs); below it the general paths are cheaper. Every fast path
#: gives exactly the figures of the general one (``tests/test_mba.py`` compares them).
_RUNS_MIN_ROWS = 65536


def _encode(col: Any, *, need_values: bool = True) -> tuple[np.ndarray, Any]:
    """:func:`tempcore.diagnostics.kernel.column_codes` with the run-based paths above :data:`_RUNS_MIN_ROWS`."""
    return column_codes(col, runs_above=_RUNS_MIN_ROWS, need_values=need_values)


def _combine(
    codes: Sequence[np.ndarray], cards: Sequence[int], n: int, *, need_first: bool = True
) -> tuple[np.ndarray, int, np.ndarray]:
    """:func:`tempcore.diagnostics.kernel.combine_codes` with the run-based path above :data:`_RUNS_MIN_ROWS`."""
    return combine_codes(codes, cards, n, runs_above=_RUNS_MIN_ROWS, need_first=need_first)


def _numpy(col: Any, dtype: Any, fill: float) -> np.ndarray:
    import pyarrow.compute as pc

    out: np.ndarray = pc.fill_null(col, fill).to_numpy(zero_copy_only=False).astype(dtype)
    return out


# --- per-sample fields -----------------------------------------------------------------------


def _sample_field(sample: Sample, name: str) -> Any:
    if name in sample.metadata:
        return sample.metadata[name]
    if name == "n_options":
        return len(sample.options)
    if name in ("video", "answer", "answer_letter", "media", "start", "end", "question"):
        return getattr(sample, name)
    return _MISSING


_MISSING = object()


def _hashable(v: Any) -> Any:
    if isinstance(v, (list, tuple, dict)):
        import json

        return json.dumps(v, sort_keys=True)
    return v


@dataclass
class _Samples:
    """The distinct samples of the table: per-sample codes and the Sample records when known."""

    n: int  # distinct (benchmark, sample_id)
    of_row: np.ndarray  # (rows,) sample code
    first_row: np.ndarray  # (n,) first row of each sample
    bench: np.ndarray  # (n,) benchmark code
    bench_values: list[str]
    records: list[Sample | None] | None  # (n,) when samples were given
    binary_id: np.ndarray | None = None  # (n,) bool: the id has the binarised form (rule 3)
    identity: bool = False  # every row its own sample, in order (of_row == first_row == 0..n-1)


def _column_per_sample(table: pa.Table, name: str, s: _Samples) -> tuple[np.ndarray, list[Any]]:
    """Codes (per sample) and values of predictions column ``name``; a sample whose rows disagree is an error."""
    codes, values = _encode(table.column(name))
    if s.identity:  # one row per sample: nothing to gather or to check
        return codes, values.to_pylist()
    per_sample = codes[s.first_row]
    bad = np.flatnonzero(per_sample[s.of_row] != codes)
    if bad.size:
        row = table.slice(int(bad[0]), 1).to_pylist()[0]
        raise MBAError(f"column {name!r} takes two values for sample {row['sample_id']!r} of {row['benchmark']!r}")
    return per_sample, values.to_pylist()


def _values_per_sample(values: list[Any]) -> tuple[np.ndarray, list[Any]]:
    codes: dict[Any, int] = {}
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        out[i] = codes.setdefault(_hashable(v), len(codes))
    return out, list(codes)


def _field_per_sample(
    table: pa.Table, name: str, s: _Samples, *, required: bool
) -> tuple[np.ndarray, list[Any], bool] | None:
    """A field per sample: the predictions column if there is one, else the samples' field.

    The third item says whether the values came from the samples (then the annotations also say
    which samples a group has)."""
    if name in table.column_names:
        return (*_column_per_sample(table, name, s), False)
    if s.records is None:
        if required:
            raise MBAError(
                f"no column {name!r} in the predictions (they have {sorted(table.column_names)}); "
                "give the benchmark's annotations to use a sample field"
            )
        return None
    values = [_sample_field(r, name) if r is not None else None for r in s.records]
    if all(v is _MISSING for v in values):
        if required:
            known = sorted({k for r in s.records if r is not None for k in r.metadata})
            raise MBAError(f"no column or sample field {name!r}; the samples' metadata has {known}")
        return None
    return (*_values_per_sample([None if v is _MISSING else v for v in values]), True)


def _default_groups(table: pa.Table, s: _Samples) -> tuple[np.ndarray, Sequence[Any], str]:
    """Group codes per sample, the group values, and the rule used (:func:`mba_table`, group rules 2 and 3).

    From the sample ids (rule 3) the values are only counted, never shown: there they are the
    group names followed by ``#b`` (:func:`_binary_group_keys`), or a range of their number."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if s.records is not None:
        values = []
        rule = set()
        for r in s.records:
            assert r is not None
            for name in GROUP_FIELDS:
                if name in r.metadata and r.metadata[name] is not None:
                    values.append(r.metadata[name])
                    rule.add(name)
                    break
            else:
                raise MBAError(
                    f"sample {r.sample_id!r} of {r.benchmark!r} has no group: neither metadata 'binary_group' "
                    "(a binarised sample) nor 'video_name' (TemporalBench); name one with group_by / --group-by"
                )
        codes, vals = _values_per_sample(values)
        return codes, vals, "+".join(n for n in GROUP_FIELDS if n in rule)
    if s.identity:
        ids = table.column("sample_id")  # one row per sample, in order: no take needed
    else:
        ids = table.column("sample_id").take(pa.array(s.first_row))
    if pa.types.is_dictionary(ids.type):
        ids = ids.cast(ids.type.value_type)
    if not pa.types.is_string(ids.type) and not pa.types.is_large_string(ids.type):
        ids = ids.cast(pa.string())
    split = _binary_group_keys(ids)  # chunks and all: no copy of the ids
    if split is None and isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    if split is None:
        has = pc.match_substring_regex(ids, BINARY_SUFFIX).to_numpy(zero_copy_only=False)
    else:
        has, stripped = split
    if has.all():
        lacking = []
    else:
        with_suffix = np.bincount(s.bench, weights=has, minlength=len(s.bench_values))
        lacking = [b for b, c in zip(s.bench_values, with_suffix) if c == 0]
    if lacking:
        raise MBAError(
            f"cannot tell the question groups of benchmark(s) {lacking}: no sample id has the binarised form "
            "'{sample_id}#b{i}'; give the annotations (TemporalBench groups by video_name) or --group-by FIELD"
        )
    s.binary_id = has if has.dtype == bool else has.astype(bool)
    if split is None:
        stripped = pc.replace_substring_regex(ids, pattern=BINARY_SUFFIX, replacement="")
    codes, values = _encode(stripped, need_values=False)
    return codes, values, "sample_id#b"


def _binary_group_keys(ids: Any) -> tuple[np.ndarray, Any] | None:
    """Which ids end in ``#b[0-9]+``, and per id a key that is equal for two ids exactly when their
    groups (:func:`_split_binary_ids`) are: the group followed by ``#b``. For an id with the suffix
    that is the id less its trailing digits; only ids without it are copied (with ``#b`` appended),
    so the common table, where every id has the suffix, needs no slicing. ``None`` with nulls."""
    import pyarrow.compute as pc

    if ids.null_count or len(ids) == 0:
        return None
    trimmed = pc.ascii_rtrim(ids, characters="0123456789")
    has = pc.and_(pc.ends_with(trimmed, "#b"), pc.less(pc.binary_length(trimmed), pc.binary_length(ids)))
    has_np = has.to_numpy(zero_copy_only=False)
    if has_np.all():
        return has_np, trimmed
    return has_np, pc.if_else(has, trimmed, pc.binary_join_element_wise(ids, "#b", ""))


def _split_binary_ids(ids: Any) -> tuple[np.ndarray, Any] | None:
    """Which ids end in ``#b[0-9]+`` and the ids without that suffix, by Arrow kernels without a regex.

    The same as ``match_substring_regex`` / ``replace_substring_regex`` with :data:`BINARY_SUFFIX`:
    trim the trailing ASCII digits (bytes; UTF-8 continuation bytes are never ASCII); an id has the
    suffix when some were trimmed and the rest ends in ``#b``, and its group is the rest less those
    two bytes. ~20x faster than the regex on 5M ids. ``None`` for an array with nulls (the regex path)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if ids.null_count or len(ids) == 0:
        return None
    trimmed = pc.ascii_rtrim(ids, characters="0123456789")
    has = pc.and_(pc.ends_with(trimmed, "#b"), pc.less(pc.binary_length(trimmed), pc.binary_length(ids)))
    has_np = has.to_numpy(zero_copy_only=False)
    if not has_np.any():
        return has_np, ids
    btype = pa.large_binary() if pa.types.is_large_string(ids.type) else pa.binary()
    # only the ids with the suffix are cut (cutting another could split a multi-byte character)
    cut = pc.binary_slice(pc.if_else(has, trimmed, "").cast(btype), 0, -2).cast(ids.type)
    return has_np, pc.if_else(has, cut, ids)


def _lookup_records(
    table: pa.Table, s_first: np.ndarray, samples: Iterable[Sample], benchmark: str | None
) -> list[Sample | None]:
    import pyarrow as pa

    heads = table.select(["benchmark", "sample_id"]).take(pa.array(s_first))
    bench = heads.column("benchmark").to_pylist()
    sid = heads.column("sample_id").to_pylist()
    if benchmark is not None:
        lookup: dict[Any, Sample] = {x.sample_id: x for x in samples}
        found = [lookup.get(i) for i in sid]
    else:
        lookup = {(x.benchmark, x.sample_id): x for x in samples}
        found = [lookup.get(k) for k in zip(bench, sid)]
    missing = [(b, i) for b, i, f in zip(bench, sid, found) if f is None]
    if missing:
        shown = ", ".join(f"{i!r} of {b!r}" for b, i in missing[:5])
        raise MBAError(
            f"{len(missing)} sample(s) in the predictions are not in the annotations, e.g. {shown} "
            "(check the benchmark and the annotation file)"
        )
    return [f for f in found if f is not None]  # all found (a missing one raised above)


# --- the computation -------------------------------------------------------------------------


def _first_char_correct(table: pa.Table, s: _Samples) -> np.ndarray:
    """TemporalBench's ``first-char`` rule per row (stated in :func:`mba_table`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "response" not in table.column_names:
        raise MBAError("--parse first-char needs the raw 'response' column in the predictions")
    n_rows = table.num_rows
    if s.records is not None:
        known = [r for r in s.records if r is not None]  # every predicted sample has one (_lookup_records)
        target = np.array([-1 if r.answer is None else r.answer for r in known], dtype=np.int64)[s.of_row]
        n_opt = np.array([len(r.options) for r in known], dtype=np.int64)[s.of_row]
    else:
        if "target" not in table.column_names:
            raise MBAError("--parse first-char needs the correct option: give the annotations, or a 'target' column")
        target = _numpy(table.column("target"), np.int64, -1)
        n_opt = (_numpy(table.column("n_options"), np.int64, 0) if "n_options" in table.column_names
                 else np.zeros(n_rows, np.int64))
    if (target < 0).any():
        row = table.slice(int(np.flatnonzero(target < 0)[0]), 1).to_pylist()[0]
        raise MBAError(f"sample {row['sample_id']!r} of {row['benchmark']!r}: the correct option is unknown")
    shown = target
    if "rotation" in table.column_names:
        rotation = _numpy(table.column("rotation"), np.int64, 0)
        if (rotation != 0).any():
            if (n_opt <= 0).any():
                raise MBAError("rotated rows need the option count (annotations or an 'n_options' column)")
            shown = np.where(rotation != 0, np.mod(target - rotation, np.maximum(n_opt, 1)), target)
    response = table.column("response")
    if pa.types.is_dictionary(response.type):
        # the rule on each chunk's dictionary (the distinct responses), gathered through its indices
        parts = []
        for chunk in (response.chunks if isinstance(response, pa.ChunkedArray) else [response]):
            lut = _first_letter(chunk.dictionary) if len(chunk.dictionary) else np.zeros(0, np.int64)
            idx = chunk.indices
            if idx.null_count or not lut.size:
                part = lut[pc.fill_null(idx, 0).to_numpy(zero_copy_only=False)] if lut.size \
                    else np.full(len(chunk), -2, np.int64)
                part[~idx.is_valid().to_numpy(zero_copy_only=False)] = -2
            else:
                part = lut[idx.to_numpy(zero_copy_only=False)]
            parts.append(part)
        letter = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    else:
        letter = _first_letter(response)
    ok: np.ndarray = (letter == shown).view(np.int8)
    return ok


def _first_letter(texts: Any) -> np.ndarray:
    """Per text, the index of the letter its first character is (Python's ``str.lower`` on both, as
    the scorer); -2 for none, an empty text or a null. Decided once per distinct first character."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_string(texts.type) and not pa.types.is_large_string(texts.type):
        texts = texts.cast(pa.string())
    codes, values = _encode(pc.utf8_slice_codeunits(texts, 0, 1))
    letter = np.array(
        [next((i for i, c in enumerate(LETTERS) if v is not None and c.lower() == v.lower()), -2)
         for v in values.to_pylist()] or [-2],
        dtype=np.int64,
    )
    out: np.ndarray = letter[codes]
    return out


def mba_table(
    table: pa.Table,
    *,
    samples: Iterable[Sample] | None = None,
    benchmark: str | None = None,
    models: Sequence[str] | None = None,
    group_by: str | None = None,
    parse: str = "extract",
    incomplete: str = "exclude",
    dataset_field: str = "dataset",
    category_field: str = "category",
    confidence: float = 0.95,
) -> MBAResult:
    """BA, MBA and chance MBA per benchmark x model x condition: overall, by dataset, by category.

    ``table``: a pyarrow Table in the tidy schema. ``samples``: the benchmark's Samples (needed for
    sample fields the predictions lack, TemporalBench's ``video_name`` groups, and for the complete
    list of each group's questions); matched on ``sample_id`` when ``benchmark`` is given, else on
    (benchmark, sample_id); a predicted sample they lack is an error. ``parse``: ``extract`` or
    ``first-char``; ``incomplete``: ``exclude`` or ``present``. The figures are those of the module
    docstring. ``by_dataset`` / ``by_category`` are empty when the field is in neither the predictions
    nor the samples.

    The group of a sample (first rule that applies):

    1. ``group_by``: a predictions column of that name, else a field of the samples (a metadata field,
       or a Sample attribute such as ``video``).
    2. With the samples: ``metadata["binary_group"]`` (set by :func:`tempcore.benchmarks.binary.binarize`:
       the original sample), else ``metadata["video_name"]`` (TemporalBench's own unit). A sample with
       neither is an error.
    3. Without the samples: a sample id ``{original}#b{i}`` (a binarised sample) belongs to the group
       ``original``; in a benchmark where no id has that form the groups cannot be told (error); a
       sample id without the suffix next to binarised ones is a group of its own. A question with such
       an id has two options when neither the samples nor an ``n_options`` column say otherwise.

    Correctness of a binary question (``parse``):

    * ``extract`` — the table's ``correct`` column: tempcore's answer extractor; a parse failure is a
      wrong answer.
    * ``first-char`` — TemporalBench's rule: the first character of the raw ``response`` equals the
      correct letter, case-insensitively (``GT.lower() == response[0].lower()``). The correct letter is
      the one *shown*: the correct option index (the samples' answer, else the table's ``target``)
      moved by the condition's ``rotation``. An empty or null response is wrong (the official script
      raises on an empty one). No whitespace is stripped (the official script strips none).

    Incomplete groups (``incomplete``):

    * ``exclude`` (default): a group is complete for a model x condition when every sample of the group
      has a prediction for it. The samples of a group are those of the annotations when they are given,
      else every sample of the group that any model x condition of the benchmark answered. An
      incomplete group is counted (``incomplete_groups``, including groups with no prediction at all)
      and excluded from every figure: from MBA and chance MBA, and its questions from BA too, so BA and
      MBA describe the same questions (the gap BA - MBA is then meaningful).
    * ``present``: TemporalBench's scorer — every prediction present counts; a group is scored over
      the questions it has (a failed call that was never written makes its group easier);
      ``incomplete_groups`` is 0.

    Other rules: oracle window rows (``window`` set) are not binary questions of a condition and are
    left out (their count is in ``meta["oracle_rows_skipped"]``). A condition is ``strategy`` and
    ``mode`` plus each of ``k, encoder, fps, seed, variant, rotation`` that varies in the table (as in
    :mod:`tempcore.diagnostics.accuracy`). A repeated (sample, model, condition) is an error. Figures
    are fractions, not percentages.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if parse not in PARSES:
        raise MBAError(f"unknown parse mode {parse!r}; choose one of {', '.join(PARSES)}")
    if incomplete not in INCOMPLETE_POLICIES:
        raise MBAError(f"unknown incomplete policy {incomplete!r}; choose one of {', '.join(INCOMPLETE_POLICIES)}")
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise MBAError(f"predictions table lacks column(s) {missing}")
    if benchmark is not None:
        present = sorted(set(pc.unique(table.column("benchmark")).to_pylist()))
        table = table.filter(pc.equal(table.column("benchmark"), benchmark))
        if table.num_rows == 0:
            raise MBAError(f"the predictions have no rows for benchmark {benchmark!r} (they have {present})")
    if models is not None:
        present_models = set(pc.unique(table.column("model")).to_pylist())
        unknown = sorted(set(models) - present_models)
        if unknown:
            raise MBAError(f"unknown model(s) {unknown}; the predictions have {sorted(present_models)}")
        table = table.filter(pc.is_in(table.column("model"), value_set=pa.array(list(models), type=pa.string())))
    oracle_rows = 0
    if "window" in table.column_names:
        oracle_rows = table.num_rows - table.column("window").null_count
        if oracle_rows:
            table = table.filter(pc.is_null(table.column("window")))
    n = table.num_rows
    cond_cols = _condition_columns(table) if n else ["strategy", "mode"]
    cond_cols = [c for c in cond_cols if c in table.column_names]

    # conditions and samples
    enc = {name: _encode(table.column(name)) for name in ["benchmark", "model", *cond_cols]}
    cid, n_cond, cond_first = _combine([enc[c][0] for c in enc], [len(enc[c][1]) for c in enc], n)
    sid_codes, sid_values = _encode(table.column("sample_id"), need_values=False)
    b_codes, b_values = enc["benchmark"]
    s_of_row, n_samples, s_first = _combine([b_codes, sid_codes], [len(b_values), len(sid_values)], n)
    pair, n_pairs, _ = _combine([cid, s_of_row], [n_cond, n_samples], n, need_first=False)
    if n_pairs != n:
        counts = np.bincount(pair, minlength=n_pairs)
        row = table.slice(int(np.flatnonzero(pair == int(np.flatnonzero(counts > 1)[0]))[0]), 1).to_pylist()[0]
        raise MBAError(
            f"duplicate predictions ({n - n_pairs} extra row(s)), e.g. sample {row['sample_id']!r} of "
            f"{row['benchmark']!r}, model {row['model']!r}, strategy {row['strategy']!r}: each would be counted twice"
        )
    records = None
    sample_list: list[Sample] | None = None
    if samples is not None:
        sample_list = list(samples)
        records = _lookup_records(table, s_first, sample_list, benchmark) if n else []
    identity = n_samples == n and n > 0 and bool((s_first[1:] > s_first[:-1]).all())  # s_first is 0..n-1
    s = _Samples(n_samples, s_of_row, s_first,
                 (b_codes if identity else b_codes[s_first]) if n else np.zeros(0, np.int64),
                 b_values.to_pylist(), records, identity=identity)

    # groups, labels, correctness, option counts
    if group_by is not None:
        g_codes, g_values, g_from_samples = _field_per_sample(table, group_by, s, required=True)  # type: ignore[misc]
        group_rule = group_by
    else:
        g_codes, g_values, group_rule = _default_groups(table, s) if n else (np.zeros(0, np.int64), [], "")
        g_from_samples = records is not None
    ok = (_first_char_correct(table, s) if parse == "first-char"
          else _correct_column(table.column("correct"))) if n else np.zeros(0, np.int64)
    logn = _log_option_counts(table, s, n)


    cond_heads = table.select(["benchmark", "model", *cond_cols]).take(pa.array(cond_first)).to_pylist()
    notes = [f"Wilson {confidence:.0%} intervals; groups: {group_rule or '-'}; parse: {parse}; "
             f"incomplete groups: {incomplete}"]
    views: dict[str, list[dict[str, Any]]] = {}
    cells: dict[str, Any] = {}  # per (condition, unit) sums, shared by the views whose units coincide
    for view, fname in (("overall", None), ("by_dataset", dataset_field), ("by_category", category_field)):
        if fname is None:
            l_codes, l_values, l_from_samples = np.zeros(n_samples, np.int64), [None], True
        else:
            got = _field_per_sample(table, fname, s, required=False) if n else None
            if got is None:
                views[view] = []
                notes.append(f"{view}: no field {fname!r} in the predictions or the samples")
                continue
            l_codes, l_values, l_from_samples = got
        # the annotations list each group's samples only when both group and label are sample fields
        annotated = sample_list if (g_from_samples and l_from_samples) else None
        views[view] = _view(
            view, fname, s, g_codes, g_values, l_codes, l_values, cid, n_cond, cond_heads, ok, logn,
            annotated, benchmark, group_by, incomplete, confidence, cells,
        )
    if oracle_rows:
        notes.append(f"{oracle_rows} oracle window row(s) left out")
    meta = {"parse": parse, "group_by": group_rule, "incomplete_policy": incomplete, "confidence": confidence,
            "oracle_rows_skipped": oracle_rows}
    return MBAResult(views["overall"], views["by_dataset"], views["by_category"], cond_cols, notes, meta)


def _group_of(sample: Sample, group_by: str | None) -> Any:
    if group_by is not None:
        v = _sample_field(sample, group_by)
        return None if v is _MISSING else _hashable(v)
    for name in GROUP_FIELDS:
        if sample.metadata.get(name) is not None:
            return _hashable(sample.metadata[name])
    return None


def _condition_columns(table: pa.Table) -> list[str]:
    """:func:`tempcore.diagnostics.accuracy.condition_columns` (``strategy``, ``mode`` and the condition
    columns that vary), a column of one value and no nulls told by its min / max (no hashing of every row)."""
    import pyarrow.compute as pc

    from tempcore.diagnostics.accuracy import CONDITION_COLUMNS

    out = ["strategy", "mode"]
    for name in CONDITION_COLUMNS:
        if name not in table.column_names:
            continue
        col = table.column(name)
        if col.null_count == len(col):
            continue  # one value (null) or none
        if col.null_count == 0 and constant_value(col) is not None:
            continue
        if pc.count_distinct(col, mode="all").as_py() > 1:
            out.append(name)
    return out


def _correct_column(col: Any) -> np.ndarray:
    """The ``correct`` column as integers (null: wrong), in its own width when it has no nulls."""
    import pyarrow as pa

    if col.null_count == 0 and (pa.types.is_integer(col.type) or pa.types.is_boolean(col.type)):
        out = col.to_numpy(zero_copy_only=False) if len(col) else np.zeros(0, np.int64)
        return out.view(np.int8) if out.dtype == bool else out
    return _numpy(col, np.int64, 0)


def _log_option_counts(table: pa.Table, s: _Samples, n: int) -> np.ndarray | float:
    """log(n_options) per row (NaN: unknown), or one number when every row has the same count
    (the samples' options, else the ``n_options`` column; a binarised id without either: 2)."""
    import pyarrow as pa

    n_opt: np.ndarray | float
    if s.records is not None:
        per_sample = np.array([len(r.options) if r is not None and r.options else 0 for r in s.records],
                              dtype=np.float64)
        n_opt = per_sample if s.identity else per_sample[s.of_row]
    elif "n_options" in table.column_names:
        col = table.column("n_options")
        one = constant_value(col) if col.null_count == 0 and len(col) and not pa.types.is_dictionary(col.type) else None
        n_opt = float(one[0].as_py()) if one is not None else _numpy(col, np.float64, 0.0)
    else:
        n_opt = 0.0
    if s.binary_id is not None:  # a binarised question without a known option count has two options
        if isinstance(n_opt, float):
            if n_opt <= 0 and s.binary_id.all():
                n_opt = 2.0
            elif n_opt <= 0 and s.binary_id.any():
                n_opt = np.where(s.binary_id if s.identity else s.binary_id[s.of_row], 2.0, n_opt)
        else:
            n_opt = np.where((n_opt <= 0) & (s.binary_id if s.identity else s.binary_id[s.of_row]), 2.0, n_opt)
    values = np.array([n_opt], dtype=np.float64) if isinstance(n_opt, float) else n_opt
    with np.errstate(divide="ignore"):
        logn = np.where(values > 0, np.log(np.where(values > 0, values, 1.0)), np.nan)
    return float(logn[0]) if isinstance(n_opt, float) else logn


def _repeated_sums(x: float, counts: np.ndarray) -> np.ndarray:
    """Per entry, ``x`` added ``counts[i]`` times from 0.0, left to right: exactly the sum a
    bincount of rows all weighing ``x`` gives (``cumsum`` is sequential too)."""
    m = int(counts.max()) if counts.size else 0
    table = np.zeros(m + 1, dtype=np.float64)
    if m:
        table[1:] = np.cumsum(np.full(m, x, dtype=np.float64))
    out: np.ndarray = table[counts]
    return out


def _cell_sums(
    cid: np.ndarray, n_cond: int, unit: np.ndarray, n_units: int, ok: np.ndarray, logn: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per (condition, unit) cell with rows: its condition, unit, rows, correct rows and sum of log
    option counts. One condition whose units are contiguous runs of rows (a table in key order) is
    summed over the runs; otherwise by bincounts over dense cell codes. Both give the same numbers."""
    n = unit.size
    if n > _RUNS_MIN_ROWS and n_cond == 1:
        first = sorted_runs(unit, n_units)
        if first is not None:
            rows = np.diff(first, append=n)
            width = np.int32 if ok.dtype.itemsize <= 2 and n < 2**31 // 256 else np.int64
            running = np.cumsum(ok, dtype=width)
            right = np.diff(running[first[1:] - 1].astype(np.int64), prepend=0, append=int(running[-1]))
            logs = (_repeated_sums(logn, rows) if isinstance(logn, float)
                    else np.bincount(unit, weights=logn, minlength=n_units))
            return np.zeros(n_units, np.int64), np.arange(n_units), rows, right, logs
    cu, n_cu, cu_first = _combine([cid, unit], [n_cond, n_units], n)
    rows = np.bincount(cu, minlength=n_cu)
    right = np.bincount(cu, weights=ok, minlength=n_cu)
    logs = (_repeated_sums(logn, rows) if isinstance(logn, float)
            else np.bincount(cu, weights=logn, minlength=n_cu))
    return cid[cu_first], unit[cu_first], rows, right, logs


@dataclass
class _Units:
    """A partition of the samples into the units (groups) of a view, and the per-cell sums over it."""

    of_s: np.ndarray  # (samples,) unit code
    n: int
    first_s: np.ndarray  # (units,) first sample of each unit
    runs: bool  # each unit a contiguous run of samples (first_s increasing, in sample order)
    sums: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # see _cell_sums


def _units(
    s: _Samples, g_codes: np.ndarray, n_groups: int, l_codes: np.ndarray, n_label_values: int,
    cid: np.ndarray, n_cond: int, ok: np.ndarray, logn: np.ndarray | float,
) -> _Units:
    """Units (benchmark, group, label) per sample and their per-cell sums."""
    unit_of_s, n_units, unit_first_s = _combine(
        [s.bench, g_codes, l_codes], [len(s.bench_values), n_groups, n_label_values], s.n
    )
    runs = s.n > _RUNS_MIN_ROWS and bool((unit_first_s[1:] > unit_first_s[:-1]).all()) and \
        sorted_runs(unit_of_s, n_units) is not None
    unit = unit_of_s if s.identity else unit_of_s[s.of_row]
    return _Units(unit_of_s, n_units, unit_first_s, runs, _cell_sums(cid, n_cond, unit, n_units, ok, logn))


def _constant_within(l_codes: np.ndarray, units: _Units) -> bool:
    """Whether a per-sample label takes one value within each unit (then a view by that label has
    the same units, and the same per-cell sums)."""
    if units.runs:  # every change of label falls on the first sample of a unit
        change = np.flatnonzero(l_codes[1:] != l_codes[:-1]) + 1
        starts = np.zeros(l_codes.size, dtype=bool)
        starts[units.first_s] = True
        return bool(starts[change].all())
    return bool((l_codes[units.first_s][units.of_s] == l_codes).all())


def _view(
    view: str,
    fname: str | None,
    s: _Samples,
    g_codes: np.ndarray,
    g_values: Sequence[Any],
    l_codes: np.ndarray,
    l_values: list[Any],
    cid: np.ndarray,
    n_cond: int,
    cond_heads: list[dict[str, Any]],
    ok: np.ndarray,
    logn: np.ndarray | float,
    samples: list[Sample] | None,
    benchmark: str | None,
    group_by: str | None,
    incomplete: str,
    confidence: float,
    cache: dict[str, Any],
) -> list[dict[str, Any]]:
    from tempcore.diagnostics.accuracy import _sort_key
    from tempcore.diagnostics.stats import wilson_interval

    # units (the groups of this view): (benchmark, group, label) per sample; the units of the first
    # view (benchmark, group) serve every view whose label is constant within them
    base: _Units | None = cache.get("units")
    if base is not None and _constant_within(l_codes, base):
        units = base
    else:
        units = _units(s, g_codes, len(g_values), l_codes, len(l_values), cid, n_cond, ok, logn)
        if base is None:
            cache["units"] = units
    unit_of_s, n_units, unit_first_s = units.of_s, units.n, units.first_s
    label_of_unit, n_labels, label_first_u = _combine(
        [s.bench[unit_first_s], l_codes[unit_first_s]], [len(s.bench_values), len(l_values)], n_units
    )
    label_first_s = unit_first_s[label_first_u]
    label_key = [(s.bench_values[s.bench[i]], _hashable(l_values[l_codes[i]])) for i in label_first_s]

    # expected questions per unit, and units per label (the universe a condition should cover)
    if incomplete == "present":
        expected = None
        universe: dict[tuple[Any, Any], int] | None = None
    elif samples is None:
        expected = (np.diff(unit_first_s, append=s.n) if units.runs
                    else np.bincount(unit_of_s, minlength=n_units))
        universe = dict(zip(label_key, np.bincount(label_of_unit, minlength=n_labels).tolist()))
    else:
        per_unit: Counter[tuple[Any, Any, Any]] = Counter()
        per_label: dict[tuple[Any, Any], set[Any]] = {}
        for x in samples:
            bench = benchmark if benchmark is not None else x.benchmark
            lab = None if fname is None else _sample_field(x, fname)
            lab = None if lab is _MISSING else _hashable(lab)
            grp = _group_of(x, group_by)
            per_unit[(bench, lab, grp)] += 1
            per_label.setdefault((bench, lab), set()).add(grp)
        expected = np.array(
            [per_unit[(s.bench_values[s.bench[i]], _hashable(l_values[l_codes[i]]), _hashable(g_values[g_codes[i]]))]
             for i in unit_first_s],
            dtype=np.int64,
        )
        universe = {k: len(v) for k, v in per_label.items()}

    # per (condition, unit): questions, correct, log option counts
    cu_cond, cu_unit, rows, right, logs = units.sums
    n_cu = rows.size
    complete = np.ones(n_cu, bool) if expected is None else rows == expected[cu_unit]
    solved = complete & (right == rows)
    cl = cu_cond * n_labels + label_of_unit[cu_unit]
    size = n_cond * n_labels
    agg = {
        "n_binary": np.bincount(cl, weights=rows * complete, minlength=size),
        "correct_binary": np.bincount(cl, weights=right * complete, minlength=size),
        "n_groups": np.bincount(cl, weights=complete, minlength=size),
        "correct_groups": np.bincount(cl, weights=solved, minlength=size),
        "chance": np.bincount(cl, weights=np.where(complete, np.exp(-logs), 0.0), minlength=size),
        "seen": np.bincount(cl, minlength=size),
    }
    n_b, c_b, n_g, c_g = agg["n_binary"], agg["correct_binary"], agg["n_groups"], agg["correct_groups"]
    ba_lo, ba_hi = wilson_interval(c_b, n_b, confidence)
    mba_lo, mba_hi = wilson_interval(c_g, n_g, confidence)

    def num(x: float) -> float | None:
        return None if math.isnan(x) else float(x)

    out = []
    for c in range(n_cond):
        head = cond_heads[c]
        for lab in range(n_labels):
            bench, lab_value = label_key[lab]
            if bench != head["benchmark"]:
                continue
            i = c * n_labels + lab
            if agg["seen"][i] == 0 and universe is None:
                continue
            groups = int(n_g[i])
            if universe is not None:
                missing_groups = universe.get((bench, lab_value), groups) - groups
            else:
                missing_groups = 0
            row = dict(head)
            if fname is not None:
                row[view[3:]] = l_values[l_codes[label_first_s[lab]]]
            nb = int(n_b[i])
            row.update(
                n_binary=nb,
                correct_binary=int(c_b[i]),
                ba=float(c_b[i] / nb) if nb else None,
                ba_ci_low=num(ba_lo[i]) if nb else None,
                ba_ci_high=num(ba_hi[i]) if nb else None,
                n_groups=groups,
                correct_groups=int(c_g[i]),
                mba=float(c_g[i] / groups) if groups else None,
                mba_ci_low=num(mba_lo[i]) if groups else None,
                mba_ci_high=num(mba_hi[i]) if groups else None,
                chance_mba=num(agg["chance"][i] / groups) if groups else None,
                incomplete_groups=int(missing_groups),
            )
            out.append(row)
    keys = [k for k in out[0] if k not in FIGURE_KEYS] if out else []
    out.sort(key=_sort_key(keys))
    return out


def mba_json(result: MBAResult) -> dict[str, Any]:
    """The ``tempcore mba --json`` object (see :meth:`MBAResult.to_json`)."""
    return result.to_json()


__all__ = ["INCOMPLETE_POLICIES", "PARSES", "MBAError", "MBAResult", "mba_json", "mba_table"]
