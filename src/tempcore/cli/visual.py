"""``tempcore visual build tfr|vfp|cmd ...`` and ``tempcore visual score --predictions FILE``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "visual",
        help="visual answer options (TFR, VFP, CMD): build questions, score predictions",
        description="Questions whose options are frame sequences (paper 002): build them from annotations, "
        "score a model's predictions on them.",
    )
    sub = parser.add_subparsers(dest="visual_command", metavar="ACTION")
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])

    build = sub.add_parser("build", help="build TFR / VFP / CMD questions into DIR/annotations.jsonl")
    bsub = build.add_subparsers(dest="visual_task", metavar="TASK")
    build.set_defaults(func=lambda args: (build.print_help(), 2)[1])

    tfr = bsub.add_parser("tfr", help="temporal frame retrieval from action annotations")
    tfr.add_argument("--annotations", required=True, type=Path,
                     help="Charades CSV (its 'actions' column) or JSONL rows {video, events: [{label, start, end}]}")
    tfr.add_argument("--classes", type=Path, help="Charades class file (with a CSV)")
    tfr.add_argument("--video-root", required=True, type=Path, help="folder the videos are relative to")
    tfr.add_argument("--out", required=True, type=Path, help="output folder")
    tfr.add_argument("--frames-per-option", type=int, default=8)
    tfr.add_argument("--min-duration", type=float, default=1.0, help="shortest kept action, s (inclusive)")
    tfr.add_argument("--max-duration", type=float, default=5.0, help="longest kept action, s (inclusive)")
    tfr.add_argument("--no-balance", action="store_true", help="keep every before / after question")
    tfr.add_argument("--no-text-control", action="store_true", help="do not write the text-option control")
    tfr.add_argument("--seed", type=int, default=0)
    tfr.add_argument("--json", action="store_true", help="print the build summary as JSON")
    tfr.set_defaults(func=_tfr)

    vfp = bsub.add_parser("vfp", help="video future prediction from a folder of clips or frame folders")
    vfp.add_argument("--video-root", required=True, type=Path, help="folder of clips (files or frame folders)")
    vfp.add_argument("--out", required=True, type=Path)
    vfp.add_argument("--context-frames", type=int, default=8)
    vfp.add_argument("--future-frames", type=int, default=8)
    vfp.add_argument("--folder-fps", type=float, default=3.0, help="rate of frame-folder images")
    vfp.add_argument("--captions", type=Path, help="JSON {clip: {option type: text}}: writes the text control")
    vfp.add_argument("--seed", type=int, default=0)
    vfp.add_argument("--json", action="store_true")
    vfp.set_defaults(func=_vfp)

    cmd = bsub.add_parser("cmd", help="causal memory distortion stimuli from a per-video annotation")
    cmd.add_argument("--annotations", required=True, type=Path,
                     help="JSONL rows {video, contact, excise: [s, e], unrelated: [s, e], segment?, contact_label?}")
    cmd.add_argument("--video-root", required=True, type=Path)
    cmd.add_argument("--out", required=True, type=Path, help="output folder (the stimuli's video root)")
    cmd.add_argument("--tolerance", type=float, default=1.0, help="time matching of the stimuli, s")
    cmd.add_argument("--segments", type=int, default=4, help="pieces of the scrambled stimulus")
    cmd.add_argument("--no-text-control", action="store_true")
    cmd.add_argument("--seed", type=int, default=0)
    cmd.add_argument("--json", action="store_true")
    cmd.set_defaults(func=_cmd)

    score = sub.add_parser("score", help="accuracy, intervals, SDT, perplexity, errors by distractor, gaps")
    score.add_argument("--predictions", required=True, type=Path, help="tidy predictions table, a run store (.sqlite) or a run folder")
    score.add_argument("--annotations", type=Path, action="append",
                       help="built annotations.jsonl (option provenance); repeat for several builds. "
                       "Default: annotations.jsonl beside the predictions")
    score.add_argument("--unit", choices=("question", "video"), default="question", help="bootstrap resampling unit")
    score.add_argument("--n-boot", type=int, default=10_000)
    score.add_argument("--seed", type=int, default=0)
    score.add_argument("--correction", choices=("extreme", "always", "none"), default="extreme",
                       help="log-linear correction of the SDT rates: when a rate is 0 or 1 (default), always, never")
    score.add_argument("--json", action="store_true")
    score.set_defaults(func=_score)


def _print(summary: dict[str, Any], as_json: bool) -> int:
    if as_json:
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
    else:
        for k, v in summary.items():
            print(f"{k:18} {v}")
    return 0


def _tfr(args: argparse.Namespace) -> int:
    from tempcore.visual.tfr import build_tfr, read_annotations

    videos = read_annotations(args.annotations, args.classes)
    return _print(build_tfr(videos, args.out, video_root=args.video_root, seed=args.seed,
                            frames_per_option=args.frames_per_option, min_duration=args.min_duration,
                            max_duration=args.max_duration, balance=not args.no_balance,
                            text_control=not args.no_text_control, source=str(args.annotations)), args.json)


def _vfp(args: argparse.Namespace) -> int:
    from tempcore.visual.vfp import build_vfp

    return _print(build_vfp(args.video_root, args.out, seed=args.seed, context_frames=args.context_frames,
                            future_frames=args.future_frames, folder_fps=args.folder_fps,
                            captions=args.captions), args.json)


def _cmd(args: argparse.Namespace) -> int:
    from tempcore.visual.cmd import build_cmd

    return _print(build_cmd(args.annotations, args.video_root, args.out, seed=args.seed,
                            tolerance=args.tolerance, n_segments=args.segments,
                            text_control=not args.no_text_control), args.json)


def _pct_interval(interval: Any) -> str:
    """``[41.2, 58.8]%``: an interval in percent, as the accuracy beside it (``n/a`` when undefined)."""
    if not interval or any(v is None for v in interval):
        return "n/a"
    lo, hi = interval
    return f"[{100 * lo:.1f}, {100 * hi:.1f}]%"


def _interval(interval: Any) -> str:
    """``[-0.120, 0.034]``: an interval of differences (``n/a`` when undefined)."""
    if not interval or any(v is None for v in interval):
        return "n/a"
    return f"[{interval[0]:.3f}, {interval[1]:.3f}]"


def _score(args: argparse.Namespace) -> int:
    from tempcore.cli._common import read_predictions_arg
    from tempcore.visual.scoring import VisualScoreError, samples_from_annotations, score_predictions

    paths = args.annotations or [args.predictions.parent / "annotations.jsonl"]
    samples: dict[str, Any] = {}
    for p in paths:
        if not Path(p).is_file():
            raise VisualScoreError(f"{p}: no such annotations file (pass --annotations DIR/annotations.jsonl)")
        samples.update(samples_from_annotations(p))
    table = read_predictions_arg(Path(args.predictions))
    result = score_predictions(table, samples, unit=args.unit, n_boot=args.n_boot, seed=args.seed,
                               correction=args.correction)
    if args.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
        return 0
    for g in result["groups"]:
        acc = "n/a" if g["accuracy"] is None else f"{100 * g['accuracy']:.1f}%"
        line = (f"{g['model']:20} {g['task']:4} {g['options']:6} n={g['n']:<5} acc={acc} "
                f"wilson={_pct_interval(g['wilson'])} bootstrap={_pct_interval(g['bootstrap'])} "
                f"chance={100 * g['chance']:.1f}%")
        if g["sdt"]:
            s = g["sdt"]
            line += f" H={s['hit_rate']} FA={s['false_alarm_rate']} d'={s['d_prime']} c={s['criterion']}"
        print(line)
        if g["errors_by_distractor"]:
            print("  errors: " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in g["errors_by_distractor"].items()))
    for gap in result["gaps"]:
        print(f"gap {gap['model']} {gap['task']}: visual {gap['visual']:.3f} - text {gap['text']:.3f} = "
              f"{gap['gap']:.3f} bootstrap={_interval(gap['bootstrap'])} ({gap['n_pairs']} pairs)")
    if result["unmatched"]:
        print(f"{result['unmatched']} prediction(s) not in the annotations (ignored)")
    return 0
