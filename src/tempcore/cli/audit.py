"""``tempcore audit``: audits of a benchmark and its predictions, one subcommand each.

``ablations`` and ``priors`` are set up in :mod:`tempcore.cli._audit_ablations`.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    from tempcore.cli._audit_ablations import add_ablations_parser, add_priors_parser

    p = sub.add_parser("audit", help="audits of a benchmark and its predictions (ablations, priors)",
                       description="Audits of a benchmark and its predictions.")
    audits = p.add_subparsers(dest="audit", metavar="AUDIT")
    add_ablations_parser(audits)
    add_priors_parser(audits)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
