"""The loader protocol, the result of a load, and the engine every loader runs through.

A loader turns annotation files into :class:`~tempcore.records.Sample` records. It yields,
for every row it reads, ``(file, row, outcome)`` where outcome is a Sample, a
:class:`~tempcore.benchmarks.rows.InvalidRow` (the row is broken) or a
:class:`~tempcore.benchmarks.rows.SkippedRow` (the row is fine but not a multiple-choice /
grounding question, e.g. MLVU's open-ended tasks), without file and row: the engine locates them. The engine
(:func:`run_loader`) owns what is common: duplicate ids, ``skip_invalid``, counting, and the
content hash of the files read. Nothing is dropped silently: every row ends up in
``samples``, ``invalid`` or ``skipped``.

Text that cannot be written as UTF-8 (a lone surrogate such as the JSON escape ``"\udc00"``,
or a byte that was not UTF-8) makes its row invalid (``bad_text``) wherever it sits in the
Sample (id, video, question, options, metadata): the store, Parquet and tokenizers would fail
on it later, far from the file and row that caused it. Ids and reasons in invalid / skipped
rows are made printable (lone surrogates written as ``\udc00`` escapes).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tempcore.benchmarks.errors import AnnotationFileError, BenchmarkOptionError, InvalidRowError
from tempcore.benchmarks.readers import FileLog, RawRow, read_rows
from tempcore.benchmarks.rows import InvalidRow, SkippedRow
from tempcore.records import Sample
from tempcore.registry import suggest
from tempcore.safejson import text_problem

VIDEO_SUFFIXES = (".mp4", ".mkv", ".webm", ".avi", ".mov", ".m4v", ".gif", ".flv", ".mpg", ".mpeg", ".wmv")
MEDIA = ("video", "gif", "frames")


@dataclass
class LoadResult:
    """Everything a load produced.

    ``samples`` in file order; ``invalid`` and ``skipped`` rows with file, row and reason;
    ``source_files`` every file read (annotations and side files such as NExT-QA's video map or
    EgoSchema's answers); ``annotations_hash`` a sha256 over those files' contents in read
    order (TempCore subset manifests record it); ``video_root`` the root the samples' relative
    video paths resolve against (given, or the benchmark's conventional location, or None);
    ``provenance`` the loader options in effect (task table, revision, ...).
    """

    benchmark: str
    samples: list[Sample]
    invalid: list[InvalidRow]
    skipped: list[SkippedRow]
    source_files: list[Path]
    annotations_hash: str
    video_root: Path | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.samples)

    def __iter__(self) -> Iterator[Sample]:
        return iter(self.samples)


class LoadContext:
    """What a loader needs while reading: its options and the log of files it reads."""

    def __init__(self, annotations: Path, options: Mapping[str, Any]) -> None:
        self.annotations = annotations
        self.options = dict(options)
        self.log = FileLog()
        self.provenance: dict[str, Any] = {}

    def rows(self, path: Path) -> Iterator[RawRow]:
        return read_rows(path, self.log)

    def option(self, name: str, default: Any = None) -> Any:
        value = self.options.get(name)
        return default if value is None else value


Outcome = tuple[Path, int, "Sample | InvalidRow | SkippedRow"]


class Loader(ABC):
    """One benchmark format. Subclasses set ``name``, ``description``, ``options`` (accepted
    keyword options and their help) and implement :meth:`read`."""

    name: ClassVar[str]
    description: ClassVar[str]
    options: ClassVar[Mapping[str, str]] = {}
    #: glob patterns for a folder: single-file formats try them in order (the first with matches
    #: wins); multi-file formats load every file matching any of them
    folder_patterns: ClassVar[tuple[str, ...]] = ("*.json", "*.jsonl", "*.csv", "*.parquet")
    #: whether a folder may hold several annotation files that are all loaded (per-task files)
    multi_file: ClassVar[bool] = False

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            parts = []
            for name in unknown:
                close = suggest(name, self.options, n=1)
                parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            known = ", ".join(sorted(self.options)) or "none"
            raise BenchmarkOptionError(
                f"{self.name}: unknown option(s) {', '.join(parts)}; known options: {known}"
            )
        return {k: v for k, v in options.items() if v is not None}

    def annotation_files(self, annotations: Path) -> list[Path]:
        """The annotation files for ``annotations`` (a file, or a folder searched with
        ``folder_patterns``); raises AnnotationFileError when none or (single-file formats)
        several match."""
        if not annotations.exists():
            raise AnnotationFileError(annotations, "annotations not found")
        if annotations.is_file():
            return [annotations]
        if self.multi_file:
            found = sorted(
                {p for pattern in self.folder_patterns for p in annotations.glob(pattern) if p.is_file()}
            )
            if found:
                return found
        for pattern in () if self.multi_file else self.folder_patterns:
            found = sorted(p for p in annotations.glob(pattern) if p.is_file())
            if found:
                if len(found) > 1 and not self.multi_file:
                    names = ", ".join(p.name for p in found[:10])
                    raise AnnotationFileError(
                        annotations, f"several {self.name} annotation files ({names}); pass the one to load"
                    )
                return found
        raise AnnotationFileError(
            annotations,
            f"no {self.name} annotation file in this folder (looked for {', '.join(self.folder_patterns)})",
        )

    def default_video_root(self, annotations: Path) -> Path | None:
        """Where the benchmark's release keeps its videos relative to its annotations, if it has
        a fixed layout (used when no video root is given)."""
        return None

    @abstractmethod
    def read(self, annotations: Path, ctx: LoadContext) -> Iterable[Outcome]:
        """Yield ``(file, row, Sample | InvalidRow | SkippedRow)`` for every row read."""

    def convert_rows(self, rows: Iterable[RawRow], make: Callable[[RawRow], Sample]) -> Iterator[Outcome]:
        """Apply ``make(raw_row) -> Sample`` to each row, turning InvalidRow / SkippedRow into outcomes."""
        for raw in rows:
            if isinstance(raw.data, InvalidRow):
                yield raw.file, raw.row, raw.data
                continue
            try:
                yield raw.file, raw.row, make(raw)
            except (InvalidRow, SkippedRow) as problem:
                if problem.sample_id is None:
                    problem.sample_id = self.row_id(raw)
                yield raw.file, raw.row, problem

    #: fields that hold the row's id (used to name the sample in an invalid-row report)
    id_fields: ClassVar[tuple[str, ...]] = ("id",)

    def row_id(self, raw: RawRow) -> str | None:
        """The id a row would get, for naming it in an invalid / skipped report (None if unknown)."""
        return guess_id(raw.data, self.id_fields)


def guess_id(data: Any, fields: Sequence[str]) -> str | None:
    if not isinstance(data, Mapping):
        return None
    for name in fields:
        value = data.get(name)
        if value not in (None, ""):
            return str(value)
    return None


def run_loader(
    loader: Loader,
    annotations: str | Path,
    *,
    video_root: str | Path | None = None,
    skip_invalid: bool = False,
    options: Mapping[str, Any] | None = None,
) -> LoadResult:
    """Run ``loader`` over ``annotations`` and collect samples, invalid and skipped rows."""
    path = Path(annotations).expanduser()
    ctx = LoadContext(path, loader.check_options(options or {}))
    if not path.exists():
        raise AnnotationFileError(path, "annotations not found")
    samples: list[Sample] = []
    invalid: list[InvalidRow] = []
    skipped: list[SkippedRow] = []
    first_seen: dict[str, tuple[Path, int]] = {}
    for file, row, outcome in loader.read(path, ctx):
        if isinstance(outcome, Sample):
            problem = sample_text_problem(outcome)
            if problem is not None:
                outcome = InvalidRow("bad_text", problem, outcome.sample_id)
        if isinstance(outcome, Sample):
            where = first_seen.get(outcome.sample_id)
            if where is None:
                first_seen[outcome.sample_id] = (file, row)
                samples.append(outcome)
                continue
            first = f"{where[1]}" if where[0] == file else f"{where[0]}:{where[1]}"
            outcome = InvalidRow(
                "duplicate_id",
                f"duplicate id {outcome.sample_id!r} (first at row {first})",
                outcome.sample_id,
            )
        if isinstance(outcome, SkippedRow):
            skipped.append(outcome.at(file, row))
            continue
        bad = outcome.at(file, row)
        if not skip_invalid:
            raise InvalidRowError(bad)
        invalid.append(bad)
    root = Path(video_root).expanduser() if video_root is not None else loader.default_video_root(path)
    provenance = {"benchmark": loader.name, "options": {k: _jsonable(v) for k, v in ctx.options.items()}}
    provenance.update(ctx.provenance)
    return LoadResult(
        benchmark=loader.name,
        samples=samples,
        invalid=invalid,
        skipped=skipped,
        source_files=list(ctx.log.files),
        annotations_hash=ctx.log.combined_hash(),
        video_root=root,
        provenance=provenance,
    )


def sample_text_problem(sample: Sample) -> str | None:
    """Why a Sample holds text that cannot be written as UTF-8 (a lone surrogate), else None."""
    for name in ("sample_id", "video", "question", "benchmark"):
        problem = text_problem(getattr(sample, name), f"the {name.replace('_', ' ')}")
        if problem is not None:
            return problem
    return text_problem(list(sample.options), "the options") or text_problem(sample.metadata, "")


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


# --- field helpers shared by the format modules --------------------------------------------


def require(data: Mapping[str, Any], name: str) -> Any:
    """The value of a required field; missing, null or blank -> InvalidRow(missing_field)."""
    value = data.get(name)
    if (
        value is None
        or (isinstance(value, str) and not value.strip())
        or (isinstance(value, float) and math.isnan(value))
    ):
        raise InvalidRow("missing_field", f"missing required field '{name}'")
    return value


def require_text(data: Mapping[str, Any], name: str) -> str:
    """A required field as text (ints such as numeric video ids become their decimal string)."""
    value = require(data, name)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, (dict, list)):
        raise InvalidRow("bad_value", f"field '{name}' must be text, not {type(value).__name__}")
    return str(value).strip()


def first_present(data: Mapping[str, Any], *names: str) -> str | None:
    """The first of ``names`` that the row has a non-blank value for."""
    for name in names:
        value = data.get(name)
        if value is not None and not (isinstance(value, str) and not value.strip()):
            return name
    return None


def to_seconds(value: Any, name: str) -> float | None:
    """A time in seconds from a number or numeric string; None when absent."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise InvalidRow("bad_value", f"field '{name}' must be a number of seconds, not {value!r}")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise InvalidRow("bad_value", f"field '{name}' must be a number of seconds, not {value!r}") from None
    if not math.isfinite(seconds):
        raise InvalidRow("bad_value", f"field '{name}' must be finite, not {value!r}")
    return seconds


def check_segment(start: float | None, end: float | None) -> None:
    """A segment needs 0 <= start < end when both bounds are given."""
    if start is not None and start < 0:
        raise InvalidRow("bad_interval", f"segment start {start} is negative")
    if start is not None and end is not None and not start < end:
        raise InvalidRow("bad_interval", f"segment start {start} is not before end {end}")


def video_file(name: str, ext: str = ".mp4") -> str:
    """``name`` + ``ext`` unless ``name`` already ends in a video / GIF suffix (``ext`` may omit the dot)."""
    if Path(name).suffix.lower() in VIDEO_SUFFIXES:
        return name
    return f"{name}{ext if not ext or ext.startswith('.') else '.' + ext}"


def infer_media(video: str, declared: str | None = None) -> str:
    """``declared`` when given (``frame`` is accepted for ``frames``), else ``gif`` for a .gif file
    and ``video`` otherwise."""
    if declared:
        media = "frames" if declared == "frame" else declared
        if media not in MEDIA:
            raise InvalidRow("bad_value", f"media must be one of {', '.join(MEDIA)}, not {declared!r}")
        return media
    return "gif" if video.lower().endswith(".gif") else "video"


def rest_metadata(data: Mapping[str, Any], consumed: Iterable[str]) -> dict[str, Any]:
    """Every field of the row not turned into a Sample field (nothing of the file is lost)."""
    used = set(consumed)
    return {k: v for k, v in data.items() if k not in used}


__all__ = [
    "MEDIA",
    "VIDEO_SUFFIXES",
    "InvalidRow",
    "LoadContext",
    "LoadResult",
    "Loader",
    "Outcome",
    "SkippedRow",
    "check_segment",
    "first_present",
    "guess_id",
    "infer_media",
    "require",
    "require_text",
    "rest_metadata",
    "run_loader",
    "to_seconds",
    "video_file",
]
