"""The diagnostics kernel (columns to integer codes and masks) against plain-Python versions, and
the vocabulary the diagnostics take from below them (built-in strategy names, the early-stop variant)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# --- the kernel against plain Python ------------------------------------------------------------

VALUES = st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c", "é", "a#b1", ""])), max_size=40)


def _first_seen(rows):
    return list(dict.fromkeys(rows))


def _layouts(rows, *, nulls=True):
    """The same rows as a plain array, a chunked array, and dictionary-coded chunks (each chunk
    its own dictionary, and one shared dictionary): the shapes a table read from a file has."""
    cut = len(rows) // 2
    plain = pa.array(rows, type=pa.string())
    yield plain
    yield pa.chunked_array([pa.array(rows[:cut], pa.string()), pa.array(rows[cut:], pa.string())])
    yield pa.chunked_array([pa.array(rows[:cut], pa.string()).dictionary_encode(),
                            pa.array(rows[cut:], pa.string()).dictionary_encode()])
    shared = pa.array(rows, pa.string()).dictionary_encode()
    yield pa.chunked_array([shared.slice(0, cut), shared.slice(cut)], type=shared.type)


def test_identifier_codes_hand_worked():
    from tempcore.diagnostics.kernel import DiagnosticsError, identifier_codes

    codes, values = identifier_codes(pa.array(["b", "a", "b"]))
    assert codes.tolist() == [0, 1, 0] and values == ["b", "a"]
    coded = pa.DictionaryArray.from_arrays(pa.array([2, 0], pa.int32()), pa.array(["x", "y", "z"]))
    codes, values = identifier_codes(pa.chunked_array([coded]))
    assert codes.tolist() == [2, 0] and values == ["x", "y", "z"]  # the dictionary's order, unused entries kept
    assert codes.dtype == np.int32
    two = pa.chunked_array([pa.array(["x", "y"]).dictionary_encode(), pa.array(["z", "y", "x"]).dictionary_encode()])
    codes, values = identifier_codes(two)
    assert codes.tolist() == [0, 1, 2, 1, 0] and values == ["x", "y", "z"]  # unified, first occurrence
    with pytest.raises(DiagnosticsError, match="may not contain nulls"):
        identifier_codes(pa.array(["a", None]))


@settings(max_examples=60, deadline=None)
@given(VALUES)
def test_identifier_codes_decode_to_the_rows(rows):
    from tempcore.diagnostics.kernel import identifier_codes

    rows = [r for r in rows if r is not None]
    for column in _layouts(rows):
        codes, values = identifier_codes(column)
        assert [values[c] for c in codes.tolist()] == rows
        if not pa.types.is_dictionary(column.type):
            assert values == _first_seen(rows)


@settings(max_examples=60, deadline=None)
@given(VALUES)
def test_dictionary_codes_give_nulls_the_last_code(rows):
    from tempcore.diagnostics.kernel import dictionary_codes, identifier_codes

    for column in _layouts(rows):
        codes, values = dictionary_codes(column)
        assert [values[c] for c in codes.tolist()] == rows
        if pa.types.is_dictionary(column.type) and None in rows:
            assert values[-1] is None and values.count(None) == 1
        if None not in rows:
            ident, ident_values = identifier_codes(column)
            assert codes.tolist() == ident.tolist() and values == ident_values
    codes, values = dictionary_codes(pa.chunked_array([pa.nulls(3)]))
    assert codes.tolist() == [0, 0, 0] and values == [None]


@settings(max_examples=60, deadline=None)
@given(VALUES)
def test_value_codes_number_the_values_by_first_occurrence(rows):
    from tempcore.diagnostics.kernel import value_codes

    for column in _layouts(rows):
        codes, values = value_codes(column)
        assert codes.dtype == np.int64
        assert values.to_pylist() == _first_seen(rows)
        assert [values.to_pylist()[c] for c in codes.tolist()] == rows


@settings(max_examples=60, deadline=None)
@given(VALUES, st.booleans())
def test_column_codes_partition_the_rows_like_the_values(rows, sort):
    """Whatever path is taken (runs of a sorted column, one value, small dictionaries), equal codes
    exactly for equal values; the values decode the rows when asked for."""
    from tempcore.diagnostics.kernel import column_codes

    if sort:
        rows = sorted(r for r in rows if r is not None)
    for column in _layouts(rows):
        for runs_above in (0, 10**9):
            codes, values = column_codes(column, runs_above=runs_above)
            got = codes.tolist()
            assert all((got[i] == got[j]) == (rows[i] == rows[j]) for i in range(len(rows)) for j in range(i))
            listed = values.to_pylist() if hasattr(values, "to_pylist") else list(values)
            assert [listed[c] for c in got] == rows
            if sort and runs_above == 0 and not pa.types.is_dictionary(column.type) and rows:
                assert got == sorted(got)  # a sorted text column: codes from its runs


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 1)), max_size=50),
       st.sampled_from([0, 10**9]))
def test_combine_codes_number_the_combinations_in_key_order(keys, runs_above):
    from tempcore.diagnostics.kernel import combine_codes

    n = len(keys)
    columns = [np.array([k[i] for k in keys], dtype=np.int64) for i in range(3)]
    cards = [3, 4, 2]
    ids, k, first = combine_codes(columns, cards, n, runs_above=runs_above)
    distinct = sorted(set(keys))
    assert k == len(distinct)
    assert ids.tolist() == [distinct.index(key) for key in keys]
    assert first.tolist() == [keys.index(key) for key in distinct]
    ids2, k2, none = combine_codes(columns, cards, n, runs_above=runs_above, need_first=False)
    assert ids2.tolist() == ids.tolist() and k2 == k and none.size == 0


def test_sorted_runs_hand_worked():
    from tempcore.diagnostics.kernel import sorted_runs

    assert sorted_runs(np.array([0, 0, 1, 2, 2]), 3).tolist() == [0, 2, 3]
    assert sorted_runs(np.array([0, 2, 2]), 3) is None  # code 1 absent
    assert sorted_runs(np.array([1, 0]), 2) is None  # not sorted
    identity = np.arange(4)
    assert sorted_runs(identity, 4) is identity


@settings(max_examples=60, deadline=None)
@given(VALUES, st.sampled_from(["a", "b", "zz"]))
def test_masks_are_the_python_comparisons(rows, value):
    from tempcore.diagnostics.kernel import equal_mask, in_dictionary, null_mask

    for column in _layouts(rows):
        assert equal_mask(column, value).tolist() == [r == value for r in rows]
        assert null_mask(column).tolist() == [r is None for r in rows]
        if value in rows:
            assert in_dictionary(column, value)


@settings(max_examples=60, deadline=None)
@given(VALUES)
def test_column_facts(rows):
    from tempcore.diagnostics.kernel import constant_value, distinct, is_constant

    present = [r for r in rows if r is not None]
    for column in _layouts(rows):
        assert distinct(column) == sorted(set(present))
        if is_constant(column):
            assert len(set(rows)) <= 1
        if rows and None not in rows:  # constant_value is asked of columns with rows and no nulls
            got = constant_value(column)
            assert (got is not None) == (len(set(rows)) == 1)
            if got is not None:
                assert got.to_pylist() == [rows[0]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-5, 30)), max_size=40), st.booleans())
def test_integers_and_chunk_views(values, as_float):
    from tempcore.diagnostics.kernel import chunk_views, integers

    typ = pa.float64() if as_float else pa.int64()
    data = [None if v is None else (v + 0.25 if as_float else v) for v in values]
    cut = len(data) // 2
    column = pa.chunked_array([pa.array(data[:cut], typ), pa.array(data[cut:], typ)])
    expected = [-1 if v is None else (round(v) if as_float else v) for v in data]
    assert integers(column, -1).tolist() == expected
    if None not in values and not as_float:
        assert integers(column, -1, np.int16).dtype == np.int16
        views = chunk_views(column)
        assert views is not None
        assert [x for a, b, v in views for x in v.tolist()] == values
        assert [(a, b) for a, b, _ in views] == [(0, cut), (cut, len(values))]
    else:
        assert chunk_views(column) is None
