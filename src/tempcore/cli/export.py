"""``tempcore export ...``: write what a run produced in formats other tools read.

Subcommands:

* ``tempcore export predictions --run RUN [--format parquet|csv|jsonl] [--out FILE] [--run-id ID]``
  writes the tidy predictions table (columns in :mod:`tempcore.tidy.table`). ``RUN`` is the store: a
  ``.sqlite`` file, or a run directory holding ``store.sqlite``. Without ``--out`` the table goes
  next to the store as ``predictions.<format>``; ``--out -`` writes CSV / JSONL to stdout. The
  format defaults to the suffix of ``--out``, else Parquet.

More subcommands plug in without editing this file: any module ``tempcore/cli/_export_<name>.py``
that defines ``register_export(subparsers)`` is discovered and asked to add its parser to the
``export`` group (the leading underscore keeps it out of the top-level command discovery).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

FORMATS = ("parquet", "csv", "jsonl")
EXPORT_MODULE_PREFIX = "_export_"


def export_modules() -> list[str]:
    """Modules of ``tempcore.cli`` that add ``export`` subcommands (sorted)."""
    import tempcore.cli as cli

    return sorted(
        m.name for m in pkgutil.iter_modules(cli.__path__) if m.name.startswith(EXPORT_MODULE_PREFIX)
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "export",
        help="export predictions (and other results) as tables",
        description="Export what a run produced as files other tools read.",
    )
    sub = parser.add_subparsers(dest="export_what", metavar="WHAT")
    register_predictions(sub)
    for name in export_modules():
        importlib.import_module(f"tempcore.cli.{name}").register_export(sub)
    from tempcore.cli._common import show_help

    parser.set_defaults(func=show_help(parser))


def register_predictions(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "predictions",
        help="the tidy predictions table of a run store",
        description=(
            "Write the tidy predictions table (benchmark, sample_id, model, strategy, mode, k, window, "
            "correct, and the rest) of a run store."
        ),
    )
    p.add_argument(
        "--run", required=True, help="run store: a .sqlite file or a run directory with store.sqlite"
    )
    p.add_argument(
        "--format", choices=FORMATS, default=None, help="default: from --out's suffix, else parquet"
    )
    p.add_argument(
        "--out", default=None, help="output file; '-' = stdout (csv/jsonl); default: next to the store"
    )
    p.add_argument("--run-id", default=None, help="only the predictions stored by this run")
    p.set_defaults(func=export_predictions)


def export_predictions(args: argparse.Namespace) -> int:
    from tempcore.run.store import RunStore, resolve_store_path
    from tempcore.tidy.table import PredictionsTableError, infer_format, predictions_table, write_table

    store_path = resolve_store_path(args.run)
    if args.out == "-":
        fmt = args.format or "jsonl"
        if fmt == "parquet":
            raise PredictionsTableError("Parquet cannot go to stdout; give --out FILE")
        out = None
    else:
        if args.out is None:
            fmt = args.format or "parquet"
            out = store_path.parent / f"predictions.{fmt}"
        else:
            out = Path(args.out)
            fmt = args.format or (infer_format(out) if out.suffix else "parquet")
    with RunStore(store_path, create=False) as store:
        if args.run_id is not None:
            store.manifest(args.run_id)  # raises a clear error for an unknown run id
        table = predictions_table(store, run_id=args.run_id)
    if out is None:
        write_table(table, sys.stdout.buffer, format=fmt)
        sys.stdout.flush()
    else:
        write_table(table, out, format=fmt)
        print(f"wrote {table.num_rows} predictions to {out}")
    return 0
