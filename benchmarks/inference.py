"""Inference benchmarks of issue 4, ratios from one run.

1. batched vs one-at-a-time throughput of a tiny VLM (target >= 3x)      -> inference_batching.py
2. HTTP client at concurrency 64 vs sequential, 100 ms endpoint (>= 30x)  -> inference_http.py
3. rerunning a completed run of 10,000 predictions: 0 model calls, < 2 s (measured here, against
   the time of the first run that stored them, so the figure also reads as a ratio).

Usage: python benchmarks/inference.py [--only batching|http|rerun]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))


class CountingModel:
    """A deterministic answerer standing in for a VLM at the machine's edge; counts its calls."""

    supports_option_scores = False
    revision = None

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls = 0

    def answer(self, requests, *, method="generate"):
        from tempcore.models import ModelResponse

        self.calls += len(requests)
        return [ModelResponse(f"The answer is {'ABCD'[len(r.prompt) % 4]}.") for r in requests]

    def close(self) -> None:
        pass


def rerun(n_samples: int = 2500) -> bool:
    """10,000 stored predictions (2,500 samples x 4 option rotations, no-frame), then a rerun."""
    from tempcore.run.config import RunConfig
    from tempcore.run.runner import run

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ann = root / "bench.jsonl"
        with ann.open("w") as fh:
            for i in range(n_samples):
                fh.write(json.dumps({"id": f"s{i}", "video": f"v{i}.mp4", "question": f"Question {i}?",
                                     "options": ["red", "green", "blue", "yellow"], "answer": i % 4}) + "\n")
        cfg = RunConfig.from_dict({
            "out": str(root / "run"),
            "benchmarks": [{"name": "generic", "annotations": str(ann), "video_root": str(root)}],
            "models": [{"backend": "hf", "model": "counting", "name": "counting"}],
            "conditions": [{"strategy": "noframe", "rotations": "all", "k": 2}],
            "noframe_size": 8,
        })
        models: list[CountingModel] = []

        def factory(spec):
            models.append(CountingModel(spec.display_name))
            return models[-1]

        t0 = time.perf_counter()
        first = run(cfg, progress=False, log=lambda _m: None, model_factory=factory)
        t_first = time.perf_counter() - t0
        stored = first.models[0].done
        t0 = time.perf_counter()
        second = run(cfg, progress=False, log=lambda _m: None, model_factory=factory)
        t_rerun = time.perf_counter() - t0
    calls = sum(m.calls for m in models[1:])
    ok = stored == 10_000 and second.models[0].done == 0 and calls == 0 and t_rerun < 2.0
    print(f"rerun: {stored} predictions stored in {t_first:.2f} s; rerun made {calls} model calls "
          f"in {t_rerun:.2f} s ({t_first / t_rerun:.1f}x faster than the first run) "
          f"(target: 0 calls, < 2 s): {'PASS' if ok else 'FAIL'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("batching", "http", "rerun"))
    args = parser.parse_args()
    results = []
    if args.only in (None, "batching"):
        import inference_batching

        results.append(inference_batching.main([]) == 0)
    if args.only in (None, "http"):
        import inference_http

        results.append(inference_http.main([]) == 0)
    if args.only in (None, "rerun"):
        results.append(rerun())
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
