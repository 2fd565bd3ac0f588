"""``tempcore select``: run one frame-selection strategy on scores from a JSON file.

The file holds ``{"timestamps": [...], "scores": [...]}`` (``scores`` may be absent or null
for strategies that ignore them); ``-`` reads it from stdin. ``--json`` prints
``{"indices": [...], "timestamps": [...]}`` in the order shown to the model, or for
``oracle`` ``{"windows": [{"indices": [...], "timestamps": [...]}, ...]}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "select",
        help="select frames with one strategy from per-frame scores in a JSON file",
        description=(
            'Select frames from external scores. FILE is JSON {"timestamps": [...], "scores": [...]} '
            "(one entry per decoded frame); '-' reads stdin."
        ),
    )
    p.add_argument("--scores", required=True, metavar="FILE", help="JSON file with timestamps and scores, or -")
    p.add_argument("--strategy", default="maxprob", help="strategy name (default: maxprob)")
    p.add_argument("--k", type=int, default=32, help="number of frames K (default: 32)")
    p.add_argument("--stride", type=int, default=None, help="oracle: window stride S (default: K)")
    p.add_argument("--max-windows", type=int, default=None, help="oracle: at most this many windows (default: 50)")
    p.add_argument("--window", type=int, default=None, help="oracle: print only this window (0-based)")
    p.add_argument("--seed", type=int, default=0, help="global seed of the random strategies (default: 0)")
    p.add_argument("--sample-id", default="", help="sample id the per-sample seed is derived from")
    p.add_argument("--variant", default=None,
                   help="strategy variant (uniform: centres|linspace|linspace_round|tvbench; shuffled/reversed: base strategy)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="extra strategy parameter, e.g. alpha=2.5 (bolt) or t1=0.5 (aks); repeatable")
    p.add_argument("--json", action="store_true", help="print JSON instead of a listing")
    p.set_defaults(func=run)


def _load(path: str) -> tuple[Any, Any]:
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
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SelectionError(f"{name}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, dict) or "timestamps" not in data:
        raise SelectionError(f'{name}: expected a JSON object {{"timestamps": [...], "scores": [...]}}')
    for key in ("timestamps", "scores"):
        if data.get(key) is not None and not isinstance(data[key], list):
            raise SelectionError(f"{name}: {key!r} must be a list of numbers")
    return data["timestamps"], data.get("scores")


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

    timestamps, scores = _load(args.scores)
    params = _params(args)
    common = dict(sample_id=args.sample_id)
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
