"""Time the run's identity check (:func:`tempcore.run.resume._check_identity`) on a large store.

A store of ``--samples`` x ``--windows`` oracle predictions of one model (K = 32 frames each, every
row matching its planned WorkItem, as after an identical rerun) is built once in ``--store``; the
check is then timed ``--repeat`` times (median and min printed). This is what a rerun pays before
any model is loaded: one SQLite read of the stored rows of the planned keys and, per row, the
comparison of its fingerprints and of the frames it was shown with the plan.

    PYTHONPATH=src python benchmarks/identity_check.py --store /tmp/identity.sqlite
"""

from __future__ import annotations

import argparse
import statistics
import time
import types
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, required=True, help="the store (built when missing)")
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--windows", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from tempcore.prompts import prompt_hash, render_prompt
    from tempcore.records import Condition, FrameSet, Prediction, Sample
    from tempcore.run.executor import Identity
    from tempcore.run.planning import BenchmarkPlan, WorkItem
    from tempcore.run.resume import _check_identity
    from tempcore.run.store import RunStore

    k = 32
    items = []
    for s in range(args.samples):
        sample = Sample(benchmark="b", sample_id=f"s{s:05d}", video=f"v{s}.mp4",
                        question=f"What happens in video {s} after the man opens the door?",
                        options=("he sits", "he leaves", "he waves", "he sings"), answer=s % 4)
        for w in range(args.windows):
            idx = tuple(range(w * k, w * k + k))
            items.append(WorkItem(sample, Condition("oracle", k=k, window=w), FrameSet(idx, tuple(i / 10 for i in idx), k),
                                  sample.options, (0, 1, 2, 3), sample_hash=f"sh{s}", n_frames=args.windows * k))
    if not args.store.exists():
        with RunStore.open(args.store) as store:
            run = store.start_run({})
            preds = [Prediction(benchmark="b", sample_id=it.sample.sample_id, model="m", condition=it.condition.key,
                                response="A", answer=it.sample.answer, correct=1, frames=it.frames,
                                prompt_hash=prompt_hash(render_prompt(it.sample.question, it.options, "default",
                                                                      timestamps=it.frames.timestamps)),
                                target=it.sample.answer, sample_hash=it.sample_hash, model_fingerprint="mf")
                     for it in items]
            for i in range(0, len(preds), 5000):
                store.put(preds[i:i + 5000], run)
    spec = types.SimpleNamespace(display_name="m", prompt_template="default")
    identity = (Identity("mf"), {"prompt_template": {"name": "default"}})
    plans = [BenchmarkPlan(name="b", samples=[], items=items, video_root=None)]
    times = []
    with RunStore.open(args.store) as store:
        for _ in range(args.repeat):
            t = time.perf_counter()
            replace = _check_identity(store, plans, items, [(spec, "generate")], [identity], recompute=True)
            times.append(time.perf_counter() - t)
    assert replace == {"m": set()}, {m: len(v) for m, v in replace.items()}
    print(f"identity check of {len(items):,} stored predictions: median {statistics.median(times):.2f} s, "
          f"min {min(times):.2f} s ({', '.join(f'{x:.2f}' for x in times)})")


if __name__ == "__main__":
    main()
