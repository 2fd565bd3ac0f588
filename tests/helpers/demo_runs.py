"""Small runs of the demo's configuration for the tests of how a run answers (parallel models,
model worker processes): the configuration over a generated world, and the stored table in a
comparable form."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from tempcore.run.config import RunConfig

VOLATILE = {"run_id", "created_at", "latency_s"}
"""Columns that differ between two runs of the same work."""

LOCAL_ONLY = ("parallel_models", "model_processes")
"""Configuration keys of the local executor only, dropped when ``changes`` name another executor."""


def demo_run_config(world: Any, out: Path, models: Collection[str], *, source: str, **changes: Any) -> RunConfig:
    """:func:`tempcore.demo.demo_config` over ``world`` into ``out`` (its own cache beside it), the
    zoo ``models`` only, ``request_batch`` 4 (so a job spans several chunks and two threads share
    some model), then ``changes`` (with ``executor`` other than local, without the demo's own
    :data:`LOCAL_ONLY` keys; a caller that passes one keeps it, to test that it is refused)."""
    from tempcore.demo import demo_config

    raw = dict(demo_config(world, out, cache=out.parent / f"{out.name}-cache").to_dict())
    raw.pop("source", None)
    raw["models"] = [m for m in raw["models"] if (m.get("name") or m["model"]) in models]
    raw["request_batch"] = 4
    raw.update(changes)
    if raw.get("executor", "local") != "local":  # the local executor's own keys (the demo sets them)
        for key in LOCAL_ONLY:
            if key not in changes:
                raw.pop(key, None)
    return RunConfig.from_dict(raw, source=source)


def table_rows(predictions_file: str | None) -> list[dict[str, Any]]:
    """A run's predictions table without its volatile columns, in a fixed order."""
    import pyarrow.parquet as pq

    assert predictions_file is not None
    rows = pq.read_table(predictions_file).to_pylist()
    key = ("model", "sample_id", "condition", "rotation")
    return sorted(({k: v for k, v in r.items() if k not in VOLATILE} for r in rows),
                  key=lambda r: tuple(str(r[k]) for k in key))
