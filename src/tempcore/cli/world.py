"""``tempcore world``: the synthetic world with planted temporal ground truth, and its model zoo.

    tempcore world generate --out DIR [--n 400] [--seed 0] [--size 48] [--fps 10]
                            [--min-duration 10] [--max-duration 40] [--k-max 8] [--json]
    tempcore world train [--only encoder|answerers|members|all] [--out DIR | --into-package] [--seed 0]
                         [--encoder-steps N] [--dry-run]
    tempcore world validate --predictions FILE --annotations FILE
                            [--scoring hard|soft|circular ...] [--json] [--tau] [--lambda] [--k] ...
    tempcore world probe [--encoder PATH] (--world DIR | --n N --seed S) [--k 8] [--mode qa|q] [--json]

``generate`` writes ``videos/*.mp4``, ``annotations.jsonl`` (generic format, with ``planted``) and
``world.json``. ``train`` rebuilds the shipped weights into ``--out`` (default ``./world-zoo``,
never inside the installed package: in an editable install that would overwrite the shipped,
tested weights); ``--into-package`` replaces the package's own ``zoo`` folder on purpose (for a
maintainer refreshing the shipped weights), and an ``--out`` inside that folder needs it too.
``--only answerers`` trains the five zoo members (``answerers/``) and the generative HF answerer
(``zoo-idefics3``); ``--only members`` the five members alone (``train_answerers(ZOO/answerers,
seed)`` with its default steps: how the shipped members are refreshed without touching
``zoo-idefics3``); ``--dry-run`` prints what would be trained, where, as JSON, and trains nothing. ``validate`` prints how well a run's diagnosis recovers the planted categories
(``--json``: ``{"scoring": {name: {"temporally_sensitive": {"precision", "recall"}, "trivial":
{"precision", "recall"}, "confusion": {planted: {recovered: count}}}}}``; an undefined precision or
recall is ``null``). ``probe`` measures how often MaxProb / MinProb frames of an encoder fall inside
the planted evidence windows.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from tempcore.cli._common import add_predictions_argument
from tempcore.errors import TempcoreError

#: where ``tempcore world train`` writes when no ``--out`` is given (relative to the working folder)
DEFAULT_TRAIN_OUT = "world-zoo"

#: what ``tempcore world train --only`` accepts
TRAIN_TARGETS = ("encoder", "answerers", "members", "all")


class WorldTrainError(TempcoreError):
    """``tempcore world train`` was asked to write somewhere it must not."""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "world",
        help="synthetic videos with planted temporal ground truth; the embedded model zoo",
        description="Generate a synthetic world, rebuild its model zoo, or score an audit against it.",
    )
    sub = p.add_subparsers(dest="world_command", metavar="ACTION")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    g = sub.add_parser("generate", help="write a world: videos, annotations.jsonl, world.json",
                       description="Write procedural videos and questions with planted categories.")
    g.add_argument("--out", required=True, type=Path, help="world folder to write")
    g.add_argument("--n", type=int, default=400, help="number of questions (default 400)")
    g.add_argument("--seed", type=int, default=0, help="seed (default 0); same seed, same world")
    g.add_argument("--size", type=int, default=48, help="frame width = height in pixels (default 48)")
    g.add_argument("--fps", type=float, default=10.0, help="frame rate of the videos (default 10)")
    g.add_argument("--min-duration", type=float, default=10.0, help="shortest video, seconds (default 10)")
    g.add_argument("--max-duration", type=float, default=40.0, help="longest video, seconds (default 40)")
    g.add_argument("--k-max", type=int, default=8,
                   help="largest K for which MaxProb/MinProb need not enter/leave a window (default 8)")
    g.add_argument("--json", action="store_true", help="print a JSON summary")
    g.set_defaults(func=run_generate)

    t = sub.add_parser("train", help="rebuild the zoo's weights from a seed",
                       description="Train the world encoder (and the answerers, when available).")
    t.add_argument("--only", choices=TRAIN_TARGETS, default="all",
                   help="what to train (default all): encoder, answerers (the five zoo members and "
                   "zoo-idefics3), members (the five zoo members alone), all")
    t.add_argument("--out", type=Path, default=None,
                   help=f"zoo folder to write (default ./{DEFAULT_TRAIN_OUT}; never the installed package's zoo)")
    t.add_argument("--into-package", action="store_true",
                   help="overwrite the installed package's shipped zoo weights (maintainers only)")
    t.add_argument("--seed", type=int, default=0, help="training seed (default 0)")
    t.add_argument("--encoder-steps", type=int, default=None, help="encoder training steps (default 2400)")
    t.add_argument("--dry-run", action="store_true",
                   help="print what would be trained and where (JSON), and train nothing")
    t.set_defaults(func=run_train)

    v = sub.add_parser("validate", help="recovery of the planted categories by a run's predictions",
                       description="Diagnose a predictions table and compare each sample's category "
                       "with the category the world planted.")
    add_predictions_argument(v)
    v.add_argument("--annotations", required=True, metavar="[NAME=]PATH",
                   help="the world's annotations.jsonl (or its folder); NAME=PATH also picks the benchmark")
    v.add_argument("--scoring", nargs="+", choices=("hard", "soft", "circular"), default=["hard"],
                   help="scoring method(s) (default hard)")
    v.add_argument("--tau", type=float, default=0.15, help="FSS threshold (default 0.15)")
    v.add_argument("--lambda", dest="lam", type=float, default=0.5, help="LIS threshold (default 0.5)")
    v.add_argument("--fss-mode", choices=("q", "qa"), default="qa", help="text mode of MaxProb/MinProb")
    v.add_argument("--models", nargs="+", help="restrict the model panel")
    v.add_argument("--k", type=int, help="frame budget of the MaxProb/MinProb rows, if the table has several")
    v.add_argument("--encoder", help="encoder of the MaxProb/MinProb rows, if the table has several")
    v.add_argument("--benchmark", help="benchmark of the table to use (default: the one covering the world)")
    v.add_argument("--json", action="store_true", help="print one JSON object")
    v.set_defaults(func=run_validate)

    pr = sub.add_parser("probe", help="how often an encoder's MaxProb/MinProb frames hit the planted windows",
                        description="Score a world's windowed questions with an encoder and count "
                        "MaxProb / MinProb frames inside the planted evidence windows.")
    pr.add_argument("--encoder", help="encoder (default: the shipped world encoder)")
    pr.add_argument("--world", type=Path, help="an existing world folder (default: generate one)")
    pr.add_argument("--n", type=int, default=200, help="questions of the generated world (default 200)")
    pr.add_argument("--seed", type=int, default=1, help="seed of the generated world (default 1)")
    pr.add_argument("--k", type=int, default=8, help="frames K (default 8)")
    pr.add_argument("--mode", choices=("qa", "q"), default="qa", help="text mode (default qa)")
    pr.add_argument("--device", default="cpu", help="torch device (default cpu)")
    pr.add_argument("--json", action="store_true", help="print one JSON object")
    pr.set_defaults(func=run_probe)


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty():
        print(f"\rvideos {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)


def run_generate(args: argparse.Namespace) -> int:
    from tempcore.world import generate_world

    manifest = generate_world(
        args.out, args.n, args.seed, size=(args.size, args.size), fps=args.fps,
        duration=(args.min_duration, args.max_duration), k_max=args.k_max, progress=_progress,
    )
    summary = manifest.summary()
    if args.json:
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(f"wrote {summary['questions']} questions over {summary['videos']} videos "
          f"({summary['seconds']:.0f} s of video) to {manifest.root}")
    print("planted: " + ", ".join(f"{k} {v}" for k, v in summary["planted"].items()))
    print(f"annotations: {manifest.annotations}")
    print(f"load with: load_benchmark('generic', '{manifest.annotations}', video_root='{manifest.root}')")
    return 0


def train_destination(out: Path | None, into_package: bool) -> Path:
    """The zoo folder ``world train`` writes: ``out`` (default ``./world-zoo``), or the package's
    ``zoo`` with ``into_package``. An ``out`` inside the package's zoo without ``into_package``, and
    both at once, are errors."""
    from tempcore.world import ZOO

    package_zoo = Path(ZOO).resolve()
    if into_package:
        if out is not None and out.resolve() != package_zoo:
            raise WorldTrainError("give either --out DIR or --into-package, not both")
        return Path(ZOO)
    zoo = out if out is not None else Path(DEFAULT_TRAIN_OUT)
    resolved = zoo.resolve()
    if resolved == package_zoo or package_zoo in resolved.parents:
        raise WorldTrainError(
            f"--out {zoo} is the installed package's zoo ({package_zoo}); training there overwrites the "
            "shipped weights. Add --into-package if that is what you want"
        )
    return zoo


def train_plan(only: str, zoo: Path, seed: int, encoder_steps: int | None = None) -> dict[str, Any]:
    """What ``world train --only ONLY`` trains into ``zoo``: ``{"zoo", "seed", "encoder", "members",
    "hf"}``, each part ``null`` when not trained, else where it goes (and its steps, names). Raises
    :class:`WorldTrainError` when the answerers are asked for and this installation has none; with
    ``all`` they are then left out (``"members": null``, ``"hf": null``) as before."""
    if only not in TRAIN_TARGETS:
        raise WorldTrainError(f"--only {only!r}: choose one of {', '.join(TRAIN_TARGETS)}")
    plan: dict[str, Any] = {"zoo": str(zoo), "seed": seed, "encoder": None, "members": None, "hf": None}
    if only in ("encoder", "all"):
        from tempcore.world.encoder_zoo import DEFAULT_STEPS

        plan["encoder"] = {"path": str(zoo / "encoder"), "steps": encoder_steps or DEFAULT_STEPS}
    if only in ("answerers", "members", "all"):
        if importlib.util.find_spec("tempcore.world.answerers") is None:
            if only != "all":
                raise WorldTrainError("this installation has no answerer models (tempcore.world.answerers)")
            return plan
        from tempcore.world.answerers.constants import MEMBERS
        from tempcore.world.answerers.training import ANSWERER_ENCODER_STEPS, ANSWERER_STEPS

        plan["members"] = {"path": str(zoo / "answerers"), "names": list(MEMBERS), "steps": ANSWERER_STEPS,
                           "encoder_steps": ANSWERER_ENCODER_STEPS}
        if only != "members":
            from tempcore.world.hf_answerer import HF_NAME

            plan["hf"] = {"path": str(zoo / HF_NAME), "name": HF_NAME}
    return plan


def run_train(args: argparse.Namespace) -> int:
    zoo = train_destination(args.out, args.into_package)
    plan = train_plan(args.only, zoo, args.seed, args.encoder_steps)
    if args.dry_run:
        json.dump(plan, sys.stdout)
        sys.stdout.write("\n")
        return 0
    if plan["encoder"] is not None:
        from tempcore.world.encoder_zoo import train_encoder

        steps = plan["encoder"]["steps"]
        print(f"training the world encoder ({steps} steps, seed {args.seed}) into {zoo / 'encoder'}",
              file=sys.stderr)
        result = train_encoder(zoo / "encoder", seed=args.seed, steps=steps,
                               log=lambda line: print(line, file=sys.stderr))
        first, last = result.first_last()
        print(f"encoder: {result.parameters} parameters, loss {first:.3f} -> {last:.3f}, "
              f"{result.seconds:.0f} s, saved to {result.path}")
    if args.only == "all" and plan["members"] is None:
        print("no answerer models in this installation (tempcore.world.answerers); trained the encoder only",
              file=sys.stderr)
    elif plan["members"] is not None:
        from tempcore.world import answerers

        log = lambda line: print(line, file=sys.stderr)  # noqa: E731
        if plan["hf"] is not None:
            summary = answerers.train_all(zoo, seed=args.seed, log=log)
        else:  # the five members alone, as train_all trains them, without zoo-idefics3
            print(f"training the zoo members {', '.join(plan['members']['names'])} (seed {args.seed}) into "
                  f"{plan['members']['path']}; zoo-idefics3 untouched", file=sys.stderr)
            _, _, zoo_log = answerers.train_answerers(Path(plan["members"]["path"]), args.seed, log=log)
            summary = {"answerers": plan["members"]["path"], "answerer_seconds": round(zoo_log.seconds, 1),
                       "final_loss": {m: v[-1] for m, v in zoo_log.losses.items() if v}}
        print(f"answerers: {json.dumps(summary)}")
    print(f"wrote the zoo to {zoo}")
    return 0


def run_validate(args: argparse.Namespace) -> int:
    from tempcore.cli._common import parse_one_annotations, read_predictions_arg
    from tempcore.world.recovery import format_recovery
    from tempcore.world.validate import validate_predictions

    benchmark, annotations = parse_one_annotations(args.annotations, args.benchmark)
    result = validate_predictions(
        read_predictions_arg(args.predictions), annotations, scorings=args.scoring, tau=args.tau, lam=args.lam,
        fss_mode=args.fss_mode, models=args.models, filters={"k": args.k, "encoder": args.encoder},
        benchmark=benchmark,
    )
    if args.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
        return 0
    blocks = [format_recovery(r, f"scoring={name} tau={args.tau} lambda={args.lam}")
              for name, r in result["scoring"].items()]
    print("\n\n".join(blocks))
    return 0


def run_probe(args: argparse.Namespace) -> int:
    from tempcore.encoders import load_encoder
    from tempcore.world import encoder_path, generate_world, load_world
    from tempcore.world.probe import format_probe, probe_encoder

    encoder = load_encoder(args.encoder or str(encoder_path()), device=args.device)
    with tempfile.TemporaryDirectory(prefix="tempcore-world-") as tmp:
        world = load_world(args.world) if args.world else generate_world(Path(tmp), args.n, args.seed)
        result = probe_encoder(encoder, world, k=args.k, mode=args.mode)
    if args.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_probe(result))
    return 1 if result["failures"] else 0
