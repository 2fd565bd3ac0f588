"""Issue 14: TVBench's time and vision ablations, answer agreement, order sensitivity and the
answer-prior audits — hand-worked examples, a naive second implementation on random tables, and
TVBench-shaped annotation files written here."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict

import numpy as np
import pyarrow as pa
import pytest

from tempcore.diagnostics.ablations import (
    agreement_measures,
    audit_ablations,
    order_sensitivity,
    prepare,
)
from tempcore.diagnostics.priors import (
    is_uncertain,
    label_priors,
    letter_chi2,
    prediction_priors,
    repeats_question,
    total_variation,
)
from tempcore.diagnostics.stats import paired_bootstrap, wilson_interval
from tempcore.diagnostics.table import DiagnosticsError
from tempcore.selection import SelectionError


def row(bench, sid, model, strategy, correct, *, answer=None, task=None, n_options=3, mode=None, **extra):
    r = {
        "benchmark": bench, "sample_id": sid, "model": model, "strategy": strategy,
        "mode": mode or ("qa" if strategy in ("maxprob", "minprob") else "none"), "k": 8, "window": None,
        "correct": int(correct), "answer": answer, "n_options": n_options,
    }
    if task is not None:
        r["task"] = task
    r.update(extra)
    return r


def table(rows):
    return pa.Table.from_pylist(rows)


# --- hand-worked ablation table -------------------------------------------------------------------


def hand_table():
    """One model, benchmark b, tasks t1 (4 questions, 3 options) and t2 (2 questions, 2 options).

    uniform correct: t1 1,1,1,0  t2 1,0     textonly: t1 1,0,0,0  t2 0,0
    """
    video = {"q1": 1, "q2": 1, "q3": 1, "q4": 0, "q5": 1, "q6": 0}
    text = {"q1": 1, "q2": 0, "q3": 0, "q4": 0, "q5": 0, "q6": 0}
    rows = []
    for sid in video:
        task, n_opt = ("t1", 3) if sid <= "q4" else ("t2", 2)
        rows.append(row("b", sid, "m", "uniform", video[sid], answer=0, task=task, n_options=n_opt))
        rows.append(row("b", sid, "m", "textonly", text[sid], answer=0, task=task, n_options=n_opt))
    return table(rows)


def test_ablation_table_hand_worked():
    out = audit_ablations(hand_table(), n_boot=500)
    by = {(r["task"], r["condition"]): r for r in out["models"]}
    assert set(out["models"][0]) == {"model", "benchmark", "task", "condition", "n", "correct", "accuracy",
                                     "ci_low", "ci_high", "drop", "drop_ci_low", "drop_ci_high"}
    t1u, t1x, t2u, t2x = by["t1", "uniform"], by["t1", "textonly"], by["t2", "uniform"], by["t2", "textonly"]
    assert (t1u["n"], t1u["correct"], t1u["accuracy"]) == (4, 3, 0.75)
    assert (t1x["correct"], t1x["accuracy"]) == (1, 0.25)
    assert (t2u["accuracy"], t2x["accuracy"]) == (0.5, 0.0)
    low, high = wilson_interval(3, 4)
    assert t1u["ci_low"] == pytest.approx(float(low)) and t1u["ci_high"] == pytest.approx(float(high))
    assert t1u["drop"] is None
    assert t1x["drop"] == pytest.approx(0.5) and t2x["drop"] == pytest.approx(0.5)
    assert t1x["drop_ci_low"] <= 0.5 <= t1x["drop_ci_high"]
    avg = {r["condition"]: r for r in out["averages"]}
    # macro: mean of task accuracies; micro: pooled; chance: mean of (1/3, 1/2)
    assert avg["uniform"]["macro"] == pytest.approx((0.75 + 0.5) / 2)
    assert avg["uniform"]["micro"] == pytest.approx(4 / 6)
    assert avg["textonly"]["macro"] == pytest.approx(0.125)
    assert avg["textonly"]["micro"] == pytest.approx(1 / 6)
    assert avg["uniform"]["chance"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert avg["uniform"]["gain"] == pytest.approx(0.625 - 5 / 12)
    assert set(out["averages"][0]) == {"model", "benchmark", "condition", "macro", "micro", "chance", "gain"}


def test_chance_unknown_without_option_counts_and_tasks_from_annotations():
    t = hand_table().drop_columns(["n_options", "task"])
    out = audit_ablations(t, n_boot=200)
    assert {r["task"] for r in out["models"]} == {None}
    assert all(r["chance"] is None and r["gain"] is None for r in out["averages"])
    tasks = {("b", f"q{i}"): "t1" if i <= 4 else "t2" for i in range(1, 7)}
    n_opt = {("b", f"q{i}"): 4 for i in range(1, 7)}
    out = audit_ablations(t, task_of_sample=tasks, n_options_of_sample=n_opt, n_boot=200)
    assert {r["task"] for r in out["models"]} == {"t1", "t2"}
    assert out["averages"][0]["chance"] == pytest.approx(0.25)


def test_ambiguous_and_duplicate_rows_are_errors():
    t = hand_table()
    rows = t.to_pylist()
    bad = rows + [dict(rows[0], k=16, sample_id="q1")]
    with pytest.raises(DiagnosticsError, match="several k values"):
        audit_ablations(table(bad))
    out = audit_ablations(table(bad), filters={"uniform": {"k": 8}}, n_boot=100)
    assert next(r for r in out["models"] if r["condition"] == "uniform" and r["task"] == "t1")["n"] == 4
    with pytest.raises(DiagnosticsError, match="duplicate predictions for sample 'q1'"):
        audit_ablations(table(rows + [rows[0]]))
    with pytest.raises(DiagnosticsError, match="no rows of the video condition 'maxprob'"):
        audit_ablations(t, video="maxprob")


def test_rotations_and_oracle_windows_are_not_counted():
    rows = hand_table().to_pylist()
    extra = [dict(rows[3], rotation=1, correct=1), dict(rows[3], window=2, correct=1)]
    rows = [dict(r, rotation=0) for r in rows] + extra
    out = audit_ablations(table(rows), n_boot=100)
    t1u = next(r for r in out["models"] if r["condition"] == "uniform" and r["task"] == "t1")
    assert (t1u["n"], t1u["correct"]) == (4, 3)


# --- agreement: a table that separates the four measures ------------------------------------------


def test_agreement_definitions_are_separated():
    # 10 questions. video correct on 1..6; image (single) correct on 1..4 and 7.
    # conditional |C_img ∩ C_vid| / |C_img| = 4/5; symmetric: same correctness on 1..4, 8..10 = 7/10;
    # |C_vid ∩ C_img| / |C_vid| (the other, impossible reading) = 4/6 — must not be what we report.
    # Chosen options: the same on 1..4 (both right, so same option) and on 8, 9 (both wrong, same wrong
    # option); 10 both wrong but different options -> same_option 6/10; parse failure on 5 (video wrong? no).
    vid = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    img = [1, 1, 1, 1, 0, 0, 1, 0, 0, 0]
    ans_v = [0, 0, 0, 0, 0, 0, 1, 2, 2, 1]
    ans_i = [0, 0, 0, 0, None, 1, 0, 2, 2, 2]
    rows = []
    for i in range(10):
        rows.append(row("b", f"q{i}", "m", "uniform", vid[i], answer=ans_v[i]))
        rows.append(row("b", f"q{i}", "m", "single", img[i], answer=ans_i[i]))
    out = audit_ablations(table(rows), n_boot=100)
    [a] = out["agreement"]
    assert set(a) == {"model", "a", "b", "conditional", "symmetric", "same_option", "kappa", "n"}
    assert (a["a"], a["b"], a["n"]) == ("uniform", "single", 10)
    assert a["conditional"] == pytest.approx(4 / 5)
    assert a["symmetric"] == pytest.approx(7 / 10)
    assert a["same_option"] == pytest.approx(6 / 10)
    pe = 0.6 * 0.5 + 0.4 * 0.5
    assert a["kappa"] == pytest.approx((0.7 - pe) / (1 - pe))
    assert len({a["conditional"], a["symmetric"], a["same_option"], a["kappa"], 4 / 6}) == 5


def test_agreement_undefined_cases():
    m = agreement_measures(np.array([1, 1]), np.array([1, 1]), np.array([0, 0]), np.array([0, 0]))
    assert m["kappa"] is None and m["symmetric"] == 1.0 and m["conditional"] == 1.0
    m = agreement_measures(np.array([1, 0]), np.array([0, 0]))
    assert m["conditional"] is None and m["same_option"] is None


def test_paper_marginals_only_the_inferred_reading_fits():
    """TVBench reports e.g. 91.0% agreement with image accuracy below video accuracy; with 100 questions,
    video 60 right, image 45 right, 41 of them both: only |C_img ∩ C_vid| / |C_img| gives 91.1%."""
    vid = np.array([1] * 60 + [0] * 40, dtype=bool)
    img = np.zeros(100, dtype=bool)
    img[:41] = True
    img[60:64] = True
    m = agreement_measures(vid, img)
    assert m["conditional"] == pytest.approx(41 / 45)
    assert abs(m["symmetric"] - 0.91) > 0.1 and abs(41 / 60 - 0.91) > 0.1


# --- order sensitivity ----------------------------------------------------------------------------


def test_order_sensitivity_hand_worked_and_crossed_with_taxonomy():
    # two models; s1 right in order, wrong shuffled for both (OS 1); s2 right in both (OS 0);
    # s3 right shuffled only for one model (OS -0.5); s4 lacks model m2's shuffled row (incomplete).
    rows = []
    plan = {"s1": ((1, 1), (0, 0)), "s2": ((1, 1), (1, 1)), "s3": ((0, 0), (1, 0)), "s4": ((1, 1), (0, None))}
    for sid, (vid, shuf) in plan.items():
        for mi, m in enumerate(("m1", "m2")):
            rows.append(row("b", sid, m, "uniform", vid[mi]))
            if shuf[mi] is not None:
                rows.append(row("b", sid, m, "shuffled", shuf[mi], variant="uniform"))
            # taxonomy rows: s1 temporally grounded (FSS 1, LIS 1); s2 trivial; s3 frame-agnostic
            fss_plus = {"s1": 1, "s2": 1, "s3": 0, "s4": 1}[sid]
            fss_minus = {"s1": 0, "s2": 1, "s3": 0, "s4": 0}[sid]
            nf = {"s1": 0, "s2": 1, "s3": 0, "s4": 0}[sid]
            rows.append(row("b", sid, m, "maxprob", fss_plus))
            rows.append(row("b", sid, m, "minprob", fss_minus))
            rows.append(row("b", sid, m, "noframe", nf))
    out = audit_ablations(table(rows), n_boot=100)
    samples = {s["sample_id"]: s for s in out["order"]["samples"]}
    assert set(samples) == {"s1", "s2", "s3"}
    assert samples["s1"]["os_shuffled"] == 1.0 and samples["s2"]["os_shuffled"] == 0.0
    assert samples["s3"]["os_shuffled"] == -0.5 and samples["s1"]["os_reversed"] is None
    b = out["order"]["benchmarks"]["b"]
    assert b == {"n": 3, "order_sensitive": pytest.approx(1 / 3),
                 "order_sensitive_among_temporally_sensitive": 1.0}
    assert set(samples["s1"]) == {"benchmark", "sample_id", "os_shuffled", "os_reversed"}


def test_order_sensitivity_without_taxonomy_rows_has_no_crossing():
    rows = [row("b", "s1", "m", "uniform", 1), row("b", "s1", "m", "reversed", 0),
            row("b", "s2", "m", "uniform", 1), row("b", "s2", "m", "reversed", 1)]
    out = audit_ablations(table(rows), n_boot=50)
    assert out["order"]["benchmarks"]["b"] == {"n": 2, "order_sensitive": 0.5,
                                               "order_sensitive_among_temporally_sensitive": None}


# --- a naive second implementation on random tables ---------------------------------------------


def random_rows(seed):
    rng = np.random.default_rng(seed)
    conds = ["uniform", "textonly", "noframe", "single", "shuffled", "reversed"]
    rows = []
    for b in ("tvb", "mvb"):
        for s in range(int(rng.integers(15, 30))):
            task = f"t{int(rng.integers(0, 3))}"
            n_opt = int(rng.integers(2, 6))
            for m in ("m1", "m2", "m3"):
                for c in conds:
                    if rng.random() < 0.1:
                        continue
                    ans = None if rng.random() < 0.1 else int(rng.integers(0, n_opt))
                    rows.append(row(b, f"{b}{s}", m, c, rng.random() < 0.5, answer=ans, task=task, n_options=n_opt))
    return rows


def naive(rows, video="uniform", tau=0.15, n_boot=300):
    cell = {(r["benchmark"], r["sample_id"], r["model"], r["strategy"]): r for r in rows}
    task = {(r["benchmark"], r["sample_id"]): r["task"] for r in rows}
    nopt = {(r["benchmark"], r["sample_id"]): r["n_options"] for r in rows}
    models = sorted({r["model"] for r in rows})
    conds = [video] + [c for c in ("textonly", "noframe", "single", "shuffled", "reversed")
                       if any(r["strategy"] == c for r in rows)]
    groups = defaultdict(list)
    for (b, s, m, c), r in cell.items():
        groups[(m, b, task[b, s], c)].append(r["correct"])
    out = {}
    for (m, b, t, c), vals in groups.items():
        res = {"n": len(vals), "correct": sum(vals)}
        if c != video:
            a, v = [], []
            for (bb, s, mm, cc), r in cell.items():
                if (mm, bb, cc) == (m, b, c) and task[bb, s] == t and (bb, s, m, video) in cell:
                    a.append(r["correct"])
                    v.append(cell[bb, s, m, video]["correct"])
            boot = paired_bootstrap(a, v, n_boot=n_boot, seed=0)
            res.update(drop=boot.estimate, lo=boot.low, hi=boot.high)
        out[m, b, t, c] = res
    averages = {}
    for m in models:
        for b in {r["benchmark"] for r in rows}:
            for c in conds:
                ts = sorted({t for (mm, bb, t, cc) in out if (mm, bb, cc) == (m, b, c)})
                if not ts:
                    continue
                accs = [out[m, b, t, c]["correct"] / out[m, b, t, c]["n"] for t in ts]
                chances = []
                for t in ts:
                    inv = [1 / nopt[k] for k in task if k[0] == b and task[k] == t]
                    chances.append(sum(inv) / len(inv))
                averages[m, b, c] = (sum(accs) / len(accs),
                                     sum(out[m, b, t, c]["correct"] for t in ts) / sum(out[m, b, t, c]["n"] for t in ts),
                                     sum(chances) / len(chances))
    agree = {}
    for m in models:
        for i, a in enumerate(conds):
            for bcond in conds[i + 1:]:
                keys = [k for k in task if (k[0], k[1], m, a) in cell and (k[0], k[1], m, bcond) in cell]
                ca = [cell[k[0], k[1], m, a]["correct"] for k in keys]
                cb = [cell[k[0], k[1], m, bcond]["correct"] for k in keys]
                xa = [cell[k[0], k[1], m, a]["answer"] for k in keys]
                xb = [cell[k[0], k[1], m, bcond]["answer"] for k in keys]
                n = len(keys)
                both = sum(x and y for x, y in zip(ca, cb))
                po = sum(x == y for x, y in zip(ca, cb)) / n
                pa_, pb_ = sum(ca) / n, sum(cb) / n
                pe = pa_ * pb_ + (1 - pa_) * (1 - pb_)
                agree[m, a, bcond] = (both / sum(cb) if sum(cb) else None, po,
                                      sum(x is not None and x == y for x, y in zip(xa, xb)) / n,
                                      (po - pe) / (1 - pe) if pe != 1 else None, n)
    os_ = {}
    for name in ("shuffled", "reversed"):
        for b in {r["benchmark"] for r in rows}:
            panel = sorted({r["model"] for r in rows if r["benchmark"] == b and r["strategy"] in (video, name)})
            for k in task:
                if k[0] != b:
                    continue
                diffs = []
                for m in panel:
                    if (b, k[1], m, video) in cell and (b, k[1], m, name) in cell:
                        diffs.append(cell[b, k[1], m, video]["correct"] - cell[b, k[1], m, name]["correct"])
                    else:
                        diffs = None
                        break
                os_[name, k] = None if diffs is None else sum(diffs) / len(diffs)
    return out, averages, agree, os_


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_naive_implementation_on_random_tables(seed):
    rows = random_rows(seed)
    out = audit_ablations(table(rows), n_boot=300)
    ref, ref_avg, ref_agree, ref_os = naive(rows)
    got = {(r["model"], r["benchmark"], r["task"], r["condition"]): r for r in out["models"]}
    assert set(got) == set(ref)
    for k, r in ref.items():
        g = got[k]
        assert (g["n"], g["correct"]) == (r["n"], r["correct"])
        if "drop" in r:
            assert g["drop"] == pytest.approx(r["drop"])
            assert g["drop_ci_low"] == pytest.approx(r["lo"]) and g["drop_ci_high"] == pytest.approx(r["hi"])
    avg = {(r["model"], r["benchmark"], r["condition"]): r for r in out["averages"]}
    assert set(avg) == set(ref_avg)
    for k, (macro, micro, chance) in ref_avg.items():
        assert avg[k]["macro"] == pytest.approx(macro) and avg[k]["micro"] == pytest.approx(micro)
        assert avg[k]["chance"] == pytest.approx(chance)
    agr = {(r["model"], r["a"], r["b"]): r for r in out["agreement"]}
    assert set(agr) == set(ref_agree)
    for k, (cond, sym, same, kappa, n) in ref_agree.items():
        g = agr[k]
        assert g["n"] == n and g["symmetric"] == pytest.approx(sym) and g["same_option"] == pytest.approx(same)
        assert (g["conditional"] is None) == (cond is None)
        if cond is not None:
            assert g["conditional"] == pytest.approx(cond)
        if kappa is not None:
            assert g["kappa"] == pytest.approx(kappa)
    samples = {(s["benchmark"], s["sample_id"]): s for s in out["order"]["samples"]}
    for (name, k), v in ref_os.items():
        got_v = samples.get(k, {}).get(f"os_{name}")
        assert (got_v is None) == (v is None), (name, k)
        if v is not None:
            assert got_v == pytest.approx(v)



def _chunked_dictionaries(t, names, pieces=3):
    """``t`` with ``names`` as chunked dictionary columns (as a Parquet file's row groups give)."""
    for name in names:
        values = t.column(name).to_pylist()
        cut = max(len(values) // pieces, 1)
        parts = [values[i:i + cut] for i in range(0, len(values), cut)]
        t = t.set_column(t.column_names.index(name), name,
                         pa.chunked_array([pa.array(p).dictionary_encode() for p in parts]))
    return t


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_narrow_encoding_equals_encoded_predictions(seed):
    """``encode`` (narrow codes, no Python loop per row) gives what ``EncodedPredictions.from_table``
    gives, and the audit over either is the same object; the drop intervals, taken for all rows in
    one quantile call, equal one bootstrap per row."""
    from tempcore.diagnostics.ablations import _bootstrap_from_counts, ablation_table, encode
    from tempcore.diagnostics.table import EncodedPredictions

    rows = random_rows(seed)
    order = np.random.default_rng(seed).permutation(len(rows))
    t = table([rows[i] for i in order])
    for variant in (t, _chunked_dictionaries(t, ["benchmark", "sample_id", "model", "strategy", "task"])):
        a, b = encode(variant), EncodedPredictions.from_table(variant)
        assert (a.sample_benchmark, a.sample_id, a.models) == (b.sample_benchmark, b.sample_id, b.models)
        assert a.sample_code.tolist() == b.sample_code.tolist() and a.model_code.tolist() == b.model_code.tolist()
        assert audit_ablations(variant, n_boot=200) == audit_ablations(b, n_boot=200)
    # chunk-by-chunk paths (dictionary strategy / task, chunked integer columns, every row used)
    # against the general ones (plain strings; an oracle window row makes not every row used)
    import pyarrow.compute as pc

    plain = audit_ablations(t, n_boot=200)
    chunked = _chunked_dictionaries(t, ["benchmark", "sample_id", "model", "strategy", "task"], pieces=4)
    for name in ("answer", "correct", "n_options"):
        values = pc.fill_null(t.column(name), -1) if name == "answer" else t.column(name)
        values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        cut = len(values) // 4
        chunked = chunked.set_column(chunked.column_names.index(name), name,
                                     pa.chunked_array([values.slice(0, cut), values.slice(cut)]))
    assert audit_ablations(chunked, n_boot=200) == plain
    oracle = table([rows[i] for i in order] + [dict(rows[0], window=3)])  # first occurrences kept
    assert audit_ablations(oracle, n_boot=200) == plain
    prep = prepare(t, ["uniform", "textonly", "shuffled"])
    got, _ = ablation_table(prep, n_boot=200, seed=3)
    checked = 0
    for r in got:
        if r["drop"] is None:
            continue
        mi, ci = prep.models.index(r["model"]), prep.conditions.index(r["condition"])
        sel = (prep.benchmarks == r["benchmark"]) & (np.asarray(prep.tasks, dtype=object)[prep.task_code] == r["task"])
        v, c = prep.correct[0][sel, mi], prep.correct[ci][sel, mi]
        both = ~np.isnan(v) & ~np.isnan(c)
        d = np.rint(v[both] - c[both]).astype(int)
        counts = np.array([(d == -1).sum(), (d == 0).sum(), (d == 1).sum()])
        assert (r["drop"], r["drop_ci_low"], r["drop_ci_high"]) == \
            _bootstrap_from_counts(counts, np.array([-1.0, 0.0, 1.0]), 200, 0.95, 3)
        checked += 1
    assert checked > 5

def test_prepare_matrices_order_sensitivity_api():
    rows = random_rows(5)
    prep = prepare(table(rows), ["uniform", "shuffled"])
    assert prep.correct.shape == (2, prep.enc.n_samples, 3)
    res = order_sensitivity(prep, tau=0.15)
    assert set(res.os) == {"shuffled"}
    ok = ~np.isnan(res.os["shuffled"])
    assert ((res.classes["shuffled"][ok] == "key") == (np.round(res.os["shuffled"][ok], 12) > 0.15)).all()
    # exactly the float64 mean of the differences over the panel (every model here has rows)
    d = prep.correct[0].astype(np.float64) - prep.correct[1].astype(np.float64)
    np.testing.assert_array_equal(res.os["shuffled"], d.mean(axis=1))


# --- label priors on TVBench-shaped files ---------------------------------------------------------


def write_tvbench(tmp_path):
    """An MVBench / TVBench release: json/{task}.json with candidates, answer (text), start / end."""
    json_dir = tmp_path / "json"
    json_dir.mkdir()
    counts = []
    # Action Count: '3' correct for 9 of 20 questions (45%), options always '2', '3', '4'
    answers = ["3"] * 9 + ["2"] * 6 + ["4"] * 5
    for i, a in enumerate(answers):
        counts.append({"video": f"v{i}.mp4", "question": "How many times did the person jump?",
                       "candidates": ["2", "3", "4"], "answer": a})
    (json_dir / "action_count.json").write_text(json.dumps(counts))
    seq = []
    for i in range(6):
        seq.append({"video": f"s{i}.mp4", "question": "What did the person do to the laptop first?",
                    "candidates": ["Opened the laptop.", "Closed the box.", "Not sure"][: 2 + (i % 2)],
                    "answer": "Opened the laptop.", "start": 1.0 + i, "end": 5.0 + i})
    seq.append({"video": "s9.mp4", "question": "Which object did the person take?",
                "candidates": ["the person take object", "The cup.", "The bag."], "answer": "The bag.",
                "start": 0.0, "end": 3.0})
    (json_dir / "action_sequence.json").write_text(json.dumps(seq))
    return json_dir


def test_label_priors_on_tvbench_files(tmp_path):
    from tempcore.benchmarks import load_benchmark

    samples = load_benchmark("tvbench", write_tvbench(tmp_path)).samples
    pri = label_priors(samples)
    tasks = pri["tvbench"]["tasks"]
    ac = tasks["action_count"]
    assert ac["n"] == 20
    assert ac["answers_by_text"] == {"3": 9, "2": 6, "4": 5}
    assert ac["answers_by_letter"] == {"A": 6, "B": 9, "C": 5}
    assert ac["majority_baseline"] == pytest.approx(0.45)
    assert ac["chance"] == pytest.approx(1 / 3)
    from scipy import stats

    expected = stats.chisquare([6, 9, 5], [20 / 3] * 3).pvalue
    assert ac["letter_chi2_p"] == pytest.approx(expected)
    assert all(f["count"] == 0 for f in ac["flags"].values())
    seq = tasks["action_sequence"]
    assert seq["answers_by_letter"] == {"A": 6, "C": 1}
    assert seq["chance"] == pytest.approx((3 * 0.5 + 3 / 3 + 1 / 3) / 7)
    assert seq["flags"]["uncertain_option"] == {"count": 3, "examples": ["action_sequence_1", "action_sequence_3",
                                                                         "action_sequence_5"]}
    assert seq["flags"]["subject_only_in_correct"]["count"] == 6  # 'laptop' only in the correct option
    assert seq["flags"]["option_repeats_question"] == {"count": 1, "examples": ["action_sequence_6"]}
    assert set(ac) == {"n", "answers_by_text", "answers_by_letter", "majority_baseline", "chance",
                       "letter_chi2_p", "flags"}


def test_letter_chi2_with_varying_option_counts_and_flag_rules():
    # two 2-option questions (A, A) and one 4-option (A): expected A = 1 + 1/4, B = 1 + 1/4, C = D = 1/4
    exp = np.array([1.25, 1.25, 0.25, 0.25])
    obs = np.array([3, 0, 0, 0])
    from scipy import stats

    assert letter_chi2([0, 0, 0], [2, 2, 4]) == pytest.approx(stats.chi2.sf(((obs - exp) ** 2 / exp).sum(), 3))
    assert letter_chi2([0], [1]) is None
    assert is_uncertain("None of the above") and is_uncertain("I'm not sure.") and not is_uncertain("notes")
    assert repeats_question("The man opens the door", "Why does the man open the door?")
    assert not repeats_question("The door", "Why does the man open the door?")  # one content word
    assert total_variation({"a": 1, "b": 1}, {"a": 2}) == pytest.approx(0.5)


def test_prediction_priors_text_only_model_always_says_three(tmp_path):
    from tempcore.benchmarks import load_benchmark

    samples = [s for s in load_benchmark("tvbench", write_tvbench(tmp_path)).samples
               if s.metadata["task"] == "action_count"]
    rows = []
    for i, s in enumerate(samples):
        ans = 1 if i < 18 else (None if i == 18 else 0)  # '3' 18 times, one parse failure, one '2'
        rows.append(row("tvbench", s.sample_id, "gpt", "textonly", ans == s.answer, answer=ans))
    [r] = prediction_priors(table(rows), samples)
    assert (r["model"], r["condition"], r["task"], r["n"], r["unparsed"]) == ("gpt", "textonly", "action_count", 20, 1)
    assert r["chosen_by_text"] == {"3": 18, "2": 1}
    assert r["most_chosen"] == "3" and r["most_chosen_count"] == 18
    assert r["majority_baseline"] == pytest.approx(0.45)
    label = Counter(s.options[s.answer] for i, s in enumerate(samples) if i != 18)
    assert r["label_by_text"] == dict(label)
    p = {"3": 18 / 19, "2": 1 / 19}
    q = {k: v / 19 for k, v in label.items()}
    assert r["tv_text"] == pytest.approx(0.5 * sum(abs(p.get(k, 0) - q.get(k, 0)) for k in set(p) | set(q)))
    assert r["chosen_by_letter"] == {"B": 18, "A": 1}
    assert r["accuracy"] == pytest.approx(sum(x["correct"] for x in rows) / 20)
    with pytest.raises(DiagnosticsError, match="not in the annotations"):
        prediction_priors(table(rows), samples[:3])


def test_naive_wilson_reference_is_not_trivial():
    # guards the hand-worked test: the Wilson interval of 3 of 4 is not symmetric around 0.75
    low, high = wilson_interval(3, 4)
    assert not math.isclose(0.75 - float(low), float(high) - 0.75)


# --- the CLI ----------------------------------------------------------------------------------------


def _main(argv, capsys):
    from tempcore.cli import main

    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_audit_ablations_json_and_text(tmp_path, capsys):
    import pyarrow.parquet as pq

    rows = random_rows(3)
    path = tmp_path / "preds.parquet"
    pq.write_table(table(rows), path)
    code, out, _ = _main(["audit", "ablations", "--predictions", str(path), "--json", "--n-boot", "200"], capsys)
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"models", "averages", "agreement", "order"}
    assert set(data["order"]) == {"benchmarks", "samples"}
    assert set(data["order"]["benchmarks"]["tvb"]) == {"n", "order_sensitive",
                                                       "order_sensitive_among_temporally_sensitive"}
    assert data == json.loads(json.dumps(audit_ablations(table(rows), n_boot=200)))
    code, out, _ = _main(["audit", "ablations", "--predictions", str(path), "--video", "single",
                          "--by", "task", "--n-boot", "50"], capsys)
    assert code == 0 and "macro" in out and "single vs" in out
    code, _, err = _main(["audit", "ablations", "--predictions", str(path), "--by", "nope"], capsys)
    assert code == 1 and "no column 'nope'" in err


def test_cli_audit_priors_json(tmp_path, capsys):
    json_dir = write_tvbench(tmp_path)
    code, out, _ = _main(["audit", "priors", "--benchmark", "tvbench", "--annotations", str(json_dir), "--json"],
                         capsys)
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"benchmarks", "models"} and data["models"] == []
    ac = data["benchmarks"]["tvbench"]["tasks"]["action_count"]
    assert ac["majority_baseline"] == pytest.approx(0.45)
    assert set(ac["flags"]) == {"uncertain_option", "option_repeats_question", "subject_only_in_correct"}
    from tempcore.benchmarks import load_benchmark

    samples = load_benchmark("tvbench", json_dir).samples
    preds = tmp_path / "p.csv"
    import pyarrow.csv as pcsv

    pcsv.write_csv(table([row("tvbench", s.sample_id, "gpt", "textonly", s.answer == 0, answer=0) for s in samples]),
                   preds)
    code, out, _ = _main(["audit", "priors", "--benchmark", "tvbench", "--annotations", str(json_dir),
                          "--predictions", str(preds), "--json"], capsys)
    models = json.loads(out)["models"]
    assert code == 0 and {m["task"] for m in models} == {"action_count", "action_sequence"}
    assert all(m["chosen_by_letter"] == {"A": m["n"]} for m in models)
    code, out, _ = _main(["audit", "priors", "--benchmark", "tvbench", "--annotations", str(json_dir)], capsys)
    assert code == 0 and "action_count" in out and "majority 45.0" in out


