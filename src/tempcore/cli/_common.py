"""Arguments and parsing shared by several subcommands (not a command itself).

Conventions every command follows:

* ``--predictions PATH``: a tidy table (CSV, Parquet, JSONL), a run store (``.sqlite``), or a run
  folder (its ``store.sqlite``, else its ``predictions.parquet`` / ``.csv`` / ``.jsonl``), see
  :func:`read_predictions_arg`.
* ``--annotations [NAME=]PATH``: ``NAME=PATH`` per benchmark, or a bare ``PATH`` where the command
  knows the benchmark (``--benchmark NAME``); NAME is a registered format, else the generic format
  read with that benchmark name (:func:`parse_annotations`, :func:`load_annotations`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tempcore.cli._sources import BenchmarkArgumentError as BenchmarkArgumentError  # defined with the sources
from tempcore.cli._sources import parse_key_values as parse_key_values
from tempcore.errors import TempcoreError

#: the exit code of a run whose requests failed (all else went through; ``--allow-failures``: 0)
EXIT_FAILED_REQUESTS = 3

#: what a run folder may hold in place of a store, in the order they are looked for
RUN_TABLES = ("predictions.parquet", "predictions.csv", "predictions.jsonl")


def add_progress_arguments(p: argparse.ArgumentParser) -> None:
    """``--no-progress`` and ``--progress`` (see :func:`progress_wanted`)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--no-progress", action="store_true", help="no progress bars")
    g.add_argument("--progress", action="store_true",
                   help="progress bars even when stderr is not a terminal (by default they are drawn on a terminal only)")


def progress_wanted(args: argparse.Namespace) -> bool:
    """Progress bars: on a terminal (stderr), unless ``--no-progress``; anywhere with ``--progress``
    (a redirected stderr gets no bars by default: a log file full of carriage returns helps no one)."""
    if getattr(args, "no_progress", False):
        return False
    return bool(getattr(args, "progress", False)) or sys.stderr.isatty()


def add_predictions_argument(p: argparse.ArgumentParser) -> None:
    """``--predictions PATH`` (see :func:`read_predictions_arg`)."""
    p.add_argument("--predictions", required=True, type=Path, metavar="PATH",
                   help="tidy predictions table (CSV, Parquet or JSONL), a run store (.sqlite) or a run folder")


def read_predictions_arg(path: Path) -> Any:
    """The tidy table ``--predictions`` names: a table file, a run store, or a run folder.

    A folder is read through its ``store.sqlite`` when it has one (the store is the run's own
    record; a ``predictions.parquet`` next to it may be older), else through the first of
    :data:`RUN_TABLES` it holds; a folder with neither is an error that says what was looked for.
    """
    from tempcore.tidy.table import PredictionsTableError, read_predictions

    path = Path(path).expanduser()
    if path.is_dir():
        from tempcore.run.store import STORE_FILENAME

        if (path / STORE_FILENAME).is_file():
            return _store_table(path / STORE_FILENAME)
        for name in RUN_TABLES:
            if (path / name).is_file():
                return read_predictions(path / name)
        raise PredictionsTableError(
            f"{path}: a folder without a run's predictions (looked for {STORE_FILENAME}, {', '.join(RUN_TABLES)})"
        )
    if path.suffix.lower() in (".sqlite", ".sqlite3", ".db") and path.is_file():
        return _store_table(path)
    return read_predictions(path)


def _store_table(path: Path) -> Any:
    from tempcore.run.store import RunStore
    from tempcore.tidy.table import predictions_table, validate_table

    with RunStore(path, create=False) as store:
        return validate_table(predictions_table(store), str(path))


#: the scoring of FSS / LIS in every command that diagnoses (``diagnose``, ``report``, ``export tempcore``)
DEFAULT_SCORING = "hard"
SCORING_HELP = (
    "how a prediction counts in FSS and LIS (default hard, in every command that diagnoses: diagnose, report, "
    "export tempcore). hard: 0/1 correctness, the paper's definition (FSS averages the binary correctness "
    "difference of MaxProb and MinProb over the models; tau=0.15 is set so that Key / Anti-key need more than "
    "one model's net flip), so its numbers compare with the paper's. soft: the probability of the correct "
    "option, a lower-variance estimate where the rows have option probabilities (likelihood-scored models), "
    "but not the paper's quantity and tau means something else under it. circular: 0/1 averaged over option "
    "rotations. Every output names the scoring it used."
)


