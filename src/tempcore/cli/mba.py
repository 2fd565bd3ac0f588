"""``tempcore mba``: binary accuracy and multiple binary accuracy (TemporalBench) per model x condition."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tempcore.cli._sources import BENCHMARK_HELP, add_format_argument


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "mba",
        help="binary accuracy (BA) and multiple binary accuracy (MBA) per model x condition",
        description="BA = correct binary questions / binary questions; MBA = question groups with every binary "
        "question correct / groups; chance MBA = mean over groups of the product of 1/n_options. Overall, per "
        "dataset and per category (group = (category, group)), with Wilson intervals. Groups: TemporalBench's "
        "video_name (with --benchmark temporalbench --annotations), the original sample of a binarised benchmark "
        "(ids '{sample_id}#b{i}'), or --group-by FIELD. A group with a missing prediction is counted as "
        "incomplete and excluded (--incomplete present: score the questions present, as TemporalBench's script).",
    )
    p.add_argument("--predictions", required=True, type=Path, help="tidy predictions table (CSV, Parquet or JSONL), a run store (.sqlite) or a run folder")
    p.add_argument("--benchmark", metavar="NAME", help=BENCHMARK_HELP)
    p.add_argument("--annotations", type=Path, metavar="PATH", help="the benchmark's annotation file or folder")
    add_format_argument(p)
    p.add_argument("--group-by", metavar="FIELD", help="the group field: a predictions column or a sample field")
    p.add_argument("--parse", choices=("extract", "first-char", "both"), default="extract",
                   help="extract: the table's 'correct' (tempcore's extractor); first-char: TemporalBench's rule "
                   "(first character of the response equals the letter); both: rows for each, tagged 'parse'")
    p.add_argument("--incomplete", choices=("exclude", "present"), default="exclude",
                   help="groups missing a prediction: exclude them (default) or score what is present")
    p.add_argument("--models", nargs="+", metavar="MODEL", help="only these models")
    p.add_argument("--dataset-field", default="dataset", help="field of the by-dataset view (default dataset)")
    p.add_argument("--category-field", default="category", help="field of the by-category view (default category)")
    p.add_argument("--confidence", type=float, default=0.95, help="interval coverage (default 0.95)")
    p.add_argument("--skip-invalid", action="store_true", help="skip invalid annotation rows (reported)")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="benchmark loader option")
    p.add_argument("--binary", action="store_true",
                   help="the predictions answer the binarised benchmark (tempcore run with binary: true): "
                   "binarise the loaded samples the same way (implied when the run recorded binary: true)")
    p.add_argument("--binary-seed", type=int, default=None,
                   help="seed of the binarisation (default: the run's seed when it recorded one, else 0)")
    p.add_argument("--json", action="store_true",
                   help='print one JSON object {"overall": [...], "by_dataset": [...], "by_category": [...]}')
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tempcore.cli._common import read_predictions_arg
    from tempcore.cli._sources import annotations_of, binarized, nothing_to_show
    from tempcore.diagnostics.mba import MBAError, mba_table

    if not 0.0 < args.confidence < 1.0:
        raise MBAError(f"--confidence must lie in (0, 1), not {args.confidence}")
    table = read_predictions_arg(Path(args.predictions))
    # --benchmark: the stored benchmark name (or a format that names exactly one), see tempcore.cli._sources
    resolved, loaded = annotations_of(args, table, args.predictions)
    benchmark = resolved.name if resolved is not None else None
    samples = None
    if loaded is not None:
        samples = binarized(loaded.samples, resolved, args.binary, args.binary_seed)
    parses = ["extract", "first-char"] if args.parse == "both" else [args.parse]
    out: dict[str, Any] = {}
    texts = []
    for parse in parses:
        result = mba_table(table, samples=samples, benchmark=benchmark, models=args.models,
                           group_by=args.group_by, parse=parse, incomplete=args.incomplete,
                           dataset_field=args.dataset_field, category_field=args.category_field,
                           confidence=args.confidence)
        if args.parse == "both":
            for view in ("overall", "by_dataset", "by_category"):
                for row in getattr(result, view):
                    row["parse"] = parse
        got = result.to_json()
        if not got["overall"]:
            raise nothing_to_show("mba", table, {"benchmark": benchmark, "models": args.models})
        if not out:
            out = got
        else:
            for view in ("overall", "by_dataset", "by_category", "notes"):
                out[view] = out[view] + got[view]
            out["parse"] = "both"
        texts.append(result.to_text())
    if args.json:
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print("\n\n".join(texts))
    return 0
