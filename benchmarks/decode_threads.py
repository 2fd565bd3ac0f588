"""Small frames: one decoding thread and inline scoring stages vs FFmpeg's threading and stage threads.

``threads=0`` (automatic) decodes and converts frames of at most ``SMALL_FRAME_PIXELS`` (320 x 240)
single-threaded, and :func:`tempcore.run.frame_scoring.frame_embeddings` runs its stages in the calling thread
for them (issue 18). This prints, in one run:

- decoding (``VideoReader``, 10 fps from 5 s H.264 clips at 30 fps) per frame size: automatic now vs
  FFmpeg's frame threading + swscale's pool (what ``threads=0`` meant before, forced here by setting
  ``SMALL_FRAME_PIXELS = 0``) vs one thread; best of ``--rounds``, interleaved;
- with ``--scoring``: frame scoring of the first ``--videos`` videos of a generated world (48 x 48,
  the world's encoder, one torch thread) now vs before (FFmpeg threading, decoder and preprocessing
  threads); the median of the paired ratios over ``--rounds``.

    PYTHONPATH=src python benchmarks/decode_threads.py [--rounds 3] [--scoring --videos 40]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

SIZES = ((48, 48), (96, 96), (160, 120), (320, 240), (640, 360), (1280, 720))


def _read(path: Path, threads: int) -> float:
    from tempcore.video.decode import VideoReader

    start = time.perf_counter()
    for _batch in VideoReader(path, 10.0, threads=threads):
        pass
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scoring", action="store_true")
    ap.add_argument("--videos", type=int, default=40)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import tempcore.video.types as video
    from tempcore.video.synthetic import Scene, write_video

    bound = video.SMALL_FRAME_PIXELS
    tmp = Path(tempfile.mkdtemp(prefix="decode-threads-"))
    print(f"cores: {os.cpu_count()}; load: {os.getloadavg()[0]:.2f}; SMALL_FRAME_PIXELS = {bound}")
    for w, h in SIZES:
        path = write_video(tmp / f"{w}x{h}.mp4", make_frame=Scene(size=(w, h), seed=1), fps=30, duration=5.0,
                           size=(w, h))
        best = {"auto": float("inf"), "ffmpeg": float("inf"), "one": float("inf")}
        for _ in range(args.rounds):
            best["auto"] = min(best["auto"], _read(path, 0))
            video.SMALL_FRAME_PIXELS = 0
            best["ffmpeg"] = min(best["ffmpeg"], _read(path, 0))
            video.SMALL_FRAME_PIXELS = bound
            best["one"] = min(best["one"], _read(path, 1))
        print(f"{w:>5} x {h:<4} automatic {1e3 * best['auto']:7.1f} ms ({'one thread' if w * h <= bound else 'FFmpeg'})"
              f"  FFmpeg threading {1e3 * best['ffmpeg']:7.1f} ms  one thread {1e3 * best['one']:7.1f} ms"
              f"  -> FFmpeg / one: {best['ffmpeg'] / best['one']:.2f}x")
    if args.scoring:
        import torch

        import tempcore.world  # noqa: F401 - the world encoder's alias
        from tempcore.encoders import load_encoder
        from tempcore.run.frame_scoring import frame_embeddings
        from tempcore.world import generate_world

        torch.set_num_threads(1)
        world = generate_world(tmp / "world", max(8, args.videos * 3), 9)
        files = sorted((world.root / "videos").glob("*.mp4"))[: args.videos]
        encoder = load_encoder("tempcore-world", device="cpu")
        frame_embeddings(files[0], encoder, fps=10.0)

        def score() -> float:
            start = time.perf_counter()
            for f in files:
                frame_embeddings(f, encoder, fps=10.0)
            return time.perf_counter() - start

        ratios = []
        for i in range(args.rounds):
            now = score()
            video.SMALL_FRAME_PIXELS = 0
            before = score()
            video.SMALL_FRAME_PIXELS = bound
            ratios.append(before / now)
            print(f"scoring {len(files)} world videos, round {i + 1}: now {now:.2f} s, before {before:.2f} s: "
                  f"{before / now:.2f}x")
        print(f"scoring: median {statistics.median(ratios):.2f}x faster than before "
              f"(load {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
