"""MLVU dev (Zhou et al.): one JSON list per task (``json/1_plotQA.json`` ... ``9_summary.json``).

Fields: ``video``, ``duration``, ``question``, ``candidates``, ``answer`` (the option *text*),
``question_type``. The annotations path is the ``json/`` folder (all task files, in their
numbered order) or one task file. Sample id: ``{task}_{i}`` with ``task`` the file stem (e.g.
``4_count``) and ``i`` the 0-based position in that file, stable across runs. Video:
``{task}/{video}`` under the video root (the release keeps ``video/4_count/count_126.mp4``);
the option ``video_layout=flat`` gives ``{video}`` instead.

Open-ended rows (the sub-scene and summary tasks: no ``candidates``, or question_type
``subPlot`` / ``summary``) are not multiple choice: they are reported as skipped with the
reason, never mixed in. A row whose ``candidates`` field exists but is empty is invalid.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from tempcore.benchmarks.base import LoadContext, Loader, Outcome, require, require_text, rest_metadata
from tempcore.benchmarks.choices import SkippedRow, build_choices
from tempcore.benchmarks.errors import BenchmarkOptionError
from tempcore.benchmarks.readers import RawRow, natural_key
from tempcore.records import Sample

OPEN_ENDED_TYPES = ("subPlot", "summary")


class MLVULoader(Loader):
    name = "mlvu"
    description = "MLVU dev"
    options: ClassVar[dict[str, str]] = {
        "video_layout": "'task' ({task}/{video}, default) or 'flat' ({video})"
    }
    folder_patterns = ("*.json",)
    multi_file = True

    def default_video_root(self, annotations: Path) -> Path | None:
        folder = annotations if annotations.is_dir() else annotations.parent
        return folder.parent / "video" if folder.name == "json" else None

    def read(self, annotations: Path, ctx: LoadContext) -> Iterator[Outcome]:
        layout = ctx.option("video_layout", "task")
        if layout not in ("task", "flat"):
            raise BenchmarkOptionError(f"mlvu: video_layout must be 'task' or 'flat', not {layout!r}")
        for file in sorted(self.annotation_files(annotations), key=natural_key):
            task = file.stem

            def make(raw: RawRow, task: str = task) -> Sample:
                d = raw.fields
                sid = f"{task}_{raw.row - 1}"
                qtype = str(d.get("question_type") or "")
                if "candidates" not in d or qtype in OPEN_ENDED_TYPES:
                    raise SkippedRow(
                        f"open-ended (question_type {qtype or 'unknown'!r}): not multiple choice", sid
                    )
                video = require_text(d, "video")
                options, answer = build_choices(d["candidates"], require(d, "answer"), answer_kind="text")
                meta = rest_metadata(d, ("question", "candidates", "answer"))
                meta["task"] = task
                return Sample(
                    benchmark=self.name,
                    sample_id=sid,
                    video=f"{task}/{video}" if layout == "task" else video,
                    question=require_text(d, "question"),
                    options=options,
                    answer=answer,
                    metadata=meta,
                )

            yield from self.convert_rows(ctx.rows(file), make)

    def row_id(self, raw: RawRow) -> str | None:
        return f"{raw.file.stem}_{raw.row - 1}"
