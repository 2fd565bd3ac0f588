"""Validation of a tidy predictions table (:mod:`tempcore.tidy.table`): the required columns, canonical
column types, and the values every diagnostic relies on, with errors naming the source, the
column and the first bad row. pyarrow is imported inside the functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tempcore.errors import TempcoreError
from tempcore.tidy.schema import FLOAT_COLUMNS, INT_COLUMNS, REQUIRED_COLUMNS, STRING_COLUMNS

if TYPE_CHECKING:
    import pyarrow as pa

_STRING_COLUMNS = STRING_COLUMNS
_ID_COLUMNS = ("benchmark", "sample_id", "model", "strategy")
# ``answer`` may be a letter in a table made elsewhere: :func:`_answer_of` reads it, not a cast.
_INT_COLUMNS = tuple(n for n in INT_COLUMNS if n != "answer")
_FLOAT_COLUMNS = FLOAT_COLUMNS


class PredictionsTableError(TempcoreError):
    """A predictions table is unusable: names the file, the row and the reason."""



def _first_bad_row(mask: Any) -> int:
    import numpy as np

    return int(np.flatnonzero(np.asarray(mask))[0]) + 1


def validate_table(table: pa.Table, source: str = "<table>") -> pa.Table:
    """Check and normalise a predictions table; return it with canonical column types.

    Checks: the required columns are present; identifiers (benchmark, sample_id, model, strategy)
    are non-empty; strategy names are matched case-insensitively (:func:`_normalise_strategies`);
    an empty ``mode`` means ``none`` for strategies that take no text mode and is an error for
    score-based ones; ``mode`` is then q, qa or none; ``k`` a positive integer or empty (unknown,
    kept as its own group); ``window`` an integer or null; ``correct`` 0 or 1 (booleans accepted) with no nulls; ``p_correct`` in
    [0, 1] or null. Errors name ``source``, the column and the first bad row (1 = first data row).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise PredictionsTableError(
            f"{source}: missing required column(s) {', '.join(missing)} "
            f"(a predictions table needs {', '.join(REQUIRED_COLUMNS)})"
        )
    columns = {}
    for name in table.column_names:
        col = table.column(name)
        try:
            if name in _STRING_COLUMNS and not pa.types.is_string(col.type):
                if pa.types.is_floating(col.type) and name in _ID_COLUMNS:
                    raise PredictionsTableError(
                        f"{source}: column {name} holds floats; ids must be text or integers"
                    )
                col = col.cast(pa.string())
            elif name in _INT_COLUMNS and not pa.types.is_int64(col.type):
                col = col.cast(pa.int64())
            elif name in _FLOAT_COLUMNS and not pa.types.is_float64(col.type):
                col = col.cast(pa.float64())
        except pa.ArrowException as exc:  # invalid values or an impossible cast
            raise PredictionsTableError(
                f"{source}: column {name} has values of the wrong type: {exc}"
            ) from exc
        columns[name] = col
    for name in _ID_COLUMNS:
        col = columns[name]
        bad = pc.or_(pc.is_null(col), pc.equal(pc.utf8_length(pc.fill_null(col, "")), 0))
        if pc.any(bad).as_py():
            raise PredictionsTableError(f"{source}: row {_first_bad_row(bad)}: empty {name}")
    columns["strategy"] = _normalise_strategies(columns["strategy"], source)
    columns["mode"] = _fill_modes(columns["mode"], columns["strategy"], source)
    bad = pc.invert(pc.is_in(columns["mode"], value_set=pa.array(["q", "qa", "none"])))
    if pc.any(bad).as_py():
        row = _first_bad_row(bad)
        value = columns["mode"][row - 1].as_py()
        raise PredictionsTableError(f"{source}: row {row}: mode must be q, qa or none, not {value!r}")
    k = columns["k"]
    bad = pc.fill_null(pc.less_equal(k, 0), False)  # null = unknown K, its own group
    if pc.any(bad).as_py():
        raise PredictionsTableError(
            f"{source}: row {_first_bad_row(bad)}: k must be a positive integer (or empty for unknown)"
        )
    correct = columns["correct"]
    if pa.types.is_boolean(correct.type):
        correct = correct.cast(pa.int8())
    if not (pa.types.is_integer(correct.type) or pa.types.is_floating(correct.type)):
        raise PredictionsTableError(f"{source}: column correct must hold 0 or 1, found {correct.type} values")
    bad = pc.fill_null(pc.invert(pc.is_in(correct, value_set=pa.array([0, 1], type=correct.type))), True)
    if pc.any(bad).as_py():
        row = _first_bad_row(bad)
        raise PredictionsTableError(
            f"{source}: row {row}: correct must be 0 or 1, not {correct[row - 1].as_py()!r}"
        )
    columns["correct"] = correct.cast(pa.int8())
    if "p_correct" in columns:
        p = columns["p_correct"]
        bad = pc.fill_null(pc.or_(pc.less(p, 0.0), pc.greater(p, 1.0)), False)
        bad = pc.or_(bad, pc.fill_null(pc.is_nan(p), False))
        if pc.any(bad).as_py():
            raise PredictionsTableError(f"{source}: row {_first_bad_row(bad)}: p_correct must lie in [0, 1]")
    for flag in ("parse_error",):
        if flag in columns:
            col = columns[flag]
            if pa.types.is_boolean(col.type):
                col = col.cast(pa.int8())
            try:
                columns[flag] = col.cast(pa.int8())
            except pa.ArrowException as exc:  # invalid values or an impossible cast
                raise PredictionsTableError(f"{source}: column {flag} must hold 0 or 1: {exc}") from exc
    return pa.table(columns)


