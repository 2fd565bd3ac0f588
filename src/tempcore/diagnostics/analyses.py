"""The TempCore paper's analyses (§5–7, appendices B–D), each a pure function returning a table.

Every function takes the tidy predictions table (a pyarrow Table, or an
:class:`~tempcore.diagnostics.EncodedPredictions` to share the encoding across calls) and, where
it needs per-sample scores, the :class:`~tempcore.diagnostics.Diagnosis` from
:func:`tempcore.diagnostics.diagnose`. Each returns a
:class:`~tempcore.diagnostics.accuracy.ResultTable` whose ``rows`` are dicts; accuracies, gaps
and fractions are fractions (``to_text`` shows them as percentages).

This module gathers them; they live by paper section:

* :mod:`tempcore.diagnostics.compare` -- the comparison engine (conditions, correctness matrices,
  paired multi-condition accuracy) and its conventions;
* :mod:`tempcore.diagnostics.selection_analyses` -- §5: does frame selection work (Tables 1, 12,
  17, 18, 20–22, Fig. 2), including the K and encoder ablations;
* :mod:`tempcore.diagnostics.oracle_gaps` -- oracle gap by FSS category / bin, window centroids
  (Tables 2, 7, Figs. 6, 9, 10) and the per-sample conventions;
* :mod:`tempcore.diagnostics.profiles` -- §6–7: profiles, Key / Anti-key, tau / lambda sweeps,
  frame coverage (Tables 3, 4, 14, §7.1);
* :mod:`tempcore.diagnostics.validation` -- human ratings and external rankings (Tables 8–11);
* :mod:`tempcore.diagnostics.contamination` -- text-only probes (Tables 15, 16).

``Cond`` is the former name of :class:`~tempcore.diagnostics.compare.ConditionQuery` (a
deprecated alias: it warns on use).
"""

from __future__ import annotations

import warnings
from typing import Any

from tempcore.diagnostics.compare import (
    DEFAULT_GROUPS,
    AnalysisError,
    ConditionQuery,
    compare_conditions,
    condition_matrix,
    frame_counts_from_table,
    oracle_matrix,
    shared_k,
)
from tempcore.diagnostics.contamination import noframe_only_models, same_backbone_control, text_only_probe
from tempcore.diagnostics.oracle_gaps import (
    CENTROID_LENGTHS,
    SampleGaps,
    correct_window_centroids,
    oracle_gap_by_fss_bin,
    oracle_gap_by_fss_category,
    oracle_gap_per_sample,
    oracle_gap_vs_abs_fss,
    sample_oracle_gaps,
)
from tempcore.diagnostics.oracle_gaps import _index_stats as _index_stats  # used by the tests
from tempcore.diagnostics.profiles import (
    DEFAULT_COVERAGE_EDGES,
    DEFAULT_LAMBDAS,
    DEFAULT_TAUS,
    abs_fss_by_coverage,
    benchmark_profiles,
    frame_coverage,
    key_antikey_fractions,
    lis_fss_spearman,
    threshold_sweep,
)
from tempcore.diagnostics.selection_analyses import (
    accuracy_by_setting,
    encoder_comparison,
    k_ablation,
    maxprob_vs_minprob,
    q_vs_qa_maxprob,
    strategy_baselines,
    uniform_vs_oracle,
)
from tempcore.diagnostics.validation import (
    RatedSamples,
    external_ranking_correlation,
    human_category_tests,
    human_metric_correlations,
    human_scores_by_category,
    human_tau_sweep,
    join_ratings,
)


def __getattr__(name: str) -> Any:
    if name == "Cond":
        warnings.warn("tempcore.diagnostics.analyses.Cond is deprecated; use "
                      "tempcore.diagnostics.compare.ConditionQuery", DeprecationWarning, stacklevel=2)
        return ConditionQuery
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AnalysisError",
    "CENTROID_LENGTHS",
    "ConditionQuery",
    "DEFAULT_COVERAGE_EDGES",
    "DEFAULT_GROUPS",
    "DEFAULT_LAMBDAS",
    "DEFAULT_TAUS",
    "RatedSamples",
    "SampleGaps",
    "abs_fss_by_coverage",
    "accuracy_by_setting",
    "benchmark_profiles",
    "compare_conditions",
    "condition_matrix",
    "correct_window_centroids",
    "encoder_comparison",
    "external_ranking_correlation",
    "frame_counts_from_table",
    "frame_coverage",
    "human_category_tests",
    "human_metric_correlations",
    "human_scores_by_category",
    "human_tau_sweep",
    "join_ratings",
    "k_ablation",
    "key_antikey_fractions",
    "lis_fss_spearman",
    "maxprob_vs_minprob",
    "noframe_only_models",
    "oracle_gap_by_fss_bin",
    "oracle_gap_by_fss_category",
    "oracle_gap_per_sample",
    "oracle_gap_vs_abs_fss",
    "oracle_matrix",
    "q_vs_qa_maxprob",
    "same_backbone_control",
    "sample_oracle_gaps",
    "shared_k",
    "strategy_baselines",
    "text_only_probe",
    "threshold_sweep",
    "uniform_vs_oracle",
]
