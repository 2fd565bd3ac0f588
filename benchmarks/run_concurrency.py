"""Benchmark: `tempcore run` keeps a served model busy (issue 18, "Keep a served model busy").

One run, three measurements against local OpenAI-compatible peers (``tests/helpers/http_peer.py``
in a child process of its own: real HTTP over loopback, a fixed latency per answer):

1. **client only**: the exact requests the run sends (planned, decoded and built beforehand
   through the executor's own :func:`tempcore.run.answering.prepare_unit`), given to
   :meth:`OpenAIChatModel.answer` all at once at ``concurrency``: the client's throughput;
2. **tempcore run** over a generated world (``tempcore run --config``, in this process) with the
   same model entry: its answering throughput (predictions / the answering time in the summary,
   which includes decoding the frames and committing every result) and the whole command's wall
   time (world loading, probing, planning included). Target: >= 0.8 x the client's throughput;
3. **with injected timeouts**: the same run against a peer that lets some requests (1 in
   ``--fault-every`` by a hash of the request) time out ``--timeouts`` times before answering; each
   such request is a retry chain of ``timeouts x timeout_s`` plus backoff. Printed: the run's
   answering time, the longest chain and the sum of the chains (measured at the peer: first
   arrival to answer). Target: the time the faults add to the clean run is at most the longest
   chain (x 1.25 for noise), not their sum.

    PYTHONPATH=src python benchmarks/run_concurrency.py [--questions 120] [--concurrency 64] [--latency 0.1]

Prints every figure and PASS/FAIL per target; exits 1 on a FAIL.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 0.8
CHAIN_SLACK = 1.25

PEER_CODE = r'''
import hashlib, json, sys
sys.path.insert(0, sys.argv[1])
from helpers.http_peer import HTTPPeer, timeout

latency, every, n_timeouts, sleep_s = float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
arrivals = {}

def faults(request):
    key = hashlib.sha256((request.prompt + "".join(request.image_urls)).encode()).hexdigest()
    if not every or int(key[:12], 16) % every:
        return None
    seen = arrivals.setdefault(key, [])  # the faulty requests' arrival times
    seen.append(request.received_at)
    return timeout(sleep_s) if len(seen) <= n_timeouts else None

with HTTPPeer(latency_s=latency, faults=faults, keep_requests=False) as peer:
    print("READY " + peer.base_url, flush=True)
    sys.stdin.read()
print("ARRIVALS " + json.dumps(arrivals), flush=True)
'''


@contextlib.contextmanager
def peer(latency: float, every: int = 0, timeouts: int = 0, sleep_s: float = 0.0) -> Iterator[dict[str, Any]]:
    """A peer process; yields ``{"url": ..., "arrivals": {...}}`` (``arrivals`` filled at exit: the
    arrival times of every faulty request, by a hash of its content)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", PEER_CODE, str(ROOT / "tests"), str(latency), str(every), str(timeouts), str(sleep_s)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=str(ROOT),
    )
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("READY "):
        proc.kill()
        raise SystemExit(f"peer did not start: {line!r}")
    info: dict[str, Any] = {"url": line.split(" ", 1)[1], "arrivals": {}}
    try:
        yield info
    finally:
        info["max_in_flight"] = stats(info["url"])["max_in_flight"]
        proc.stdin.close()
        rest = proc.stdout.read()
        proc.wait(timeout=30)
        for out in rest.splitlines():
            if out.startswith("ARRIVALS "):
                info["arrivals"] = json.loads(out.split(" ", 1)[1])


def stats(base_url: str) -> dict[str, Any]:
    with urllib.request.urlopen(base_url.rsplit("/v1", 1)[0] + "/peer/stats", timeout=10) as reply:
        data: dict[str, Any] = json.load(reply)
        return data


#: the conditions of each section: the world's framed conditions (decoded frames, as an audit shows
#: them) and frameless ones only (no decoding: the stream's own overhead)
SECTIONS = {
    "frames": [{"strategy": "uniform", "rotations": "all"}, {"strategy": "random", "rotations": "all"},
               {"strategy": "noframe", "rotations": "all"}],
    "no frames": [{"strategy": "noframe", "rotations": "all"}, {"strategy": "textonly", "rotations": "all"}],
}


