"""Contamination probes (Tables 15, 16): text-only LLMs against the VLMs on the no-frame condition,
and a text-only LLM against the VLM built on the same backbone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from tempcore.diagnostics.accuracy import ResultTable
from tempcore.diagnostics.compare import (
    AnalysisError,
    ConditionQuery,
    _bench_rows,
    _encode,
    _model_columns,
    condition_matrix,
)
from tempcore.diagnostics.stats import DEFAULT_BOOTSTRAP, bootstrap_mean

if TYPE_CHECKING:
    import pyarrow as pa

    from tempcore.diagnostics.table import EncodedPredictions


def noframe_only_models(table: pa.Table | EncodedPredictions) -> list[str]:
    """The models with no-frame rows but no MaxProb / MinProb row (any mode): text-only LLM probes.

    They are outside the diagnosis' panel by default (:mod:`tempcore.diagnostics.core`): the
    contamination probe (:func:`text_only_probe`, Table 15) is where they are reported.
    """
    enc = _encode(table)
    scored = enc.rows("maxprob", None) | enc.rows("minprob", None)
    noframe = enc.rows("noframe", None)
    has_scored = np.bincount(enc.model_code[scored], minlength=len(enc.models)) > 0
    has_noframe = np.bincount(enc.model_code[noframe], minlength=len(enc.models)) > 0
    return sorted(m for j, m in enumerate(enc.models) if has_noframe[j] and not has_scored[j])


def text_only_probe(
    table: pa.Table | EncodedPredictions,
    *,
    vlm_models: Sequence[str] | None = None,
    text_models: Sequence[str] | None = None,
    condition: ConditionQuery | None = None,
    text_condition: ConditionQuery | None = None,
    benchmarks: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Table 15: mean no-frame accuracy of the VLM panel vs the panel plus text-only LLMs.

    Per benchmark, on the samples where every model of both lists has a result (the LLM probes
    usually cover a subset): ``acc_panel`` (mean over the VLMs), ``acc_panel_plus_text`` (mean over
    all models) and the shift with a bootstrap interval over samples; ``level="model"`` rows give
    each model's accuracy on the same samples. ``condition`` defaults to ``noframe`` (any mode) for
    the VLMs; ``text_condition`` (default: the same) for the text-only models.

    Default models: ``text_models`` the models with only no-frame rows
    (:func:`noframe_only_models`, the probes the diagnosis leaves out of its LIS panel);
    ``vlm_models`` the models with MaxProb / MinProb rows (the diagnosis' panel).
    """
    enc = _encode(table)
    if text_models is None:
        text_models = noframe_only_models(enc)
    if vlm_models is None:
        scored = enc.rows("maxprob", None) | enc.rows("minprob", None)
        vlm_models = sorted({enc.models[j] for j in np.unique(enc.model_code[scored])})
    if not vlm_models or not text_models:
        raise AnalysisError("the probe needs at least one VLM and one text-only model")
    overlap = sorted(set(vlm_models) & set(text_models))
    if overlap:
        raise AnalysisError(f"model(s) {overlap} listed both as VLM and as text-only")
    cond = condition or ConditionQuery("noframe")
    tcond = text_condition or cond
    vcols = _model_columns(enc, vlm_models)
    tcols = _model_columns(enc, text_models)
    full = condition_matrix(enc, cond)
    mv = full[:, vcols]
    mt = (full if tcond == cond else condition_matrix(enc, tcond))[:, tcols]
    rows = []
    for bench, srows in _bench_rows(enc, benchmarks).items():
        v, t = mv[srows], mt[srows]
        keep = ~np.isnan(v).any(axis=1) & ~np.isnan(t).any(axis=1)
        n = int(keep.sum())
        if n == 0:
            continue
        panel = v[keep].mean(axis=1)
        plus = np.concatenate([v[keep], t[keep]], axis=1).mean(axis=1)
        res = bootstrap_mean(plus - panel, n_boot=n_boot, seed=seed)
        rows.append({"benchmark": bench, "level": "panel", "model": None, "n": n, "acc_panel": float(panel.mean()),
                     "acc_panel_plus_text": float(plus.mean()), "shift": res.estimate, "shift_ci_low": res.low,
                     "shift_ci_high": res.high, "accuracy": None})
        for j, col in enumerate(vcols):
            rows.append({"benchmark": bench, "level": "model", "model": enc.models[col], "kind": "vlm", "n": n,
                         "accuracy": float(v[keep, j].mean())})
        for j, col in enumerate(tcols):
            rows.append({"benchmark": bench, "level": "model", "model": enc.models[col], "kind": "text", "n": n,
                         "accuracy": float(t[keep, j].mean())})
    return ResultTable(
        "text_only_probe", "No-frame accuracy: VLM panel vs panel + text-only LLMs (Table 15)",
        ["benchmark", "level", "model", "kind", "n", "accuracy", "acc_panel", "acc_panel_plus_text", "shift",
         "shift_ci_low", "shift_ci_high"], rows,
        notes=[f"VLMs: {cond.describe()}; text-only: {tcond.describe()}; samples every model answered"],
        percent=("accuracy", "acc_panel", "acc_panel_plus_text", "shift", "shift_ci_low", "shift_ci_high"),
    )


def same_backbone_control(
    table: pa.Table | EncodedPredictions,
    *,
    text_model: str,
    vlm_model: str,
    condition: ConditionQuery | None = None,
    text_condition: ConditionQuery | None = None,
    benchmarks: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Table 16: no-frame accuracy of a text-only LLM and the VLM built on it, on identical samples.

    ``vlm_minus_text`` (the upper bound on what video post-training adds) with a paired bootstrap
    interval over the samples both models answered.
    """
    enc = _encode(table)
    cond = condition or ConditionQuery("noframe")
    tcond = text_condition or cond
    (ti,) = _model_columns(enc, [text_model])
    (vi,) = _model_columns(enc, [vlm_model])
    t = condition_matrix(enc, tcond)[:, ti]
    v = condition_matrix(enc, cond)[:, vi]
    rows = []
    for bench, srows in _bench_rows(enc, benchmarks).items():
        keep = ~np.isnan(t[srows]) & ~np.isnan(v[srows])
        n = int(keep.sum())
        if n == 0:
            continue
        a, b = t[srows][keep], v[srows][keep]
        res = bootstrap_mean(b - a, n_boot=n_boot, seed=seed)
        rows.append({"benchmark": bench, "n": n, "acc_text": float(a.mean()), "acc_vlm": float(b.mean()),
                     "vlm_minus_text": res.estimate, "vlm_minus_text_ci_low": res.low,
                     "vlm_minus_text_ci_high": res.high})
    return ResultTable(
        "same_backbone_control", f"Same-backbone control: {text_model} vs {vlm_model} (Table 16)",
        ["benchmark", "n", "acc_text", "acc_vlm", "vlm_minus_text", "vlm_minus_text_ci_low",
         "vlm_minus_text_ci_high"], rows,
        percent=("acc_text", "acc_vlm", "vlm_minus_text", "vlm_minus_text_ci_low", "vlm_minus_text_ci_high"),
    )


__all__ = [
    "noframe_only_models",
    "same_backbone_control",
    "text_only_probe",
]
