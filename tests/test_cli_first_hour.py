"""First-hour rough edges of the CLI (issue 30, items 6 and 8): one scoring default named in every
output, readable task and interval cells."""

from __future__ import annotations

from tempcore.cli import build_parser
from tempcore.cli._common import DEFAULT_SCORING


def test_diagnose_report_and_export_share_one_scoring_default_and_its_help_says_why():
    parser = build_parser()
    got = {cmd: parser.parse_args(argv).scoring for cmd, argv in {
        "diagnose": ["diagnose", "--predictions", "p"],
        "report": ["report", "--predictions", "p", "--out", "o"],
        "export": ["export", "tempcore", "--predictions", "p", "--annotations", "a", "--out", "o"]}.items()}
    assert set(got.values()) == {DEFAULT_SCORING} == {"hard"}
    sub = next(a for a in parser._actions if a.dest == "command").choices
    for cmd in ("diagnose", "report"):
        text = " ".join(sub[cmd].format_help().split())
        assert "the paper's definition" in text and "soft: the probability of the correct option" in text


def test_the_demo_names_the_scoring_of_its_report():
    from tempcore.demo import format_demo

    text = format_demo({"scoring": {}, "report": "r.html", "subset": "s.jsonl", "report_scoring": "hard"})
    assert "(scoring hard, the default of `tempcore diagnose` and `tempcore report`)" in text



def test_audit_ablations_names_a_missing_task_all_not_none(tmp_path, capsys):
    import pyarrow.parquet as pq
    from tests.test_ablations import random_rows, table

    from tempcore.cli import main

    rows = [{k: v for k, v in r.items() if k != "task"} for r in random_rows(3)]
    path = tmp_path / "preds.parquet"
    pq.write_table(table(rows), path)
    assert main(["audit", "ablations", "--predictions", str(path), "--n-boot", "20"]) == 0
    out = capsys.readouterr().out
    assert " None " not in out and "(all)" in out


def test_run_help_points_to_an_example_configuration(capsys):
    import pytest

    from tempcore.cli import main

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "examples/paper-audit.yaml" in capsys.readouterr().out


def test_an_interrupted_run_says_what_it_saved_and_that_rerunning_resumes(monkeypatch, capsys):
    import tempcore.cli.run as run_cli
    from tempcore.cli import main

    def stopped(args):  # what tempcore.run.runner raises after committing the answered rows
        exc = KeyboardInterrupt()
        exc.tempcore_note = "3 prediction(s) answered before the stop are saved (5 in all in s.sqlite); rerun ..."
        raise exc

    monkeypatch.setattr(run_cli, "run", stopped)
    assert main(["run", "--config", "c.yaml"]) == 130
    assert "interrupted (SIGINT): 3 prediction(s) answered before the stop are saved" in capsys.readouterr().err
