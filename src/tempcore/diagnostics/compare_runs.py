"""Two runs of the same predictions side by side: what differs, and whether accuracy moved.

:func:`compare_runs` takes two tidy predictions tables (a run's store or table read twice, or two
runs) and matches their rows on the key (benchmark, sample id, model, condition; a table without a ``condition`` column is keyed by
the condition key of its condition columns, :func:`with_condition`). Per matched pair:

* the fingerprints (``sample_hash``: question, options, video...; ``model_fingerprint``: the model
  entry; ``encoder_fingerprint``; ``prompt_hash``: the exact prompt), compared where both sides know
  them; with the data behind the hashes (a store's ``fingerprints`` table) the changed fields are named;
* the frames shown: identical, same count but other indices, or another count, and the largest time
  offset (same count: frame by frame in order; another count: the farthest frame from the other side's
  nearest, i.e. the Hausdorff distance of the two timestamp sets);
* the raw response and the parsed answer, and whether correctness flipped.

Per (benchmark, model, condition), over the matched pairs: each side's accuracy, the paired
difference B - A with a seeded percentile bootstrap interval over samples
(:func:`tempcore.diagnostics.stats.paired_bootstrap`), and an exact McNemar test (two-sided binomial
test of the discordant pairs at 1/2, :func:`mcnemar_exact`). Rows on one side only are counted and
named. Nothing else is compared (run ids, timestamps and latencies always differ between runs).
A table with a key twice is an error: a comparison needs one prediction per key and side.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.diagnostics.kernel import DiagnosticsError
from tempcore.diagnostics.stats import DEFAULT_BOOTSTRAP, bootstrap_mean

if TYPE_CHECKING:
    import pyarrow as pa

KEY = ("benchmark", "sample_id", "model", "condition")
#: fingerprint column -> what it stands for, in outputs
FINGERPRINTS = {
    "sample_hash": "sample (question, options, video)",
    "prompt_hash": "prompt",
    "model_fingerprint": "model entry",
    "encoder_fingerprint": "encoder",
}
_OTHER = ("correct", "answer", "response", "frame_indices", "frame_timestamps")
#: distinct (A, B) hash pairs listed per fingerprint column
MAX_CHANGES = 50


class CompareError(DiagnosticsError):
    """Two tables cannot be compared (a key column missing, a key twice on one side)."""


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Exact two-sided McNemar p-value: the binomial test of ``b_only`` successes out of the
    ``a_only + b_only`` discordant pairs at p = 1/2 (``min(1, 2 * P(X <= min))``); 1.0 with none."""
    n = int(a_only) + int(b_only)
    if n == 0:
        return 1.0
    from scipy import stats

    p = 2.0 * float(stats.binom.cdf(min(int(a_only), int(b_only)), n, 0.5))
    return min(1.0, p)


