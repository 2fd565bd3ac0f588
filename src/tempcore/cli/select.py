"""``tempcore select``: run one frame-selection strategy on scores from a JSON file.

The file holds ``{"timestamps": [...], "scores": [...]}`` (``scores`` may be absent or null
for strategies that ignore them), or the JSON Lines that ``tempcore score`` writes (one record per
sample and text mode, the scores under ``s``); ``-`` reads it from stdin. A record's scores are
``scores`` when it has that key, else ``s``. When the file holds several records, ``--sample-id``,
``--mode`` and ``--benchmark`` choose one (an ambiguous or unmatched choice is an error that lists
what the file holds); a record's ``sample_id`` also seeds the random strategies unless
``--sample-id`` is given, so the frames equal those of ``tempcore run``. ``--json`` prints
``{"indices": [...], "timestamps": [...]}`` in the order shown to the model, or for
``oracle`` ``{"windows": [{"indices": [...], "timestamps": [...]}, ...]}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "select",
        help="select frames with one strategy from per-frame scores in a JSON file",
        description=(
            'Select frames from external scores. FILE is JSON {"timestamps": [...], "scores": [...]} '
            "(one entry per decoded frame); '-' reads stdin."
        ),
    )
    p.add_argument("--scores", required=True, metavar="FILE",
                   help="JSON {timestamps, scores}, or the JSONL of `tempcore score`; - reads stdin")
    p.add_argument("--mode", choices=("q", "qa"), default=None,
                   help="with `tempcore score` output: the text mode of the record to use")
    p.add_argument("--benchmark", default=None, help="with `tempcore score` output: the record's benchmark")
    p.add_argument("--strategy", default="maxprob", help="strategy name (default: maxprob)")
    p.add_argument("--k", type=int, default=32, help="number of frames K (default: 32)")
    p.add_argument("--stride", type=int, default=None, help="oracle: window stride S (default: K)")
    p.add_argument("--max-windows", type=int, default=None, help="oracle: at most this many windows (default: 50)")
    p.add_argument("--window", type=int, default=None, help="oracle: print only this window (0-based)")
    p.add_argument("--seed", type=int, default=0, help="global seed of the random strategies (default: 0)")
    p.add_argument("--sample-id", default=None,
                   help="sample id the per-sample seed is derived from; with `tempcore score` output also the "
                   "record to use (default: the record's own sample_id)")
    p.add_argument("--variant", default=None,
                   help="strategy variant (uniform: centres|linspace|linspace_round|tvbench; shuffled/reversed: base strategy)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="extra strategy parameter, e.g. alpha=2.5 (bolt) or t1=0.5 (aks); repeatable")
    p.add_argument("--json", action="store_true", help="print JSON instead of a listing")
    p.set_defaults(func=run)


def _records(text: str, name: str) -> list[Any]:
    """One JSON value, or JSON Lines (one value per non-empty line)."""
    from tempcore.selection import SelectionError

    try:
        return [json.loads(text)]
    except json.JSONDecodeError as whole:
        records = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                first = whole if n == 1 else exc
                raise SelectionError(f"{name}: not valid JSON (line {n}: {first.msg})") from None
        if not records:
            raise SelectionError(f"{name}: empty file (expected JSON with timestamps and scores)") from None
        return records


def _choose(records: list[Any], name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The one record ``--sample-id`` / ``--mode`` / ``--benchmark`` select (any, when there is one)."""
    from tempcore.selection import SelectionError

    for i, rec in enumerate(records, 1):
        if not isinstance(rec, dict) or "timestamps" not in rec:
            where = f" (record {i})" if len(records) > 1 else ""
            raise SelectionError(f'{name}{where}: expected a JSON object {{"timestamps": [...], "scores": [...]}} '
                                 "or a line of `tempcore score` output")
    wanted = {"sample_id": args.sample_id, "mode": args.mode, "benchmark": args.benchmark}

    def matches(rec: dict[str, Any]) -> bool:
        # a lone plain {"timestamps", "scores"} object has no ids: --sample-id is then only the seed
        return all(str(rec[k]) == str(v) if k in rec else len(records) == 1
                   for k, v in wanted.items() if v is not None)

    chosen: list[dict[str, Any]] = [r for r in records if matches(r)]
    if len(chosen) == 1:
        return chosen[0]

    def held(key: str) -> str:
        values = sorted({str(r[key]) for r in records if key in r})
        shown = ", ".join(values[:10]) + (f", ... ({len(values)} in all)" if len(values) > 10 else "")
        return f"{key} {shown}" if values else f"no {key}"

    holds = f"{name} holds {len(records)} record(s) ({held('sample_id')}; {held('mode')}; {held('benchmark')})"
    asked = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in wanted.items() if v is not None)
    if not chosen:
        raise SelectionError(f"{holds}; none matches {asked}")
    raise SelectionError(f"{holds}; {len(chosen)} match{'' if asked else ' (nothing chosen)'}: choose one with "
                         "--sample-id ID and --mode q|qa (and --benchmark NAME)")


