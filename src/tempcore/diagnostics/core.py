"""FSS, LIS, the FSS x LIS taxonomy and TPI (TempCore paper, §3.3, §3.4, §7.1, §7.2).

Pure functions over numbers; no I/O. Definitions, with m ranging over the model panel M:

* ``FSS_i = 1/|M| * sum_m (acc+_{m,i} - acc-_{m,i})`` (Eq. 4), acc+ / acc- the correctness of
  model m on sample i with MaxProb / MinProb frames (QA-mode by default).
* ``LIS_i = 1 - 1/|M| * sum_m correct^nf_{m,i}`` (Eq. 5), no-frame (grey images) correctness.
* Key ``FSS > tau``; Non-key ``|FSS| <= tau``; Anti-key ``FSS < -tau`` (tau = 0.15).
* Trivial ``LIS <= lambda``; otherwise Frame-Agnostic ``|FSS| <= tau``, Temporally Grounded
  ``FSS > tau``, Visual Bias ``FSS < -tau`` (lambda = 0.5). Temporally Sensitive = Temporally
  Grounded + Visual Bias.
* ``TPI = |Temporally Sensitive| / (N - |Trivial|)`` (Eq. 6).

Choices the paper leaves open, made here:

* "Correctness" depends on the scoring: ``hard`` is the paper's 0/1; ``soft`` the model's
  probability on the correct option; ``circular`` the 0/1 correctness averaged over cyclic
  rotations of the options. The formulas above are unchanged.
* Thresholds compare values rounded to 12 decimals, so a sample whose FSS is exactly tau up to
  floating-point error (e.g. 3/20 with tau 0.15) is Non-key, as the paper's ``<=`` says.
* The panel M. The paper uses one model set in Eq. 4 and Eq. 5, the VLMs, and keeps it for LIS
  when it probes text-only LLMs: "per-sample LIS throughout the paper remains the 8-VLM quantity"
  (§C.4, Table 15). So by default (``lis_panel="fss"``) the LIS panel of a benchmark *is* its FSS
  panel: the models with MaxProb or MinProb rows for it. A model with only no-frame rows (a
  text-only LLM probe) is left out of LIS and reported by the contamination analyses (Table 15)
  beside it. ``lis_panel="all"`` joins every model with no-frame rows for the benchmark to the
  LIS panel (Table 15's "panel + text-only LLMs", per sample); the diagnosis' params name the rule
  and the models joined. See :func:`lis_panel_columns`.
* A sample lacking a needed value from any model of its benchmark's panel is *incomplete*: it gets
  no score and is excluded from every count, which reports it separately. A VLM of the FSS panel
  without no-frame rows therefore makes the LIS of the samples it lacks incomplete (never a
  smaller panel).
* N in TPI counts the complete samples. When every complete sample is Trivial the TPI is undefined
  and reported as ``None``, not as 0.
"""

from __future__ import annotations

import numpy as np

FSS_CATEGORIES = ("key", "non_key", "anti_key")
#: Who is in the LIS panel: ``fss`` (the paper: the FSS panel, the VLMs) or ``all`` (+ text-only probes).
LIS_PANELS = ("fss", "all")
CATEGORIES = ("trivial", "frame_agnostic", "temporally_grounded", "visual_bias")
INCOMPLETE = "incomplete"
_DECIMALS = 12


