"""The diagnostics kernel (columns to integer codes and masks) against plain-Python versions, and
the vocabulary the diagnostics take from below them (built-in strategy names, the early-stop variant)."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")


def test_built_in_strategies_are_the_registered_ones():
    """``tempcore.records.BUILT_IN_STRATEGIES`` (the diagnostics' default strategy-name rule) are
    registered strategies under exactly these names, and every strategy the selection package
    registers itself is among them."""
    from tempcore.records import BUILT_IN_STRATEGIES
    from tempcore.selection.registry import STRATEGIES, canonical_strategy

    for name in BUILT_IN_STRATEGIES:
        assert name in STRATEGIES and canonical_strategy(name) == name
    assert set(STRATEGIES) >= BUILT_IN_STRATEGIES
    assert {s for s in STRATEGIES if s in BUILT_IN_STRATEGIES} == BUILT_IN_STRATEGIES


def test_early_stop_variant_is_re_exported():
    import tempcore.records as records
    import tempcore.run.config as config

    assert config.EARLY_STOP_VARIANT is records.EARLY_STOP_VARIANT == "early_stop"


def test_prepare_table_strategy_rule_is_the_callers():
    """The default rule folds case and blanks onto the built-in names and keeps any other name; the
    full rule (``canonical_strategy``), passed in, rejects a near miss with a suggestion."""
    from tempcore.diagnostics.table import TableError, builtin_strategy_name, prepare_table
    from tempcore.selection.registry import canonical_strategy

    assert builtin_strategy_name(" MaxProb") == "maxprob"
    assert builtin_strategy_name("maxprb") == "maxprb" and builtin_strategy_name("mine") == "mine"
    t = pa.table({"strategy": ["MaxProb", "maxprb", "uniform"]})
    assert prepare_table(t).column("strategy").to_pylist() == ["maxprob", "maxprb", "uniform"]
    with pytest.raises(TableError, match="unknown strategy 'maxprb'; did you mean 'maxprob'"):
        prepare_table(t, canonical_strategy)
    ok = pa.table({"strategy": ["MaxProb", "uniform"]})
    assert prepare_table(ok, canonical_strategy).column("strategy").to_pylist() == ["maxprob", "uniform"]
