"""Validation of FSS against people and other benchmarks: human ratings (Tables 8–10, Figs. 7, 8,
§B.2) and the Key vs Non-key ranking against external benchmark scores (Table 11).

Samples are matched to the Diagnosis on (benchmark, sample_id); samples the Diagnosis lacks or
marks incomplete have no FSS category and are counted, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.diagnostics.accuracy import ResultTable
from tempcore.diagnostics.compare import (
    AnalysisError,
    ConditionQuery,
    _aligned,
    _bench_rows,
    _encode,
    _frac,
    _model_columns,
    _num,
    condition_matrix,
)
from tempcore.diagnostics.core import INCOMPLETE, fss_categories
from tempcore.diagnostics.profiles import DEFAULT_TAUS
from tempcore.diagnostics.stats import (
    mann_whitney_greater,
    mean_sd_se,
    point_biserial,
    precision_recall_f1,
    spearman,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from tempcore.diagnostics import Diagnosis
    from tempcore.diagnostics.table import EncodedPredictions


def _records(data: Any) -> list[dict[str, Any]]:
    if hasattr(data, "to_pylist") and hasattr(data, "column_names"):
        return list(data.to_pylist())
    return [dict(r) for r in data]


@dataclass
class RatedSamples:
    """Ratings joined to a diagnosis: one entry per rated sample with an FSS."""

    benchmark: np.ndarray
    sample_id: np.ndarray
    rating: np.ndarray  # mean rating when a sample was rated several times
    fss: np.ndarray
    lis: np.ndarray
    excluded_incomplete: int


def join_ratings(diagnosis: Diagnosis, ratings: Any) -> RatedSamples:
    """Join human ratings (rows with ``sample_id``, ``benchmark``, ``rating`` in 1..5) to a diagnosis.

    ``ratings`` is a pyarrow Table or an iterable of mappings. Several ratings of one sample are
    averaged. A rating outside 1..5, a missing field, or a sample the diagnosis lacks is an error
    (naming the row, 1 = first); rated samples without an FSS are excluded and counted.
    """
    pos = {(str(b), str(s)): i for i, (b, s) in enumerate(zip(diagnosis.benchmark, diagnosis.sample_id))}
    sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    for i, r in enumerate(_records(ratings), start=1):
        missing = [k for k in ("sample_id", "benchmark", "rating") if r.get(k) is None or r.get(k) == ""]
        if missing:
            raise AnalysisError(f"ratings row {i}: missing {', '.join(missing)}")
        try:
            value = float(r["rating"])
        except (TypeError, ValueError) as exc:
            raise AnalysisError(f"ratings row {i}: rating {r['rating']!r} is not a number") from exc
        if not 1.0 <= value <= 5.0:
            raise AnalysisError(f"ratings row {i}: rating {value:g} outside 1..5")
        key = (str(r["benchmark"]), str(r["sample_id"]))
        if key not in pos:
            raise AnalysisError(f"ratings row {i}: sample {key[1]!r} of {key[0]!r} is not in the diagnosis")
        j = pos[key]
        sums[j] = sums.get(j, 0.0) + value
        counts[j] = counts.get(j, 0) + 1
    idx = np.array(sorted(sums), dtype=np.int64)
    rating = np.array([sums[j] / counts[j] for j in idx.tolist()], dtype=np.float64)
    f = np.asarray(diagnosis.fss, dtype=np.float64)[idx] if idx.size else np.array([])
    keep = ~np.isnan(f)
    li = np.asarray(diagnosis.lis, dtype=np.float64)[idx] if idx.size else np.array([])
    return RatedSamples(
        benchmark=np.asarray(diagnosis.benchmark, dtype=object)[idx][keep],
        sample_id=np.asarray(diagnosis.sample_id, dtype=object)[idx][keep],
        rating=rating[keep], fss=f[keep], lis=li[keep], excluded_incomplete=int((~keep).sum()),
    )


def human_metric_correlations(diagnosis: Diagnosis, ratings: Any, *, threshold: float = 4.0) -> ResultTable:
    """Table 8 (Fig. 7): Spearman rho of FSS, |FSS| and LIS with the human temporal score, and the
    point-biserial r of each against the binary "temporal" label (rating >= ``threshold``)."""
    rs = join_ratings(diagnosis, ratings)
    temporal = (rs.rating >= threshold).astype(np.float64)
    rows = []
    for metric, values in (("fss", rs.fss), ("abs_fss", np.abs(rs.fss)), ("lis", rs.lis)):
        rho, p = spearman(values, rs.rating)
        r, pr = point_biserial(temporal, values)
        rows.append({"metric": metric, "n": int(np.sum(~np.isnan(values))), "spearman_rho": _num(rho),
                     "spearman_p": _num(p), "point_biserial_r": _num(r), "point_biserial_p": _num(pr)})
    return ResultTable(
        "human_metric_correlations", f"Metric correlations with human temporal scores (Table 8, >= {threshold:g})",
        ["metric", "n", "spearman_rho", "spearman_p", "point_biserial_r", "point_biserial_p"], rows,
        meta={"excluded_incomplete": rs.excluded_incomplete},
    )


def _rated_categories(diagnosis: Diagnosis, rs: RatedSamples, tau: float | None) -> np.ndarray:
    t = float(diagnosis.params.get("tau", 0.15)) if tau is None else float(tau)
    return fss_categories(rs.fss, t)


def human_scores_by_category(
    diagnosis: Diagnosis, ratings: Any, *, tau: float | None = None, threshold: float = 4.0
) -> ResultTable:
    """Table 9 (Fig. 8): human scores per FSS category: n, mean, SD (ddof 1), SE, share rated >= ``threshold``.

    Categories at ``tau`` (default: the diagnosis's): Key, Non-key, Anti-key, Temporally Sensitive
    (Key + Anti-key), and all rated samples.
    """
    rs = join_ratings(diagnosis, ratings)
    cat = _rated_categories(diagnosis, rs, tau)
    groups = {
        "key": cat == "key", "non_key": cat == "non_key", "anti_key": cat == "anti_key",
        "temporally_sensitive": (cat == "key") | (cat == "anti_key"), "all": np.ones(cat.shape, dtype=bool),
    }
    rows = []
    for name, sel in groups.items():
        mean, sd, se = mean_sd_se(rs.rating[sel])
        n = int(sel.sum())
        rows.append({"category": name, "n": n, "mean": _num(mean), "sd": _num(sd), "se": _num(se),
                     "temporal_fraction": _frac(int((rs.rating[sel] >= threshold).sum()), n)})
    return ResultTable(
        "human_scores_by_category", "Human temporal scores by FSS category (Table 9, Fig. 8)",
        ["category", "n", "mean", "sd", "se", "temporal_fraction"], rows, percent=("temporal_fraction",),
        meta={"excluded_incomplete": rs.excluded_incomplete},
    )


def human_category_tests(diagnosis: Diagnosis, ratings: Any, *, tau: float | None = None) -> ResultTable:
    """§B.2: one-sided Mann–Whitney U tests that a category's human scores exceed Non-key's.

    Comparisons: Temporally Sensitive (Key + Anti-key) vs Non-key, Anti-key vs Non-key, Key vs Non-key.
    """
    rs = join_ratings(diagnosis, ratings)
    cat = _rated_categories(diagnosis, rs, tau)
    non_key = rs.rating[cat == "non_key"]
    groups = {
        "temporally_sensitive": rs.rating[(cat == "key") | (cat == "anti_key")],
        "anti_key": rs.rating[cat == "anti_key"],
        "key": rs.rating[cat == "key"],
    }
    rows = []
    for name, x in groups.items():
        u, p = mann_whitney_greater(x, non_key)
        rows.append({"group": name, "versus": "non_key", "n": int(x.size), "n_versus": int(non_key.size),
                     "mean": _num(float(x.mean())) if x.size else None,
                     "mean_versus": _num(float(non_key.mean())) if non_key.size else None,
                     "u": _num(u), "p_one_sided": _num(p)})
    return ResultTable(
        "human_category_tests", "One-sided Mann-Whitney tests against Non-key (§B.2)",
        ["group", "versus", "n", "n_versus", "mean", "mean_versus", "u", "p_one_sided"], rows,
        meta={"excluded_incomplete": rs.excluded_incomplete},
    )


def human_tau_sweep(
    diagnosis: Diagnosis, ratings: Any, *, taus: Sequence[float] = DEFAULT_TAUS, threshold: float = 4.0
) -> ResultTable:
    """Table 10: Key-only (FSS > tau) vs Key + Anti-key (|FSS| > tau) as classifiers of "temporal"
    (human rating >= ``threshold``): TP, FP, FN, precision, recall, F1 per tau."""
    rs = join_ratings(diagnosis, ratings)
    truth = rs.rating >= threshold
    rows = []
    for tau in taus:
        cat = fss_categories(rs.fss, tau)
        for method, pred in (("key_only", cat == "key"), ("key_anti_key", (cat == "key") | (cat == "anti_key"))):
            c = precision_recall_f1(pred, truth)
            rows.append({"tau": float(tau), "method": method, "n": int(truth.size), "tp": c.tp, "fp": c.fp,
                         "fn": c.fn, "precision": _num(c.precision), "recall": _num(c.recall), "f1": _num(c.f1)})
    return ResultTable(
        "human_tau_sweep", "tau sweep against human labels (Table 10)",
        ["tau", "method", "n", "tp", "fp", "fn", "precision", "recall", "f1"], rows,
        meta={"excluded_incomplete": rs.excluded_incomplete},
    )


# --- external correlation (Table 11) -----------------------------------------------------------


def _external_scores(external: Any) -> dict[str, dict[str, float]]:
    """{external benchmark: {model: score}} from a mapping or rows with model / benchmark / score."""
    if isinstance(external, Mapping):
        return {str(b): {str(m): float(v) for m, v in scores.items()} for b, scores in external.items()}
    out: dict[str, dict[str, float]] = {}
    for i, r in enumerate(_records(external), start=1):
        bench = r.get("external", r.get("benchmark"))
        if r.get("model") is None or bench is None or r.get("score") is None:
            raise AnalysisError(f"external scores row {i}: needs model, benchmark (or external) and score")
        try:
            out.setdefault(str(bench), {})[str(r["model"])] = float(r["score"])
        except (TypeError, ValueError) as exc:
            raise AnalysisError(f"external scores row {i}: score {r['score']!r} is not a number") from exc
    return out


def external_ranking_correlation(
    table: pa.Table | EncodedPredictions,
    diagnosis: Diagnosis,
    external: Any,
    *,
    condition: ConditionQuery | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
) -> ResultTable:
    """Table 11: Spearman rho between models' Key-subset / Non-key-subset accuracy and external scores.

    Per video benchmark, each model's accuracy under ``condition`` (default MaxProb, QA-mode) on
    its Key samples and on its Non-key samples — Non-key *including* Anti-key, i.e. every complete
    sample that is not Key, as the paper's Table 11 does — is rank-correlated across models with
    each external benchmark's scores (models present in both). ``external`` is
    ``{benchmark: {model: score}}`` or rows with ``model``, ``benchmark`` (or ``external``), ``score``.
    ``external="mean"`` rows average the rhos of a benchmark.
    """
    enc = _encode(table)
    ext = _external_scores(external)
    cond = condition or ConditionQuery("maxprob", "qa")
    mat = condition_matrix(enc, cond)
    _, cat = _aligned(enc, diagnosis)
    cols = _model_columns(enc, models)
    rows = []
    for bench, srows in _bench_rows(enc, benchmarks).items():
        sub = mat[srows][:, cols]
        c = cat[srows]
        key = c == "key"
        non_key = (c != "key") & (c != INCOMPLETE)
        with np.errstate(invalid="ignore"):
            acc_key = np.nanmean(np.where(key[:, None], sub, np.nan), axis=0) if key.any() else np.full(cols.size, np.nan)
            acc_non = (np.nanmean(np.where(non_key[:, None], sub, np.nan), axis=0) if non_key.any()
                       else np.full(cols.size, np.nan))
        names = [enc.models[j] for j in cols]
        bench_rows = []
        for ext_name, scores in sorted(ext.items()):
            common = [i for i, m in enumerate(names) if m in scores]
            s = np.array([scores[names[i]] for i in common], dtype=np.float64)
            rk, pk = spearman(acc_key[common], s)
            rn, pn = spearman(acc_non[common], s)
            bench_rows.append({"benchmark": bench, "external": ext_name,
                               "n_models": int(np.sum(~np.isnan(acc_key[common]) | ~np.isnan(acc_non[common]))),
                               "rho_key": _num(rk), "p_key": _num(pk), "rho_non_key": _num(rn), "p_non_key": _num(pn)})
        rows += bench_rows
        rks = [r["rho_key"] for r in bench_rows if r["rho_key"] is not None]
        rns = [r["rho_non_key"] for r in bench_rows if r["rho_non_key"] is not None]
        if bench_rows:
            rows.append({"benchmark": bench, "external": "mean", "n_models": None,
                         "rho_key": float(np.mean(rks)) if rks else None, "p_key": None,
                         "rho_non_key": float(np.mean(rns)) if rns else None, "p_non_key": None})
    return ResultTable(
        "external_ranking_correlation", "Key vs Non-key model-ranking correlation with external benchmarks (Table 11)",
        ["benchmark", "external", "n_models", "rho_key", "p_key", "rho_non_key", "p_non_key"], rows,
        notes=[f"accuracy under {cond.describe()}; Non-key includes Anti-key"],
    )


__all__ = [
    "RatedSamples",
    "external_ranking_correlation",
    "human_category_tests",
    "human_metric_correlations",
    "human_scores_by_category",
    "human_tau_sweep",
    "join_ratings",
]
