"""ExtremeWhenBench: natural-language temporal grounding in hour-long videos.

Rows (JSON list or JSONL): ``{qid, video_id, source_corpus, question, correct_interval
[start, end] (seconds), duration_s, video_duration_s, category}``. These are grounding
samples: no options; ``Sample.answer_interval`` is ``correct_interval``. Validation:
``0 <= start < end`` and ``end <= video_duration_s`` when the video duration is known (plus
the ``duration_tolerance`` option, default 0 s, for annotations rounded past the end).
Sample id: ``qid``; video: ``{video_id}.mp4`` (``video_ext`` option; a ``video_id`` that
already ends in a video suffix is used as is). Metadata keeps every other field (category,
source_corpus, duration_s, video_duration_s, video_id).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from tempcore.benchmarks.base import (
    LoadContext,
    Loader,
    Outcome,
    require,
    require_text,
    rest_metadata,
    to_seconds,
    video_file,
)
from tempcore.benchmarks.choices import InvalidRow
from tempcore.benchmarks.errors import BenchmarkOptionError
from tempcore.benchmarks.readers import RawRow
from tempcore.records import Sample


def parse_interval(value: object, name: str) -> tuple[float, float]:
    """``[start, end]`` seconds from a list / tuple or a JSON-ish string "[s, e]" / "s,e"."""
    if isinstance(value, str):
        parts = [p for p in value.strip().strip("[]()").replace(";", ",").split(",") if p.strip()]
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        raise InvalidRow("bad_interval", f"field '{name}' must be [start, end], not {value!r}")
    if len(parts) != 2:
        raise InvalidRow("bad_interval", f"field '{name}' must have two bounds [start, end], not {value!r}")
    start, end = to_seconds(parts[0], f"{name}[0]"), to_seconds(parts[1], f"{name}[1]")
    if start is None or end is None:
        raise InvalidRow("bad_interval", f"field '{name}' has an empty bound: {value!r}")
    return start, end


def check_interval(start: float, end: float, duration: float | None, tolerance: float = 0.0) -> None:
    if start < 0:
        raise InvalidRow("bad_interval", f"interval start {start} is negative")
    if not start < end:
        raise InvalidRow("bad_interval", f"interval start {start} is not before end {end}")
    if duration is not None and end > duration + tolerance:
        raise InvalidRow("bad_interval", f"interval end {end} is past the video duration {duration}")


class ExtremeWhenBenchLoader(Loader):
    name = "extremewhenbench"
    description = "ExtremeWhenBench"
    options: ClassVar[dict[str, str]] = {
        "video_ext": "suffix added to video_id (default .mp4)",
        "duration_tolerance": "seconds an interval may end past video_duration_s (default 0)",
    }
    folder_patterns = ("*.jsonl", "*.json")
    id_fields = ("qid",)

    def read(self, annotations: Path, ctx: LoadContext) -> Iterator[Outcome]:
        ext = ctx.option("video_ext", ".mp4")
        try:
            tolerance = float(ctx.option("duration_tolerance", 0.0))
        except ValueError:
            raise BenchmarkOptionError(
                f"duration_tolerance must be a number of seconds, not {ctx.option('duration_tolerance')!r}"
            ) from None

        def make(raw: RawRow) -> Sample:
            d = raw.fields
            sid = require_text(d, "qid")
            start, end = parse_interval(require(d, "correct_interval"), "correct_interval")
            check_interval(start, end, to_seconds(d.get("video_duration_s"), "video_duration_s"), tolerance)
            return Sample(
                benchmark=self.name,
                sample_id=sid,
                video=video_file(require_text(d, "video_id"), ext),
                question=require_text(d, "question"),
                answer_interval=(start, end),
                metadata=rest_metadata(d, ("qid", "question", "correct_interval")),
            )

        for file in self.annotation_files(annotations):
            yield from self.convert_rows(ctx.rows(file), make)
