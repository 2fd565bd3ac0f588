"""Videos scored at once (``score_samples(workers=N)``, what ``LocalExecutor`` does with
``SCORING_WORKERS``) vs one after the other, on small and on larger frames.

Two sets of videos, each scored with ``workers=1`` and ``workers=N`` in turn for ``--rounds``
rounds (interleaved; paired ratios, median printed), with one torch thread per worker as the demo
runs (``--torch-threads`` to change):

- ``world``: the first ``--videos`` videos of a generated world (48 x 48, 10 fps, 18 s) and the
  world's encoder (what ``tempcore demo`` scores);
- ``clips``: ``--clips`` H.264 clips of 640 x 360 at 30 fps (5 s, decoded at 10 fps) and a tiny
  random-weight SigLIP at 224 px (the real architecture and image processor): larger frames,
  decoded with FFmpeg's threads and the stage threads.

Every run's records must be the same (the same scores, the same order); the script exits 1 if not.

    PYTHONPATH=src python benchmarks/scoring_workers.py [--rounds 3] [--videos 60] [--clips 8] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def _siglip_224(folder: Path) -> Any:
    """A tiny random-weight SigLIP (2 + 2 layers, width 64) with the 224-px image processor, saved
    and loaded the way a checkpoint is."""
    import torch
    from transformers import SiglipConfig, SiglipImageProcessorPil, SiglipModel, SiglipTokenizer

    from helpers.tiny_encoders import sentencepiece_model
    from tempcore.encoders.hf import HFFrameTextEncoder

    torch.manual_seed(0)
    config = SiglipConfig(
        text_config={"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
                     "vocab_size": 160, "max_position_embeddings": 64, "bos_token_id": 1, "eos_token_id": 2,
                     "pad_token_id": 0},
        vision_config={"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
                       "image_size": 224, "patch_size": 16},
    )
    folder.mkdir(parents=True, exist_ok=True)
    SiglipModel(config).save_pretrained(folder)
    SiglipImageProcessorPil(size={"height": 224, "width": 224}).save_pretrained(folder)
    (folder / "spiece.model").write_bytes(sentencepiece_model())
    SiglipTokenizer(vocab_file=str(folder / "spiece.model"), model_max_length=64).save_pretrained(folder)
    return HFFrameTextEncoder.from_pretrained(str(folder), device="cpu")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--videos", type=int, default=60)
    ap.add_argument("--clips", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--torch-threads", type=int, default=1)
    args = ap.parse_args()
    import torch

    import tempcore.world  # noqa: F401 - the world encoder's alias
    from tempcore.encoders import load_encoder
    from tempcore.records import Sample
    from tempcore.run.frame_scoring import FrameScores, score_samples
    from tempcore.video.synthetic import Scene, write_video
    from tempcore.world import generate_world

    torch.set_num_threads(args.torch_threads)
    tmp = Path(tempfile.mkdtemp(prefix="scoring-workers-"))
    world = generate_world(tmp / "world", max(8, args.videos * 3), 9)
    world_samples = [s for s in world.samples()]
    wanted = sorted({s.video for s in world_samples})[: args.videos]
    world_samples = [s for s in world_samples if s.video in wanted]
    clips = tmp / "clips"
    for i in range(args.clips):
        write_video(clips / f"c{i}.mp4", make_frame=Scene(size=(640, 360), seed=i), fps=30, duration=5.0,
                    size=(640, 360))
    clip_samples = [Sample("clips", f"c{i}", f"c{i}.mp4", "what moves?", ("a", "b"), 0) for i in range(args.clips)]
    sets = {
        "world": (world_samples, load_encoder("tempcore-world", device="cpu"), world.root),
        "clips": (clip_samples, _siglip_224(tmp / "siglip"), clips),
    }
    print(f"cores: {os.cpu_count()}; torch threads: {args.torch_threads}; load: {os.getloadavg()[0]:.2f}")
    same = True
    for name, (samples, encoder, root) in sets.items():
        def score(workers: int, samples: Any = samples, encoder: Any = encoder, root: Path = root
                  ) -> tuple[float, list[tuple[str, str, bytes]]]:
            start = time.perf_counter()
            records = list(score_samples(samples, encoder, "qa", fps=10.0, video_root=root, workers=workers))
            wall = time.perf_counter() - start
            return wall, [(r.sample_id, r.mode, np.asarray(r.cos).tobytes()) for r in records
                          if isinstance(r, FrameScores)]

        score(1)  # warm-up: imports, the first forward pass
        ratios = []
        reference = None
        for i in range(args.rounds):
            one, r1 = score(1)
            many, rn = score(args.workers)
            reference = reference or r1
            same = same and r1 == reference and rn == reference
            ratios.append(one / many)
            print(f"{name} ({len({s.video for s in samples})} videos), round {i + 1}: one at a time {one:.2f} s, "
                  f"{args.workers} at once {many:.2f} s: {one / many:.2f}x; load {os.getloadavg()[0]:.2f}")
        print(f"{name}: median {statistics.median(ratios):.2f}x faster with workers={args.workers}")
    print(f"every run's records the same: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
