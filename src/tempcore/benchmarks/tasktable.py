"""Task tables of the per-task JSON benchmarks (MVBench, TVBench) and the loader they share.

A release ships ``json/{task}.json`` (a list of ``{video, question, candidates, answer (option
text), start?, end? (seconds)}``) and a ``video/`` folder; a *task table* says, for each
task, the folder its videos live in (relative to the video root, i.e. the release's
``video/`` folder), the media type (``video`` files, animated ``gif``, or a folder of
extracted ``frames``), whether the task's rows carry a ``start`` / ``end`` segment that
bounds the question, and, for frame folders, the rate the frames were extracted at.

Users pass their own table with the ``task_table`` option: a JSON file (or a dict) mapping
each task (its JSON file stem, e.g. ``action_sequence``, or the display name, e.g. ``"Action
Sequence"``) to either an object ``{"folder": ..., "media": ..., "bound": ..., "fps": ...,
"json": ...}`` or the upstream tuple ``[json_file, folder, media, bound]``. Entries of a
given table replace the default entries of the same task; the others stay.

Sample id: ``{task}_{i}``, ``i`` the 0-based position in the task file. Video:
``{folder}/{video}``; a ``.gif`` video is media ``gif`` even in a ``video`` task. For bound
tasks ``start`` and ``end`` are required and become the Sample's segment (a row without
them, or with start >= end, is invalid); for other tasks a ``start`` / ``end`` in the row is
kept in metadata only, as the upstream evaluation code ignores it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from tempcore.benchmarks.base import (
    MEDIA,
    LoadContext,
    Loader,
    Outcome,
    check_segment,
    infer_media,
    require,
    require_text,
    rest_metadata,
    to_seconds,
)
from tempcore.benchmarks.choices import InvalidRow, build_choices
from tempcore.benchmarks.errors import AnnotationFileError, BenchmarkOptionError
from tempcore.benchmarks.readers import RawRow
from tempcore.records import Sample


@dataclass(frozen=True)
class TaskSpec:
    """One row of a task table."""

    task: str  # the JSON file stem, e.g. "action_sequence"
    display: str  # e.g. "Action Sequence"
    folder: str  # relative to the video root
    media: str = "video"  # video | gif | frames
    bound: bool = False  # rows carry start / end seconds that bound the question
    fps: float | None = None  # extraction rate of a frame folder

    def __post_init__(self) -> None:
        if self.media not in MEDIA:
            raise ValueError(f"task {self.task}: media must be one of {MEDIA}, not {self.media!r}")


def table(
    *rows: tuple[str, str, str, str, bool] | tuple[str, str, str, str, bool, float],
) -> dict[str, TaskSpec]:
    """Build a task table from ``(display, task, folder, media, bound[, fps])`` rows."""
    return {r[1]: TaskSpec(r[1], r[0], r[2], r[3], r[4], r[5] if len(r) > 5 else None) for r in rows}


def parse_task_table(source: Any, log_read_json: Any = None) -> tuple[dict[str, TaskSpec], Path | None]:
    """Parse a user task table (a path to JSON, or a mapping) into TaskSpecs keyed by task stem."""
    path = None
    if isinstance(source, (str, Path)):
        path = Path(source).expanduser()
        data = log_read_json(path) if log_read_json else json.loads(path.read_text())
    else:
        data = source
    if not isinstance(data, Mapping):
        raise BenchmarkOptionError(f"task_table must map task -> entry, not {type(data).__name__}")
    out: dict[str, TaskSpec] = {}
    for key, entry in data.items():
        try:
            if isinstance(entry, (list, tuple)):
                json_file, folder, media, bound = entry[:4]
                fps = entry[4] if len(entry) > 4 else None
            elif isinstance(entry, Mapping):
                json_file = entry.get("json")
                folder, media = entry["folder"], entry.get("media", "video")
                bound, fps = bool(entry.get("bound", False)), entry.get("fps")
            else:
                raise TypeError(f"entry must be an object or a list, not {type(entry).__name__}")
            task = Path(json_file).stem if json_file else _stem(str(key))
            spec = TaskSpec(
                task,
                str(key),
                str(folder).strip("/"),
                "frames" if media == "frame" else str(media),
                bool(bound),
                None if fps is None else float(fps),
            )
        except (KeyError, TypeError, ValueError) as exc:
            where = f"{path}: " if path else ""
            raise BenchmarkOptionError(f"{where}task_table entry {key!r}: {exc}") from None
        out[task] = spec
    return out, path


def _stem(name: str) -> str:
    """ "Action Sequence" -> "action_sequence"; "fine-grained action" -> "fine_grained_action"."""
    return name.strip().lower().replace("-", "_").replace(" ", "_")


class TaskTableLoader(Loader):
    """Shared loader of MVBench-style releases; subclasses set ``default_table``."""

    default_table: ClassVar[dict[str, TaskSpec]] = {}
    options: ClassVar[dict[str, str]] = {
        "task_table": "JSON file (or dict) mapping task -> {folder, media, bound, fps}; replaces default entries",
    }
    folder_patterns = ("*.json",)
    multi_file = True

    def default_video_root(self, annotations: Path) -> Path | None:
        folder = annotations if annotations.is_dir() else annotations.parent
        return folder.parent / "video" if folder.name == "json" else None

    def resolve_table(self, ctx: LoadContext) -> dict[str, TaskSpec]:
        specs = dict(self.default_table)
        given = ctx.option("task_table")
        if given is not None:
            user, path = parse_task_table(given, ctx.log.read_json)
            specs.update(user)
            ctx.provenance["task_table"] = str(path) if path else "custom"
        else:
            ctx.provenance["task_table"] = "default"
        return specs

    def read(self, annotations: Path, ctx: LoadContext) -> Iterator[Outcome]:
        specs = self.resolve_table(ctx)
        files = self.annotation_files(annotations)
        unknown = [f.name for f in files if f.stem not in specs]
        if unknown:
            raise AnnotationFileError(
                annotations,
                f"task(s) {', '.join(unknown)} not in the {self.name} task table "
                f"(known: {', '.join(sorted(specs))}); pass task_table=FILE with their folder and media",
            )
        for file in files:
            spec = specs[file.stem]
            yield from self.convert_rows(ctx.rows(file), partial(self.make, spec=spec, ctx=ctx))

    def make(self, raw: RawRow, spec: TaskSpec, ctx: LoadContext) -> Sample:
        d = raw.fields
        sid = f"{spec.task}_{raw.row - 1}"
        name = require_text(d, "video")
        video = f"{spec.folder}/{name}" if spec.folder else name
        media = spec.media if spec.media != "video" else infer_media(name)
        start = end = None
        if spec.bound:
            if d.get("start") is None or d.get("end") is None:
                missing = "start" if d.get("start") is None else "end"
                raise InvalidRow(
                    "missing_field",
                    f"missing required field '{missing}' (task {spec.task} has segments)",
                    sid,
                )
            start, end = to_seconds(d["start"], "start"), to_seconds(d["end"], "end")
            check_segment(start, end)
        options, answer = build_choices(require(d, "candidates"), require(d, "answer"), answer_kind="text")
        meta = rest_metadata(
            d, ("question", "candidates", "answer", *(("start", "end") if spec.bound else ()))
        )
        meta.update(task=spec.task, task_name=spec.display)
        if spec.fps is not None:
            meta["frames_fps"] = spec.fps
        meta.update(self.extra_metadata(ctx))
        return Sample(
            benchmark=self.name,
            sample_id=sid,
            video=video,
            question=require_text(d, "question"),
            options=options,
            answer=answer,
            start=start,
            end=end,
            media=media,
            metadata=meta,
        )

    def extra_metadata(self, ctx: LoadContext) -> dict[str, Any]:
        return {}

    def row_id(self, raw: RawRow) -> str | None:
        return f"{raw.file.stem}_{raw.row - 1}"


__all__ = ["TaskSpec", "TaskTableLoader", "parse_task_table", "table"]
