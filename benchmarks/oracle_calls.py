"""Model calls of the window oracle with and without ``early_stop``, on the synthetic world.

Two ``tempcore run``\\ s of one reduced world (generated like the demo's, the demo's configuration
and zoo: :func:`tempcore.demo.demo_config`) under ``uniform`` and the window oracle: one with
``early_stop: false`` (every window), one with ``early_stop: true`` (windows in decreasing mean
QA-mode frame score, stop at the first correct one). Model calls are counted by wrapping each
loaded model's ``answer`` (one call = one request), per model and strategy. Checked, not assumed:
the per (sample, model) oracle correctness ("any window correct", :func:`oracle_matrix`) and the
uniform-vs-oracle table (Table 22) are identical in both runs.

Usage::

    python benchmarks/oracle_calls.py [--questions 48] [--windows 8] [--out DIR] [--json]

Prints the oracle calls of each run, their ratio (target >= 3x fewer with early stop) and the
wall time of each run; ``--json`` prints one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class CallCounter:
    """A model factory counting every request a loaded model answers, per (model, strategy)."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()

    def __call__(self, spec: Any) -> Any:
        from tempcore.models import load_model

        return _Counted(load_model(spec), self.calls)


class _Counted:
    def __init__(self, model: Any, calls: Counter[tuple[str, str]]) -> None:
        self._model = model
        self._calls = calls

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def answer(self, requests: Sequence[Any], **kwargs: Any) -> Any:
        for r in requests:  # key: benchmark|sample_id|condition key, whose first part is the strategy
            self._calls[(self._model.name, str(r.key).split("|")[2])] += 1
        return self._model.answer(requests, **kwargs)


def oracle_correctness(table: Any) -> dict[tuple[str, str], float]:
    """(sample_id, model) -> window-oracle correctness (any window right; NaN cells left out)."""
    import numpy as np

    from tempcore.diagnostics.compare import ConditionQuery, condition_matrix
    from tempcore.diagnostics.table import EncodedPredictions

    enc = EncodedPredictions.from_table(table)
    m = condition_matrix(enc, ConditionQuery("oracle"))
    return {(str(enc.sample_id[i]), str(enc.models[j])): float(m[i, j])
            for i in range(m.shape[0]) for j in range(m.shape[1]) if not np.isnan(m[i, j])}


def uniform_vs_oracle_rows(table: Any) -> list[dict[str, Any]]:
    from tempcore.diagnostics.analyses import uniform_vs_oracle

    return uniform_vs_oracle(table, n_boot=200, seed=0).rows


def measure(out: Path, *, questions: int, windows: int, seed: int, log: Any = None) -> dict[str, Any]:
    """Run the world twice (early_stop false, true) and return the counts and the checks."""
    import dataclasses

    import torch

    from tempcore.demo import HELD_OUT_SEED, demo_config
    from tempcore.run.config import ConditionEntry
    from tempcore.run.runner import run
    from tempcore.tidy.table import read_predictions
    from tempcore.world import generate_world

    torch.set_num_threads(1)  # the zoo's models are tiny (as the demo does)
    quiet = log or (lambda _line: None)
    world = generate_world(out / "world", questions, seed if seed is not None else HELD_OUT_SEED)
    result: dict[str, Any] = {"questions": questions, "max_windows": windows}
    tables = {}
    for early in (False, True):
        base = demo_config(world, out / f"early_stop_{str(early).lower()}", k=8, oracle_windows=windows,
                           cache=out / "cache")
        oracle = next(c for c in base.conditions if c.strategy == "oracle")
        cfg = dataclasses.replace(base, conditions=(
            ConditionEntry("uniform"),
            dataclasses.replace(oracle, params={**oracle.params, "early_stop": early}),
        ))
        counter = CallCounter()
        started = time.perf_counter()
        summary = run(cfg, progress=False, log=quiet, model_factory=counter, recompute=True)
        wall = time.perf_counter() - started
        oracle_calls = sum(n for (_m, strategy), n in counter.calls.items() if strategy == "oracle")
        per_model = {m: n for (m, strategy), n in sorted(counter.calls.items()) if strategy == "oracle"}
        assert summary.predictions_file is not None
        tables[early] = read_predictions(summary.predictions_file)
        result[f"early_stop_{str(early).lower()}"] = {
            "oracle_calls": oracle_calls, "all_calls": sum(counter.calls.values()), "oracle_calls_per_model": per_model,
            "wall_s": round(wall, 1), "waves": {m: st["waves"] for m, st in summary.oracle_early_stop.items()},
        }
    full, early_run = result["early_stop_false"], result["early_stop_true"]
    result["ratio"] = full["oracle_calls"] / max(early_run["oracle_calls"], 1)
    result["identical_oracle_correctness"] = oracle_correctness(tables[False]) == oracle_correctness(tables[True])
    result["identical_uniform_vs_oracle"] = uniform_vs_oracle_rows(tables[False]) == uniform_vs_oracle_rows(tables[True])
    corr = oracle_correctness(tables[False])
    result["oracle_cells"] = len(corr)
    result["oracle_solved"] = int(sum(corr.values()))
    return result


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=48, help="questions of the reduced world (default 48)")
    ap.add_argument("--windows", type=int, default=8, help="the oracle's max_windows (the demo's 8; the paper's 50)")
    ap.add_argument("--seed", type=int, default=None, help="world seed (default: the demo's held-out seed)")
    ap.add_argument("--out", type=Path, default=None, help="work folder (default: a temporary one)")
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="oracle-calls-") as tmp:
        out = args.out or Path(tmp)
        res = measure(out, questions=args.questions, windows=args.windows, seed=args.seed)
    for early in ("false", "true"):
        r = res[f"early_stop_{early}"]
        print(f"early_stop: {early:5}  oracle calls {r['oracle_calls']:6d}  all calls {r['all_calls']:6d}  "
              f"wall {r['wall_s']:6.1f} s")
    print(f"oracle calls: {res['ratio']:.2f}x fewer with early stop (target >= 3x); "
          f"{res['oracle_solved']} of {res['oracle_cells']} (sample, model) oracle cells solved")
    print(f"identical oracle correctness: {res['identical_oracle_correctness']}; "
          f"identical uniform-vs-oracle table: {res['identical_uniform_vs_oracle']}")
    if args.json:
        print(json.dumps(res))
    return 0 if res["identical_oracle_correctness"] and res["identical_uniform_vs_oracle"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