# --- TVBench's segment conventions in the strategies ------------------------------------------------


def tvbench_get_index(bound, fps, max_frame, num_segments):
    """The release's frame sampler, transcribed (segment midpoints within the bound)."""
    start, end = bound if bound else (-100000, 100000)
    start_idx = max(0, round(start * fps))
    end_idx = min(round(end * fps), max_frame)
    seg_size = float(end_idx - start_idx) / num_segments
    return [int(start_idx + (seg_size / 2) + np.round(seg_size * idx)) for idx in range(num_segments)]


def test_uniform_tvbench_variant_matches_the_release_rule():
    from tempcore.selection import uniform, uniform_positions

    assert uniform_positions(10, 4, "tvbench").tolist() == [1, 3, 5, 8]  # seg 2.25: 1.125, 3.125, 5.125, 8.125
    for n in (17, 40, 161, 1000):
        for k in (3, 8, 16):
            assert uniform_positions(n, k, "tvbench").tolist() == tvbench_get_index(None, 1.0, n - 1, k)
    # inside a bound: frames at 1 fps, bound [20, 60] s -> the release's indices, in the caller's numbering
    t = np.arange(100, dtype=float)
    got = uniform(t, None, 16, variant="tvbench", start=20.0, end=60.0).indices
    assert list(got) == tvbench_get_index((20, 60), 1.0, 99, 16)


