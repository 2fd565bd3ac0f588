"""The analyses a report can show, each registered with what it needs.

:data:`ANALYSES` is a :class:`tempcore.registry.Registry` of :class:`Analysis` entries: a key, a
title, the report section it belongs to, what it needs from the predictions and from the user,
and ``run(ctx)``, which returns a :class:`~tempcore.diagnostics.accuracy.ResultTable`. The report
(:mod:`tempcore.report.build`) shows every registered analysis in registration order within its
section; nothing is listed anywhere else.

What an analysis needs is declared, not coded, where it can be:

* ``conditions``: ``(strategy, mode)`` pairs the predictions must hold; ``mode`` ``None`` accepts any
  text mode, :data:`FSS_MODE` stands for the report's FSS mode (``--fss-mode``);
* ``columns``: predictions columns, each with what it holds (shown in the reason);
* ``inputs``: inputs beyond the predictions, names of :class:`Context` fields
  (:data:`INPUTS`: ``ratings``, ``external``, ``text_models``, ``same_backbone``);
* ``needs(ctx)``: anything further (e.g. MaxProb at two or more K), ``None`` when satisfied.

They are checked in that order: inputs, columns, conditions, ``needs``; the first unmet one is the
reason the report gives. An analysis that fails anyway (:class:`~tempcore.errors.TempcoreError`,
``ValueError``, ``KeyError``) is shown with its error; one failing analysis never fails a report.

Adding one from outside the package::

    from tempcore.report.catalogue import analysis

    @analysis("my_table", title="My table", section="accuracy", conditions=[("uniform", None)])
    def my_table(ctx):
        return ResultTable(...)

or, from an installed package, an entry point in the group ``tempcore.analyses`` naming an
:class:`Analysis` object (not a decorated function: the entry point is the registration)::

    [project.entry-points."tempcore.analyses"]
    my_table = "mypackage.analyses:MY_TABLE"     # MY_TABLE = Analysis("my_table", ...)

A section key the report does not know (:data:`SECTIONS`) becomes a new section after the known
ones, titled ``section_title`` (default: the key).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tempcore.registry import GROUPS, Registry, RegistryError

FSS_MODE = "fss"
"""The ``mode`` of a required condition that stands for the report's FSS mode (``--fss-mode``)."""

SECTIONS: tuple[tuple[str, str, str], ...] = (
    ("profiles", "Benchmark quality profiles",
     "FSS (MaxProb vs MinProb), LIS (no-frame), the FSS categories and the LIS x FSS taxonomy with TPI."),
    ("accuracy", "Accuracy", "Accuracy per model and condition, and the paper's strategy comparisons."),
    ("oracle", "Oracle gap", "Window-oracle vs uniform sampling, and how the gap depends on FSS."),
    ("sweeps", "Threshold sweeps and frame coverage", ""),
    ("validation", "Validation and contamination probes", "Analyses that need inputs beyond the predictions."),
    ("grounding", "Temporal grounding",
     "Grounding as search (ExtremeWhenBench): mIoU / R@tau per model and condition, the search / localize split, "
     "candidate recall@K, accuracy vs the crop around the ground truth, the benchmarks' query profiles."),
)
"""(key, title, intro) of the report's sections, in order."""

INPUTS: Mapping[str, str] = {
    "ratings": "needs human ratings (--ratings FILE)",
    "external": "needs external benchmark scores (--external-scores FILE)",
    "text_models": "needs text-only LLMs among the models (--text-models NAME ...)",
    "same_backbone": "needs a text-only LLM and its VLM (--same-backbone TEXT=VLM)",
}
"""The inputs beyond the predictions an analysis may need (``Context`` fields), and the reason shown
when one is not given."""


# --- what the predictions hold ------------------------------------------------------------------


