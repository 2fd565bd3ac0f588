"""``tempcore grounding``: mIoU, R@tau, parse failures, R1 / mAP of grounding predictions;
``tempcore audit queries`` (:func:`add_queries_parser`): the query profile of a benchmark."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tempcore.cli._sources import BENCHMARK_HELP, add_format_argument


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "grounding",
        help="temporal-grounding scores: mIoU, R@tau, parse failures, R1 / mAP",
        description="Score grounding predictions. FILE is a tidy predictions table with pred_start / pred_end "
        "(seconds; null = parse failure, IoU 0) or an iou column, or a moment-retrieval submission JSONL "
        "(qid, pred_relevant_windows: [[start, end, score], ...]) scored as QVHighlights' evaluation does "
        "(R1@0.5/0.7 of the first listed window, mAP over IoU 0.5:0.05:0.95). IoU uses the hull as union; "
        "with several ground-truth windows the best-matching one counts. R@tau counts IoU >= tau "
        "(--strict: >).",
    )
    p.add_argument("--predictions", type=Path, metavar="FILE",
                   help="tidy predictions table (CSV / Parquet / JSONL) or moment-retrieval submission JSONL")
    p.add_argument("--benchmark", metavar="NAME", help=BENCHMARK_HELP)
    p.add_argument("--annotations", type=Path, metavar="PATH", help="the benchmark's annotation file or folder")
    add_format_argument(p)
    p.add_argument("--thresholds", type=float, nargs="+", default=[0.3, 0.5, 0.7], metavar="TAU",
                   help="IoU thresholds of R@tau (default 0.3 0.5 0.7)")
    p.add_argument("--strict", action="store_true", help="R@tau counts IoU > tau (Ego4D-NLQ) instead of >=")
    p.add_argument("--reversed", choices=("invalid", "swap"), default="invalid",
                   help="a predicted span with start > end: IoU 0 (default) or swapped")
    p.add_argument("--model", help="model name of a submission (default: the file's stem)")
    p.add_argument("--bins", action="store_true",
                   help="submission: also R1 / mAP per GT length bin (short <= 10 s, middle 10-30 s, long > 30 s)")
    p.add_argument("--split", action="store_true",
                   help="table: also the search / localize split of failures (needs annotations)")
    p.add_argument("--fail-iou", type=float, default=0.05, help="split: a failure has IoU below this (0.05)")
    p.add_argument("--offset", type=float, default=300.0,
                   help="split: seconds beyond which a failure is a search failure (300 = 5 min)")
    p.add_argument("--sweep", action="store_true",
                   help="table: also accuracy vs the GT-centred crop width W per model (gtcrop conditions)")
    p.add_argument("--candidates", action="store_true",
                   help="table: also candidate recall@k of the retrieve_ground conditions' stored candidates "
                   "(contained / overlap; needs annotations)")
    p.add_argument("--skip-invalid", action="store_true", help="skip invalid annotation rows (reported)")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE", help="loader option")
    p.add_argument("--json", action="store_true",
                   help='print one JSON object {"groups": [...]} (with --sweep / --candidates also "sweep" / '
                   '"candidates": [...])')
    p.set_defaults(func=run)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def run(args: argparse.Namespace) -> int:
    from tempcore.cli._sources import annotations_of, nothing_to_show
    from tempcore.grounding.evaluate import (
        GroundingInputError,
        is_submission,
        read_submission,
        read_table,
        submission_group,
        table_groups,
    )

    if args.predictions is None:
        raise GroundingInputError("give --predictions FILE (the query profile is 'tempcore audit queries')")
    stored = args.predictions.is_dir() or args.predictions.suffix.lower() in (".sqlite", ".sqlite3", ".db")
    if not stored and not args.predictions.is_file():
        raise GroundingInputError(f"{args.predictions}: no such file")
    submission = not stored and is_submission(args.predictions)
    table = None
    if not submission:
        if stored:  # a run folder or store, read like every analysis command reads it
            from tempcore.cli._common import read_predictions_arg

            table = read_predictions_arg(args.predictions)
        else:
            table = read_table(args.predictions)
    if args.annotations is not None and args.benchmark is None and table is None:
        raise GroundingInputError("--annotations of a submission need --benchmark NAME (the format that reads them)")
    # --benchmark: the stored benchmark name (or a format that names exactly one), see tempcore.cli._sources
    resolved, loaded = annotations_of(args, table, args.predictions)
    samples = None
    if loaded is not None:
        samples = [s for s in loaded.samples if s.answer_windows]
        if not samples:
            raise GroundingInputError(f"{args.annotations}: no grounding samples (none has a ground-truth window)")
    extra: dict[str, Any] = {}
    if submission:
        if args.sweep or args.candidates:
            raise GroundingInputError("--sweep / --candidates read a predictions table, not a submission")
        if samples is None:
            raise GroundingInputError("a moment-retrieval submission needs --benchmark and --annotations")
        if args.split:
            raise GroundingInputError("--split reads a predictions table, not a submission")
        groups = [submission_group(read_submission(args.predictions), samples,
                                   model=args.model or args.predictions.stem, thresholds=args.thresholds,
                                   strict=args.strict, reversed=args.reversed, bins=args.bins)]
    else:
        if args.bins:
            raise GroundingInputError("--bins needs a moment-retrieval submission (ranked windows)")
        name = resolved.name if resolved is not None else None
        groups = table_groups(table, samples, benchmark=name,
                              thresholds=args.thresholds, strict=args.strict, reversed=args.reversed,
                              split=args.split, fail_iou=args.fail_iou, offset_s=args.offset)
        if not groups:
            raise nothing_to_show("grounding (rows with pred_start / pred_end or iou)", table,
                                  {"benchmark": name})
        if args.sweep or args.candidates:
            from tempcore.grounding.analysis import candidate_recall_rows, window_sweep

            if args.sweep:
                extra["sweep"] = window_sweep(table, samples, benchmark=name, thresholds=args.thresholds,
                                              strict=args.strict)
            if args.candidates:
                if samples is None:
                    raise GroundingInputError("--candidates needs --benchmark and --annotations (the GT windows)")
                extra["candidates"] = candidate_recall_rows(table, samples, benchmark=name)
    if args.json:
        json.dump({"groups": groups, **extra}, sys.stdout)
        sys.stdout.write("\n")
        return 0
    op = ">" if args.strict else ">="
    for g in groups:
        name = f"{g['model']}  {g.get('condition', g['strategy'])}"
        rec = "  ".join(f"R@{k}={_fmt(v)}" for k, v in g["recall"].items())
        print(f"{name}: n={g['n']}  mIoU={_fmt(g['miou'])}  {rec} (IoU {op} tau)  parse_fail={_fmt(g['parse_fail'])}")
        if "r1" in g:
            r1 = "  ".join(f"R1@{k}={_fmt(v)}" for k, v in g["r1"].items())
            print(f"  {r1}  mAP={_fmt(g['map'])}  mAP@0.5={_fmt(g['map_at']['0.5'])}  "
                  f"mAP@0.75={_fmt(g['map_at']['0.75'])}")
        for bname, b in g.get("bins", {}).items():
            print(f"  {bname}: n={b['n']}  R1@0.5={_fmt(b['r1'].get('0.5'))}  R1@0.7={_fmt(b['r1'].get('0.7'))}  "
                  f"mAP={_fmt(b['map'])}")
        if "split" in g:
            s = g["split"]
            print(f"  failures (IoU < {s['fail_iou']:g}): {s['n_failed']} ({s['parse_fail']} parse failures); "
                  f"search / localize at {s['offset_s']:g} s: centre-to-centre {s['centre']['search']} / "
                  f"{s['centre']['localize']}, nearest-edge {s['edge']['search']} / {s['edge']['localize']}")
    if "sweep" in extra:
        print("accuracy vs GT-centred window width W (gtcrop):" if extra["sweep"] else "no gtcrop predictions")
        for r in extra["sweep"]:
            rec = "  ".join(f"R@{k}={_fmt(v)}" for k, v in r["recall"].items())
            print(f"  {r['model']}  W={r['window']}: n={r['n']}  mIoU={_fmt(r['miou'])}  {rec}  "
                  f"parse_fail={_fmt(r['parse_fail'])}")
    if "candidates" in extra:
        print("candidate recall@k (retrieve_ground):" if extra["candidates"] else "no retrieve_ground candidates")
        for r in extra["candidates"]:
            cont = " ".join(f"@{k}={_fmt(v)}" for k, v in r["contained"].items())
            over = " ".join(f"@{k}={_fmt(v)}" for k, v in r["overlap"].items())
            print(f"  {r['condition']}: n={r['n']}  contained {cont}  overlap {over}")
    return 0


def add_queries_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``tempcore audit queries``: the query profile of any benchmark (grounding or QA)."""
    q = sub.add_parser(
        "queries",
        help="query profile of a benchmark (length, TTR, MATTR, distinct-n, stems, WH entropy, descriptors)",
        description="Query profile of any benchmark's questions (tempcore.grounding.queries documents every "
        "definition).",
    )
    q.add_argument("--benchmark", required=True, metavar="NAME", help=BENCHMARK_HELP)
    q.add_argument("--annotations", required=True, type=Path, metavar="PATH")
    add_format_argument(q)
    q.add_argument("--window", type=int, default=50, help="MATTR window (default 50)")
    q.add_argument("--skip-invalid", action="store_true")
    q.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE", help="loader option")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=run_queries)


def run_queries(args: argparse.Namespace) -> int:
    from tempcore.cli._sources import annotations_of
    from tempcore.grounding.queries import query_profile

    resolved, loaded = annotations_of(args, None)
    assert loaded is not None  # --annotations is required
    profile = {"benchmark": resolved.name if resolved is not None else args.benchmark, **query_profile([s.question for s in loaded.samples], window=args.window)}
    if args.json:
        json.dump(profile, sys.stdout)
        sys.stdout.write("\n")
        return 0
    for k, v in profile.items():
        print(f"{k}: {v}")
    return 0
