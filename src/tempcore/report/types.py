"""The report's parts: the tables and figures of a section and the report they make up, as the
builder (:mod:`.build`) assembles them and the renderers (:mod:`.markdown`, :mod:`.html`) draw them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TableItem:
    """One table of the report, or the reason it is missing (``table is None``)."""

    key: str
    title: str
    table: Any = None  # ResultTable (name, title, columns, rows, notes, percent, meta)
    unavailable: str | None = None
    failed: bool = False


@dataclass
class FigureItem:
    key: str
    title: str
    svg: str
    caption: str = ""


@dataclass
class Section:
    key: str
    title: str
    items: list[TableItem | FigureItem] = field(default_factory=list)
    intro: str = ""


@dataclass
class Report:
    """Everything :mod:`tempcore.report.markdown` and :mod:`tempcore.report.html` render."""

    title: str
    created: str
    params: dict[str, Any]
    inputs: dict[str, Any]
    diagnosis: Any
    sections: list[Section]
    browser: Any = None  # BrowserData
    summary: Any = None  # tempcore.report.summary.Summary (None: no TempCore diagnosis)

    @property
    def tables(self) -> list[TableItem]:
        return [i for s in self.sections for i in s.items if isinstance(i, TableItem)]

    @property
    def figures(self) -> list[FigureItem]:
        return [i for s in self.sections for i in s.items if isinstance(i, FigureItem)]


__all__ = ["FigureItem", "Report", "Section", "TableItem"]