def test_reorderings_and_single_crop_to_the_segment_first():
    from tempcore.selection import reversed as reversed_
    from tempcore.selection import shuffled, single, uniform

    t = np.arange(100) / 10
    base = uniform(t, None, 4, start=2.0, end=4.0)
    assert all(2.0 <= x <= 4.0 for x in base.timestamps)
    rev = reversed_(t, None, 4, start=2.0, end=4.0)
    assert rev.indices == base.indices[::-1]
    shuf = shuffled(t, None, 4, start=2.0, end=4.0, sample_id="q")
    assert sorted(shuf.indices) == sorted(base.indices)
    assert sorted(shuffled(t, None, 4, sample_id="q").indices) != sorted(base.indices)  # uncropped differs
    for sid in ("a", "b", "c", "d"):
        [i] = single(t, None, 4, start=2.0, end=4.0, sample_id=sid).indices
        assert 20 <= i <= 40
    # unsorted input: the caller's indices come back
    perm = np.random.default_rng(0).permutation(100)
    got = reversed_(t[perm], None, 4, start=2.0, end=4.0)
    assert [float(t[perm][i]) for i in got.indices] == list(rev.timestamps)
    with pytest.raises(SelectionError, match=r"no frame inside the segment \[20.0, 30.0\]"):
        shuffled(t, None, 4, start=20.0, end=30.0, sample_id="q")


