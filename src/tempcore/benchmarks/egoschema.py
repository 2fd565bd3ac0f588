"""EgoSchema (Mangalam et al.): ``questions.json`` + ``subset_answers.json``.

``questions.json`` is a list of ``{q_uid, google_drive_id, question, option 0, ..., option 4}``;
answers are public only for the 500-question subset, in ``subset_answers.json`` as
``{q_uid: int}``. The annotations path is the folder holding both files or ``questions.json``
itself (the answers are then read from the ``answers`` option, else ``subset_answers.json``
next to it). Sample id: ``q_uid``; video: ``{q_uid}.mp4``. A question without a public
answer is reported as skipped ("no public answer"), not invalid. Rows that carry their own
``answer`` field (re-packaged releases) use it when the answers file has none. Options may
also be given as an ``option`` / ``options`` list.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from tempcore.benchmarks.base import LoadContext, Loader, Outcome, require_text, rest_metadata, video_file
from tempcore.benchmarks.choices import InvalidRow, SkippedRow, build_choices
from tempcore.benchmarks.errors import AnnotationFileError
from tempcore.benchmarks.readers import RawRow
from tempcore.records import Sample

QUESTIONS = "questions.json"
ANSWERS = "subset_answers.json"


def _option_keys(d: dict[str, Any]) -> list[str]:
    keys = [k for k in d if k.startswith("option ") and k[7:].strip().isdigit()]
    return sorted(keys, key=lambda k: int(k[7:]))


class EgoSchemaLoader(Loader):
    name = "egoschema"
    description = "EgoSchema"
    options: ClassVar[dict[str, str]] = {
        "answers": f"path of {ANSWERS} (default: next to {QUESTIONS})",
        "video_ext": "suffix of the video files (default .mp4)",
    }
    folder_patterns = (QUESTIONS,)
    id_fields = ("q_uid",)

    def read(self, annotations: Path, ctx: LoadContext) -> Iterator[Outcome]:
        (questions,) = self.annotation_files(annotations)
        rows = list(ctx.rows(questions))
        answers_path = Path(ctx.option("answers", questions.parent / ANSWERS)).expanduser()
        answers: dict[str, Any] = {}
        if answers_path.is_file() or ctx.option("answers") is not None:
            data = ctx.log.read_json(answers_path)
            if not isinstance(data, dict):
                raise AnnotationFileError(
                    answers_path,
                    f"expected a JSON object {{q_uid: answer index}}, found {type(data).__name__}",
                )
            answers = {str(k): v for k, v in data.items()}
            ctx.provenance["answers"] = str(answers_path)
        elif not any(isinstance(r.data, dict) and "answer" in r.data for r in rows):
            raise AnnotationFileError(
                questions,
                f"no answers: {ANSWERS} not found next to it and the rows carry no 'answer'; pass answers=PATH",
            )
        ext = ctx.option("video_ext", ".mp4")
        known = set()

        def make(raw: RawRow) -> Sample:
            d = raw.fields
            sid = require_text(d, "q_uid")
            known.add(sid)
            keys = _option_keys(d)
            if keys:
                raw_options: Any = [d[k] for k in keys]
            else:
                raw_options = d.get("option", d.get("options"))
            answer = answers.get(sid, d.get("answer"))
            if answer is None:
                raise SkippedRow("no public answer (not in the answers file)", sid)
            if raw_options is None:
                raise InvalidRow("no_options", "no options ('option 0'..'option 4' missing)", sid)
            options, index = build_choices(raw_options, answer, answer_kind="index")
            return Sample(
                benchmark=self.name,
                sample_id=sid,
                video=video_file(sid, ext),
                question=require_text(d, "question"),
                options=options,
                answer=index,
                metadata=rest_metadata(d, ("question", "answer", "option", "options", *keys)),
            )

        yield from self.convert_rows(rows, make)
        orphans = sorted(set(answers) - known)
        ctx.provenance["answers_without_question"] = len(orphans)
