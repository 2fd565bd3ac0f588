"""Charades-STA (Gao et al. 2017): ``charades_sta_{train,test}.txt``, one query per line
``VID START END##sentence`` (seconds; e.g. ``3MSZA 24.3 30.4##person turn a light on.``).

Sample id: ``{VID}_{n}`` with ``n`` the 0-based position of the line among that video's lines
(the file has several queries per video, some with the same bounds, so the bounds are no id);
video: ``{VID}.mp4`` (``video_ext`` option; the release's ``Charades_v1_480/``). One
ground-truth window; validation ``0 <= START < END`` (the file carries no video duration, so
an end past the video is not detected here). Metadata: ``video_id``. A line without ``##``,
without three fields before it, or with a non-numeric bound is an invalid row
(``malformed_row`` / ``bad_value`` / ``bad_interval``); blank lines are ignored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from tempcore.benchmarks.base import LoadContext, Loader, Outcome, to_seconds, video_file
from tempcore.benchmarks.choices import InvalidRow
from tempcore.benchmarks.extremewhenbench import check_interval
from tempcore.records import Sample


class CharadesSTALoader(Loader):
    name = "charades_sta"
    description = "Charades-STA"
    options: ClassVar[dict[str, str]] = {"video_ext": "suffix added to the video id (default .mp4)"}
    folder_patterns = ("charades_sta_test.txt", "*.txt")

    def read(self, annotations: Path, ctx: LoadContext) -> Iterator[Outcome]:
        ext = ctx.option("video_ext", ".mp4")
        for file in self.annotation_files(annotations):
            seen: dict[str, int] = {}
            for lineno, line in enumerate(ctx.log.read_text(file).splitlines(), start=1):
                if not line.strip():
                    continue
                yield file, lineno, self._sample(line, seen, ext)

    def _sample(self, line: str, seen: dict[str, int], ext: str) -> Sample | InvalidRow:
        head, sep, sentence = line.partition("##")
        parts = head.split()
        if not sep or len(parts) != 3:
            return InvalidRow("malformed_row", "expected 'VID START END##sentence'")
        vid = parts[0]
        n = seen.get(vid, 0)
        seen[vid] = n + 1
        sid = f"{vid}_{n}"
        try:
            start, end = to_seconds(parts[1], "START"), to_seconds(parts[2], "END")
            assert start is not None and end is not None
            check_interval(start, end, None)
            if not sentence.strip():
                raise InvalidRow("missing_field", "empty sentence")
        except InvalidRow as problem:
            problem.sample_id = sid
            return problem
        return Sample(
            benchmark=self.name,
            sample_id=sid,
            video=video_file(vid, ext),
            question=sentence.strip(),
            answer_interval=(start, end),
            metadata={"video_id": vid},
        )
