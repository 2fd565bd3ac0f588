"""TemporalBench (Cai et al., 2024): ``temporalbench_short_qa.json`` / ``temporalbench_long_qa.json``.

Rows: ``{idx, video_name, category, dataset (some releases: source_dataset), question, GT}``.
The options are inside the question text::

    Which caption best describes this video?
    A. <caption one>
    B. <caption two>
    Answer with the option's letter from the given choices directly.

Parsing: the options start at the first line that begins with ``A.`` (also ``A)`` / ``(A)``);
each following line that begins with the next letter starts the next option; lines between
two option lines continue the previous option; lines after the last option are the prompt's
trailing instruction (kept in ``metadata["prompt_suffix"]``). ``Sample.question`` is the stem
before the options. ``GT`` is a letter. Sample id: ``idx``; video: ``video_name`` relative to
the folder of the JSON file (the default video root). Metadata keeps ``category``,
``dataset`` (copied from ``source_dataset`` when only that is present), ``video_name`` (the
unit of multiple binary accuracy: a video counts as correct only when all its binary
questions are) and the raw question text (``raw_question``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from tempcore.benchmarks.base import LoadContext, Loader, Outcome, require, require_text, rest_metadata
from tempcore.benchmarks.choices import InvalidRow, build_choices
from tempcore.benchmarks.readers import RawRow
from tempcore.records import LETTERS, Sample

_OPTION_LINE = re.compile(r"^\s*(?:\(([A-Z])\)|([A-Z])[.)])\s?(.*)$")


def split_question(text: str) -> tuple[str, list[str], str]:
    """``(stem, options, suffix)`` of a question with lettered option lines (see module doc)."""
    lines = text.replace("\r\n", "\n").split("\n")
    start = None
    for i, line in enumerate(lines):
        m = _OPTION_LINE.match(line)
        if m and (m.group(1) or m.group(2)) == "A":
            start = i
            break
    if start is None:
        return text.strip(), [], ""
    options: list[list[str]] = []
    last_option_line = start
    for i in range(start, len(lines)):
        m = _OPTION_LINE.match(lines[i])
        if m and len(options) < len(LETTERS) and (m.group(1) or m.group(2)) == LETTERS[len(options)]:
            options.append([m.group(3)])
            last_option_line = i
        elif options:
            options[-1].append(lines[i])
    # lines after the last option line are the trailing instruction, not part of the option
    tail = len(lines) - 1 - last_option_line
    if tail:
        options[-1] = options[-1][: len(options[-1]) - tail]
    stem = "\n".join(lines[:start]).strip()
    suffix = "\n".join(lines[last_option_line + 1 :]).strip()
    return stem, [" ".join(part.strip() for part in o if part.strip()) for o in options], suffix


class TemporalBenchLoader(Loader):
    name = "temporalbench"
    description = "TemporalBench"
    folder_patterns = ("temporalbench_*_qa.json", "*.json")
    id_fields = ("idx",)

    def default_video_root(self, annotations: Path) -> Path | None:
        return annotations if annotations.is_dir() else annotations.parent

    def read(self, annotations: Path, ctx: LoadContext) -> Iterator[Outcome]:
        def make(raw: RawRow) -> Sample:
            d = raw.fields
            sid = require_text(d, "idx")
            raw_question = require_text(d, "question")
            stem, options, suffix = split_question(raw_question)
            if not stem:
                raise InvalidRow("missing_field", "the question has no text before its options", sid)
            if not options:
                raise InvalidRow(
                    "no_options",
                    "no options found in the question text (expected lines 'A. ...', 'B. ...')",
                    sid,
                )
            opts, answer = build_choices(options, require(d, "GT"), answer_kind="letter")
            meta = rest_metadata(d, ("question",))
            meta["raw_question"] = raw_question
            if "dataset" not in meta and "source_dataset" in meta:
                meta["dataset"] = meta["source_dataset"]
            if suffix:
                meta["prompt_suffix"] = suffix
            return Sample(
                benchmark=self.name,
                sample_id=sid,
                video=require_text(d, "video_name"),
                question=stem,
                options=opts,
                answer=answer,
                metadata=meta,
            )

        for file in self.annotation_files(annotations):
            yield from self.convert_rows(ctx.rows(file), make)
