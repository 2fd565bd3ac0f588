"""Grounding predictions as groups of scores: the layer under ``tempcore grounding``.

Two inputs:

* a **tidy predictions table** (CSV / Parquet / JSONL, see :mod:`tempcore.tidy.table`) whose rows carry
  ``pred_start`` / ``pred_end`` (seconds; null or NaN = parse failure; a ``parse_error`` column
  equal to 1 also marks one) and / or ``iou``. Needed: ``sample_id``, ``model``, ``strategy``.
  With the benchmark's samples, IoUs are computed against every GT window (best match); without
  them the table's ``iou`` column is used (null = parse failure, IoU 0). Groups: model x
  condition (the ``condition`` column, else the strategy); a group's JSON names its
  ``condition`` too when one model has several conditions of the same strategy.
* a **moment-retrieval submission** (QVHighlights JSONL: ``qid``, ``pred_relevant_windows:
  [[start, end, score], ...]``, ranked), scored against the samples: R1@τ and mAP (QVHighlights'
  evaluation, :func:`tempcore.diagnostics.grounding.moment_retrieval`), plus mIoU / R@τ of the
  first listed window. Every annotated query counts: one missing from the submission (or with
  no window) is a parse failure (IoU 0, AP 0). A ``qid`` the annotations do not have is an error.

pyarrow is imported inside the functions.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tempcore import safejson
from tempcore.diagnostics import grounding as gm
from tempcore.errors import TempcoreError
from tempcore.records import Sample


class GroundingInputError(TempcoreError):
    """A predictions file or annotations that ``tempcore grounding`` cannot score."""


def is_submission(path: str | os.PathLike[str]) -> bool:
    """True for a JSONL file whose first object has ``pred_relevant_windows``."""
    p = Path(path)
    if p.suffix.lower() not in (".jsonl", ".ndjson", ".json"):
        return False
    for _lineno, line in safejson.split_lines(p.read_bytes()):
        if line.strip():
            try:
                first = safejson.loads(safejson.decode_line(line))
            except ValueError:  # malformed, too deep (JSONTooDeepError) or not UTF-8: not a submission
                return False
            return isinstance(first, dict) and "pred_relevant_windows" in first
    return False


def read_submission(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a moment-retrieval submission, checked (``qid`` and a list of [s, e, score]).

    Lines are split on ``\n`` only, each must be UTF-8 and nested at most
    :data:`tempcore.safejson.MAX_DEPTH` levels (a bad line is an error naming it)."""
    rows = []
    for lineno, line in safejson.split_lines(Path(path).read_bytes()):
        if not line.strip():
            continue
        try:
            d = safejson.loads(safejson.decode_line(line))
        except safejson.JSONTooDeepError as exc:
            raise GroundingInputError(f"{path}:{lineno}: {exc}") from None
        except json.JSONDecodeError as exc:
            raise GroundingInputError(f"{path}:{lineno}: malformed JSON line: {exc.msg}") from None
        except ValueError as exc:
            raise GroundingInputError(f"{path}:{lineno}: {exc}") from None
        if not isinstance(d, dict) or "qid" not in d or not isinstance(d.get("pred_relevant_windows"), list):
            raise GroundingInputError(f"{path}:{lineno}: need 'qid' and a list 'pred_relevant_windows'")
        for w in d["pred_relevant_windows"]:
            if not (isinstance(w, (list, tuple)) and len(w) >= 3):
                raise GroundingInputError(f"{path}:{lineno}: a predicted window must be [start, end, score]")
        rows.append(d)
    return rows


def read_table(path: str | os.PathLike[str]) -> Any:
    """A grounding predictions table (pyarrow) with its columns checked."""
    from tempcore.tidy.formats import read_table_file
    from tempcore.tidy.table import PredictionsTableError

    p = Path(path)
    try:  # the hardened reader: depth-bounded JSON, UTF-8 named by line, CSV strings kept as written
        table = read_table_file(p)
    except PredictionsTableError as exc:
        raise GroundingInputError(str(exc)) from exc
    missing = [c for c in ("sample_id", "model", "strategy") if c not in table.column_names]
    if missing:
        raise GroundingInputError(f"{p}: missing column(s) {', '.join(missing)}")
    if not ({"pred_start", "pred_end"} <= set(table.column_names) or "iou" in table.column_names):
        raise GroundingInputError(f"{p}: a grounding table needs pred_start and pred_end (or iou) columns")
    return table