def write_config(path: Path, world: Any, out: Path, entry: dict[str, Any], k: int,
                 conditions: list[dict[str, Any]]) -> Path:
    import yaml

    cfg = {
        "out": str(out), "fps": world.config.fps, "k": k, "seed": 0, "noframe_size": 48,
        "benchmarks": [{"name": "generic", "annotations": str(world.annotations), "video_root": str(world.root),
                        "options": {"benchmark_name": "world"}}],
        "models": [entry],
        "conditions": conditions,
    }
    path.write_text(yaml.safe_dump(cfg))
    return path


def tempcore_run(cfg_path: Path) -> tuple[float, dict[str, Any]]:
    """``tempcore run --config cfg_path --no-progress --json`` in this process: (wall s, summary)."""
    from tempcore.cli import main

    buf = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(buf):
        rc = main(["run", "--config", str(cfg_path), "--no-progress", "--json"])
    wall = time.perf_counter() - start
    if rc != 0:
        raise SystemExit(f"tempcore run exited with {rc}:\n{buf.getvalue()[-2000:]}")
    summary: dict[str, Any] = json.loads(buf.getvalue().strip().splitlines()[-1])
    return wall, summary


def the_requests(cfg_path: Path) -> tuple[list[Any], float]:
    """The requests the run sends, built by the executor's own code (planned, decoded, rendered),
    and the seconds that decoding and building them took (one thread, planning excluded)."""
    from tempcore.models.base import ModelSpec
    from tempcore.run.answering import prepare_unit
    from tempcore.run.config import load_config
    from tempcore.run.planning import answer_units
    from tempcore.run.predictions import Answered
    from tempcore.run.runner import plan_benchmark

    cfg = load_config(cfg_path)
    spec = ModelSpec.from_dict(cfg.models[0]) if isinstance(cfg.models[0], dict) else cfg.models[0]
    template = cfg.prompt or spec.prompt_template
    plan = plan_benchmark(cfg, 0, cache=None, log=lambda _m: None, progress=False)
    out = []
    start = time.perf_counter()
    for unit in answer_units(plan.items, cfg.max_frames_in_memory):
        for p in prepare_unit("client", unit, video_root=plan.video_root, template=template,
                              noframe_size=cfg.noframe_size):
            if isinstance(p, Answered):
                raise SystemExit(f"a request could not be built: {p.results}")
            out.append(p.request)
    return out, time.perf_counter() - start


