"""Decodes per video in one `tempcore run` (issue 18: decode each video once per run).

The demo's configuration (its six conditions, maxprob / minprob / noframe in every rotation, the
window oracle) over a generated world, answered by zoo models, three ways in one process:

- ``before``: every unit decodes the frames it shows (``LocalExecutor(keep_frames=False)``, the
  behaviour before the frame store): one scoring pass, then a pass per model per sample;
- ``kept``: the frames answering shows are kept from the scoring pass (the default);
- ``cached``: the same with the embeddings already in the cache: scoring decodes nothing, the one
  pass per video is the answering one.

Printed per way: the run summary's ``decodes`` (passes, videos, max per video, by kind), the wall
time of the run, and whether the requests the models saw are the same in all three ways (``kept``
runs first, so it pays the process's first imports and model loads).

    PYTHONPATH=src python benchmarks/run_decodes.py [--questions 24] [--models zoo-mean,zoo-order]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=24)
    ap.add_argument("--models", default="zoo-mean,zoo-order,zoo-text")
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from tempcore.demo import demo_config
    from tempcore.models import load_model
    from tempcore.run.config import RunConfig
    from tempcore.run.local import LocalExecutor
    from tempcore.run.runner import run
    from tempcore.world import generate_world

    torch.set_num_threads(1)
    models = args.models.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="run-decodes-"))
    world = generate_world(tmp / "world", args.questions, args.seed)
    videos = len({s.video for s in world.samples()})
    print(f"world: {args.questions} questions over {videos} videos (48x48, 10 fps, 10-40 s); models: {models}")

    class Recorder:
        def __init__(self, model: Any, seen: dict[Any, Any]) -> None:
            self._model, self._seen = model, seen

        def __getattr__(self, name: str) -> Any:
            return getattr(self._model, name)

        def answer(self, requests: Any, method: str = "generate") -> Any:
            for r in requests:
                self._seen[(self._model.name, r.key)] = (r.prompt, r.timestamps, tuple(
                    hashlib.sha256(np.ascontiguousarray(im).tobytes()).hexdigest() for im in r.images))
            return self._model.answer(requests, method=method)

    def one(name: str, cache: str, keep: bool) -> dict[Any, Any]:
        raw = dict(demo_config(world, tmp / name, cache=tmp / cache).to_dict())
        raw.pop("source", None)
        raw["models"] = [m for m in raw["models"] if m["model"] in models]
        cfg = RunConfig.from_dict(raw, source="run_decodes")
        seen: dict[Any, Any] = {}
        started = time.perf_counter()
        summary = run(cfg, progress=False, log=lambda _m: None, executor=LocalExecutor(keep_frames=keep),
                      model_factory=lambda spec: Recorder(load_model(spec), seen))
        wall = time.perf_counter() - started
        d = summary.decodes or {}
        same = "the reference" if not ref else ("identical to kept's" if seen == ref else "DIFFERENT")
        print(f"{name:7} {d.get('passes', 0):6} passes over {d.get('videos', 0)} videos: "
              f"{d.get('per_video', 0):6.2f} per video (max {d.get('max_per_video', 0)}), by kind {d.get('by_kind')}; "
              f"run {wall:6.1f} s; {len(seen)} requests, {same}")
        return seen

    ref: dict[Any, Any] = {}
    # "kept" runs first, so it (not "before") pays the process's first imports and model loads
    ref.update(one("kept", "cache", keep=True))
    before = one("before", "cache-before", keep=False)
    cached = one("cached", "cache", keep=True)
    ok = before == ref and cached == ref
    print("requests identical in all three ways" if ok else "REQUESTS DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
