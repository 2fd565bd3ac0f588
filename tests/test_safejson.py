"""The untrusted-JSON helpers (tempcore.safejson) against hand-worked examples and a naive twin."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tempcore import safejson


def naive_depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((naive_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((naive_depth(v) for v in value), default=0)
    return 0


JSON = st.recursive(st.none() | st.integers() | st.text(alphabet='[]{}"\\ab,:'),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=30)


@settings(max_examples=200, deadline=None, database=None)
@given(JSON, st.integers(0, 8))
def test_text_depth_matches_the_parsed_depth(value: object, limit: int) -> None:
    text = json.dumps(value)
    assert safejson.too_deep(text, limit) == (naive_depth(value) > limit)
    assert safejson.value_too_deep(value, limit) == (naive_depth(value) > limit)
    assert safejson.too_deep(text.encode(), limit) == (naive_depth(value) > limit)


def test_brackets_inside_strings_do_not_count() -> None:
    assert not safejson.too_deep('["' + "[" * 500 + '\\"' + "{" * 500 + '"]', 2)
    assert safejson.too_deep("[" * 65 + "]" * 65)
    assert not safejson.too_deep("[" * 64 + "]" * 64)
    with pytest.raises(safejson.JSONTooDeepError, match="deeper than 64 levels"):
        safejson.loads("[" * 100_000)


def test_split_array() -> None:
    assert safejson.split_array('[1, {"a": [2, 3]}, "x,]", [[[]]]]') == ["1", '{"a": [2, 3]}', '"x,]"', "[[[]]]"]
    assert safejson.split_array(" [ ] ") == []
    assert safejson.split_array('{"a": 1}') is None
    assert safejson.split_array("[1, [2") == ["1", "[2"]


def test_split_lines_only_on_newline() -> None:
    data = "a\u2028b\r\nc\x85d\x0ce\n\nf".encode()
    assert list(safejson.split_lines(data)) == [(1, "a\u2028b".encode()), (2, "c\x85d\x0ce".encode()), (3, b""), (4, b"f")]


def test_text_problem_and_printable() -> None:
    assert safejson.text_problem({"id": "ok", "o": ["a", "b"]}) is None
    assert safejson.text_problem({"o": ["a", "\udcff"]}) == (
        "field 'o'[1] holds a lone surrogate \\udcff (or the non-UTF-8 byte 0xff): not valid Unicode text")
    assert safejson.text_problem({"\ud800": 1}).startswith("a field name holds a lone surrogate \\ud800")
    assert safejson.printable("a\udc00b") == "a\\udc00b" and safejson.printable("é") == "é"
    with pytest.raises(ValueError, match=r"byte 0xff at column 3"):
        safejson.decode_line(b"ab\xffc")