@dataclass(frozen=True)
class GroundTruth:
    """The GT windows of grounding samples, flat: ``ids`` (sample ids in order), ``start`` /
    ``end`` (seconds) and ``item`` (the owning sample's position in ``ids``), windows grouped
    by sample in order. Build once per benchmark with :meth:`from_samples`."""

    ids: list[str]
    start: np.ndarray
    end: np.ndarray
    item: np.ndarray

    @classmethod
    def from_samples(cls, samples: Sequence[Sample]) -> GroundTruth:
        ids = [s.sample_id for s in samples]
        counts = np.fromiter((len(s.answer_windows) for s in samples), dtype=np.int64, count=len(samples))
        flat = np.fromiter(itertools.chain.from_iterable(w for s in samples for w in s.answer_windows),
                           dtype=np.float64, count=2 * int(counts.sum()))
        item = np.repeat(np.arange(len(samples), dtype=np.int64), counts)
        return cls(ids, flat[0::2].copy(), flat[1::2].copy(), item)


def gt_arrays(samples: Sequence[Sample] | GroundTruth) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(sample ids, flat window starts, ends, owning sample index) of grounding samples."""
    gt = samples if isinstance(samples, GroundTruth) else GroundTruth.from_samples(samples)
    return gt.ids, gt.start, gt.end, gt.item


def _col(table: Any, name: str, dtype: Any = np.float64) -> np.ndarray:
    import pyarrow as pa

    col = table.column(name)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    out: np.ndarray = (col.cast(pa.float64()) if dtype is np.float64 else col).to_numpy(zero_copy_only=False)
    return out


def _codes(table: Any, name: str) -> tuple[np.ndarray, list[str]]:
    """Codes of a column read as text (a dictionary column in its dictionary's order, else by first
    occurrence) and the values; empty values are an error."""
    import pyarrow as pa

    from tempcore.diagnostics.kernel import identifier_codes

    col = table.column(name)
    if not pa.types.is_dictionary(col.type):
        col = col.cast(pa.string())
    if col.null_count:
        raise GroundingInputError(f"column {name} has empty values")
    codes, values = identifier_codes(col)
    return codes.astype(np.int64), [str(v) for v in values]


def _only_benchmark(table: Any, benchmark: str | None) -> Any:
    """The rows of ``benchmark`` (all rows without a name or a ``benchmark`` column)."""
    import pyarrow as pa

    if benchmark is None or "benchmark" not in table.column_names:
        return table
    codes, values = _codes(table, "benchmark")
    if values == [benchmark]:
        return table
    keep = codes == (values.index(benchmark) if benchmark in values else -1)
    return table.filter(pa.array(keep))


def table_scores(
    table: Any,
    samples: Sequence[Sample] | GroundTruth | None = None,
    *,
    benchmark: str | None = None,
    reversed: str = "invalid",
    with_offsets: bool = False,
) -> dict[str, np.ndarray]:
    """Per row: ``iou`` (best GT window; NaN for a sample without window), ``parse_fail``, and
    with samples and ``with_offsets`` the ``centre`` / ``edge`` offsets to the nearest GT window."""
    import pyarrow.compute as pc

    table = _only_benchmark(table, benchmark)
    n = table.num_rows
    has_bounds = {"pred_start", "pred_end"} <= set(table.column_names)
    pf = np.zeros(n, dtype=bool)
    if "parse_error" in table.column_names:
        pf |= np.nan_to_num(_col(table, "parse_error"), nan=0.0) == 1
    out: dict[str, np.ndarray] = {}
    if samples is not None and has_bounds:
        ps, pe = _col(table, "pred_start"), _col(table, "pred_end")
        if pf.any():  # a parse_error row's bounds are not read
            ps, pe = np.where(pf, np.nan, ps), np.where(pf, np.nan, pe)
        pf |= np.isnan(ps) | np.isnan(pe)
        ids, gs, ge, gi = gt_arrays(samples)
        vps, vpe = gm.valid_spans(ps, pe, reversed=reversed)
        gs, ge = gm.valid_spans(gs, ge, reversed=reversed)
        import pyarrow as pa

        sid = table.column("sample_id")
        if not pa.types.is_dictionary(sid.type):
            sid = pc.dictionary_encode(sid.cast(pa.string()))
        sid = sid.combine_chunks() if isinstance(sid, pa.ChunkedArray) else sid
        at = pc.index_in(sid.dictionary.cast(pa.string()), value_set=pa.array(ids, pa.string()))
        at = at.cast(pa.float64()).to_numpy(zero_copy_only=False)
        pos = at[sid.indices.to_numpy(zero_copy_only=False)]
        if np.isnan(pos).any():
            bad = sid.dictionary[int(sid.indices[int(np.flatnonzero(np.isnan(pos))[0])].as_py())].as_py()
            raise GroundingInputError(f"sample {bad!r} of the predictions is not in the annotations")
        pos = pos.astype(np.int64)
        counts = np.bincount(gi, minlength=len(ids))
        offs = np.concatenate(([0], np.cumsum(counts)))
        c = counts[pos]
        if np.all(c == 1):
            w = offs[pos]
            out["iou"] = gm.iou_of_valid(vps, vpe, gs[w], ge[w])
            rows, wgs, wge = None, gs[w], ge[w]
        else:  # every (prediction, GT window) pair, rows contiguous: the best per row by reduceat
            first = np.concatenate(([0], np.cumsum(c)[:-1]))
            w = np.repeat(offs[pos] - first, c) + np.arange(int(c.sum()))
            wgs, wge = gs[w], ge[w]
            rows = np.repeat(np.arange(n), c) if with_offsets else None
            vals = gm.iou_of_valid(np.repeat(vps, c), np.repeat(vpe, c), wgs, wge)
            best = np.full(n, np.nan)
            has = c > 0
            best[has] = np.maximum.reduceat(vals, first[has]) if vals.size else best[has]
            out["iou"] = best
        out["iou"][pf & ~np.isnan(out["iou"])] = 0.0
        if with_offsets:
            out["centre"], out["edge"] = gm.offsets(ps, pe, wgs, wge, rows)
    elif "iou" in table.column_names:
        v = _col(table, "iou")
        pf |= np.isnan(v)
        out["iou"] = np.where(pf, 0.0, v)
    else:
        raise GroundingInputError(
            "the predictions have pred_start / pred_end but no iou column: give --benchmark and --annotations"
        )
    out["parse_fail"] = pf
    return out


def table_groups(
    table: Any,
    samples: Sequence[Sample] | GroundTruth | None = None,
    *,
    benchmark: str | None = None,
    thresholds: Sequence[float] = gm.THRESHOLDS,
    strict: bool = False,
    reversed: str = "invalid",
    split: bool = False,
    fail_iou: float = 0.05,
    offset_s: float = 300.0,
) -> list[dict[str, Any]]:
    """One dict per model x condition: ``model``, ``strategy`` (``condition`` when needed), ``n``,
    ``miou``, ``recall``, ``parse_fail`` (+ ``split``: the search / localize split)."""

    table = _only_benchmark(table, benchmark)
    scores = table_scores(table, samples, reversed=reversed, with_offsets=split)
    model, models = _codes(table, "model")
    use_cond = "condition" in table.column_names and table.column("condition").null_count == 0
    cond, conds = _codes(table, "condition" if use_cond else "strategy")
    # a condition key starts with its strategy (Condition.key)
    cond_strategy = [c.split("|", 1)[0] for c in conds]
    n_keys = len(models) * len(conds)
    key = model * len(conds) + cond
    present = np.flatnonzero(np.bincount(key, minlength=n_keys))
    lut = np.zeros(max(n_keys, 1), dtype=np.int64)
    lut[present] = np.arange(present.size)
    group = lut[key]
    sums = gm.group_summaries(group, scores["iou"], scores["parse_fail"], present.size, thresholds, strict=strict)
    per_strategy: dict[tuple[int, str], int] = {}
    for k in present:
        mk = (int(k) // len(conds), cond_strategy[int(k) % len(conds)])
        per_strategy[mk] = per_strategy.get(mk, 0) + 1
    out = []
    for g, k in enumerate(present):
        mi, ci = int(k) // len(conds), int(k) % len(conds)
        row: dict[str, Any] = {"model": models[mi], "strategy": cond_strategy[ci]}
        if per_strategy[(mi, cond_strategy[ci])] > 1:
            row["condition"] = conds[ci]
        row.update({
            "n": int(sums["n"][g]),
            "miou": _num(sums["miou"][g]),
            "recall": {gm._key(t): _num(sums[f"recall@{gm._key(t)}"][g]) for t in thresholds},
            "parse_fail": _num(sums["parse_fail"][g]),
        })
        if split:
            if "centre" not in scores:
                raise GroundingInputError("the search / localize split needs pred_start / pred_end and annotations")
            sel = group == g
            row["split"] = gm.search_localize(scores["iou"][sel], scores["parse_fail"][sel], scores["centre"][sel],
                                              scores["edge"][sel], fail_iou=fail_iou, offset_s=offset_s)
        out.append(row)
    out.sort(key=lambda r: (r["model"], r["strategy"], r.get("condition", "")))
    return out


def submission_group(
    rows: Sequence[dict[str, Any]],
    samples: Sequence[Sample],
    *,
    model: str,
    strategy: str = "submission",
    thresholds: Sequence[float] = gm.THRESHOLDS,
    strict: bool = False,
    reversed: str = "invalid",
    bins: bool = False,
) -> dict[str, Any]:
    """The one group of a moment-retrieval submission (see the module doc)."""
    ids, gs, ge, gi = gt_arrays(samples)
    index = {sid: i for i, sid in enumerate(ids)}
    ps, pe, sc, pi = [], [], [], []
    seen = set()
    for d in rows:
        qid = str(d["qid"])
        if qid not in index:
            raise GroundingInputError(f"query {qid!r} of the submission is not in the annotations")
        if qid in seen:
            raise GroundingInputError(f"query {qid!r} appears twice in the submission")
        seen.add(qid)
        for w in d["pred_relevant_windows"]:
            ps.append(w[0])
            pe.append(w[1])
            sc.append(w[2])
            pi.append(index[qid])
    ps_a, pe_a, sc_a = (np.asarray(x, dtype=np.float64) for x in (ps, pe, sc))
    pi_a = np.asarray(pi, dtype=np.int64)
    n = len(ids)
    mr = gm.moment_retrieval(ps_a, pe_a, sc_a, pi_a, gs, ge, gi, n, bins=gm.LENGTH_BINS if bins else None,
                             reversed=reversed)
    # top-1 (first listed) window per query for mIoU / R@tau
    top_s, top_e = np.full(n, np.nan), np.full(n, np.nan)
    first = np.ones(pi_a.size, bool)
    first[1:] = pi_a[1:] != pi_a[:-1]
    top_s[pi_a[first]] = ps_a[first]
    top_e[pi_a[first]] = pe_a[first]
    pf = np.isnan(top_s)
    best, _ = gm.best_iou(top_s, top_e, gs, ge, gi, reversed=reversed)
    best[pf & ~np.isnan(best)] = 0.0
    summary = gm.grounding_summary(best, pf, thresholds, strict=strict)
    out = {
        "model": model,
        "strategy": strategy,
        "n": summary["n"],
        "miou": _num(summary["miou"]),
        "recall": {k: _num(v) for k, v in summary["recall"].items()},
        "parse_fail": _num(summary["parse_fail"]),
        "r1": {k: _num(v) for k, v in mr["r1"].items()},
        "map": _num(mr["map"]),
        "map_at": {k: _num(mr["map_at"][k]) for k in ("0.5", "0.75")},
    }
    if bins:
        out["bins"] = {
            name: {"n": b["n"], "r1": {k: _num(v) for k, v in b["r1"].items()}, "map": _num(b["map"]),
                   "map_at": {k: _num(b["map_at"][k]) for k in ("0.5", "0.75")}}
            for name, b in mr["bins"].items()
        }
    return out


def _num(x: float) -> float | None:
    """JSON-safe: NaN -> None."""
    x = float(x)
    return None if np.isnan(x) else x


__all__ = [
    "GroundTruth",
    "GroundingInputError",
    "gt_arrays",
    "is_submission",
    "read_submission",
    "read_table",
    "submission_group",
    "table_groups",
    "table_scores",
]