def panel_mean(values: np.ndarray) -> np.ndarray:
    """Row means of a (samples x models) matrix; rows with any NaN (a missing model) give NaN."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError("expected a (samples x models) matrix")
    if values.shape[1] == 0:
        return np.full(values.shape[0], np.nan)
    means: np.ndarray = values.mean(axis=1)
    return means


def fss(plus: np.ndarray, minus: np.ndarray) -> np.ndarray:
    """Eq. 4: per-sample mean over models of (MaxProb correctness - MinProb correctness)."""
    plus = np.asarray(plus, dtype=np.float64)
    minus = np.asarray(minus, dtype=np.float64)
    if plus.shape != minus.shape:
        raise ValueError(f"MaxProb and MinProb matrices differ in shape: {plus.shape} vs {minus.shape}")
    return panel_mean(plus - minus)


def lis(noframe: np.ndarray) -> np.ndarray:
    """Eq. 5: 1 - per-sample mean over models of no-frame correctness."""
    return 1.0 - panel_mean(noframe)


def lis_panel_columns(fss_panel: np.ndarray, noframe_models: np.ndarray, rule: str = "fss") -> np.ndarray:
    """The model columns of a benchmark's LIS panel (Eq. 5's M) under ``rule`` (module docstring).

    ``fss_panel``: the columns of its FSS panel (models with MaxProb / MinProb rows);
    ``noframe_models``: the columns of the models with no-frame rows. ``fss`` returns the FSS
    panel unchanged (the paper's one M); ``all`` returns the sorted union (text-only probes
    joined). A model of the FSS panel is never dropped for lacking no-frame rows: its samples
    are incomplete instead.
    """
    if rule not in LIS_PANELS:
        raise ValueError(f"unknown LIS panel rule {rule!r}; choose one of {', '.join(LIS_PANELS)}")
    fss_panel = np.asarray(fss_panel, dtype=np.int64)
    if rule == "fss":
        return fss_panel
    return np.union1d(fss_panel, np.asarray(noframe_models, dtype=np.int64))


def _rounded(x: np.ndarray) -> np.ndarray:
    return np.round(np.asarray(x, dtype=np.float64), _DECIMALS)


def fss_categories(fss_values: np.ndarray, tau: float = 0.15) -> np.ndarray:
    """Key / Non-key / Anti-key per sample; NaN FSS gives ``incomplete``."""
    f = _rounded(fss_values)
    t = round(float(tau), _DECIMALS)
    out = np.full(f.shape, INCOMPLETE, dtype=object)
    ok = ~np.isnan(f)
    out[ok & (f > t)] = "key"
    out[ok & (np.abs(f) <= t)] = "non_key"
    out[ok & (f < -t)] = "anti_key"
    return out


def taxonomy(fss_values: np.ndarray, lis_values: np.ndarray, tau: float = 0.15, lam: float = 0.5) -> np.ndarray:
    """The two-stage classification of §7.1: Trivial first (LIS <= lambda), then by FSS."""
    f = _rounded(fss_values)
    li = _rounded(lis_values)
    t = round(float(tau), _DECIMALS)
    lm = round(float(lam), _DECIMALS)
    out = np.full(f.shape, INCOMPLETE, dtype=object)
    ok = ~(np.isnan(f) | np.isnan(li))
    trivial = ok & (li <= lm)
    vision = ok & ~trivial
    out[trivial] = "trivial"
    out[vision & (np.abs(f) <= t)] = "frame_agnostic"
    out[vision & (f > t)] = "temporally_grounded"
    out[vision & (f < -t)] = "visual_bias"
    return out


def is_temporally_sensitive(categories: np.ndarray) -> np.ndarray:
    c = np.asarray(categories, dtype=object)
    sensitive: np.ndarray = (c == "temporally_grounded") | (c == "visual_bias")
    return sensitive


def tpi(categories: np.ndarray) -> float | None:
    """Eq. 6 over the complete samples; ``None`` when no sample is vision-dependent."""
    c = np.asarray(categories, dtype=object)
    complete = c != INCOMPLETE
    denominator = int(complete.sum() - (c == "trivial").sum())
    if denominator <= 0:
        return None
    return float(is_temporally_sensitive(c).sum() / denominator)


def summarize(fss_cat: np.ndarray, categories: np.ndarray) -> dict[str, int | float | None]:
    """Counts of one benchmark: the ``benchmarks`` entry of ``tempcore diagnose --json``."""
    fc = np.asarray(fss_cat, dtype=object)
    c = np.asarray(categories, dtype=object)
    summary: dict[str, int | float | None] = {
        "n": int(c.size),
        "incomplete": int((c == INCOMPLETE).sum()),
        "incomplete_fss": int((fc == INCOMPLETE).sum()),
    }
    for name in FSS_CATEGORIES:
        summary[name] = int((fc == name).sum())
    for name in CATEGORIES:
        summary[name] = int((c == name).sum())
    summary["temporally_sensitive"] = int(is_temporally_sensitive(c).sum())
    summary["tpi"] = tpi(c)
    return summary