def add_diagnosis_arguments(p: argparse.ArgumentParser) -> None:
    """The diagnosis parameters of ``tempcore diagnose`` (also used by ``export tempcore`` and ``report``)."""
    p.add_argument("--tau", type=float, default=0.15, help="FSS threshold (default 0.15)")
    p.add_argument("--lambda", dest="lam", type=float, default=0.5, help="LIS threshold (default 0.5)")
    p.add_argument("--fss-mode", choices=("q", "qa"), default="qa", help="text mode of MaxProb/MinProb (default qa)")
    p.add_argument("--scoring", choices=("hard", "soft", "circular"), default=DEFAULT_SCORING,
                   help=SCORING_HELP)
    p.add_argument("--models", nargs="+", help="restrict the model panel")
    p.add_argument("--k", type=int, help="frame budget of the rows used, if the table has several")
    p.add_argument("--noframe-k", type=int, help="frame budget of the no-frame rows, when it differs from --k")
    p.add_argument("--encoder", help="encoder of the MaxProb/MinProb rows, if the table has several")


def diagnose_args(table: Any, args: argparse.Namespace) -> Any:
    """``diagnose`` with the parameters of :func:`add_diagnosis_arguments`."""
    from tempcore.diagnostics import diagnose

    noframe_k = args.noframe_k if args.noframe_k is not None else args.k
    return diagnose(table, tau=args.tau, lam=args.lam, fss_mode=args.fss_mode, scoring=args.scoring,
                    models=args.models, filters={"k": args.k, "encoder": args.encoder},
                    noframe_filters={"k": noframe_k}, lis_panel=getattr(args, "lis_panel", "fss"),
                    flags={"noframe_k": "--noframe-k" if args.noframe_k is not None else "--k"})


ANNOTATIONS_HELP = (
    "benchmark annotations, [NAME=]PATH: NAME=PATH per benchmark (NAME as in the predictions' benchmark "
    "column, read with the format their run recorded; without a record a registered format, see "
    "`tempcore benchmarks list`, else the generic format with that benchmark name); a bare PATH when "
    "--benchmark NAME is given"
)


def add_benchmark_arguments(
    p: argparse.ArgumentParser, *, required: bool, benchmark_help: str | None = None
) -> None:
    """``--annotations [NAME=]PATH ...``, ``--benchmark``, ``--video-root``, ``--option``, ``--skip-invalid``."""
    p.add_argument("--annotations", nargs="+", required=required, default=[], metavar="[NAME=]PATH",
                   help=ANNOTATIONS_HELP)
    from tempcore.cli._sources import BENCHMARK_HELP, add_format_argument

    p.add_argument("--benchmark", metavar="NAME",
                   help=benchmark_help or f"the benchmark a bare --annotations PATH belongs to: {BENCHMARK_HELP}")
    add_format_argument(p)
    p.add_argument(
        "--video-root", nargs="+", default=[], metavar="[NAME=]DIR",
        help="folder the benchmark's videos are relative to (NAME=DIR per benchmark; a bare DIR for all)",
    )
    p.add_argument(
        "-o", "--option", action="append", default=[], metavar="[NAME:]KEY=VALUE",
        help="loader option, e.g. nextqa:video_map=PATH or mvbench:task_table=FILE; repeatable",
    )
    p.add_argument("--skip-invalid", action="store_true",
                   help="skip invalid annotation rows (they are reported) instead of stopping")


def parse_annotations(values: list[str], benchmark: str | None) -> dict[str, Path]:
    """``NAME=PATH`` pairs (or one bare PATH with ``benchmark``) -> {name: path}.

    A value is ``NAME=PATH`` when it has an ``=`` whose left side is not an existing path (so a
    file called ``a=b.jsonl`` still reads as a bare path); a bare PATH needs ``benchmark``.
    """
    out: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name.strip() or not path or Path(value).expanduser().exists():
            if benchmark is None:
                raise BenchmarkArgumentError(
                    f"--annotations {value!r}: expected NAME=PATH (or give --benchmark NAME with a bare PATH)"
                )
            name, path = benchmark, value
        name = name.strip()
        if name in out:
            raise BenchmarkArgumentError(f"--annotations: benchmark {name!r} given twice")
        out[name] = Path(path).expanduser()
    if benchmark is not None and benchmark not in out:
        raise BenchmarkArgumentError(
            f"--benchmark {benchmark!r} has no --annotations PATH (given: {', '.join(sorted(out))})"
        )
    return out


def parse_one_annotations(value: str, benchmark: str | None) -> tuple[str | None, Path]:
    """One ``--annotations [NAME=]PATH`` for a command of one benchmark: (its name, its path).

    The name is NAME, else ``benchmark``, else ``None`` (the command finds the benchmark itself);
    NAME and a different ``benchmark`` are an error."""
    try:
        (name, path), = parse_annotations([value], None).items()
    except BenchmarkArgumentError:
        return benchmark, Path(value).expanduser()
    if benchmark is not None and name != benchmark:
        raise BenchmarkArgumentError(f"--annotations {value!r} names benchmark {name!r}, --benchmark {benchmark!r}")
    return name, path


