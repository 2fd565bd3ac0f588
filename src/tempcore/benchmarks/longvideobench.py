"""LongVideoBench (Wu et al.): ``lvb_val.json`` (or its Parquet twin).

Fields: ``id``, ``video_id``, ``question``, ``question_wo_referring_query``, ``candidates``
(3 to 5 strings), ``correct_choice`` (0-based int), ``position``, ``topic_category``,
``question_category``, ``level``, ``video_path``, ``subtitle_path``, ``duration_group``,
``starting_timestamp_for_subtitles``, ``duration`` (seconds), ``view_count``. Sample id:
``id``; video: ``video_path`` under the video root (the release's ``videos/`` folder).
Metadata keeps every other field. The test split (``lvb_test_wo_gt.json``) has no answers:
its rows are invalid (missing ``correct_choice``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tempcore.benchmarks.base import LoadContext, Loader, Outcome, require, require_text, rest_metadata
from tempcore.benchmarks.choices import build_choices
from tempcore.benchmarks.readers import RawRow
from tempcore.records import Sample


class LongVideoBenchLoader(Loader):
    name = "longvideobench"
    description = "LongVideoBench"
    folder_patterns = ("*.json", "*.parquet")

    def read(self, annotations: Path, ctx: LoadContext) -> Iterator[Outcome]:
        def make(raw: RawRow) -> Sample:
            d = raw.fields
            sid = require_text(d, "id")
            options, answer = build_choices(
                require(d, "candidates"), require(d, "correct_choice"), answer_kind="index"
            )
            return Sample(
                benchmark=self.name,
                sample_id=sid,
                video=require_text(d, "video_path"),
                question=require_text(d, "question"),
                options=options,
                answer=answer,
                metadata=rest_metadata(d, ("id", "question", "candidates", "correct_choice", "video_path")),
            )

        for file in self.annotation_files(annotations):
            yield from self.convert_rows(ctx.rows(file), make)
