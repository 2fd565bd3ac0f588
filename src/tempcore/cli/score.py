"""``tempcore score``: Eq. 1 frame scores of every sample of a benchmark, per text mode, as JSONL.

    tempcore score --benchmark NAME --annotations PATH --video-root DIR --encoder ID
                   [--mode q|qa|both] [--fps 10] [--cache DIR | --no-cache] [--out FILE]
                   [--device D] [--dtype T] [--batch-size N] [--limit N] [--skip-invalid]
                   [-o KEY=VALUE ...] [--revision REV] [--trust-remote-code] [--no-progress]

Frame embeddings go to the embedding cache (``--cache``, default ``$TEMPCORE_CACHE`` or
``~/.cache/tempcore/embeddings``), so a rerun, the other text mode, or another benchmark over the
same videos only encodes text. A video that fails to decode is listed with its error at the end and
its samples are skipped; every other sample is written.

Output (``--out FILE``, default standard output): JSON Lines, one object per (sample, mode), written
as each sample is done:

    benchmark       str     benchmark name (Sample.benchmark)
    sample_id       str     the benchmark's sample id
    mode            str     "q" (t = question) or "qa" (t = question + " " + correct option text)
    encoder         str     encoder id as given to --encoder
    fps             float   decoding rate of the frames
    text_truncated  bool    the text had more tokens than the encoder's limit and was cut
    text_tokens     int     the text's token count before cutting (special tokens included)
    frames          int     L, the number of decoded frames
    timestamps      [float] L presentation times in seconds (frame i is position i, 0..L-1)
    cos             [float] L cosine similarities of frame and text embeddings (float32 values)
    s               [float] L Eq. 1 scores sigmoid(cos) (plain sigmoid; no learned scale / bias)

``tempcore select --scores FILE --sample-id ID --mode qa`` selects frames from one of these lines.

Progress and the final summary (samples scored, cache hits / misses, truncated texts, failed videos
with their errors, invalid annotation rows skipped) go to standard error. Exit status: 0 when every
sample was scored, 1 when any could not be (the others are still written) or on a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from tempcore.cli._common import add_progress_arguments, parse_key_values, progress_wanted


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "score",
        help="score every frame of a benchmark's videos against its questions (Eq. 1), as JSONL",
        description=(
            "Decode each sample's video at --fps, embed every frame (cached), and write "
            "s = sigmoid(cos(E_V(frame), E_T(text))) per frame for the Q and/or QA text mode."
        ),
    )
    p.add_argument(
        "--benchmark", required=True, metavar="NAME", help="benchmark name (tempcore benchmarks list)"
    )
    p.add_argument("--annotations", required=True, metavar="[NAME=]PATH",
                   help="annotation file or folder (a bare PATH is --benchmark's; NAME=PATH must name it)")
    p.add_argument("--video-root", metavar="DIR", help="folder the videos are relative to")
    p.add_argument(
        "--encoder",
        default="siglip2",
        metavar="ID",
        help="alias (siglip2, siglip, clip), hub id or checkpoint folder (default: siglip2)",
    )
    p.add_argument("--mode", choices=("q", "qa", "both"), default="both", help="text mode(s) (default: both)")
    p.add_argument("--fps", type=float, default=10.0, help="decoding rate in frames per second (default: 10)")
    p.add_argument(
        "--cache",
        metavar="DIR",
        help="embedding cache (default: $TEMPCORE_CACHE or ~/.cache/tempcore/embeddings)",
    )
    p.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
    p.add_argument("--out", metavar="FILE", default="-", help="JSONL output (default: standard output)")
    p.add_argument("--device", help="torch device (default: cuda, else mps, else cpu)")
    p.add_argument("--dtype", help="float32, bfloat16 or float16 (default: bf16/fp16 on GPU, fp32 on CPU)")
    p.add_argument(
        "--batch-size", type=int, default=32, metavar="N", help="frames per encoder batch (default: 32)"
    )
    p.add_argument("--limit", type=int, metavar="N", help="score only the first N samples")
    p.add_argument("--skip-invalid", action="store_true", help="skip invalid annotation rows and report them")
    p.add_argument(
        "-o",
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="loader option, e.g. video_map=PATH (nextqa), task_table=FILE (mvbench)",
    )
    p.add_argument("--revision", help="hub revision (branch, tag or commit) of the encoder")
    p.add_argument("--trust-remote-code", action="store_true", help="allow code shipped with the checkpoint")
    add_progress_arguments(p)
    p.set_defaults(func=score_command)


@contextmanager
def _output(path: str) -> Iterator[IO[str]]:
    if path == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    import io

    from tempcore.tidy.formats import atomic_output

    with atomic_output(Path(path).expanduser()) as raw:  # a killed run leaves no partial file
        f = io.TextIOWrapper(raw, encoding="utf-8")
        yield f
        f.flush()
        f.detach()


def score_command(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from tempcore.cli._common import load_annotations, parse_annotations
    from tempcore.encoders import load_encoder
    from tempcore.encoders.cache import EmbeddingCache
    from tempcore.run.frame_scoring import FrameScores, ScoreFailure, parse_modes, score_samples

    if args.fps <= 0:
        print("tempcore score: error: --fps must be positive", file=sys.stderr)
        return 2
    if args.batch_size < 1 or (args.limit is not None and args.limit < 0):
        print("tempcore score: error: --batch-size must be >= 1 and --limit >= 0", file=sys.stderr)
        return 2
    modes = parse_modes(args.mode)
    # one value: a bare PATH, or NAME=PATH naming --benchmark (anything else is an error)
    path = parse_annotations([args.annotations], args.benchmark)[args.benchmark]
    result = load_annotations(
        args.benchmark,
        path,
        video_root=args.video_root,
        skip_invalid=args.skip_invalid,
        options=parse_key_values(args.option),
    )
    samples = result.samples if args.limit is None else result.samples[: args.limit]
    video_root = result.video_root if result.video_root is not None else args.video_root
    cache = None if args.no_cache else EmbeddingCache(args.cache)
    from tempcore.encoders.hf import progress_bars

    with progress_bars(progress_wanted(args)):
        encoder = load_encoder(
            args.encoder,
            device=args.device,
            dtype=args.dtype,
            revision=args.revision,
            trust_remote_code=args.trust_remote_code,
            batch_size=args.batch_size,
        )

    failures: list[ScoreFailure] = []
    scored: set[str] = set()
    rows = truncated_texts = 0
    truncated_videos: set[str] = set()
    bar = tqdm(total=len(samples), unit="sample", file=sys.stderr, disable=not progress_wanted(args), desc="scoring")
    try:
        with _output(args.out) as out:
            for item in score_samples(
                samples,
                encoder,
                modes,
                fps=args.fps,
                cache=cache,
                video_root=video_root,
                batch_size=args.batch_size,
                on_sample=lambda _s: bar.update(1),
            ):
                if isinstance(item, ScoreFailure):
                    failures.append(item)
                    continue
                assert isinstance(item, FrameScores)
                out.write(json.dumps(item.to_json(), ensure_ascii=False) + "\n")
                out.flush()
                rows += 1
                scored.add(item.sample_id)
                truncated_texts += int(item.text_truncated)
                if item.truncated_video:
                    truncated_videos.add(item.video)
    finally:
        bar.close()

    _summary(
        benchmark=args.benchmark,
        n_samples=len(samples),
        scored=len(scored),
        rows=rows,
        modes=modes,
        out=args.out,
        cache=cache,
        encoder=encoder,
        truncated_texts=truncated_texts,
        truncated_videos=sorted(truncated_videos),
        failures=failures,
        invalid=len(result.invalid),
        skipped=len(result.skipped),
    )
    return 1 if failures else 0


def _summary(
    *,
    benchmark: str,
    n_samples: int,
    scored: int,
    rows: int,
    modes: tuple[str, ...],
    out: str,
    cache: Any,
    encoder: Any,
    truncated_texts: int,
    truncated_videos: list[str],
    failures: list[Any],
    invalid: int,
    skipped: int,
) -> None:
    err = sys.stderr
    dest = "standard output" if out == "-" else out
    print(
        f"tempcore score: {benchmark}: {scored} of {n_samples} samples scored "
        f"({rows} rows, modes {', '.join(modes)}) -> {dest}",
        file=err,
    )
    stats = getattr(encoder, "stats", None)
    if stats is not None:
        print(f"  encoder {encoder.name}: {stats.images} frames and {stats.texts} texts encoded", file=err)
    if cache is not None:
        line = f"  cache {cache.root}: {cache.hits} hits, {cache.misses} misses"
        if cache.damaged:
            line += f", {cache.damaged} damaged entries recomputed"
        print(line, file=err)
    else:
        print("  cache: off", file=err)
    if truncated_texts:
        print(f"  {truncated_texts} texts were longer than the encoder's limit and were truncated", file=err)
    if truncated_videos:
        print(f"  {len(truncated_videos)} videos decoded only partly (truncated or damaged):", file=err)
        for v in truncated_videos:
            print(f"    {v}", file=err)
    if invalid or skipped:
        print(
            f"  annotation rows not loaded: {invalid} invalid (skipped), {skipped} skipped by the loader",
            file=err,
        )
    if failures:
        by_video: dict[tuple[str, str], list[str]] = {}
        for f in failures:
            by_video.setdefault((f.video, f.error), []).append(f.sample_id)
        print(f"  {len(failures)} failures ({len(by_video)} distinct video / error):", file=err)
        for (video, error), ids in by_video.items():
            shown = ", ".join(ids[:5]) + (f", ... ({len(ids)} samples)" if len(ids) > 5 else "")
            print(f"    {video}: {error}  [samples: {shown}]", file=err)
