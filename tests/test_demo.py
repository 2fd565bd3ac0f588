"""`tempcore demo` on a reduced world: the real pipeline end to end (world, encoder, zoo, run store,
diagnostics under three scorings, TempCore subset, report), and the recovery it prints."""

from __future__ import annotations

import json

import pytest

from tempcore.cli import main
from tempcore.world.recovery import RECOVERED_CATEGORIES


@pytest.mark.timeout(300)
def test_demo_end_to_end_on_a_reduced_world(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--questions", "28", "--no-progress", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(result) == {"scoring", "report", "subset"}
    assert set(result["scoring"]) == {"soft", "hard", "circular"}
    for scoring, rec in result["scoring"].items():
        confusion = rec["confusion"]
        assert set(confusion) == {"frame_agnostic", "temporally_grounded", "trivial", "visual_bias"}
        assert sum(sum(row.values()) for row in confusion.values()) == 28, scoring
        for row in confusion.values():
            assert set(row) <= set(RECOVERED_CATEGORIES)
        for group in ("temporally_sensitive", "trivial"):
            for metric in ("precision", "recall"):
                value = rec[group][metric]
                assert value is None or 0.0 <= value <= 1.0
    # The zoo was trained to recover what the world planted: with soft scoring the temporally
    # sensitive and trivial questions of even a small world are found far better than chance.
    soft = result["scoring"]["soft"]
    assert soft["temporally_sensitive"]["recall"] >= 0.6 and soft["temporally_sensitive"]["precision"] >= 0.6
    assert soft["trivial"]["recall"] >= 0.6 and soft["trivial"]["precision"] >= 0.6

    html = (out / "report" / "report.html").read_text()
    assert "<html" in html.lower() and "temporally" in html.lower()
    subset = [json.loads(line) for line in open(result["subset"])]
    assert subset and all(r["category"] in ("temporally_grounded", "visual_bias") for r in subset)
    assert (out / "run" / "store.sqlite").exists() and (out / "run" / "predictions.parquet").exists()

    # A second run resumes: every prediction is already stored, and the recovery is the same.
    assert main(["demo", "--out", str(out), "--questions", "28", "--no-progress", "--json"]) == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert again["scoring"] == result["scoring"]
