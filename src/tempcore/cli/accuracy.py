"""``tempcore accuracy``: accuracy with Wilson intervals per model x condition, grouped by any field."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tempcore.cli._common import add_benchmark_arguments, add_predictions_argument


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "accuracy",
        help="accuracy with Wilson 95%% intervals per model x condition, grouped by any field",
        description="Accuracy per benchmark, model and condition (strategy, mode, and k / encoder / ... when "
        "they vary), optionally grouped by any column of the predictions or any field of the benchmark's "
        "samples (e.g. NExT-QA 'type', Video-MME 'duration' or 'task_type'). Parse failures count as wrong. "
        "The window oracle is reported as strategy 'oracle' (a sample is solved when any window is right). "
        "With --benchmark nextqa and --by type, the official NExT-QA grouping is used (TP merged into TN, "
        "C / T / D totals and the overall figure).",
    )
    add_predictions_argument(p)
    add_benchmark_arguments(p, required=False,
                            benchmark_help="restrict to this benchmark (a bare --annotations PATH is its annotations)")
    p.add_argument("--by", nargs="+", default=[], metavar="FIELD",
                   help="group by predictions columns or sample fields (e.g. type, duration, task_type, k)")
    p.add_argument("--models", nargs="+", metavar="MODEL", help="only these models")
    p.add_argument("--per-window", action="store_true", help="also report each oracle window's accuracy")
    p.add_argument("--nextqa-official", action="store_true",
                   help="NExT-QA grouping by question type (TP -> TN, C/T/D totals, overall); "
                   "implied by --benchmark nextqa --by type")
    p.add_argument("--plain", action="store_true", help="with --benchmark nextqa --by type: plain grouping")
    p.add_argument("--unmatched", choices=("error", "keep"), default="error",
                   help="samples in the predictions but not in the annotations: stop (default) or keep them "
                   "as a group with an empty field value")
    p.add_argument("--confidence", type=float, default=0.95, help="interval coverage (default 0.95)")
    p.add_argument("--json", action="store_true", help="print one JSON object {\"groups\": [...]}")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tempcore.cli._common import load_sources, read_predictions_arg
    from tempcore.cli._sources import nothing_to_show, recorded_benchmarks, resolve
    from tempcore.diagnostics.accuracy import (
        AccuracyError,
        accuracy_groups_json,
        accuracy_table,
        nextqa_official,
    )

    if not 0.0 < args.confidence < 1.0:
        raise AccuracyError(f"--confidence must lie in (0, 1), not {args.confidence}")

    table = read_predictions_arg(args.predictions)
    # --benchmark: the stored benchmark name (or a format that names exactly one), see tempcore.cli._sources
    resolved = None if args.benchmark is None else resolve(
        args.benchmark, table=table, recorded=recorded_benchmarks(args.predictions), fmt=args.annotations_format)
    benchmark = None if resolved is None else resolved.name
    samples = None
    load_info: dict[str, Any] | None = None
    if args.annotations:
        sources = load_sources(args, table, args.predictions)
        samples = [s for result in sources.values() for s in result.samples]
        load_info = {key: sum(len(getattr(r, attr)) for r in sources.values())
                     for key, attr in (("samples", "samples"), ("invalid", "invalid"), ("skipped", "skipped"))}
    official = args.nextqa_official or (
        not args.plain and resolved is not None and resolved.format == "nextqa" and args.by == ["type"]
    )
    if official and args.per_window:
        raise AccuracyError("--per-window does not combine with the NExT-QA official grouping (add --plain)")
    if official:
        by = [b for b in args.by if b != "type"]
        result = nextqa_official(table, samples, benchmark=benchmark, by=by, models=args.models,
                                 unmatched=args.unmatched, confidence=args.confidence)
    else:
        result = accuracy_table(table, args.by, samples=samples, benchmark=benchmark, models=args.models,
                                per_window=args.per_window, unmatched=args.unmatched, confidence=args.confidence)
    out = accuracy_groups_json(result)
    if not out.get("groups"):
        raise nothing_to_show("accuracy", table, {"benchmark": benchmark, "models": args.models})
    if args.json:
        if load_info is not None:
            out["annotations"] = load_info
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(result.to_text())
    if load_info is not None:
        print(f"annotations: {load_info['samples']} samples, {load_info['invalid']} invalid row(s) skipped, "
              f"{load_info['skipped']} row(s) not used")
    return 0