def test_the_readme_conditions_configure_and_select():
    from tempcore.run.config import RunConfig
    from tempcore.selection import select

    conditions = [{"strategy": "uniform", "variant": "tvbench"}, {"strategy": "textonly"}, {"strategy": "noframe"},
                  {"strategy": "single"}, {"strategy": "shuffled", "variant": "uniform:tvbench"},
                  {"strategy": "reversed", "variant": "uniform:tvbench"}]
    cfg = RunConfig.from_dict({"benchmarks": [{"name": "tvbench", "annotations": "x"}], "models": ["m"],
                               "conditions": conditions, "k": 16})
    assert not cfg.needs_encoder
    t = np.arange(161) / 10
    got = {c.strategy: select(c.condition(cfg), t, None, sample_id="q") for c in cfg.conditions}
    assert list(got["uniform"].indices) == tvbench_get_index(None, 1.0, 160, 16)
    assert got["reversed"].indices == got["uniform"].indices[::-1]
    assert sorted(got["shuffled"].indices) == sorted(got["uniform"].indices)
    assert len(got["single"]) == 1 and got["textonly"].indices == () and got["noframe"].grey


def test_result_tables_for_the_report():
    from tempcore.diagnostics.ablations import result_tables

    tables = result_tables(audit_ablations(hand_table(), n_boot=100))
    assert set(tables) == {"ablation_table", "ablation_averages", "answer_agreement", "order_sensitivity"}
    text = tables["ablation_averages"].to_text()
    assert "62.5" in text and "41.7" in text  # macro of uniform, chance (1/3 + 1/2) / 2
    assert tables["answer_agreement"].rows[0]["conditional"] == pytest.approx(1.0)  # textonly right only on q1
    assert tables["order_sensitivity"].rows == []


