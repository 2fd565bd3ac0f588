"""Importers of predictions made elsewhere: lmms-eval sample logs, TemporalBench and generic response files.

Every importer parses responses with the one shared extractor (:func:`tempcore.answers.extract_choice`)
and returns an :class:`ImportResult` whose :class:`~tempcore.records.Prediction` rows go into a run
store (:func:`tempcore.tidy.table.store_predictions`). A bad line raises :class:`ImportFormatError`
(``file:line: reason``); with ``errors=[]`` it is collected there and the line skipped. Ids never come
from row numbers unless asked (``id_field="doc_id"`` for an lmms-eval log).

* :func:`import_lmms_eval` reads an lmms-eval ``--log_samples`` JSONL file in both layouts: lmms-eval
  0.7 (``doc_id``, ``target``, ``input``, ``filtered_resps`` a string, ``resps`` only when it differs,
  the task's metric dicts, no ``doc``) and the pre-0.4 one (``doc``, ``arguments``, nested ``resps`` /
  ``filtered_resps``). A log of a task exported by tempcore (``tempcore export tempcore --format
  lmms-eval``) needs no flags: each line's metric items carry ``benchmark``, ``sample_id``,
  ``options`` and the gold ``answer``. For other tasks the sample id field and the benchmark must be
  given; a missing one is an error that lists the fields the log has.
* :func:`import_responses` reads a JSONL file of ``{"sample_id": ..., "response": ...}`` objects (the
  field names are parameters) and joins it with the benchmark's samples, which give the options and
  the gold answer. :func:`import_temporalbench` is the same for TemporalBench's submission format
  ``{"idx": ..., "response": ...}``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tempcore.errors import TempcoreError
from tempcore.records import LETTERS, Condition, Prediction, Sample
from tempcore.safejson import decode_line, loads, text_problem


class ImportFormatError(TempcoreError):
    """A predictions file cannot be imported (``file:line: reason``)."""


class LmmsEvalImportError(ImportFormatError):
    """An lmms-eval ``--log_samples`` file cannot be imported (``file:line: reason``)."""


@dataclass
class ImportResult:
    """What an import read.

    ``id_source`` says where the sample ids came from (``"tempcore metric items"``, a field name);
    ``disagreements`` counts tempcore-task lines whose logged score differs from tempcore's parse of
    the same response (a task exported by another extractor version); ``without_response`` lists
    the benchmark's sample ids that had no line (joined imports only).
    """

    predictions: list[Prediction]
    benchmark: str | None
    format: str
    id_source: str
    layout: str | None = None
    disagreements: int = 0
    without_response: list[str] = field(default_factory=list)

    @property
    def parse_failures(self) -> int:
        return sum(p.answer is None for p in self.predictions)


def _condition(path: Path, strategy: str, mode: str, k: int | None, fps: float, seed: int, variant: str | None) -> str:
    try:
        return Condition(strategy=strategy, mode=mode, k=k, fps=fps, seed=seed, variant=variant).key
    except (TypeError, ValueError) as exc:
        raise ImportFormatError(f"{path}: {exc}") from exc


def _json_lines(path: Path, error: type[ImportFormatError]) -> Iterator[tuple[int, bytes]]:
    """(line number, raw line) of each non-empty line, split on ``\n`` only (a U+2028 inside a
    string stays text; the bytes are decoded per line, so one bad byte costs only its line)."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc}") from exc
    with fh:
        for n, line in enumerate(fh, start=1):
            if line.strip():
                yield n, line.rstrip(b"\r\n")


def _parse_line(line: bytes) -> dict[str, Any]:
    """One JSON object per line; nesting deeper than :data:`tempcore.safejson.MAX_DEPTH` is refused
    before parsing, and invalid UTF-8 or lone surrogates are errors naming the column / field."""
    text = decode_line(line)
    try:
        record = loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from exc
    problem = text_problem(record)
    if problem is not None:
        raise ValueError(problem)
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    return record


def _collect(err: ImportFormatError, exc: Exception, errors: list[ImportFormatError] | None) -> None:
    if errors is None:
        raise err from exc
    errors.append(err)


