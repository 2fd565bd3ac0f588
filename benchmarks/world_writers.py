"""Writing a world's videos: two forked processes (what ``write_world`` does while this process runs
no other thread) vs two threads (what it does otherwise), interleaved ``--rounds`` times.

The demo's world (400 questions, 150 videos of 48 x 48 at 10 fps). Printed per round: the wall time
of each and the ratio threads / processes; then the median ratio, and whether every video is the
same bytes every way (it must be: each x264 encoder is single-threaded).

    PYTHONPATH=src python benchmarks/world_writers.py [--questions 400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from tempcore.demo import HELD_OUT_SEED
    from tempcore.world.generator import plan_world, write_world

    world = plan_world(args.questions, HELD_OUT_SEED)
    tmp = Path(tempfile.mkdtemp(prefix="world-writers-"))
    print(f"world: {args.questions} questions, {len(world.scenes)} videos; cores: {os.cpu_count()}; "
          f"load: {os.getloadavg()[0]:.2f}")

    def write(where: Path, in_threads: bool) -> tuple[float, dict[str, str]]:
        hold = threading.Event()
        other = threading.Thread(target=hold.wait) if in_threads else None  # another thread: no fork
        if other is not None:
            other.start()
        try:
            start = time.perf_counter()
            root = write_world(world, where, writers=2).root
            wall = time.perf_counter() - start
        finally:
            hold.set()
            if other is not None:
                other.join()
        return wall, {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (root / "videos").glob("*.mp4")}

    ratios = []
    reference = None
    same = True
    for i in range(args.rounds):
        wt, dt = write(tmp / f"threads-{i}", True)
        wp, dp = write(tmp / f"processes-{i}", False)
        reference = reference or dt
        same = same and dt == reference and dp == reference
        ratios.append(wt / wp)
        print(f"round {i + 1}: threads {wt:.2f} s, processes {wp:.2f} s: {wt / wp:.2f}x; load {os.getloadavg()[0]:.2f}")
    print(f"median over {args.rounds} rounds: {statistics.median(ratios):.2f}x faster in processes")
    print(f"every video the same bytes every way: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
