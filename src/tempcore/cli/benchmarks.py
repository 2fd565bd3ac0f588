"""``tempcore benchmarks list`` and ``tempcore benchmarks inspect NAME --annotations PATH``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from tempcore.cli._common import parse_key_values


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "benchmarks",
        help="list benchmark formats; inspect an annotation file",
        description="List the benchmark loaders, or load a benchmark's annotations and summarise them.",
    )
    sub = parser.add_subparsers(dest="benchmarks_command", metavar="ACTION")
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])

    lst = sub.add_parser("list", help="registered benchmark names with a one-line description")
    lst.add_argument("--json", action="store_true", help="print a JSON object {name: description}")
    lst.set_defaults(func=_list)

    ins = sub.add_parser(
        "inspect",
        help="load annotations and print counts, histograms, invalid rows and missing videos",
        description=(
            "Load NAME's annotations (a file, or the folder the format expects: MLVU's per-task JSON "
            "folder, MVBench / TVBench's json/ folder, EgoSchema's folder with questions.json and "
            "subset_answers.json) and summarise them. An invalid row stops the load with exit code 1 "
            "unless --skip-invalid is given."
        ),
    )
    ins.add_argument("name", metavar="NAME", help="benchmark name (see `tempcore benchmarks list`)")
    ins.add_argument("--annotations", required=True, metavar="PATH", help="annotation file or folder")
    ins.add_argument(
        "--video-root", metavar="DIR", help="folder the videos are relative to; checks they exist"
    )
    ins.add_argument("--skip-invalid", action="store_true", help="skip invalid rows and report them")
    ins.add_argument(
        "-o",
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="loader option, e.g. video_map=PATH (nextqa), task_table=FILE (mvbench), revision=SHA (tvbench)",
    )
    ins.add_argument("--json", action="store_true", help="print one JSON object")
    ins.add_argument(
        "--max-list", type=int, default=20, metavar="N", help="rows listed per section (default 20)"
    )
    ins.set_defaults(func=_inspect)


def _list(args: argparse.Namespace) -> int:
    from tempcore.benchmarks import available, describe

    names = available()
    if args.json:
        print(json.dumps({n: describe(n) for n in names}, indent=2))
    else:
        width = max(len(n) for n in names)
        for n in names:
            print(f"{n:<{width}}  {describe(n)}")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from tempcore.benchmarks import load_benchmark, preflight
    from tempcore.benchmarks.summary import render_text, summarize

    result = load_benchmark(
        args.name,
        args.annotations,
        video_root=args.video_root,
        skip_invalid=args.skip_invalid,
        **parse_key_values(args.option),
    )
    missing = preflight(result.samples, result.video_root) if args.video_root is not None else None
    summary = summarize(result, missing, cap=max(0, args.max_list))
    summary["annotations"] = args.annotations
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        print(render_text(summary))
    return 0