def _extract(response: str, options: Sequence[str] | None, n_options: int | None) -> tuple[int | None, str | None]:
    from tempcore.answers import extract_choice

    extraction = extract_choice(response, options, n_options)
    return extraction.index, None if extraction.index is not None else (extraction.error or "unparseable response")


# --- lmms-eval ----------------------------------------------------------------------------------

_LMMS_STANDARD = {
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "doc_hash",
    "prompt_hash",
    "target_hash",
    "input",
    "filter",
    "metrics",
    "token_counts",
    "input_media",
}
_OPTION_FIELDS = ("options", "candidates", "choices")
_LETTER_PREFIX = re.compile(r"^\s*\(?([A-Z])\s*[\.\):]\s*")
_SAMPLES_NAME = re.compile(r"samples_(?P<task>.+?)(?:_\d{4}-\d{2}-\d{2}T[\d\-\.:]+)?$")
_TEMPCORE_ITEM = ("benchmark", "sample_id", "options", "answer")


def lmms_eval_task_name(path: str | os.PathLike[str]) -> str | None:
    """The task name in an lmms-eval samples file name (``..._samples_<task>[_<date>].jsonl``)."""
    m = _SAMPLES_NAME.search(Path(path).stem)
    return m.group("task") if m else None


def lmms_eval_model_name(path: str | os.PathLike[str]) -> str | None:
    """The model of an lmms-eval samples file, from the run's ``{date}_results.json`` beside it.

    lmms-eval 0.7 writes ``{date}_samples_{task}.jsonl`` and ``{date}_results.json`` into one
    folder; the results carry ``model_name`` (the ``pretrained=`` / ``model=`` ... value of
    ``--model_args``) and ``model_source`` (the ``--model`` class). The name is ``model_name``,
    else ``model_source``; None when no results file of the same run is there or it names neither.
    """
    p = Path(path)
    date_id = p.stem.split("_samples_", 1)[0] if "_samples_" in p.stem else None
    candidates = [p.with_name(f"{date_id}_results.json")] if date_id else []
    for results in candidates:
        try:
            data = loads(results.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            for key in ("model_name", "model_source"):
                value = data.get(key)
                if isinstance(value, str) and value.strip():
                    return value.strip()
    return None


def _first_text(value: Any) -> str | None:
    """The first string inside nested lists (lmms-eval wraps responses per request and per repeat)."""
    while isinstance(value, (list, tuple)):
        if not value:
            return None
        value = value[0]
    return value if isinstance(value, str) else None


def _lookup(record: Mapping[str, Any], name: str) -> Any:
    """``name`` at the top level of an lmms-eval record, in its ``doc``, or in a task-field dict."""
    if name in record:
        return record[name]
    doc = record.get("doc")
    if isinstance(doc, Mapping) and name in doc:
        return doc[name]
    for key, value in record.items():
        if key not in _LMMS_STANDARD and isinstance(value, Mapping) and name in value:
            return value[name]
    return None


def _fields(record: Mapping[str, Any]) -> str:
    """The fields a log line has, for error messages: ``doc_id, target, videomme_score{question_id, ...}``."""
    parts = []
    for key, value in record.items():
        if isinstance(value, Mapping) and key not in ("metrics",):
            inner = ", ".join(str(k) for k in list(value)[:12]) + (", ..." if len(value) > 12 else "")
            parts.append(f"{key}{{{inner}}}")
        else:
            parts.append(str(key))
    return ", ".join(parts)


def _tempcore_item(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The metric item of a tempcore-exported task (the first task-field dict with benchmark,
    sample_id, options and answer), or None."""
    for key, value in record.items():
        if key not in _LMMS_STANDARD and isinstance(value, Mapping) and all(f in value for f in _TEMPCORE_ITEM):
            return value
    return None


def _strip_letter_prefixes(options: list[str]) -> list[str]:
    """Video-MME style ``"A. text"`` options become ``"text"`` when every option carries its letter."""
    matches = [_LETTER_PREFIX.match(o) for o in options]
    if options and all(m and m.group(1) == LETTERS[i] for i, m in enumerate(matches)):
        return [o[m.end() :] for o, m in zip(options, matches)]  # type: ignore[union-attr]
    return options


def _target_index(target: Any, options: list[str] | None, n_options: int | None) -> int:
    """The correct option's index from an lmms-eval target: a letter, ``(B)`` / ``B.`` /
    ``B. text``, a 0-based index, or the option's text."""
    if isinstance(target, list) and len(target) == 1:
        target = target[0]
    index: int | None = None
    if isinstance(target, bool):
        raise ValueError(f"target {target!r} is not an option")
    if isinstance(target, int):
        index = target
    elif isinstance(target, str):
        text = target.strip()
        lowered = [o.strip().lower() for o in options or ()]
        if text.lower() in lowered and len(text) > 1:
            index = lowered.index(text.lower())
        elif len(text) == 1 and text.upper() in LETTERS:
            index = LETTERS.index(text.upper())
        elif text.isdigit():
            index = int(text)
        elif m := _LETTER_PREFIX.match(text):
            index = LETTERS.index(m.group(1))
            rest = text[m.end() :].strip().lower()
            if rest and options and index < len(options) and rest != lowered[index]:
                raise ValueError(
                    f"target {target!r} names option {m.group(1)}, whose text is {options[index]!r}"
                )
    if index is None:
        raise ValueError(f"cannot map target {target!r} to an option")
    limit = len(options) if options else n_options
    if index < 0 or (limit is not None and index >= limit):
        raise ValueError(f"target {target!r} is outside the {limit} options")
    return index


def _prompt_hash(record: Mapping[str, Any]) -> str:
    if record.get("prompt_hash"):
        return str(record["prompt_hash"])
    prompt = record.get("input") if isinstance(record.get("input"), str) else _first_text(record.get("arguments"))
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest() if prompt else ""


def import_lmms_eval(
    path: str | os.PathLike[str],
    *,
    model: str,
    k: int | None,
    strategy: str = "uniform",
    benchmark: str | None = None,
    mode: str = "none",
    fps: float = 10.0,
    seed: int = 0,
    variant: str | None = None,
    id_field: str | None = None,
    n_options: int | None = None,
    samples: Iterable[Sample] | None = None,
    errors: list[ImportFormatError] | None = None,
) -> ImportResult:
    """Predictions from an lmms-eval ``--log_samples`` JSONL file (see the module docstring).

    Choices (the log leaves them open):

    * tempcore task (a line's metric item holds ``benchmark``, ``sample_id``, ``options``,
      ``answer``): ids, benchmark, options and gold answer come from the item; ``benchmark`` /
      ``id_field``, when given, must agree / name another field to use;
    * other tasks: ``id_field`` names the field holding the benchmark's sample id (looked up at the
      top level, in ``doc``, then in the task's dict fields; Video-MME: ``question_id``), and
      ``benchmark`` is required; ``id_field="doc_id"`` takes lmms-eval's row numbers, when asked;
    * response: the raw response (``resps``, else ``filtered_resps``) is stored; the answer is
      extracted from the filtered response with the shared extractor; an unparseable response is a
      parse failure (answer null, correct 0);
    * options: the item's, else ``options`` / ``candidates`` / ``choices`` of the record (``"A. text"``
      prefixes removed), else the joined sample's, else ``n_options``; target: the item's ``answer``,
      else the log's ``target`` (a letter, ``B.`` / ``(B)`` / ``B. text``, an index or an option text);
    * ``samples`` (the benchmark's annotations), when given: every id must be among them and a
      tempcore item's options must equal the sample's (else the log and the annotations differ);
    * condition: ``Condition(strategy, mode, k, fps=fps, seed=seed, variant=variant)`` as given by the
      caller -- lmms-eval does not log which frames it sampled, so ``frames`` is None;
    * prompt hash: the log's ``prompt_hash``, else the SHA-256 of ``input`` (0.7) / the first
      argument (pre-0.4).

    Duplicate sample ids are always an error.
    """
    p = Path(path)
    condition = _condition(p, strategy, mode, k, fps, seed, variant)
    by_id = {s.sample_id: s for s in samples} if samples is not None else None
    seen: dict[str, int] = {}
    out: list[Prediction] = []
    benches: set[str] = set()
    id_sources: set[str] = set()
    layouts: set[str] = set()
    disagreements = 0
    for n, line in _json_lines(p, LmmsEvalImportError):
        try:
            record = _parse_line(line)
            if "doc_id" not in record or "target" not in record:
                raise ValueError(f"no doc_id / target: not an lmms-eval --log_samples line (fields: {_fields(record)})")
            layouts.add("pre-0.4" if "doc" in record or "arguments" in record else "0.7")
            item = _tempcore_item(record)
            if item is not None:
                bench = str(item["benchmark"])
                if benchmark is not None and benchmark != bench:
                    raise ValueError(f"the log's tempcore items name benchmark {bench!r}, not {benchmark!r}")
                sid = item["sample_id"] if not id_field else _lookup(record, id_field)
                id_sources.add("tempcore metric items" if not id_field else id_field)
                options: list[str] | None = [str(o) for o in item["options"]]
                gold = int(item["answer"])
                if not 0 <= gold < len(options or ()):
                    raise ValueError(f"gold answer {gold} is outside the {len(options or ())} options")
            else:
                if not id_field:
                    raise ValueError(
                        "not a tempcore task's log and no id field given: name the field that holds the "
                        f"benchmark's sample id (--id-field; doc_id = lmms-eval's row numbers). Fields: {_fields(record)}"
                    )
                if benchmark is None:
                    raise ValueError(
                        f"not a tempcore task's log: give the benchmark (--benchmark; the file's task is "
                        f"{lmms_eval_task_name(p)!r}). Fields: {_fields(record)}"
                    )
                bench = benchmark
                sid = _lookup(record, id_field)
                id_sources.add(id_field)
                raw_options = next(
                    (v for f in _OPTION_FIELDS if isinstance(v := _lookup(record, f), list) and v), None
                )
                options = _strip_letter_prefixes([str(o) for o in raw_options]) if raw_options else None
                gold = -1  # decided below, once the sample is known
            if sid is None or (isinstance(sid, str) and not sid.strip()):
                raise ValueError(f"no field {id_field!r} for the sample id. Fields: {_fields(record)}")
            sample_id = str(sid)
            if sample_id in seen:
                raise ValueError(f"sample id {sample_id!r} already on line {seen[sample_id]}")
            sample = None
            if by_id is not None:
                sample = by_id.get(sample_id)
                if sample is None:
                    raise ValueError(f"sample id {sample_id!r} is not in the annotations of {bench!r}")
                if item is not None and sample.options and list(sample.options) != options:
                    raise ValueError(f"sample {sample_id!r}: the log's options {options} differ from the annotations'")
            if options is None and sample is not None and sample.options:
                options = list(sample.options)
            count = len(options) if options else n_options
            if item is None:
                gold = _target_index(record["target"], options, count)
            seen[sample_id] = n
            response = _first_text(record.get("resps"))
            filtered = _first_text(record.get("filtered_resps"))
            if response is None and filtered is None:
                raise ValueError("no response in resps / filtered_resps")
            parsed_text = filtered if filtered is not None else str(response)
            answer, parse_error = _extract(parsed_text, options, count)
            correct = int(answer is not None and answer == gold)
            if item is not None and "score" in item and float(item["score"]) != float(correct):
                disagreements += 1
            benches.add(bench)
            out.append(
                Prediction(
                    benchmark=bench,
                    sample_id=sample_id,
                    model=model,
                    condition=condition,
                    response=response if response is not None else parsed_text,
                    answer=answer,
                    correct=correct,
                    frames=None,
                    prompt_hash=_prompt_hash(record),
                    answer_method="generate",
                    parse_error=parse_error,
                    target=gold,
                )
            )
        except (ValueError, TypeError) as exc:
            _collect(LmmsEvalImportError(f"{p}:{n}: {exc}"), exc, errors)
    if len(benches) > 1:
        raise LmmsEvalImportError(f"{p}: lines of several benchmarks ({', '.join(sorted(benches))}); import them apart")
    missing = sorted(set(by_id) - set(seen)) if by_id is not None else []
    return ImportResult(out, next(iter(benches), benchmark), "lmms-eval", ", ".join(sorted(id_sources)) or "-",
                        "/".join(sorted(layouts)) or None, disagreements, missing)


# --- response files joined with the benchmark's samples -------------------------------------------


def import_responses(
    path: str | os.PathLike[str],
    samples: Iterable[Sample],
    *,
    model: str,
    k: int | None,
    strategy: str = "uniform",
    mode: str = "none",
    fps: float = 10.0,
    seed: int = 0,
    variant: str | None = None,
    id_field: str = "sample_id",
    response_field: str = "response",
    format: str = "responses",
    errors: list[ImportFormatError] | None = None,
) -> ImportResult:
    """Predictions from a JSONL file of ``{id_field: ..., response_field: "..."}`` objects.

    Each line is joined with the benchmark's sample of that id (``str`` of the value: TemporalBench's
    integer ``idx`` matches the loader's ``"0"``), which gives the options and the gold answer; the
    response is parsed by the shared extractor against the sample's options. An id not among the
    samples, a duplicate id, a missing field or a non-text response is a bad line; a sample that is
    not multiple choice is a bad line too. Samples with no line are listed in
    :attr:`ImportResult.without_response` (never silently dropped).
    """
    p = Path(path)
    condition = _condition(p, strategy, mode, k, fps, seed, variant)
    by_id = {s.sample_id: s for s in samples}
    if not by_id:
        raise ImportFormatError(f"{p}: no samples to join the responses with")
    benches = {s.benchmark for s in by_id.values()}
    if len(benches) != 1:
        raise ImportFormatError(f"{p}: the samples belong to several benchmarks ({', '.join(sorted(benches))})")
    bench = benches.pop()
    seen: dict[str, int] = {}
    out: list[Prediction] = []
    for n, line in _json_lines(p, ImportFormatError):
        try:
            record = _parse_line(line)
            if id_field not in record or response_field not in record:
                missing = [f for f in (id_field, response_field) if f not in record]
                raise ValueError(f"no field {' / '.join(map(repr, missing))}. Fields: {_fields(record)}")
            sid = record[id_field]
            if isinstance(sid, (dict, list)) or sid is None or isinstance(sid, bool):
                raise ValueError(f"{id_field!r} is {sid!r}, not an id")
            sample_id = str(sid)
            sample = by_id.get(sample_id)
            if sample is None:
                raise ValueError(f"sample id {sample_id!r} is not in the annotations of {bench!r}")
            if sample_id in seen:
                raise ValueError(f"sample id {sample_id!r} already on line {seen[sample_id]}")
            if not sample.options or sample.answer is None:
                raise ValueError(f"sample {sample_id!r} is not a multiple-choice question")
            response = record[response_field]
            if not isinstance(response, str):
                raise ValueError(f"{response_field!r} is {type(response).__name__}, not text")
            seen[sample_id] = n
            answer, parse_error = _extract(response, list(sample.options), None)
            out.append(
                Prediction(
                    benchmark=bench,
                    sample_id=sample_id,
                    model=model,
                    condition=condition,
                    response=response,
                    answer=answer,
                    correct=int(answer is not None and answer == sample.answer),
                    frames=None,
                    prompt_hash=str(record.get("prompt_hash") or ""),
                    answer_method="generate",
                    parse_error=parse_error,
                    target=sample.answer,
                )
            )
        except (ValueError, TypeError) as exc:
            _collect(ImportFormatError(f"{p}:{n}: {exc}"), exc, errors)
    missing = sorted(set(by_id) - set(seen))
    return ImportResult(out, bench, format, id_field, None, 0, missing)


def import_temporalbench(
    path: str | os.PathLike[str], samples: Iterable[Sample], **kwargs: Any
) -> ImportResult:
    """Predictions from TemporalBench's submission format: JSONL of ``{"idx": ..., "response": "..."}``.

    The same as :func:`import_responses` with ``id_field="idx"``; the samples are the TemporalBench
    annotations (``load_benchmark("temporalbench", ...)``), whose sample id is ``idx``.
    """
    kwargs.setdefault("id_field", "idx")
    kwargs.setdefault("response_field", "response")
    kwargs.setdefault("format", "temporalbench")
    return import_responses(path, samples, **kwargs)


__all__ = [
    "ImportFormatError",
    "ImportResult",
    "LmmsEvalImportError",
    "import_lmms_eval",
    "import_responses",
    "import_temporalbench",
    "lmms_eval_task_name",
]