def _known_strategies() -> tuple[frozenset[str], frozenset[str]]:
    """(every registered strategy, the score-based ones), without importing the selection code
    when it is not needed elsewhere (it is light: numpy only)."""
    from tempcore.selection.registry import STRATEGIES, score_based

    return frozenset(STRATEGIES), score_based()


def _normalise_strategies(col: Any, source: str) -> Any:
    """Strategy names matched case-insensitively to the registered ones (``MaxProb`` -> ``maxprob``).

    A name that is not registered but close to a registered one (``maxprb``) is rejected with a
    suggestion: it is a typo that would otherwise make a group of its own. A name far from every
    registered one is kept as given: a strategy of a toolkit that is not tempcore's (e.g. a model that
    samples its own frames), which only the analyses that do not need a known strategy use.
    """

    import pyarrow as pa

    from tempcore.selection import SelectionError
    from tempcore.selection.registry import canonical_strategy

    values = col.to_pylist()
    mapping: dict[str, str] = {}
    for i, name in enumerate(values, start=1):
        if name in mapping:
            continue
        try:
            mapping[name] = canonical_strategy(name)
        except SelectionError as exc:
            raise PredictionsTableError(f"{source}: row {i}: {exc}") from exc
    if all(k == v for k, v in mapping.items()):
        return col
    return pa.chunked_array([pa.array([mapping[v] for v in values], type=pa.string())])


def _fill_modes(mode: Any, strategy: Any, source: str) -> Any:
    """Empty ``mode`` means ``none`` for strategies that take no text mode; a strategy that ranks frames
    by score (:func:`tempcore.selection.needs_scores`: maxprob, minprob, aks, bolt, retrieval,
    retrieve_ground, plug-ins that say so) with an empty mode is an error (q or qa changes its frames)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    empty = pc.or_(pc.is_null(mode), pc.equal(pc.utf8_length(pc.fill_null(mode, "")), 0))
    if not pc.any(empty).as_py():
        return mode
    _known, score_based = _known_strategies()
    needs = pc.and_(empty, pc.is_in(strategy, value_set=pa.array(sorted(score_based))))
    if pc.any(needs).as_py():
        row = _first_bad_row(needs)
        raise PredictionsTableError(
            f"{source}: row {row}: empty mode for strategy {strategy[row - 1].as_py()!r}, which ranks frames by "
            "score and needs mode q or qa"
        )
    return pc.if_else(empty, pa.scalar("none"), mode)



__all__ = ["PredictionsTableError", "validate_table"]
