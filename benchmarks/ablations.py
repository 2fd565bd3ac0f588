"""Ablations at scale (issue 14): ``tempcore audit ablations`` over 5,000,000 prediction rows.

A synthetic TVBench-shaped tidy table — 10 tasks, ~104k questions x 8 models x 6 conditions (uniform,
textonly, noframe, single, shuffled, reversed; a few results missing), with ``answer``, ``n_options``
and ``task`` columns — is written to Parquet. In one run, in a fresh process each: the time to read
the table (the baseline) and the time to read it and run the audit (ablation table with Wilson and
paired-bootstrap intervals, macro / micro averages, agreement, order sensitivity with its ~104k
per-sample rows) and serialise its JSON, through ``audit_ablations_json``, the function the command
calls for ``--json``. Target: audit <= 3x the read time.

Usage: python benchmarks/ablations.py [--samples 104167] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _harness import run_child, write_parquet

CONDITIONS = ["uniform", "textonly", "noframe", "single", "shuffled", "reversed"]
TASKS = ["action_count", "object_count", "action_sequence", "object_shuffle", "scene_transition",
         "action_localization", "action_antonym", "unexpected_action", "egocentric_sequence", "moving_direction"]


def make_table(n_samples: int, n_models: int = 8, seed: int = 0):
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    n_cond = len(CONDITIONS)
    n = n_samples * n_models * n_cond
    sample = np.repeat(np.arange(n_samples), n_models * n_cond)
    model = np.tile(np.repeat(np.arange(n_models), n_cond), n_samples)
    cond = np.tile(np.arange(n_cond), n_samples * n_models)
    keep = rng.random(n) > 0.0005
    sel = np.flatnonzero(keep)
    p_right = np.array([0.6, 0.4, 0.45, 0.5, 0.45, 0.5])[cond]
    correct = (rng.random(n) < p_right).astype(np.int8)
    n_opt = (2 + sample % 3).astype(np.int64)
    answer = (rng.random(n) * n_opt).astype(np.int64)
    task = (sample % len(TASKS)).astype(np.int32)
    bench = (sample % 2).astype(np.int32)
    return pa.table({
        "benchmark": pa.DictionaryArray.from_arrays(pa.array(bench[sel]), pa.array(["tvbench", "mvbench"])),
        "sample_id": pa.DictionaryArray.from_arrays(pa.array(sample[sel].astype(np.int32)),
                                                    pa.array([f"s{i}" for i in range(n_samples)])),
        "model": pa.DictionaryArray.from_arrays(pa.array(model[sel].astype(np.int32)),
                                                pa.array([f"model-{m}" for m in range(n_models)])),
        "strategy": pa.DictionaryArray.from_arrays(pa.array(cond[sel].astype(np.int32)), pa.array(CONDITIONS)),
        "mode": pa.array(np.full(sel.size, "none")).dictionary_encode(),
        "k": pa.array(np.full(sel.size, 16, np.int64)),
        "window": pa.nulls(sel.size, pa.int64()),
        "correct": pa.array(correct[sel]),
        "answer": pa.array(answer[sel]),
        "n_options": pa.array(n_opt[sel]),
        "task": pa.DictionaryArray.from_arrays(pa.array(task[sel]), pa.array(TASKS)),
    })


CHILD = r"""
import json, resource, sys, time
import pyarrow.parquet as pq
t0 = time.perf_counter()
table = pq.read_table(sys.argv[1])
t_read = time.perf_counter() - t0
out = {"read": t_read, "rows": table.num_rows}
if sys.argv[2] == "audit":
    from tempcore.diagnostics.ablations import audit_ablations_json
    t1 = time.perf_counter()
    text = audit_ablations_json(table)  # what `tempcore audit ablations --json` prints
    out["audit"] = time.perf_counter() - t1
    out["json_mb"] = len(text) / 1e6
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def child(path: Path, what: str) -> dict:
    return run_child(CHILD, path, what)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=104_167)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "predictions.parquet"
        t0 = time.perf_counter()
        table = make_table(args.samples)
        write_parquet(table, path, t0)
        del table
        reads, audits, peaks = [], [], []
        for _ in range(args.repeat):  # interleaved: the machine is noisy
            reads.append(child(path, "read")["read"])
            r = child(path, "audit")
            audits.append(r["audit"])
            peaks.append(r["peak_mb"])
    read, audit = min(reads), min(audits)
    ratio = audit / read
    ok = ratio <= 3.0
    print(f"read Parquet: {read:.2f} s (best of {args.repeat})")
    print(f"audit ablations (table, averages, agreement, order sensitivity, JSON): {audit:.2f} s = "
          f"{ratio:.2f}x read (target <= 3x): {'PASS' if ok else 'FAIL'}")
    rounds = sorted(a / r for a, r in zip(audits, reads))
    print(f"per round (audit / read of the same round): median {statistics.median(rounds):.2f}x, "
          f"{', '.join(f'{x:.2f}x' for x in rounds)} (reported)")
    print(f"peak memory of read + audit: {max(peaks):.0f} MB (reported)")
    print(f"load average (1 min) {load_start[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
