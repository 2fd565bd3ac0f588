"""Benchmark: OpenAI-compatible HTTP client at concurrency 64 vs sequential.

Target (issue 4): against a local endpoint that answers after 100 ms, the client at concurrency 64
is >= 30x faster per request than at concurrency 1. Both are measured in this run against the same
server: ``tests/helpers/http_peer.py`` started in its own process (a real OpenAI-compatible HTTP server
serving a deterministic stand-in model after a fixed latency). The sequential baseline runs on a
subset (``--sequential`` requests) and is compared per request; the concurrent run is repeated
(``--repeats``) and the fastest counts (on a shared machine, CPU contention from other processes
only slows it down). Both phases are timed end to end: encoding, HTTP, parsing.

    python benchmarks/inference_http.py [--requests 640] [--sequential 64] [--concurrency 64] [--latency 0.1] [--repeats 3]

Prints both throughputs, the ratio and PASS/FAIL; exits 1 on FAIL.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

from tempcore.models.base import ModelRequest
from tempcore.models.openai_http import OpenAIChatModel

ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT / "tests" / "helpers" / "http_peer.py"
TARGET = 30.0


def make_requests(n: int, frames: int, side: int) -> list[ModelRequest]:
    rng = np.random.default_rng(0)
    return [
        ModelRequest(
            images=tuple(rng.integers(0, 256, (side, side, 3), dtype=np.uint8) for _ in range(frames)),
            prompt=f"Question {i}: what happens? A. x B. y C. z D. w",
            options=("x", "y", "z", "w"),
            key=f"bench-{i}",
        )
        for i in range(n)
    ]


def peer_stats(base_url: str) -> dict:
    with urllib.request.urlopen(base_url.rsplit("/v1", 1)[0] + "/peer/stats", timeout=10) as reply:
        return json.load(reply)


def timed(model: OpenAIChatModel, requests: list[ModelRequest]) -> float:
    start = time.perf_counter()
    responses = model.answer(requests)
    elapsed = time.perf_counter() - start
    failed = [r.error for r in responses if not r.ok]
    if failed:
        raise SystemExit(f"{len(failed)} requests failed, e.g. {failed[0]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=640, help="requests at full concurrency")
    parser.add_argument("--sequential", type=int, default=64, help="requests for the sequential baseline")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.1, help="server latency per answer (s)")
    parser.add_argument("--frames", type=int, default=2, help="images per request")
    parser.add_argument("--side", type=int, default=32, help="image side (pixels)")
    parser.add_argument("--repeats", type=int, default=3, help="concurrent runs; the fastest counts")
    args = parser.parse_args(argv)

    peer = subprocess.Popen(
        [sys.executable, str(PEER), "--latency", str(args.latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=str(ROOT),
    )
    try:
        assert peer.stdout is not None
        line = peer.stdout.readline().strip()
        if not line.startswith("READY "):
            raise SystemExit(f"peer did not start: {line!r}")
        base_url = line.split(" ", 1)[1]
        common = dict(api_key_env=None, timeout_s=30.0, max_retries=0, image_format="jpeg")
        warmup = make_requests(4, args.frames, args.side)
        with OpenAIChatModel("bench", base_url, concurrency=1, **common) as sequential:
            sequential.answer(warmup)
            seq_s = timed(sequential, make_requests(args.sequential, args.frames, args.side))
        with OpenAIChatModel("bench", base_url, concurrency=args.concurrency, **common) as concurrent:
            concurrent.answer(warmup)
            requests = make_requests(args.requests, args.frames, args.side)
            server_cpu = peer_stats(base_url)["process_cpu_s"]
            client_cpu = time.process_time()
            runs = [timed(concurrent, requests) for _ in range(args.repeats)]
            client_cpu = (time.process_time() - client_cpu) / args.repeats
            stats = peer_stats(base_url)
            server_cpu = (stats["process_cpu_s"] - server_cpu) / args.repeats
            conc_s = min(runs)
    finally:
        if peer.stdin is not None:
            peer.stdin.close()
        peer.wait(timeout=30)

    seq_rate = args.sequential / seq_s
    conc_rate = args.requests / conc_s
    ratio = conc_rate / seq_rate
    print(
        f"server latency {args.latency * 1000:.0f} ms, {args.frames} x {args.side}px JPEG images per request"
    )
    print(f"sequential (concurrency 1): {args.sequential} requests in {seq_s:.2f} s = {seq_rate:.1f} req/s")
    print(
        f"concurrency {args.concurrency}: {args.requests} requests in {conc_s:.2f} s = {conc_rate:.1f} req/s "
        f"(best of {args.repeats}: {', '.join(f'{r:.2f}' for r in runs)} s; "
        f"server saw at most {stats['max_in_flight']} in flight)"
    )
    print(
        f"CPU per request at concurrency {args.concurrency}: client {client_cpu / args.requests * 1000:.2f} ms, "
        f"server {server_cpu / args.requests * 1000:.2f} ms"
    )
    verdict = "PASS" if ratio >= TARGET else "FAIL"
    print(f"ratio {ratio:.1f}x (target >= {TARGET:.0f}x): {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
