"""``tempcore audit ...``: audits of a benchmark's design (one subcommand per audit).

Each audit is a ``register_<name>(subparsers)`` function listed in :data:`AUDITS`; a new audit
(``ablations``, ``priors``, ``queries``, ...) adds its function and one entry there.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tempcore.cli._sources import BENCHMARK_HELP, add_format_argument


def register_options(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "options",
        help="centralized-option audit: is the most central option the correct one more often than chance?",
        description="From the annotations alone: the centroid of each question (the option of smallest mean "
        "normalised token edit distance to the other options), how often it is the correct option per benchmark "
        "and task, against chance 1/n_options, with an exact binomial test. With --predictions (e.g. a text-only "
        "or no-frame condition): how often each model picks the centroid, and its accuracy when the centroid is / "
        "is not correct.",
    )
    p.add_argument("--benchmark", required=True, metavar="NAME", help=BENCHMARK_HELP)
    p.add_argument("--annotations", required=True, type=Path, metavar="PATH", help="its annotation file or folder")
    add_format_argument(p)
    p.add_argument("--predictions", type=Path, metavar="FILE", help="tidy predictions table (CSV, Parquet or JSONL), a run store (.sqlite) or a run folder")
    p.add_argument("--task-field", metavar="FIELD", help="sample field of the per-task view (default: first of "
                   "task, task_type, question_type, category, type the samples have)")
    p.add_argument("--strategies", nargs="+", metavar="STRATEGY", help="only these strategies of the predictions")
    p.add_argument("--models", nargs="+", metavar="MODEL", help="only these models")
    p.add_argument("--alternative", choices=("two-sided", "greater", "less"), default="two-sided",
                   help="alternative of the exact test (default two-sided)")
    p.add_argument("--skip-invalid", action="store_true", help="skip invalid annotation rows (reported)")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE", help="benchmark loader option")
    p.add_argument("--json", action="store_true", help='print one JSON object {"benchmarks": {...}, "models": [...]}')
    p.set_defaults(func=run_options)


def run_options(args: argparse.Namespace) -> int:
    from tempcore.cli._sources import annotations_of, nothing_to_show
    from tempcore.diagnostics.option_geometry import audit_options, centroid_picks, option_geometry

    table = None
    if args.predictions is not None:
        from tempcore.cli._common import read_predictions_arg

        table = read_predictions_arg(Path(args.predictions))
    # --benchmark: the stored benchmark name (or a format that names exactly one), see tempcore.cli._sources
    resolved, loaded = annotations_of(args, table, args.predictions)
    assert resolved is not None and loaded is not None  # --benchmark and --annotations are required
    geo = option_geometry(loaded.samples, args.task_field)
    out: dict[str, Any] = {"benchmarks": audit_options(geo, alternative=args.alternative), "models": []}
    if table is not None:
        out["models"] = centroid_picks(table, geo, benchmark=resolved.name, models=args.models,
                                       strategies=args.strategies, alternative=args.alternative)
        if not out["models"]:
            raise nothing_to_show("audit options (centroid picks)", table,
                                  {"benchmark": resolved.name, "models": args.models, "strategies": args.strategies})
    if args.json:
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(_text(out))
    return 0


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _p(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def _text(out: dict[str, Any]) -> str:
    lines = ["centroid = the option of smallest mean normalised token edit distance to the others"]
    for name, b in out["benchmarks"].items():
        lines.append(f"{name}: centroid correct {b['centroid_correct']}/{b['n']} = {_pct(b['centroid_correct_rate'])}% "
                     f"(chance {_pct(b['chance_rate'])}%, p = {_p(b['p_value'])}); {b['ties']} question(s) without "
                     f"a centroid of {b['questions']}")
        for task, t in b["by_task"].items():
            lines.append(f"  {b['task_field']}={task}: {t['centroid_correct']}/{t['n']} = "
                         f"{_pct(t['centroid_correct_rate'])}% (chance {_pct(t['chance_rate'])}%, p = {_p(t['p_value'])})")
    for m in out["models"]:
        lines.append(f"{m['model']} [{m['strategy']}/{m['mode']}]: picks the centroid {_pct(m['centroid_pick_rate'])}% "
                     f"of {m['n_parsed']} (chance {_pct(m['chance_pick_rate'])}%, p = {_p(m['p_value'])}); accuracy "
                     f"{_pct(m['accuracy_centroid_correct'])}% when the centroid is correct (n={m['n_centroid_correct']}), "
                     f"{_pct(m['accuracy_centroid_wrong'])}% when not (n={m['n_centroid_wrong']})")
    return "\n".join(lines)


def register_ablations(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from tempcore.cli._audit_ablations import add_ablations_parser

    add_ablations_parser(sub)


def register_priors(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from tempcore.cli._audit_ablations import add_priors_parser

    add_priors_parser(sub)


def register_queries(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from tempcore.cli.grounding import add_queries_parser

    add_queries_parser(sub)


#: the audits, each ``register_<name>(subparsers)``
AUDITS = {"options": register_options, "ablations": register_ablations, "priors": register_priors,
          "queries": register_queries}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("audit", help="audits of a benchmark and its predictions (options, ablations, priors, queries)",
                       description="Audits of a benchmark's design.")
    audits = p.add_subparsers(dest="audit", metavar="AUDIT")
    for add in AUDITS.values():
        add(audits)
    from tempcore.cli._common import show_help

    p.set_defaults(func=show_help(p))
