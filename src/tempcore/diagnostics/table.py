"""From a tidy predictions table to (samples x models) matrices of correctness.

The tidy table (see ``tempcore export predictions``) has one row per prediction with at least
``benchmark, sample_id, model, strategy, mode, k, window, correct`` and optionally ``p_correct``
(probability on the correct option) and ``rotation`` (cyclic option rotation). Everything here is
vectorised (pyarrow compute + numpy) so millions of rows take seconds.

This is also the one place where a table is checked against what a score asks of it, for
``diagnose``, ``accuracy``, ``report`` and ``export tempcore`` alike (the CLI adds nothing):

* :func:`prepare_table` canonicalises strategy names with the rule its caller gives (``canonical``):
  by default :func:`builtin_strategy_name`, a value equal to a built-in strategy up to case and
  surrounding blanks (``MaxProb``) becomes its name (``maxprob``) and any other value is kept. A
  table read from a file (:mod:`tempcore.tidy`) has already been through the full rule,
  ``tempcore.selection.registry.canonical_strategy``, which also knows a user's strategies and
  rejects a near miss (``maxprb``) with a suggestion; pass it as ``canonical`` to apply it to a
  table made in memory (the diagnostics import nothing of :mod:`tempcore.selection`).
* :func:`explain_empty` says why a condition's filters selected no row, naming what the table
  holds ("maxprob (qa-mode): the table has k 8; --k asked for 32"); :class:`TableError` carries it.
* :func:`check_scoring` rejects ``circular`` on rows without several option rotations and
  ``soft`` on rows without ``p_correct`` values.
* :func:`check_fingerprints` refuses to pool rows of one model name that carry different
  ``model_fingerprint`` values (an optional column; null fingerprints, e.g. rows imported from a
  table that has none, are not compared).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.diagnostics.kernel import DiagnosticsError as DiagnosticsError
from tempcore.diagnostics.kernel import distinct, equal_mask, identifier_codes, unify_dictionaries
from tempcore.errors import TempcoreError
from tempcore.records import BUILT_IN_STRATEGIES

if TYPE_CHECKING:
    import pyarrow as pa

REQUIRED_COLUMNS = ("benchmark", "sample_id", "model", "strategy", "mode", "k", "window", "correct")
SCORINGS = ("hard", "soft", "circular")
# Columns whose values must be unique among the rows a score uses, unless the caller filters them.
_AMBIGUOUS = ("k", "encoder", "fps", "seed", "variant")


class TableError(DiagnosticsError):
    """The table holds nothing for what was asked (filters left no row, a scoring lacks its column,
    a model's rows were made by different model entries). The message names what the table holds."""


#: The command-line flag that sets each filter, for messages (the Python API takes the same names).
FLAGS = {"k": "--k", "encoder": "--encoder", "mode": "--fss-mode", "models": "--models", "fps": "--fps",
         "seed": "--seed", "variant": "--variant"}
FINGERPRINT_COLUMN = "model_fingerprint"


def _listing(values: Sequence[Any], limit: int = 8) -> str:
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "") if values else "none"


def builtin_strategy_name(name: str) -> str:
    """The default strategy-name rule of :func:`prepare_table`: ``name`` equal to one of
    :data:`tempcore.records.BUILT_IN_STRATEGIES` up to case and surrounding blanks becomes that
    name (``" MaxProb"`` -> ``maxprob``); any other name is returned as given."""
    if name in BUILT_IN_STRATEGIES:
        return name
    lowered = name.strip().lower()
    return lowered if lowered in BUILT_IN_STRATEGIES else name


def prepare_table(table: pa.Table, canonical: Callable[[str], str] = builtin_strategy_name) -> pa.Table:
    """The table with strategy names canonicalised by ``canonical`` (see the module doc); an error
    it raises (``canonical_strategy`` on a near miss such as ``maxprb``) becomes a TableError.
    Returns the table unchanged when every name is canonical."""

    import pyarrow as pa
    import pyarrow.compute as pc

    if "strategy" not in table.column_names:
        return table
    mapping: dict[str, str] = {}
    for value in distinct(table.column("strategy")):
        text = str(value)
        try:
            name = canonical(text)
        except TempcoreError as exc:
            raise TableError(f"the predictions' strategy column: {exc}") from exc
        if name != text:
            mapping[text] = name
    if not mapping:
        return table
    col = table.column("strategy")
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    for old, new in mapping.items():
        col = pc.if_else(pc.fill_null(pc.equal(col, old), False), new, col)
    return table.set_column(table.column_names.index("strategy"), "strategy", col)


