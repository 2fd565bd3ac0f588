"""``tempcore compare A B``: two runs (folders, stores or predictions tables) row by row."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

#: rows of each listing the text output shows (``--limit`` changes it; ``--json`` lists all by default)
TEXT_LIMIT = 20


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "compare",
        help="compare two runs: fingerprints, frames, answers and paired accuracy per model x condition",
        description="Match the predictions of two runs on (benchmark, sample, model, condition) and say what "
        "differs: the fingerprints (sample content, prompt, model entry, encoder; with the changed fields when "
        "both are run stores), the frames shown, responses and parsed answers; per model x condition each side's "
        "accuracy with the paired difference B - A, a seeded bootstrap interval and an exact McNemar test; the "
        "samples whose correctness flipped and the rows found on one side only.",
    )
    p.add_argument("a", type=Path, metavar="A", help="run folder, run store (.sqlite) or predictions table")
    p.add_argument("b", type=Path, metavar="B", help="the run to compare with A (same kinds)")
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap replicates (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--limit", type=int, metavar="N",
                   help=f"list at most N flipped / one-sided rows (default: all with --json, {TEXT_LIMIT} in text)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _store_path(path: Path) -> Path | None:
    from tempcore.run.store import STORE_FILENAME

    path = path.expanduser()
    if path.is_dir():
        return path / STORE_FILENAME if (path / STORE_FILENAME).is_file() else None
    if path.suffix.lower() in (".sqlite", ".sqlite3", ".db") and path.is_file():
        return path
    return None


def _fingerprint_data(paths: list[Path], tables: list[Any]) -> dict[str, Any]:
    """The data behind the tables' fingerprints, from those of ``paths`` that are run stores."""
    import pyarrow.compute as pc

    from tempcore.diagnostics.compare_runs import FINGERPRINTS
    from tempcore.run.store import RunStore

    out: dict[str, Any] = {}
    for path, table in zip(paths, tables):
        store = _store_path(path)
        if store is None:
            continue
        hashes = {str(h) for name in FINGERPRINTS if name in table.column_names
                  for h in pc.unique(table.column(name)).to_pylist() if h}
        with RunStore(store, create=False) as s:
            out.update(s.fingerprint_data(hashes))
    return out


def run(args: argparse.Namespace) -> int:
    from tempcore.cli._common import read_predictions_arg
    from tempcore.diagnostics.compare_runs import compare_runs

    tables = [read_predictions_arg(args.a), read_predictions_arg(args.b)]
    limit = args.limit if args.limit is not None or args.json else TEXT_LIMIT
    result = compare_runs(tables[0], tables[1], labels=(str(args.a), str(args.b)),
                          fingerprint_data=_fingerprint_data([args.a, args.b], tables),
                          n_boot=args.n_boot, confidence=args.confidence, seed=args.seed, limit=limit)
    if args.json:
        json.dump(result.to_json(), sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_comparison(result.to_json()))
    return 0


def _num(x: float | None, fmt: str = ".3f") -> str:
    return "-" if x is None else format(x, fmt)


def _listing(title: str, rows: list[dict[str, Any]], total: int, extra: Any = None) -> list[str]:
    if not total:
        return []
    shown = f"{len(rows)} of {total}" if len(rows) < total else str(total)
    lines = [f"{title} ({shown}):"]
    for r in rows:
        lines.append(f"  {r['benchmark']} / {r['sample_id']} / {r['model']} / {r['condition']}"
                     + (extra(r) if extra else ""))
    return lines


def format_comparison(res: dict[str, Any]) -> str:
    """The text form of :meth:`tempcore.diagnostics.compare_runs.RunComparison.to_json`."""
    rows = res["rows"]
    lines = [f"A: {res['a']} ({rows['a']} rows)", f"B: {res['b']} ({rows['b']} rows)",
             f"matched {rows['matched']}, differing {rows['differing']}, only in A {rows['only_a']}, "
             f"only in B {rows['only_b']}"]
    if res["differences"] == 0:
        lines.append("no differences")
    for name, fp in res["fingerprints"].items():
        if not fp["differ"]:
            continue
        fields = sorted({f for c in fp["changes"] for f in (c["fields"] or [])})
        named = f"; changed: {', '.join(fields)}" if fields else ""
        lines.append(f"{fp['what']} ({name}) differs in {fp['differ']} rows, {fp['samples']} samples, "
                     f"models {', '.join(fp['models'])}{named}")
    fr = res["frames"]
    if fr["compared"] and fr["identical"] != fr["compared"]:
        at = fr["max_offset_at"]
        where = f" at {at['sample_id']} / {at['model']} / {at['condition']}" if at else ""
        lines.append(f"frames: {fr['identical']} of {fr['compared']} identical, {fr['different_indices']} same count "
                     f"but other indices, {fr['different_count']} another count, {fr['unknown']} unknown; largest "
                     f"offset {_num(fr['max_offset_s'], '.2f')} s{where}")
    rs = res["responses"]
    lines.append(f"responses differ: {rs.get('response', '-')}, parsed answers differ: {rs.get('answer', '-')}, "
                 f"correctness flipped: {rs['correct']}")
    conf = round(100 * res["params"]["confidence"])
    lines.append(f"\naccuracy on the matched pairs: B - A with a {conf}% paired bootstrap interval "
                 f"({res['params']['n_boot']} resamples, seed {res['params']['seed']}), exact McNemar p")
    width = max([len("model")] + [len(r["model"]) for r in res["accuracy"]])
    lines.append(f"{'model'.ljust(width)}  {'n':>6} {'acc A':>7} {'acc B':>7} {'B - A':>7}  {'interval':<17} "
                 f"{'McNemar p':>9}  condition")
    for r in res["accuracy"]:
        interval = f"[{_num(r['delta_ci_low'])}, {_num(r['delta_ci_high'])}]"
        lines.append(f"{r['model'].ljust(width)}  {r['n']:>6} {_num(r['accuracy_a']):>7} {_num(r['accuracy_b']):>7} "
                     f"{_num(r['delta'], '+.3f'):>7}  {interval:<17} {_num(r['mcnemar_p'], '.4f'):>9}  "
                     f"{r['benchmark']}: {r['condition']}")
    lines += _listing("\ncorrectness flipped", res["flipped"], rs["correct"],
                      lambda r: f"  {r['correct_a']} -> {r['correct_b']}")
    lines += _listing("\nonly in A", res["only_a"], rows["only_a"])
    lines += _listing("\nonly in B", res["only_b"], rows["only_b"])
    return "\n".join(lines)
