"""Every output file is written atomically (issue 31, items 11 and 17): a temporary file in the same
folder, fsynced, renamed; never through a symlink planted at the destination; a writer's error or
kill leaves the old file (or none) and no partial one, and a killed writer's temporary file is
removed by the next write."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from tempcore.report.build import write_report
from tempcore.report.types import Report
from tempcore.tidy.formats import atomic_output, atomic_write, write_batches


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


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


def test_a_killed_writer_leaves_no_partial_file_and_its_temporary_is_cleaned_next_time(tmp_path: Path) -> None:
    target = tmp_path / "predictions.csv"
    script = ("import os, sys\nfrom tempcore.tidy.formats import atomic_output\n"
              "with atomic_output(sys.argv[1]) as fh:\n    fh.write(b'x' * 1000); fh.flush(); os._exit(9)\n")
    done = subprocess.run([sys.executable, "-c", script, str(target)], timeout=60)
    assert done.returncode == 9 and not target.exists()
    left = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(left) == 1  # what a SIGKILL leaves: the next write must clean it
    old_style = tmp_path / f".predictions.csv.{_dead_pid()}.tmp"  # the name tempcore used before
    old_style.write_bytes(b"y" * 1000)
    alive = tmp_path / f".predictions.csv.{os.getppid()}.abc.tmp"  # a live writer's: kept
    alive.write_bytes(b"z")
    schema = pa.schema([("a", pa.int64())])
    write_batches([pa.record_batch([pa.array([1, 2])], schema=schema)], schema, target)
    assert target.read_text().splitlines()[0].strip('"') == "a"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, "predictions.csv"])