def test_built_in_condition_names_are_canonical_strategies():
    """The names ``encode`` takes as canonical without loading the strategy registry are registered
    strategies under exactly those names; any other name still goes through ``canonical_strategy``."""
    from tempcore.diagnostics.ablations import _BUILT_IN_CONDITIONS, _strategies_canonical
    from tempcore.selection.registry import STRATEGIES, canonical_strategy

    for name in _BUILT_IN_CONDITIONS:
        assert name in STRATEGIES and canonical_strategy(name) == name
    t = table([row("b", "s1", "m", "Uniform", 1), row("b", "s1", "m", "textonly", 1)])
    coded = t.set_column(t.column_names.index("strategy"), "strategy", t.column("strategy").dictionary_encode())
    assert not _strategies_canonical(coded)
    out = audit_ablations(coded, conditions=["textonly"])
    assert {r["condition"] for r in out["models"]} == {"uniform", "textonly"}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_json_text_is_json_dumps_of_the_audit_byte_for_byte(seed):
    """``audit_ablations_json`` (what ``--json`` prints; per-sample rows written column-wise) is
    ``json.dumps(audit_ablations(...))`` exactly, also for ids needing escapes, non-ASCII ids,
    incomplete samples (NaN OS -> null), one reordering only, and no reordering at all."""
    from tempcore.diagnostics.ablations import audit_ablations_json

    rows = random_rows(seed)
    odd = ['q"1', "q\\2", "é3", "☃4", "q\n5", "</6>"]
    for r in rows:
        sid = r["sample_id"]
        if sid.endswith(("1", "4")):
            r["sample_id"] = odd[int(sid[3:]) % len(odd)] + sid
    rng = np.random.default_rng(seed)
    drop = rng.random(len(rows)) < 0.1  # some samples lose a reordering row of one model: no OS
    kept = [r for r, d in zip(rows, drop) if not (d and r["strategy"] in ("shuffled", "reversed"))]
    for variant in (kept, [r for r in kept if r["strategy"] != "reversed"],
                    [r for r in kept if r["strategy"] not in ("shuffled", "reversed")]):
        for kwargs in ({"n_boot": 100}, {"n_boot": 50, "seed": 4, "video": "single", "tau": 0.3}):
            text = audit_ablations_json(table(variant), **kwargs)
            assert text == json.dumps(audit_ablations(table(variant), **kwargs))
    text = audit_ablations_json(table(kept), n_boot=50)
    samples = json.loads(text)["order"]["samples"]
    assert any(s["os_shuffled"] is None for s in samples) and any(isinstance(s["os_shuffled"], float) for s in samples)
    assert any("☃" in s["sample_id"] for s in samples)


