"""`tempcore run` as an operator meets it (issue 27): exit codes that tell the truth, the failed
requests listed by `tempcore failures`, SIGTERM and SIGHUP handled as Ctrl-C is, a log file in the
run folder, and progress bars only on a terminal.

The served model is the real OpenAI-compatible HTTP peer of tests/helpers/http_peer.py (real
sockets on 127.0.0.1); a server that is down is a port nothing listens on."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers.http_peer import HTTPPeer, InOrder, status  # noqa: E402
from tempcore.cli import main
from tempcore.run.store import RunStore


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens there once closed


def _bench(root: Path, n: int) -> Path:
    ann = root / "bench.jsonl"
    ann.write_text("".join(json.dumps({"id": f"q{i}", "video": f"v{i}.mp4", "question": f"Question {i}?",
                                       "options": ["red", "green", "blue"], "answer": i % 3}) + "\n"
                           for i in range(n)))
    return ann


def _config(root: Path, out: Path, base_url: str, n: int, **model: Any) -> Path:
    cfg = {"out": str(out), "benchmarks": [{"name": "generic", "annotations": str(_bench(root, n)),
                                           "video_root": str(root)}],
           "models": [{"backend": "openai", "model": "m", "name": "served", "base_url": base_url,
                       "max_retries": 1, **model}],
           "conditions": [{"strategy": "noframe"}]}
    path = root / f"{out.name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _rows(out: Path) -> list[tuple[str, str | None]]:
    with RunStore.open(out / "store.sqlite") as store:
        return sorted((p.sample_id, p.answer) for p in store.predictions())


def test_a_run_whose_requests_failed_exits_3_names_the_causes_and_lists_them(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "out"
    cfg = _config(tmp_path, out, f"http://127.0.0.1:{_closed_port()}/v1", 4)
    assert main(["run", "--config", str(cfg), "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "4 request(s) failed" in err and "tempcore failures" in err and "--allow-failures" in err
    assert "4 x served: connection failed" in err  # the cause, grouped, on the terminal
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failed"] == 4 and summary["interrupted"] is None
    assert summary["failure_causes"][0]["count"] == 4 and summary["failure_causes"][0]["model"] == "served"
    # accepted: the same run (nothing stored yet, the four asked again) exits 0 with a warning
    assert main(["run", "--config", str(cfg), "--no-progress", "--allow-failures"]) == 0
    assert "accepted: --allow-failures" in capsys.readouterr().err

    assert main(["failures", str(out), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["count"] == 4 and {f["sample_id"] for f in listed["failures"]} == {"q0", "q1", "q2", "q3"}
    assert all(f["attempts"] == 4 for f in listed["failures"])  # two runs of two attempts each
    assert [(c["model"], c["count"]) for c in listed["causes"]] == [("served", 4)]
    assert main(["failures", str(out / "store.sqlite"), "--limit", "1"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("4 request(s) failed:") and "generic/q0" in text and "3 more" in text

    # the server is back: the rerun answers them, and nothing is listed any more
    with HTTPPeer() as peer:
        data = yaml.safe_load(cfg.read_text())
        data["models"][0]["base_url"] = peer.base_url
        cfg.write_text(yaml.safe_dump(data))
        assert main(["run", "--config", str(cfg), "--no-progress"]) == 0
    assert len(_rows(out)) == 4
    assert main(["failures", str(out)]) == 0
    assert "no failed requests" in capsys.readouterr().out
    assert main(["failures", str(tmp_path / "nowhere")]) == 1
    assert "no run store there" in capsys.readouterr().err


def test_the_run_log_keeps_every_retry_failure_and_resume_decision(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "out"
    # the first request (by arrival) fails twice (max_retries 1: given up), the next once (retried)
    with HTTPPeer(faults=InOrder([status(500), status(500), status(500)]), latency_s=0.0) as peer:
        cfg = _config(tmp_path, out, peer.base_url, 3, concurrency=1)
        assert main(["run", "--config", str(cfg), "--no-progress"]) == 3
        first = capsys.readouterr().err
        assert "retrying" not in first  # retries are DEBUG: not on the terminal by default
        assert main(["--log-level", "debug", "run", "--config", str(cfg), "--no-progress"]) == 0
        assert "skipped (stored)" not in capsys.readouterr().err  # the narrative is printed, not logged twice
    log = (out / "run.log").read_text()
    assert "DEBUG tempcore.models.openai_http" in log and "retrying" in log  # the retry
    assert "INFO tempcore.run.runner: failed: generic/q0 served" in log  # the failure, named
    assert "1 to answer (2 stored)" in log  # the resume decision of the second run
    assert log.count("summary:") == 2  # appended across runs


def test_two_runs_in_one_process_keep_their_own_logs(tmp_path: Path) -> None:
    from tempcore.run.ordered import in_context
    from tempcore.run.runlog import run_log

    both = threading.Barrier(2, timeout=30)
    level = logging.getLogger("tempcore").level

    def one(name: str) -> None:
        with run_log(tmp_path / name):
            both.wait()
            worker = threading.Thread(target=in_context(lambda: logging.getLogger("tempcore.x").debug("from %s", name)))
            worker.start()
            worker.join()
            both.wait()

    threads = [threading.Thread(target=one, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name, other in (("a", "b"), ("b", "a")):
        text = (tmp_path / name / "run.log").read_text()
        assert f"from {name}" in text and f"from {other}" not in text
    assert logging.getLogger("tempcore").level == level  # restored once both closed


@pytest.mark.timeout(240)
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_stop_signal_commits_what_is_answered_writes_the_summary_and_the_table(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    import pyarrow.parquet as pq

    n = 40
    with HTTPPeer(latency_s=0.15) as peer:
        cfg = _config(tmp_path, tmp_path / "out", peer.base_url, n, concurrency=1)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.Popen([sys.executable, "-m", "tempcore", "run", "--config", str(cfg)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        db = tmp_path / "out" / "store.sqlite"
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:  # stop it mid-run: once three rows are committed
            if proc.poll() is not None:
                break
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
                    if conn.execute("SELECT COUNT(*) FROM predictions").fetchone()[0] >= 3:
                        break
            except sqlite3.Error:
                pass
            time.sleep(0.002)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == code, (stdout, stderr)
        assert f"interrupted ({sig.name})" in stderr and "\r" not in stderr  # no bars into a pipe
        assert f"stopped by {sig.name}" in stdout and "summary:" in stdout
        summary = json.loads((tmp_path / "out" / "summary.json").read_text())
        stored = _rows(tmp_path / "out")
        assert summary["interrupted"] == sig.name and 3 <= len(stored) < n
        assert summary["models"][0]["done"] == len(stored)
        table = pq.read_table(tmp_path / "out" / "predictions.parquet")
        assert table.num_rows == len(stored)  # the table is the store at the stop
        assert f"run stopped by {sig.name}" in (tmp_path / "out" / "run.log").read_text()
        # resumed: every row once, the same as a run that was never stopped
        assert main(["run", "--config", str(cfg), "--no-progress"]) == 0
        clean = _config(tmp_path, tmp_path / "clean", peer.base_url, n, concurrency=4)
        assert main(["run", "--config", str(clean), "--no-progress"]) == 0
    resumed = _rows(tmp_path / "out")
    assert len(resumed) == n and resumed == _rows(tmp_path / "clean")


def test_progress_bars_only_on_a_terminal_unless_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from tempcore.cli._common import add_progress_arguments, progress_wanted

    p = argparse.ArgumentParser()
    add_progress_arguments(p)
    for tty, argv, want in [(True, [], True), (False, [], False), (False, ["--progress"], True),
                            (True, ["--no-progress"], False)]:
        monkeypatch.setattr(sys.stderr, "isatty", lambda tty=tty: tty)
        assert progress_wanted(p.parse_args(argv)) is want, (tty, argv)
    with pytest.raises(SystemExit):
        p.parse_args(["--progress", "--no-progress"])
