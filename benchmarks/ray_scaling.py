"""Ray executor benchmarks of issue 17, ratios from one run (a local Ray started here).

1. scale-out with a latency-bound model (each call waits ``--latency`` s per request, like a remote
   GPU): answering throughput with 1, 2, 4, 8 model actors vs 1 (target >= 0.8 x N at N = 4, 8);
2. overhead on CPU-bound work, the issue's figure (``--only overhead``): the demo world
   (:func:`tempcore.demo.demo_config`: the shipped world encoder, the whole zoo panel incl. the
   tiny Idefics3, every demo condition) over a reduced world of ``--questions`` questions, as a
   user runs it: ``python -m tempcore run --config`` in a fresh process, locally vs
   ``--executor ray --ray-address`` on a running cluster (``ray start --head --num-cpus 2``,
   started once for the benchmark and not counted, as a cluster is started once for many runs)
   with one actor per model; ``--repeats`` times, interleaved (alternating which goes first), each
   in a fresh run folder with a fresh embedding cache; the median of the pairs' ratios of wall
   times (target <= 1.3x). Both sides pay Python's start, the imports (torch, transformers), the
   encoder and every model load (the Ray side: in its worker, plus joining the cluster and
   starting the worker). Both use one torch thread per process (``OMP_NUM_THREADS=1``, as the
   demo) and the same decoding threads (2 on 2 cores). ``--only overhead-inprocess``: the same
   runs in this process (Ray from ``ray.init``), where every run after the first finds torch and
   transformers imported in the driver, so the local side pays no imports while each Ray run
   starts a fresh worker that does (measured 4.4-7 s of a ~12-20 s run): it measures warm imports
   against cold ones, not the executor, and is kept as the stricter bound;
3. ``--only synthetic``: the same no-frame run answered by a model that burns CPU (``--burn`` s per
   item), through Ray with one actor vs the local executor (per-call overhead without the model
   loads).

Throughput is items / the model's answering seconds (``ModelSummary.seconds``: from the first
unit sent, after the actors loaded, to the last commit). Usage:
``PYTHONPATH=src python benchmarks/ray_scaling.py [--items 160] [--latency 0.1] [--questions 48] [--repeats 3]
[--only scale|overhead|overhead-inprocess|synthetic]``
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
    from tempcore.run.config import RunConfig

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

    from tempcore.run.runner import run

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
    """A synthetic CPU-bound model (no model load, no frames): the per-call overhead alone."""
    import functools

    from tempcore.run.runner import run

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


def _uptime() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def demo_overhead(questions: int, repeats: int, ray_init_s: float) -> bool:
    """The demo world through the Ray executor (one actor per model) vs the local executor."""
    import statistics

    import torch

    from tempcore.demo import HELD_OUT_SEED, demo_config
    from tempcore.run.runner import run
    from tempcore.world import generate_world

    torch.set_num_threads(1)  # as the demo does (its models are tiny)
    ratios, times = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        world = generate_world(root / "world", questions, HELD_OUT_SEED)
        print(f"  demo world: {questions} questions (seed {HELD_OUT_SEED}); load before: {_uptime()}")
        for r in range(repeats):
            wall = {}
            for which in (("local", "ray") if r % 2 == 0 else ("ray", "local")):
                cfg = demo_config(world, root / f"{which}{r}", oracle_windows=4, cache=root / f"cache-{which}{r}")
                if which == "ray":
                    cfg = dataclasses.replace(cfg, executor="ray", ray={"model_defaults": {"replicas": 1}})
                t = time.perf_counter()
                s = run(cfg, progress=False, log=lambda _m: None)
                wall[which] = time.perf_counter() - t
                assert all(m.failed == 0 and m.done == m.planned for m in s.models), s.models
            n = sum(m.done for m in s.models)
            ratios.append(wall["ray"] / wall["local"])
            times.append(wall)
            print(f"  repeat {r + 1}: {n} predictions, local {wall['local']:.2f} s, ray {wall['ray']:.2f} s "
                  f"= {ratios[-1]:.2f}x (load {_uptime()})")
    ratio = statistics.median(ratios)
    ok = ratio <= 1.3
    print(f"overhead (demo world, {questions} questions, one actor per model, {repeats} interleaved repeats): "
          f"median {ratio:.2f}x the local wall time (target <= 1.3x): {'ok' if ok else 'NOT MET'}; "
          f"starting Ray itself (once, not counted): {ray_init_s:.1f} s")
    return ok


def _cold_run(cfg, folder: Path, env: dict[str, str], address: str | None) -> float:  # noqa: ANN001
    """Wall time of ``python -m tempcore run --config`` in a fresh process (as a user runs it:
    Python start, imports, encoder and model loads included); with ``address``, on Ray
    (``--executor ray --ray-address``)."""
    import subprocess

    import yaml

    data = json.loads(json.dumps(cfg.to_dict()))
    data.pop("source", None)
    if address is not None:
        data |= {"executor": "ray", "ray": {"model_defaults": {"replicas": 1}}}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.yaml").write_text(yaml.safe_dump(data))
    cmd = [sys.executable, "-m", "tempcore", "run", "--config", str(folder / "run.yaml"), "--no-progress", "--json"]
    if address is not None:
        cmd += ["--ray-address", address]
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-3000:]}")
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(m["failed"] == 0 and m["done"] == m["planned"] for m in summary["models"]), summary["models"]
    return wall


def demo_overhead_cold(questions: int, repeats: int, address: str, env: dict[str, str]) -> bool:
    """The issue's figure as a user meets it: the demo world's ``tempcore run`` in a fresh process,
    local vs ``--executor ray --ray-address`` on a running cluster (``ray start --head``, started
    once, not counted), interleaved, each in a fresh run folder and cache; median of the ratios."""
    import statistics

    from tempcore.demo import HELD_OUT_SEED, demo_config
    from tempcore.world import generate_world

    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        world = generate_world(root / "world", questions, HELD_OUT_SEED)
        print(f"  demo world: {questions} questions (seed {HELD_OUT_SEED}), fresh processes; load before: {_uptime()}")
        for r in range(repeats):
            wall = {}
            for which in (("local", "ray") if r % 2 == 0 else ("ray", "local")):
                cfg = demo_config(world, root / f"{which}{r}", oracle_windows=4, cache=root / f"cache-{which}{r}")
                wall[which] = _cold_run(cfg, root / f"{which}{r}", env, address if which == "ray" else None)
            ratios.append(wall["ray"] / wall["local"])
            print(f"  repeat {r + 1}: local {wall['local']:.2f} s, ray {wall['ray']:.2f} s = {ratios[-1]:.2f}x "
                  f"(load {_uptime()})")
    ratio = statistics.median(ratios)
    ok = ratio <= 1.3
    print(f"overhead (demo world, {questions} questions, `tempcore run` in fresh processes, one actor per model, "
          f"{repeats} interleaved repeats): median {ratio:.2f}x the local wall time (range {min(ratios):.2f}x-"
          f"{max(ratios):.2f}x; target <= 1.3x): {'ok' if ok else 'NOT MET'}")
    return ok


def _head(env: dict[str, str], log: Path) -> tuple[object, str]:
    """``ray start --head --block`` (2 CPUs, loopback port of its choosing) in its own process
    group; returns the process and the cluster's HOST:PORT."""
    import re
    import socket
    import subprocess

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    ray_cli = Path(sys.executable).with_name("ray")
    out = log.open("w")
    head = subprocess.Popen([str(ray_cli), "start", "--head", "--block", f"--port={port}", "--num-cpus=2",
                             "--include-dashboard=false", "--disable-usage-stats"], env=env, stdout=out,
                            stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 180
    while not (found := re.search(r"ray start --address='([^']+)'", log.read_text())):
        if head.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"ray start --head did not start: {log.read_text()[-2000:]}")
        time.sleep(0.2)
    return head, found.group(1)


