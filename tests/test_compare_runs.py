"""``tempcore compare``: planted differences are found exactly, the statistics equal an independent
computation, and a run compared with itself shows nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

from tempcore.cli import main
from tempcore.diagnostics.compare_runs import CompareError, compare_runs, mcnemar_exact, with_condition
from tempcore.diagnostics.stats import paired_bootstrap
from tempcore.records import Condition, FrameSet, Prediction
from tempcore.run.store import RunStore

MODELS = ("m1", "m2")
CONDITIONS = ("maxprob|mode=qa|k=4", "noframe|mode=none|k=4")
N = 40


def _rows(seed: int = 0) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(N):
        for m in MODELS:
            for c in CONDITIONS:
                strategy = c.split("|")[0]
                correct = int(rng.random() < 0.6)
                idx = [3 * s % 50 + 2 * j for j in range(4)]
                rows.append({
                    "benchmark": "bench", "sample_id": f"s{s:02d}", "model": m, "strategy": strategy,
                    "mode": "qa" if strategy == "maxprob" else "none", "k": 4, "window": None,
                    "correct": correct, "condition": c, "answer": 1 if correct else 2, "response": "B" if correct else "C",
                    "frame_indices": json.dumps(idx), "frame_timestamps": json.dumps([i / 10 for i in idx]),
                    "sample_hash": f"sh{s}", "prompt_hash": f"ph{s}{m}{c}", "model_fingerprint": f"mf-{m}",
                    "encoder_fingerprint": "enc" if strategy == "maxprob" else None,
                })
    return rows


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows)


def _find(rows: list[dict[str, Any]], sample: str, model: str, cond: str) -> dict[str, Any]:
    return next(r for r in rows if (r["sample_id"], r["model"], r["condition"]) == (sample, model, cond))


def _planted() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    a = _rows()
    b = [dict(r) for r in a]
    c0, c1 = CONDITIONS
    # frames: same count, other indices (offset 0.5 s on one frame); another count
    r = _find(b, "s01", "m1", c0)
    idx = json.loads(r["frame_indices"])
    idx[2] += 5
    r["frame_indices"], r["frame_timestamps"] = json.dumps(idx), json.dumps([i / 10 for i in idx])
    r = _find(b, "s02", "m2", c0)
    r["frame_indices"], r["frame_timestamps"] = json.dumps([0, 1]), json.dumps([0.0, 0.1])
    # answers flipped (response and parsed answer follow); one response differs without an answer change
    for s, m, c in (("s03", "m1", c0), ("s04", "m1", c0), ("s05", "m2", c1)):
        r = _find(b, s, m, c)
        r["correct"] = 1 - r["correct"]
        r["answer"] = 1 if r["correct"] else 2
        r["response"] = "B" if r["correct"] else "C"
    _find(b, "s06", "m2", c1)["response"] = "The answer is " + _find(b, "s06", "m2", c1)["response"]
    # fingerprints: one sample's content, one model's entry on one row, one prompt
    for r in b:
        if r["sample_id"] == "s07":
            r["sample_hash"] = "sh7-new"
    _find(b, "s08", "m2", c1)["model_fingerprint"] = "mf-m2-new"
    _find(b, "s09", "m1", c0)["prompt_hash"] = "other"
    # one-sided rows
    b.remove(_find(b, "s10", "m1", c1))
    b.append({**_find(b, "s11", "m1", c1), "sample_id": "s99"})
    return a, b


def test_self_comparison_is_empty() -> None:
    t = _table(_rows())
    res = compare_runs(t, t).to_json()
    assert res["differences"] == 0
    assert res["rows"] == {"a": N * 4, "b": N * 4, "matched": N * 4, "differing": 0, "only_a": 0, "only_b": 0}
    assert res["flipped"] == [] and res["only_a"] == [] and res["only_b"] == []
    assert all(fp["differ"] == 0 and fp["unknown"] == 0 for fp in res["fingerprints"].values())
    assert res["frames"]["identical"] == N * 4 and res["frames"]["max_offset_s"] is None
    assert res["responses"] == {"response": 0, "answer": 0, "correct": 0}
    assert all(r["delta"] == 0 and r["mcnemar_p"] == 1.0 for r in res["accuracy"])


def test_the_planted_differences_are_found_exactly() -> None:
    a, b = _planted()
    c0, c1 = CONDITIONS
    res = compare_runs(_table(a), _table(b), fingerprint_data={
        "sh7": {"question": "q", "options": ["x", "y"], "video": "v"},
        "sh7-new": {"question": "q2", "options": ["x", "y"], "video": "v"}}).to_json()
    fr = res["frames"]
    assert (fr["different_indices"], fr["different_count"], fr["unknown"]) == (1, 1, 0)
    assert fr["identical"] == fr["compared"] - 2
    # s02's four frames against [0, 0.1]: the farthest frame from the other side's nearest
    ts = np.array(json.loads(_find(a, "s02", "m2", c0)["frame_timestamps"]))
    d = np.abs(ts[:, None] - np.array([0.0, 0.1])[None])
    hausdorff = max(d.min(axis=1).max(), d.min(axis=0).max())
    assert hausdorff > 0.5  # larger than s01's one frame moved by 0.5 s
    assert fr["max_offset_s"] == pytest.approx(hausdorff)
    assert (fr["max_offset_at"]["sample_id"], fr["max_offset_at"]["model"]) == ("s02", "m2")
    assert res["responses"] == {"response": 4, "answer": 3, "correct": 3}
    assert [(r["sample_id"], r["model"], r["condition"]) for r in res["flipped"]] == [
        ("s03", "m1", c0), ("s04", "m1", c0), ("s05", "m2", c1)]
    fps = res["fingerprints"]
    assert (fps["sample_hash"]["differ"], fps["sample_hash"]["samples"]) == (4, 1)
    assert fps["sample_hash"]["changes"] == [{"a": "sh7", "b": "sh7-new", "rows": 4, "fields": ["question"]}]
    assert (fps["model_fingerprint"]["differ"], fps["model_fingerprint"]["models"]) == (1, ["m2"])
    assert fps["model_fingerprint"]["changes"][0]["fields"] is None  # no data behind the hashes
    assert fps["prompt_hash"]["differ"] == 1 and fps["encoder_fingerprint"]["differ"] == 0
    assert fps["encoder_fingerprint"]["unknown"] == 0  # no-frame rows have none on either side
    assert res["only_a"] == [{"benchmark": "bench", "sample_id": "s10", "model": "m1", "condition": c1}]
    assert res["only_b"] == [{"benchmark": "bench", "sample_id": "s99", "model": "m1", "condition": c1}]
    # frames 2 + answers/responses 4 + fingerprints 4 + 1 + 1 rows, all on distinct rows
    assert res["rows"]["differing"] == 12
    assert res["differences"] == 12 + 2
    group = next(r for r in res["accuracy"] if (r["model"], r["condition"]) == ("m1", c1))
    assert (group["n"], group["only_a"], group["only_b"]) == (N - 1, 1, 1)


def test_accuracy_mcnemar_and_bootstrap_equal_an_independent_computation() -> None:
    a, b = _planted()
    rng = np.random.default_rng(5)
    for r in b:  # many flips in one group, so the test has something to say
        if (r["model"], r["condition"]) == ("m2", CONDITIONS[0]) and rng.random() < 0.4:
            r["correct"] = 1 - r["correct"] if rng.random() < 0.3 else 1
    res = compare_runs(_table(a), _table(b), n_boot=500, seed=3).to_json()
    keys_b = {(r["sample_id"], r["model"], r["condition"]): r for r in b}
    for group in res["accuracy"]:
        pairs = [(r["correct"], keys_b[(r["sample_id"], r["model"], r["condition"])]["correct"]) for r in a
                 if (r["model"], r["condition"]) == (group["model"], group["condition"])
                 and (r["sample_id"], r["model"], r["condition"]) in keys_b]
        x = np.array([p[0] for p in pairs], dtype=float)
        y = np.array([p[1] for p in pairs], dtype=float)
        assert group["n"] == len(pairs)
        assert group["accuracy_a"] == pytest.approx(x.mean()) and group["accuracy_b"] == pytest.approx(y.mean())
        a_only, b_only = int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
        assert (group["a_only_correct"], group["b_only_correct"]) == (a_only, b_only)
        expected_p = stats.binomtest(b_only, a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0
        assert group["mcnemar_p"] == pytest.approx(expected_p, rel=1e-12)
        boot = paired_bootstrap(x, y, n_boot=500, seed=3)
        assert (group["delta"], group["delta_ci_low"], group["delta_ci_high"]) == pytest.approx(
            (boot.estimate, boot.low, boot.high))
    busy = next(g for g in res["accuracy"] if (g["model"], g["condition"]) == ("m2", CONDITIONS[0]))
    assert busy["b_only_correct"] > 0 and busy["mcnemar_p"] < 1


@pytest.mark.parametrize(("a_only", "b_only"), [(0, 0), (0, 5), (3, 9), (12, 12), (40, 17), (1, 0), (12, 13),
                                               (990, 1009), (2400, 2250), (30000, 29500), (5000, 200)])
def test_mcnemar_exact_is_the_two_sided_binomial_test(a_only: int, b_only: int) -> None:
    want = stats.binomtest(b_only, a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0
    rel = 1e-12 if a_only + b_only <= 2000 else 1e-9
    assert mcnemar_exact(a_only, b_only) == pytest.approx(want, rel=rel, abs=1e-300)


def test_a_key_twice_is_an_error() -> None:
    rows = _rows()
    with pytest.raises(CompareError, match="repeat a key"):
        compare_runs(_table(rows + rows[:1]), _table(rows))


def _store(path: Path, rows: list[dict[str, Any]], data: dict[str, dict[str, Any]]) -> None:
    with RunStore(path) as store:
        run = store.start_run({}, environment=False)
        store.put([Prediction(
            benchmark=r["benchmark"], sample_id=r["sample_id"], model=r["model"], condition=r["condition"],
            response=r["response"], answer=r["answer"], correct=r["correct"],
            frames=FrameSet(tuple(json.loads(r["frame_indices"])), tuple(json.loads(r["frame_timestamps"])), 4),
            prompt_hash=r["prompt_hash"], sample_hash=r["sample_hash"], model_fingerprint=r["model_fingerprint"],
            encoder_fingerprint=r["encoder_fingerprint"]) for r in rows], run)
        store.put_fingerprints({h: ("sample", d) for h, d in data.items()})


def test_cli_on_two_stores_names_the_changed_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _planted()
    _store(tmp_path / "a" / "store.sqlite", a, {"sh7": {"question": "q", "options": ["x"], "video": "v"}})
    _store(tmp_path / "b" / "store.sqlite", b, {"sh7-new": {"question": "q", "options": ["y"], "video": "v"}})
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["fingerprints"]["sample_hash"]["changes"][0]["fields"] == ["options"]
    assert res["differences"] == 14 and len(res["flipped"]) == 3
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    text = capsys.readouterr().out
    assert "changed: options" in text and "correctness flipped (3)" in text and "only in B (1)" in text
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "a" / "store.sqlite")]) == 0
    assert "no differences" in capsys.readouterr().out


def test_a_table_without_condition_column_is_keyed_by_its_condition_columns() -> None:
    rows = _rows()
    for r in rows:
        strategy = r["strategy"]
        r.update(fps=10.0, seed=0, rotation=0, encoder="enc" if strategy == "maxprob" else None)
        r["condition"] = Condition(strategy, r["mode"], 4, encoder=r["encoder"]).key
    full = _table(rows)
    bare = full.drop_columns(["condition"])
    assert with_condition(bare).column("condition").to_pylist() == full.column("condition").to_pylist()
    res = compare_runs(full, bare).to_json()
    assert res["differences"] == 0 and res["rows"]["matched"] == len(rows)
