"""The grounding analyses over a tidy predictions table: the window-length sweep and candidate
recall@K (issue 15), as plain rows for the CLI (``tempcore grounding --sweep / --candidates``) and
the report's grounding section (:mod:`tempcore.report.grounding`).

* **Window-length sweep** (:func:`window_sweep`): the rows of ``gtcrop`` conditions
  (:mod:`tempcore.grounding.crops`), one row per (model, W): ``n``, ``miou``, ``recall`` (R@τ),
  ``parse_fail``, sorted by W (``full`` last). The IoUs are the table's scores
  (:func:`tempcore.grounding.evaluate.table_scores`: against the samples' GT windows when given,
  else the stored ``iou``); predictions are in absolute video time (the run maps them back).
* **Candidate recall@K** (:func:`candidate_recall_rows`): the retrieval stage of every
  ``retrieve_ground`` condition is stored as a row of the model ``retrieval`` with
  ``answer_method`` ``candidates`` whose ``response`` lists the ranked candidate windows
  (:func:`tempcore.run.baseline.candidates_prediction`); one row per (benchmark, condition):
  ``n`` queries with a GT window, ``contained@k`` and ``overlap@k`` for k = 1..K
  (:func:`tempcore.grounding.retrieval.candidate_recall` defines both). Needs the samples (GT).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tempcore.diagnostics import grounding as gm
from tempcore.grounding.evaluate import (
    GroundingInputError,
    GroundTruth,
    _codes,
    _only_benchmark,
    table_scores,
)
from tempcore.records import Sample


def _strings(table: Any, name: str) -> list[str | None]:
    if name not in table.column_names:
        return [None] * table.num_rows
    return [None if v is None else str(v) for v in table.column(name).to_pylist()]


def _width_key(variant: str | None) -> tuple[float, str]:
    from tempcore.grounding.crops import width_of

    try:
        w = width_of(variant)
    except gm.GroundingError:
        return (math.inf, str(variant))
    return (math.inf if w is None else w, str(variant))


def window_sweep(
    table: Any,
    samples: Sequence[Sample] | GroundTruth | None = None,
    *,
    benchmark: str | None = None,
    thresholds: Sequence[float] = gm.THRESHOLDS,
    strict: bool = False,
) -> list[dict[str, Any]]:
    """Accuracy vs crop width W per model: ``[{"model", "window", "width_s", "n", "miou", "recall",
    "parse_fail"}]`` (``width_s`` None for ``full``), sorted by model then W."""
    import pyarrow as pa

    from tempcore.grounding.crops import GT_CROP, width_of

    table = _only_benchmark(table, benchmark)
    strategy = _strings(table, "strategy")
    keep = np.fromiter((s == GT_CROP for s in strategy), dtype=bool, count=table.num_rows)
    if not keep.any():
        return []
    table = table.filter(pa.array(keep))
    scores = table_scores(table, samples)
    models = _strings(table, "model")
    variants = _strings(table, "variant")
    keys = sorted({(str(m), v) for m, v in zip(models, variants)}, key=lambda mv: (mv[0], _width_key(mv[1])))
    index = {k: i for i, k in enumerate(keys)}
    group = np.fromiter((index[(str(m), v)] for m, v in zip(models, variants)), dtype=np.int64, count=len(models))
    sums = gm.group_summaries(group, scores["iou"], scores["parse_fail"], len(keys), thresholds, strict=strict)
    out = []
    for g, (model, variant) in enumerate(keys):
        try:
            width = width_of(variant)
        except gm.GroundingError as exc:
            raise GroundingInputError(f"model {model}: gtcrop rows with variant {variant!r}: {exc}") from None
        out.append({
            "model": model, "window": variant or "?", "width_s": width, "n": int(sums["n"][g]),
            "miou": _num(sums["miou"][g]),
            "recall": {gm._key(t): _num(sums[f"recall@{gm._key(t)}"][g]) for t in thresholds},
            "parse_fail": _num(sums["parse_fail"][g]),
        })
    return out


def candidate_recall_rows(
    table: Any, samples: Sequence[Sample], *, benchmark: str | None = None,
) -> list[dict[str, Any]]:
    """Candidate recall@k of every ``retrieve_ground`` condition's stored candidates:
    ``[{"benchmark", "condition", "top_k", "n", "contained": {"1": x, ...}, "overlap": {...}}]``."""
    import pyarrow as pa

    from tempcore.grounding.retrieval import CANDIDATES_METHOD, RETRIEVAL_MODEL, candidate_recall

    table = _only_benchmark(table, benchmark)
    methods = _strings(table, "answer_method")
    models = _strings(table, "model")
    keep = np.fromiter((m == CANDIDATES_METHOD and mo == RETRIEVAL_MODEL for m, mo in zip(methods, models)),
                       dtype=bool, count=table.num_rows)
    if not keep.any():
        return []
    table = table.filter(pa.array(keep))
    if "response" not in table.column_names:
        raise GroundingInputError("candidate recall needs the response column (the stored candidate windows)")
    gt = samples if isinstance(samples, GroundTruth) else GroundTruth.from_samples(samples)
    where = {sid: i for i, sid in enumerate(gt.ids)}
    benches = _strings(table, "benchmark")
    conds = _strings(table, "condition")
    sids = _strings(table, "sample_id")
    responses = _strings(table, "response")
    groups: dict[tuple[str, str], list[int]] = {}
    for i, (b, c) in enumerate(zip(benches, conds)):
        groups.setdefault((str(b), str(c)), []).append(i)
    out = []
    for (bench, cond), rows in sorted(groups.items()):
        ranked = []
        for i in rows:
            sid = str(sids[i])
            if sid not in where:
                raise GroundingInputError(f"sample {sid!r} of the predictions is not in the annotations")
            try:
                windows = json.loads(responses[i] or "[]")
            except json.JSONDecodeError as exc:
                raise GroundingInputError(f"sample {sid!r}, condition {cond}: candidates are not JSON: {exc}") from None
            ranked.append((where[sid], windows))
        k = max((len(w) for _, w in ranked), default=0)
        if k == 0:
            continue
        cs = np.full((len(ranked), k), np.nan)
        ce = np.full((len(ranked), k), np.nan)
        for r, (_, windows) in enumerate(ranked):
            for j, w in enumerate(windows):
                cs[r, j], ce[r, j] = float(w[0]), float(w[1])
        row_of = {item: r for r, (item, _) in enumerate(ranked)}
        sel = np.fromiter((int(it) in row_of for it in gt.item), dtype=bool, count=gt.item.size)
        gi = np.fromiter((row_of[int(it)] for it in gt.item[sel]), dtype=np.int64, count=int(sel.sum()))
        rec = candidate_recall(cs, ce, gt.start[sel], gt.end[sel], gi)
        out.append({"benchmark": bench, "condition": cond, "top_k": k, "n": rec["n"],
                    "contained": {kk: _num(v) for kk, v in rec["contained"].items()},
                    "overlap": {kk: _num(v) for kk, v in rec["overlap"].items()}})
    return out


def grounding_benchmarks(table: Any) -> list[str]:
    """The benchmarks of the table that hold grounding rows (a non-null ``pred_start`` or ``iou``)."""
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return []
    has = None
    for col in ("pred_start", "iou"):
        if col in table.column_names:
            valid = pc.is_valid(table.column(col))
            has = valid if has is None else pc.or_(has, valid)
    if has is None:
        return []
    sub = table.filter(has)
    if "benchmark" not in table.column_names:
        return [""] if sub.num_rows else []
    codes, values = _codes(sub, "benchmark")
    return sorted({values[c] for c in set(codes.tolist())})


def _num(x: float) -> float | None:
    x = float(x)
    return None if np.isnan(x) else x


__all__ = ["candidate_recall_rows", "grounding_benchmarks", "window_sweep"]
