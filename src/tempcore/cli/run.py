"""``tempcore run``: the audit — benchmarks x models x conditions into a resumable run store."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tempcore.cli._common import EXIT_FAILED_REQUESTS, add_progress_arguments, progress_wanted


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="answer benchmarks x models x conditions into a resumable run store",
        description="Plan every (sample, model, condition) of a run configuration, skip what the run store "
        "already holds, and answer the rest. Safe to interrupt: rerun the same command to resume. "
        "An example configuration to start from: examples/paper-audit.yaml (the examples/*.yaml of the "
        "repository).",
    )
    p.add_argument("--config", required=True, type=Path,
                   help="run configuration (YAML), e.g. examples/paper-audit.yaml")
    p.add_argument("--dry-run", action="store_true",
                   help="check the configuration and print the plan from the annotations alone: no encoder, "
                   "no decoding, no store written, no model called")
    p.add_argument("--recompute", action="store_true",
                   help="replace the stored predictions whose fingerprints (sample content and video, model "
                   "entry, encoder) differ from this run's; without it such a run stops and names them")
    p.add_argument("--limit", type=int, help="only the first N samples of each benchmark (a quick try)")
    p.add_argument("--out", help="run folder (overrides the configuration's 'out')")
    p.add_argument("--shard", help="I/N: only shard I of N (stable hash of the sample ids), to split a run")
    p.add_argument("--executor", choices=("local", "ray"),
                   help="where frames are scored and questions answered: local (this process, the default) or "
                   "ray (Ray actors; overrides the configuration's 'executor')")
    p.add_argument("--ray-address", metavar="auto|HOST:PORT",
                   help="the Ray cluster to join (overrides ray.address; implies --executor ray); without it, "
                   "ray.address or RAY_ADDRESS, a local Ray is started for the run")
    add_progress_arguments(p)
    p.add_argument("--allow-failures", action="store_true",
                   help=f"exit 0 even when requests failed (without it such a run exits {EXIT_FAILED_REQUESTS}; "
                   "`tempcore failures RUN` lists them)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object at the end")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tempcore.run.config import load_config
    from tempcore.run.runner import RunError
    from tempcore.run.runner import run as run_config

    cfg = load_config(args.config)
    if args.out:
        cfg = cfg.with_changes(out=args.out)
    if args.ray_address and args.executor == "local":
        raise RunError("--ray-address joins a Ray cluster: use it with --executor ray, not local")
    if args.executor or args.ray_address:
        ray_options = dict(cfg.ray) | ({"address": args.ray_address} if args.ray_address else {})
        # validated again: e.g. parallel_models > 1 is the local executor's, refused with --executor ray
        cfg = cfg.with_changes(executor=args.executor or "ray", ray=ray_options)
    shard = None
    if args.shard:
        try:
            i, n = (int(x) for x in args.shard.split("/"))
        except ValueError:
            raise RunError(f"--shard takes I/N (e.g. 0/4), not {args.shard!r}") from None
        shard = (i, n)
    log = (lambda msg: print(msg, file=sys.stderr)) if args.json else print
    summary = run_config(cfg, dry_run=args.dry_run, limit=args.limit, shard=shard, progress=progress_wanted(args),
                         log=log, recompute=args.recompute)
    if args.json:
        json.dump(summary.to_json(), sys.stdout)
        sys.stdout.write("\n")
    if summary.failed and not args.dry_run:
        what = f"{summary.failed} request(s) failed; `tempcore failures {summary.out}` lists them"
        if args.allow_failures:
            print(f"tempcore: warning: {what} (accepted: --allow-failures)", file=sys.stderr)
        else:
            print(f"tempcore: error: {what}; rerun the same command to retry them, or pass --allow-failures "
                  f"to accept them (exit {EXIT_FAILED_REQUESTS})", file=sys.stderr)
            return EXIT_FAILED_REQUESTS
    return 0
