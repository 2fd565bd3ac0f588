"""Score a run over a synthetic world against what the world planted (``tempcore world validate``).

``validate_predictions(predictions, annotations)`` reads the tidy predictions table
(:func:`tempcore.tidy.table.read_predictions`), diagnoses it (:func:`tempcore.diagnostics.diagnose`: FSS,
LIS and the taxonomy, per scoring method) and compares every sample's recovered category with the
``planted`` field of the world's annotations (:func:`tempcore.world.recovery.recovery`).

Result: ``{"scoring": {name: {"temporally_sensitive": {"precision", "recall"}, "trivial":
{"precision", "recall"}, "confusion": {planted: {recovered: count}}}}}``, one entry per scoring
asked for, the same shape ``tempcore demo --json`` reports under ``"scoring"``.

Which predictions count: those of one benchmark of the table. By default the benchmark whose sample
ids overlap the world's (an error if none or several do; pass ``benchmark`` then). A planted sample
without predictions is ``incomplete``; a predicted sample the world never planted is an error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tempcore.errors import TempcoreError
from tempcore.world.recovery import PLANTED, recovery


class WorldValidationError(TempcoreError):
    """Predictions and a world's annotations cannot be compared (names the files and the reason)."""


def planted_from_annotations(path: str | os.PathLike[str]) -> dict[str, str]:
    """``{sample_id: planted category}`` from a world's annotations (a file, or a world folder)."""
    from tempcore.benchmarks import load_benchmark

    p = Path(path)
    if p.is_dir() and (p / "world.json").is_file():
        p = p / "annotations.jsonl"
    result = load_benchmark("generic", p)
    planted: dict[str, str] = {}
    for sample in result.samples:
        category = sample.metadata.get("planted")
        if category is None:
            raise WorldValidationError(f"{p}: sample {sample.sample_id} has no 'planted' field (not a world?)")
        if category not in PLANTED:
            raise WorldValidationError(
                f"{p}: sample {sample.sample_id}: unknown planted category {category!r} (known: {PLANTED})"
            )
        planted[sample.sample_id] = str(category)
    if not planted:
        raise WorldValidationError(f"{p}: no samples")
    return planted


def recovered_categories(diagnosis: Any, planted: Mapping[str, str], benchmark: str | None,
                         source: str = "<predictions>") -> dict[str, str]:
    """``{sample_id: category}`` of one benchmark of a :class:`~tempcore.diagnostics.Diagnosis`."""
    names = sorted({str(b) for b in diagnosis.benchmark})
    if benchmark is None:
        overlapping = [b for b in names
                       if any(str(s) in planted for bb, s in zip(diagnosis.benchmark, diagnosis.sample_id)
                              if bb == b)]
        if not overlapping:
            raise WorldValidationError(
                f"{source}: no prediction is about a sample of the world (benchmarks in the table: {names})"
            )
        if len(overlapping) > 1:
            raise WorldValidationError(
                f"{source}: several benchmarks cover the world's samples ({overlapping}); choose one with --benchmark"
            )
        benchmark = overlapping[0]
    elif benchmark not in names:
        raise WorldValidationError(f"{source}: no predictions for benchmark {benchmark!r} (found: {names})")
    return {str(s): str(c) for b, s, c in zip(diagnosis.benchmark, diagnosis.sample_id, diagnosis.category)
            if b == benchmark}


def validate_predictions(
    predictions: str | os.PathLike[str] | Any,
    annotations: str | os.PathLike[str] | Mapping[str, str],
    *,
    scorings: Sequence[str] = ("hard",),
    tau: float = 0.15,
    lam: float = 0.5,
    fss_mode: str = "qa",
    models: Sequence[str] | None = None,
    filters: Mapping[str, Any] | None = None,
    benchmark: str | None = None,
) -> dict[str, Any]:
    """Recovery of the planted categories by a run, per scoring (see the module docstring).

    ``predictions``: a tidy table file (CSV / Parquet / JSONL) or a pyarrow Table; ``annotations``: the
    world's annotation file or folder, or an already read ``{sample_id: planted}``. ``filters`` pins
    columns of the MaxProb / MinProb rows (e.g. ``{"k": 8}``) as in ``tempcore diagnose``.
    """
    from tempcore.diagnostics import diagnose
    from tempcore.tidy.table import read_predictions

    planted = dict(annotations) if isinstance(annotations, Mapping) else planted_from_annotations(annotations)
    source = str(predictions) if isinstance(predictions, (str, os.PathLike)) else "<table>"
    table = read_predictions(predictions) if isinstance(predictions, (str, os.PathLike)) else predictions
    out: dict[str, Any] = {}
    for scoring in scorings:
        d = diagnose(table, tau=tau, lam=lam, fss_mode=fss_mode, scoring=scoring, models=models,
                     filters=dict(filters or {}), noframe_filters={})
        out[scoring] = recovery(planted, recovered_categories(d, planted, benchmark, source))
    return {"scoring": out}


__all__ = ["WorldValidationError", "planted_from_annotations", "recovered_categories", "validate_predictions"]
