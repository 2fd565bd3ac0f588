"""What becomes of an annotation row that is not a Sample: :class:`InvalidRow` (the row is broken)
or :class:`SkippedRow` (the row is fine but not used, e.g. an open-ended question).

One class each, from the loader to the load's result: a loader (or a helper such as
:func:`tempcore.benchmarks.choices.build_choices`) raises or yields one without a location; the
load engine (:func:`tempcore.benchmarks.base.run_loader`) records it with its file and 1-based row
(:meth:`InvalidRow.at`), its id and reason made printable (lone surrogates written as ``\\udc00``
escapes), in ``LoadResult.invalid`` / ``LoadResult.skipped``. An invalid row the load does not
skip is raised as :class:`tempcore.benchmarks.errors.InvalidRowError`, which names it.

They are exceptions (so helpers can raise them) with value semantics: two equal rows compare and
hash equal, and they pickle with every field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tempcore.safejson import printable


class InvalidRow(Exception):
    """A row that cannot become a Sample.

    ``kind`` is a short category (``missing_field``, ``no_options``, ``single_option``,
    ``unresolvable_answer``, ``ambiguous_answer``, ``duplicate_id``, ``malformed_json``,
    ``malformed_row``, ``bad_value``, ``bad_interval``, ...); ``reason`` the full sentence;
    ``sample_id`` the row's id when known; ``file`` / ``row`` where it is, once located.
    """

    def __init__(
        self,
        kind: str,
        reason: str,
        sample_id: str | None = None,
        *,
        file: Path | None = None,
        row: int | None = None,
    ) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.sample_id = sample_id
        self.file = file
        self.row = row

    def at(self, file: Path, row: int) -> InvalidRow:
        """This row at ``file``:``row``, its id and reason made printable (a new InvalidRow)."""
        sid = None if self.sample_id is None else printable(str(self.sample_id))
        return InvalidRow(self.kind, printable(self.reason), sid, file=file, row=row)

    def _fields(self) -> tuple[Any, ...]:
        return (self.kind, self.reason, self.sample_id, self.file, self.row)

    def __str__(self) -> str:
        if self.file is None:
            return self.reason
        where = f" [{self.sample_id}]" if self.sample_id else ""
        return printable(f"{self.file}:{self.row}:{where} {self.reason}")  # a file name may hold any bytes

    def __repr__(self) -> str:
        return (f"InvalidRow(kind={self.kind!r}, reason={self.reason!r}, sample_id={self.sample_id!r}, "
                f"file={self.file!r}, row={self.row!r})")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._fields() == self._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __reduce__(self) -> tuple[Any, ...]:
        return (_invalid_row, self._fields())

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": None if self.file is None else printable(str(self.file)),
            "row": self.row,
            "sample_id": self.sample_id,
            "kind": self.kind,
            "reason": self.reason,
        }


class SkippedRow(Exception):
    """A well-formed row that is not used (open-ended, no public answer, ...), with the reason;
    ``file`` / ``row`` where it is, once located."""

    def __init__(
        self, reason: str, sample_id: str | None = None, *, file: Path | None = None, row: int | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.sample_id = sample_id
        self.file = file
        self.row = row

    def at(self, file: Path, row: int) -> SkippedRow:
        """This row at ``file``:``row``, its id and reason made printable (a new SkippedRow)."""
        sid = None if self.sample_id is None else printable(str(self.sample_id))
        return SkippedRow(printable(self.reason), sid, file=file, row=row)

    def _fields(self) -> tuple[Any, ...]:
        return (self.reason, self.sample_id, self.file, self.row)

    def __str__(self) -> str:
        if self.file is None:
            return self.reason
        where = f" [{self.sample_id}]" if self.sample_id else ""
        return printable(f"{self.file}:{self.row}:{where} skipped: {self.reason}")

    def __repr__(self) -> str:
        return (f"SkippedRow(reason={self.reason!r}, sample_id={self.sample_id!r}, file={self.file!r}, "
                f"row={self.row!r})")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._fields() == self._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __reduce__(self) -> tuple[Any, ...]:
        return (_skipped_row, self._fields())

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": None if self.file is None else printable(str(self.file)),
            "row": self.row,
            "sample_id": self.sample_id,
            "reason": self.reason,
        }


def _invalid_row(kind: str, reason: str, sample_id: str | None, file: Path | None, row: int | None) -> InvalidRow:
    return InvalidRow(kind, reason, sample_id, file=file, row=row)


def _skipped_row(reason: str, sample_id: str | None, file: Path | None, row: int | None) -> SkippedRow:
    return SkippedRow(reason, sample_id, file=file, row=row)


__all__ = ["InvalidRow", "SkippedRow"]
