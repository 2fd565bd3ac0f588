"""Shared pieces of the visual-option builders: errors, seeded generators, frame times, writing.

Choices stated once (the builders' docstrings refer here):

- **Seeds.** Every random draw of a question comes from ``numpy.random.default_rng([seed, crc32(tag)])``
  where ``tag`` names the question and the purpose (``"<sample id>/scrambled"``), so a question does
  not change when other questions are added or removed, and the same seed gives the same build.
- **Frames of a span.** ``k`` frames of a span ``[start, end]`` are taken at segment centres:
  ``start + (i + 0.5) * (end - start) / k`` for ``i = 0 .. k-1`` (never the span's end points).
- **Correct positions.** The correct option's position is balanced: positions ``0 .. n-1`` repeated
  over the questions of one group (TFR: per question type) and shuffled with the build's seed.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tempcore.errors import TempcoreError

ANNOTATIONS_FILE = "annotations.jsonl"
BUILD_FILE = "build.json"
LABELS = ("A", "B", "C", "D")


class VisualBuildError(TempcoreError):
    """Visual-option questions cannot be built as asked (names the file, row or parameter and why)."""


def rng_for(seed: int, tag: str) -> np.random.Generator:
    """The generator of one question and purpose (see the module docstring)."""
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(tag.encode("utf-8"))])


def span_times(start: float, end: float, k: int) -> list[float]:
    """``k`` segment-centre times of ``[start, end]`` (rounded to microseconds)."""
    if k < 1:
        raise VisualBuildError(f"frames per option must be >= 1, not {k}")
    if not end > start:
        raise VisualBuildError(f"a span needs start < end, not [{start}, {end}]")
    step = (end - start) / k
    return [round(start + (i + 0.5) * step, 6) for i in range(k)]


def non_identity_permutation(n: int, rng: np.random.Generator) -> list[int]:
    """A uniformly drawn permutation of ``range(n)`` other than the identity (``n >= 2``)."""
    if n < 2:
        raise VisualBuildError(f"a non-identity permutation needs at least 2 items, not {n}")
    while True:
        perm = [int(i) for i in rng.permutation(n)]
        if perm != list(range(n)):
            return perm


def balanced_positions(count: int, n_options: int, rng: np.random.Generator) -> list[int]:
    """``count`` correct-option positions, each of ``0 .. n_options-1`` used ``count / n`` times (+-1)."""
    base = [i % n_options for i in range(count)]
    return [base[int(i)] for i in rng.permutation(count)]


def arrange(
    correct: Any, others: Sequence[Any], position: int, rng: np.random.Generator
) -> tuple[list[Any], int]:
    """The options in shown order: ``correct`` at ``position``, the others in a seeded random order."""
    order = [others[int(i)] for i in rng.permutation(len(others))]
    order.insert(position, correct)
    return order, position


def dump_line(row: Mapping[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, separators=(", ", ": ")) + "\n"


def write_rows(out_dir: str | Path, rows: Iterable[Mapping[str, Any]], build: Mapping[str, Any]) -> Path:
    """Write ``out_dir/annotations.jsonl`` (deterministic bytes) and ``out_dir/build.json``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / ANNOTATIONS_FILE
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(dump_line(row))
    tmp.replace(path)
    (out / BUILD_FILE).write_text(json.dumps(build, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def video_duration(path: Path, given: float | None = None) -> float:
    """``given`` when the annotation states it, else the decoded duration (PyAV, every frame)."""
    if given is not None:
        return float(given)
    from tempcore.video.decode import probe
    from tempcore.video.types import VideoError

    try:
        return float(probe(path, fps=None).duration)
    except VideoError as exc:
        raise VisualBuildError(f"{path}: cannot read the video's duration: {exc}") from exc


__all__ = [
    "ANNOTATIONS_FILE",
    "BUILD_FILE",
    "LABELS",
    "VisualBuildError",
    "arrange",
    "balanced_positions",
    "non_identity_permutation",
    "rng_for",
    "span_times",
    "video_duration",
    "write_rows",
]
