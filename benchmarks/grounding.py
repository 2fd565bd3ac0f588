"""Temporal grounding at scale (issue 15).

1. Retrieval windows: the frame-level baseline (smoothing, peak, grow while >= 0.7 * peak, clip
   to [4, 60] s) and its top-3 NMS candidates for 10,000 queries over 1-hour score tracks at
   1 fps (3,600 frames each, float32 as an encoder would emit them). Target: windows < 10 s.
2. Grounding metrics over 1,000,000 predictions: a tidy table (100k grounding samples with 1-3
   GT windows x 5 models x 2 conditions; pred_start / pred_end, ~5% parse failures) written to
   Parquet. In a fresh process each: the time to read it (the baseline), and the time to read it
   and compute mIoU / R@{0.3,0.5,0.7} / parse failures per model x condition against the
   samples' windows (``tempcore.grounding.evaluate.table_groups``). Target: metrics <= 3x read.

Usage: python benchmarks/grounding.py [--queries 10000] [--samples 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def bench_retrieval(n_queries: int, seconds: int = 3600, repeat: int = 3) -> float:
    from tempcore.grounding.retrieval import candidate_windows, retrieval_windows

    rng = np.random.default_rng(0)
    scores = rng.uniform(0.45, 0.6, (n_queries, seconds)).astype(np.float32)
    planted = rng.integers(0, seconds - 30, n_queries)
    length = rng.integers(4, 30, n_queries)
    for q in range(n_queries):
        scores[q, planted[q]: planted[q] + length[q]] += 0.2
    best_w, best_c = np.inf, np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        w = retrieval_windows(scores)
        best_w = min(best_w, time.perf_counter() - t0)
        t0 = time.perf_counter()
        c = candidate_windows(scores, k=3)
        best_c = min(best_c, time.perf_counter() - t0)
    hit = np.mean((w["start"] <= planted + length) & (w["end"] >= planted))
    ok = best_w < 10.0
    print(f"retrieval windows, {n_queries:,} queries x {seconds:,} frames: {best_w:.2f} s (best of {repeat}; "
          f"target < 10 s): {'PASS' if ok else 'FAIL'}; windows overlapping the planted event: {hit:.3f}")
    print(f"top-3 NMS candidates, same tracks: {best_c:.2f} s (reported); "
          f"candidates per query: {np.isfinite(c['start']).sum(axis=1).mean():.2f}")
    return best_w


def make_inputs(n_samples: int, n_models: int = 5, seed: int = 0):
    import pyarrow as pa

    from tempcore.records import Sample

    rng = np.random.default_rng(seed)
    n_win = rng.integers(1, 4, n_samples)
    samples = []
    starts = rng.uniform(0, 3500, n_win.sum())
    lens = rng.uniform(2, 60, n_win.sum())
    k = 0
    for i in range(n_samples):
        w = tuple((float(starts[k + j]), float(starts[k + j] + lens[k + j])) for j in range(n_win[i]))
        k += n_win[i]
        samples.append(Sample("bench", f"s{i}", f"v{i % 500}.mp4", "when?", answer_windows=w))
    conds = ["uniform", "maxprob"]
    n = n_samples * n_models * len(conds)
    sample = np.repeat(np.arange(n_samples), n_models * len(conds))
    model = np.tile(np.repeat(np.arange(n_models), len(conds)), n_samples)
    cond = np.tile(np.arange(len(conds)), n_samples * n_models)
    first = np.array([s.answer_windows[0][0] for s in samples])[sample]
    ps = first + rng.normal(0, 30, n)
    pe = ps + rng.uniform(1, 40, n)
    fail = rng.random(n) < 0.05
    ps[fail] = np.nan
    pe[fail] = np.nan
    ids = pa.array([f"s{i}" for i in range(n_samples)])
    table = pa.table({
        "benchmark": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array(["bench"])),
        "sample_id": pa.DictionaryArray.from_arrays(pa.array(sample.astype(np.int32)), ids),
        "model": pa.DictionaryArray.from_arrays(pa.array(model.astype(np.int32)),
                                                pa.array([f"model-{m}" for m in range(n_models)])),
        "strategy": pa.DictionaryArray.from_arrays(pa.array(cond.astype(np.int32)), pa.array(conds)),
        "mode": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array(["none"])),
        "k": pa.array(np.full(n, 32, np.int64)),
        "window": pa.nulls(n, pa.int64()),
        "correct": pa.array(np.zeros(n, np.int8)),
        "pred_start": pa.array(ps, from_pandas=True),
        "pred_end": pa.array(pe, from_pandas=True),
    })
    return table, samples


CHILD = r"""
import json, pickle, resource, sys, time
import pyarrow.parquet as pq
if sys.argv[3] == "metrics":  # the annotations, once per benchmark (not timed as metrics)
    import pyarrow.compute
    from tempcore.grounding.evaluate import GroundTruth, table_groups
    ta = time.perf_counter()
    gt = GroundTruth.from_samples(pickle.load(open(sys.argv[2], "rb")))
    t_gt = time.perf_counter() - ta