@dataclass
class Facts:
    """What the predictions table holds, for deciding which analyses can run."""

    pairs: set[tuple[str, str]]  # (strategy, mode)
    maxprob_k: dict[str, list[int]]  # mode -> K values of MaxProb rows
    maxprob_encoders: dict[str, list[str]]
    columns: set[str]
    models: list[str]

    @classmethod
    def of(cls, table: Any) -> Facts:
        import pyarrow.compute as pc

        pairs = {(str(r["strategy"]), str(r["mode"]))
                 for r in table.select(["strategy", "mode"]).group_by(["strategy", "mode"]).aggregate([]).to_pylist()}
        mp = table.filter(pc.fill_null(pc.equal(table.column("strategy"), "maxprob"), False))
        ks: dict[str, list[int]] = {}
        encs: dict[str, list[str]] = {}
        for mode in {m for s, m in pairs if s == "maxprob"}:
            sub = mp.filter(pc.fill_null(pc.equal(mp.column("mode"), mode), False))
            ks[mode] = sorted(pc.unique(sub.column("k")).drop_null().to_pylist())
            if "encoder" in table.column_names:
                encs[mode] = sorted(pc.unique(sub.column("encoder")).drop_null().to_pylist())
        models = sorted(pc.unique(table.column("model")).to_pylist())
        return cls(pairs, ks, encs, set(table.column_names), models)

    def has(self, strategy: str, mode: str | None = None) -> bool:
        return any(s == strategy and (mode is None or m == mode) for s, m in self.pairs)


@dataclass
class Context:
    """Inputs of the analyses."""

    table: Any
    enc: Any
    diagnosis: Any
    facts: Facts
    fss_mode: str
    scoring: str
    k: int | None = None
    encoder: str | None = None
    models: Sequence[str] | None = None
    ratings: Any = None
    external: Any = None
    text_models: Sequence[str] = ()
    same_backbone: Sequence[tuple[str, str]] = ()
    n_boot: int = 2000
    seed: int = 0
    #: the benchmarks' samples by benchmark name (``tempcore report --annotations``), empty without
    samples: Mapping[str, Sequence[Any]] = field(default_factory=dict)

    @property
    def score_filters(self) -> dict[str, Any]:
        return {k: v for k, v in (("k", self.k), ("encoder", self.encoder)) if v is not None}

    @property
    def k_filter(self) -> dict[str, Any]:
        return {} if self.k is None else {"k": self.k}

    @property
    def boot(self) -> dict[str, Any]:
        """``n_boot`` and ``seed``, as the bootstrap-using analyses take them."""
        return {"n_boot": self.n_boot, "seed": self.seed}

    def ablation_mode(self, what: dict[str, list[Any]]) -> str | None:
        """Q-mode (the paper's Tables 12 and 18) when it has two or more values, else the FSS mode."""
        for mode in ("q", self.fss_mode):
            if len(what.get(mode, [])) >= 2:
                return mode
        return None


Needs = Callable[[Context], "str | None"]  # None when the analysis can run, else what it needs
Run = Callable[[Context], Any]


def missing_conditions(ctx: Context, pairs: Sequence[tuple[str, str | None]]) -> str | None:
    """``"needs X and Y (q-mode) predictions"`` for the pairs the predictions lack, ``None`` if none.

    A pair's mode :data:`FSS_MODE` is the report's FSS mode."""
    resolved = [(s, ctx.fss_mode if m == FSS_MODE else m) for s, m in pairs]
    missing = [f"{s}" + (f" ({m}-mode)" if m else "") for s, m in resolved if not ctx.facts.has(s, m)]
    return None if not missing else "needs " + " and ".join(missing) + " predictions"


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


@dataclass(frozen=True)
class Analysis:
    """One table of the report: what it is, where it goes, what it needs, and how to compute it.

    ``key`` is the registry name (and the table's anchor in the report); ``run(ctx)`` returns a
    ResultTable (no rows: shown as "no rows"). ``conditions``, ``columns`` (column -> what it
    holds), ``inputs`` and ``needs`` are described in the module doc. ``section_title`` titles a
    section the report does not know.
    """

    key: str
    title: str
    section: str
    run: Run
    conditions: tuple[tuple[str, str | None], ...] = ()
    columns: Mapping[str, str] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    needs: Needs | None = None
    section_title: str | None = None

    def __post_init__(self) -> None:
        unknown = [i for i in self.inputs if i not in INPUTS]
        if unknown:
            raise RegistryError(f"analysis {self.key!r}: unknown inputs {unknown} (known: {', '.join(INPUTS)})")
        object.__setattr__(self, "conditions", tuple((str(s), m) for s, m in self.conditions))
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "columns", dict(self.columns))

    def unmet(self, ctx: Context) -> str | None:
        """Why the analysis cannot run on ``ctx`` (the first unmet requirement), or ``None``."""
        for name in self.inputs:
            if not getattr(ctx, name):
                return INPUTS[name]
        for column, what in self.columns.items():
            if column not in ctx.facts.columns:
                return f"needs {_article(column)} {column} column" + (f" ({what})" if what else "")
        if self.conditions:
            reason = missing_conditions(ctx, self.conditions)
            if reason:
                return reason
        return self.needs(ctx) if self.needs is not None else None