def explain_empty(
    table: pa.Table,
    strategy: str,
    mode: str | None,
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    flags: Mapping[str, str] | None = None,
) -> str:
    """Why no row of ``table`` is (strategy, mode) under ``filters`` and ``models``: the first
    narrowing step that empties the selection, with the values the table holds at that step."""
    import pyarrow as pa
    import pyarrow.compute as pc

    flags = {**FLAGS, **(flags or {})}
    what = strategy + (f" ({mode}-mode)" if mode else "")
    if table.num_rows == 0:
        return f"{what}: the predictions table has no rows at all"
    strategies = distinct(table.column("strategy"))
    sub = table.filter(pc.fill_null(pc.equal(table.column("strategy"), strategy), False))
    if sub.num_rows == 0:
        return f"{what}: the table has no {strategy} rows (its strategies: {_listing(strategies)})"
    if mode is not None:
        held = distinct(sub.column("mode"))
        sub = sub.filter(pc.fill_null(pc.equal(sub.column("mode"), mode), False))
        if sub.num_rows == 0:
            return f"{what}: the table's {strategy} rows have mode {_listing(held)}; {flags['mode']} asked for {mode}"
    for col, value in (filters or {}).items():
        if value is None:
            continue
        if col not in sub.column_names:
            return f"{what}: the table has no {col!r} column; {flags.get(col, col)} asked for {value}"
        held = distinct(sub.column(col))
        sub = sub.filter(pc.fill_null(pc.equal(sub.column(col), value), False))
        if sub.num_rows == 0:
            return f"{what}: the table has {col} {_listing(held)}; {flags.get(col, col)} asked for {value}"
    if models is not None:
        held = distinct(sub.column("model"))
        sub = sub.filter(pc.is_in(sub.column("model"), value_set=pa.array([str(m) for m in models])))
        if sub.num_rows == 0:
            return (f"{what}: the table's rows of this condition are of model(s) {_listing(held)}; "
                    f"{flags['models']} asked for {_listing(list(models))}")
    return f"{what}: {sub.num_rows} row(s) match"


def check_models(table: pa.Table, models: Sequence[str] | None) -> None:
    """Every name in ``models`` has rows in ``table`` (TableError naming the table's models)."""
    if models is None:
        return
    if not list(models):
        raise TableError(f"{FLAGS['models']} names no model")
    held = [str(m) for m in distinct(table.column("model"))]
    unknown = sorted(set(models) - set(held))
    if unknown:
        raise TableError(f"unknown model(s) {unknown}; the predictions have {held}")


