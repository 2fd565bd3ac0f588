"""``tempcore select``: external scores in, frames out (through tempcore.cli.main)."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest

from tempcore.cli import main
from tempcore.selection import maxprob, oracle, shuffled, uniform

# 3 seconds x 3 frames; maxprob K=4 picks f0 .9, f4 .8, f8 .7, f7 .6 (see test_selection.py)
TIMES = [i / 3 for i in range(9)]
SCORES = [0.9, 0.1, 0.5, 0.2, 0.8, 0.3, 0.4, 0.6, 0.7]


@pytest.fixture
def scores_file(tmp_path):
    path = tmp_path / "scores.json"
    path.write_text(json.dumps({"timestamps": TIMES, "scores": SCORES}))
    return path


def run_json(capsys, *args):
    assert main(["select", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_default_strategy_is_maxprob(scores_file, capsys):
    out = run_json(capsys, "--scores", str(scores_file), "--k", "4")
    assert out == {"indices": [0, 4, 7, 8], "timestamps": [TIMES[0], TIMES[4], TIMES[7], TIMES[8]]}
    fs = maxprob(np.array(TIMES), np.array(SCORES), 4)
    assert out["indices"] == list(fs.indices)


def test_json_oracle_windows(scores_file, capsys):
    out = run_json(capsys, "--scores", str(scores_file), "--strategy", "oracle", "--k", "3", "--stride", "2",
                   "--max-windows", "3")
    # 9 frames, K=3, stride 2: starts 0 2 4 6 -> 4 windows; 3 kept: round(j * 3 / 2) = 0, 2 (1.5 up), 3
    assert [w["indices"] for w in out["windows"]] == [[0, 1, 2], [4, 5, 6], [6, 7, 8]]
    expected = oracle(np.array(TIMES), None, 3, stride=2, max_windows=3)
    assert out["windows"][1]["timestamps"] == list(expected[1].timestamps)
    one = run_json(capsys, "--scores", str(scores_file), "--strategy", "oracle", "--k", "3", "--window", "1")
    assert one["indices"] == [3, 4, 5]


def test_stdin_seed_sample_id_variant_and_params(scores_file, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(scores_file.read_text()))
    out = run_json(capsys, "--scores", "-", "--strategy", "shuffled", "--k", "5", "--seed", "3",
                   "--sample-id", "vid-9", "--variant", "uniform:linspace")
    fs = shuffled(np.array(TIMES), np.array(SCORES), 5, seed=3, sample_id="vid-9", variant="uniform:linspace")
    assert out["indices"] == list(fs.indices)
    bolt_out = run_json(capsys, "--scores", str(scores_file), "--strategy", "bolt", "--k", "3",
                        "--param", "alpha=0", "--param", "grid=midpoint")
    # alpha 0: every frame weighs the same -> the quantiles 1/6, 1/2, 5/6 of 9 frames: 1, 4, 7
    assert bolt_out["indices"] == [1, 4, 7]


def test_scores_may_be_absent_for_uniform(tmp_path, capsys):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"timestamps": [0.0, 0.5, 1.0, 1.5]}))
    out = run_json(capsys, "--scores", str(path), "--strategy", "uniform", "--k", "2")
    assert out["indices"] == list(uniform(np.array([0.0, 0.5, 1.0, 1.5]), None, 2).indices) == [1, 3]


def test_listing_shows_order_indices_times_and_scores(scores_file, capsys):
    assert main(["select", "--scores", str(scores_file), "--k", "4", "--strategy", "minprob"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("minprob: 4 frame(s) in the order shown")
    rows = [line.split() for line in out.splitlines()[2:]]
    assert [int(r[1]) for r in rows] == [1, 3, 5, 6]
    assert [float(r[3]) for r in rows] == [0.1, 0.2, 0.3, 0.4]
    assert main(["select", "--scores", str(scores_file), "--k", "20", "--strategy", "uniform"]) == 0
    assert "requested 20; the video has fewer frames" in capsys.readouterr().out
    assert main(["select", "--scores", str(scores_file), "--k", "3", "--strategy", "noframe"]) == 0
    assert "3 uniform grey images" in capsys.readouterr().out
    assert main(["select", "--scores", str(scores_file), "--k", "4", "--strategy", "oracle"]) == 0
    out = capsys.readouterr().out
    assert "3 window(s)" in out and "window 2: frames 5-8" in out


@pytest.mark.parametrize(
    "payload, args, message",
    [
        ("{not json", [], "not valid JSON"),
        (json.dumps([1, 2]), [], "expected a JSON object"),
        (json.dumps({"timestamps": [0, 1], "scores": [0.5, float("nan")]}), [], r"scores\[1\] is nan"),
        (json.dumps({"timestamps": [], "scores": []}), [], "no frames"),
        (json.dumps({"timestamps": [0, 1], "scores": [0.5]}), [], "1 scores for 2 timestamps"),
        (json.dumps({"timestamps": [0, 1]}), [], "no scores were given"),
        (json.dumps({"timestamps": [0, 1], "scores": [1, 2]}), ["--k", "0"], "K must be a positive int"),
        (json.dumps({"timestamps": [0, 1], "scores": [1, 2]}), ["--strategy", "maxpro"], "did you mean 'maxprob'"),
        (json.dumps({"timestamps": [0, 1], "scores": [1, 2]}), ["--stride", "1"], "maxprob takes no parameter"),
        (json.dumps({"timestamps": [0, 1], "scores": [1, 2]}), ["--window", "0"], "--window applies to the oracle"),
        (json.dumps({"timestamps": [0, 1], "scores": [1, 2]}), ["--param", "alpha"], "expected NAME=VALUE"),
    ],
)
def test_bad_input_is_a_clear_error(tmp_path, capsys, payload, args, message):
    path = tmp_path / "bad.json"
    path.write_text(payload)
    assert main(["select", "--scores", str(path), *args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tempcore: error:")
    assert re.search(message, err), err


def test_missing_file(tmp_path, capsys):
    assert main(["select", "--scores", str(tmp_path / "nope.json")]) == 1
    assert "cannot read scores file" in capsys.readouterr().err


def _score_lines(tmp_path):
    """What `tempcore score` writes: one JSON line per (sample, mode), the scores under "s"."""
    recs = [{"benchmark": "b", "sample_id": sid, "mode": mode, "encoder": "e", "fps": 3.0, "text_truncated": False,
             "text_tokens": 5, "frames": 9, "timestamps": TIMES, "cos": [0.0] * 9,
             "s": SCORES if (sid, mode) == ("v1", "qa") else SCORES[::-1]}
            for sid in ("v1", "v2") for mode in ("q", "qa")]
    path = tmp_path / "scores.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_select_reads_the_output_of_score(tmp_path, capsys):
    path = _score_lines(tmp_path)
    out = run_json(capsys, "--scores", str(path), "--k", "4", "--sample-id", "v1", "--mode", "qa")
    assert out["indices"] == list(maxprob(np.array(TIMES), np.array(SCORES), 4).indices) == [0, 4, 7, 8]
    other = run_json(capsys, "--scores", str(path), "--k", "4", "--sample-id", "v2", "--mode", "qa")
    assert other["indices"] == list(maxprob(np.array(TIMES), np.array(SCORES[::-1]), 4).indices)
    # one line alone needs no choice, and its sample_id seeds the random strategies as in `tempcore run`
    one = tmp_path / "one.jsonl"
    one.write_text(path.read_text().splitlines()[1] + "\n")
    assert run_json(capsys, "--scores", str(one), "--k", "4")["indices"] == [0, 4, 7, 8]
    from tempcore.selection import random as random_strategy

    rnd = run_json(capsys, "--scores", str(one), "--k", "4", "--strategy", "random", "--seed", "2")
    assert rnd["indices"] == list(random_strategy(np.array(TIMES), None, 4, seed=2, sample_id="v1").indices)


def test_select_on_several_records_asks_for_a_choice(tmp_path, capsys):
    path = _score_lines(tmp_path)
    assert main(["select", "--scores", str(path), "--k", "4"]) == 1
    err = capsys.readouterr().err
    assert "holds 4 record(s) (sample_id v1, v2; mode q, qa; benchmark b)" in err and "--sample-id ID" in err
    assert main(["select", "--scores", str(path), "--k", "4", "--sample-id", "v1"]) == 1
    assert "2 match" in capsys.readouterr().err
    assert main(["select", "--scores", str(path), "--k", "4", "--sample-id", "v9", "--mode", "q"]) == 1
    assert "none matches --sample-id v9, --mode q" in capsys.readouterr().err


def test_strategy_names_ignore_case(scores_file, capsys):
    assert run_json(capsys, "--scores", str(scores_file), "--k", "4", "--strategy", "MaxProb")["indices"] == [0, 4, 7, 8]
    assert main(["select", "--scores", str(scores_file), "--k", "4", "--strategy", "maxprb"]) == 1
    assert "did you mean 'maxprob'" in capsys.readouterr().err
