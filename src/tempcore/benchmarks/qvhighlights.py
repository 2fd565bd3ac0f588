"""QVHighlights (Lei et al. 2021) moment retrieval: ``highlight_{train,val,test}_release.jsonl``,
rows ``{qid, query, duration, vid, relevant_windows [[s, e], ...], relevant_clip_ids,
saliency_scores}``.

Sample id: ``qid``; video: ``{vid}.mp4`` (``video_ext`` option; ``vid`` names the 150 s clip,
e.g. ``NUsG9BgSes0_210.0_360.0``); question: ``query``; ground truth: every window of
``relevant_windows`` (``Sample.answer_windows``, in the file's order), each ``0 <= s < e <=
duration`` (``duration_tolerance`` option). Test rows have no ``relevant_windows``: skipped
("no public ground truth"), counted. Metadata keeps every other field (duration, vid,
relevant_clip_ids, saliency_scores).
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
from tempcore.benchmarks.choices import SkippedRow
from tempcore.benchmarks.grounding import parse_windows, tolerance_option
from tempcore.benchmarks.readers import RawRow
from tempcore.records import Sample


class QVHighlightsLoader(Loader):
    name = "qvhighlights"
    description = "QVHighlights"
    options: ClassVar[dict[str, str]] = {
        "video_ext": "suffix added to vid (default .mp4)",
        "duration_tolerance": "seconds a window may end past 'duration' (default 0)",
    }
    folder_patterns = ("highlight_val_release.jsonl", "*.jsonl")
    id_fields = ("qid",)

    def read(self, annotations: Path, ctx: LoadContext) -> Iterator[Outcome]:
        ext = ctx.option("video_ext", ".mp4")
        tolerance = tolerance_option(ctx)

        def make(raw: RawRow) -> Sample:
            d = raw.fields
            sid = require_text(d, "qid")
            if d.get("relevant_windows") is None:
                raise SkippedRow("no public ground truth (no relevant_windows)", sid)
            duration = to_seconds(d.get("duration"), "duration")
            windows = parse_windows(require(d, "relevant_windows"), "relevant_windows", duration, tolerance)
            return Sample(
                benchmark=self.name,
                sample_id=sid,
                video=video_file(require_text(d, "vid"), ext),
                question=require_text(d, "query"),
                answer_windows=windows,
                metadata=rest_metadata(d, ("qid", "query", "relevant_windows")),
            )

        for file in self.annotation_files(annotations):
            yield from self.convert_rows(ctx.rows(file), make)
