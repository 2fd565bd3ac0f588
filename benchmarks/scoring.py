"""Scoring benchmark: end-to-end frame scoring vs decode-only and encode-only, and rescoring from cache.

Run: ``.venv/bin/python benchmarks/scoring.py [--quick] [--device cuda] [--dtype bfloat16]``

Encoder: the real SigLIP architecture at the size of ``google/siglip-base-patch16-224`` (ViT-B/16,
224 px, 12 + 12 layers of width 768, ~203M parameters), built in memory with random weights (no
download), with the transformers SigLIP image processor and a SentencePiece ``SiglipTokenizer``.
Videos: two realistic H.264 clips (640x360, 30 fps, moving textured scene with grain; 10 s each,
4 s with --quick), decoded at 10 fps.

1. Throughput (frames/s over all videos, wall time):
   - ``decode``: ``VideoReader(path, fps=10)`` only;
   - ``encode``: ``encoder.encode_images(frames)`` on the same, already decoded frames
     (preprocessing + forward pass), measured before and after the end-to-end run (mean of two);
   - ``end-to-end``: ``score_samples(..., mode="q", cache=<empty>)``: decoding in a background thread,
     preprocessing in another, the encoder on the current batch, cache writes and the text encoding.
   Target: end-to-end >= 0.85 x min(decode, encode) (the stages overlap).
2. Rescoring: the same samples in the other text mode (``qa``) with the now-filled cache: only the
   texts are encoded (repeated ``--rescore-repeats`` times, median: one short run is at the mercy of
   a busy machine). Target: first pass / rescoring wall time >= 50. The ratio grows with the frames
   per question: a SigLIP text is 64 tokens against a 224-px frame's 197, but a batch of a few
   short texts runs less efficiently, so on 2 CPU threads one text costs about 0.5 frame and the
   ratio is about 2 x frames-per-question. Samples: 2 questions per 10 s clip (50 frames per
   question), 1 per 4 s clip with --quick (40). Real benchmark videos (minutes at 10 fps, 1-15
   questions each) have hundreds to thousands of frames per question.

Ratios come from one run on the same machine; PASS / FAIL per target, exit code 1 on any FAIL.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

FPS = 10.0
THROUGHPUT_TARGET = 0.85
RESCORE_TARGET = 50.0


def build_encoder(device: str | None, dtype: str | None, batch_size: int, tmp: Path):
    """SigLIP base-patch16-224 architecture, random weights, wrapped as tempcore's HF encoder."""
    import torch
    from transformers import SiglipConfig, SiglipImageProcessorPil, SiglipModel, SiglipTokenizer

    from helpers.tiny_encoders import sentencepiece_model
    from tempcore.encoders.hf import HFFrameTextEncoder, resolve_device, resolve_dtype

    torch.manual_seed(0)
    config = SiglipConfig()  # the defaults are siglip-base-patch16-224: 768 wide, 12 + 12 layers, 224 px
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    model = SiglipModel(config).to(dev, dt).eval()
    (tmp / "spiece.model").write_bytes(sentencepiece_model())
    tokenizer = SiglipTokenizer(vocab_file=str(tmp / "spiece.model"), model_max_length=64)
    processor = SiglipImageProcessorPil(size={"height": 224, "width": 224})
    n_params = sum(p.numel() for p in model.parameters())
    enc = HFFrameTextEncoder(
        model=model,
        tokenizer=tokenizer,
        image_processor=processor,
        family="siglip",
        name="random-siglip-base-patch16-224",
        device=dev,
        dtype=dt,
        max_length=64,
        fingerprint=f"benchmark-random-siglip-base-{dt}",
        batch_size=batch_size,
    )
    return enc, n_params


def make_videos(folder: Path, seconds: float) -> list[Path]:
    from tempcore.video.synthetic import Scene, write_video

    return [
        write_video(
            folder / f"clip{i}.mp4",
            make_frame=Scene((640, 360), seed=i),
            fps=30,
            duration=seconds,
            size=(640, 360),
        )
        for i in range(2)
    ]


def decode_all(paths: list[Path], batch_size: int) -> tuple[list[np.ndarray], float]:
    from tempcore.video.decode import VideoReader

    t0 = time.perf_counter()
    frames = [
        np.concatenate([b.frames for b in VideoReader(p, fps=FPS, batch_size=batch_size)]) for p in paths
    ]
    return frames, time.perf_counter() - t0