@dataclass
class RunComparison:
    """What :func:`compare_runs` found; :meth:`to_json` is ``tempcore compare --json``."""

    labels: tuple[str, str]
    rows: dict[str, int]
    fingerprints: dict[str, dict[str, Any]]
    frames: dict[str, Any]
    responses: dict[str, int]
    accuracy: list[dict[str, Any]]
    flipped: list[dict[str, Any]]
    only_a: list[dict[str, Any]]
    only_b: list[dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def differences(self) -> int:
        """Matched rows that differ in anything compared, plus the rows on one side only."""
        return int(self.rows["differing"] + self.rows["only_a"] + self.rows["only_b"])

    def to_json(self) -> dict[str, Any]:
        return {"a": self.labels[0], "b": self.labels[1], "differences": self.differences, "rows": self.rows,
                "fingerprints": self.fingerprints, "frames": self.frames, "responses": self.responses,
                "accuracy": self.accuracy, "flipped": self.flipped, "only_a": self.only_a, "only_b": self.only_b,
                "params": self.params}


def _plain(table: pa.Table, columns: list[str]) -> pa.Table:
    """The columns of ``table`` (dictionaries decoded, one chunk each) plus its row numbers."""
    import pyarrow as pa

    arrays = []
    for name in columns:
        col = table.column(name)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        arrays.append(col)
    return pa.table(arrays + [pa.array(np.arange(table.num_rows, dtype=np.int64))], names=[*columns, "__row"])


_CONDITION_FIELDS = {"strategy": str, "mode": str, "k": int, "window": int, "encoder": str, "fps": float,
                     "seed": int, "rotation": int, "variant": str}


def with_condition(table: pa.Table) -> pa.Table:
    """``table`` with a ``condition`` column: as it is when it has one, else the condition key
    (:attr:`tempcore.records.Condition.key`) of the condition columns it holds (``strategy``...;
    a column it lacks takes the Condition default)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from tempcore.records import Condition

    if "condition" in table.column_names or "strategy" not in table.column_names:
        return table
    present = [c for c in _CONDITION_FIELDS if c in table.column_names]
    texts = []
    for name in present:
        col = table.column(name)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        texts.append(pc.fill_null(col.cast(pa.string()), "\x01"))
    joined = pc.binary_join_element_wise(*texts, "\x00") if len(texts) > 1 else texts[0]
    encoded = pc.dictionary_encode(joined).combine_chunks()
    keys = []
    for combo in encoded.dictionary.to_pylist():
        values: dict[str, Any] = {}
        for name, raw in zip(present, combo.split("\x00")):
            if raw != "\x01" and not (name == "mode" and raw == ""):
                kind = _CONDITION_FIELDS[name]
                values[name] = int(float(raw)) if kind is int else kind(raw)
        if "k" not in values:
            values["k"] = None
        try:
            keys.append(Condition(**values).key)
        except (TypeError, ValueError):
            keys.append("|".join(f"{n}={v}" for n, v in values.items()))
    condition = pa.array(keys, pa.string()).take(encoded.indices)
    return table.append_column("condition", condition)


def _check_table(table: pa.Table, label: str) -> None:
    import pyarrow.compute as pc

    missing = [c for c in (*KEY, "correct") if c not in table.column_names]
    if missing:
        raise CompareError(f"{label}: no column {', '.join(missing)} (a comparison matches rows on "
                           f"{', '.join(KEY)} and compares correct)")
    keys = _plain(table, list(KEY)).select(list(KEY))
    counts = keys.group_by(list(KEY)).aggregate([([], "count_all")])
    if counts.num_rows != table.num_rows:
        dup = counts.filter(pc.greater(counts.column("count_all"), 1)).slice(0, 1).to_pylist()[0]
        raise CompareError(f"{label}: {table.num_rows - counts.num_rows} row(s) repeat a key, e.g. "
                           f"{dup['benchmark']} / {dup['sample_id']} / {dup['model']} / {dup['condition']} "
                           f"({dup['count_all']} rows); a comparison needs one prediction per key")


def _take(table: pa.Table, name: str, rows: np.ndarray) -> list[Any] | None:
    if name not in table.column_names:
        return None
    return table.column(name).take(rows).to_pylist()  # type: ignore[no-any-return]


def _differ(table_a: pa.Table, table_b: pa.Table, name: str, ia: np.ndarray, ib: np.ndarray,
            *, empty_unknown: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
    """(differ, known) masks of one column over the matched pairs; ``None`` when a side lacks it.
    Both null is equal; with ``empty_unknown`` an empty value counts as null and a value on one
    side only is unknown (not a difference)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if name not in table_a.column_names or name not in table_b.column_names:
        return None
    a = table_a.column(name).take(pa.array(ia))
    b = table_b.column(name).take(pa.array(ib))
    if pa.types.is_dictionary(a.type):
        a = a.cast(a.type.value_type)
    if pa.types.is_dictionary(b.type):
        b = b.cast(b.type.value_type)
    if a.type != b.type:
        b = b.cast(a.type)
    null_a = np.asarray(pc.is_null(a)).astype(bool)
    null_b = np.asarray(pc.is_null(b)).astype(bool)
    equal = np.asarray(pc.fill_null(pc.equal(a, b), False)).astype(bool) | (null_a & null_b)
    if empty_unknown:
        if pa.types.is_string(a.type) or pa.types.is_large_string(a.type):
            null_a |= np.asarray(pc.fill_null(pc.equal(a, ""), False)).astype(bool)
            null_b |= np.asarray(pc.fill_null(pc.equal(b, ""), False)).astype(bool)
        equal |= null_a & null_b  # neither side has one (e.g. no encoder for a no-frame row)
        known = ~(null_a ^ null_b)
        return ~equal & known, known
    return ~equal, np.ones(ia.size, dtype=bool)


def _changed_fields(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str] | None:
    if old is None or new is None:
        return None
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


def _frame_offset(ta: list[float], tb: list[float]) -> float:
    if not ta or not tb:
        return math.nan
    x, y = np.asarray(ta, dtype=np.float64), np.asarray(tb, dtype=np.float64)
    if x.size == y.size:
        return float(np.abs(x - y).max())
    d = np.abs(x[:, None] - y[None, :])
    return float(max(d.min(axis=1).max(), d.min(axis=0).max()))


def _json_list(text: Any) -> list[Any] | None:
    if text is None:
        return None
    value = json.loads(text) if isinstance(text, str) else text
    return list(value) if isinstance(value, (list, tuple)) else None


def compare_runs(
    a: pa.Table,
    b: pa.Table,
    *,
    labels: tuple[str, str] = ("A", "B"),
    fingerprint_data: Mapping[str, Mapping[str, Any]] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = 0,
    limit: int | None = None,
) -> RunComparison:
    """Compare two tidy predictions tables (module docstring). ``fingerprint_data`` maps a hash to
    the data behind it (both stores' ``fingerprints`` tables) so a changed fingerprint names its
    fields; ``limit`` caps each listing (flipped, only A, only B; ``None``: all), never a count."""
    import pyarrow as pa
    import pyarrow.compute as pc

    a, b = with_condition(a), with_condition(b)
    for table, label in ((a, labels[0]), (b, labels[1])):
        _check_table(table, label)
    ka, kb = _plain(a, list(KEY)), _plain(b, list(KEY))
    joined = ka.join(kb, keys=list(KEY), join_type="full outer", left_suffix="_a", right_suffix="_b",
                     coalesce_keys=True)
    row_a = joined.column("__row_a")
    row_b = joined.column("__row_b")
    has_a = np.asarray(pc.is_valid(row_a)).astype(bool)
    has_b = np.asarray(pc.is_valid(row_b)).astype(bool)
    both = has_a & has_b
    ia = np.asarray(pc.fill_null(row_a, 0)).astype(np.int64)[both]
    ib = np.asarray(pc.fill_null(row_b, 0)).astype(np.int64)[both]
    keys = joined.select(list(KEY)).filter(pa.array(both))

    differing = np.zeros(ia.size, dtype=bool)
    fingerprints: dict[str, dict[str, Any]] = {}
    data = fingerprint_data or {}
    for name, what in FINGERPRINTS.items():
        res = _differ(a, b, name, ia, ib, empty_unknown=True)
        if res is None:
            continue
        diff, known = res
        differing |= diff
        rows = np.flatnonzero(diff)
        entry: dict[str, Any] = {"what": what, "differ": int(rows.size), "unknown": int((~known).sum())}
        if rows.size:
            va = a.column(name).take(pa.array(ia[rows])).to_pylist()
            vb = b.column(name).take(pa.array(ib[rows])).to_pylist()
            bench = keys.column("benchmark").take(pa.array(rows)).to_pylist()
            sample = keys.column("sample_id").take(pa.array(rows)).to_pylist()
            model = keys.column("model").take(pa.array(rows)).to_pylist()
            pairs: dict[tuple[str, str], int] = {}
            for x, y in zip(va, vb):
                pairs[(x, y)] = pairs.get((x, y), 0) + 1
            entry["samples"] = len(set(zip(bench, sample)))
            entry["models"] = sorted(set(model))
            entry["changes"] = [
                {"a": x, "b": y, "rows": n, "fields": _changed_fields(data.get(x), data.get(y))}
                for (x, y), n in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_CHANGES]
            ]
        fingerprints[name] = entry

    frames: dict[str, Any] = {"compared": 0, "identical": 0, "different_indices": 0, "different_count": 0,
                              "unknown": 0, "max_offset_s": None, "max_offset_at": None}
    res = _differ(a, b, "frame_indices", ia, ib)
    if res is not None:
        diff, _ = res
        frames["compared"] = int(ia.size)
        frames["identical"] = int(ia.size - diff.sum())
        rows = np.flatnonzero(diff)
        fa = a.column("frame_indices").take(pa.array(ia[rows])).to_pylist()
        fb = b.column("frame_indices").take(pa.array(ib[rows])).to_pylist()
        ta = _take(a, "frame_timestamps", ia[rows]) or [None] * rows.size
        tb = _take(b, "frame_timestamps", ib[rows]) or [None] * rows.size
        worst, worst_at = -1.0, None
        for r, xa, xb, sa, sb in zip(rows, fa, fb, ta, tb):
            la, lb = _json_list(xa), _json_list(xb)
            if la is None or lb is None:
                frames["unknown"] += 1
                continue
            differing[r] = True
            frames["different_indices" if len(la) == len(lb) else "different_count"] += 1
            ts_a, ts_b = _json_list(sa), _json_list(sb)
            if ts_a is not None and ts_b is not None:
                off = _frame_offset(ts_a, ts_b)
                if not math.isnan(off) and off > worst:
                    worst, worst_at = off, {k: keys.column(k)[int(r)].as_py() for k in KEY}
        if worst_at is not None:
            frames["max_offset_s"], frames["max_offset_at"] = worst, worst_at
    responses: dict[str, int] = {}
    for name in ("response", "answer"):
        res = _differ(a, b, name, ia, ib)
        if res is not None:
            responses[name] = int(res[0].sum())
            differing |= res[0]
    ca = np.asarray(a.column("correct").take(pa.array(ia)).to_numpy(zero_copy_only=False), dtype=np.float64)
    cb = np.asarray(b.column("correct").take(pa.array(ib)).to_numpy(zero_copy_only=False), dtype=np.float64)
    flip = ca != cb
    responses["correct"] = int(flip.sum())
    differing |= flip

    accuracy = _accuracy(keys, ca, cb, joined, has_a, has_b, n_boot=n_boot, confidence=confidence, seed=seed)
    flipped_rows = _first_in_key_order(keys, np.flatnonzero(flip), limit)
    answers_a = _take(a, "answer", ia[flipped_rows]) or [None] * flipped_rows.size
    answers_b = _take(b, "answer", ib[flipped_rows]) or [None] * flipped_rows.size
    flipped = sorted(
        ({**{k: keys.column(k)[int(r)].as_py() for k in KEY}, "correct_a": int(ca[r]), "correct_b": int(cb[r]),
          "answer_a": x, "answer_b": y} for r, x, y in zip(flipped_rows, answers_a, answers_b)),
        key=lambda row: tuple(row[k] for k in KEY))
    only = {}
    for side, mask in (("a", has_a & ~has_b), ("b", has_b & ~has_a)):
        listing = joined.select(list(KEY)).filter(pa.array(mask)).sort_by([(k, "ascending") for k in KEY])
        only[side] = listing.slice(0, limit).to_pylist() if limit is not None else listing.to_pylist()
    counts = {"a": a.num_rows, "b": b.num_rows, "matched": int(ia.size), "differing": int(differing.sum()),
              "only_a": int((has_a & ~has_b).sum()), "only_b": int((has_b & ~has_a).sum())}
    params = {"n_boot": n_boot, "confidence": confidence, "seed": seed, "limit": limit}
    return RunComparison(labels, counts, fingerprints, frames, responses, accuracy, flipped, only["a"], only["b"],
                         params)


