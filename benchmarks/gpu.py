"""GPU benchmark (prepared for an H200 session; no network, no edits needed).

Run: ``python benchmarks/gpu.py --out gpu.json`` (about 5 minutes on an H200), or ``--tiny`` for a
CPU smoke test (seconds). Random weights of the real architectures, built from configs (no hub):

1. Frame scoring: the SigLIP2 so400m/16 @384 vision tower (the fixed-resolution SigLIP2
   checkpoints use the SigLIP architecture: 27 layers, width 1152, MLP 4304, 16 heads, patch 16),
   bf16, frames/s over a batch sweep (CUDA-event timed, after warm-up).
2. The decoder feeding it: tempcore's VideoReader at 10 fps, resized to 384x384, frames/s on this
   machine's CPUs, so the two can be compared (does decoding keep the GPU busy?).
3. Batched generation: Qwen2.5-VL-7B architecture (random weights, bf16), K=32 video frames per
   request (224x224 frames: 16x16 patches of 14 px, temporal patch 2, 2x2 merge -> 1024 video
   tokens), a 32-token prompt, greedy, 32 new tokens each; requests/s over a batch sweep.

Writes JSON (``--out``) with every figure, the device, versions and load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _sync(torch: Any, device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _timed(torch: Any, device: str, fn: Any, repeats: int) -> float:
    """Median seconds of ``fn()`` over ``repeats`` runs after one warm-up."""
    fn()
    _sync(torch, device)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        _sync(torch, device)
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]


def siglip_config(tiny: bool) -> Any:
    from transformers import SiglipVisionConfig

    if tiny:
        return SiglipVisionConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            patch_size=16, image_size=64,
        )
    return SiglipVisionConfig(
        hidden_size=1152, intermediate_size=4304, num_hidden_layers=27, num_attention_heads=16,
        patch_size=16, image_size=384,
    )


def bench_siglip(torch: Any, device: str, dtype: Any, tiny: bool, batches: list[int], repeats: int) -> list[dict]:
    from transformers import SiglipVisionModel

    cfg = siglip_config(tiny)
    with torch.device(device):
        model = SiglipVisionModel(cfg).to(dtype).eval()
    out = []
    for b in batches:
        x = torch.randn(b, 3, cfg.image_size, cfg.image_size, device=device, dtype=dtype)
        try:
            with torch.inference_mode():
                s = _timed(torch, device, lambda x=x: model(pixel_values=x).pooler_output, repeats)
        except torch.OutOfMemoryError as exc:  # a batch too large is recorded, not fatal
            out.append({"batch": b, "error": f"out of memory: {exc}"[:200]})
            break
        out.append({"batch": b, "seconds": s, "frames_per_s": b / s})
        print(f"siglip batch {b:5d}: {b / s:10.1f} frames/s", flush=True)
    return out


def bench_decode(tiny: bool) -> dict:
    from tempcore.video.decode import VideoReader
    from tempcore.video.synthetic import Scene, write_video

    size = (128, 72) if tiny else (640, 360)
    seconds = 2.0 if tiny else 30.0
    with tempfile.TemporaryDirectory(prefix="tempcore-gpu-bench-") as tmp:
        path = write_video(
            Path(tmp) / "scene.mp4", make_frame=Scene(size), fps=30, duration=seconds, size=size,
            codec="libx264", preset="veryfast", crf=23, gop=250,
        )
        target = (64, 64) if tiny else (384, 384)
        t = time.perf_counter()
        n = sum(len(b) for b in VideoReader(path, fps=10, size=target))
        s = time.perf_counter() - t
    print(f"decode: {n / s:.1f} frames/s at {target} (10 fps from 30 fps H.264, {os.cpu_count()} CPUs)", flush=True)
    return {"frames": n, "seconds": s, "frames_per_s": n / s, "size": list(target), "cpus": os.cpu_count()}


def qwen_config(tiny: bool) -> Any:
    from transformers import Qwen2_5_VLConfig

    if tiny:
        text = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, vocab_size=1024, rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]})
        vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64,
                      fullatt_block_indexes=[1])
        ids = dict(image_token_id=1000, video_token_id=1001, vision_start_token_id=1002, vision_end_token_id=1003,
                   bos_token_id=1, eos_token_id=2)
    else:  # Qwen2.5-VL-7B-Instruct
        text = dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                    num_key_value_heads=4, vocab_size=152064,
                    rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]})
        vision = dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, out_hidden_size=3584,
                      fullatt_block_indexes=[7, 15, 23, 31])
        ids = dict(image_token_id=151655, video_token_id=151656, vision_start_token_id=151652,
                   vision_end_token_id=151653)
    return Qwen2_5_VLConfig(text_config=text, vision_config=vision, **ids)


def bench_qwen(torch: Any, device: str, dtype: Any, tiny: bool, batches: list[int], k: int, new_tokens: int) -> list[dict]:
    from transformers import Qwen2_5_VLForConditionalGeneration

    cfg = qwen_config(tiny)
    with torch.device(device):
        model = Qwen2_5_VLForConditionalGeneration._from_config(cfg, dtype=dtype).eval()
    vc = cfg.vision_config
    patch, tpatch, merge = vc.patch_size, vc.temporal_patch_size, vc.spatial_merge_size
    side = 4 if tiny else 16  # patches per side: 16 x 14 px = 224 px frames
    t = k // tpatch
    n_video = t * side * side // (merge * merge)
    prompt = 8 if tiny else 32
    out = []
    for b in batches:
        ids = [cfg.vision_start_token_id] + [cfg.video_token_id] * n_video + [cfg.vision_end_token_id]
        ids += [5 + i for i in range(prompt)]
        input_ids = torch.tensor([ids] * b, device=device)
        pixels = torch.randn(b * t * side * side, 3 * tpatch * patch * patch, device=device, dtype=dtype)
        grid = torch.tensor([[t, side, side]] * b, device=device)

        def run(input_ids: Any = input_ids, pixels: Any = pixels, grid: Any = grid) -> Any:
            return model.generate(
                input_ids=input_ids, attention_mask=torch.ones_like(input_ids), pixel_values_videos=pixels,
                video_grid_thw=grid, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                pad_token_id=0, eos_token_id=None,
            )

        try:
            with torch.inference_mode():
                s = _timed(torch, device, run, 1 if tiny else 2)
        except torch.OutOfMemoryError as exc:
            out.append({"batch": b, "error": f"out of memory: {exc}"[:200]})
            break
        out.append({"batch": b, "seconds": s, "requests_per_s": b / s, "video_tokens": n_video,
                    "new_tokens": new_tokens})
        print(f"qwen2.5-vl batch {b:4d}: {b / s:8.2f} requests/s ({n_video} video tokens, K={k})", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="tiny configs on CPU: a smoke test")
    parser.add_argument("--out", default="gpu.json", help="JSON results file")
    parser.add_argument("--frames", type=int, default=32, help="K frames per generation request")
    args = parser.parse_args(argv)
    import torch

    device = "cuda" if torch.cuda.is_available() and not args.tiny else "cpu"
    if device == "cpu" and not args.tiny:
        # The full sizes (SigLIP2 so400m, a 7B-architecture VLM) are meant for a GPU; on a CPU machine
        # (`make bench` here) the script runs its tiny configs instead of building them.
        print("no CUDA device: running the --tiny smoke configuration (the full run needs a GPU)")
        args.tiny = True
    dtype = torch.bfloat16
    t0 = time.perf_counter()
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
        "torch": torch.__version__, "python": sys.version.split()[0], "tiny": args.tiny,
        "load_average": os.getloadavg(),
    }
    try:
        import transformers

        result["transformers"] = transformers.__version__
    except ImportError as exc:
        result["transformers"] = f"missing: {exc}"
    sweeps = ([1, 2], [1, 2]) if args.tiny else ([1, 8, 32, 64, 128, 256, 512], [1, 4, 8, 16, 32])

    def section(name: str, fn: Any) -> None:
        try:
            result[name] = fn()
        except Exception as exc:  # noqa: BLE001 - one failing section must not lose the others
            result[name] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
            print(f"{name} failed: {type(exc).__name__}: {exc}", flush=True)
        Path(args.out).write_text(json.dumps(result, indent=2))

    section("siglip", lambda: bench_siglip(torch, device, dtype, args.tiny, sweeps[0], 3 if args.tiny else 10))
    section("decode", lambda: bench_decode(args.tiny))
    if device == "cuda":
        torch.cuda.empty_cache()
    section("qwen", lambda: bench_qwen(torch, device, dtype, args.tiny, sweeps[1], args.frames,
                                       4 if args.tiny else 32))
    result["seconds"] = time.perf_counter() - t0
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out} ({result['seconds']:.0f} s)")
    failed = [k for k in ("siglip", "decode", "qwen") if isinstance(result[k], dict) and "error" in result[k]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
