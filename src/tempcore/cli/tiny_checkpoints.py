"""``tempcore tiny-checkpoints OUT``: tiny random-weight checkpoints of real architectures, offline."""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any

# the family names of tempcore.models.tiny, listed here so `tempcore --help` imports nothing heavy
ENCODERS = ("siglip", "siglip2", "clip")
VLMS = ("idefics3", "smolvlm", "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "llava_onevision")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "tiny-checkpoints",
        help="write tiny random-weight checkpoints of a real encoder and VLM (try backend: hf offline)",
        description="Write tiny random-weight checkpoints of real architectures into OUT/<family>, laid out as "
        "hub checkpoints (config, safetensors, tokenizer, processor, chat template), so that `encoder: OUT/siglip` "
        "and `{backend: hf, model: OUT/idefics3}` load through the same code as your real checkpoints, with no "
        "hub and no GPU. Their answers are random. Needs the hf extra (torch, transformers).",
    )
    p.add_argument("out", type=Path, metavar="OUT", help="folder to write the checkpoints into (created)")
    p.add_argument("--encoder", nargs="*", choices=ENCODERS, default=["siglip"], metavar="FAMILY",
                   help=f"encoder families to write (default: siglip; choices: {', '.join(ENCODERS)}; none: no encoder)")
    p.add_argument("--vlm", nargs="*", choices=VLMS, default=["idefics3"], metavar="FAMILY",
                   help=f"VLM families to write (default: idefics3; choices: {', '.join(VLMS)}; none: no VLM)")
    p.add_argument("--json", action="store_true", help="print {family: folder} as one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tempcore.models.tiny import write_tiny_checkpoints

    hf_logging: Any = importlib.import_module("transformers.utils.logging")

    hf_logging.set_verbosity_error()  # the tiny configs' token-id notes are noise here
    hf_logging.disable_progress_bar()

    paths = write_tiny_checkpoints(args.out, encoders=tuple(args.encoder), vlms=tuple(args.vlm))
    if args.json:
        print(json.dumps({family: str(path) for family, path in paths.items()}))
        return 0
    for family, path in paths.items():
        kind = "encoder" if family in ENCODERS else "VLM"
        print(f"{kind} {family}: {path}")
    encoders = [str(p) for f, p in paths.items() if f in ENCODERS]
    vlms = [str(p) for f, p in paths.items() if f not in ENCODERS]
    if encoders or vlms:
        print("in a run configuration:")
    if encoders:
        print(f"  encoder: {encoders[0]}")
    for vlm in vlms:
        print(f"  models: [{{backend: hf, model: {vlm}}}]")
    return 0
