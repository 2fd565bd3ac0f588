"""``tempcore report``: Markdown + one self-contained HTML report from a predictions table."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tempcore.errors import TempcoreError


class ReportInputError(TempcoreError):
    """A side input of the report (ratings, external scores) cannot be read."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from tempcore.cli._common import add_benchmark_arguments, add_diagnosis_arguments

    p = sub.add_parser(
        "report",
        help="report.md + a self-contained report.html: tables, figures and a sample browser",
        description=(
            "Diagnose the predictions and write report.md (tables, figures as plots/*.svg) and one "
            "self-contained report.html (no network: inline CSS, SVG and script, thumbnails as data: URIs) "
            "with every analysis the predictions allow and a sample browser filterable by category and "
            "benchmark. Annotations add questions and options to the browser; videos add MaxProb / MinProb "
            "frame thumbnails."
        ),
    )
    p.add_argument("--predictions", required=True, type=Path, metavar="PATH", action="append",
                   help="tidy predictions table (CSV, Parquet or JSONL), a run store (.sqlite) or a run folder; "
                        "repeat for one report over several runs (each section reads the runs that have its rows; "
                        "a cell two runs hold is taken from the first)")
    add_benchmark_arguments(p, required=False)
    p.add_argument("--out", required=True, type=Path, help="output folder")
    add_diagnosis_arguments(p)
    p.add_argument("--max-samples", type=int, default=200, metavar="N",
                   help="browser: at most N samples per benchmark, Temporally Sensitive first (default 200)")
    p.add_argument("--seed", type=int, default=0, help="seed of the browser's sample and the bootstraps (default 0)")
    p.add_argument("--no-thumbnails", action="store_true", help="do not decode videos for frame thumbnails")
    p.add_argument("--max-thumbnail-samples", type=int, default=40, metavar="N",
                   help="browser: frame thumbnails for at most N samples per benchmark (default 40)")
    p.add_argument("--thumb-width", type=int, default=80, metavar="PX", help="thumbnail width (default 80)")
    p.add_argument("--bootstrap", type=int, default=2000, metavar="N",
                   help="bootstrap replicates of the paired differences (default 2000)")
    p.add_argument("--ratings", type=Path, help="human ratings (CSV / JSONL / Parquet: benchmark, sample_id, rating 1-5)")
    p.add_argument("--external-scores", type=Path,
                   help="external benchmark scores (CSV / JSONL / Parquet: model, benchmark, score)")
    p.add_argument("--text-models", nargs="+", default=[], metavar="NAME",
                   help="models of the predictions that are text-only LLMs (contamination probe)")
    p.add_argument("--same-backbone", nargs="+", default=[], metavar="TEXT=VLM",
                   help="a text-only LLM and the VLM built on it (same-backbone control)")
    p.add_argument("--title", default="TempCore report", help="page title")
    p.set_defaults(func=run)


def read_rows(path: Path) -> Any:
    """A small side table (CSV, JSONL / JSON lines, Parquet) as a pyarrow Table."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if not path.is_file():
        raise ReportInputError(f"{path}: no such file")
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            return pq.read_table(path)
        if suffix in (".jsonl", ".ndjson", ".json"):
            from tempcore.tidy.formats import read_table_file
            from tempcore.tidy.validation import PredictionsTableError

            try:  # the guarded reader: Arrow's own crashes the process on some lines (deep nesting, `null`)
                return read_table_file(path, "jsonl")
            except PredictionsTableError as exc:
                raise ReportInputError(str(exc)) from exc
        if suffix in (".csv", ".tsv"):
            delimiter = "\t" if suffix == ".tsv" else ","
            return pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter=delimiter),
                                  convert_options=pacsv.ConvertOptions(
                                      column_types={"sample_id": pa.string(), "benchmark": pa.string(),
                                                    "model": pa.string()}))
    except (pa.ArrowInvalid, OSError) as exc:
        raise ReportInputError(f"{path}: cannot read: {exc}") from exc
    raise ReportInputError(f"{path}: unknown table format {suffix!r} (use .csv, .tsv, .jsonl or .parquet)")


def _pairs(values: list[str]) -> list[tuple[str, str]]:
    out = []
    for value in values:
        text, sep, vlm = value.partition("=")
        if not sep or not text or not vlm:
            raise ReportInputError(f"--same-backbone {value!r}: expected TEXT_MODEL=VLM_MODEL")
        out.append((text, vlm))
    return out


def run(args: argparse.Namespace) -> int:
    from tempcore.cli._common import load_sources, read_predictions_arg
    from tempcore.report import build_report, write_report
    from tempcore.tidy.table import file_sha256

    if args.max_samples < 1:
        raise ReportInputError("--max-samples must be at least 1")
    from tempcore.report.runs import combine_runs

    runs = list(args.predictions)
    table, run_notes = combine_runs([read_predictions_arg(path) for path in runs], [str(path) for path in runs])
    # the formats the first run recorded name the annotations' benchmarks
    sources = load_sources(args, table, runs[0]) if args.annotations else {}
    inputs: dict[str, Any] = {"predictions": ", ".join(str(path) for path in runs)}
    for path in runs:
        if path.is_file():
            inputs["predictions_sha256" if len(runs) == 1 else f"predictions_sha256 {path}"] = file_sha256(path)
    if len(runs) > 1:
        inputs["runs"] = run_notes
    for name, result in sources.items():
        inputs[f"annotations {name}"] = f"{', '.join(str(p) for p in result.source_files)} " \
                                        f"(sha256 {result.annotations_hash})"
    report = build_report(
        table,
        samples_by_benchmark=sources,
        tau=args.tau, lam=args.lam, fss_mode=args.fss_mode, scoring=args.scoring, models=args.models,
        k=args.k, encoder=args.encoder,
        ratings=read_rows(args.ratings) if args.ratings else None,
        external=read_rows(args.external_scores) if args.external_scores else None,
        text_models=args.text_models, same_backbone=_pairs(args.same_backbone),
        max_samples=args.max_samples, seed=args.seed, thumbnails=not args.no_thumbnails,
        thumb_width=args.thumb_width, max_thumbnail_samples=args.max_thumbnail_samples, n_boot=args.bootstrap, inputs=inputs, title=args.title,
    )
    paths = write_report(report, args.out)
    available = sum(1 for t in report.tables if t.table is not None and t.table.rows)
    print(f"scoring: {args.scoring} (FSS / LIS; `tempcore diagnose` defaults to the same; --scoring to change)")
    print(f"{available} of {len(report.tables)} analyses available; {len(report.figures)} figures; "
          f"{len(report.browser.rows) if report.browser is not None else 0} samples in the browser")
    for item in report.tables:
        if item.table is None or not item.table.rows:
            print(f"  not available: {item.title}: {item.unavailable}")
    for path in paths[:2]:
        print(f"wrote {path}")
    return 0
