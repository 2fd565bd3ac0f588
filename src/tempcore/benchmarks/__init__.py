"""Benchmark loaders: annotation files in, :class:`~tempcore.records.Sample` records out.

>>> from tempcore.benchmarks import load_benchmark, preflight
>>> result = load_benchmark("nextqa", "NExT-QA/val.csv", video_root="NExT-QA/videos")  # doctest: +SKIP
>>> missing = preflight(result.samples, result.video_root)                               # doctest: +SKIP

One module per format, a lazy registry (:func:`available`, :func:`register`), and the
documented generic JSONL / CSV format (``docs/benchmark-format.md``). Every row of a file
becomes a sample, an invalid row (file, row, reason) or a skipped row (reason): nothing is
dropped silently. Without ``skip_invalid`` the first invalid row raises
:class:`InvalidRowError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tempcore.benchmarks.base import InvalidRow, Loader, LoadResult, SkippedRow, run_loader
from tempcore.benchmarks.choices import build_choices, resolve_answer, strip_option_prefixes
from tempcore.benchmarks.errors import (
    AnnotationFileError,
    BenchmarkOptionError,
    InvalidRowError,
    UnknownBenchmarkError,
)
from tempcore.benchmarks.registry import available, describe, get_loader, register
from tempcore.benchmarks.videos import MissingVideo, preflight, resolve_video


def load_benchmark(
    name: str,
    annotations: str | Path,
    *,
    video_root: str | Path | None = None,
    skip_invalid: bool = False,
    **options: Any,
) -> LoadResult:
    """Load benchmark ``name`` from ``annotations`` (a file, or the folder the format expects).

    ``video_root`` is recorded in the result (default: the benchmark's conventional video
    folder next to its annotations when it has one, e.g. MVBench's ``video/``); run
    :func:`preflight` to check the videos exist. ``options`` are the loader's own (e.g.
    ``video_map`` for NExT-QA, ``task_table`` for MVBench / TVBench, ``revision`` for
    TVBench); an unknown option raises :class:`BenchmarkOptionError`.
    """
    return run_loader(
        get_loader(name), annotations, video_root=video_root, skip_invalid=skip_invalid, options=options
    )


__all__ = [
    "AnnotationFileError",
    "BenchmarkOptionError",
    "InvalidRow",
    "InvalidRowError",
    "LoadResult",
    "Loader",
    "MissingVideo",
    "SkippedRow",
    "UnknownBenchmarkError",
    "available",
    "build_choices",
    "describe",
    "get_loader",
    "load_benchmark",
    "preflight",
    "register",
    "resolve_answer",
    "resolve_video",
    "strip_option_prefixes",
]