def _parquet_round_trip(tmp_path, rows, name, row_group_size=37):
    """``rows`` written to Parquet in small row groups and read back: columns chunked alike, the
    string columns dictionary-coded with one shared dictionary (the one-pass path of ``prepare``)."""
    import pyarrow.parquet as pq

    t = table(rows)
    for col in ("benchmark", "sample_id", "model", "strategy", "mode", "task"):
        if col in t.column_names:
            t = t.set_column(t.column_names.index(col), col, pc_dictionary(t.column(col)))
    path = tmp_path / f"{name}.parquet"
    pq.write_table(t, path, row_group_size=row_group_size)
    return pq.read_table(path)


def pc_dictionary(column):
    import pyarrow.compute as pc

    return pc.dictionary_encode(column.combine_chunks())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_pass_prepare_equals_the_general_path(tmp_path, seed, monkeypatch):
    """``prepare`` over a Parquet file's chunks in one pass gives the arrays, codes and audit of the
    general path (an EncodedPredictions given to it), with MaxProb / MinProb rows of another mode
    beside the conditions, some rows of other strategies, and the general path's errors for a
    duplicate, a missing correctness, a mixed ambiguous column (a number, a dictionary) and a task
    varying within a sample."""
    import tempcore.diagnostics.ablation_arrays as ablation_arrays
    from tempcore.diagnostics.ablations import _prepare_by_chunk
    from tempcore.diagnostics.table import EncodedPredictions

    rows = random_rows(seed)
    extra = [dict(r, strategy=s, mode="qa") for r in rows if r["strategy"] == "uniform" for s in ("maxprob", "minprob")]
    rows = rows + extra
    rng = np.random.default_rng(seed)
    rows = [rows[i] for i in rng.permutation(len(rows))]
    t = _parquet_round_trip(tmp_path, rows, "plain")
    assert t.column("sample_id").num_chunks > 3
    conds = ["uniform", "textonly", "noframe", "single", "shuffled", "reversed"]
    fast = _prepare_by_chunk(t, conds, by=None, task_of_sample=None, n_options_of_sample=None, filters=None)
    assert fast is not None
    slow = prepare(EncodedPredictions.from_table(t), conds)
    assert (fast.enc.sample_benchmark, fast.enc.sample_id, fast.models) == \
        (slow.enc.sample_benchmark, slow.enc.sample_id, slow.models)
    assert fast.enc.sample_code.tolist() == slow.enc.sample_code.tolist()
    assert fast.enc.model_code.tolist() == slow.enc.model_code.tolist()
    np.testing.assert_array_equal(fast.correct, slow.correct)
    np.testing.assert_array_equal(fast.answer, slow.answer)
    np.testing.assert_array_equal(fast.task_code, slow.task_code)
    np.testing.assert_array_equal(fast.n_options, slow.n_options)
    assert fast.tasks == slow.tasks and fast.conditions == slow.conditions
    assert audit_ablations(t, n_boot=100) == audit_ablations(EncodedPredictions.from_table(t), n_boot=100)
    # option counts varying within a sample: the last row's wins, in one pass or in two halves at once
    varied = [dict(r, n_options=int(r["n_options"]) + int(rng.integers(0, 3))) if rng.random() < 0.2 else r
              for r in rows]
    tv = _parquet_round_trip(tmp_path, varied, "varied")
    for cpus in (1, 2):
        monkeypatch.setattr(ablation_arrays, "_cpu_count", lambda cpus=cpus: cpus)
        got = _prepare_by_chunk(tv, conds, by=None, task_of_sample=None, n_options_of_sample=None, filters=None)
        assert got is not None
        np.testing.assert_array_equal(got.n_options, prepare(EncodedPredictions.from_table(tv), conds).n_options)
        np.testing.assert_array_equal(got.correct, slow.correct)
    tasks = {(r["benchmark"], r["sample_id"]): "x" + r["task"] for r in rows}
    assert audit_ablations(t, n_boot=50, task_of_sample=tasks) == \
        audit_ablations(EncodedPredictions.from_table(t), n_boot=50, task_of_sample=tasks)
    # the errors: the one-pass path declines, the general path raises
    bad_rows = {
        "duplicate": rows + [rows[5]],
        "mixed": rows + [dict(rows[0], strategy="single", k=4, sample_id="new")],
        "task": rows + [dict(rows[0], strategy="maxprob", model="other", task="elsewhere")],
        "mixed mode": rows + [dict(rows[0], strategy="single", mode="qa", sample_id="new")],
        "missing": rows + [dict(rows[0], strategy="single", correct=None, sample_id="new")],
    }
    for name, bad in bad_rows.items():
        tb = _parquet_round_trip(tmp_path, bad, name)
        assert _prepare_by_chunk(tb, conds, by=None, task_of_sample=None, n_options_of_sample=None,
                                 filters=None) is None, name
        with pytest.raises(DiagnosticsError) as fast_err:
            audit_ablations(tb, n_boot=20)
        with pytest.raises(DiagnosticsError) as slow_err:
            audit_ablations(EncodedPredictions.from_table(tb), n_boot=20)
        assert str(fast_err.value) == str(slow_err.value), name


def test_drop_intervals_do_not_depend_on_threads(monkeypatch):
    """The drop intervals drawn in background threads (blocks of rows, each row its own seeded
    generator) equal those drawn in the caller's thread, and ablation_table's own."""
    import tempcore.diagnostics.ablations as ablations

    t = table(random_rows(4) + [dict(r, benchmark="x" + r["benchmark"], sample_id="x" + r["sample_id"]) for r in random_rows(6)])
    results = []
    for cpus in (1, 2, 8):
        monkeypatch.setattr(ablations, "_cpu_count", lambda cpus=cpus: cpus)
        results.append(audit_ablations(t, n_boot=150, seed=2))
    assert results[0] == results[1] == results[2]
    assert sum(r["drop_ci_low"] is not None for r in results[0]["models"]) > 64  # enough rows for threads
    prep = prepare(t, ["uniform", *ablations.ABLATIONS])
    rows, _ = ablations.ablation_table(prep, n_boot=150, seed=2)
    assert rows == results[0]["models"]
