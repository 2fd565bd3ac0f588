"""``tempcore import ...``: bring predictions made elsewhere into a run store.

* ``tempcore import lmms-eval FILE --store PATH --model NAME --k K [--benchmark NAME]
  [--strategy uniform] [--mode none] [--fps 10] [--seed 0] [--variant V] [--id-field FIELD]
  [--n-options N] [--skip-bad] [--overwrite]`` reads an lmms-eval ``--log_samples`` JSONL file.
* ``tempcore import table FILE --store PATH [--format ...] [--overwrite]`` reads a tidy predictions
  table (CSV, Parquet or JSONL; see :mod:`tempcore.tidy`).

``--store`` is a ``.sqlite`` file or a run directory (``store.sqlite`` inside); it is created when
absent. Each import is one new run whose manifest names the source file and its SHA-256. Keys
already stored are kept (first write wins) unless ``--overwrite``. Without ``--skip-bad`` an
invalid line aborts the import and nothing is stored.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tempcore.store import RunStore


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "import",
        help="import predictions made elsewhere (lmms-eval logs, tidy tables) into a run store",
        description="Import predictions made elsewhere into a run store.",
    )
    sub = parser.add_subparsers(dest="import_what", metavar="WHAT")
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])

    lm = sub.add_parser("lmms-eval", help="an lmms-eval --log_samples JSONL file")
    lm.add_argument("file", help="samples_<task>.jsonl written by lmms-eval --log_samples")
    lm.add_argument("--store", required=True, help="run store: a .sqlite file or a run directory")
    lm.add_argument("--model", required=True, help="model name to record")
    lm.add_argument("--k", type=int, required=True, help="number of frames lmms-eval gave the model")
    lm.add_argument("--benchmark", default=None, help="benchmark name (default: the task in the file name)")
    lm.add_argument("--strategy", default="uniform", help="frame strategy lmms-eval used (default: uniform)")
    lm.add_argument("--mode", default="none", choices=("q", "qa", "none"))
    lm.add_argument("--fps", type=float, default=10.0)
    lm.add_argument("--seed", type=int, default=0)
    lm.add_argument("--variant", default=None)
    lm.add_argument(
        "--id-field", default=None, help="field holding the benchmark's sample id (default: doc_id)"
    )
    lm.add_argument("--n-options", type=int, default=None, help="option count when the log has no options")
    lm.add_argument("--skip-bad", action="store_true", help="skip (and report) bad lines instead of aborting")
    lm.add_argument("--overwrite", action="store_true", help="replace predictions already stored for a key")
    lm.set_defaults(func=import_lmms_eval_command)

    tb = sub.add_parser("table", help="a tidy predictions table (CSV, Parquet or JSONL)")
    tb.add_argument("file")
    tb.add_argument("--store", required=True, help="run store: a .sqlite file or a run directory")
    tb.add_argument(
        "--format", choices=("parquet", "csv", "jsonl"), default=None, help="default: from the suffix"
    )
    tb.add_argument("--overwrite", action="store_true", help="replace predictions already stored for a key")
    tb.set_defaults(func=import_table_command)


def _open_store(where: str) -> RunStore:
    from tempcore.store import RunStore

    return RunStore.open(where)


def import_lmms_eval_command(args: argparse.Namespace) -> int:
    from tempcore.tidy import LmmsEvalImportError, file_sha256, import_lmms_eval, store_predictions

    errors: list[LmmsEvalImportError] | None = [] if args.skip_bad else None
    predictions = import_lmms_eval(
        args.file,
        model=args.model,
        k=args.k,
        strategy=args.strategy,
        benchmark=args.benchmark,
        mode=args.mode,
        fps=args.fps,
        seed=args.seed,
        variant=args.variant,
        id_field=args.id_field,
        n_options=args.n_options,
        errors=errors,
    )
    for err in errors or ():
        print(f"tempcore: skipped: {err}", file=sys.stderr)
    manifest = {
        "import": {
            "format": "lmms-eval",
            "source": str(Path(args.file).resolve()),
            "sha256": file_sha256(args.file),
            "model": args.model,
            "benchmark": predictions[0].benchmark if predictions else args.benchmark,
            "condition": predictions[0].condition if predictions else None,
            "id_field": args.id_field,
            "skipped_lines": len(errors or ()),
        }
    }
    with _open_store(args.store) as store:
        run_id, written = store_predictions(store, predictions, manifest, overwrite=args.overwrite)
    parse_failures = sum(p.answer is None for p in predictions)
    print(
        f"run {run_id}: {len(predictions)} predictions read ({parse_failures} parse failures, "
        f"{len(errors or ())} lines skipped), {written} stored in {store.path}"
        f"{_why_not_stored(len(predictions), written, args)}"
    )
    return 0


def import_table_command(args: argparse.Namespace) -> int:
    from tempcore.tidy import import_table

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
