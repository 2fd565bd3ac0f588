"""``tempcore import ...``: bring predictions made elsewhere into a run store.

* ``tempcore import lmms-eval FILE --store PATH --model NAME --k K [--benchmark NAME]
  [--id-field FIELD] [--annotations PATH] [--n-options N] [condition flags] [--skip-bad]
  [--overwrite]`` reads an lmms-eval ``--log_samples`` JSONL file (0.7 and pre-0.4 layouts). A log of
  a task written by ``tempcore export tempcore --format lmms-eval`` needs neither ``--id-field`` nor
  ``--benchmark``; for other tasks both are required (``--id-field doc_id`` = lmms-eval's row numbers).
  ``--annotations`` (with ``--benchmark``, or ``NAME=PATH``) checks every id against the benchmark.
* ``tempcore import temporalbench FILE --annotations PATH [--benchmark temporalbench] --store PATH
  --model NAME --k K [condition flags]`` reads TemporalBench's ``{"idx", "response"}`` JSONL.
* ``tempcore import responses FILE --benchmark NAME --annotations PATH --store PATH --model NAME --k K
  [--id-field sample_id] [--response-field response] [condition flags]`` reads a JSONL file of
  ``{sample_id, response}`` objects.

Condition flags (what the external run showed the model; lmms-eval does not log it):
``[--strategy uniform] [--mode none] [--fps 10] [--seed 0] [--variant V]``. Every importer parses the
responses with tempcore's one extractor; the last two join each line with the benchmark's samples
(options, gold answer) and report the samples that have no response.
* ``tempcore import table FILE --store PATH [--format ...] [--overwrite]`` reads a tidy predictions
  table (CSV, Parquet or JSONL; see :mod:`tempcore.tidy.table`).

``--store`` is a ``.sqlite`` file or a run directory (``store.sqlite`` inside); it is created when
absent. Each import is one new run whose manifest names the source file and its SHA-256. Keys
already stored are kept (first write wins) unless ``--overwrite``. Without ``--skip-bad`` an
invalid line aborts the import and nothing is stored.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tempcore.records import Sample
    from tempcore.run.store import RunStore


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "import",
        help="import predictions made elsewhere (lmms-eval logs, response files, tidy tables) into a run store",
        description="Import predictions made elsewhere into a run store.",
    )
    sub = parser.add_subparsers(dest="import_what", metavar="WHAT")
    from tempcore.cli._common import show_help

    parser.set_defaults(func=show_help(parser))

    lm = sub.add_parser("lmms-eval", help="an lmms-eval --log_samples JSONL file (0.7 and pre-0.4 layouts)")
    lm.add_argument("file", help="<date>_samples_<task>.jsonl written by lmms-eval --log_samples")
    _common_arguments(lm, model_help="model name to record (default: the model_name / model_source of the "
                      "run's {date}_results.json beside the samples file)")
    lm.add_argument("--benchmark", default=None,
                    help="benchmark name (read from the log for a tempcore-exported task; else required)")
    lm.add_argument("--id-field", default=None,
                    help="field holding the benchmark's sample id (read from the log for a tempcore-exported "
                    "task; else required; doc_id = lmms-eval's row numbers)")
    lm.add_argument("--annotations", default=None, metavar="[NAME=]PATH",
                    help="the benchmark's annotations: every imported id must be among them")
    lm.add_argument("--n-options", type=int, default=None, help="option count when the log has no options")
    lm.set_defaults(func=import_lmms_eval_command)

    tbench = sub.add_parser("temporalbench", help='TemporalBench\'s {"idx", "response"} JSONL, joined with its annotations')
    tbench.add_argument("file", help='JSONL, one {"idx": ..., "response": "..."} per line')
    _common_arguments(tbench)
    tbench.add_argument("--annotations", required=True, metavar="PATH",
                        help="TemporalBench annotations (temporalbench_*_qa.json) the responses answer")
    tbench.add_argument("--benchmark", default="temporalbench",
                        help="benchmark name the annotations load as (default: temporalbench)")
    tbench.set_defaults(func=import_responses_command, import_format="temporalbench")

    resp = sub.add_parser("responses", help="a JSONL of {sample_id, response}, joined with the benchmark's annotations")
    resp.add_argument("file", help='JSONL, one {"sample_id": ..., "response": "..."} per line')
    _common_arguments(resp)
    resp.add_argument("--benchmark", required=True,
                      help="benchmark name: a registered format (tempcore benchmarks list), else the generic one")
    resp.add_argument("--annotations", required=True, metavar="PATH", help="the benchmark's annotations")
    resp.add_argument("--id-field", default="sample_id", help="field holding the sample id (default: sample_id)")
    resp.add_argument("--response-field", default="response", help="field holding the response (default: response)")
    resp.set_defaults(func=import_responses_command, import_format="responses")

    tb = sub.add_parser("table", help="a tidy predictions table (CSV, Parquet or JSONL)")
    tb.add_argument("file")
    tb.add_argument("--store", required=True, help="run store: a .sqlite file or a run directory")
    tb.add_argument(
        "--format", choices=("parquet", "csv", "jsonl"), default=None, help="default: from the suffix"
    )
    tb.add_argument("--overwrite", action="store_true", help="replace predictions already stored for a key")
    tb.set_defaults(func=import_table_command)


def _open_store(where: str) -> RunStore:
    from tempcore.run.store import RunStore

    return RunStore.open(where)


def _common_arguments(p: argparse.ArgumentParser, *, model_help: str = "model name to record") -> None:
    """--store, --model and the condition the external run used (it is not in the files)."""
    p.add_argument("--store", required=True, help="run store: a .sqlite file or a run directory")
    p.add_argument("--model", required=model_help == "model name to record", help=model_help)
    p.add_argument("--k", type=int, default=None,
                   help="number of frames the model was shown (default: unknown, recorded as k=unknown)")
    p.add_argument("--strategy", default="uniform", help="frame strategy the external run used (default: uniform)")
    p.add_argument("--mode", default="none", choices=("q", "qa", "none"))
    p.add_argument("--fps", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variant", default=None)
    p.add_argument("--skip-bad", action="store_true", help="skip (and report) bad lines instead of aborting")
    p.add_argument("--overwrite", action="store_true", help="replace predictions already stored for a key")


def _samples(annotations: str, benchmark: str | None) -> tuple[str, list[Sample]]:
    """Load one benchmark's samples as ``tempcore export tempcore`` does: (name, samples)."""
    from tempcore.cli._common import load_sources  # what _export_tempcore uses

    ns = argparse.Namespace(annotations=[annotations], benchmark=benchmark, video_root=[], option=[],
                            skip_invalid=False)
    ((name, result),) = load_sources(ns).items()
    return name, list(result.samples)


