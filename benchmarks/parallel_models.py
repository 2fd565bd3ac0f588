"""Several models at once in one local run (``parallel_models``, issue 18) vs one after the other,
in threads of the run's process and in worker processes (``model_processes``).

The demo's configuration (its six conditions, maxprob / minprob / noframe in every rotation, the
window oracle) over a generated world, answered by the demo's panel (five zoo members and the tiny
Idefics3, one torch thread), ``tempcore run`` with ``parallel_models`` 1, then N in threads, then N
with ``model_processes: true`` (each thread's models in a worker process), interleaved
``--repeats`` times in fresh folders and caches. Printed per round: the wall time of each run
(frame scoring and the workers' start included: the same work every way) and the ratios; then
the median ratios, and whether every prediction is the same in every run (it must be: batches are
formed within a job's chunks every way, and a worker computes what this process would).

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

    from tempcore.demo import demo_config
    from tempcore.run.config import RunConfig
    from tempcore.run.runner import run
    from tempcore.world import generate_world

    torch.set_num_threads(1)
    tmp = Path(tempfile.mkdtemp(prefix="parallel-models-"))
    world = generate_world(tmp / "world", args.questions, args.seed)
    print(f"world: {args.questions} questions; cores: {os.cpu_count()}; load: {os.getloadavg()[0]:.2f}")

    def one(n: int, where: Path, processes: bool = False) -> tuple[float, list[dict[str, Any]]]:
        raw = dict(demo_config(world, where / "run", cache=where / "cache", model_processes=processes).to_dict())
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

    threads: list[float] = []
    processes: list[float] = []
    reference: list[dict[str, Any]] | None = None
    same = True
    n = args.parallel
    for i in range(args.repeats):
        w1, r1 = one(1, tmp / f"one-{i}")
        wn, rn = one(n, tmp / f"par-{i}")
        wp, rp = one(n, tmp / f"proc-{i}", processes=True)
        reference = reference or r1
        same = same and r1 == reference and rn == reference and rp == reference
        threads.append(w1 / wn)
        processes.append(w1 / wp)
        print(f"round {i + 1}: one after the other {w1:.1f} s; {n} at once in threads {wn:.1f} s ({w1 / wn:.2f}x), "
              f"in worker processes {wp:.1f} s ({w1 / wp:.2f}x; {wn / wp:.2f}x the threads); "
              f"load {os.getloadavg()[0]:.2f}")
    print(f"median over {args.repeats} rounds, parallel_models={n}: threads {statistics.median(threads):.2f}x, "
          f"worker processes {statistics.median(processes):.2f}x faster than one after the other")
    print(f"every prediction the same in every run: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
