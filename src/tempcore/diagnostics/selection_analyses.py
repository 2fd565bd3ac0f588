"""§5 of the TempCore paper, "does frame selection work?": MaxProb vs MinProb, Q- vs QA-mode,
random / uniform baselines, the window oracle, and the ablations of the frame budget K and of the
encoder (Tables 1, 12, 17, 18, 20–22, Fig. 2).

Each is a :func:`~tempcore.diagnostics.compare.compare_conditions` table; the shared rules
(pairing, panels, group rows, bootstrap) are in :mod:`tempcore.diagnostics.compare`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.diagnostics.accuracy import ResultTable
from tempcore.diagnostics.compare import (
    DEFAULT_GROUPS,
    AnalysisError,
    ConditionQuery,
    _encode,
    compare_conditions,
    shared_k,
)
from tempcore.diagnostics.stats import DEFAULT_BOOTSTRAP
from tempcore.diagnostics.table import EncodedPredictions

if TYPE_CHECKING:
    import pyarrow as pa


def q_vs_qa_maxprob(
    table: pa.Table | EncodedPredictions,
    *,
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    groups: Mapping[str, Sequence[str]] | None = DEFAULT_GROUPS,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Tables 1 and 20: MaxProb accuracy with Q-mode vs QA-mode frame scoring, per model and benchmark.

    ``qa_minus_q`` is the paper's Delta = QA-mode - Q-mode. Model-average rows give Table 1,
    per-model rows Table 20. ``filters`` pins e.g. ``{"k": 32, "encoder": "siglip2"}``.

    K: both modes at the same frame budget, the paper's one K. Unless ``filters`` pins ``k``, the
    K is the one shared by the Q- and the QA-mode MaxProb rows (:func:`shared_k`), so a table that
    also holds a Q-mode K ablation (Table 12) still gives this table; several shared K, or none,
    is an error listing each mode's K. The K used and how it was chosen are in the notes and in
    ``meta["k"]`` / ``meta["k_choice"]`` (``"given"`` or ``"shared"``).
    """
    enc = _encode(table)
    f = dict(filters or {})
    if f.get("k") is None:
        f["k"] = shared_k(enc, "maxprob", ("q", "qa"), f)
        how = "shared"
        note = f"K = {f['k']}: the frame budget shared by the Q- and QA-mode MaxProb rows"
        if f["k"] is None:
            del f["k"]
    else:
        how = "given"
        note = f"K = {f['k']} (given)"
    res = compare_conditions(
        enc, [ConditionQuery("maxprob", "q", f, "q"), ConditionQuery("maxprob", "qa", f, "qa")], [("q", "qa")],
        models=models, benchmarks=benchmarks, groups=groups, n_boot=n_boot, seed=seed,
        name="q_vs_qa_maxprob", title="MaxProb accuracy, Q-mode vs QA-mode (Tables 1, 20)",
    )
    res.notes.insert(0, note)
    res.meta.update(k=f["k"], k_choice=how)
    return res


