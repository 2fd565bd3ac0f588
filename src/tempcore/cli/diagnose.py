"""``tempcore diagnose``: FSS, LIS, the taxonomy and TPI from a predictions table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tempcore.cli._common import (
    add_diagnosis_arguments,
    add_predictions_argument,
    diagnose_args,
    read_predictions_arg,
)
from tempcore.tidy.formats import atomic_write


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "diagnose",
        help="per-sample FSS / LIS, categories and TPI from a predictions table",
        description="Compute Frame Selection Sensitivity (MaxProb vs MinProb), Language Independence "
        "(no-frame), the FSS x LIS taxonomy and the Temporal Purity Index per benchmark.",
    )
    add_predictions_argument(p)
    add_diagnosis_arguments(p)
    p.add_argument("--lis-panel", choices=("fss", "all"), default="fss",
                   help="who is in the LIS panel: fss (default, the paper: the models of the FSS panel) or all "
                   "(also the models with only no-frame rows, e.g. text-only LLM probes); params name it")
    p.add_argument("--benchmark", metavar="NAME",
                   help="only this benchmark (as the predictions name it; a format name matching exactly one "
                   "of their benchmarks also works)")
    p.add_argument("--n-boot", type=int, default=2000,
                   help="bootstrap replicates of the TPI and category-share intervals (default 2000)")
    p.add_argument("--bootstrap-seed", type=int, default=0,
                   help="seed of those intervals (default 0; not a condition's seed)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--out", type=Path, help="also write diagnosis.json and samples.csv into this folder")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tempcore.cli._sources import nothing_to_show, only_benchmark

    table = read_predictions_arg(args.predictions)
    used = only_benchmark(table, args.benchmark, args.predictions)
    from tempcore.diagnostics import EncodedPredictions
    from tempcore.diagnostics.robustness import leave_one_model_out, tpi_intervals

    encoded = EncodedPredictions.from_table(used)  # encoded once: the leave-one-out diagnoses reuse it
    d = diagnose_args(encoded, args)
    result = d.to_json()
    if not result["benchmarks"]:
        raise nothing_to_show(f"diagnose (scoring {args.scoring})", table,
                              {"benchmark": args.benchmark, "models": args.models, "k": args.k,
                               "encoder": args.encoder})
    result["tpi_ci"] = tpi_intervals(d, n_boot=args.n_boot, seed=args.bootstrap_seed)
    result["leave_one_model_out"] = leave_one_model_out(
        d, lambda models: diagnose_args(encoded, argparse.Namespace(**{**vars(args), "models": models})))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        atomic_write(args.out / "diagnosis.json", json.dumps(result, indent=1))
        _write_samples_csv(args.out / "samples.csv", result["samples"])
    if args.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(format_summary(result["benchmarks"], result["params"]))
    print(format_robustness(result["tpi_ci"], result["leave_one_model_out"]))
    if args.out:
        print(f"\nwrote {args.out / 'diagnosis.json'} and {args.out / 'samples.csv'}")
    return 0


def _write_samples_csv(path: Path, samples: list[dict[str, Any]]) -> None:
    import csv
    import io

    from tempcore.tidy.formats import atomic_output, spreadsheet_safe

    with atomic_output(path) as raw:
        fh = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        w = csv.DictWriter(fh, fieldnames=["benchmark", "sample_id", "fss", "lis", "fss_category", "category"])
        w.writeheader()
        w.writerows({k: spreadsheet_safe(v) if isinstance(v, str) else v for k, v in row.items()} for row in samples)
        fh.flush()
        fh.detach()  # atomic_output closes the file itself


def format_summary(benchmarks: dict[str, dict[str, Any]], params: dict[str, Any]) -> str:
    cols = [("n", "N"), ("incomplete", "incompl."), ("key", "Key"), ("non_key", "Non-key"),
            ("anti_key", "Anti-key"), ("trivial", "Trivial"), ("frame_agnostic", "Fr.Agn"),
            ("temporally_grounded", "Temp.Grnd"), ("visual_bias", "Vis.Bias"),
            ("temporally_sensitive", "TempSens"), ("tpi", "TPI")]
    width = max([len("benchmark")] + [len(b) for b in benchmarks])
    head = "benchmark".ljust(width) + "".join(f"{label:>10}" for _, label in cols)
    lines = [f"tau={params['tau']} lambda={params['lambda']} fss-mode={params['fss_mode']} "
             f"scoring={params['scoring']} lis-panel={params.get('lis_panel', 'fss')}"]
    for name, panel in (params.get("panels") or {}).items():
        if panel.get("noframe_only"):
            how = ("joined to the LIS panel" if params.get("lis_panel") == "all" else
                   "not in the LIS panel (see the text-only probe, Table 15; --lis-panel all joins them)")
            lines.append(f"{name}: no-frame-only model(s) {', '.join(panel['noframe_only'])} {how}")
    lines += [head, "-" * len(head)]
    for name, row in benchmarks.items():
        cells = []
        for key, _ in cols:
            v = row[key]
            cells.append(f"{'undef.' if v is None else f'{v:.3f}':>10}" if key == "tpi" else f"{v:>10}")
        lines.append(name.ljust(width) + "".join(cells))
    return "\n".join(lines)


def format_robustness(tpi_ci: dict[str, dict[str, Any]], loo: dict[str, dict[str, dict[str, Any]]]) -> str:
    """The text of ``tpi_ci`` and ``leave_one_model_out``: lines after the summary table."""

    def num(x: float | None) -> str:
        return "undef." if x is None else f"{x:.3f}"

    lines: list[str] = []
    for bench, ci in tpi_ci.items():
        if not lines:
            lines.append(f"\nbootstrap over samples ({ci['n_boot']} resamples, seed {ci['seed']}, "
                         f"{round(100 * ci['confidence'])}% intervals):")
        shares = ", ".join(f"{name} {num(s['share'])} [{num(s['low'])}, {num(s['high'])}]"
                           for name, s in ci["shares"].items())
        lines.append(f"{bench}: TPI {num(ci['tpi'])} [{num(ci['tpi_low'])}, {num(ci['tpi_high'])}]; {shares}")
    if any(loo.values()):
        lines.append("\nleave one model out (samples changing category; TPI without the model):")
    for bench, models in loo.items():
        cells = []
        for model, r in models.items():
            if r["changed"] is None:
                cells.append(f"{model} - ({r['error']})")
                continue
            moved = "".join(f", {r[k]} {k.replace('_', ' ')}" for k in ("became_incomplete", "became_complete")
                            if r[k])
            cells.append(f"{model} {r['changed']}{moved} (TPI {num(r['tpi'])})")
        if cells:
            lines.append(f"{bench}: " + "; ".join(cells))
    return "\n".join(lines)
