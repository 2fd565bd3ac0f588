"""FSS / LIS / taxonomy / TPI: hand-worked examples, edge cases, and a naive reference on random tables."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from tempcore.diagnostics import DiagnosticsError, diagnose, fss_categories, taxonomy, tpi


def make_table(rows: list[dict]) -> pa.Table:
    cols = ["benchmark", "sample_id", "model", "strategy", "mode", "k", "window", "correct"]
    extra = sorted({k for r in rows for k in r} - set(cols))
    data = {c: [r.get(c) for r in rows] for c in cols + extra}
    data.setdefault("window", [None] * len(rows))
    return pa.table(data)


def rows_for(bench, sid, model, plus, minus, nf, k=32, **extra):
    base = dict(benchmark=bench, sample_id=sid, model=model, k=k, window=None, **extra)
    return [
        dict(base, strategy="maxprob", mode="qa", correct=plus),
        dict(base, strategy="minprob", mode="qa", correct=minus),
        dict(base, strategy="noframe", mode="none", correct=nf),
    ]


def test_hand_worked_four_models():
    # Sample s1: models right with MaxProb 4/4, with MinProb 1/4 -> FSS = 0.75 (Key);
    #   no-frame right 1/4 -> LIS = 0.75 > 0.5 -> Temporally Grounded.
    # Sample s2: MaxProb 1/4, MinProb 3/4 -> FSS = -0.5 (Anti-key); no-frame 0/4 -> LIS 1 -> Visual Bias.
    # Sample s3: MaxProb 2/4, MinProb 2/4 -> FSS 0 (Non-key); LIS = 1 - 3/4 = 0.25 -> Trivial.
    # Sample s4: FSS 0.25 -> Key, no-frame 2/4 -> LIS 0.5 <= lambda -> Trivial.
    spec = {
        "s1": ([1, 1, 1, 1], [1, 0, 0, 0], [0, 0, 1, 0]),
        "s2": ([0, 1, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0]),
        "s3": ([1, 1, 0, 0], [0, 1, 1, 0], [1, 1, 1, 0]),
        "s4": ([1, 1, 0, 0], [0, 1, 0, 0], [1, 0, 1, 0]),
    }
    rows = []
    for sid, (p, m, n) in spec.items():
        for j in range(4):
            rows += rows_for("bench", sid, f"m{j}", p[j], m[j], n[j])
    d = diagnose(make_table(rows))
    by_id = {s["sample_id"]: s for s in d.samples()}
    assert by_id["s1"]["fss"] == pytest.approx(0.75) and by_id["s1"]["lis"] == pytest.approx(0.75)
    assert by_id["s1"]["category"] == "temporally_grounded" and by_id["s1"]["fss_category"] == "key"
    assert by_id["s2"]["fss"] == pytest.approx(-0.5) and by_id["s2"]["category"] == "visual_bias"
    assert by_id["s2"]["fss_category"] == "anti_key"
    assert by_id["s3"]["category"] == "trivial" and by_id["s3"]["fss_category"] == "non_key"
    assert by_id["s4"]["category"] == "trivial" and by_id["s4"]["fss_category"] == "key"
    b = d.benchmarks["bench"]
    assert (b["n"], b["incomplete"], b["key"], b["non_key"], b["anti_key"]) == (4, 0, 2, 1, 1)
    assert (b["trivial"], b["frame_agnostic"], b["temporally_grounded"], b["visual_bias"]) == (2, 0, 1, 1)
    assert b["temporally_sensitive"] == 2 and b["tpi"] == pytest.approx(2 / (4 - 2))
    assert d.temporally_sensitive("bench") == ["s1", "s2"]


def test_ties_at_exactly_tau_are_non_key():
    # 20 models: 3 net flips -> FSS = 3/20 = 0.15 exactly tau -> Non-key / Frame-Agnostic.
    f = np.array([3 / 20, -3 / 20, sum([0.05] * 3), 0.1500001])
    assert list(fss_categories(f, 0.15)) == ["non_key", "non_key", "non_key", "key"]
    assert list(taxonomy(f, np.ones(4), 0.15, 0.5)) == ["frame_agnostic"] * 3 + ["temporally_grounded"]
    # LIS exactly lambda is Trivial.
    assert list(taxonomy(np.array([0.9]), np.array([0.5]), 0.15, 0.5)) == ["trivial"]


def test_one_model_and_all_trivial_benchmark():
    rows = rows_for("b", "a", "solo", 1, 0, 1) + rows_for("b", "c", "solo", 0, 0, 1)
    d = diagnose(make_table(rows))
    assert d.benchmarks["b"]["trivial"] == 2
    assert d.benchmarks["b"]["tpi"] is None  # undefined, not 0 and not a crash
    assert tpi(np.array(["trivial", "incomplete"], dtype=object)) is None


def test_incomplete_samples_counted_and_excluded():
    rows = []
    for m in ("m0", "m1"):
        rows += rows_for("b", "full", m, 1, 0, 0)
    rows += rows_for("b", "partial", "m0", 1, 0, 0)
    rows += [r for r in rows_for("b", "partial", "m1", 1, 0, 0) if r["strategy"] != "minprob"]
    rows += [r for r in rows_for("b", "nolis", "m0", 1, 0, 0) if r["strategy"] != "noframe"]
    rows += [r for r in rows_for("b", "nolis", "m1", 1, 0, 0) if r["strategy"] != "noframe"]
    d = diagnose(make_table(rows))
    b = d.benchmarks["b"]
    assert b["n"] == 3 and b["incomplete"] == 2 and b["incomplete_fss"] == 1
    assert b["key"] == 2  # 'full' and 'nolis' have FSS; 'partial' does not
    assert b["temporally_grounded"] == 1
    by_id = {s["sample_id"]: s for s in d.samples()}
    assert by_id["partial"]["fss"] is None and by_id["partial"]["category"] == "incomplete"


def test_panel_is_per_benchmark_and_model_subset():
    rows = rows_for("b1", "x", "m0", 1, 0, 0) + rows_for("b1", "x", "m1", 0, 0, 0)
    rows += rows_for("b2", "y", "m0", 1, 0, 0)  # m1 never ran b2: b2's panel is {m0}
    d = diagnose(make_table(rows))
    by_id = {s["sample_id"]: s for s in d.samples()}
    assert by_id["x"]["fss"] == pytest.approx(0.5) and by_id["y"]["fss"] == pytest.approx(1.0)
    d2 = diagnose(make_table(rows), models=["m1"])
    assert {s["sample_id"]: s["fss"] for s in d2.samples()}["x"] == pytest.approx(0.0)
    with pytest.raises(DiagnosticsError, match="unknown model"):
        diagnose(make_table(rows), models=["nope"])


def test_ambiguous_k_and_duplicates_are_errors():
    rows = rows_for("b", "s", "m", 1, 0, 0, k=32) + rows_for("b", "s", "m", 1, 1, 0, k=8)
    with pytest.raises(DiagnosticsError, match="k values"):
        diagnose(make_table(rows))
    d = diagnose(make_table(rows), filters={"k": 8}, noframe_filters={"k": 8})
    assert d.samples()[0]["fss"] == 0.0
    dup = rows_for("b", "s", "m", 1, 0, 0) + rows_for("b", "s", "m", 1, 0, 0)
    with pytest.raises(DiagnosticsError, match="duplicate"):
        diagnose(make_table(dup))


def test_soft_and_circular_scoring():
    rows = []
    for rot in range(4):
        for r in rows_for("b", "s", "m", 1 if rot < 3 else 0, 1 if rot == 0 else 0, 0, rotation=rot):
            r["p_correct"] = {"maxprob": 0.8, "minprob": 0.3, "noframe": 0.25}[r["strategy"]]
            rows.append(r)
    t = make_table(rows)
    hard = diagnose(t, scoring="hard").samples()[0]
    assert hard["fss"] == pytest.approx(0.0)  # rotation 0 only: 1 - 1
    circ = diagnose(t, scoring="circular").samples()[0]
    assert circ["fss"] == pytest.approx(3 / 4 - 1 / 4)
    soft = diagnose(t, scoring="soft").samples()[0]
    assert soft["fss"] == pytest.approx(0.8 - 0.3) and soft["lis"] == pytest.approx(0.75)
    with pytest.raises(DiagnosticsError, match="p_correct"):
        diagnose(make_table(rows_for("b", "s", "m", 1, 0, 0)), scoring="soft")
    # A missing rotation makes the circular cell incomplete (a second, complete sample keeps the
    # diagnosis from being empty, which is an error of its own).
    partial = [r for r in rows if not (r["rotation"] == 3 and r["strategy"] == "minprob")]
    partial += [dict(r, sample_id="whole") for r in rows]
    by_id = {s["sample_id"]: s for s in diagnose(make_table(partial), scoring="circular").samples()}
    assert by_id["s"]["fss"] is None and by_id["whole"]["fss"] == pytest.approx(3 / 4 - 1 / 4)


def naive_diagnose(rows, tau=0.15, lam=0.5):
    """Straight from the paper's formulas with dicts and loops."""
    benches = {}
    for r in rows:
        benches.setdefault(r["benchmark"], {"fss_models": set(), "lis_models": set(), "samples": {}})
        panel = "lis_models" if r["strategy"] == "noframe" else "fss_models"
        benches[r["benchmark"]][panel].add(r["model"])
        benches[r["benchmark"]]["samples"].setdefault(r["sample_id"], {})[(r["model"], r["strategy"])] = r["correct"]
    out = {}
    for b, info in benches.items():
        for sid, vals in info["samples"].items():
            fm, lm = sorted(info["fss_models"]), sorted(info["lis_models"])
            need = [(m, s) for m in fm for s in ("maxprob", "minprob")] + [(m, "noframe") for m in lm]
            if any(x not in vals for x in need) or not fm or not lm:
                out[(b, sid)] = "incomplete"
                continue
            f = sum(vals[(m, "maxprob")] - vals[(m, "minprob")] for m in fm) / len(fm)
            li = 1 - sum(vals[(m, "noframe")] for m in lm) / len(lm)
            f, li = round(f, 12), round(li, 12)
            if li <= lam:
                out[(b, sid)] = "trivial"
            elif abs(f) <= tau:
                out[(b, sid)] = "frame_agnostic"
            elif f > tau:
                out[(b, sid)] = "temporally_grounded"
            else:
                out[(b, sid)] = "visual_bias"
    return out


