"""One report over several runs (``tempcore report --predictions RUN_A --predictions RUN_B``).

The runs' tables are stacked (columns one run lacks are null in its rows), so each section reads
the rows it needs whichever run holds them: the TempCore diagnosis the MaxProb / MinProb /
no-frame rows, the grounding section the grounding rows, the order analyses the shuffled /
reversed rows. A model name that a later run gives to another model entry (another
``model_fingerprint``: a binary or order run's prompt) is renamed there ``NAME @RUN`` (the run's
folder or file name), since those rows do not measure the same model (the accuracy table refuses
to pool them). A cell (benchmark, sample, model and condition) that two runs both hold is taken
from the first run given; the report says how many rows that left out and how many of them
disagreed with the kept row's correctness.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

#: the columns that name one cell of a predictions table (those present are used)
CELL_COLUMNS = ("benchmark", "sample_id", "model", "strategy", "mode", "k", "window", "rotation", "encoder", "fps",
                "seed", "variant", "condition")


def combine_runs(tables: Sequence[Any], labels: Sequence[str]) -> tuple[Any, list[str]]:
    """The stacked table of ``tables`` (one per run, named by ``labels``) and notes on what it holds."""
    import pyarrow as pa

    if len(tables) != len(labels) or not tables:
        raise ValueError("one label per table, at least one table")
    notes = []
    for label, table in zip(labels, tables):
        benches = sorted({str(b) for b in table.column("benchmark").drop_null().unique().to_pylist()}) \
            if "benchmark" in table.column_names else []
        strategies = sorted({str(s) for s in table.column("strategy").drop_null().unique().to_pylist()}) \
            if "strategy" in table.column_names else []
        notes.append(f"{label}: {table.num_rows} rows; benchmarks {', '.join(benches) or 'none'}; "
                     f"strategies {', '.join(strategies) or 'none'}")
    if len(tables) == 1:
        return tables[0], notes
    tables = _rename_other_entries(tables, labels, notes)
    stacked = pa.concat_tables(list(tables), promote_options="permissive")
    keys = [c for c in CELL_COLUMNS if c in stacked.column_names]
    columns = [stacked.column(c).to_pylist() for c in keys]
    correct = stacked.column("correct").to_pylist() if "correct" in stacked.column_names else [None] * len(stacked)
    first: dict[tuple[Any, ...], int] = {}
    keep = []
    dropped = disagreeing = 0
    for i, key in enumerate(zip(*columns)):
        j = first.setdefault(key, i)
        if j == i:
            keep.append(i)
        else:
            dropped += 1
            disagreeing += correct[i] != correct[j]
    if dropped:
        notes.append(f"{dropped} row(s) repeat a cell (benchmark, sample, model, condition) of a run given earlier "
                     f"and are left out ({disagreeing} of them with another correctness); the first run's rows are "
                     "kept")
        stacked = stacked.take(pa.array(keep, pa.int64()))
    return stacked, notes


def _rename_other_entries(tables: Sequence[Any], labels: Sequence[str], notes: list[str]) -> list[Any]:
    import pyarrow as pa

    from tempcore.diagnostics.table import FINGERPRINT_COLUMN

    seen: dict[str, set[str]] = {}
    out = []
    for label, table in zip(labels, tables):
        if FINGERPRINT_COLUMN not in table.column_names or "model" not in table.column_names:
            out.append(table)
            continue
        models = [str(m) for m in table.column("model").to_pylist()]
        prints = table.column(FINGERPRINT_COLUMN).to_pylist()
        mine: dict[str, set[str]] = {}
        for m, fp in zip(models, prints):
            if fp is not None:
                mine.setdefault(m, set()).add(str(fp))
        tag = PurePath(label.rstrip("/\\")).name or label
        renamed = {m: f"{m} @{tag}" for m, fps in mine.items() if m in seen and not fps <= seen[m]}
        for m, fps in mine.items():
            seen.setdefault(renamed.get(m, m), set()).update(fps)
        if renamed:
            notes.append(f"{label}: model(s) {', '.join(sorted(renamed))} are other model entries (another "
                         f"model_fingerprint) than in an earlier run: named {', '.join(sorted(renamed.values()))} "
                         "here")
            column = pa.array([renamed.get(m, m) for m in models], pa.string())
            table = table.set_column(table.column_names.index("model"), "model", column)
        out.append(table)
    return out


__all__ = ["CELL_COLUMNS", "combine_runs"]