def _check(name: str, obj: Any) -> None:
    if obj.key != name:
        raise RegistryError(f"analysis {name!r} is registered under another key than its own ({obj.key!r})")


ANALYSES: Registry[Analysis] = Registry("analysis", group=GROUPS["analyses"], base=Analysis, check=_check)
"""Every analysis a report shows, in report order within each section (entry points come last)."""


def register_analysis(entry: Analysis, *, replace: bool = False) -> Analysis:
    """Register ``entry`` under its key (the registry's collision policy applies)."""
    return ANALYSES.register(entry.key, entry, replace=replace)


def analysis(
    key: str,
    *,
    title: str,
    section: str,
    conditions: Sequence[tuple[str, str | None]] = (),
    columns: Mapping[str, str] | None = None,
    inputs: Sequence[str] = (),
    needs: Needs | None = None,
    section_title: str | None = None,
    replace: bool = False,
) -> Callable[[Run], Run]:
    """A decorator registering ``run(ctx) -> ResultTable`` as the analysis ``key`` (see the module doc)."""

    def decorator(run: Run) -> Run:
        register_analysis(Analysis(key, title, section, run, tuple(conditions), dict(columns or {}),
                                   tuple(inputs), needs, section_title), replace=replace)
        return run

    return decorator


def sections() -> list[tuple[str, str, str]]:
    """(key, title, intro) of every section: :data:`SECTIONS`, then those only registered analyses name."""
    out = list(SECTIONS)
    known = {key for key, _, _ in out}
    for name in ANALYSES:
        entry = ANALYSES[name]
        if entry.section not in known:
            known.add(entry.section)
            out.append((entry.section, entry.section_title or entry.section, ""))
    return out


def collapse_rotations(result: Any) -> Any:
    """The accuracy table with identical per-rotation rows merged (see the module doc); unchanged
    when the table has no ``rotation`` column or nothing to merge."""
    if "rotation" not in result.columns:
        return result
    figures = [c for c in result.columns if c != "rotation" and c not in ("accuracy", "ci_low", "ci_high")]
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in result.rows:
        groups.setdefault(tuple(str(row.get(c)) for c in figures), []).append(row)
    merged = 0
    rows = []
    seen: set[int] = set()
    for row in result.rows:
        same = groups[tuple(str(row.get(c)) for c in figures)]
        if id(same[0]) in seen:
            continue
        seen.add(id(same[0]))
        rotations = sorted({r.get("rotation") for r in same}, key=lambda v: (v is None, v if v is not None else 0))
        if len(same) > 1 and len(rotations) == len(same):
            merged += 1
            ints = [r for r in rotations if isinstance(r, int)]
            if len(ints) == len(rotations) and rotations == list(range(ints[0], ints[-1] + 1)):
                span = f"{rotations[0]}-{rotations[-1]}"
            else:
                span = ",".join(str(r) for r in rotations)
            rows.append({**same[0], "rotation": f"{span} (same)"})
        else:
            rows.extend(same)
    if not merged:
        return result
    result.rows = rows
    result.notes = [*result.notes, f"{merged} model x condition group(s) have identical figures under every option "
                    "rotation and are shown once (rotation 'a-b (same)')"]
    return result


# --- the paper's analyses -----------------------------------------------------------------------