def measure(root: Path, world: Any, name: str, conditions: list[dict[str, Any]], args: argparse.Namespace,
            entry: Any) -> dict[str, Any]:
    """Client only, then ``tempcore run``, on the requests of ``conditions`` (fresh peers each)."""
    from tempcore.models import load_model
    from tempcore.models.base import ModelSpec

    tag = name.replace(" ", "-")
    with peer(args.latency) as p:
        cfg_path = write_config(root / f"{tag}-client.yaml", world, root / f"{tag}-client", entry(p["url"]), args.k,
                                conditions)
        requests, build_s = the_requests(cfg_path)
        model = load_model(ModelSpec.from_dict(entry(p["url"])))
        try:
            model.answer(requests[:8])  # connections and the encoder pool warm
            start = time.perf_counter()
            responses = model.answer(requests)
            client_s = time.perf_counter() - start
        finally:
            model.close()
        failed = [r.error for r in responses if not r.ok]
        if failed:
            raise SystemExit(f"{len(failed)} client-only requests failed, e.g. {failed[0]}")
    out: dict[str, Any] = {"n": len(requests), "client_s": client_s, "client_peak": p["max_in_flight"],
                           "build_s": build_s}
    with peer(args.latency) as p:
        cfg_path = write_config(root / f"{tag}.yaml", world, root / tag, entry(p["url"]), args.k, conditions)
        out["run_wall"], summary = tempcore_run(cfg_path)
    m = summary["models"][0]
    if m["done"] != out["n"] or m["failed"]:
        raise SystemExit(f"{name}: the run stored {m['done']} of {out['n']} predictions ({m['failed']} failed)")
    out.update(run_s=m["seconds"], run_peak=p["max_in_flight"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=80, help="questions in the generated world")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.1, help="the peer's latency per answer (s)")
    parser.add_argument("--k", type=int, default=8, help="frames per request")
    parser.add_argument("--fault-every", type=int, default=30, help="1 in N requests times out")
    parser.add_argument("--timeouts", type=int, default=2, help="timeouts before a faulty request is answered")
    parser.add_argument("--timeout-s", type=float, default=2.0, help="the client's timeout_s in the fault run")
    args = parser.parse_args(argv)

    from tempcore.world import generate_world

    print(f"machine load (uptime): {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    with tempfile.TemporaryDirectory(prefix="tempcore-concurrency-") as tmp:
        root = Path(tmp)
        world = generate_world(root / "world", args.questions, 7)

        def entry(url: str, **kw: Any) -> dict[str, Any]:
            return {"backend": "openai", "model": "mean-colour", "name": "served", "base_url": url,
                    "concurrency": args.concurrency, "max_retries": 0, "timeout_s": 30, "api_key_env": None,
                    **kw}

        results = {name: measure(root, world, name, conds, args, entry) for name, conds in SECTIONS.items()}

        # with injected timeouts: the frameless section (no decoding to hide the chains behind)
        clean = results["no frames"]
        sleep_s = args.timeout_s + 0.5
        with peer(args.latency, args.fault_every, args.timeouts, sleep_s) as p:
            faulty = entry(p["url"], max_retries=args.timeouts, timeout_s=args.timeout_s,
                           extra={"backoff_base_s": 0.05, "backoff_max_s": 0.1})
            cfg_path = write_config(root / "faults.yaml", world, root / "faults", faulty, args.k,
                                    SECTIONS["no frames"])
            fault_wall, fault_summary = tempcore_run(cfg_path)
        fm = fault_summary["models"][0]
        # a chain: first arrival to the arrival that was answered, plus its latency (a request sent
        # twice, by two items, counts once: its first timeouts + 1 arrivals)
        chains = [sorted(times)[args.timeouts] - min(times) + args.latency
                  for times in p["arrivals"].values() if len(times) > args.timeouts]
        if not chains:
            raise SystemExit("no request was retried: raise --questions or lower --fault-every")
        fault_s = fm["seconds"]

    verdicts = []
    print(f"world: {args.questions} questions; peer latency {args.latency * 1000:.0f} ms, "
          f"concurrency {args.concurrency}")
    for name, r in results.items():
        n = r["n"]
        client_rate, run_rate = n / r["client_s"], n / r["run_s"]
        ratio = run_rate / client_rate
        verdicts.append(ratio >= TARGET_RATIO)
        print(f"[{name}] {n} requests ({', '.join(c['strategy'] for c in SECTIONS[name])}, all rotations; "
              f"k = {args.k})")
        print(f"  client only: {r['client_s']:.2f} s = {client_rate:.1f} req/s (peer: at most {r['client_peak']} "
              f"in flight)")
        print(f"  decoding + building the requests alone (one thread): {r['build_s']:.2f} s = "
              f"{n / r['build_s']:.1f} req/s")
        print(f"  tempcore run: answering {r['run_s']:.2f} s = {run_rate:.1f} req/s (decode + requests + commits; "
              f"whole command {r['run_wall']:.2f} s = {n / r['run_wall']:.1f} req/s; peer: at most {r['run_peak']} "
              f"in flight)")
        print(f"  run / client throughput: {ratio:.2f} (target >= {TARGET_RATIO}): "
              f"{'PASS' if verdicts[-1] else 'FAIL'}")
    longest, total = max(chains), sum(chains)
    added = fault_s - clean["run_s"]
    ok = fm["failed"] == 0 and fm["done"] == clean["n"] and added <= CHAIN_SLACK * longest
    verdicts.append(ok)
    print(f"[no frames, with timeouts] {len(chains)} requests retried ({args.timeouts} x {args.timeout_s:g} s "
          f"timeouts each); {fm['done']} stored, {fm['failed']} failed")
    print(f"  answering {fault_s:.2f} s (whole command {fault_wall:.2f} s) vs {clean['run_s']:.2f} s without faults")
    print(f"  longest retry chain {longest:.2f} s, sum of the chains {total:.2f} s; the faults added {added:.2f} s "
          f"(target <= {CHAIN_SLACK} x longest chain = {CHAIN_SLACK * longest:.2f} s): {'PASS' if ok else 'FAIL'}")
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
