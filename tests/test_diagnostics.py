"""FSS / LIS / taxonomy / TPI: hand-worked examples, edge cases, and a naive reference on random tables."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from tempcore.diagnostics import DiagnosticsError, TableError, diagnose, fss_categories, taxonomy, tpi


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


def naive_diagnose(rows, tau=0.15, lam=0.5, lis_panel="fss"):
    """Straight from the paper's formulas with dicts and loops.

    One panel M per benchmark (Eq. 4 and Eq. 5): the models with MaxProb / MinProb rows; with
    ``lis_panel="all"`` the LIS panel also takes every model with no-frame rows."""
    benches = {}
    for r in rows:
        benches.setdefault(r["benchmark"], {"fss_models": set(), "noframe_models": set(), "samples": {}})
        panel = "noframe_models" if r["strategy"] == "noframe" else "fss_models"
        benches[r["benchmark"]][panel].add(r["model"])
        benches[r["benchmark"]]["samples"].setdefault(r["sample_id"], {})[(r["model"], r["strategy"])] = r["correct"]
    out = {}
    for b, info in benches.items():
        for sid, vals in info["samples"].items():
            fm = sorted(info["fss_models"])
            lm = fm if lis_panel == "fss" else sorted(info["fss_models"] | info["noframe_models"])
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


def test_text_only_models_join_the_lis_panel_only_when_asked():
    rows = rows_for("b", "x", "vlm", 1, 0, 0)
    rows.append(dict(benchmark="b", sample_id="x", model="llm", strategy="noframe", mode="none", k=32,
                     window=None, correct=1))
    d = diagnose(make_table(rows))
    s = d.samples()[0]
    assert s["fss"] == pytest.approx(1.0)  # the LLM has no MaxProb/MinProb rows: not in the FSS panel
    assert s["lis"] == pytest.approx(1.0)  # nor, by default, in the LIS panel (the paper's one M): 1 - 0 / 1
    assert d.params["lis_panel"] == "fss"
    assert d.params["panels"] == {"b": {"fss": ["vlm"], "lis": ["vlm"], "noframe_only": ["llm"]}}
    joined = diagnose(make_table(rows), lis_panel="all")
    assert joined.samples()[0]["lis"] == pytest.approx(0.5)  # joined on request: 1 - (0 + 1) / 2
    assert joined.params["lis_panel"] == "all"
    assert joined.params["panels"]["b"] == {"fss": ["vlm"], "lis": ["llm", "vlm"], "noframe_only": ["llm"]}
    with pytest.raises(DiagnosticsError, match="LIS panel"):
        diagnose(make_table(rows), lis_panel="vlm")


# --- the table: a text-only probe on half the samples (paper §C.4, Table 15) ----------
# Four VLMs m0..m3 (MaxProb, MinProb, no-frame on all 12 samples); a text-only LLM "llm" with
# no-frame rows on s01..s06 only. Per sample: MaxProb, MinProb, VLM no-frame, LLM no-frame.
#                                       FSS    LIS (4 VLMs)      LIS (+ llm)
#   s01 [1110] [0100] [1100] llm 0      .5     .5   Trivial      .6  Temp. Grounded  <- moves
#   s02 [1100] [1100] [1111] llm 1      0      0    Trivial      0   Trivial
#   s03 [1111] [1000] [0000] llm 1      .75    1    Temp.Grnd    .8  Temp. Grounded
#   s04 [0010] [1110] [0100] llm 0     -.5     .75  Vis. Bias    .8  Visual Bias
#   s05 [1010] [1010] [0000] llm 0      0      1    Fr.Agn       1   Frame-Agnostic
#   s06 [0000] [0000] [1000] llm 1      0      .75  Fr.Agn       .6  Frame-Agnostic
#   s07 [1110] [0100] [1110]            .5     .25  Trivial      incomplete (no llm row)
#   s08 [1100] [1100] [1111]            0      0    Trivial      incomplete
#   s09 [0100] [1110] [1100]           -.5     .5   Trivial      incomplete
#   s10 [1111] [0000] [0000]            1      1    Temp.Grnd    incomplete
#   s11 [1100] [0000] [0001]            .5     .75  Temp.Grnd    incomplete
#   s12 [0000] [1000] [0010]           -.25    .75  Vis. Bias    incomplete
# The paper's panel: Trivial 5, TempSens 5, Fr.Agn 2 -> TPI = 5 / (12 - 5) = 0.714.
# Joining the LLM: 6 incomplete; of the 6 complete, Trivial 1, TempSens 3 -> TPI = 3 / 5 = 0.600.
PROBE_SPEC = {
    "s01": ("1110", "0100", "1100", 0), "s02": ("1100", "1100", "1111", 1), "s03": ("1111", "1000", "0000", 1),
    "s04": ("0010", "1110", "0100", 0), "s05": ("1010", "1010", "0000", 0), "s06": ("0000", "0000", "1000", 1),
    "s07": ("1110", "0100", "1110", None), "s08": ("1100", "1100", "1111", None),
    "s09": ("0100", "1110", "1100", None), "s10": ("1111", "0000", "0000", None),
    "s11": ("1100", "0000", "0001", None), "s12": ("0000", "1000", "0010", None),
}


def probe_rows():
    rows = []
    for sid, (plus, minus, nf, llm) in PROBE_SPEC.items():
        for j in range(4):
            rows += rows_for("bench", sid, f"m{j}", int(plus[j]), int(minus[j]), int(nf[j]))
        if llm is not None:
            rows.append(dict(benchmark="bench", sample_id=sid, model="llm", strategy="noframe", mode="none", k=32,
                             window=None, correct=llm))
    return rows


def test_text_only_probe_on_half_the_samples_does_not_change_lis_by_default():
    rows = probe_rows()
    d = diagnose(make_table(rows))
    cat = {s["sample_id"]: s["category"] for s in d.samples()}
    assert [cat[s] for s in ("s01", "s02", "s07", "s08", "s09")] == ["trivial"] * 5
    assert [cat[s] for s in ("s03", "s10", "s11")] == ["temporally_grounded"] * 3
    assert [cat[s] for s in ("s04", "s12")] == ["visual_bias"] * 2
    assert [cat[s] for s in ("s05", "s06")] == ["frame_agnostic"] * 2
    b = d.benchmarks["bench"]
    assert (b["n"], b["incomplete"], b["trivial"], b["temporally_sensitive"]) == (12, 0, 5, 5)
    assert b["tpi"] == pytest.approx(5 / 7) and round(b["tpi"], 3) == 0.714
    lis = {s["sample_id"]: s["lis"] for s in d.samples()}
    assert lis["s01"] == pytest.approx(0.5) and lis["s06"] == pytest.approx(0.75)
    assert d.params["panels"]["bench"]["noframe_only"] == ["llm"]

    joined = diagnose(make_table(rows), lis_panel="all")
    jb = joined.benchmarks["bench"]
    assert (jb["n"], jb["incomplete"], jb["trivial"], jb["temporally_sensitive"]) == (12, 6, 1, 3)
    assert jb["tpi"] == pytest.approx(3 / 5) and round(jb["tpi"], 3) == 0.600
    jcat = {s["sample_id"]: s["category"] for s in joined.samples()}
    assert jcat["s01"] == "temporally_grounded"  # the one sample that moves: LIS .5 -> 1 - 2/5 = .6
    assert {s for s, c in jcat.items() if c == "incomplete"} == {f"s{i:02d}" for i in range(7, 13)}
    assert {s["sample_id"]: s["lis"] for s in joined.samples()}["s06"] == pytest.approx(0.6)
    # FSS never depends on the LIS panel.
    assert [s["fss"] for s in joined.samples()] == [s["fss"] for s in d.samples()]
    for rule in ("fss", "all"):
        expected = naive_diagnose(rows, lis_panel=rule)
        got = {(s["benchmark"], s["sample_id"]): s["category"] for s in diagnose(make_table(rows),
                                                                               lis_panel=rule).samples()}
        assert got == expected


def test_left_out_probe_rows_are_not_read_and_a_vlm_without_noframe_rows_is_incomplete():
    rows = rows_for("b", "x", "vlm", 1, 0, 0)
    # The LLM's no-frame rows mix two K: ambiguous only if they were read (they are not, by default).
    rows += [dict(benchmark="b", sample_id="x", model="llm", strategy="noframe", mode="none", k=k, window=None,
                  correct=1) for k in (8, 32)]
    assert diagnose(make_table(rows)).samples()[0]["lis"] == pytest.approx(1.0)
    with pytest.raises(DiagnosticsError, match="k values"):
        diagnose(make_table(rows), lis_panel="all")
    # A VLM of the FSS panel without any no-frame row: its samples' LIS is incomplete, not a smaller panel.
    # (A second, complete sample keeps the diagnosis from being all-incomplete, which is an error.)
    rows = rows_for("b", "x", "m0", 1, 0, 0) + [r for r in rows_for("b", "x", "m1", 1, 0, 0)
                                                if r["strategy"] != "noframe"]
    rows += rows_for("b", "y", "m0", 1, 0, 0) + rows_for("b", "y", "m1", 1, 0, 0)
    s = {r["sample_id"]: r for r in diagnose(make_table(rows)).samples()}["x"]
    assert s["fss"] == pytest.approx(1.0) and s["lis"] is None and s["category"] == "incomplete"
    with pytest.raises(TableError, match="no sample of the 1 is complete"):
        diagnose(make_table([r for r in rows if r["sample_id"] == "x"]))


@pytest.mark.parametrize("seed", range(4))
def test_lis_panel_rules_match_naive_reference_with_text_only_probes(seed):
    rng = random.Random(100 + seed)
    rows = []
    vlms = [f"m{m}" for m in range(rng.randint(1, 5))]
    llms = [f"llm{m}" for m in range(rng.randint(1, 3))]
    for b in range(rng.randint(1, 3)):
        for s in range(rng.randint(1, 30)):
            for m in vlms:
                for strategy, mode in (("maxprob", "qa"), ("minprob", "qa"), ("noframe", "none")):
                    if rng.random() < 0.02:
                        continue
                    rows.append(dict(benchmark=f"b{b}", sample_id=f"s{s}", model=m, strategy=strategy, mode=mode,
                                     k=32, window=None, correct=int(rng.random() < 0.5)))
            for m in llms:
                if rng.random() < 0.5:  # probes cover a subset
                    rows.append(dict(benchmark=f"b{b}", sample_id=f"s{s}", model=m, strategy="noframe",
                                     mode="none", k=32, window=None, correct=int(rng.random() < 0.5)))
    for rule in ("fss", "all"):
        d = diagnose(make_table(rows), lis_panel=rule)
        got = {(s["benchmark"], s["sample_id"]): s["category"] for s in d.samples()}
        assert got == naive_diagnose(rows, lis_panel=rule)


def test_cli_lis_panel_flag_is_named_in_the_output(tmp_path, capsys):
    import json

    import pyarrow.csv as pacsv

    path = tmp_path / "p.csv"
    pacsv.write_csv(make_table(probe_rows()), path)
    from tempcore.cli import main

    assert main(["diagnose", "--predictions", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"]["lis_panel"] == "fss" and round(out["benchmarks"]["bench"]["tpi"], 3) == 0.714
    assert out["params"]["panels"]["bench"]["noframe_only"] == ["llm"]
    assert main(["diagnose", "--predictions", str(path), "--json", "--lis-panel", "all"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"]["lis_panel"] == "all" and round(out["benchmarks"]["bench"]["tpi"], 3) == 0.600
    assert out["params"]["panels"]["bench"]["lis"] == ["llm", "m0", "m1", "m2", "m3"]
    assert main(["diagnose", "--predictions", str(path)]) == 0
    text = capsys.readouterr().out
    assert "lis-panel=fss" in text and "llm not in the LIS panel" in text
    assert main(["diagnose", "--predictions", str(path), "--lis-panel", "all"]) == 0
    text = capsys.readouterr().out
    assert "lis-panel=all" in text and "llm joined to the LIS panel" in text


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


def test_the_left_out_probe_is_reported_by_the_contamination_probe_beside_lis():
    """Table 15 on the issue's table: the LLM probe, left out of per-sample LIS, is what the
    contamination probe reports (defaults: text-only = the no-frame-only models, VLMs = the panel)."""
    from tempcore.diagnostics import analyses as A

    t = make_table(probe_rows())
    assert A.noframe_only_models(t) == ["llm"]
    res = A.text_only_probe(t)
    panel = res.where(level="panel")[0]
    # On s01..s06 (the LLM's subset): VLM no-frame means .5, 1, 0, .25, 0, .25 -> 2/6;
    # with the LLM (0, 1, 1, 0, 0, 1): 2/5, 5/5, 1/5, 1/5, 0, 2/5 -> 11/30; shift 1/30.
    assert panel["n"] == 6 and panel["acc_panel"] == pytest.approx(1 / 3)
    assert panel["acc_panel_plus_text"] == pytest.approx(11 / 30) and panel["shift"] == pytest.approx(1 / 30)
    kinds = {r["model"]: r["kind"] for r in res.where(level="model")}
    assert kinds == {"m0": "vlm", "m1": "vlm", "m2": "vlm", "m3": "vlm", "llm": "text"}
    assert res.rows == A.text_only_probe(t, vlm_models=["m0", "m1", "m2", "m3"], text_models=["llm"]).rows


def test_subset_provenance_lists_the_lis_panel_not_the_left_out_probe():
    from tempcore.interop.export import table_provenance

    t = make_table(probe_rows())
    assert table_provenance(t, diagnose(t))["bench"]["models"] == ["m0", "m1", "m2", "m3"]
    assert table_provenance(t, diagnose(t, lis_panel="all"))["bench"]["models"] == ["llm", "m0", "m1", "m2", "m3"]
