"""Arguments and parsing shared by several subcommands (not a command itself)."""

from __future__ import annotations

import argparse
from typing import Any


def parse_key_values(pairs: list[str] | None, flag: str = "--option") -> dict[str, str]:
    """``["KEY=VALUE", ...]`` -> dict; a pair without ``=`` is a named error."""
    from tempcore.benchmarks import BenchmarkOptionError

    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise BenchmarkOptionError(f"{flag} expects KEY=VALUE, not {pair!r}")
        out[key.strip()] = value
    return out


def add_diagnosis_arguments(p: argparse.ArgumentParser) -> None:
    """The diagnosis parameters of ``tempcore diagnose`` (also used by ``export tempcore`` and ``report``)."""
    p.add_argument("--tau", type=float, default=0.15, help="FSS threshold (default 0.15)")
    p.add_argument("--lambda", dest="lam", type=float, default=0.5, help="LIS threshold (default 0.5)")
    p.add_argument("--fss-mode", choices=("q", "qa"), default="qa", help="text mode of MaxProb/MinProb (default qa)")
    p.add_argument("--scoring", choices=("hard", "soft", "circular"), default="hard",
                   help="hard: the paper's 0/1; soft: p(correct option); circular: 0/1 averaged over rotations")
    p.add_argument("--models", nargs="+", help="restrict the model panel")
    p.add_argument("--k", type=int, help="frame budget of the rows used, if the table has several")
    p.add_argument("--noframe-k", type=int, help="frame budget of the no-frame rows, when it differs from --k")
    p.add_argument("--encoder", help="encoder of the MaxProb/MinProb rows, if the table has several")


def diagnose_args(table: Any, args: argparse.Namespace) -> Any:
    """``diagnose`` with the parameters of :func:`add_diagnosis_arguments`."""
    from tempcore.diagnostics import diagnose

    noframe_k = args.noframe_k if args.noframe_k is not None else args.k
    return diagnose(table, tau=args.tau, lam=args.lam, fss_mode=args.fss_mode, scoring=args.scoring,
                    models=args.models, filters={"k": args.k, "encoder": args.encoder},
                    noframe_filters={"k": noframe_k}, lis_panel=getattr(args, "lis_panel", "fss"))
