"""``tempcore export tempcore``: the TempCore subsets (Temporally Sensitive samples) of benchmarks.

The benchmark arguments (``--annotations [NAME=]PATH``, ``--video-root``, ``--option``) are the
shared ones of :mod:`tempcore.cli._common` (re-exported here for older imports).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tempcore.cli._common import (  # noqa: F401  (re-exported: the helpers lived here before)
    BenchmarkArgumentError,
    add_benchmark_arguments,
    add_diagnosis_arguments,
    add_predictions_argument,
    diagnose_args,
    load_sources,
    parse_annotations,
    parse_options,
    parse_video_roots,
    read_predictions_arg,
)


def register_export(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "tempcore",
        help="the TempCore subsets: each benchmark's Temporally Sensitive samples + a manifest",
        description=(
            "Diagnose the predictions (FSS, LIS, taxonomy) and write, per benchmark given with --annotations, "
            "its Temporally Sensitive samples (Temporally Grounded + Visual Bias) with their original fields "
            "plus fss, lis and category, and a manifest.json (annotations hash, models, conditions, tau, "
            "lambda, counts, tempcore version)."
        ),
    )
    add_predictions_argument(p)
    add_benchmark_arguments(p, required=True)
    p.add_argument("--out", required=True, type=Path, help="output folder (one sub-folder per benchmark)")
    p.add_argument("--format", choices=("jsonl", "parquet", "lmms-eval"), default="jsonl",
                   help="jsonl (default), parquet, or an lmms-eval task folder")
    add_diagnosis_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tempcore.interop.export import export_tempcore

    table = read_predictions_arg(args.predictions)
    diagnosis = diagnose_args(table, args)
    sources = load_sources(args, table, args.predictions)
    paths = export_tempcore(diagnosis, sources, args.out, args.format, table=table)
    print(f"scoring: {args.scoring} (FSS / LIS; the manifest records it)")
    for name in sources:
        counts = diagnosis.benchmarks[name]
        n = counts["temporally_sensitive"]
        print(f"{name}: {n} Temporally Sensitive sample(s) ({counts['temporally_grounded']} Temporally Grounded, "
              f"{counts['visual_bias']} Visual Bias) of {counts['n']} ({counts['incomplete']} incomplete)")
    others = sorted(set(diagnosis.benchmarks) - set(sources))
    if others:
        print(f"not exported (no --annotations): {', '.join(others)}")
    for path in paths:
        print(f"wrote {path}")
    return 0
