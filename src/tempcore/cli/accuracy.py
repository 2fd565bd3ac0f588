"""``tempcore accuracy``: accuracy with Wilson intervals per model x condition, grouped by any field."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument("--predictions", required=True, type=Path, help="tidy predictions table (CSV, Parquet or JSONL)")
    p.add_argument("--benchmark", metavar="NAME", help="restrict to this benchmark (and load its annotations)")
    p.add_argument("--annotations", type=Path, metavar="PATH", help="the benchmark's annotation file or folder")
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
    p.add_argument("--skip-invalid", action="store_true", help="skip invalid annotation rows (reported)")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="benchmark loader option, e.g. video_map=PATH (nextqa)")
    p.add_argument("--json", action="store_true", help="print one JSON object {\"groups\": [...]}")
    p.set_defaults(func=run)


def _options(pairs: list[str]) -> dict[str, str]:
    from tempcore.diagnostics.accuracy import AccuracyError

    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise AccuracyError(f"loader option {pair!r} is not KEY=VALUE")
        out[key] = value
    return out


def run(args: argparse.Namespace) -> int:
    from tempcore.diagnostics.accuracy import (
        AccuracyError,
        accuracy_groups_json,
        accuracy_table,
        nextqa_official,
    )
    from tempcore.tidy import read_predictions

    if args.annotations is not None and args.benchmark is None:
        raise AccuracyError("--annotations needs --benchmark NAME (the loader that reads them)")
    if not 0.0 < args.confidence < 1.0:
        raise AccuracyError(f"--confidence must lie in (0, 1), not {args.confidence}")
    table = read_predictions(args.predictions)
    samples = None
    load_info: dict[str, Any] | None = None
    if args.annotations is not None:
        from tempcore.benchmarks import load_benchmark

        loaded = load_benchmark(args.benchmark, args.annotations, skip_invalid=args.skip_invalid,
                                **_options(args.option))
        samples = loaded.samples
        load_info = {"samples": len(loaded.samples), "invalid": len(loaded.invalid), "skipped": len(loaded.skipped)}
    official = args.nextqa_official or (
        not args.plain and args.benchmark == "nextqa" and args.by == ["type"]
    )
    if official and args.per_window:
        raise AccuracyError("--per-window does not combine with the NExT-QA official grouping (add --plain)")
    if official:
        by = [b for b in args.by if b != "type"]
        result = nextqa_official(table, samples, benchmark=args.benchmark, by=by, models=args.models,
                                 unmatched=args.unmatched, confidence=args.confidence)
    else:
        result = accuracy_table(table, args.by, samples=samples, benchmark=args.benchmark, models=args.models,
                                per_window=args.per_window, unmatched=args.unmatched, confidence=args.confidence)
    if args.json:
        out = accuracy_groups_json(result)
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
