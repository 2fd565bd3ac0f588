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
from fractions import Fraction
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
    ``a_only + b_only`` discordant pairs at p = 1/2 (``min(1, 2 * P(X <= min))``); 1.0 with none.

    Exact rational arithmetic up to 2,000 discordant pairs, log-space sums above (scipy's
    ``binomtest`` gives the same; importing scipy.stats would cost more than a comparison)."""
    n = int(a_only) + int(b_only)
    k = min(int(a_only), int(b_only))
    if n == 0 or 2 * k >= n:
        return 1.0
    if n <= 2000:
        total = sum(math.comb(n, i) for i in range(k + 1))
        return min(1.0, float(Fraction(2 * total, 2**n)))
    i = np.arange(1, k + 1, dtype=np.float64)
    log_comb = np.concatenate([[0.0], np.cumsum(np.log(n - i + 1) - np.log(i))])
    top = float(log_comb.max())
    log_p = top + math.log(float(np.exp(log_comb - top).sum())) - (n - 1) * math.log(2.0)
    return min(1.0, math.exp(log_p))


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


def _check_columns(table: pa.Table, label: str) -> None:
    missing = [c for c in (*KEY, "correct") if c not in table.column_names]
    if missing:
        raise CompareError(f"{label}: no column {', '.join(missing)} (a comparison matches rows on "
                           f"{', '.join(KEY)} and compares correct)")


@dataclass
class _Matching:
    ia: np.ndarray  # rows of A matched, in A's order
    ib: np.ndarray  # their rows of B
    only_a: np.ndarray  # rows of A without a match
    only_b: np.ndarray  # rows of B without a match
    codes_a: dict[str, np.ndarray]  # key column -> codes of A's rows (shared numbering with B)
    codes_b: dict[str, np.ndarray]
    values: dict[str, list[Any]]  # key column -> the value of each code


def _match(a: pa.Table, b: pa.Table, labels: tuple[str, str]) -> _Matching:
    """Match rows on :data:`KEY` through codes shared by both tables (one hash pass per column)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from tempcore.diagnostics.kernel import combine_codes

    na, nb = a.num_rows, b.num_rows
    codes, cards, values = [], [], {}
    for name in KEY:
        chunks = []
        for t in (a, b):
            col = t.column(name)
            if pa.types.is_dictionary(col.type):
                col = col.cast(col.type.value_type)
            chunks += col.cast(pa.string()).chunks
        enc = pc.dictionary_encode(pa.chunked_array(chunks, pa.string())).combine_chunks()
        codes.append(np.asarray(enc.indices, dtype=np.int64))
        values[name] = enc.dictionary.to_pylist()
        cards.append(len(values[name]))
    ids, k, _ = combine_codes(codes, cards, na + nb, runs_above=1 << 62, need_first=False)
    ida, idb = ids[:na], ids[na:]
    for side, label in ((ida, labels[0]), (idb, labels[1])):
        counts = np.bincount(side, minlength=k)
        if (counts > 1).any():
            row = int(np.flatnonzero(counts[side] > 1)[0]) + (0 if side is ida else na)
            dup = " / ".join(str(values[c][codes[j][row]]) for j, c in enumerate(KEY))
            raise CompareError(f"{label}: {int((counts[counts > 1] - 1).sum())} row(s) repeat a key, e.g. {dup} "
                               f"({int(counts.max())} rows); a comparison needs one prediction per key")
    where_b = np.full(k, -1, dtype=np.int64)
    where_b[idb] = np.arange(nb)
    in_a = np.zeros(k, dtype=bool)
    in_a[ida] = True
    b_of_a = where_b[ida]
    ia = np.flatnonzero(b_of_a >= 0)
    return _Matching(ia, b_of_a[ia], np.flatnonzero(b_of_a < 0), np.flatnonzero(~in_a[idb]),
                     {c: codes[j][:na] for j, c in enumerate(KEY)}, {c: codes[j][na:] for j, c in enumerate(KEY)},
                     values)


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

    a, b = with_condition(a), with_condition(b)
    for table, label in ((a, labels[0]), (b, labels[1])):
        _check_columns(table, label)
    m = _match(a, b, labels)
    ia, ib = m.ia, m.ib
    keys = a.select(list(KEY)).take(pa.array(ia))

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

    accuracy = _accuracy(m, ca, cb, n_boot=n_boot, confidence=confidence, seed=seed)
    flipped_rows = _first_in_key_order(keys, np.flatnonzero(flip), limit)
    answers_a = _take(a, "answer", ia[flipped_rows]) or [None] * flipped_rows.size
    answers_b = _take(b, "answer", ib[flipped_rows]) or [None] * flipped_rows.size
    flipped = sorted(
        ({**{k: keys.column(k)[int(r)].as_py() for k in KEY}, "correct_a": int(ca[r]), "correct_b": int(cb[r]),
          "answer_a": x, "answer_b": y} for r, x, y in zip(flipped_rows, answers_a, answers_b)),
        key=lambda row: tuple(row[k] for k in KEY))
    only = {}
    for side, table, rows in (("a", a, m.only_a), ("b", b, m.only_b)):
        listing = table.select(list(KEY)).take(pa.array(_first_in_key_order(table.select(list(KEY)), rows, limit)))
        only[side] = listing.to_pylist()
    counts = {"a": a.num_rows, "b": b.num_rows, "matched": int(ia.size), "differing": int(differing.sum()),
              "only_a": int(m.only_a.size), "only_b": int(m.only_b.size)}
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


def _accuracy(m: _Matching, ca: np.ndarray, cb: np.ndarray, *, n_boot: int, confidence: float,
              seed: int) -> list[dict[str, Any]]:
    """Per (benchmark, model, condition): paired accuracies, B - A with its interval, McNemar."""
    group = ["benchmark", "model", "condition"]
    cards = [len(m.values[c]) for c in group]

    def gid(codes: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
        out = np.zeros(rows.size, dtype=np.int64)
        for c, card in zip(group, cards):
            out = out * card + codes[c][rows]
        return out

    def name_of(g: int) -> tuple[str, str, str]:
        parts = []
        for c, card in zip(reversed(group), reversed(cards)):
            parts.append(str(m.values[c][g % card]))
            g //= card
        return parts[2], parts[1], parts[0]

    one_side: dict[tuple[str, str, str], dict[str, int]] = {}
    for side, codes, rows in (("only_a", m.codes_a, m.only_a), ("only_b", m.codes_b, m.only_b)):
        ids, n = np.unique(gid(codes, rows), return_counts=True)
        for g, count in zip(ids.tolist(), n.tolist()):
            one_side.setdefault(name_of(g), {})[side] = count
    out: list[dict[str, Any]] = []
    uniq, inverse = np.unique(gid(m.codes_a, m.ia), return_inverse=True)
    inverse = inverse.ravel()
    names = [name_of(g) for g in uniq.tolist()]
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
