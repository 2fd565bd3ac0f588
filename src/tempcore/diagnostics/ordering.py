"""Order sensitivity per sample: does a model need the base frames *in order*? (ours, beyond the papers).

Definitions (:func:`order_sensitivity`): ``OS_i = 1/|M| sum_m (correct with the base frames in order -
correct with the same frames shuffled)``, likewise ``reversed``; the panel M of a benchmark is every
model with rows under the video or the reordering; a sample lacking a panel model's value for
either has no OS (incomplete), as in FSS. Classes at tau: Key (OS > tau), Non-key, Anti-key
(:func:`tempcore.diagnostics.core.fss_categories`). *Order-sensitive* (our reading): Key under
shuffled or under reversed (whichever the table has). Crossed with the FSS x LIS taxonomy
(:func:`taxonomy_of`, when the table has MaxProb / MinProb / no-frame rows): the share of
order-sensitive samples among all samples with an OS, and among the Temporally Sensitive ones,
the samples that need *the right frames in the right order*.

Input: the arrays of :func:`tempcore.diagnostics.ablation_arrays.prepare`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tempcore.diagnostics.ablation_arrays import REORDERINGS, Prepared
from tempcore.diagnostics.core import fss_categories
from tempcore.diagnostics.kernel import in_dictionary
from tempcore.diagnostics.table import DiagnosticsError

_TS = ("temporally_grounded", "visual_bias")



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
    Temporally Sensitive samples). ``category``: the taxonomy per sample, in ``prep``'s sample order.

    ``OS_i = 1/|M| sum_m (correct with the base frames in order - correct with the same frames
    shuffled)``, likewise ``reversed``; the panel M of a benchmark is every model with rows under
    the video or the reordering; a sample lacking a panel model's value for either has no OS
    (incomplete), as in FSS. Classes at tau: Key (OS > tau), Non-key, Anti-key. *Order-sensitive*
    (our reading): Key under shuffled or under reversed (whichever the table has).
    """
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


__all__ = ["OrderSensitivity", "order_sensitivity", "taxonomy_of"]