def check_fingerprints(table: pa.Table, mask: np.ndarray | None = None, what: str = "predictions") -> None:
    """Refuse rows of one model name made by different model entries (``model_fingerprint``).

    Only the rows in ``mask`` (default: all) are compared; null fingerprints are skipped; a table
    without the column passes. The error names each model's fingerprints with their row counts.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if FINGERPRINT_COLUMN not in table.column_names or table.num_rows == 0:
        return
    t = table.select(["model", FINGERPRINT_COLUMN])
    if mask is not None:
        t = t.filter(pa.array(np.asarray(mask, dtype=bool)))
    t = t.filter(pc.is_valid(t.column(FINGERPRINT_COLUMN)))
    if t.num_rows == 0:
        return
    if pa.types.is_dictionary(t.column("model").type):
        t = t.set_column(0, "model", t.column("model").cast(pa.string()))
    counts = t.group_by(["model", FINGERPRINT_COLUMN]).aggregate([([], "count_all")]).to_pylist()
    per_model: dict[str, list[tuple[Any, int]]] = {}
    for row in counts:
        per_model.setdefault(str(row["model"]), []).append((row[FINGERPRINT_COLUMN], int(row["count_all"])))
    mixed = {m: sorted(v, key=lambda x: -x[1]) for m, v in per_model.items() if len(v) > 1}
    if not mixed:
        return
    parts = []
    for model in sorted(mixed):
        shown = ", ".join(f"{str(fp)[:12]} ({n} rows)" for fp, n in mixed[model])
        parts.append(f"model {model!r} has {len(mixed[model])} model_fingerprint values: {shown}")
    raise TableError(
        f"{what}: " + "; ".join(parts) + ". Its model entry (checkpoint, revision, prompt, generation settings) "
        "changed between runs, so these rows do not measure one model: rerun with --recompute, or give "
        "the entries different model names"
    )


def check_scoring(enc: EncodedPredictions, mask: np.ndarray, scoring: str, what: str = "the rows used") -> None:
    """``circular`` needs rows with several option rotations of a sample; ``soft`` needs
    ``p_correct`` values. A TableError says what the table lacks."""
    if scoring not in SCORINGS:
        raise DiagnosticsError(f"unknown scoring {scoring!r}; choose one of {', '.join(SCORINGS)}")
    t = enc.table
    if scoring == "circular":
        if "rotation" not in t.column_names:
            raise TableError("--scoring circular averages over option rotations, but the table has no rotation "
                             "column (run with option rotations, or use --scoring hard)")
        per_sample = enc.rotations_per_sample(mask)
        if per_sample.size == 0 or int(per_sample.max()) < 2:
            held = sorted({int(r) for r in enc.rotations()[np.flatnonzero(mask)]})
            raise TableError(f"--scoring circular averages over option rotations, but {what} have rotation "
                             f"{_listing(held)} only: no sample was asked in two or more rotations")
    elif scoring == "soft":
        if "p_correct" not in t.column_names:
            raise TableError("--scoring soft needs the probability of the correct option, but the table has no "
                             "p_correct column (models scored by option likelihood write it; or use --scoring hard)")
        rows = np.flatnonzero(mask & (enc.rotations() == 0))
        if rows.size and np.isnan(enc.numeric("p_correct")[rows]).all():
            raise TableError(f"--scoring soft needs p_correct values, but the table's p_correct is empty for "
                             f"{what} (use --scoring hard)")


@dataclass
class EncodedPredictions:
    """A tidy table with samples and models factorised to integer codes."""

    table: pa.Table
    sample_code: np.ndarray  # per row
    model_code: np.ndarray  # per row
    sample_benchmark: list[str]  # per sample
    sample_id: list[str]  # per sample
    models: list[str]

    @property
    def n_samples(self) -> int:
        return len(self.sample_id)

    def numeric(self, name: str) -> np.ndarray:
        """A column as float64 numpy (nulls -> NaN), converted once and cached."""
        cache: dict[str, np.ndarray] = self.__dict__.setdefault("_numeric", {})
        if name not in cache:
            cache[name] = self.table.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
        return cache[name]

    @classmethod
    def from_table(cls, table: pa.Table) -> EncodedPredictions:
        missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
        if missing:
            raise DiagnosticsError(f"predictions table lacks column(s) {missing}")
        table = prepare_table(unify_dictionaries(table))  # Parquet row groups may carry different dictionaries
        bench_codes, benches = identifier_codes(table.column("benchmark"))
        id_codes, ids = identifier_codes(table.column("sample_id"))
        model_codes, models = identifier_codes(table.column("model"))
        width = max(len(ids), 1)
        n_pairs = max(len(benches), 1) * width
        if len(benches) <= 1:
            combined = id_codes  # one benchmark: the pair is the sample id (no arithmetic over the rows)
        else:  # the narrowest integer type that holds every pair (fewer bytes touched per row)
            wide = np.int32 if n_pairs < 2**31 else np.int64
            combined = bench_codes.astype(wide)
            combined *= width
            combined += id_codes
        # Number the (benchmark, sample_id) pairs present, in O(rows) (no sort): a bitmap + cumsum.
        present = np.zeros(n_pairs, dtype=bool)
        present[combined] = True
        uniq = np.flatnonzero(present)
        sample_code = (np.cumsum(present) - 1)[combined]  # the cumsum is int64: so is the gather
        sample_benchmark = [benches[int(u) // width] for u in uniq]
        sample_ids = [ids[int(u) % width] for u in uniq]
        return cls(table, sample_code.astype(np.int64, copy=False), model_codes.astype(np.int64), sample_benchmark,
                   sample_ids, models)

    def rows(self, strategy: str, mode: str | None, filters: Mapping[str, Any] | None = None) -> np.ndarray:
        """Boolean row mask for a condition (strategy, mode, and equality filters)."""

        t = self.table
        mask = equal_mask(t.column("strategy"), strategy)
        if mode is not None:
            mask &= equal_mask(t.column("mode"), mode)
        for col, value in (filters or {}).items():
            if value is None or col not in t.column_names:
                if value is not None:
                    raise DiagnosticsError(f"cannot filter on {col}={value!r}: the table has no {col!r} column")
                continue
            mask &= equal_mask(t.column(col), value)
        return mask

    def check_unambiguous(self, mask: np.ndarray, what: str, filters: Mapping[str, Any]) -> None:
        import pyarrow as pa

        idx = pa.array(np.flatnonzero(mask))
        for col in _AMBIGUOUS:
            if col in filters and filters[col] is not None or col not in self.table.column_names:
                continue
            values = self.table.column(col).take(idx).unique().drop_null().to_pylist()
            if len(values) > 1:
                raise DiagnosticsError(
                    f"{what}: predictions mix several {col} values {sorted(values, key=str)}; choose one "
                    f"(e.g. --{col} {sorted(values, key=str)[0]})"
                )

    def rotations(self) -> np.ndarray:
        """Per-row option rotation (0 when the table has no ``rotation`` column or a null)."""
        t = self.table
        if "rotation" not in t.column_names:
            return np.zeros(t.num_rows, dtype=np.int64)
        rotation: np.ndarray = np.nan_to_num(self.numeric("rotation")).astype(np.int64)
        return rotation

    def rotations_per_sample(self, mask: np.ndarray) -> np.ndarray:
        """Number of distinct option rotations each sample has among the masked rows."""
        rows = np.flatnonzero(mask)
        rot = self.rotations()[rows]
        width = int(rot.max()) + 1 if rot.size else 1
        pairs = np.unique(self.sample_code[rows] * width + rot)
        return np.bincount(pairs // width, minlength=self.n_samples)

    def values(
        self, mask: np.ndarray, scoring: str, what: str, expected_rotations: np.ndarray | None = None
    ) -> np.ndarray:
        """(samples x models) matrix of correctness under ``scoring``; NaN where missing.

        For ``circular`` scoring a cell is the mean over rotations, and complete only when it has
        ``expected_rotations[sample]`` of them (default: every rotation the sample has in ``mask``).
        """
        if scoring not in SCORINGS:
            raise DiagnosticsError(f"unknown scoring {scoring!r}; choose one of {', '.join(SCORINGS)}")
        t = self.table
        rotation = self.rotations()
        if scoring != "circular":
            mask = mask & (rotation == 0)
        if scoring == "soft":
            if "p_correct" not in t.column_names:
                raise DiagnosticsError("soft scoring needs a p_correct column (probability on the correct option)")
            name = "p_correct"
        else:
            name = "correct"
        rows = np.flatnonzero(mask)
        vals = self.numeric(name)[rows]
        if np.isnan(vals).any():
            bad = rows[np.isnan(vals)][0]
            raise DiagnosticsError(
                f"{what}: missing {name} for sample "
                f"{self.sample_id[self.sample_code[bad]]!r}, model {self.models[self.model_code[bad]]!r}"
            )
        n_s, n_m = self.n_samples, len(self.models)
        cell = self.sample_code[rows] * n_m + self.model_code[rows]
        if scoring == "circular":
            rots = rotation[rows]
            self._no_duplicates(cell * (int(rots.max()) + 1 if rots.size else 1) + rots, rows, what)
            if expected_rotations is None:
                expected_rotations = self.rotations_per_sample(mask)
            total = np.bincount(cell, weights=vals, minlength=n_s * n_m)
            count = np.bincount(cell, minlength=n_s * n_m)
            out = np.full(n_s * n_m, np.nan)
            full = (count > 0) & (count == np.repeat(expected_rotations, n_m))
            out[full] = total[full] / count[full]
            return out.reshape(n_s, n_m)
        self._no_duplicates(cell, rows, what)
        out = np.full(n_s * n_m, np.nan)
        out[cell] = vals
        return out.reshape(n_s, n_m)

    def _no_duplicates(self, keys: np.ndarray, rows: np.ndarray, what: str) -> None:
        if keys.size == 0:
            return
        if int(keys.min()) >= 0:  # an O(rows) bitmap first: no sort unless there is a duplicate
            filled = np.zeros(int(keys.max()) + 1, dtype=bool)
            filled[keys] = True
            if int(np.count_nonzero(filled)) == keys.size:
                return
        order = np.argsort(keys, kind="stable")
        dup = np.flatnonzero(keys[order][1:] == keys[order][:-1])
        if dup.size:
            r = rows[order][dup[0]]
            raise DiagnosticsError(
                f"{what}: duplicate predictions for sample {self.sample_id[self.sample_code[r]]!r} of "
                f"{self.sample_benchmark[self.sample_code[r]]!r}, model {self.models[self.model_code[r]]!r}"
            )

    def _bench_of_sample(self) -> tuple[list[str], np.ndarray]:
        """The sorted benchmark names and each sample's index among them (``np.unique(...,
        return_inverse=True)`` of ``sample_benchmark``, without sorting a Python object per sample); cached."""
        cache = self.__dict__.get("_bench_cache")
        if cache is None:
            names = sorted(set(self.sample_benchmark))
            index = {b: i for i, b in enumerate(names)}
            codes = np.fromiter((index[b] for b in self.sample_benchmark), dtype=np.int64,
                                count=len(self.sample_benchmark))
            cache = self.__dict__["_bench_cache"] = (names, codes)
        return cache

    def panels(self, models: Sequence[str] | None = None, mask: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Per benchmark, the model columns of its panel: the models (within ``models``) with any row
        for it among the ``mask``-ed rows (default: all rows). Every benchmark of the table is a key."""
        if models is not None:
            check_models(self.table, models)
        allowed = np.array([models is None or m in models for m in self.models], dtype=bool)
        names, bench_of_sample = self._bench_of_sample()
        n_m = len(self.models)
        rows = slice(None) if mask is None else mask
        present = np.zeros(len(names) * n_m, dtype=bool)
        present[bench_of_sample[self.sample_code[rows]] * n_m + self.model_code[rows]] = True
        grid = present.reshape(len(names), n_m)
        return {str(b): np.flatnonzero(grid[i] & allowed) for i, b in enumerate(names)}
