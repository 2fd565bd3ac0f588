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


def command_modules() -> list[str]:
    """Names of the subcommand modules, discovered in this package (sorted)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tempcore",
        description="Audit video question-answering benchmarks for temporal grounding.",
    )
    parser.add_argument("--version", action="version", version=f"tempcore {__version__}")
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
    try:
        return int(args.func(args) or 0)
    except TempcoreError as exc:
        print(f"tempcore: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `tempcore ... | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("tempcore: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
