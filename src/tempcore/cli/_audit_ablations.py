"""``tempcore audit ablations`` and ``tempcore audit priors`` (issue 14): argument setup and handlers.

Kept apart from ``cli/audit.py`` so that other ``audit`` subcommands can live beside them:
``audit.py`` calls :func:`add_ablations_parser` and :func:`add_priors_parser` on its subparsers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tempcore.cli._sources import BENCHMARK_HELP, add_format_argument


def _loader_options(pairs: list[str]) -> dict[str, Any]:  # loader options: strings from -o KEY=VALUE
    from tempcore.cli._common import parse_key_values

    return parse_key_values(pairs)


def add_ablations_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "ablations",
        help="TVBench's time and vision ablations: accuracy per condition, drops, averages, agreement, "
        "order sensitivity",
        description="Per model x benchmark x task: accuracy under the video condition and under textonly, "
        "noframe, single, shuffled, reversed (Wilson intervals), the drop from video with a paired bootstrap "
        "interval; per model x benchmark the macro (unweighted mean over tasks, TVBench's average) and micro "
        "averages, chance (mean of per-task chance levels) and gain; answer agreement between conditions "
        "(the inferred conditional definition, symmetric, same option, Cohen's kappa); per-sample order "
        "sensitivity crossed with the FSS x LIS taxonomy.",
    )
    p.add_argument("--predictions", required=True, type=Path, help="tidy predictions table (CSV, Parquet or JSONL), a run store (.sqlite) or a run folder")
    p.add_argument("--video", default="uniform", metavar="STRATEGY",
                   help="the video condition the ablations are compared with (default uniform)")
    p.add_argument("--by", metavar="FIELD",
                   help="the task field: a predictions column, or with --annotations a sample field "
                   "(default: 'task' when present, else one task per benchmark)")
    p.add_argument("--benchmark", metavar="NAME", help=BENCHMARK_HELP)
    p.add_argument("--annotations", type=Path, metavar="PATH",
                   help="the benchmark's annotations: tasks and option counts (chance levels) from the samples")
    add_format_argument(p)
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE", help="loader option")
    p.add_argument("--tau", type=float, default=0.15, help="order-sensitivity / FSS threshold (default 0.15)")
    p.add_argument("--lambda", dest="lam", type=float, default=0.5, help="LIS threshold (default 0.5)")
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap replicates (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--confidence", type=float, default=0.95, help="interval coverage (default 0.95)")
    p.add_argument("--json", action="store_true",
                   help='print one JSON object {"models", "averages", "agreement", "order"}')
    p.set_defaults(func=run_ablations)
    return p


def add_priors_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "priors",
        help="label-prior audit from the annotations alone (+ the prediction prior of a table)",
        description="Per benchmark and task: correct answers by option text and by letter, the majority-answer "
        "baseline against chance, a chi-square test of uniform letter positions, and flags for 'not sure' / "
        "'none of the above' options, options repeating the question and question words only in the correct "
        "option (counts + example ids). With --predictions, per model x condition: chosen letters and texts "
        "against the label prior (total-variation distance) and the 'always the most frequent answer' baseline.",
    )
    p.add_argument("--benchmark", required=True, metavar="NAME", help=BENCHMARK_HELP)
    p.add_argument("--annotations", required=True, type=Path, metavar="PATH", help="annotation file or folder")
    add_format_argument(p)
    p.add_argument("--predictions", type=Path, metavar="FILE", help="tidy predictions table, run store or run folder for the prediction prior")
    p.add_argument("--by", default="task", metavar="FIELD", help="the sample field naming the task (default task)")
    p.add_argument("--max-examples", type=int, default=5, help="example ids per flag (default 5)")
    p.add_argument("--skip-invalid", action="store_true", help="skip invalid annotation rows")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE", help="loader option")
    p.add_argument("--json", action="store_true", help='print one JSON object {"benchmarks", "models"}')
    p.set_defaults(func=run_priors)
    return p


def _filter_benchmark(table: Any, name: str | None) -> Any:
    if name is None:
        return table
    import pyarrow.compute as pc

    from tempcore.diagnostics import DiagnosticsError

    out = table.filter(pc.equal(table.column("benchmark"), name))
    if out.num_rows == 0:
        present = sorted(set(table.column("benchmark").to_pylist()))
        raise DiagnosticsError(f"the predictions have no rows for benchmark {name!r} (they have {present})")
    return out


def run_ablations(args: argparse.Namespace) -> int:
    from tempcore.cli._common import read_predictions_arg
    from tempcore.cli._sources import annotations_of, nothing_to_show
    from tempcore.diagnostics.ablations import audit_ablations, audit_ablations_json

    full = read_predictions_arg(Path(args.predictions))
    # --benchmark: the stored benchmark name (or a format that names exactly one), see tempcore.cli._sources
    resolved, loaded = annotations_of(args, full, args.predictions)
    table = _filter_benchmark(full, None if args.benchmark is None or resolved is None else resolved.name)
    task_of = n_options_of = None
    if loaded is not None:
        from tempcore.diagnostics.priors import task_of as task_field

        samples = loaded.samples
        task_of = {(s.benchmark, s.sample_id): task_field(s, args.by or "task") for s in samples}
        n_options_of = {(s.benchmark, s.sample_id): len(s.options) for s in samples if s.options}
    options: dict[str, Any] = dict(
        video=args.video, by=args.by if args.annotations is None else None, task_of_sample=task_of,
        n_options_of_sample=n_options_of, tau=args.tau, lam=args.lam, n_boot=args.n_boot,
        confidence=args.confidence, seed=args.seed,
    )
    if args.json:  # json.dumps(audit_ablations(...)) byte for byte, the per-sample rows written column-wise
        text = audit_ablations_json(table, **options)
        if not json.loads(text).get("models"):
            raise nothing_to_show(f"audit ablations (video condition {args.video!r} and its ablations)", full,
                                  {"benchmark": args.benchmark})
        sys.stdout.write(text)
        sys.stdout.write("\n")
        return 0
    result = audit_ablations(table, **options)
    if not result["models"]:
        raise nothing_to_show(f"audit ablations (video condition {args.video!r} and its ablations)", full,
                              {"benchmark": args.benchmark})
    print(format_ablations(result))
    return 0


def _task(task: Any) -> str:
    """A row's task: ``(all)`` when the benchmark has none (one task per benchmark), not ``None``."""
    return "(all)" if task is None else str(task)


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def format_ablations(result: dict[str, Any]) -> str:
    lines = ["accuracy (%) per model x benchmark x task x condition; drop = video - condition [95% CI]"]
    for r in result["models"]:
        drop = "" if r["drop"] is None else (
            f"  drop {_pct(r['drop'])} [{_pct(r['drop_ci_low'])}, {_pct(r['drop_ci_high'])}]")
        lines.append(f"  {r['model']:<16} {r['benchmark']:<12} {_task(r['task']):<22} {r['condition']:<10} "
                     f"n={r['n']:<6} {_pct(r['accuracy']):>5} [{_pct(r['ci_low'])}, {_pct(r['ci_high'])}]{drop}")
    lines.append("averages (%): macro = unweighted mean over tasks, micro = pooled, gain = macro - chance")
    for r in result["averages"]:
        lines.append(f"  {r['model']:<16} {r['benchmark']:<12} {r['condition']:<10} macro {_pct(r['macro'])} "
                     f"micro {_pct(r['micro'])} chance {_pct(r['chance'])} gain {_pct(r['gain'])}")
    lines.append("agreement (%): conditional = |C_b ∩ C_a| / |C_b| (inferred), symmetric, same option, kappa")
    for r in result["agreement"]:
        kappa = "-" if r["kappa"] is None else f"{r['kappa']:.3f}"
        lines.append(f"  {r['model']:<16} {r['a']} vs {r['b']:<10} n={r['n']:<6} conditional "
                     f"{_pct(r['conditional'])} symmetric {_pct(r['symmetric'])} same option "
                     f"{_pct(r['same_option'])} kappa {kappa}")
    if result["order"]["benchmarks"]:
        lines.append("order sensitivity: share of samples whose OS (shuffled or reversed) exceeds tau")
        for name, b in result["order"]["benchmarks"].items():
            lines.append(f"  {name:<12} n={b['n']:<6} order-sensitive {_pct(b['order_sensitive'])} "
                         f"among Temporally Sensitive {_pct(b['order_sensitive_among_temporally_sensitive'])}")
    return "\n".join(lines)