def _stop_head(head) -> None:  # noqa: ANN001
    import os
    import signal
    import subprocess

    os.killpg(head.pid, signal.SIGTERM)
    try:
        head.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(head.pid, signal.SIGKILL)
        head.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=160)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--burn", type=float, default=0.02)
    ap.add_argument("--questions", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=("scale", "overhead", "overhead-inprocess", "synthetic"))
    args = ap.parse_args()
    ok = True
    if args.only in (None, "overhead"):
        ok &= _cold_overhead(args.questions, args.repeats)
    if args.only == "overhead":
        return 0 if ok else 1
    import ray

    t = time.perf_counter()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray_init_s = time.perf_counter() - t
    try:
        if args.only in (None, "scale"):
            ok &= scale(args.items, args.latency)
        if args.only in (None, "overhead-inprocess"):
            ok &= demo_overhead(args.questions, args.repeats, ray_init_s)
        if args.only == "synthetic":
            ok &= overhead(args.items, args.burn)
    finally:
        ray.shutdown()
    return 0 if ok else 1


def _cold_overhead(questions: int, repeats: int) -> bool:
    """The fresh-process figure on a ``ray start --head`` cluster of 2 CPUs started for it."""
    import os

    src = str(Path(__file__).resolve().parents[1] / "src")
    # one torch thread per process on both sides (as the demo's torch.set_num_threads(1); Ray gives
    # an actor of num_cpus 1 OMP_NUM_THREADS=1 by itself); RAY_AUTH_MODE=token: the driver joining
    # the cluster by address uses its token (~/.ray/auth_token)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p),
               HF_HUB_OFFLINE="1", RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="token", OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        head, address = _head(env, Path(tmp) / "head.log")
        print(f"  ray start --head: {time.perf_counter() - t:.1f} s (once, not counted); cluster {address}")
        try:
            return demo_overhead_cold(questions, repeats, address, env)
        finally:
            _stop_head(head)


if __name__ == "__main__":
    sys.exit(main())