def encode_all(encoder, frames: list[np.ndarray]) -> float:
    t0 = time.perf_counter()
    for f in frames:
        encoder.encode_images(f)
    return time.perf_counter() - t0


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 s clips and 1 question per clip")
    parser.add_argument("--seconds", type=float, help="clip length in seconds (overrides --quick)")
    parser.add_argument("--device", help="torch device (default: automatic)")
    parser.add_argument("--dtype", help="float32 / bfloat16 / float16 (default: automatic)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument(
        "--rescore-repeats", type=int, default=5, help="rescoring runs (cheap; the median is compared)"
    )
    parser.add_argument(
        "--questions-per-video", type=int, help="samples per video (default: 2; 1 with --quick)"
    )
    args = parser.parse_args(argv)
    seconds = args.seconds or (4.0 if args.quick else 10.0)
    per_video = args.questions_per_video or (1 if args.quick else 2)

    import torch

    from tempcore.encoders.cache import EmbeddingCache
    from tempcore.records import Sample
    from tempcore.run.frame_scoring import FrameScores, score_samples

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        t0 = time.perf_counter()
        encoder, n_params = build_encoder(args.device, args.dtype, args.batch_size, tmp)
        paths = make_videos(tmp, seconds)
        print(
            f"encoder: SigLIP base-p16-224 architecture, {n_params / 1e6:.0f}M parameters, random weights, "
            f"{encoder.device} {str(encoder.dtype).removeprefix('torch.')}, batch {args.batch_size}, "
            f"torch threads {torch.get_num_threads()}"
        )
        print(
            f"videos: 2 x {seconds:g} s, 640x360, 30 fps H.264; decoded at {FPS:g} fps (setup {time.perf_counter() - t0:.1f} s)"
        )

        frames, t_decode = decode_all(paths, args.batch_size)
        n = sum(len(f) for f in frames)
        encoder.encode_images(frames[0][:2])  # warm-up (allocations, kernels)
        t_enc_a = encode_all(encoder, frames)

        questions = ["what is the man holding?", "where does the red car go?", "who opens the door?"]
        questions = [questions[j % len(questions)] + " " * (j // len(questions)) for j in range(per_video)]
        options = ("a blue cup in the kitchen", "a red ball on the street")
        samples = [
            Sample("bench", f"{p.stem}-{j}", p.name, q, options, j % 2)
            for p in paths
            for j, q in enumerate(questions)
        ]
        cache = EmbeddingCache(tmp / "cache")
        t0, c0 = time.perf_counter(), time.process_time()
        first = list(score_samples(samples, encoder, "q", fps=FPS, cache=cache, video_root=tmp))
        t_first, cpu_first = time.perf_counter() - t0, time.process_time() - c0
        t_enc_b = encode_all(encoder, frames)
        rescore_times, rescore_cpu = [], []
        images_before = encoder.stats.images
        for _ in range(args.rescore_repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            second = list(score_samples(samples, encoder, "qa", fps=FPS, cache=cache, video_root=tmp))
            rescore_times.append(time.perf_counter() - t0)
            rescore_cpu.append(time.process_time() - c0)
        t_rescore = statistics.median(rescore_times)
        frames_reencoded = encoder.stats.images - images_before

    ok_items = all(isinstance(r, FrameScores) for r in first + second) and len(first) == len(second) == len(
        samples
    )
    frames_scored = sum(len(r) for r in first if isinstance(r, FrameScores)) // len(questions)
    if not ok_items or frames_scored != n:
        print(f"FAIL: scoring did not cover every frame ({frames_scored} of {n}) or a sample failed")
        return 1

    decode_fps = n / t_decode
    encode_fps = 2 * n / (t_enc_a + t_enc_b)
    e2e_fps = n / t_first
    slower = min(decode_fps, encode_fps)
    r1 = e2e_fps / slower
    r2 = t_first / t_rescore
    print(f"frames: {n}, samples: {len(samples)} ({n / len(samples):.0f} frames per text)")
    print(f"decode-only      {decode_fps:9.1f} frames/s")
    print(f"encode-only      {encode_fps:9.1f} frames/s  (runs: {n / t_enc_a:.1f}, {n / t_enc_b:.1f})")
    print(
        f"end-to-end       {e2e_fps:9.1f} frames/s  (decode + encode overlapped, cache write, {len(samples)} texts)"
    )
    print(
        f"end-to-end / min(decode, encode) = {r1:.3f}  "
        f"(target >= {THROUGHPUT_TARGET})  {verdict(r1 >= THROUGHPUT_TARGET)}"
    )
    runs = ", ".join(f"{t * 1000:.0f}" for t in rescore_times)
    print(
        f"first pass {t_first:.2f} s; rescoring in the other mode (cache hits, texts only): "
        f"median {t_rescore * 1000:.1f} ms of {len(rescore_times)} runs ({runs} ms)"
    )
    print(
        f"  frames encoded while rescoring: {frames_reencoded}; CPU seconds (all threads): first pass "
        f"{cpu_first:.2f}, rescoring median {statistics.median(rescore_cpu):.3f} "
        f"(ratio {cpu_first / statistics.median(rescore_cpu):.1f}x, informational)"
    )
    print(
        f"first pass / rescoring = {r2:.1f}x  (target >= {RESCORE_TARGET:g}x)  {verdict(r2 >= RESCORE_TARGET)}"
    )
    return 0 if r1 >= THROUGHPUT_TARGET and r2 >= RESCORE_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