def _store_import(args: argparse.Namespace, result: Any, errors: list[Any] | None, extra: dict[str, Any]) -> int:
    from tempcore.tidy.table import file_sha256, store_predictions

    for err in errors or ():
        print(f"tempcore: skipped: {err}", file=sys.stderr)
    predictions = result.predictions
    manifest = {
        "import": {
            "format": result.format,
            "source": str(Path(args.file).resolve()),
            "sha256": file_sha256(args.file),
            "model": args.model,
            "benchmark": result.benchmark,
            "condition": predictions[0].condition if predictions else None,
            "id_source": result.id_source,
            "skipped_lines": len(errors or ()),
            **extra,
        }
    }
    with _open_store(args.store) as store:
        run_id, written = store_predictions(store, predictions, manifest, overwrite=args.overwrite)
    print(
        f"run {run_id}: {len(predictions)} predictions of {result.benchmark} read ({result.parse_failures} parse "
        f"failures, {len(errors or ())} lines skipped; ids from {result.id_source}), {written} stored in {store.path}"
        f"{_why_not_stored(len(predictions), written, args)}"
    )
    if result.disagreements:
        print(f"tempcore: note: {result.disagreements} response(s) score differently under this tempcore's extractor "
              "than under the one the task was exported with (the stored scores are this tempcore's)")
    if result.without_response:
        shown = ", ".join(repr(s) for s in result.without_response[:10])
        more = " ..." if len(result.without_response) > 10 else ""
        print(f"tempcore: {len(result.without_response)} sample(s) of {result.benchmark} have no response: {shown}{more}")
    return 0


def import_lmms_eval_command(args: argparse.Namespace) -> int:
    from tempcore.interop.importers import ImportFormatError, import_lmms_eval, lmms_eval_model_name

    samples = None
    benchmark = args.benchmark
    if args.annotations:
        benchmark, samples = _samples(args.annotations, args.benchmark)
    errors: list[ImportFormatError] | None = [] if args.skip_bad else None
    if args.model is None:
        args.model = lmms_eval_model_name(args.file)
        if args.model is None:
            raise ImportFormatError(f"{args.file}: no --model given and no {{date}}_results.json of the same run "
                                    "beside it naming the model (model_name / model_source)")
    result = import_lmms_eval(
        args.file, model=args.model, k=args.k, strategy=args.strategy, benchmark=benchmark, mode=args.mode,
        fps=args.fps, seed=args.seed, variant=args.variant, id_field=args.id_field, n_options=args.n_options,
        samples=samples, errors=errors,
    )
    return _store_import(args, result, errors, {"id_field": args.id_field, "layout": result.layout})


def import_responses_command(args: argparse.Namespace) -> int:
    from tempcore.interop.importers import ImportFormatError, import_responses, import_temporalbench

    _, samples = _samples(args.annotations, args.benchmark)
    errors: list[ImportFormatError] | None = [] if args.skip_bad else None
    kwargs: dict[str, Any] = dict(model=args.model, k=args.k, strategy=args.strategy, mode=args.mode, fps=args.fps,
                                  seed=args.seed, variant=args.variant, errors=errors)
    if args.import_format == "temporalbench":
        result = import_temporalbench(args.file, samples, **kwargs)
    else:
        result = import_responses(args.file, samples, id_field=args.id_field, response_field=args.response_field,
                                  **kwargs)
    return _store_import(args, result, errors, {"annotations": str(Path(args.annotations).resolve())})


def import_table_command(args: argparse.Namespace) -> int:
    from tempcore.tidy.table import import_table

    with _open_store(args.store) as store:
        run_id, rows, written = import_table(args.file, store, overwrite=args.overwrite, format=args.format)
    print(f"run {run_id}: {rows} predictions read, {written} stored in {store.path}{_why_not_stored(rows, written, args)}")
    return 0


def _why_not_stored(rows: int, written: int, args: argparse.Namespace) -> str:
    """Why fewer rows were stored than read (empty when all were)."""
    if written >= rows or args.overwrite:
        return ""
    kept = rows - written
    return (f"; {kept} of {rows} rows were not stored: their keys (benchmark, sample, model, condition) are "
            "already stored and the first write wins (pass --overwrite to replace them)")
