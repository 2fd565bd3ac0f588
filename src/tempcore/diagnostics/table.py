"""From a tidy predictions table to (samples x models) matrices of correctness.

The tidy table (see ``tempcore export predictions``) has one row per prediction with at least
``benchmark, sample_id, model, strategy, mode, k, window, correct`` and optionally ``p_correct``
(probability on the correct option) and ``rotation`` (cyclic option rotation). Everything here is
vectorised (pyarrow compute + numpy) so millions of rows take seconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tempcore.errors import TempcoreError

REQUIRED_COLUMNS = ("benchmark", "sample_id", "model", "strategy", "mode", "k", "window", "correct")
SCORINGS = ("hard", "soft", "circular")
# Columns whose values must be unique among the rows a score uses, unless the caller filters them.
_AMBIGUOUS = ("k", "encoder", "fps", "seed", "variant")


class DiagnosticsError(TempcoreError):
    """The predictions cannot give the asked-for score (missing column, ambiguous condition...)."""


def _codes(column: Any) -> tuple[np.ndarray, list[Any]]:
    """Dictionary-encode a pyarrow column: (int codes per row, distinct values)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    if column.null_count:
        raise DiagnosticsError("identifier columns (benchmark, sample_id, model) may not contain nulls")
    return column.indices.to_numpy(zero_copy_only=False).astype(np.int64), column.dictionary.to_pylist()


@dataclass
class EncodedPredictions:
    """A tidy table with samples and models factorised to integer codes."""

    table: Any  # pyarrow.Table
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
        cache = self.__dict__.setdefault("_numeric", {})
        if name not in cache:
            cache[name] = self.table.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
        return cache[name]

    @classmethod
    def from_table(cls, table: Any) -> EncodedPredictions:
        missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
        if missing:
            raise DiagnosticsError(f"predictions table lacks column(s) {missing}")
        table = table.unify_dictionaries()  # Parquet row groups may carry different dictionaries
        bench_codes, benches = _codes(table.column("benchmark"))
        id_codes, ids = _codes(table.column("sample_id"))
        model_codes, models = _codes(table.column("model"))
        width = max(len(ids), 1)
        combined = bench_codes * width + id_codes
        # Number the (benchmark, sample_id) pairs present, in O(rows) (no sort): a bitmap + cumsum.
        present = np.zeros(max(len(benches), 1) * width, dtype=bool)
        present[combined] = True
        uniq = np.flatnonzero(present)
        sample_code = (np.cumsum(present) - 1)[combined]
        sample_benchmark = [benches[int(u) // width] for u in uniq]
        sample_ids = [ids[int(u) % width] for u in uniq]
        return cls(table, sample_code.astype(np.int64), model_codes, sample_benchmark, sample_ids, models)

    def rows(self, strategy: str, mode: str | None, filters: Mapping[str, Any] | None = None) -> np.ndarray:
        """Boolean row mask for a condition (strategy, mode, and equality filters)."""
        import pyarrow.compute as pc

        t = self.table
        mask = pc.equal(t.column("strategy"), strategy)
        if mode is not None:
            mask = pc.and_(mask, pc.equal(t.column("mode"), mode))
        for col, value in (filters or {}).items():
            if value is None or col not in t.column_names:
                if value is not None:
                    raise DiagnosticsError(f"cannot filter on {col}={value!r}: the table has no {col!r} column")
                continue
            mask = pc.and_(mask, pc.equal(t.column(col), value))
        return pc.fill_null(mask, False).to_numpy(zero_copy_only=False)

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
        return np.nan_to_num(self.numeric("rotation")).astype(np.int64)

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
        order = np.argsort(keys, kind="stable")
        dup = np.flatnonzero(keys[order][1:] == keys[order][:-1])
        if dup.size:
            r = rows[order][dup[0]]
            raise DiagnosticsError(
                f"{what}: duplicate predictions for sample {self.sample_id[self.sample_code[r]]!r} of "
                f"{self.sample_benchmark[self.sample_code[r]]!r}, model {self.models[self.model_code[r]]!r}"
            )

    def panels(self, models: Sequence[str] | None = None, mask: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Per benchmark, the model columns of its panel: the models (within ``models``) with any row
        for it among the ``mask``-ed rows (default: all rows). Every benchmark of the table is a key."""
        if models is not None:
            unknown = sorted(set(models) - set(self.models))
            if unknown:
                raise DiagnosticsError(f"unknown model(s) {unknown}; the predictions have {self.models}")
        allowed = np.array([models is None or m in models for m in self.models], dtype=bool)
        names, bench_of_sample = np.unique(np.array(self.sample_benchmark, dtype=object), return_inverse=True)
        n_m = len(self.models)
        rows = slice(None) if mask is None else mask
        present = np.zeros(len(names) * n_m, dtype=bool)
        present[bench_of_sample[self.sample_code[rows]] * n_m + self.model_code[rows]] = True
        present = present.reshape(len(names), n_m)
        return {str(b): np.flatnonzero(present[i] & allowed) for i, b in enumerate(names)}