def maxprob_vs_minprob(
    table: pa.Table | EncodedPredictions,
    *,
    mode: str = "qa",
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    groups: Mapping[str, Sequence[str]] | None = DEFAULT_GROUPS,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Fig. 2 and Table 21: MaxProb vs MinProb accuracy per model, with short / long averages.

    ``maxprob_minus_minprob`` per model and benchmark; ``level="group"`` rows average it over the
    short and long benchmark groups (default: the paper's §4.2 split, configurable) and over all.
    Model-average rows per benchmark are Fig. 2's bars. Text mode QA by default (the paper's
    default scoring mode).
    """
    f = dict(filters or {})
    return compare_conditions(
        table, [ConditionQuery("maxprob", mode, f), ConditionQuery("minprob", mode, f)], [("minprob", "maxprob")],
        models=models, benchmarks=benchmarks, groups=groups, n_boot=n_boot, seed=seed,
        name="maxprob_vs_minprob", title=f"MaxProb vs MinProb accuracy, {mode}-mode (Fig. 2, Table 21)",
    )


def uniform_vs_oracle(
    table: pa.Table | EncodedPredictions,
    *,
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    groups: Mapping[str, Sequence[str]] | None = DEFAULT_GROUPS,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Table 22 (and Fig. 3): uniform-sampling vs window-oracle accuracy; ``oracle_minus_uniform`` is the gap.

    Both on the samples that have both results (per model; all panel models for the mean row).
    """
    f = dict(filters or {})
    return compare_conditions(
        table, [ConditionQuery("uniform", None, f), ConditionQuery("oracle", None, f)], [("uniform", "oracle")],
        models=models, benchmarks=benchmarks, groups=groups, n_boot=n_boot, seed=seed,
        name="uniform_vs_oracle", title="Uniform vs window-oracle accuracy (Table 22, Fig. 3)",
    )


def strategy_baselines(
    table: pa.Table | EncodedPredictions,
    *,
    mode: str = "qa",
    strategies: Sequence[str] = ("maxprob", "random", "uniform", "minprob"),
    comparisons: Sequence[tuple[str, str]] = (("random", "maxprob"), ("minprob", "random")),
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Table 17: MaxProb, Random, Uniform and MinProb accuracy on the samples complete under all four.

    ``mode`` applies to the score-based strategies (maxprob, minprob); the others ignore scores.
    Default differences: MaxProb - Random and Random - MinProb, the paper's two claims.
    """
    f = dict(filters or {})
    conds = [ConditionQuery(s, mode if s in ("maxprob", "minprob") else None, f) for s in strategies]
    return compare_conditions(
        table, conds, comparisons, models=models, benchmarks=benchmarks, groups=None, n_boot=n_boot,
        seed=seed, name="strategy_baselines", title="Random and Uniform baselines (Table 17)",
    )


def accuracy_by_setting(
    table: pa.Table | EncodedPredictions,
    column: str,
    *,
    strategy: str = "maxprob",
    mode: str | None = "q",
    values: Sequence[Any] | None = None,
    reference: Any = None,
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    name: str = "accuracy_by_setting",
    title: str | None = None,
) -> ResultTable:
    """Accuracy of one strategy across the values of a condition column (k, encoder, fps...).

    ``values`` default to every value the strategy's rows take; ``reference`` (default: the
    first value) is compared with each other value (``<value>_minus_<reference>`` columns, labels
    ``<column>=<value>``). Samples: those complete under every value (the pairing rule of
    :mod:`tempcore.diagnostics.compare`).
    """
    enc = _encode(table)
    if column not in enc.table.column_names:
        raise AnalysisError(f"the predictions have no {column!r} column")
    if values is None:
        import pyarrow as pa
        import pyarrow.compute as pc

        mask = enc.rows(strategy, mode, filters)
        col = enc.table.column(column).take(pa.array(np.flatnonzero(mask)))
        values = sorted(pc.unique(col).drop_null().to_pylist(), key=lambda v: (str(type(v)), v))
    values = list(values)
    if not values:
        raise AnalysisError(f"no {strategy} rows" + (f" in {mode}-mode" if mode else "") + f" with a {column}")
    ref = values[0] if reference is None else reference
    if ref not in values:
        raise AnalysisError(f"reference {column}={ref!r} is not among the values {values}")
    base = dict(filters or {})
    conds = [ConditionQuery(strategy, mode, {**base, column: v}, f"{column}={v}") for v in values]
    comps = [(f"{column}={ref}", f"{column}={v}") for v in values if v != ref]
    return compare_conditions(
        table if isinstance(table, EncodedPredictions) else enc, conds, comps, models=models,
        benchmarks=benchmarks, groups=None, n_boot=n_boot, seed=seed, name=name,
        title=title or f"{strategy} accuracy by {column}",
    )


def k_ablation(
    table: pa.Table | EncodedPredictions,
    *,
    strategy: str = "maxprob",
    mode: str = "q",
    ks: Sequence[int] | None = None,
    reference_k: int | None = 32,
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Table 12: MaxProb (Q-mode) accuracy across frame budgets K, differences against K = 32.

    When the table has no rows with ``reference_k`` the smallest K is the reference.
    """
    enc = _encode(table)
    if ks is None:
        import pyarrow as pa
        import pyarrow.compute as pc

        mask = enc.rows(strategy, mode, filters)
        ks = sorted(pc.unique(enc.table.column("k").take(pa.array(np.flatnonzero(mask)))).drop_null().to_pylist())
    ks = sorted(ks)
    ref = reference_k if reference_k in ks else (ks[0] if ks else None)
    return accuracy_by_setting(
        enc, "k", strategy=strategy, mode=mode, values=ks, reference=ref, filters=filters, models=models,
        benchmarks=benchmarks, n_boot=n_boot, seed=seed, name="k_ablation",
        title=f"{strategy} accuracy ({mode}-mode) by frame budget K (Table 12)",
    )


def encoder_comparison(
    table: pa.Table | EncodedPredictions,
    *,
    strategy: str = "maxprob",
    mode: str = "q",
    encoders: Sequence[str] | None = None,
    reference: str | None = None,
    filters: Mapping[str, Any] | None = None,
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ResultTable:
    """Table 18: MaxProb (Q-mode) accuracy with each frame-text encoder, differences against ``reference``."""
    return accuracy_by_setting(
        table, "encoder", strategy=strategy, mode=mode, values=encoders, reference=reference, filters=filters,
        models=models, benchmarks=benchmarks, n_boot=n_boot, seed=seed, name="encoder_comparison",
        title=f"{strategy} accuracy ({mode}-mode) by encoder (Table 18)",
    )


__all__ = [
    "accuracy_by_setting",
    "encoder_comparison",
    "k_ablation",
    "maxprob_vs_minprob",
    "q_vs_qa_maxprob",
    "strategy_baselines",
    "uniform_vs_oracle",
]
