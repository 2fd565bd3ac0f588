"""Ray executor benchmarks of issue 17, ratios from one run (a local Ray started here).

1. scale-out with a latency-bound model (each call waits ``--latency`` s per request, like a remote
   GPU): answering throughput with 1, 2, 4, 8 model actors vs 1 (target >= 0.8 x N at N = 4, 8);
2. overhead on CPU-bound work: the same no-frame run answered by a model that burns CPU, through
   the Ray executor with one actor vs the local executor (target <= 1.3x the wall time; the Ray
   side includes starting the actor and loading its model, not starting Ray itself).

Throughput is items / the model's answering seconds (``ModelSummary.seconds``: from the first
unit sent, after the actors loaded, to the last commit). Usage:
``PYTHONPATH=src python benchmarks/ray_scaling.py [--items 160] [--latency 0.1] [--only scale|overhead]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path


class LatencyModel:
    """Waits ``latency`` seconds per request (sleeping: no CPU), then answers deterministically."""

    supports_option_scores = False
    revision = None

    def __init__(self, spec: object, latency: float = 0.1, burn: float = 0.0) -> None:
        self.name = spec.display_name  # type: ignore[attr-defined]
        self.latency, self.burn = latency, burn

    def answer(self, requests, *, method="generate"):  # noqa: ANN001
        from tempcore.models import ModelResponse

        out = []
        for r in requests:
            if self.latency:
                time.sleep(self.latency)
            if self.burn:  # CPU-bound: spin for `burn` seconds
                end = time.perf_counter() + self.burn
                x = 0
                while time.perf_counter() < end:
                    x += 1
            out.append(ModelResponse(f"({'ABCD'[len(r.prompt) % 4]})"))
        return out

    def close(self) -> None:
        pass


def _config(root: Path, items: int, out: str):  # noqa: ANN202
    from tempcore.config import RunConfig

    ann = root / "bench.jsonl"
    if not ann.exists():
        with ann.open("w") as fh:
            for i in range(items):
                fh.write(json.dumps({"id": f"s{i}", "video": f"v{i}.mp4", "question": f"Question {i}?",
                                     "options": ["red", "green", "blue", "yellow"], "answer": i % 4}) + "\n")
    return RunConfig.from_dict({
        "out": str(root / out), "request_batch": 1,
        "benchmarks": [{"name": "generic", "annotations": str(ann), "video_root": str(root)}],
        "models": [{"backend": "hf", "model": "latency", "name": "latency"}],
        "conditions": [{"strategy": "noframe", "k": 2}],
    })


def scale(items: int, latency: float) -> bool:
    import functools

    from tempcore.runner import run

    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in (1, 2, 4, 8):
            cfg = dataclasses.replace(_config(root, items, f"n{n}"), executor="ray", ray={
                "model_defaults": {"replicas": n, "num_cpus": 0.1}, "max_in_flight": 2})
            s = run(cfg, progress=False, log=lambda _m: None,
                    model_factory=functools.partial(LatencyModel, latency=latency))
            m = s.models[0]
            assert m.done == items, m
            rates[n] = m.done / m.seconds
            print(f"  {n} actor(s): {m.done} items in {m.seconds:.2f} s = {rates[n]:.1f} items/s "
                  f"({rates[n] / rates[1]:.2f}x of 1 actor)")
    ok = all(rates[n] / rates[1] >= 0.8 * n for n in (4, 8))
    print(f"scale-out (latency {latency * 1000:.0f} ms): 4 actors {rates[4] / rates[1]:.2f}x, 8 actors "
          f"{rates[8] / rates[1]:.2f}x (target >= 3.2x, 6.4x): {'ok' if ok else 'NOT MET'}")
    return ok


def overhead(items: int, burn: float) -> bool:
    import functools

    from tempcore.runner import run

    factory = functools.partial(LatencyModel, latency=0.0, burn=burn)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        run(_config(root, items, "local"), progress=False, log=lambda _m: None, model_factory=factory)
        local = time.perf_counter() - t
        cfg = dataclasses.replace(_config(root, items, "ray"), executor="ray",
                                  ray={"model_defaults": {"replicas": 1, "num_cpus": 1}})
        t = time.perf_counter()
        run(cfg, progress=False, log=lambda _m: None, model_factory=factory)
        remote = time.perf_counter() - t
    ratio = remote / local
    print(f"overhead (CPU-bound, {burn * 1000:.0f} ms per item, {items} items): local {local:.2f} s, "
          f"ray (1 actor) {remote:.2f} s = {ratio:.2f}x (target <= 1.3x): {'ok' if ratio <= 1.3 else 'NOT MET'}")
    return ratio <= 1.3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=160)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--burn", type=float, default=0.02)
    ap.add_argument("--only", choices=("scale", "overhead"))
    args = ap.parse_args()
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        ok = True
        if args.only in (None, "scale"):
            ok &= scale(args.items, args.latency)
        if args.only in (None, "overhead"):
            ok &= overhead(args.items, args.burn)
    finally:
        ray.shutdown()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
