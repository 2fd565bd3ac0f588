"""Video-MME (Fu et al.): one row per question, as in the HF release (JSON list or Parquet).

Fields: ``video_id``, ``duration`` (short / medium / long), ``domain``, ``sub_category``,
``url``, ``videoID``, ``question_id``, ``task_type``, ``question``, ``options`` (strings
prefixed ``"A. "``) and ``answer`` (a letter). Sample id: ``question_id``. Video:
``{videoID}.mp4`` under the video root (the release's ``data/`` folder). Metadata keeps every
other field (duration group, domain, sub_category, task_type, url, video_id).
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
    video_file,
)
from tempcore.benchmarks.choices import build_choices
from tempcore.benchmarks.readers import RawRow
from tempcore.records import Sample


class VideoMMELoader(Loader):
    name = "videomme"
    description = "Video-MME"
    options: ClassVar[dict[str, str]] = {"video_ext": "suffix added to videoID (default .mp4)"}
    folder_patterns = ("*.json", "*.jsonl", "*.parquet")
    id_fields = ("question_id",)

    def read(self, annotations: Path, ctx: LoadContext) -> Iterator[Outcome]:
        ext = ctx.option("video_ext", ".mp4")

        def make(raw: RawRow) -> Sample:
            d = raw.fields
            sid = require_text(d, "question_id")
            options, answer = build_choices(require(d, "options"), d.get("answer"), answer_kind="letter")
            return Sample(
                benchmark=self.name,
                sample_id=sid,
                video=video_file(require_text(d, "videoID"), ext),
                question=require_text(d, "question"),
                options=options,
                answer=answer,
                metadata=rest_metadata(d, ("question_id", "question", "options", "answer")),
            )

        for file in self.annotation_files(annotations):
            yield from self.convert_rows(ctx.rows(file), make)
