"""The centralized-option audit: tokenisation, distances, centroids, the exact test, per-model picks, CLI."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

from tempcore.cli import main
from tempcore.diagnostics.option_geometry import (
    OptionAuditError,
    audit_options,
    centrality,
    centroid,
    centroid_picks,
    chance_test,
    normalized_distance,
    token_edit_distance,
    tokenize,
)
from tempcore.records import Sample
from tempcore.tidy.table import write_table

C = "The man cuts the ginger twice."
N1 = "The man cuts the ginger three times."
N11 = "The man slices the ginger three times."
N21 = "The man cuts the onion three times."


def test_tokenize_and_distance_by_hand():
    assert tokenize("The man, cuts it TWICE.") == ["the", "man", "cuts", "it", "twice"]
    assert tokenize("Straße 3-times") == ["strasse", "3", "times"]
    assert token_edit_distance(list("kitten"), list("sitting")) == 3
    assert token_edit_distance(["a", "b", "c"], ["a", "x", "c"]) == 1
    assert token_edit_distance([], ["a", "b"]) == 2
    assert normalized_distance(C, N1) == pytest.approx(2 / 7)  # twice -> three, + times
    assert normalized_distance("", "") == 0.0
    assert normalized_distance("A b.", "a B") == 0.0


def test_paper_manipulated_set_makes_n1_the_centroid():
    # [C, N1(C), N1(N1(C)), N2(N1(C))]: every negative but N1(C) is derived from N1(C) (paper §3.3, Fig. 5)
    cen = centrality([C, N1, N11, N21])
    assert cen == pytest.approx(np.array([8, 4, 6, 6]) / 21)
    assert centroid([C, N1, N11, N21]) == 1
    # the original construction (every negative an edit of C) makes C the centroid
    assert centroid([C, N1, "The man slices the ginger twice.", "The man cuts the onion twice."]) == 0
    assert centroid(["yes", "no"]) is None  # two options always tie
    assert centroid(["a b", "a c", "a d"]) is None


def naive_distance(a, b):
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    return d[-1][-1]


def test_edit_distance_matches_naive_dp():
    rng = np.random.default_rng(0)
    for _ in range(300):
        a = list(rng.choice(list("abcd"), size=int(rng.integers(0, 9))))
        b = list(rng.choice(list("abcd"), size=int(rng.integers(0, 9))))
        assert token_edit_distance(a, b) == naive_distance(a, b) == token_edit_distance(b, a)


def exact_pvalue(k, counts, alternative):
    """Brute force over every outcome of the independent trials."""
    probs = {}
    for outcome in itertools.product([0, 1], repeat=len(counts)):
        p = np.prod([(1 / c) if o else (1 - 1 / c) for o, c in zip(outcome, counts)])
        probs[sum(outcome)] = probs.get(sum(outcome), 0.0) + p
    pmf = np.array([probs.get(i, 0.0) for i in range(len(counts) + 1)])
    if alternative == "greater":
        return pmf[k:].sum()
    if alternative == "less":
        return pmf[: k + 1].sum()
    return pmf[pmf <= pmf[k] * (1 + 1e-7)].sum()


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_chance_test_is_exact(alternative):
    counts = [2, 3, 4, 2, 3, 5, 4, 2]
    for k in range(len(counts) + 1):
        assert chance_test(k, counts, alternative) == pytest.approx(exact_pvalue(k, counts, alternative), rel=1e-9)
    for k in (0, 3, 9):
        assert chance_test(k, [4] * 9, alternative) == pytest.approx(
            stats.binomtest(k, 9, 0.25, alternative=alternative).pvalue)
    with pytest.raises(OptionAuditError):
        chance_test(1, [2], "both")


def samples():
    out = []
    central = [C, N1, "The man slices the ginger twice.", "The man cuts the onion twice."]
    for i in range(12):
        # questions 0..7: the centroid (C) is the answer; 8..11: answer elsewhere; task by parity
        answer = 0 if i < 8 else 2
        out.append(Sample("bench", f"q{i}", "v.mp4", "?", tuple(central), answer,
                          metadata={"task_type": "even" if i % 2 == 0 else "odd"}))
    out.append(Sample("bench", "tie", "v.mp4", "?", ("yes", "no"), 0, metadata={"task_type": "even"}))
    return out


def test_audit_counts_by_benchmark_and_task():
    res = audit_options(samples())["bench"]
    assert (res["n"], res["centroid_correct"], res["ties"], res["questions"]) == (12, 8, 1, 13)
    assert res["centroid_correct_rate"] == pytest.approx(8 / 12)
    assert res["chance_rate"] == 0.25
    assert res["p_value"] == pytest.approx(stats.binomtest(8, 12, 0.25).pvalue)
    assert res["task_field"] == "task_type"
    even, odd = res["by_task"]["even"], res["by_task"]["odd"]
    assert (even["n"], even["centroid_correct"], even["ties"]) == (6, 4, 1)
    assert (odd["n"], odd["centroid_correct"]) == (6, 4)


def picks_table():
    # text-only model "t" always answers option 0 (the centroid); "v" answers the truth; one parse failure
    rows = []
    for s in samples():
        rows.append(("t", s.sample_id, 0, int(s.answer == 0)))
        rows.append(("v", s.sample_id, None if s.sample_id == "q0" else s.answer,
                     0 if s.sample_id == "q0" else 1))
    n = len(rows)
    return pa.table({"benchmark": ["bench"] * n, "sample_id": [r[1] for r in rows], "model": [r[0] for r in rows],
                     "strategy": ["noframe"] * n, "mode": ["none"] * n, "k": [8] * n,
                     "window": pa.nulls(n, pa.int64()), "correct": pa.array([r[3] for r in rows], pa.int8()),
                     "answer": pa.array([r[2] for r in rows], pa.int64())})


def test_centroid_picks_per_model():
    res = {r["model"]: r for r in centroid_picks(picks_table(), samples())}
    t, v = res["t"], res["v"]
    assert (t["n"], t["n_parsed"], t["centroid_picks"], t["centroid_pick_rate"]) == (12, 12, 12, 1.0)
    assert t["chance_pick_rate"] == 0.25
    assert (t["accuracy_centroid_correct"], t["accuracy_centroid_wrong"]) == (1.0, 0.0)
    assert (t["n_centroid_correct"], t["n_centroid_wrong"]) == (8, 4)
    assert (v["n_parsed"], v["centroid_picks"]) == (11, 7)  # q0 unparsed
    assert v["accuracy_centroid_correct"] == pytest.approx(7 / 8) and v["accuracy_centroid_wrong"] == 1.0
    with pytest.raises(OptionAuditError, match="not in the annotations"):
        centroid_picks(picks_table(), samples()[:3])


def test_cli_audit_options(tmp_path, capsys):
    ann = tmp_path / "bench.jsonl"
    ann.write_text("\n".join(json.dumps({"id": s.sample_id, "video": "v.mp4", "question": "?",
                                         "options": list(s.options), "answer": s.answer,
                                         "task_type": s.metadata["task_type"]}) for s in samples()))
    pred = tmp_path / "p.csv"
    t = picks_table()
    write_table(t.set_column(0, "benchmark", pa.array(["generic"] * t.num_rows)), pred)
    assert main(["audit", "options", "--benchmark", "generic", "--annotations", str(ann), "--predictions", str(pred),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    b = out["benchmarks"]["generic"]
    assert {"n", "centroid_correct", "centroid_correct_rate", "chance_rate", "p_value", "by_task"} <= set(b)
    assert (b["n"], b["centroid_correct"]) == (12, 8)
    assert {m["model"]: m["centroid_pick_rate"] for m in out["models"]} == {"t": 1.0, "v": pytest.approx(7 / 11)}
    assert {"model", "strategy", "centroid_pick_rate"} <= set(out["models"][0])
    assert main(["audit", "options", "--benchmark", "generic", "--annotations", str(ann)]) == 0
    assert "centroid correct 8/12" in capsys.readouterr().out
    assert main(["audit"]) == 2
