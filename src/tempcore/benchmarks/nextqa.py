"""NExT-QA multiple choice (Xiao et al.): ``train.csv`` / ``val.csv`` / ``test.csv``.

Columns: ``video, frame_count, width, height, question, answer (0-4), qid, type, a0..a4``.
Sample id: ``{video}_{qid}`` (the benchmark's convention). Videos: the release maps each
video id to ``dir/name`` in ``map_vid_vidorID.json``; the video is ``dir/name.mp4``. The map
is read from the ``video_map`` option, else from ``map_vid_vidorID.json`` next to the CSV (or
in its parent folder); without a map the video is ``{video}.mp4``. With a map, a video id
missing from it makes the row invalid. Metadata keeps every other column and adds
``type_group``: ``causal`` (CW, CH), ``temporal`` (TN, TC, TP; TP is often merged into TN)
or ``descriptive`` (DC, DL, DO).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from tempcore.benchmarks.base import (
    LoadContext,
    Loader,
    Outcome,
    require,
    require_text,
    rest_metadata,
    video_file,
)
from tempcore.benchmarks.choices import InvalidRow, build_choices
from tempcore.benchmarks.errors import AnnotationFileError
from tempcore.benchmarks.readers import RawRow
from tempcore.records import Sample

MAP_NAME = "map_vid_vidorID.json"
TYPE_GROUPS = {
    "CW": "causal",
    "CH": "causal",
    "TN": "temporal",
    "TC": "temporal",
    "TP": "temporal",
    "DC": "descriptive",
    "DL": "descriptive",
    "DO": "descriptive",
}


class NExTQALoader(Loader):
    name = "nextqa"
    description = "NExT-QA multiple choice"
    options: ClassVar[dict[str, str]] = {
        "video_map": f"path of {MAP_NAME} (default: next to the CSV or in its parent folder)",
        "video_ext": "suffix of the video files (default .mp4)",
    }
    folder_patterns = ("*.csv",)

    def read(self, annotations: Path, ctx: LoadContext) -> Iterator[Outcome]:
        files = self.annotation_files(annotations)
        ext = ctx.option("video_ext", ".mp4")
        video_map, map_path = self._video_map(files[0], ctx)
        ctx.provenance["video_map"] = str(map_path) if map_path else None

        def make(raw: RawRow) -> Sample:
            d = raw.fields
            vid = require_text(d, "video")
            sid = f"{vid}_{require_text(d, 'qid')}"
            if video_map is not None:
                if vid not in video_map:
                    raise InvalidRow("unknown_video", f"video {vid!r} is not in {map_path}", sid)
                video = video_file(str(video_map[vid]), ext)
            else:
                video = video_file(vid, ext)
            raw_options = [d.get(f"a{i}") for i in range(5) if f"a{i}" in d]
            if not raw_options:
                raise InvalidRow("no_options", "no options (columns a0..a4 missing)", sid)
            options, answer = build_choices(raw_options, require(d, "answer"), answer_kind="index")
            meta = rest_metadata(d, ("question", "answer", *(f"a{i}" for i in range(5))))
            for column in ("frame_count", "width", "height"):
                value = meta.get(column)
                if isinstance(value, str) and value.strip().isdigit():
                    meta[column] = int(value)
            qtype = str(d.get("type") or "").strip()
            if qtype in TYPE_GROUPS:
                meta["type_group"] = TYPE_GROUPS[qtype]
            return Sample(
                benchmark=self.name,
                sample_id=sid,
                video=video,
                question=require_text(d, "question"),
                options=options,
                answer=answer,
                metadata=meta,
            )

        for file in files:
            yield from self.convert_rows(ctx.rows(file), make)

    def row_id(self, raw: RawRow) -> str | None:
        d = raw.data
        if isinstance(d, dict) and str(d.get("video") or "").strip() and str(d.get("qid") or "").strip():
            return f"{str(d['video']).strip()}_{str(d['qid']).strip()}"
        return None

    def _video_map(self, csv_file: Path, ctx: LoadContext) -> tuple[Mapping[str, Any] | None, Path | None]:
        given = ctx.option("video_map")
        path: Path | None
        if given is not None:
            path = Path(given).expanduser()
        else:
            path = next(
                (p for p in (csv_file.parent / MAP_NAME, csv_file.parent.parent / MAP_NAME) if p.is_file()),
                None,
            )
            if path is None:
                return None, None
        data = ctx.log.read_json(path)
        if not isinstance(data, dict):
            raise AnnotationFileError(
                path, f"expected a JSON object {{video id: 'dir/name'}}, found {type(data).__name__}"
            )
        return {str(k): v for k, v in data.items()}, path
