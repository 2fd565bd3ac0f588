"""``tempcore demo``: the real pipeline end to end on a synthetic world with planted answers."""

from __future__ import annotations

import argparse
import json
import sys

from tempcore.cli._common import add_progress_arguments, progress_wanted


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo",
        help="the whole pipeline on a generated world with planted answers; prints how well it recovers them",
        description="Generate a held-out synthetic world (videos whose questions are temporal, frame-agnostic, "
        "text-answerable or visually misleading by construction), audit it with the embedded model zoo, "
        "diagnose, export the TempCore subset, write the report, and print planted x recovered.",
    )
    p.add_argument("--out", default="demo-out", help="output folder (default demo-out)")
    p.add_argument("--quick", action="store_true", help="a small world (under a minute)")
    p.add_argument("--questions", type=int, help="number of questions (default 400; --quick 48)")
    p.add_argument("--seed", type=int, help="world seed (default: the held-out demo seed)")
    p.add_argument("--k", type=int, default=8, help="frames shown per condition (default 8)")
    add_progress_arguments(p)
    p.add_argument("--visual", action="store_true",
                   help="also visual answer options (paper 002): TFR / VFP from the world's planted events, "
                   "answered by the zoo through the run store; JSON key 'visual'")
    p.add_argument("--json", action="store_true", help="print the recovery as one JSON object")
    p.add_argument("--profile", action="store_true",
                   help="print where the time goes (world, decode, encode, each answerer, diagnostics, report, ...) "
                   "after the recovery (on stderr with --json); the recovery is the same")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tempcore.demo import HELD_OUT_SEED, format_demo, run_demo

    log = (lambda msg: print(msg, file=sys.stderr)) if args.json else print
    result = run_demo(args.out, n_questions=args.questions, quick=args.quick,
                      seed=HELD_OUT_SEED if args.seed is None else args.seed, k=args.k,
                      progress=progress_wanted(args), log=log, visual=args.visual, profile=args.profile)
    if args.json:
        keys = ("scoring", "grounding", "mba", "order", "report", "subset") + (("visual",) if args.visual else ())
        json.dump({k: result[k] for k in keys}, sys.stdout)
        sys.stdout.write("\n")
    else:
        print()
        print(format_demo(result))
    if args.profile:
        from tempcore.profiling import format_profile

        d = result["decodes"]
        table = format_profile(result["profile"], extra={
            "decoding passes": f"{d['passes']} over {d['videos']} video(s) x segment(s) in all runs of the demo "
                               f"({', '.join(f'{k} {v}' for k, v in d['by_kind'].items())})"})
        print("\n" + table, file=sys.stderr if args.json else sys.stdout)
    return 0
