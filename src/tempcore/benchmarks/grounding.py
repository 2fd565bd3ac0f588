"""Generic grounding rows: the generic format (``docs/benchmark-format.md``) for temporal-grounding
samples with one or several ground-truth windows, and the window helpers of the grounding loaders.

Rows (JSONL / JSON list / CSV / TSV / Parquet, or a folder of them): ``id`` (or ``sample_id``),
``video``, ``question``, and the ground truth as ``answer_windows`` (a list of ``[start, end]``
seconds; in CSV one cell holding a JSON list) or ``answer_interval`` (one ``[start, end]``);
optional ``duration`` (seconds: windows must end by it, with the ``duration_tolerance``
option), ``start`` / ``end`` (the segment), ``media``. Other fields go to metadata. Windows
must satisfy ``0 <= start < end``; a row with both ground-truth fields is invalid unless the
first window equals ``answer_interval``. Windows are kept in the row's order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from tempcore.benchmarks.base import (
    LoadContext,
    Loader,
    Outcome,
    check_segment,
    first_present,
    infer_media,
    require_text,
    rest_metadata,
    to_seconds,
)
from tempcore.benchmarks.choices import InvalidRow
from tempcore.benchmarks.errors import BenchmarkOptionError
from tempcore.benchmarks.extremewhenbench import check_interval, parse_interval
from tempcore.benchmarks.readers import RawRow
from tempcore.records import Sample


def parse_windows(
    value: Any, name: str, duration: float | None = None, tolerance: float = 0.0
) -> tuple[tuple[float, float], ...]:
    """A non-empty list of ``[start, end]`` windows (a JSON string is parsed), each checked with
    ``0 <= start < end <= duration + tolerance``; InvalidRow(bad_interval) otherwise."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise InvalidRow("bad_interval", f"field '{name}' must be a JSON list of [start, end]") from None
    if not isinstance(value, (list, tuple)) or not value:
        raise InvalidRow("bad_interval", f"field '{name}' must be a non-empty list of [start, end], not {value!r}")
    out = []
    for i, w in enumerate(value):
        s, e = parse_interval(w, f"{name}[{i}]")
        check_interval(s, e, duration, tolerance)
        out.append((s, e))
    return tuple(out)


def tolerance_option(ctx: LoadContext) -> float:
    try:
        return float(ctx.option("duration_tolerance", 0.0))
    except ValueError:
        raise BenchmarkOptionError(
            f"duration_tolerance must be a number of seconds, not {ctx.option('duration_tolerance')!r}"
        ) from None


CORE_FIELDS = ("id", "sample_id", "video", "question", "answer_windows", "answer_interval", "start", "end",
               "media")


class GroundingLoader(Loader):
    name = "grounding"
    description = "generic grounding rows"
    options: ClassVar[dict[str, str]] = {
        "benchmark_name": "Sample.benchmark of the loaded samples (default grounding)",
        "duration_tolerance": "seconds a window may end past 'duration' (default 0)",
    }
    folder_patterns = ("*.jsonl", "*.json", "*.csv", "*.tsv", "*.parquet")
    multi_file = True
    id_fields = ("id", "sample_id")

    def read(self, annotations: Path, ctx: LoadContext) -> Iterator[Outcome]:
        benchmark = str(ctx.option("benchmark_name", "grounding"))
        tolerance = tolerance_option(ctx)

        def make(raw: RawRow) -> Sample:
            d = raw.fields
            sid = require_text(d, first_present(d, "id", "sample_id") or "id")
            video = require_text(d, "video")
            duration = to_seconds(d.get("duration"), "duration")
            windows: tuple[tuple[float, float], ...] = ()
            if d.get("answer_windows") not in (None, ""):
                windows = parse_windows(d["answer_windows"], "answer_windows", duration, tolerance)
            interval = None
            if d.get("answer_interval") not in (None, ""):
                interval = parse_interval(d["answer_interval"], "answer_interval")
                check_interval(*interval, duration, tolerance)
            if not windows and interval is None:
                raise InvalidRow("missing_field", "missing ground truth: give 'answer_windows' or 'answer_interval'")
            if windows and interval is not None and windows[0] != interval:
                raise InvalidRow("bad_interval", f"answer_interval {list(interval)} is not the first answer window")
            start, end = to_seconds(d.get("start"), "start"), to_seconds(d.get("end"), "end")
            check_segment(start, end)
            media = str(d["media"]).strip() if d.get("media") not in (None, "") else None
            return Sample(
                benchmark=benchmark,
                sample_id=sid,
                video=video,
                question=require_text(d, "question"),
                start=start,
                end=end,
                media=infer_media(video, media),
                answer_interval=interval,
                answer_windows=windows,
                metadata=rest_metadata(d, CORE_FIELDS),
            )

        for file in self.annotation_files(annotations):
            yield from self.convert_rows(ctx.rows(file), make)