def _load(path: str, args: argparse.Namespace) -> tuple[Any, Any, str | None]:
    """(timestamps, scores, the record's sample_id) of the chosen record of ``path``."""
    from tempcore.selection import SelectionError

    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
    except OSError as exc:
        raise SelectionError(f"{path}: cannot read scores file ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise SelectionError(f"{path}: not UTF-8 text ({exc.reason})") from None
    name = "<stdin>" if path == "-" else path
    data = _choose(_records(text, name), name, args)
    scores_key = "scores" if "scores" in data else "s"
    for key in ("timestamps", scores_key):
        if data.get(key) is not None and not isinstance(data[key], list):
            raise SelectionError(f"{name}: {key!r} must be a list of numbers")
    sid = data.get("sample_id")
    return data["timestamps"], data.get(scores_key), None if sid is None else str(sid)


def _params(args: argparse.Namespace) -> dict[str, Any]:
    from tempcore.selection import SelectionError

    params: dict[str, Any] = {}
    if args.stride is not None:
        params["stride"] = args.stride
    if args.max_windows is not None:
        params["max_windows"] = args.max_windows
    for item in args.param:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise SelectionError(f"--param {item!r}: expected NAME=VALUE")
        try:
            params[name.strip().replace("-", "_")] = json.loads(raw)
        except json.JSONDecodeError:
            params[name.strip().replace("-", "_")] = raw
    return params


def _as_json(fs: Any) -> dict[str, list[Any]]:
    return {"indices": list(fs.indices), "timestamps": list(fs.timestamps)}


def _listing(fs: Any, scores: Any, header: str) -> list[str]:
    lines = [header]
    if fs.grey:
        lines.append(f"  {fs.requested} uniform grey images (no video frames)")
        return lines
    lines.append(f"  {'#':>4} {'index':>7} {'time_s':>10} {'score':>10}")
    for n, (i, t) in enumerate(zip(fs.indices, fs.timestamps), 1):
        score = f"{float(scores[i]):10.4f}" if scores is not None else f"{'-':>10}"
        lines.append(f"  {n:>4} {i:>7} {t:>10.3f} {score}")
    return lines


def run(args: argparse.Namespace) -> int:
    from tempcore.selection import SelectionError, call_strategy, oracle_window
    from tempcore.selection.registry import STRATEGIES

    # strategy names match ignoring case (MaxProb is maxprob); an unknown one is refused with suggestions
    canonical = {name.lower(): name for name in STRATEGIES}
    args.strategy = canonical.get(str(args.strategy).lower(), args.strategy)
    timestamps, scores, record_id = _load(args.scores, args)
    params = _params(args)
    common: dict[str, Any] = dict(sample_id=args.sample_id if args.sample_id is not None else (record_id or ""))
    if args.window is not None:
        if args.strategy != "oracle":
            raise SelectionError(f"--window applies to the oracle strategy, not {args.strategy!r}")
        result: Any = oracle_window(timestamps, scores, args.k, args.window, **common, **params)
    else:
        result = call_strategy(args.strategy, timestamps, scores, args.k, seed=args.seed,
                               variant=args.variant, **common, **params)
    if args.json:
        if isinstance(result, list):
            print(json.dumps({"windows": [_as_json(w) for w in result]}))
        else:
            print(json.dumps(_as_json(result)))
        return 0
    name = args.strategy + (f" ({args.variant})" if args.variant else "")
    if isinstance(result, list):
        print(f"{name}: {len(result)} window(s) of up to {args.k} consecutive frames")
        for w, fs in enumerate(result):
            print(f"  window {w}: frames {fs.indices[0]}-{fs.indices[-1]}, "
                  f"{fs.timestamps[0]:.3f}-{fs.timestamps[-1]:.3f} s ({len(fs)} frames)")
        return 0
    if result.grey:
        header = f"{name}: no frames"
    else:
        short = f" (requested {result.requested}; the video has fewer frames)" if result.shortfall else ""
        header = f"{name}: {len(result)} frame(s) in the order shown{short}"
    print("\n".join(_listing(result, scores, header)))
    return 0