def _first_in_key_order(keys: pa.Table, rows: np.ndarray, limit: int | None) -> np.ndarray:
    """``rows`` of ``keys`` sorted by key, the first ``limit`` of them (``None``: all)."""
    import pyarrow as pa

    if rows.size == 0:
        return rows
    sub = keys.take(pa.array(rows)).append_column("__i", pa.array(np.arange(rows.size)))
    order = np.asarray(sub.sort_by([(k, "ascending") for k in KEY]).column("__i"), dtype=np.int64)
    return rows[order][:limit]


def _accuracy(keys: pa.Table, ca: np.ndarray, cb: np.ndarray, joined: pa.Table, has_a: np.ndarray,
              has_b: np.ndarray, *, n_boot: int, confidence: float, seed: int) -> list[dict[str, Any]]:
    """Per (benchmark, model, condition): paired accuracies, B - A with its interval, McNemar."""
    import pyarrow as pa
    import pyarrow.compute as pc

    group = ["benchmark", "model", "condition"]
    one_side: dict[tuple[str, str, str], dict[str, int]] = {}
    for side, mask in (("only_a", has_a & ~has_b), ("only_b", has_b & ~has_a)):
        if mask.any():
            counted = joined.select(group).filter(pa.array(mask)).group_by(group).aggregate([([], "count_all")])
            for row in counted.to_pylist():
                one_side.setdefault((row["benchmark"], row["model"], row["condition"]), {})[side] = row["count_all"]
    out: list[dict[str, Any]] = []
    names: list[tuple[str, str, str]] = []
    if keys.num_rows:
        combined = np.zeros(keys.num_rows, dtype=np.int64)
        dictionaries = []
        for c in group:
            enc = pc.dictionary_encode(keys.column(c)).combine_chunks()
            card = len(enc.dictionary)
            combined = combined * card + np.asarray(enc.indices, dtype=np.int64)
            dictionaries.append((enc.dictionary.to_pylist(), card))
        uniq, inverse = np.unique(combined, return_inverse=True)
        inverse = inverse.ravel()
        for u in uniq.tolist():
            parts = []
            for values, card in reversed(dictionaries):
                parts.append(values[u % card])
                u //= card
            names.append((parts[2], parts[1], parts[0]))
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(len(names) + 1))
    for g, name in enumerate(names):
        rows = order[bounds[g]:bounds[g + 1]]
        x, y = ca[rows], cb[rows]
        a_only = int(((x == 1) & (y == 0)).sum())
        b_only = int(((x == 0) & (y == 1)).sum())
        boot = bootstrap_mean(y - x, n_boot=n_boot, confidence=confidence, seed=seed)
        extra = one_side.pop(name, {})
        out.append({"benchmark": name[0], "model": name[1], "condition": name[2], "n": int(rows.size),
                    "accuracy_a": float(x.mean()), "accuracy_b": float(y.mean()), **boot.as_dict("delta"),
                    "a_only_correct": a_only, "b_only_correct": b_only, "mcnemar_p": mcnemar_exact(a_only, b_only),
                    "only_a": extra.get("only_a", 0), "only_b": extra.get("only_b", 0)})
    for name, extra in sorted(one_side.items()):  # a group with no matched pair
        out.append({"benchmark": name[0], "model": name[1], "condition": name[2], "n": 0, "accuracy_a": None,
                    "accuracy_b": None, "delta": None, "delta_ci_low": None, "delta_ci_high": None,
                    "a_only_correct": 0, "b_only_correct": 0, "mcnemar_p": None,
                    "only_a": extra.get("only_a", 0), "only_b": extra.get("only_b", 0)})
    out.sort(key=lambda r: (r["benchmark"], r["model"], r["condition"]))
    return out


__all__ = ["FINGERPRINTS", "KEY", "CompareError", "RunComparison", "compare_runs", "mcnemar_exact", "with_condition"]
