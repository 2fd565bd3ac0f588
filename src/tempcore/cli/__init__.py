"""The ``tempcore`` command: a thin layer over the library, one subcommand module per file.

Every module of this package (other than this one) defines ``register(subparsers)``, which adds
its parser and sets ``func`` (called with the parsed namespace, returning an exit code).
Modules import heavy dependencies inside their handlers only, so ``tempcore --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from tempcore._version import __version__
from tempcore.errors import TempcoreError
from tempcore.run.runlog import LEVELS


def command_modules() -> list[str]:
    """Names of the subcommand modules, discovered in this package (sorted)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tempcore",
        description="Audit video question-answering benchmarks for temporal grounding.",
    )
    parser.add_argument("--version", action="version", version=f"tempcore {__version__}")
    parser.add_argument("--log-level", choices=LEVELS, default="warning",
                        help="show log records of this level and above on stderr (default: warning; a run's "
                        "folder keeps every level in run.log)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in command_modules():
        importlib.import_module(f"tempcore.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from tempcore.run.interrupts import exit_code, signal_name, stop_signals
    from tempcore.run.runlog import configure

    configure(args.log_level)
    try:
        with stop_signals():  # SIGTERM and SIGHUP stop a command as Ctrl-C does
            return int(args.func(args) or 0)
    except TempcoreError as exc:
        print(f"tempcore: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `tempcore ... | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt as exc:  # 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP
        note = getattr(exc, "tempcore_note", None)  # a run says what it saved and how to resume
        print(f"tempcore: interrupted ({signal_name(exc)})" + (f": {note}" if note else ""), file=sys.stderr)
        return exit_code(exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