class _Module:
    """A module imported on first attribute access (so importing the catalogue imports no numpy)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        import importlib

        return getattr(importlib.import_module(self._name), attr)


def _register_builtins() -> None:
    acc: Any = _Module("tempcore.diagnostics.accuracy")
    an: Any = _Module("tempcore.diagnostics.analyses")

    def k_needs(ctx: Context) -> str | None:
        return None if ctx.ablation_mode(ctx.facts.maxprob_k) else "needs MaxProb predictions at two or more K"

    def enc_needs(ctx: Context) -> str | None:
        return None if ctx.ablation_mode(ctx.facts.maxprob_encoders) else \
            "needs MaxProb predictions with two or more encoders"

    gaps: Any = _Module("tempcore.diagnostics.oracle_gaps")

    def every_window(ctx: Context) -> str | None:
        """Table 7 needs every oracle window: not the rows of an early-stopped oracle."""
        return gaps.EVERY_WINDOW if gaps.early_stopped_oracle_rows(ctx.enc) else None

    def coverage(ctx: Context) -> Any:
        k = ctx.k
        if k is None:
            ks = ctx.facts.maxprob_k.get(ctx.fss_mode, [])
            if len(ks) != 1:
                raise an.AnalysisError(f"MaxProb rows have K values {ks}; choose one with --k")
            k = ks[0]
        return an.abs_fss_by_coverage(ctx.diagnosis, an.frame_counts_from_table(ctx.table), k=k)

    def backbone(ctx: Context) -> Any:
        tables = [an.same_backbone_control(ctx.enc, text_model=t, vlm_model=v, n_boot=ctx.n_boot, seed=ctx.seed)
                  for t, v in ctx.same_backbone]
        if len(tables) == 1:
            return tables[0]
        first = tables[0]
        first.rows = [{"pair": f"{t} / {v}", **r} for (t, v), tb in zip(ctx.same_backbone, tables) for r in tb.rows]
        first.columns = ["pair", *first.columns]
        first.title = "Same-backbone controls (Table 16)"
        return first

    def collapsed_accuracy(c: Context) -> Any:

        return collapse_rotations(acc.accuracy_table(c.table, models=c.models))

    oracle_uniform = (("oracle", None), ("uniform", None))
    fss = FSS_MODE
    builtins = [
        Analysis("benchmark_profiles", "Benchmark quality profiles (Table 4)", "profiles",
                 lambda c: an.benchmark_profiles(c.diagnosis)),
        Analysis("key_antikey_fractions", "Key / Anti-key fractions (Table 3)", "profiles",
                 lambda c: an.key_antikey_fractions(c.diagnosis)),
        Analysis("lis_fss_spearman", "LIS–FSS Spearman correlation (§7.1)", "profiles",
                 lambda c: an.lis_fss_spearman(c.diagnosis)),
        Analysis("accuracy", "Accuracy per model x condition with Wilson 95% intervals", "accuracy",
                 collapsed_accuracy),
        Analysis("maxprob_vs_minprob", "MaxProb vs MinProb (Fig. 2, Table 21)", "accuracy",
                 lambda c: an.maxprob_vs_minprob(c.enc, mode=c.fss_mode, filters=c.score_filters, models=c.models,
                                                 **c.boot),
                 conditions=(("maxprob", fss), ("minprob", fss))),
        Analysis("q_vs_qa_maxprob", "MaxProb accuracy, Q-mode vs QA-mode (Tables 1, 20)", "accuracy",
                 lambda c: an.q_vs_qa_maxprob(c.enc, filters=c.score_filters, models=c.models, **c.boot),
                 conditions=(("maxprob", "q"), ("maxprob", "qa"))),
        Analysis("strategy_baselines", "Random and Uniform baselines (Table 17)", "accuracy",
                 lambda c: an.strategy_baselines(c.enc, mode=c.fss_mode, filters=c.k_filter, models=c.models,
                                                 **c.boot),
                 conditions=(("maxprob", fss), ("random", None), ("uniform", None), ("minprob", fss))),
        Analysis("k_ablation", "Frame budget K ablation (Table 12)", "accuracy",
                 lambda c: an.k_ablation(c.enc, mode=c.ablation_mode(c.facts.maxprob_k) or "q",
                                         filters={} if c.encoder is None else {"encoder": c.encoder},
                                         models=c.models, **c.boot),
                 needs=k_needs),
        Analysis("encoder_comparison", "Encoder comparison (Table 18)", "accuracy",
                 lambda c: an.encoder_comparison(c.enc, mode=c.ablation_mode(c.facts.maxprob_encoders) or "q",
                                                 filters=c.k_filter, models=c.models, **c.boot),
                 needs=enc_needs),
        Analysis("uniform_vs_oracle", "Uniform vs window oracle (Table 22, Fig. 3)", "oracle",
                 lambda c: an.uniform_vs_oracle(c.enc, filters=c.k_filter, models=c.models, **c.boot),
                 conditions=oracle_uniform),
        Analysis("oracle_gap_by_fss_category", "Oracle gap by FSS category (Table 2)", "oracle",
                 lambda c: an.oracle_gap_by_fss_category(c.enc, c.diagnosis, models=c.models, **c.boot),
                 conditions=oracle_uniform),
        Analysis("oracle_gap_by_fss_bin", "Oracle gap by FSS bin (Figs. 6, 9)", "oracle",
                 lambda c: an.oracle_gap_by_fss_bin(c.enc, c.diagnosis, bin_width=None if c.scoring == "hard" else 0.1,
                                                    models=c.models),
                 conditions=oracle_uniform),
        Analysis("oracle_gap_vs_abs_fss", "Oracle gap against |FSS| (Fig. 10)", "oracle",
                 lambda c: an.oracle_gap_vs_abs_fss(c.enc, c.diagnosis, models=c.models),
                 conditions=oracle_uniform),
        Analysis("correct_window_centroids", "Correct-window centroids (Table 7)", "oracle",
                 lambda c: an.correct_window_centroids(c.enc, c.diagnosis, models=c.models),
                 conditions=(("oracle", None),), needs=every_window),
        Analysis("tau_sweep", "tau sweep", "sweeps",
                 lambda c: an.threshold_sweep(c.diagnosis, taus=an.DEFAULT_TAUS)),
        Analysis("lambda_sweep", "lambda sweep", "sweeps",
                 lambda c: an.threshold_sweep(c.diagnosis, taus=[float(c.diagnosis.params.get("tau", 0.15))],
                                              lambdas=an.DEFAULT_LAMBDAS)),
        Analysis("abs_fss_by_coverage", "|FSS| by frame coverage K/L (Table 14)", "sweeps", coverage,
                 columns={"n_frames": "the number of scored frames L per sample"}),
        Analysis("human_metric_correlations", "Metric correlations with human scores (Table 8)", "validation",
                 lambda c: an.human_metric_correlations(c.diagnosis, c.ratings), inputs=("ratings",)),
        Analysis("human_scores_by_category", "Human scores by FSS category (Table 9)", "validation",
                 lambda c: an.human_scores_by_category(c.diagnosis, c.ratings), inputs=("ratings",)),
        Analysis("human_category_tests", "Mann–Whitney tests against Non-key (§B.2)", "validation",
                 lambda c: an.human_category_tests(c.diagnosis, c.ratings), inputs=("ratings",)),
        Analysis("human_tau_sweep", "tau sweep against human labels (Table 10)", "validation",
                 lambda c: an.human_tau_sweep(c.diagnosis, c.ratings), inputs=("ratings",)),
        Analysis("external_ranking_correlation", "Key vs Non-key ranking vs external benchmarks (Table 11)",
                 "validation",
                 lambda c: an.external_ranking_correlation(
                     c.enc, c.diagnosis, c.external,
                     condition=an.ConditionQuery("maxprob", c.fss_mode, c.score_filters), models=c.models),
                 inputs=("external",)),
        Analysis("text_only_probe", "Text-only contamination probe (Table 15)", "validation",
                 lambda c: an.text_only_probe(c.enc, vlm_models=[m for m in c.facts.models if m not in c.text_models],
                                              text_models=list(c.text_models), **c.boot),
                 conditions=(("noframe", None),), inputs=("text_models",)),
        Analysis("same_backbone_control", "Same-backbone control (Table 16)", "validation", backbone,
                 inputs=("same_backbone",)),
    ]
    for entry in builtins:
        register_analysis(entry)


_register_builtins()


__all__ = [
    "ANALYSES",
    "FSS_MODE",
    "INPUTS",
    "SECTIONS",
    "Analysis",
    "Context",
    "Facts",
    "analysis",
    "collapse_rotations",
    "missing_conditions",
    "register_analysis",
    "sections",
]
