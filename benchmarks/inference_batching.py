"""Batched vs one-at-a-time throughput of a tiny VLM (target: batched >= 3x).

Builds a tiny random-weight Qwen2-VL checkpoint (``tests/helpers/tiny_vlms.py``), loads it through the
registry like a hub checkpoint, and answers the same requests twice: one batch of
``--batch-size`` at a time, and one request at a time (``--rounds`` alternating rounds; the
fastest round of each mode counts). Both must give identical texts; the ratio of their
throughputs is printed with PASS / FAIL (exit code 1 on FAIL).

    python benchmarks/inference_batching.py [--family qwen2_vl] [--requests 32] [--batch-size 16]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

TARGET = 3.0


def make_requests(n: int, frames: int, seed: int = 0) -> list:
    from tempcore.models import ModelRequest

    rng = np.random.default_rng(seed)
    options = ("the man opens the door", "the dog runs away", "a car stops", "nothing happens")
    reqs = []
    for i in range(n):
        images = tuple(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for _ in range(frames))
        text = f"Question {i}: what happens after the person walks in?\n" + "\n".join(
            f"{'ABCD'[j]}. {o}" for j, o in enumerate(options)
        )
        reqs.append(ModelRequest(images, text + "\nAnswer with the option's letter.", options, key=str(i)))
    return reqs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="qwen2_vl")
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    from helpers import tiny_vlms
    from tempcore.models import ModelSpec, load_model

    with tempfile.TemporaryDirectory() as tmp:
        folder = tiny_vlms.build_tiny_vlm(args.family, Path(tmp) / args.family)
        spec = ModelSpec(
            backend="hf", model=str(folder), batch_size=args.batch_size, max_new_tokens=args.max_new_tokens
        )
        model = load_model(spec)
        reqs = make_requests(args.requests, args.frames)
        model.answer(reqs[: args.batch_size])  # warm-up (both paths share the model)
        model.answer(reqs[:1])

        # rounds alternate the two modes; the fastest round of each counts, so that a burst of
        # load from other processes on a shared machine does not decide the ratio
        t_batched = t_single = float("inf")
        for _ in range(args.rounds):
            start = time.perf_counter()
            batched = model.answer(reqs)
            t_batched = min(t_batched, time.perf_counter() - start)
            start = time.perf_counter()
            single = [model.answer([r])[0] for r in reqs]
            t_single = min(t_single, time.perf_counter() - start)
        model.close()

    failed = [r.error for r in batched + single if not r.ok]
    same = [b.text for b in batched] == [s.text for s in single]
    ratio = t_single / t_batched
    print(
        f"tiny {args.family}: {args.requests} requests x {args.frames} frames, {args.max_new_tokens} new tokens"
    )
    print(f"  one at a time : {t_single:7.3f} s  ({args.requests / t_single:7.1f} requests/s)")
    print(
        f"  batched ({args.batch_size:>3}) : {t_batched:7.3f} s  ({args.requests / t_batched:7.1f} requests/s)"
    )
    print(f"  identical outputs: {same}; failed calls: {len(failed)}")
    ok = same and not failed and ratio >= TARGET
    print(
        f"batched / one-at-a-time throughput: {ratio:.2f}x (target >= {TARGET:.0f}x) {'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
