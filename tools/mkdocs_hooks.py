"""mkdocs hook of the documentation site (``mkdocs.yml``: ``hooks``): reference tables generated from
the code at build time, never copied by hand.

A page asks for a table with a marker line ``<!-- generated: NAME -->``; the build replaces it with
:func:`generated` ``(NAME)``: ``model-specs`` (:func:`tempcore.models.specs.markdown_tables` and the
zoo backend's table), ``predictions-schema`` (:func:`tempcore.tidy.schema.markdown_table`), ``cli``
(every subcommand's ``--help``), ``presets`` (the model presets). An unknown name fails the build.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parent.parent / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


def _model_specs() -> str:
    from tempcore.models.registry import spec_class
    from tempcore.models.specs import markdown_table, markdown_tables

    return markdown_tables() + "\n\n" + markdown_table(spec_class("zoo"))


def _schema() -> str:
    from tempcore.tidy.schema import markdown_table

    return markdown_table()


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    out: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:  # argparse keeps subcommands here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append((name, sub))
    return out


def _cli() -> str:
    import os

    from tempcore.cli import build_parser

    os.environ["COLUMNS"] = "100"  # stable wrapping, whatever terminal builds the site
    parser = build_parser()
    parts = ["```text\n$ tempcore --help\n" + parser.format_help().rstrip() + "\n```"]

    def walk(prefix: str, p: argparse.ArgumentParser) -> None:
        for name, sub in _subparsers(p):
            cmd = f"{prefix} {name}"
            parts.append(f"### `{cmd}`\n\n```text\n$ {cmd} --help\n{sub.format_help().rstrip()}\n```")
            walk(cmd, sub)

    walk("tempcore", parser)
    return "\n\n".join(parts)


def _presets() -> str:
    from tempcore.models.presets import PRESETS, get_preset

    rows = ["| preset | backend | model | family | parameters | in the paper |", "|---|---|---|---|---|---|"]
    for name in PRESETS:
        p = get_preset(name)
        rows.append(f"| `{name}` | `{p.backend}` | `{p.model}` | {p.family} | {p.params} | {p.in_paper} |")
    return "\n".join(rows)


GENERATORS = {"model-specs": _model_specs, "predictions-schema": _schema, "cli": _cli, "presets": _presets}


def generated(name: str) -> str:
    if name not in GENERATORS:
        raise ValueError(f"unknown generated table {name!r}; known: {', '.join(GENERATORS)}")
    return GENERATORS[name]()


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return MARKER.sub(lambda m: generated(m.group(1)), markdown)
