"""Every output file is written atomically (issue 31, items 11 and 17): a temporary file in the same
folder, fsynced, renamed; never through a symlink planted at the destination; a writer's error or
kill leaves the old file (or none) and no partial one, and a killed writer's temporary file is
removed by the next write."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tempcore.report.build import write_report
from tempcore.report.types import Report
from tempcore.tidy.formats import atomic_output, atomic_write


def test_a_symlink_planted_at_a_report_is_replaced_not_written_through(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from tempcore.report import html, markdown

    monkeypatch.setattr(markdown, "render_markdown", lambda report, figures: f"# {report.title}\n")
    monkeypatch.setattr(html, "render_html", lambda report: f"<h1>{report.title}</h1>")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.md").symlink_to(victim)
    report = Report(title="t", created="now", params={}, inputs={}, diagnosis=None, sections=[])
    written = write_report(report, out)
    assert victim.read_text() == "precious"
    assert not (out / "report.md").is_symlink() and "t" in (out / "report.md").read_text()
    assert {p.name for p in written} >= {"report.md", "report.html"}
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    mode = stat.S_IMODE((out / "report.html").stat().st_mode)
    umask = os.umask(0o022)
    os.umask(umask)
    assert mode == 0o666 & ~umask  # as an ordinary open() would have made it


def test_an_error_while_writing_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = atomic_write(tmp_path / "report.html", "old")
    with pytest.raises(RuntimeError), atomic_output(path) as fh:
        fh.write(b"half of the new")
        raise RuntimeError("disk full")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["report.html"]
