"""Shared pieces of the table benchmarks (diagnostics, ablations, mba): each measurement runs in a
fresh Python process, so peak memory and first-call costs are those of one command."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def run_child(code: str, *args: object) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter with ``args`` as ``sys.argv[1:]``; its last stdout line
    is a JSON object of measurements."""
    res = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def write_parquet(table: Any, path: Path, started: float, what: str = "rows") -> None:
    """Write ``table`` to ``path`` and print its size and the time since ``started``."""
    import pyarrow.parquet as pq

    pq.write_table(table, path)
    print(f"table: {table.num_rows:,} {what}, {path.stat().st_size / 1e6:.0f} MB Parquet "
          f"(made in {time.perf_counter() - started:.1f} s)")
