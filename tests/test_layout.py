"""The structure the code keeps (tools/import_graph.py measures it; imports inside functions count)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tool():  # noqa: ANN202 - a module
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tools" / "import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_graph"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


GRAPH = _tool()


def _layout(root: Path = ROOT / "src"):  # noqa: ANN202 - the tool's Layout
    return GRAPH.layout(root)


def test_import_circles_are_few_and_small() -> None:
    circles = _layout().circles()
    assert len(circles) <= 3, circles
    assert all(len(c) <= 4 for c in circles), circles


def test_no_module_over_900_lines_and_few_top_level_modules() -> None:
    layout = _layout()
    assert {m: n for m, n in layout.lines.items() if n > 900} == {}
    assert len(layout.top_level) <= 14, sorted(layout.top_level)


def test_module_docstrings_say_what_the_module_holds_in_at_most_40_lines() -> None:
    assert {m: n for m, n in _layout().docstring_lines.items() if n > 40} == {}


def test_the_pipeline_does_not_import_the_features_above_it() -> None:
    """Arrows point down: the model backends and the diagnostics import nothing of the run machinery,
    the report, the CLI or a feature package."""
    edges = _layout().edges
    above = ("tempcore.run", "tempcore.report", "tempcore.cli", "tempcore.visual", "tempcore.world",
             "tempcore.demo", "tempcore.interop")
    for package in ("tempcore.models", "tempcore.diagnostics", "tempcore.selection", "tempcore.grounding",
                    "tempcore.video", "tempcore.encoders", "tempcore.benchmarks"):
        bad = {m: sorted(t for t in ts if t.startswith(above))
               for m, ts in edges.items() if m.startswith(package)}
        assert {m: ts for m, ts in bad.items() if ts} == {}, package


def test_the_graph_counts_imports_inside_functions_and_skips_type_checking(tmp_path: Path) -> None:
    pkg = tmp_path / "tempcore"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text('"""A."""\ndef f():\n    from tempcore import b\n')
    (pkg / "b.py").write_text('"""B."""\nfrom typing import TYPE_CHECKING\nimport tempcore.a\nif TYPE_CHECKING:\n    from tempcore import c\n')
    (pkg / "c.py").write_text('"""C\n\nthree lines."""\nfrom tempcore.b import x\n')
    layout = _layout(tmp_path)
    assert layout.circles() == [["tempcore.a", "tempcore.b"]]  # a -> b inside a function, b -> a at the top
    assert layout.edges["tempcore.b"] == {"tempcore.a"}  # the TYPE_CHECKING import of c is not an edge
    assert layout.edges["tempcore.c"] == {"tempcore.b"}
    assert layout.docstring_lines["tempcore.c"] == 3
