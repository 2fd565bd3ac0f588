"""``tempcore compare`` at scale (issue 33): two runs of ~1,000,000 prediction rows each.

A synthetic run A (samples x 6 models x 4 conditions, with responses, answers, frame indices and
timestamps and the four fingerprint columns) and a run B that differs from it in a known way (1% of
the answers flipped, 0.5% of the frame selections moved, 0.1% of the rows missing, one model's
fingerprint changed) are written to Parquet. In a fresh process each: the time to read both tables
(the baseline) and the time of ``compare_runs`` on them once read. Target: compare <= 3x the read.
The planted differences are checked against the result.

Usage: python benchmarks/compare.py [--samples 40000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _harness import run_child, write_parquet

MODELS = 6
CONDITIONS = ["maxprob|mode=qa|k=8|encoder=siglip|fps=10|seed=0", "minprob|mode=qa|k=8|encoder=siglip|fps=10|seed=0",
              "uniform|mode=none|k=8|fps=10|seed=0", "noframe|mode=none|k=8|fps=10|seed=0"]


def make_tables(n_samples: int, seed: int = 0):  # noqa: ANN201 - two pyarrow tables and the planted counts
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    n_cond = len(CONDITIONS)
    n = n_samples * MODELS * n_cond
    sample = np.repeat(np.arange(n_samples), MODELS * n_cond)
    model = np.tile(np.repeat(np.arange(MODELS), n_cond), n_samples)
    cond = np.tile(np.arange(n_cond), n_samples * MODELS)
    correct = (rng.random(n) < 0.6).astype(np.int8)
    start = rng.integers(0, 200, n)
    frames = [f"[{s},{s + 10},{s + 20},{s + 30},{s + 40},{s + 50},{s + 60},{s + 70}]" for s in start.tolist()]
    stamps = [f"[{s / 10},{(s + 10) / 10},{(s + 20) / 10},{(s + 30) / 10},{(s + 40) / 10},{(s + 50) / 10},"
              f"{(s + 60) / 10},{(s + 70) / 10}]" for s in start.tolist()]
    letters = np.array(list("ABCD"))

    def table(correct: np.ndarray, frames: list[str], stamps: list[str], fp_model: np.ndarray, keep: np.ndarray):
        sel = np.flatnonzero(keep)
        answer = np.where(correct == 1, 1, 2)
        return pa.table({
            "benchmark": pa.array(np.where(sample[sel] % 2 == 0, "videomme", "nextqa")),
            "sample_id": pa.array([f"s{i}" for i in sample[sel].tolist()]),
            "model": pa.array([f"model-{m}" for m in model[sel].tolist()]),
            "condition": pa.array(np.array(CONDITIONS)[cond[sel]]),
            "correct": pa.array(correct[sel]),
            "answer": pa.array(answer[sel]),
            "response": pa.array(letters[answer[sel]]),
            "frame_indices": pa.array([frames[i] for i in sel.tolist()]),
            "frame_timestamps": pa.array([stamps[i] for i in sel.tolist()]),
            "sample_hash": pa.array([f"{i:032x}" for i in sample[sel].tolist()]),
            "prompt_hash": pa.array([f"{i:064x}" for i in (sample[sel] * n_cond + cond[sel]).tolist()]),
            "model_fingerprint": pa.array(fp_model[model[sel]]),
            "encoder_fingerprint": pa.array(np.where(cond[sel] < 2, "e" * 32, None)),
        })

    fp = np.array([f"{m:032x}" for m in range(MODELS)], dtype=object)
    a = table(correct, frames, stamps, fp, np.ones(n, dtype=bool))
    flip = rng.random(n) < 0.01
    moved = np.flatnonzero((rng.random(n) < 0.005) & (cond < 3))
    frames_b, stamps_b = list(frames), list(stamps)
    for i in moved.tolist():
        frames_b[i] = "[" + ",".join(["999"] + frames[i][1:-1].split(",")[1:]) + "]"
        stamps_b[i] = "[" + ",".join(["99.9"] + stamps[i][1:-1].split(",")[1:]) + "]"
    fp_b = fp.copy()
    fp_b[0] = "f" * 32
    keep = rng.random(n) > 0.001
    b = table(np.where(flip, 1 - correct, correct).astype(np.int8), frames_b, stamps_b, fp_b, keep)
    planted = {"flipped": int((flip & keep).sum()), "moved": int(keep[moved].sum()), "only_a": int((~keep).sum()),
               "model_rows": int((keep & (model == 0)).sum())}
    return a, b, planted


CHILD = r"""
import json, sys, time
import pyarrow.parquet as pq
a_path, b_path, what = sys.argv[1:4]
t0 = time.perf_counter()
a, b = pq.read_table(a_path), pq.read_table(b_path)
read = time.perf_counter() - t0
out = {"read": read}
if what == "compare":
    from tempcore.diagnostics.compare_runs import compare_runs
    t0 = time.perf_counter()
    res = compare_runs(a, b, limit=100).to_json()
    out["compare"] = time.perf_counter() - t0
    out["flipped"] = res["responses"]["correct"]
    out["moved"] = res["frames"]["different_indices"]
    out["only_a"] = res["rows"]["only_a"]
    out["model_rows"] = res["fingerprints"]["model_fingerprint"]["differ"]
print(json.dumps(out))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=40_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        a, b, planted = make_tables(args.samples)
        pa_path, pb_path = Path(tmp) / "a.parquet", Path(tmp) / "b.parquet"
        write_parquet(a, pa_path, started)
        write_parquet(b, pb_path, started)
        del a, b
        reads, compares = [], []
        for _ in range(args.repeat):
            reads.append(run_child(CHILD, pa_path, pb_path, "read")["read"])
            r = run_child(CHILD, pa_path, pb_path, "compare")
            compares.append(r["compare"])
            found = {k: r[k] for k in planted}
            if found != planted:
                print(f"planted {planted}, found {found}: FAIL")
                return 1
    read, comp = min(reads), min(compares)
    ratio = comp / read
    print(f"read both Parquet tables: {read:.2f} s (best of {args.repeat})")
    print(f"compare (fingerprints, frames, answers, paired accuracy, McNemar, bootstrap): {comp:.2f} s = "
          f"{ratio:.2f}x read (target <= 3x): {'PASS' if ratio <= 3.0 else 'FAIL'}")
    print(f"planted differences found exactly: {planted}")
    return 0 if ratio <= 3.0 else 1


if __name__ == "__main__":
    sys.exit(main())
