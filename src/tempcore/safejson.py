"""Reading untrusted JSON text: bounded nesting, ``\\n``-only line splitting, Unicode checks.

Every reader of a file a user hands us (annotations, predictions tables) goes through these
helpers, so one hostile byte costs one row, never the process. Choices:

* **Depth.** A JSON value nested deeper than :data:`MAX_DEPTH` levels (arrays and objects
  counted; ``[[1]]`` has depth 2) is refused *before* :func:`json.loads` or Arrow's JSON reader
  sees it: CPython's parser raises ``RecursionError`` from about 1000 levels, Arrow's reader
  crashes the process at about 20 000, and code downstream (hashing, ``json.dumps``) recurses
  too. 64 levels is far beyond what any benchmark or predictions row holds. The depth is
  measured on the text with a scanner that skips string literals, so a ``"[[[["`` inside a
  string does not count. A cheap bracket count ends the check early for ordinary text.
* **Lines.** JSONL lines end at ``\\n`` (``\\r\\n`` too: the ``\\r`` is dropped), never at
  U+2028 / U+2029 / U+0085 / form feeds, which are legal inside JSON strings and which
  :meth:`str.splitlines` would break on.
* **Text.** A line that is not UTF-8 is one bad row (the reason names the byte and column),
  not a bad file. A string holding a lone surrogate (the JSON escape ``"\\udc00"``, or a byte
  that was not UTF-8 and was decoded with ``surrogateescape``) cannot be written as UTF-8
  (SQLite, Parquet, the tokenizer all fail on it), so it is reported by :func:`text_problem`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

#: the deepest nesting of arrays / objects accepted in a JSON value
MAX_DEPTH = 64

_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[{]|[\]}]', re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")


class JSONTooDeepError(ValueError):
    """A JSON text nested deeper than the limit (never handed to a parser)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"JSON nested deeper than {limit} levels")


def too_deep(text: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the arrays / objects of a JSON text nest deeper than ``limit`` (strings skipped)."""
    if isinstance(text, bytes):
        if text.count(b"[") + text.count(b"{") <= limit:
            return False
        text = text.decode("utf-8", "surrogateescape")
    elif text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for m in _TOKENS.finditer(text):
        c = m.group()[0]
        if c in "[{":
            depth += 1
            if depth > limit:
                return True
        elif c in "]}":
            depth = max(0, depth - 1)
    return False


def loads(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """:func:`json.loads` that refuses nesting deeper than ``limit`` (:class:`JSONTooDeepError`);
    other problems raise :class:`json.JSONDecodeError` as usual."""
    if too_deep(text, limit):
        raise JSONTooDeepError(limit)
    try:
        return json.loads(text)
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise JSONTooDeepError(limit) from None


def value_too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether a parsed value (dicts / lists / tuples) nests deeper than ``limit`` (iterative)."""
    if not isinstance(value, (dict, list, tuple)):
        return False
    if limit < 1:
        return True
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, (dict, list, tuple)):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


_ARRAY_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[{,]|[\]}]', re.DOTALL)


def split_array(text: str) -> list[str] | None:
    """The item texts of a top-level JSON array, found without parsing them (so one item nested
    too deep can be refused alone); None when ``text`` is not an array. Items are not validated:
    parse each with :func:`loads`. Unbalanced text ends the last item at the end of ``text``."""
    stripped = text.lstrip()
    if not stripped.startswith("["):
        return None
    offset = len(text) - len(stripped)
    items: list[str] = []
    depth = 0
    start = offset + 1
    for m in _ARRAY_TOKENS.finditer(text, offset):
        c = m.group()[0]
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                item = text[start : m.start()].strip()
                if item or items:
                    items.append(item)
                return items
        elif c == "," and depth == 1:
            items.append(text[start : m.start()].strip())
            start = m.end()
    items.append(text[start:].strip())
    return items


def split_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of a JSONL file split on ``\\n`` only (a trailing ``\\r`` dropped)."""
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        yield lineno, line[:-1] if line.endswith(b"\r") else line


def decode_line(line: bytes) -> str:
    """A line as UTF-8 text; raises ``ValueError`` naming the first bad byte and its column."""
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte 0x{line[exc.start]:02x} at column {exc.start + 1})") from None


def printable(text: str) -> str:
    """``text`` with lone surrogates written as ``\\udc00`` escapes, so it can be printed / stored."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _describe(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:
        return f"a lone surrogate \\u{code:04x} (or the non-UTF-8 byte 0x{code - 0xDC00:02x})"
    return f"a lone surrogate \\u{code:04x}"


def text_problem(value: Any, where: str = "") -> str | None:
    """Why ``value`` (a str, or dicts / lists of them) cannot be written as UTF-8, else None.

    The reason names the field path (``field 'options'[2]``) and the surrogate. Iterative, so any
    depth is fine (the caller bounds depth separately)."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            m = _SURROGATE.search(item)
            if m is not None:
                return f"{path or 'the value'} holds {_describe(m.group())}: not valid Unicode text"
        elif isinstance(item, dict):
            for k, v in item.items():
                key = str(k)
                m = _SURROGATE.search(key)
                if m is not None:
                    return f"a field name holds {_describe(m.group())}: not valid Unicode text"
                stack.append((v, f"{path}[{printable(key)!r}]" if path else f"field {printable(key)!r}"))
        elif isinstance(item, (list, tuple)):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(item))
    return None


__all__ = [
    "MAX_DEPTH",
    "JSONTooDeepError",
    "decode_line",
    "loads",
    "printable",
    "split_array",
    "split_lines",
    "text_problem",
    "too_deep",
    "value_too_deep",
]
