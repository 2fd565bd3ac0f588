"""The generic annotation format (documented in ``docs/benchmark-format.md``).

JSONL (one object per line), a JSON list, or CSV / TSV with a header. Fields:

* ``id`` (or ``sample_id``): unique sample id. Required.
* ``video``: path relative to the video root (or absolute). Required.
* ``question``: required.
* ``options``: a list (in CSV: a JSON list in one cell), or numbered columns / keys
  ``option_0 .. option_N`` or ``a0 .. aN``. Required unless ``answer_interval`` is given.
* ``answer``: a letter (``"B"``), a 0-based index (``1`` / ``"1"``) or the option text.
  A string that reads differently as letter, index and text (options ``["3", "2", "1"]``,
  answer ``"2"``) is invalid as ambiguous: write JSON integers for indices.
* optional ``start`` / ``end`` (seconds: the segment the question is about), ``media``
  (``video`` / ``gif`` / ``frames``; default from the suffix), ``answer_interval``
  (``[start, end]`` seconds: a grounding sample; in CSV a JSON list or ``"s,e"``).
* every other field is kept in ``Sample.metadata`` unchanged (CSV values stay strings), e.g.
  the synthetic world's ``planted`` field.

Option ``benchmark_name`` sets ``Sample.benchmark`` (default ``generic``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from tempcore import safejson
from tempcore.benchmarks.base import (
    LoadContext,
    Loader,
    Outcome,
    check_segment,
    first_present,
    infer_media,
    require,
    require_text,
    rest_metadata,
    to_seconds,
)
from tempcore.benchmarks.choices import InvalidRow, build_choices
from tempcore.benchmarks.extremewhenbench import check_interval, parse_interval
from tempcore.benchmarks.readers import RawRow
from tempcore.records import Sample

_NUMBERED = re.compile(r"^(?:option_|a)(\d+)$")
CORE_FIELDS = (
    "id",
    "sample_id",
    "video",
    "question",
    "options",
    "answer",
    "start",
    "end",
    "media",
    "answer_interval",
)


def numbered_options(d: dict[str, Any]) -> tuple[list[str], list[Any]]:
    """Keys ``option_0..`` (or ``a0..``) in numeric order, and their values."""
    found = sorted((int(m.group(1)), k) for k in d if (m := _NUMBERED.match(k)))
    families = {k.startswith("option_") for _, k in found}
    if len(families) > 1:
        raise InvalidRow("bad_value", "both option_N and aN option columns are present; use one family")
    indices = [i for i, _ in found]
    if indices and indices != list(range(len(indices))):
        raise InvalidRow("bad_value", f"numbered option columns must run 0..N without gaps, found {indices}")
    return [k for _, k in found], [d[k] for _, k in found]


def _options_value(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            parsed = safejson.loads(text)
        except safejson.JSONTooDeepError:
            raise InvalidRow(
                "too_deep", f"options: JSON nested deeper than {safejson.MAX_DEPTH} levels"
            ) from None
        except json.JSONDecodeError:
            raise InvalidRow(
                "bad_value", "options must be a JSON list (in CSV: one cell holding a JSON list)"
            ) from None
        return parsed
    return value


class GenericLoader(Loader):
    name = "generic"
    description = "generic JSONL / CSV"
    options: ClassVar[dict[str, str]] = {
        "benchmark_name": "Sample.benchmark of the loaded samples (default generic)"
    }
    folder_patterns = ("*.jsonl", "*.json", "*.csv", "*.tsv")
    multi_file = True
    id_fields = ("id", "sample_id")

    def read(self, annotations: Path, ctx: LoadContext) -> Iterator[Outcome]:
        benchmark = str(ctx.option("benchmark_name", "generic"))

        def make(raw: RawRow) -> Sample:
            d = raw.fields
            id_field = first_present(d, "id", "sample_id") or "id"
            sid = require_text(d, id_field)
            video = require_text(d, "video")
            keys, numbered = numbered_options(d)
            listed = _options_value(d.get("options"))
            has_numbered = any(v not in (None, "") for v in numbered)
            if listed is not None and has_numbered:
                raise InvalidRow(
                    "bad_value", "both 'options' and numbered option fields are given; use one", sid
                )
            raw_options = listed if listed is not None else (numbered if has_numbered else None)
            interval = None
            if d.get("answer_interval") not in (None, ""):
                s, e = parse_interval(d["answer_interval"], "answer_interval")
                check_interval(s, e, None)
                interval = (s, e)
            options: tuple[str, ...] = ()
            answer = None
            if raw_options is not None or interval is None:
                if raw_options is None:
                    raise InvalidRow("no_options", "no options (and no answer_interval)", sid)
                options, answer = build_choices(raw_options, require(d, "answer"), answer_kind="auto")
            start, end = to_seconds(d.get("start"), "start"), to_seconds(d.get("end"), "end")
            check_segment(start, end)
            media = str(d["media"]).strip() if d.get("media") not in (None, "") else None
            return Sample(
                benchmark=benchmark,
                sample_id=sid,
                video=video,
                question=require_text(d, "question"),
                options=options,
                answer=answer,
                start=start,
                end=end,
                media=infer_media(video, media),
                answer_interval=interval,
                metadata=rest_metadata(d, (*CORE_FIELDS, *keys)),
            )

        for file in self.annotation_files(annotations):
            yield from self.convert_rows(ctx.rows(file), make)
