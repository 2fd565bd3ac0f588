"""``tempcore export tempcore``: the TempCore subsets (Temporally Sensitive samples) of benchmarks.

Also home of the benchmark-argument helpers ``tempcore report`` shares: ``--annotations
NAME=PATH`` (a registered benchmark format, else the generic format with ``benchmark_name=NAME``),
``--video-root [NAME=]DIR`` and ``--option [NAME:]KEY=VALUE`` (loader options).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tempcore.cli._common import add_diagnosis_arguments, diagnose_args
from tempcore.errors import TempcoreError


class BenchmarkArgumentError(TempcoreError):
    """A ``--annotations`` / ``--video-root`` / ``--option`` value cannot be understood."""


def add_benchmark_arguments(p: argparse.ArgumentParser, *, required: bool) -> None:
    """``--annotations``, ``--benchmark``, ``--video-root``, ``--option``, ``--skip-invalid``."""
    p.add_argument(
        "--annotations", nargs="+", required=required, default=[], metavar="NAME=PATH",
        help="benchmark annotations, NAME=PATH per benchmark (NAME as in the predictions' benchmark column: "
        "a registered format, see `tempcore benchmarks list`, else read as the generic format); with "
        "--benchmark NAME a bare PATH",
    )
    p.add_argument("--benchmark", metavar="NAME", help="the benchmark a bare --annotations PATH belongs to")
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
    """``NAME=PATH`` pairs (or one bare PATH with ``benchmark``) -> {name: path}."""
    out: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name.strip() or not path:
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
        raise BenchmarkArgumentError(f"--benchmark {benchmark!r} has no --annotations PATH")
    return out


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


def load_sources(args: argparse.Namespace) -> dict[str, Any]:
    """Load every benchmark named by ``--annotations``: {name: LoadResult} (videos per --video-root).

    A name registered as a benchmark format loads with that loader; any other name loads the
    generic format (``docs/benchmark-format.md``) with ``benchmark_name=NAME``.
    """
    from tempcore.benchmarks import available, load_benchmark

    paths = parse_annotations(args.annotations, args.benchmark)
    names = list(paths)
    roots = parse_video_roots(args.video_root, names)
    options = parse_options(args.option, names)
    registered = set(available())
    out = {}
    for name, path in paths.items():
        opts = dict(options[name])
        loader = name
        if name not in registered:
            loader = "generic"
            opts.setdefault("benchmark_name", name)
        result = load_benchmark(loader, path, video_root=roots.get(name), skip_invalid=args.skip_invalid, **opts)
        for bad in result.invalid:
            print(f"skipped invalid row: {bad}")
        out[name] = result
    return out


def register_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tempcore",
        help="the TempCore subsets: each benchmark's Temporally Sensitive samples + a manifest",
        description=(
            "Diagnose the predictions (FSS, LIS, taxonomy) and write, per benchmark given with --annotations, "
            "its Temporally Sensitive samples (Temporally Grounded + Visual Bias) with their original fields "
            "plus fss, lis and category, and a manifest.json (annotations hash, models, conditions, tau, "
            "lambda, counts, tempcore version)."
        ),
    )
    p.add_argument("--predictions", required=True, type=Path, help="tidy predictions table (CSV, Parquet or JSONL)")
    add_benchmark_arguments(p, required=True)
    p.add_argument("--out", required=True, type=Path, help="output folder (one sub-folder per benchmark)")
    p.add_argument("--format", choices=("jsonl", "parquet", "lmms-eval"), default="jsonl",
                   help="jsonl (default), parquet, or an lmms-eval task folder")
    add_diagnosis_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tempcore.export import export_tempcore
    from tempcore.tidy import read_predictions

    table = read_predictions(args.predictions)
    diagnosis = diagnose_args(table, args)
    sources = load_sources(args)
    paths = export_tempcore(diagnosis, sources, args.out, args.format, table=table)
    for name in sources:
        counts = diagnosis.benchmarks[name]
        n = counts["temporally_sensitive"]
        print(f"{name}: {n} Temporally Sensitive sample(s) ({counts['temporally_grounded']} Temporally Grounded, "
              f"{counts['visual_bias']} Visual Bias) of {counts['n']} ({counts['incomplete']} incomplete)")
    others = sorted(set(diagnosis.benchmarks) - set(sources))
    if others:
        print(f"not exported (no --annotations): {', '.join(others)}")
    for path in paths:
        print(f"wrote {path}")
    return 0
