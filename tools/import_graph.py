"""The import graph of ``src/tempcore``: circles, module sizes and docstring lengths.

Imports written inside functions count (they hold a package together at run time as much as
top-level ones); imports under ``if TYPE_CHECKING:`` do not. A module imports a package when it
imports the package's ``__init__``; ``from pkg import name`` counts as an import of
``pkg.name`` when that is a module, else of ``pkg``.

    python3 tools/import_graph.py            # summary: circles, large modules, long docstrings
    python3 tools/import_graph.py --json     # the same, as JSON
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "tempcore"


@dataclass
class Layout:
    """What the layout rules are checked against."""

    edges: dict[str, set[str]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    docstring_lines: dict[str, int] = field(default_factory=dict)
    top_level: list[str] = field(default_factory=list)

    def circles(self) -> list[list[str]]:
        """Strongly connected components of two or more modules, largest first."""
        return sorted(
            (sorted(c) for c in _tarjan(self.edges) if len(c) > 1), key=lambda c: (-len(c), c)
        )


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    found: set[str] = set()

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (target := resolve(alias.name)) is not None:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            for alias in node.names:
                full = f"{prefix}.{alias.name}"
                target = full if full in known else resolve(prefix)
                if target is not None:
                    found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(module)
    return found


def _tarjan(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    for v in edges:
        if v not in index:
            strong(v)
    return out


def layout(root: Path = ROOT) -> Layout:
    """Read every module under ``root/tempcore``."""
    paths = sorted((root / PACKAGE).rglob("*.py"))
    known = {_module_name(p, root) for p in paths}
    result = Layout()
    for path in paths:
        name = _module_name(path, root)
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        result.edges[name] = _imports(tree, name, path.name == "__init__.py", known)
        result.lines[name] = text.count("\n")
        doc = ast.get_docstring(tree, clean=False)
        result.docstring_lines[name] = 0 if doc is None else doc.count("\n") + 1
        if path.parent == root / PACKAGE:
            result.top_level.append(path.name)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    graph = layout()
    report = {
        "circles": graph.circles(),
        "top_level_modules": len(graph.top_level),
        "modules_over_900_lines": {m: n for m, n in graph.lines.items() if n > 900},
        "docstrings_over_40_lines": {m: n for m, n in graph.docstring_lines.items() if n > 40},
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{len(report['circles'])} import circles: sizes {[len(c) for c in report['circles']]}")
    for circle in report["circles"]:
        print("  " + ", ".join(circle))
    print(f"top-level modules: {report['top_level_modules']}")
    print(f"modules over 900 lines: {report['modules_over_900_lines']}")
    print(f"module docstrings over 40 lines: {report['docstrings_over_40_lines']}")


if __name__ == "__main__":
    main()
