"""The README and the documentation site stay true.

- Every fenced ``bash`` / ``sh`` / ``python`` block of ``README.md`` and ``docs/**/*.md`` is executed, page by
  page, in order, in a fresh folder, unless a comment line right above it says why it cannot run here:
  ``<!-- skip: REASON -->`` (a GPU, the hub, a downloaded benchmark, the whole suite).
- ``<!-- file: PATH -->`` above a block writes the block, exactly as printed, to PATH first (the quick start's
  JSONL row and YAML); ``<!-- fixture: video PATH -->`` writes a short synthetic video there (a user brings
  their own). ``tempcore`` in a block is this checkout's CLI.
- No development-diary text in README or docs; the README stays a front page.
- ``mkdocs build --strict`` builds the site (generated reference tables included).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RUNNABLE = {"bash", "sh", "shell", "python", "py"}
MARK = re.compile(r"^<!--\s*(skip|file|fixture):\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)")


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    text: str
    marks: list[tuple[str, str]] = field(default_factory=list)

    @property
    def skip(self) -> str | None:
        return next((v for k, v in self.marks if k == "skip"), None)

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` with the marker comments on the lines right above each."""
    lines = page.read_text(encoding="utf-8").split("\n")
    out: list[Block] = []
    marks: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if m:
            marks.append((m.group(1), m.group(2)))
            i += 1
            continue
        f = FENCE.match(lines[i])
        if f:
            indent, lang = f.group(1), f.group(2).lower()
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith("```"):
                j += 1
            text = "\n".join(ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[i + 1 : j])
            out.append(Block(page, i + 1, lang, text + "\n", marks))
            marks = []
            i = j + 1
            continue
        if lines[i].strip():
            marks = []  # markers apply to the block right below them only
        i += 1
    return out


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def _video(path: Path) -> None:
    from tempcore.video.synthetic import Scene, write_video

    path.parent.mkdir(parents=True, exist_ok=True)
    write_video(path, fps=10, duration=6, size=(160, 120), make_frame=Scene((160, 120)))


def _env(work: Path) -> dict[str, str]:
    bin_dir = work / ".bin"
    bin_dir.mkdir(exist_ok=True)
    cli = bin_dir / "tempcore"
    cli.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tempcore "$@"\n')
    cli.chmod(0o755)
    env = dict(os.environ)
    env.update({
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "TEMPCORE_CACHE": str(work / ".cache"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
    })
    return env


def run_page(page: Path, work: Path) -> int:
    """Write the files, make the fixtures and run the runnable blocks of ``page`` in ``work``; returns
    how many blocks ran. A failing block fails with its page and line."""
    env = _env(work)
    ran = 0
    for block in blocks(page):
        for kind, value in block.marks:
            if kind == "file":
                target = work / value
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(block.text, encoding="utf-8")
            elif kind == "fixture":
                what, _, path = value.partition(" ")
                assert what == "video", f"{block.where()}: unknown fixture {value!r}"
                _video(work / path)
        if block.lang not in RUNNABLE or block.skip is not None:
            continue
        argv = ["bash", "-euo", "pipefail", "-c", block.text] if block.lang in {"bash", "sh", "shell"} else [
            sys.executable, "-c", block.text]
        proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (
            f"{block.where()}: the example failed (exit {proc.returncode})\n{block.text}\n"
            f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")
        ran += 1
    return ran


def _runnable(page: Path) -> bool:
    return any(b.lang in RUNNABLE and b.skip is None for b in blocks(page))


RUN_PAGES = [p for p in pages() if _runnable(p)]


@pytest.mark.parametrize("page", RUN_PAGES, ids=[str(p.relative_to(ROOT)) for p in RUN_PAGES])
def test_the_examples_run_as_printed(page: Path, tmp_path: Path) -> None:
    assert run_page(page, tmp_path) > 0


def test_the_readme_quick_start_is_run_exactly_as_printed() -> None:
    readme = blocks(ROOT / "README.md")
    files = {v for b in readme for k, v in b.marks if k == "file"}
    assert {"my-bench/questions.jsonl", "audit.yaml"} <= files
    commands = "".join(b.text for b in readme if b.lang == "bash" and b.skip is None)
    for step in ("tempcore run --config audit.yaml --dry-run", "tempcore run --config audit.yaml",
                 "tempcore diagnose", "tempcore report", "tempcore tiny-checkpoints"):
        assert step in commands
    assert ROOT / "README.md" in RUN_PAGES


def test_every_skip_says_why() -> None:
    for page in pages():
        for b in blocks(page):
            if b.skip is not None:
                assert b.skip.strip(), f"{b.where()}: a skip marker needs its reason"


DIARY = re.compile(
    r"\bretrained\b|\bre-?measured\b|this session|load average|\bload \d|on this host|measured here|fresh clone|"
    r"previous version|earlier session|the day before", re.IGNORECASE)
DIARY_ALLOWED = ("to be re-measured",)


def test_no_development_diary_text() -> None:
    for page in pages():
        for n, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1):
            if any(ok in line for ok in DIARY_ALLOWED):
                continue
            m = DIARY.search(line)
            assert not m, f"{page.relative_to(ROOT)}:{n}: development-diary text {m.group(0)!r}: {line.strip()}"


def test_the_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").split("\n")
    assert len(lines) <= 250
    in_code = False
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        assert in_code or len(line) <= 160, f"README.md:{n}: a prose line of {len(line)} characters"
    first_screen = "\n".join(lines[:30]).lower()
    for phrase in ("own benchmark", "offline", "gpu", "what the numbers mean"):
        assert phrase in first_screen, phrase


def test_the_reference_tables_are_generated_from_the_code() -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import mkdocs_hooks
    finally:
        sys.path.remove(str(ROOT / "tools"))
    from tempcore.models.specs import markdown_tables
    from tempcore.tidy.schema import markdown_table

    assert markdown_tables() in mkdocs_hooks.generated("model-specs")
    assert mkdocs_hooks.generated("predictions-schema") == markdown_table()
    assert "tempcore tiny-checkpoints --help" in mkdocs_hooks.generated("cli")
    for name, page in (("model-specs", "reference/model-specs.md"), ("predictions-schema",
                       "reference/predictions-schema.md"), ("cli", "reference/cli.md")):
        assert f"<!-- generated: {name} -->" in (DOCS / page).read_text()


@pytest.mark.skipif(shutil.which("mkdocs") is None and not (Path(sys.executable).parent / "mkdocs").exists(),
                    reason="mkdocs is not installed (the dev extra)")
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs") or str(Path(sys.executable).parent / "mkdocs")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([mkdocs, "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
