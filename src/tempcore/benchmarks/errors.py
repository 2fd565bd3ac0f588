"""Named errors of the benchmark loaders. Each says which file, which row and why."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tempcore.errors import TempcoreError
from tempcore.registry import hint

if TYPE_CHECKING:
    from tempcore.benchmarks.rows import InvalidRow


class InvalidRowError(TempcoreError):
    """A row of an annotation file that cannot become a Sample (raised unless ``skip_invalid``).

    ``row`` is 1-based: the line number for JSONL and CSV files, the position in the list for
    JSON and Parquet files.
    """

    def __init__(self, invalid: InvalidRow) -> None:
        self.invalid = invalid
        self.file: Path | None = invalid.file
        self.row: int | None = invalid.row
        self.sample_id: str | None = invalid.sample_id
        self.reason: str = invalid.reason
        super().__init__(
            f"{invalid} (pass --skip-invalid / skip_invalid=True to skip such rows and count them)"
        )


class AnnotationFileError(TempcoreError):
    """An annotation file or folder that cannot be read at all (missing, not JSON, wrong shape)."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class UnknownBenchmarkError(TempcoreError, KeyError):
    """A benchmark name that is not registered; the message suggests the closest names."""

    def __init__(self, name: str, known: list[str], suggestions: list[str]) -> None:
        self.name = name
        self.suggestions = suggestions
        super().__init__(f"unknown benchmark {name!r}{hint(suggestions)} (known: {', '.join(known)})")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class BenchmarkOptionError(TempcoreError):
    """A loader option that the loader does not take, or an option value it cannot use."""


__all__ = ["AnnotationFileError", "BenchmarkOptionError", "InvalidRowError", "UnknownBenchmarkError"]
