"""Several models at once in one local run (``parallel_models``, issue 18) vs one after the other.

The demo's configuration (its six conditions, maxprob / minprob / noframe in every rotation, the
window oracle) over a generated world, answered by the demo's panel (five zoo members and the tiny
Idefics3, one torch thread), ``tempcore run`` in this process with ``parallel_models`` 1 and N,
interleaved ``--repeats`` times in fresh folders and caches. Printed per pair: the wall time of
each run (frame scoring included: the same work both ways) and the ratio one / N; then the
median ratio, and whether every prediction is the same in every run (it must be: batches are
formed within a job's chunks either way).

    PYTHONPATH=src python benchmarks/parallel_models.py [--questions 48] [--parallel 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=48)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import pyarrow.parquet as pq
    import torch

    from tempcore.config import RunConfig
    from tempcore.demo import demo_config
    from tempcore.runner import run
    from tempcore.world import generate_world

    torch.set_num_threads(1)
    tmp = Path(tempfile.mkdtemp(prefix="parallel-models-"))
    world = generate_world(tmp / "world", args.questions, args.seed)
    print(f"world: {args.questions} questions; cores: {os.cpu_count()}; load: {os.getloadavg()[0]:.2f}")

    def one(n: int, where: Path) -> tuple[float, list[dict[str, Any]]]:
        raw = dict(demo_config(world, where / "run", cache=where / "cache").to_dict())
        raw.pop("source", None)
        raw["parallel_models"] = n
        cfg = RunConfig.from_dict(raw, source="benchmarks/parallel_models.py")
        start = time.perf_counter()
        summary = run(cfg, progress=False, log=lambda _m: None)
        wall = time.perf_counter() - start
        assert summary.predictions_file is not None
        rows = pq.read_table(summary.predictions_file).drop(["run_id", "created_at", "latency_s"]).to_pylist()
        rows.sort(key=lambda r: (r["model"], r["sample_id"], r["condition"], str(r["rotation"])))
        return wall, rows

    walls: list[float] = []
    reference: list[dict[str, Any]] | None = None
    same = True
    for i in range(args.repeats):
        w1, r1 = one(1, tmp / f"one-{i}")
        wn, rn = one(args.parallel, tmp / f"par-{i}")
        reference = reference or r1
        same = same and r1 == reference and rn == reference
        walls.append(w1 / wn)
        print(f"pair {i + 1}: one after the other {w1:.1f} s, {args.parallel} at once {wn:.1f} s: "
              f"{w1 / wn:.2f}x; load {os.getloadavg()[0]:.2f}")
    print(f"median over {args.repeats} pairs: {statistics.median(walls):.2f}x faster with "
          f"parallel_models={args.parallel}")
    print(f"every prediction the same in every run: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