def run_priors(args: argparse.Namespace) -> int:
    from tempcore.cli._sources import annotations_of
    from tempcore.diagnostics.priors import label_priors, prediction_priors

    full = None
    if args.predictions is not None:
        from tempcore.cli._common import read_predictions_arg

        full = read_predictions_arg(Path(args.predictions))
    _resolved, loaded = annotations_of(args, full, args.predictions)
    assert loaded is not None  # --annotations is required
    samples = list(loaded.samples)
    result: dict[str, Any] = {
        "benchmarks": label_priors(samples, field=args.by, max_examples=args.max_examples),
        "models": [],
    }
    if full is not None:
        names = sorted({s.benchmark for s in samples})
        table = full
        if len(names) == 1:
            table = _filter_benchmark(table, names[0])
        result["models"] = prediction_priors(table, samples, field=args.by)
    if args.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(format_priors(result))
    return 0


def format_priors(result: dict[str, Any]) -> str:
    lines = []
    for bench, b in result["benchmarks"].items():
        lines.append(f"{bench}: label prior per task (majority baseline vs chance, letter chi-square p)")
        for task, t in b["tasks"].items():
            top = next(iter(t["answers_by_text"].items()), ("-", 0))
            p = "-" if t["letter_chi2_p"] is None else f"{t['letter_chi2_p']:.3g}"
            flags = ", ".join(f"{k} {v['count']}" for k, v in t["flags"].items() if v["count"])
            lines.append(f"  {task:<24} n={t['n']:<5} majority {_pct(t['majority_baseline'])} ({top[0]!r} x{top[1]}) "
                         f"chance {_pct(t['chance'])} letters {t['answers_by_letter']} p={p}"
                         + (f"  flags: {flags}" if flags else ""))
    if result["models"]:
        lines.append("prediction prior per model x condition x task (TV distance to the label prior)")
        for r in result["models"]:
            tv_l = "-" if r["tv_letter"] is None else f"{r['tv_letter']:.3f}"
            tv_t = "-" if r["tv_text"] is None else f"{r['tv_text']:.3f}"
            lines.append(f"  {r['model']:<16} {r['condition']:<10} {r['task']:<24} n={r['n']:<5} "
                         f"acc {_pct(r['accuracy'])} majority {_pct(r['majority_baseline'])} most chosen "
                         f"{r['most_chosen']!r} x{r['most_chosen_count']} TV letter {tv_l} text {tv_t}")
    return "\n".join(lines)