def parse_video_roots(values: list[str], names: list[str]) -> dict[str, Path]:
    """``NAME=DIR`` pairs, or one bare ``DIR`` for every benchmark in ``names``."""
    out: dict[str, Path] = {}
    bare: list[str] = []
    for value in values:
        name, sep, path = value.partition("=")
        if sep and name in names and path:
            out[name] = Path(path).expanduser()
        else:
            bare.append(value)
    if len(bare) > 1:
        raise BenchmarkArgumentError("--video-root: give one bare DIR, or NAME=DIR per benchmark")
    if bare:
        for name in names:
            out.setdefault(name, Path(bare[0]).expanduser())
    return out


def parse_options(values: list[str], names: list[str]) -> dict[str, dict[str, str]]:
    """``[NAME:]KEY=VALUE`` loader options per benchmark (no NAME: only with a single benchmark)."""
    out: dict[str, dict[str, str]] = {n: {} for n in names}
    for value in values:
        head, sep, option_value = value.partition("=")
        if not sep or not head.strip():
            raise BenchmarkArgumentError(f"--option {value!r}: expected [NAME:]KEY=VALUE")
        name, colon, key = head.rpartition(":")
        if not colon:
            if len(names) != 1:
                raise BenchmarkArgumentError(f"--option {value!r}: several benchmarks; write NAME:KEY=VALUE")
            name, key = names[0], head
        if name not in out:
            raise BenchmarkArgumentError(f"--option {value!r}: {name!r} is not a benchmark given")
        out[name][key.strip()] = option_value
    return out


def load_sources(args: argparse.Namespace, table: Any = None, predictions: Path | None = None) -> dict[str, Any]:
    """Load every benchmark named by ``--annotations``: {stored name: LoadResult} (videos per --video-root).

    With the predictions (``table``, and the run store behind ``predictions``), NAME is the benchmark
    as the predictions name it, read with the format its run recorded, or a format name matching
    exactly one of their benchmarks (:func:`tempcore.cli._sources.resolve`); ``--annotations-format``
    names the format. Without a record, a name registered as a benchmark format loads with that
    loader and any other name loads the generic format (``docs/benchmark-format.md``) with
    ``benchmark_name=NAME``.
    """
    from tempcore.cli._sources import load_resolved, recorded_benchmarks, resolve

    paths = parse_annotations(args.annotations, args.benchmark)
    names = list(paths)
    roots = parse_video_roots(args.video_root, names)
    options = parse_options(args.option, names)
    recorded = recorded_benchmarks(predictions)
    fmt = getattr(args, "annotations_format", None)
    out: dict[str, Any] = {}
    for name, path in paths.items():
        resolved = resolve(name, table=table, recorded=recorded, fmt=fmt,
                           flag="--annotations" if args.benchmark is None else "--benchmark")
        assert resolved is not None  # a name was given
        out[resolved.name] = load_resolved(resolved, path, video_root=roots.get(name),
                                           skip_invalid=args.skip_invalid, options=options[name])
    return out


def load_annotations(name: str, path: Path, *, video_root: Path | str | None = None, skip_invalid: bool = False,
                     options: dict[str, str] | None = None) -> Any:
    """Load one benchmark's annotations: with the loader registered as ``name``, else the generic
    format with ``benchmark_name=name`` (so ``tempcore-world`` reads a world's annotations.jsonl).
    Skipped invalid rows are listed on standard error (standard output may be JSON)."""
    from tempcore.benchmarks import available, load_benchmark

    opts = dict(options or {})
    registered = list(available())
    if name in registered:
        result = load_benchmark(name, path, video_root=video_root, skip_invalid=skip_invalid, **opts)
    else:
        from tempcore.registry import did_you_mean

        opts.setdefault("benchmark_name", name)
        try:
            result = load_benchmark("generic", path, video_root=video_root, skip_invalid=skip_invalid, **opts)
        except TempcoreError as exc:
            hint = did_you_mean(name, registered, n=1)
            raise BenchmarkArgumentError(
                f"{exc} ({name!r} is not a registered benchmark format, so its annotations were read as the "
                f"generic format{hint})"
            ) from exc
    for bad in result.invalid:
        print(f"skipped invalid row: {bad}", file=sys.stderr)
    return result


def show_help(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """The ``func`` of a command group called without its subcommand: print the group's help, exit 2."""

    def run(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    return run
