"""``tempcore failures RUN``: the failed requests a run store holds, grouped by cause and one by one."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "failures",
        help="list the failed requests of a run (grouped by cause, then one by one)",
        description="The requests a run store holds as failed (a call that produced no answer: a server error, a "
        "timeout, frames that did not decode), grouped by cause, most frequent first, then one by one. A "
        "failure stays listed until a rerun of the same command answers its key.",
    )
    p.add_argument("run", type=Path, metavar="RUN", help="run folder (its store.sqlite) or a store file")
    p.add_argument("--model", help="only this model's failures")
    p.add_argument("--benchmark", help="only this benchmark's failures")
    p.add_argument("--limit", type=int, default=20,
                   help="failures listed one by one in the text output (default 20; 0: none; --json lists all)")
    p.add_argument("--json", action="store_true",
                   help="one JSON object: store, count, causes [{model, error, count, example}], failures [...]")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tempcore.run.failures import describe_causes, failure_causes
    from tempcore.run.store import STORE_FILENAME, RunStore, StoreError

    path = Path(args.run).expanduser()
    if path.is_dir():
        path = path / STORE_FILENAME
    if not path.is_file():
        raise StoreError(f"{args.run}: no run store there (a run folder holds {STORE_FILENAME})")
    with RunStore(path, create=False) as store:
        rows = store.failures(benchmark=args.benchmark, model=args.model)
    causes = failure_causes(r.failure for r in rows)
    if args.json:
        json.dump({"store": str(path), "count": len(rows), "causes": causes,
                   "failures": [r.failure.to_dict() | {"last_error_at": r.last_error_at, "run_id": r.run_id}
                                for r in rows]}, sys.stdout)
        sys.stdout.write("\n")
        return 0
    if not rows:
        print(f"{path}: no failed requests")
        return 0
    print("\n".join(describe_causes(causes, len(rows))))
    shown = rows[: max(0, args.limit)]
    if shown:
        print()
        for r in shown:
            f = r.failure
            print(f"{f.benchmark}/{f.sample_id}  {f.model}  {f.condition}  attempts {f.attempts}  "
                  f"{r.last_error_at}  {f.error}")
        if len(shown) < len(rows):
            print(f"... {len(rows) - len(shown)} more (--limit N, or --json for all)")
    return 0
