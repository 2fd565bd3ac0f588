"""MBA at scale (issue 12): ``tempcore mba`` over 5,000,000 binary predictions in 1,000,000 groups.

A synthetic tidy table of binarised questions (ids ``g{n}#b{i}``, 2 to 8 per group, 5M in all; one
model x condition; a ``dataset`` column with 7 values, a raw ``response`` and a ``target``) is written
to Parquet twice: in key order (sorted by sample id, as ``tempcore export predictions`` writes a
store) and in generation order (not sorted: the sample ids must be hashed). In one run, in a fresh
process each: the time to read the table (the baseline) and the time to read it and compute BA / MBA /
chance MBA (overall and by dataset, groups from the ``#b`` ids, ``parse=extract``), plus the same with
``parse=first-char`` (reported). Target: MBA <= 3x the read time (key order).

Usage: python benchmarks/mba.py [--groups 1000000] [--rows 5000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _harness import run_child, write_parquet


def make_table(n_groups: int, n_rows: int, seed: int = 0):
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 9, n_groups)
    diff = n_rows - int(sizes.sum())
    while diff:  # nudge group sizes (staying in 1..9) until the total is n_rows
        idx = rng.integers(0, n_groups, min(abs(diff), n_groups))
        step = np.sign(diff)
        ok = (sizes[idx] + step >= 1) & (sizes[idx] + step <= 9)
        idx = np.unique(idx[ok])[: abs(diff)]
        sizes[idx] += step
        diff = n_rows - int(sizes.sum())
    group = np.repeat(np.arange(n_groups), sizes)
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    index = np.arange(n_rows) - starts
    ids = pc.binary_join_element_wise(
        pc.binary_join_element_wise(pa.array(np.full(n_rows, "g")), pa.array(group).cast(pa.string()), ""),
        pc.binary_join_element_wise(pa.array(np.full(n_rows, "#b")), pa.array(index).cast(pa.string()), ""), "")
    target = rng.integers(0, 2, n_rows)
    correct = (rng.random(n_rows) < 0.75).astype(np.int8)
    letters = np.where(correct == 1, target, 1 - target)
    datasets = pa.array(["ActivityNet", "Charades", "COIN", "EgoExo4D", "FineGym", "Movie", "Oops"])
    return pa.table({
        "benchmark": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n_rows, np.int32)), pa.array(["temporalbench"])),
        "sample_id": ids,
        "model": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n_rows, np.int32)), pa.array(["model-0"])),
        "strategy": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n_rows, np.int32)), pa.array(["uniform"])),
        "mode": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n_rows, np.int32)), pa.array(["none"])),
        "k": pa.array(np.full(n_rows, 16, np.int64)),
        "window": pa.nulls(n_rows, pa.int64()),
        "correct": pa.array(correct),
        "response": pa.DictionaryArray.from_arrays(pa.array(letters.astype(np.int32)), pa.array(["A", "B"])),
        "target": pa.array(target.astype(np.int64)),
        "n_options": pa.array(np.full(n_rows, 2, np.int64)),
        "dataset": pa.DictionaryArray.from_arrays(pa.array((group % 7).astype(np.int32)), datasets),
    })


CHILD = r"""
import json, resource, sys, time
import pyarrow.parquet as pq
t0 = time.perf_counter()
table = pq.read_table(sys.argv[1])
t_read = time.perf_counter() - t0
out = {"read": t_read, "rows": table.num_rows}
if sys.argv[2] == "mba":
    from tempcore.diagnostics.mba import mba_table
    t1 = time.perf_counter()
    r = mba_table(table)
    out["mba"] = time.perf_counter() - t1
    out["overall"] = r.overall[0]
    t2 = time.perf_counter()
    f = mba_table(table, parse="first-char")
    out["first_char"] = time.perf_counter() - t2
    out["same"] = f.overall[0]["correct_groups"] == r.overall[0]["correct_groups"]
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def child(path: Path, what: str) -> dict:
    return run_child(CHILD, path, what)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "predictions.parquet"
        unsorted = Path(tmp) / "predictions_unsorted.parquet"
        t0 = time.perf_counter()
        table = make_table(args.groups, args.rows)
        pq.write_table(table, unsorted)
        table = table.take(pc.sort_indices(table, [("sample_id", "ascending")]))
        write_parquet(table, path, t0, f"binary predictions in {args.groups:,} groups")
        del table
        reads, mbas, firsts, peaks, shuffled = [], [], [], [], []
        for _ in range(args.repeat):  # interleaved: the machine is noisy
            reads.append(child(path, "read")["read"])
            r = child(path, "mba")
            mbas.append(r["mba"])
            firsts.append(r["first_char"])
            peaks.append(r["peak_mb"])
            overall = r["overall"]
            assert r["same"], "first-char and extract disagree on a table where they must agree"
            assert overall["n_groups"] == args.groups and overall["n_binary"] == args.rows
            u = child(unsorted, "mba")
            assert u["overall"] == overall
            shuffled.append(u["mba"])
    read, mba, first = min(reads), min(mbas), min(firsts)
    ratio = mba / read
    ok = ratio <= 3.0
    print(f"read Parquet: {read:.2f} s (best of {args.repeat})")
    print(f"tempcore mba (BA, MBA, chance MBA; overall + by dataset): {mba:.2f} s = {ratio:.2f}x read "
          f"(target <= 3x): {'PASS' if ok else 'FAIL'}")
    rounds = sorted(m / r for m, r in zip(mbas, reads))
    print(f"per round (mba / read of the same round): median {statistics.median(rounds):.2f}x, "
          f"{', '.join(f'{x:.2f}x' for x in rounds)} (reported)")
    print(f"with --parse first-char: {first:.2f} s = {first / read:.2f}x read (reported)")
    print(f"rows not in key order (sample ids hashed): {min(shuffled):.2f} s = {min(shuffled) / read:.2f}x read "
          "(reported)")
    print(f"MBA {overall['mba']:.4f}, BA {overall['ba']:.4f}, chance {overall['chance_mba']:.4f}; "
          f"peak memory {max(peaks):.0f} MB")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