@pytest.mark.parametrize("seed", range(6))
def test_matches_naive_reference_on_random_tables(seed):
    rng = random.Random(seed)
    rows = []
    n_models = rng.randint(1, 8)
    for b in range(rng.randint(1, 3)):
        for s in range(rng.randint(1, 40)):
            for m in range(n_models):
                for strategy, mode in (("maxprob", "qa"), ("minprob", "qa"), ("noframe", "none")):
                    if rng.random() < 0.03:
                        continue  # a missing result
                    rows.append(dict(benchmark=f"b{b}", sample_id=f"s{s}", model=f"m{m}", strategy=strategy,
                                     mode=mode, k=32, window=None, correct=int(rng.random() < 0.5)))
    d = diagnose(make_table(rows))
    expected = naive_diagnose(rows)
    got = {(s["benchmark"], s["sample_id"]): s["category"] for s in d.samples()}
    assert got == expected
    for b in d.benchmarks:
        cats = [c for (bb, _), c in expected.items() if bb == b]
        assert d.benchmarks[b]["trivial"] == cats.count("trivial")
        assert d.benchmarks[b]["incomplete"] == cats.count("incomplete")


def test_text_only_models_join_only_the_lis_panel():
    rows = rows_for("b", "x", "vlm", 1, 0, 0)
    rows.append(dict(benchmark="b", sample_id="x", model="llm", strategy="noframe", mode="none", k=32,
                     window=None, correct=1))
    s = diagnose(make_table(rows)).samples()[0]
    assert s["fss"] == pytest.approx(1.0)  # the LLM has no MaxProb/MinProb rows: not in the FSS panel
    assert s["lis"] == pytest.approx(0.5)  # but it is in the LIS panel: 1 - (0 + 1) / 2


def test_chunks_with_different_dictionaries(tmp_path):
    """Parquet files read back as chunks whose dictionaries differ; results must not change."""
    import pyarrow.parquet as pq

    from tempcore.diagnostics.accuracy import accuracy_table

    rows = rows_for("b1", "x", "m0", 1, 0, 0) + rows_for("b2", "y", "m1", 0, 1, 1)
    t = make_table(rows)
    t = t.set_column(0, "benchmark", t.column("benchmark").dictionary_encode())
    path = tmp_path / "p.parquet"
    pq.write_table(t, path, row_group_size=3)
    back = pq.read_table(path)
    assert back.column("benchmark").num_chunks > 1
    assert diagnose(back).samples() == diagnose(make_table(rows)).samples()
    assert accuracy_table(back).rows == accuracy_table(make_table(rows)).rows
