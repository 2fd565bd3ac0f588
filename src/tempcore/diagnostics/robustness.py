"""How much a diagnosis depends on its samples and on its panel (``tempcore diagnose``'s
``tpi_ci`` and ``leave_one_model_out``).

* :func:`tpi_intervals`: per benchmark, a seeded percentile bootstrap over the complete samples of
  TPI (Eq. 6) and of each taxonomy category's share. Resampling samples with replacement only
  changes how many of each category are drawn, a multinomial over the four category counts, so the
  counts are drawn directly (the distribution of resampling indices, at any benchmark size).
  Replicates with no vision-dependent sample leave TPI undefined and are left out of its interval
  (``tpi_undefined`` counts them).
* :func:`leave_one_model_out`: for each model of a benchmark's panel, the diagnosis again without
  it (``rediagnose``, the caller's diagnosis with a smaller ``models`` list, so every other
  parameter stays), the number of samples whose category changes (complete in both) and the TPI
  without it. Samples that become complete or incomplete are counted apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.diagnostics.core import CATEGORIES, INCOMPLETE
from tempcore.diagnostics.kernel import DiagnosticsError
from tempcore.diagnostics.stats import DEFAULT_BOOTSTRAP

if TYPE_CHECKING:
    from tempcore.diagnostics import Diagnosis


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def category_bootstrap(
    counts: np.ndarray | Sequence[int], *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0
) -> np.ndarray:
    """(n_boot x len(counts)) category counts of resampled benchmarks (``counts`` in :data:`CATEGORIES` order)."""
    c = np.asarray(counts, dtype=np.int64)
    n = int(c.sum())
    if n_boot < 1:
        raise ValueError(f"n_boot must be positive, not {n_boot!r}")
    if n == 0:
        return np.zeros((n_boot, c.size), dtype=np.int64)
    rng = np.random.default_rng(seed)
    draws: np.ndarray = rng.multinomial(n, c / n, size=n_boot)
    return draws


def tpi_of_counts(counts: np.ndarray) -> np.ndarray:
    """TPI of category counts (last axis in :data:`CATEGORIES` order); NaN when nothing is vision-dependent."""
    c = np.asarray(counts, dtype=np.float64)
    i = {name: j for j, name in enumerate(CATEGORIES)}
    sensitive = c[..., i["temporally_grounded"]] + c[..., i["visual_bias"]]
    denominator = c.sum(axis=-1) - c[..., i["trivial"]]
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = np.where(denominator > 0, sensitive / denominator, np.nan)
    return out


def tpi_intervals(
    diagnosis: Diagnosis, *, n_boot: int = DEFAULT_BOOTSTRAP, confidence: float = 0.95, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """Per benchmark: TPI and each category's share with seeded bootstrap intervals (module docstring)."""
    alpha = (1.0 - confidence) / 2.0
    out: dict[str, dict[str, Any]] = {}
    for bench in diagnosis.benchmarks:
        cats = diagnosis.category[(diagnosis.benchmark == bench) & (diagnosis.category != INCOMPLETE)]
        counts = np.array([int((cats == name).sum()) for name in CATEGORIES], dtype=np.int64)
        n = int(counts.sum())
        draws = category_bootstrap(counts, n_boot=n_boot, seed=seed)
        tpis = tpi_of_counts(draws)
        defined = tpis[~np.isnan(tpis)]
        low, high = (np.quantile(defined, [alpha, 1 - alpha]) if defined.size else (math.nan, math.nan))
        entry: dict[str, Any] = {"n": n, "tpi": _num(float(tpi_of_counts(counts))), "tpi_low": _num(float(low)),
                                 "tpi_high": _num(float(high)), "tpi_undefined": int(np.isnan(tpis).sum()),
                                 "shares": {}}
        for j, name in enumerate(CATEGORIES):
            if n:
                lo, hi = np.quantile(draws[:, j] / n, [alpha, 1 - alpha])
                entry["shares"][name] = {"share": counts[j] / n, "low": float(lo), "high": float(hi)}
            else:
                entry["shares"][name] = {"share": None, "low": None, "high": None}
        entry.update({"n_boot": n_boot, "confidence": confidence, "seed": seed})
        out[bench] = entry
    return out


def panel_models(diagnosis: Diagnosis) -> dict[str, list[str]]:
    """Per benchmark, the models of its FSS or LIS panel (from ``params["panels"]``)."""
    panels = diagnosis.params.get("panels") or {}
    return {b: sorted(set(p.get("fss", [])) | set(p.get("lis", []))) for b, p in panels.items()}


def leave_one_model_out(
    diagnosis: Diagnosis, rediagnose: Callable[[list[str]], Diagnosis]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per benchmark and panel model: samples changing category and TPI without that model.

    ``rediagnose(models)`` must return the same diagnosis as ``diagnosis`` restricted to ``models``.
    A diagnosis that fails without a model (no panel left, no complete sample) records the reason
    under ``error`` instead of numbers.
    """
    panels = panel_models(diagnosis)
    everyone = sorted({m for models in panels.values() for m in models})
    base = {(str(b), str(s)): str(c) for b, s, c in zip(diagnosis.benchmark, diagnosis.sample_id, diagnosis.category)}
    out: dict[str, dict[str, dict[str, Any]]] = {b: {} for b in panels}
    for model in everyone:
        rest = [m for m in everyone if m != model]
        try:
            if not rest:
                raise DiagnosticsError("no model left in the panel")
            other: Diagnosis | None = rediagnose(rest)
            error = None
        except DiagnosticsError as exc:
            other, error = None, str(exc)
        for bench, models in panels.items():
            if model not in models:
                continue
            if other is None or bench not in other.benchmarks:
                out[bench][model] = {"error": error or "no panel left for this benchmark", "changed": None,
                                     "tpi": None, "tpi_delta": None}
                continue
            after = {(str(b), str(s)): str(c) for b, s, c in zip(other.benchmark, other.sample_id, other.category)
                     if b == bench}
            changed = became_incomplete = became_complete = 0
            for key, cat in after.items():
                was = base.get(key, INCOMPLETE)
                if was == INCOMPLETE and cat != INCOMPLETE:
                    became_complete += 1
                elif was != INCOMPLETE and cat == INCOMPLETE:
                    became_incomplete += 1
                elif was != cat:
                    changed += 1
            tpi = other.benchmarks[bench]["tpi"]
            before = diagnosis.benchmarks[bench]["tpi"]
            out[bench][model] = {"changed": changed, "became_incomplete": became_incomplete,
                                 "became_complete": became_complete, "tpi": tpi,
                                 "tpi_delta": None if tpi is None or before is None else tpi - before}
    return out


__all__ = ["category_bootstrap", "leave_one_model_out", "panel_models", "tpi_intervals", "tpi_of_counts"]
