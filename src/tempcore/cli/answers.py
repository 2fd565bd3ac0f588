"""``tempcore answers extract``: parse model responses (JSONL on stdin) into option letters or intervals.

Choice mode (default) reads lines ``{"response": "...", "options": [...]}`` (``options`` optional;
``--options N`` gives the option count for lines without them; a line's own options win) and writes
``{"index": i|null, "letter": "B"|null, "method": ..., "error": ...}``. Interval mode (``--interval``)
reads ``{"response": "...", "duration": seconds?}`` and writes ``{"start": x|null, "end": y|null,
"method": ..., "error": ..., "swapped": bool}``.

Exactly one output line per input line, in order. A malformed line (not JSON, not an object, no
``response``, bad ``options``, invalid UTF-8, blank) gives an output line with nulls and an
``error`` naming the line; the stream goes on and the exit code stays 0. Only an unreadable stdin
is an error (exit 1). A one-line summary goes to stderr unless ``--quiet``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any

from tempcore.errors import TempcoreError


class AnswersInputError(TempcoreError):
    """Standard input could not be read at all."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "answers",
        help="parse model responses into option letters or time intervals",
        description="Answer extraction, the same parser the runner uses.",
    )
    actions = p.add_subparsers(dest="answers_command", metavar="ACTION")
    e = actions.add_parser(
        "extract",
        help="JSONL responses on stdin -> parsed answers as JSONL on stdout",
        description='Read JSONL lines {"response": ..., "options": [...]} on stdin and write one JSONL line '
        '{"index": i|null, "letter": "B"|null, "method": ..., "error": ...} per input line. With '
        '--interval, read grounding responses and write {"start": x|null, "end": y|null, ...}.',
    )
    mode = e.add_mutually_exclusive_group()
    mode.add_argument(
        "--options",
        type=int,
        metavar="N",
        help="number of options for lines that carry no options (letters A..N are valid)",
    )
    mode.add_argument(
        "--interval",
        action="store_true",
        help="parse start/end times (temporal grounding) instead of option letters",
    )
    e.add_argument(
        "--duration",
        type=float,
        metavar="SECONDS",
        help='with --interval: video duration for answers given in percent (a line\'s own "duration" wins)',
    )
    e.add_argument(
        "--reversed",
        choices=("swap", "reject"),
        default="swap",
        help="with --interval: an end before the start is swapped (default) or a parse failure",
    )
    e.add_argument("--quiet", action="store_true", help="no summary line on stderr")
    e.set_defaults(func=run_extract, _parser=e)

    def _help(args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=_help)


def _input_lines(stream: Any) -> Iterator[bytes | str]:
    source = getattr(stream, "buffer", None) or stream
    try:
        yield from source
    except (OSError, ValueError) as exc:  # ValueError: reading a closed stream
        raise AnswersInputError(f"cannot read standard input: {exc}") from exc


def _decode(raw: bytes | str, lineno: int) -> str:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
    return raw.rstrip("\r\n")


def _parse_line(text: str, lineno: int) -> dict[str, Any]:
    if not text.strip():
        raise ValueError(f"line {lineno}: empty line")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"line {lineno}: not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"line {lineno}: expected a JSON object, got {type(obj).__name__}")
    if "response" not in obj:
        raise ValueError(f'line {lineno}: no "response" key')
    if not isinstance(obj["response"], str):
        raise ValueError(f'line {lineno}: "response" is {type(obj["response"]).__name__}, not a string')
    return obj


def _choice(obj: dict[str, Any], n_options: int | None, lineno: int) -> dict[str, Any]:
    from tempcore.answers import extract_choice
    from tempcore.records import LETTERS

    options = obj.get("options")
    if options is not None:
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            raise ValueError(f'line {lineno}: "options" must be a list of strings')
        if len(options) > len(LETTERS):
            raise ValueError(f"line {lineno}: {len(options)} options; at most {len(LETTERS)} can be lettered")
    if options:
        result = extract_choice(obj["response"], options)
    else:
        result = extract_choice(obj["response"], n_options=n_options)
    return {"index": result.index, "letter": result.letter, "method": result.method, "error": result.error}


def _interval(
    obj: dict[str, Any], duration: float | None, reversed_pairs: str, lineno: int
) -> dict[str, Any]:
    from tempcore.answers import extract_interval

    d = obj.get("duration", duration)
    if d is not None and (isinstance(d, bool) or not isinstance(d, (int, float)) or not d > 0):
        raise ValueError(f'line {lineno}: "duration" must be a positive number of seconds')
    result = extract_interval(obj["response"], duration=d, reversed_pairs=reversed_pairs)
    return {
        "start": result.start,
        "end": result.end,
        "method": result.method,
        "error": result.error,
        "swapped": result.swapped,
    }


def run_extract(args: argparse.Namespace) -> int:
    if args.options is not None and not 1 <= args.options <= 26:
        args._parser.error(f"--options must be between 1 and 26, not {args.options}")
    if args.duration is not None and not args.duration > 0:
        args._parser.error("--duration must be positive")
    out = sys.stdout
    failed_lines = parse_failures = total = 0
    for lineno, raw in enumerate(_input_lines(sys.stdin), start=1):
        total = lineno
        try:
            obj = _parse_line(_decode(raw, lineno), lineno)
            if args.interval:
                row = _interval(obj, args.duration, args.reversed, lineno)
            else:
                row = _choice(obj, args.options, lineno)
            parse_failures += row["error"] is not None
        except UnicodeDecodeError as exc:
            row, failed_lines = (
                _error_row(args.interval, f"line {lineno}: not UTF-8 ({exc.reason})"),
                failed_lines + 1,
            )
        except ValueError as exc:
            row, failed_lines = _error_row(args.interval, str(exc)), failed_lines + 1
        except Exception as exc:  # the stream must go on: report the line, keep its place
            row = _error_row(args.interval, f"line {lineno}: internal error {type(exc).__name__}: {exc}")
            failed_lines += 1
        try:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        except BrokenPipeError:  # the reader went away (e.g. `| head`): stop quietly
            return 0
    out.flush()
    if not args.quiet:
        print(
            f"tempcore answers: {total} line(s), {parse_failures} parse failure(s), "
            f"{failed_lines} malformed line(s)",
            file=sys.stderr,
        )
    return 0


def _error_row(interval: bool, error: str) -> dict[str, Any]:
    if interval:
        return {"start": None, "end": None, "method": "none", "error": error, "swapped": False}
    return {"index": None, "letter": None, "method": "none", "error": error}