t0 = time.perf_counter()
table = pq.read_table(sys.argv[1])
t_read = time.perf_counter() - t0
out = {"read": t_read, "rows": table.num_rows}
if sys.argv[3] == "metrics":
    out["gt"] = t_gt
    t1 = time.perf_counter()
    groups = table_groups(table, gt, benchmark="bench")
    out["metrics"] = time.perf_counter() - t1
    out["miou"] = {g["model"] + "/" + g["strategy"]: round(g["miou"], 4) for g in groups}
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def child(path: Path, samples: Path, what: str) -> dict:
    res = subprocess.run([sys.executable, "-c", CHILD, str(path), str(samples), what], capture_output=True,
                         text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def bench_metrics(n_samples: int, repeat: int) -> float:
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as tmp:
        path, spath = Path(tmp) / "predictions.parquet", Path(tmp) / "samples.pkl"
        t0 = time.perf_counter()
        table, samples = make_inputs(n_samples)
        pq.write_table(table, path)
        spath.write_bytes(pickle.dumps(samples))
        print(f"table: {table.num_rows:,} predictions, {len(samples):,} samples with "
              f"{sum(len(s.answer_windows) for s in samples):,} GT windows, {path.stat().st_size / 1e6:.0f} MB "
              f"Parquet (made in {time.perf_counter() - t0:.1f} s)")
        del table, samples
        reads, metrics, gts, peaks, miou = [], [], [], [], {}
        for _ in range(repeat):  # interleaved: the machine is noisy
            reads.append(child(path, spath, "read")["read"])
            r = child(path, spath, "metrics")
            metrics.append(r["metrics"])
            gts.append(r["gt"])
            peaks.append(r["peak_mb"])
            miou = r["miou"]
    read, metric = min(reads), min(metrics)
    ratio = metric / read
    print(f"read Parquet: {read:.2f} s (best of {repeat})")
    print(f"grounding metrics (best-window IoU, mIoU, R@0.3/0.5/0.7, parse failures per model x condition): "
          f"{metric:.2f} s = {ratio:.2f}x read (target <= 3x): {'PASS' if ratio <= 3 else 'FAIL'}")
    print(f"unpickling the 100k samples + their GT windows as arrays (once per benchmark, not in the ratio): {min(gts):.2f} s")
    print(f"peak memory of read + metrics: {max(peaks):.0f} MB; mIoU e.g. {dict(list(miou.items())[:2])}")
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    t_windows = bench_retrieval(args.queries, repeat=args.repeat)
    ratio = bench_metrics(args.samples, args.repeat)
    return 0 if t_windows < 10.0 and ratio <= 3.0 else 1


if __name__ == "__main__":
    sys.exit(main())
