"""The paper's analyses: hand-worked small tables (numbers in the comments) and naive references."""

from __future__ import annotations

import math
import random
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest

from tempcore.diagnostics import Diagnosis, DiagnosticsError, diagnose
from tempcore.diagnostics import analyses as A
from tempcore.diagnostics.core import fss_categories, summarize, taxonomy

COLS = ["benchmark", "sample_id", "model", "strategy", "mode", "k", "window", "correct"]


def tbl(rows: list[dict]) -> pa.Table:
    extra = sorted({k for r in rows for k in r} - set(COLS))
    data = {c: [r.get(c) for r in rows] for c in COLS + extra}
    types = {"window": pa.int64(), "k": pa.int64(), "correct": pa.int8()}
    return pa.table({c: pa.array(v, type=types.get(c)) for c, v in data.items()})


def row(sid, model, strategy, correct, *, bench="b", mode="none", k=32, window=None, **extra):
    return dict(benchmark=bench, sample_id=sid, model=model, strategy=strategy, mode=mode, k=k, window=window,
                correct=correct, **extra)


def make_diag(bench, ids, fss, lis=None, tau=0.15, lam=0.5) -> Diagnosis:
    f = np.asarray(fss, dtype=float)
    li = np.ones_like(f) if lis is None else np.asarray(lis, dtype=float)
    b = np.array(bench if isinstance(bench, list) else [bench] * len(ids), dtype=object)
    fc, cat = fss_categories(f, tau), taxonomy(f, li, tau, lam)
    benches = {x: summarize(fc[b == x], cat[b == x]) for x in sorted(set(b))}
    return Diagnosis(b, np.array(ids, dtype=object), f, li, fc, cat, benches, {"tau": tau, "lambda": lam})


# --- the hand-worked "world": 4 samples, 2 models ----------------------------------------------
#   maxprob qa  s1 [1,1] s2 [0,0] s3 [1,0] s4 [1,1]
#   minprob qa  s1 [0,0] s2 [1,1] s3 [1,0] s4 [1,1]   -> FSS s1 = 1 (Key), s2 = -1 (Anti-key), s3 = s4 = 0
#   noframe     all wrong                               -> LIS 1, nothing Trivial
#   uniform     s1 [0,0] s2 [1,0] s3 [1,1] s4 [0,1]
#   oracle (3 windows of 10 frames tiling a 30-frame video: frames 0-9, 10-19, 20-29, whose
#   centres (i + 0.5) / 30 averaged are 1/6, 1/2, 5/6):
#     s1 m0 [0,0,1] m1 [0,0,0]  -> solved [1, 0]
#     s2 m0 [1,0,0] m1 [0,0,1]  -> [1, 1]
#     s3 m0 [1,0,0] m1 [0,0,0]  -> [1, 0]
#     s4 m0 [0,0,0] m1 [0,0]    -> [0, missing: cut short and all wrong]
WORLD = {
    "maxprob": {"s1": [1, 1], "s2": [0, 0], "s3": [1, 0], "s4": [1, 1]},
    "minprob": {"s1": [0, 0], "s2": [1, 1], "s3": [1, 0], "s4": [1, 1]},
    "noframe": {s: [0, 0] for s in ("s1", "s2", "s3", "s4")},
    "uniform": {"s1": [0, 0], "s2": [1, 0], "s3": [1, 1], "s4": [0, 1]},
}
ORACLE = {("s1", "m0"): [0, 0, 1], ("s1", "m1"): [0, 0, 0], ("s2", "m0"): [1, 0, 0], ("s2", "m1"): [0, 0, 1],
          ("s3", "m0"): [1, 0, 0], ("s3", "m1"): [0, 0, 0], ("s4", "m0"): [0, 0, 0], ("s4", "m1"): [0, 0]}


def world() -> pa.Table:
    rows = []
    for strategy, per in WORLD.items():
        mode = "qa" if strategy in ("maxprob", "minprob") else "none"
        for sid, cs in per.items():
            for j, c in enumerate(cs):
                rows.append(row(sid, f"m{j}", strategy, c, mode=mode))
    for (sid, model), ws in ORACLE.items():
        for w, c in enumerate(ws):
            rows.append(row(sid, model, "oracle", c, window=w, n_frames=30,
                            frame_indices=str(list(range(10 * w, 10 * w + 10)))))
    return tbl(rows)


def test_world_diagnosis_is_as_worked():
    d = diagnose(world())
    assert dict(zip(d.sample_id, d.fss)) == {"s1": 1.0, "s2": -1.0, "s3": 0.0, "s4": 0.0}


def test_uniform_vs_oracle_hand_worked():
    res = A.uniform_vs_oracle(world(), groups={"short": ("b",)})
    got = {(r["model"], r["level"], r["benchmark"]): r for r in res.rows}
    m0, m1, mean = got["m0", "model", "b"], got["m1", "model", "b"], got["mean", "mean", "b"]
    # m0: uniform [0,1,1,0] = .5, oracle [1,1,1,0] = .75
    assert (m0["n"], m0["acc_uniform"], m0["acc_oracle"], m0["oracle_minus_uniform"]) == (4, 0.5, 0.75, 0.25)
    # m1: s4's oracle is missing -> s1..s3: uniform [0,0,1], oracle [0,1,0]; s4 unpaired
    assert (m1["n"], m1["unpaired"]) == (3, 1)
    assert (m1["acc_uniform"], m1["acc_oracle"], m1["oracle_minus_uniform"]) == pytest.approx((1 / 3, 1 / 3, 0))
    # mean over the panel on s1..s3: uniform [0, .5, 1] = .5; oracle [.5, 1, .5] = 2/3
    assert (mean["n"], mean["n_models"], mean["unpaired"]) == (3, 2, 1)
    assert (mean["acc_uniform"], mean["acc_oracle"]) == pytest.approx((0.5, 2 / 3))
    assert mean["oracle_minus_uniform"] == pytest.approx(1 / 6)
    assert mean["oracle_minus_uniform_ci_low"] <= 1 / 6 <= mean["oracle_minus_uniform_ci_high"]
    # groups: one benchmark in "short" -> the same figures, and "all"
    g = got["mean", "group", "short"]
    assert g["oracle_minus_uniform"] == pytest.approx(1 / 6) and g["n_benchmarks"] == 1
    assert got["m0", "group", "all"]["acc_oracle"] == 0.75
    assert A.uniform_vs_oracle(world(), seed=3).rows == A.uniform_vs_oracle(world(), seed=3).rows


def test_oracle_gap_by_fss_category_hand_worked():
    d = diagnose(world())
    res = A.oracle_gap_by_fss_category(world(), d)
    got = {r["fss_category"]: r for r in res.rows}
    # per-sample gaps: s1 (.5 - 0) = .5; s2 (1 - .5) = .5; s3 (.5 - 1) = -.5; s4 only m0: 0 - 0 = 0
    assert got["key"]["gap"] == 0.5 and got["anti_key"]["gap"] == 0.5
    assert got["non_key"]["n"] == 2 and got["non_key"]["gap"] == pytest.approx(-0.25)
    assert got["all"]["n"] == 4 and got["all"]["gap"] == pytest.approx(0.125)
    # all: uniform means [0, .5, 1, 0] -> .375; oracle [.5, 1, .5, 0] -> .5
    assert (got["all"]["acc_uniform"], got["all"]["acc_oracle"]) == pytest.approx((0.375, 0.5))
    assert INCOMPLETE_NOT_IN(got)


def INCOMPLETE_NOT_IN(got):  # noqa: N802 - reads as a sentence in the assert
    return "incomplete" not in got


def test_oracle_gap_by_fss_bin_and_abs_fss_hand_worked():
    d = diagnose(world())
    res = A.oracle_gap_by_fss_bin(world(), d, min_samples=1)
    per = {(r["benchmark"], r["fss_bin"]): (r["n"], r["gap"]) for r in res.rows}
    # bins -1: s2 (.5); 0: s3, s4 (mean -.25); 1: s1 (.5)
    assert per["b", -1.0] == (1, 0.5) and per["b", 0.0] == (2, -0.25) and per["b", 1.0] == (1, 0.5)
    assert per["all", 0.0] == (2, -0.25)
    few = A.oracle_gap_by_fss_bin(world(), d, min_samples=2)
    assert [(r["benchmark"], r["fss_bin"]) for r in few.rows] == [("b", 0.0), ("all", 0.0)]
    assert few.meta["omitted_bins"] == 2
    fig10 = A.oracle_gap_vs_abs_fss(world(), d, n_bins=2)
    got = {(r["benchmark"], r["bin_low"]): (r["n"], r["gap"]) for r in fig10.rows}
    # |FSS| 0 -> [0, .5): s3, s4 mean -.25; |FSS| 1 -> [.5, 1]: s1, s2 mean .5
    assert got["b", 0.0] == (2, -0.25) and got["b", 0.5] == (2, 0.5)
    assert fig10.meta["spearman"]["b"]["n"] == 4


def naive_gap_by_bin(rows, diag, min_samples):
    fss = dict(zip(zip(diag.benchmark, diag.sample_id), diag.fss))
    uni, orc, wins = {}, {}, defaultdict(dict)
    for r in rows:
        key = (r["benchmark"], r["sample_id"], r["model"])
        if r["strategy"] == "uniform":
            uni[key] = r["correct"]
        elif r["strategy"] == "oracle":
            wins[key][r["window"]] = r["correct"]
    most = defaultdict(int)
    for (b, s, _m), w in wins.items():
        most[(b, s)] = max(most[(b, s)], len(w))
    for (b, s, m), w in wins.items():
        if any(w.values()) or len(w) == most[(b, s)]:
            orc[(b, s, m)] = int(any(w.values()))
    gaps = defaultdict(list)
    for (b, s, m), u in uni.items():
        if (b, s, m) in orc:
            gaps[(b, s)].append(orc[(b, s, m)] - u)
    bins = defaultdict(list)
    for (b, s), g in gaps.items():
        f = fss.get((b, s), float("nan"))
        if not math.isnan(f):
            bins[(b, round(f, 9))].append(sum(g) / len(g))
    per = {k: (len(v), sum(v) / len(v)) for k, v in bins.items() if len(v) >= min_samples}
    across = defaultdict(list)
    for (_b, f), (_n, g) in per.items():
        across[f].append(g)
    return per, {f: (float(np.mean(v)), float(np.std(v))) for f, v in across.items()}


@pytest.mark.parametrize("seed", range(4))
def test_oracle_gap_by_fss_bin_matches_naive(seed):
    rng = random.Random(seed)
    rows = []
    models = [f"m{i}" for i in range(rng.randint(2, 4))]
    for b in ("b0", "b1", "b2"):
        for s in range(rng.randint(5, 25)):
            for m in models:
                for strategy, mode in (("maxprob", "qa"), ("minprob", "qa"), ("noframe", "none"), ("uniform", "none")):
                    rows.append(row(f"s{s}", m, strategy, int(rng.random() < 0.5), bench=b, mode=mode))
                for w in range(3):
                    if rng.random() > 0.1:
                        rows.append(row(f"s{s}", m, "oracle", int(rng.random() < 0.25), bench=b, window=w))
    t = tbl(rows)
    d = diagnose(t)
    res = A.oracle_gap_by_fss_bin(t, d, min_samples=3)
    per, across = naive_gap_by_bin(rows, d, 3)
    got = {(r["benchmark"], r["fss_bin"]): (r["n"], r["gap"]) for r in res.rows if r["benchmark"] != "all"}
    assert got.keys() == per.keys()
    for k, (n, g) in per.items():
        assert got[k][0] == n and got[k][1] == pytest.approx(g)
    all_rows = {r["fss_bin"]: (r["gap"], r["gap_sd"]) for r in res.rows if r["benchmark"] == "all"}
    assert all_rows.keys() == across.keys()
    for f, (g, sd) in across.items():
        assert all_rows[f] == pytest.approx((g, sd))


def test_correct_window_centroids_hand_worked():
    d = diagnose(world())
    res = A.correct_window_centroids(world(), d)
    got = {r["fss_category"]: r for r in res.rows}
    # s1 (Key): right only in m0's window 2 -> centroid 5/6 (End)
    assert got["key"]["n"] == 1 and got["key"]["end"] == 1.0 and got["key"]["mean"] == pytest.approx(5 / 6)
    # s2 (Anti-key): m0 window 0 and m1 window 2 -> (1/6 + 5/6) / 2 = 1/2 (Middle)
    assert got["anti_key"]["middle"] == 1.0 and got["anti_key"]["mean"] == pytest.approx(0.5)
    # Non-key: s3 right in window 0 only (1/6, Begin); s4 has no correct window
    nk = got["non_key"]
    assert (nk["n"], nk["no_correct_window"], nk["begin"], nk["std"]) == (1, 1, 1.0, 0.0)
    assert res.meta["length"] == "n_frames" and "(i + 0.5) / L" in res.notes[0]
    # L from the last frame of the windows (30 here) gives the same figures, and says so.
    derived = A.correct_window_centroids(world(), d, length="oracle_windows")
    assert derived.rows == res.rows and "last frame index" in derived.notes[0]


# --- Table 7 on tempcore's own window layout: real positions vs window ranks -------------------
# A 100-frame video, K = 32: window starts 0, 32, 64 and the end-aligned 68 (W = 4). Window 2 shows
# frames 64..95: real position (79.5 + 0.5) / 100 = 0.80 (End), while its rank would place it at
# (2 + 0.5) / 4 = 0.625 (Middle). Window 1 (frames 32..63): 0.48 (Middle; rank 0.375, Middle).
# A 300-frame video, K = 32: starts 0, 32, ..., 256 and 268 (W = 10); window 6 (frames 192..223) sits
# at 208 / 300 = 0.693 (End), its rank at 6.5 / 10 = 0.65 (Middle).
def layout_rows(sid, L, K, correct_windows, *, model="m0", bench="b", n_frames=True):
    from tempcore.selection.windows import window_starts

    out = []
    for w, start in enumerate(window_starts(L, K)):
        extra = {"n_frames": L} if n_frames else {}
        out.append(row(sid, model, "oracle", int(w in correct_windows), bench=bench, window=w, k=K,
                       frame_indices=str(list(range(int(start), int(start) + min(K, L)))), **extra))
    return out


def naive_centroids(rows, L_of):
    """Per sample, the mean over correct (model, window) rows of mean_i (i + 0.5) / L (loops, no numpy)."""
    import json

    pos = defaultdict(list)
    for r in rows:
        if r["strategy"] == "oracle" and r["correct"]:
            idx = json.loads(r["frame_indices"])
            pos[r["sample_id"]].append(sum((i + 0.5) / L_of[r["sample_id"]] for i in idx) / len(idx))
    return {s: sum(v) / len(v) for s, v in pos.items()}


def test_correct_window_centroids_use_real_frame_positions():
    rows = layout_rows("long", 100, 32, {2}) + layout_rows("short", 300, 32, {6}) + layout_rows("mid", 100, 32, {1})
    rows += layout_rows("mid", 100, 32, {2}, model="m1")
    d = make_diag("b", ["long", "short", "mid"], [0.5, 0.5, 0.5])  # all Key
    res = A.correct_window_centroids(tbl(rows), d, length="n_frames")
    (key,) = res.where(fss_category="key")
    # centroids: long 0.80 (End), short 0.693 (End), mid (0.48 + 0.80) / 2 = 0.64 (Middle)
    cen = [0.80, 208 / 300, 0.64]
    assert key["n"] == 3 and key["no_correct_window"] == 0
    assert (key["begin"], key["middle"], key["end"]) == pytest.approx((0.0, 1 / 3, 2 / 3))
    assert key["mean"] == pytest.approx(np.mean(cen)) and key["std"] == pytest.approx(np.std(cen))
    # The window ranks would have put long and short in the Middle (0.625, 0.65): all three Middle.
    ranks = [2.5 / 4, 6.5 / 10, (1.5 / 4 + 2.5 / 4) / 2]
    assert all(1 / 3 <= x < 2 / 3 for x in ranks) and key["middle"] != 1.0
    # A naive loop over the rows agrees, sample by sample.
    ref = naive_centroids(rows, {"long": 100, "short": 300, "mid": 100})
    assert ref == pytest.approx({"long": 0.80, "short": 208 / 300, "mid": 0.64})
    # Deriving L from the last window's last frame is exact on this layout.
    assert A.correct_window_centroids(tbl(rows), d, length="oracle_windows").rows == res.rows


def test_correct_window_centroids_never_assume_positions():
    d = make_diag("b", ["long", "x"], [0.5, 0.0])
    no_len = layout_rows("long", 100, 32, {2}, n_frames=False)
    with pytest.raises(A.AnalysisError, match="no 'n_frames' column"):
        A.correct_window_centroids(tbl(no_len), d)
    # The same table with L given as a mapping works.
    got = A.correct_window_centroids(tbl(no_len), d, n_frames={("b", "long"): 100})
    assert got.where(fss_category="key")[0]["mean"] == pytest.approx(0.80)
    no_frames = [{k: v for k, v in r.items() if k != "frame_indices"} for r in layout_rows("long", 100, 32, {2})]
    with pytest.raises(A.AnalysisError, match="no 'frame_indices' column"):
        A.correct_window_centroids(tbl(no_frames), d)
    # A sample whose n_frames is blank is left out and counted, not placed by assumption.
    mixed = layout_rows("long", 100, 32, {2}) + [dict(r, n_frames=None) for r in layout_rows("x", 100, 32, {0})]
    res = A.correct_window_centroids(tbl(mixed), d)
    assert res.meta["no_length"] == {"b": 1} and any("no L left out" in n for n in res.notes)
    assert [r["fss_category"] for r in res.rows] == ["key", "non_key"] and res.rows[1]["n"] == 0
    # Frames beyond L: the length and the frames disagree -> an error naming the sample.
    with pytest.raises(A.AnalysisError, match="'long' of 'b': oracle window shows frames 64..95, outside its 90 frames"):
        A.correct_window_centroids(tbl(layout_rows("long", 100, 32, {2})), d, n_frames={"long": 90})
    with pytest.raises(A.AnalysisError, match="unknown length"):
        A.correct_window_centroids(tbl(mixed), d, length="assumed")


@pytest.mark.parametrize("seed", range(3))
def test_correct_window_centroids_match_naive_on_random_layouts(seed):
    rng = random.Random(seed)
    rows, L_of, ids, fss = [], {}, [], []
    K = rng.choice([4, 8, 32])
    for s in range(25):
        sid, L = f"s{s}", rng.randint(5, 700)
        L_of[sid] = L
        ids.append(sid)
        fss.append(rng.choice([-0.5, 0.0, 0.5]))
        for m in ("m0", "m1"):
            from tempcore.selection.windows import window_starts

            n_w = len(window_starts(L, K))
            rows += layout_rows(sid, L, K, {w for w in range(n_w) if rng.random() < 0.2}, model=m)
    res = A.correct_window_centroids(tbl(rows), make_diag("b", ids, fss))
    ref = naive_centroids(rows, L_of)
    cat = dict(zip(ids, fss_categories(np.array(fss), 0.15)))
    for r in res.rows:
        cen = np.array([ref[s] for s in ids if cat[s] == r["fss_category"] and s in ref])
        assert r["n"] == cen.size
        if cen.size:
            assert r["mean"] == pytest.approx(cen.mean()) and r["std"] == pytest.approx(cen.std())
            assert r["end"] == pytest.approx(float((cen >= 2 / 3).mean()))


def test_key_antikey_profiles_and_lis_fss():
    d = diagnose(world())
    k = A.key_antikey_fractions(d).rows[0]
    assert (k["n"], k["key"], k["non_key"], k["anti_key"]) == (4, 1, 2, 1)
    assert (k["key_fraction"], k["anti_key_fraction"], k["key_to_anti_key"]) == (0.25, 0.25, 1.0)
    p = A.benchmark_profiles(d).rows[0]
    # LIS = 1 everywhere: no Trivial; TG s1, VB s2, FA s3 s4; TPI = 2 / (4 - 0)
    assert (p["trivial"], p["temporally_grounded"], p["visual_bias"], p["frame_agnostic"]) == (0, 1, 1, 2)
    assert p["tpi"] == 0.5 and p["temporally_sensitive_fraction"] == 0.5
    assert A.lis_fss_spearman(d).rows[0]["rho"] is None  # LIS constant: undefined, not a crash
    no_anti = make_diag("x", ["a", "b"], [0.5, 0.0])
    assert A.key_antikey_fractions(no_anti).rows[0]["key_to_anti_key"] is None
    f = [0.5, 0.25, 0.0, -0.25, -0.5, 0.1]
    li = [0.2, 0.4, 0.6, 0.8, 1.0, 0.0]
    rho = A.lis_fss_spearman(make_diag("x", list("abcdef"), f, li)).rows[0]["rho"]
    assert rho == pytest.approx(np.corrcoef(np.argsort(np.argsort(f)), np.argsort(np.argsort(li)))[0, 1])


@pytest.mark.parametrize("seed", range(3))
def test_threshold_sweep_matches_rediagnosing(seed):
    rng = random.Random(seed)
    rows = []
    for s in range(30):
        for m in ("m0", "m1", "m2", "m3"):
            for strategy, mode in (("maxprob", "qa"), ("minprob", "qa"), ("noframe", "none")):
                rows.append(row(f"s{s}", m, strategy, int(rng.random() < 0.5), mode=mode))
    t = tbl(rows)
    d = diagnose(t)
    sweep = A.threshold_sweep(d, taus=(0.0, 0.25, 0.5), lambdas=(0.25, 0.75))
    for r in sweep.rows:
        ref = diagnose(t, tau=r["tau"], lam=r["lambda"]).benchmarks["b"]
        assert {k: r[k] for k in ref if k in r} == {k: ref[k] for k in ref if k in r}
    assert len(sweep.rows) == 6


def test_abs_fss_by_coverage_hand_worked():
    d = make_diag("b", [f"s{i}" for i in range(1, 7)], [0.5, 0.25, 0.0, 0.0, -0.5, 0.1])
    frames = {("b", "s1"): 100, ("b", "s2"): 1000, "s3": 200, ("b", "s4"): 50, ("b", "s5"): 500}
    res = A.abs_fss_by_coverage(d, frames, k=32)
    got = {r["coverage"]: (r["n"], r["mean_abs_fss"]) for r in res.rows}
    # K/L: s1 .32, s2 .032, s3 .16, s4 .64, s5 .064; s6 has no L
    assert got == {"<0.10": (2, 0.375), "0.10-0.25": (1, 0.0), "0.25-0.50": (1, 0.5), "0.50-1.00": (1, 0.0)}
    assert res.meta["no_frame_count"] == {"b": 1}
    counts = A.frame_counts_from_table(tbl([row("s1", "m", "uniform", 1, n_frames=100),
                                            row("s1", "m2", "uniform", 1, n_frames=100)]))
    assert counts == {("b", "s1"): 100}
    with pytest.raises(A.AnalysisError, match="several n_frames"):
        A.frame_counts_from_table(tbl([row("s1", "m", "uniform", 1, n_frames=100),
                                       row("s1", "m2", "uniform", 1, n_frames=90)]))


# --- human validation ----------------------------------------------------------------------------
# FSS  s1 .5  s2 .25  s3 0  s4 0  s5 -.5  s6 .1   (s7: no FSS)
# rating 5     4      2     3*    4       1       (* s4 rated twice: 2 and 4 -> mean 3)
# tau .15: Key s1 s2; Non-key s3 s4 s6; Anti-key s5. "Temporal" (>= 4): s1 s2 s5.
RATED_FSS = [0.5, 0.25, 0.0, 0.0, -0.5, 0.1, float("nan")]
RATINGS = [
    {"benchmark": "b", "sample_id": "s1", "rating": 5}, {"benchmark": "b", "sample_id": "s2", "rating": 4},
    {"benchmark": "b", "sample_id": "s3", "rating": 2}, {"benchmark": "b", "sample_id": "s4", "rating": 2},
    {"benchmark": "b", "sample_id": "s4", "rating": 4}, {"benchmark": "b", "sample_id": "s5", "rating": 4},
    {"benchmark": "b", "sample_id": "s6", "rating": 1}, {"benchmark": "b", "sample_id": "s7", "rating": 5},
]


def rated_diag():
    return make_diag("b", [f"s{i}" for i in range(1, 8)], RATED_FSS)


def test_human_metric_correlations_hand_worked():
    res = A.human_metric_correlations(rated_diag(), pa.Table.from_pylist(RATINGS))
    got = {r["metric"]: r for r in res.rows}
    # Spearman(FSS, rating): ranks [6,5,2.5,2.5,1,4] vs [6,4.5,2,3,4.5,1]: sum dx dy 6, sums of squares 17 -> 6/17
    assert got["fss"]["spearman_rho"] == pytest.approx(6 / 17)
    # |FSS| ranks [5.5,4,1.5,1.5,5.5,3]: sum dx dy 12.75, squares 16.5 and 17
    assert got["abs_fss"]["spearman_rho"] == pytest.approx(12.75 / math.sqrt(16.5 * 17))
    # point-biserial of (rating >= 4) = [1,1,0,0,1,0] with |FSS|: 0.575 / sqrt(1.5 * 0.26875)
    assert got["abs_fss"]["point_biserial_r"] == pytest.approx(0.575 / math.sqrt(1.5 * 0.26875))
    assert got["lis"]["spearman_rho"] is None  # LIS constant here
    assert got["fss"]["n"] == 6 and res.meta["excluded_incomplete"] == 1


def test_human_scores_by_category_and_tests_hand_worked():
    res = A.human_scores_by_category(rated_diag(), RATINGS)
    got = {r["category"]: r for r in res.rows}
    assert (got["key"]["n"], got["key"]["mean"], got["key"]["temporal_fraction"]) == (2, 4.5, 1.0)
    assert got["key"]["sd"] == pytest.approx(math.sqrt(0.5)) and got["key"]["se"] == pytest.approx(0.5)
    assert (got["non_key"]["mean"], got["non_key"]["sd"], got["non_key"]["temporal_fraction"]) == (2.0, 1.0, 0.0)
    assert got["anti_key"]["n"] == 1 and got["anti_key"]["sd"] is None
    ts = got["temporally_sensitive"]
    assert ts["n"] == 3 and ts["mean"] == pytest.approx(13 / 3) and ts["se"] == pytest.approx(1 / 3)
    assert got["all"]["mean"] == pytest.approx(19 / 6)
    tests = {r["group"]: r for r in A.human_category_tests(rated_diag(), RATINGS).rows}
    # TempSens [5,4,4] vs Non-key [2,3,1]: U = 9; ties (4,4) -> normal approximation:
    # sigma = sqrt(9/12 * (7 - 6/30)) = 2.2583; z = (9 - 4.5 - .5) / sigma = 1.7712; p = 0.0383
    assert tests["temporally_sensitive"]["u"] == 9
    assert tests["temporally_sensitive"]["p_one_sided"] == pytest.approx(0.0383, abs=2e-4)
    # Anti-key [4] vs [2,3,1]: no ties, exact: U = 3, p = 1/4
    assert tests["anti_key"]["u"] == 3 and tests["anti_key"]["p_one_sided"] == pytest.approx(0.25)


def test_human_tau_sweep_hand_worked():
    res = A.human_tau_sweep(rated_diag(), RATINGS, taus=(0.0, 0.15))
    got = {(r["tau"], r["method"]): r for r in res.rows}
    # tau .15: Key-only predicts s1 s2 -> P 1, R 2/3, F1 .8; Key+Anti-key predicts s1 s2 s5 -> all 1
    k = got[0.15, "key_only"]
    assert (k["tp"], k["fp"], k["fn"], k["precision"]) == (2, 0, 1, 1.0)
    assert (k["recall"], k["f1"]) == pytest.approx((2 / 3, 0.8))
    assert (got[0.15, "key_anti_key"]["f1"], got[0.15, "key_anti_key"]["recall"]) == (1.0, 1.0)
    # tau 0: Key-only s1 s2 s6 -> P 2/3 R 2/3; Key+Anti-key s1 s2 s5 s6 -> P .75 R 1 F1 6/7
    assert (got[0.0, "key_only"]["precision"], got[0.0, "key_only"]["recall"]) == pytest.approx((2 / 3, 2 / 3))
    assert got[0.0, "key_anti_key"]["f1"] == pytest.approx(6 / 7)


def test_ratings_errors():
    d = rated_diag()
    with pytest.raises(A.AnalysisError, match="row 1: sample 'zz' of 'b' is not in the diagnosis"):
        A.human_scores_by_category(d, [{"benchmark": "b", "sample_id": "zz", "rating": 3}])
    with pytest.raises(A.AnalysisError, match="row 2: rating 6 outside 1..5"):
        A.human_scores_by_category(d, [RATINGS[0], {"benchmark": "b", "sample_id": "s1", "rating": 6}])
    with pytest.raises(A.AnalysisError, match="row 1: missing benchmark"):
        A.human_scores_by_category(d, [{"sample_id": "s1", "rating": 3}])


# --- external ranking, contamination probes, K / encoder ablations, baselines -------------------


def test_external_ranking_correlation_hand_worked():
    # key samples k1..k3: m0 3/3, m1 2/3, m2 1/3, m3 0/3; non-key n1, n2 and anti-key a1: m0 0/3 .. m3 3/3
    rows = []
    for j in range(4):
        for i in range(3):
            rows.append(row(f"k{i}", f"m{j}", "maxprob", int(i < 3 - j), mode="qa"))
            rows.append(row(["n1", "n2", "a1"][i], f"m{j}", "maxprob", int(i < j), mode="qa"))
    d = make_diag("b", ["k0", "k1", "k2", "n1", "n2", "a1"], [1, 1, 1, 0, 0, -1])
    external = {"mmmu": {"m0": 10, "m1": 20, "m2": 30, "m3": 40}, "ocr": {"m0": 1, "m1": 2, "m2": 3}}
    res = A.external_ranking_correlation(tbl(rows), d, external)
    got = {r["external"]: r for r in res.rows}
    assert (got["mmmu"]["rho_key"], got["mmmu"]["rho_non_key"], got["mmmu"]["n_models"]) == (-1.0, 1.0, 4)
    assert got["ocr"]["n_models"] == 3 and got["ocr"]["rho_key"] == pytest.approx(-1.0)
    assert got["mean"]["rho_non_key"] == pytest.approx(1.0)
    long_form = [{"model": m, "benchmark": "mmmu", "score": s} for m, s in external["mmmu"].items()]
    assert A.external_ranking_correlation(tbl(rows), d, long_form).rows[0]["rho_key"] == -1.0


def probe_table():
    # no-frame: v0 [1,0,1], v1 [0,0,1], t0 answers s1 s2 only: [1,1]
    rows = [row(f"s{i + 1}", "v0", "noframe", c) for i, c in enumerate([1, 0, 1])]
    rows += [row(f"s{i + 1}", "v1", "noframe", c) for i, c in enumerate([0, 0, 1])]
    rows += [row(f"s{i + 1}", "t0", "noframe", c) for i, c in enumerate([1, 1])]
    return tbl(rows)


def test_text_only_probe_and_same_backbone_hand_worked():
    res = A.text_only_probe(probe_table(), vlm_models=["v0", "v1"], text_models=["t0"])
    panel = res.where(level="panel")[0]
    # on s1, s2: VLM means [.5, 0] -> .25; with t0 [2/3, 1/3] -> .5; shift .25
    assert (panel["n"], panel["acc_panel"], panel["acc_panel_plus_text"]) == (2, 0.25, 0.5)
    assert panel["shift"] == pytest.approx(0.25)
    assert {r["model"]: r["accuracy"] for r in res.where(level="model")} == {"v0": 0.5, "v1": 0.0, "t0": 1.0}
    ctl = A.same_backbone_control(probe_table(), text_model="t0", vlm_model="v0").rows[0]
    assert (ctl["n"], ctl["acc_text"], ctl["acc_vlm"], ctl["vlm_minus_text"]) == (2, 1.0, 0.5, -0.5)
    with pytest.raises(A.AnalysisError, match="both as VLM and as text-only"):
        A.text_only_probe(probe_table(), vlm_models=["v0"], text_models=["v0"])


def test_k_ablation_and_encoder_comparison_hand_worked():
    rows = [row(f"s{i}", "m", "maxprob", c, mode="q", k=16) for i, c in enumerate([1, 0, 0])]
    rows += [row(f"s{i}", "m", "maxprob", c, mode="q", k=32) for i, c in enumerate([1, 1, 0])]
    r = A.k_ablation(tbl(rows)).where(level="model")[0]
    # K=16: 1/3, K=32: 2/3 -> K16 - K32 = -1/3
    assert (r["acc_k=16"], r["acc_k=32"]) == pytest.approx((1 / 3, 2 / 3))
    assert r["k=16_minus_k=32"] == pytest.approx(-1 / 3)
    enc = [row(f"s{i}", "m", "maxprob", c, mode="q", encoder="clip") for i, c in enumerate([1, 1, 1])]
    enc += [row(f"s{i}", "m", "maxprob", c, mode="q", encoder="siglip2") for i, c in enumerate([0, 1, 1])]
    e = A.encoder_comparison(tbl(enc)).where(level="model")[0]
    assert e["encoder=siglip2_minus_encoder=clip"] == pytest.approx(-1 / 3)
    e2 = A.encoder_comparison(tbl(enc), reference="siglip2").where(level="model")[0]
    assert e2["encoder=clip_minus_encoder=siglip2"] == pytest.approx(1 / 3)
    with pytest.raises(DiagnosticsError, match="k values"):
        A.maxprob_vs_minprob(tbl(rows + [row("s0", "m", "minprob", 0, mode="q")]), mode="q")


def test_strategy_baselines_hand_worked():
    # one model: maxprob [1,1], random [1,0], uniform [0,1], minprob [0,0]; s3 lacks random -> excluded
    rows = []
    for strategy, cs in (("maxprob", [1, 1, 1]), ("random", [1, 0]), ("uniform", [0, 1, 1]), ("minprob", [0, 0, 0])):
        mode = "qa" if strategy in ("maxprob", "minprob") else "none"
        rows += [row(f"s{i}", "m", strategy, c, mode=mode) for i, c in enumerate(cs)]
    r = A.strategy_baselines(tbl(rows)).where(level="model")[0]
    assert (r["n"], r["unpaired"]) == (2, 1)
    assert (r["acc_maxprob"], r["acc_random"], r["acc_uniform"], r["acc_minprob"]) == (1.0, 0.5, 0.5, 0.0)
    assert (r["maxprob_minus_random"], r["random_minus_minprob"]) == (0.5, 0.5)


def naive_compare(rows, a, b):
    """Per (benchmark, model) and panel mean of two conditions' accuracy, with dicts."""
    vals = defaultdict(dict)
    for r in rows:
        for name, (strategy, mode) in (("a", a), ("b", b)):
            if r["strategy"] == strategy and r["mode"] == mode:
                vals[(r["benchmark"], r["model"], name)][r["sample_id"]] = r["correct"]
    out = {}
    benches = sorted({r["benchmark"] for r in rows})
    for bench in benches:
        models = sorted({m for (bb, m, _n) in vals if bb == bench})
        panel = [m for m in models if vals.get((bench, m, "a")) and vals.get((bench, m, "b"))]
        for m in models:
            va, vb = vals.get((bench, m, "a"), {}), vals.get((bench, m, "b"), {})
            both = sorted(set(va) & set(vb))
            if both:
                out[(bench, m)] = (len(both), np.mean([va[s] for s in both]), np.mean([vb[s] for s in both]))
        samples = set.intersection(*[set(vals[(bench, m, "a")]) & set(vals[(bench, m, "b")]) for m in panel]) \
            if panel else set()
        if samples:
            ma = np.mean([np.mean([vals[(bench, m, "a")][s] for m in panel]) for s in samples])
            mb = np.mean([np.mean([vals[(bench, m, "b")][s] for m in panel]) for s in samples])
            out[(bench, "mean")] = (len(samples), ma, mb)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_compare_conditions_matches_naive(seed):
    rng = random.Random(seed)
    rows = []
    for b in ("b0", "b1"):
        for s in range(rng.randint(1, 20)):
            for m in [f"m{i}" for i in range(rng.randint(1, 4))]:
                for strategy, mode in (("maxprob", "q"), ("maxprob", "qa")):
                    if rng.random() > 0.15:
                        rows.append(row(f"s{s}", m, strategy, int(rng.random() < 0.5), bench=b, mode=mode))
    res = A.q_vs_qa_maxprob(tbl(rows), groups=None)
    got = {(r["benchmark"], r["model"]): (r["n"], r["acc_q"], r["acc_qa"]) for r in res.rows}
    ref = naive_compare(rows, ("maxprob", "q"), ("maxprob", "qa"))
    assert got.keys() == ref.keys()
    for k, (n, qa, qb) in ref.items():
        assert got[k][0] == n and got[k][1:] == pytest.approx((qa, qb))
    for r in res.rows:
        assert r["qa_minus_q"] == pytest.approx(r["acc_qa"] - r["acc_q"])
        assert r["qa_minus_q_ci_low"] <= r["qa_minus_q"] + 1e-12 <= r["qa_minus_q_ci_high"] + 2e-12


def test_result_table_json_and_text():
    res = A.uniform_vs_oracle(world())
    js = res.to_json()
    assert js["name"] == "uniform_vs_oracle" and js["columns"] == res.columns
    assert all(set(r) == set(res.columns) for r in js["rows"])
    text = res.to_text()
    assert "Table 22" in text and "75.0" in text  # m0's oracle accuracy shown as a percentage


def test_missing_condition_is_an_error_not_an_empty_table():
    with pytest.raises(A.AnalysisError, match="no predictions for condition 'random'"):
        A.strategy_baselines(world())
    with pytest.raises(A.AnalysisError, match="unknown model"):
        A.uniform_vs_oracle(world(), models=["nobody"])


def test_q_vs_qa_on_a_table_with_a_k_ablation_uses_the_shared_k():
    # Q-mode MaxProb at K = 16, 32, 48 (the Table 12 ablation), QA-mode at K = 32 only; one model, 4 samples.
    #   q  K=16 [0,0,0,0]  K=32 [1,0,1,0]  K=48 [1,1,1,1]      qa K=32 [1,1,1,0]
    # The shared K is 32: acc_q = .5, acc_qa = .75, Delta = .25 (pooling every K would give acc_q = .5 too,
    # but the n would be 12; per-K the figures differ, so the test sees which K was used).
    q = {16: [0, 0, 0, 0], 32: [1, 0, 1, 0], 48: [1, 1, 1, 1]}
    rows = [row(f"s{i}", "m", "maxprob", c, mode="q", k=k) for k, cs in q.items() for i, c in enumerate(cs)]
    rows += [row(f"s{i}", "m", "maxprob", c, mode="qa", k=32) for i, c in enumerate([1, 1, 1, 0])]
    res = A.q_vs_qa_maxprob(tbl(rows), groups=None)
    m = res.where(model="m", level="model")[0]
    assert (m["n"], m["acc_q"], m["acc_qa"], m["qa_minus_q"]) == (4, 0.5, 0.75, 0.25)
    assert res.meta["k"] == 32 and res.meta["k_choice"] == "shared"
    assert res.notes[0] == "K = 32: the frame budget shared by the Q- and QA-mode MaxProb rows"
    assert "k=32" in res.meta["conditions"]["q"]
    # Given K wins and is said to be given (here the only QA K, so Q at 32 as well).
    given = A.q_vs_qa_maxprob(tbl(rows), groups=None, filters={"k": 32})
    assert given.meta["k_choice"] == "given" and given.rows == res.rows
    # QA also at 16: two shared K -> an error listing them and each mode's K.
    both = rows + [row(f"s{i}", "m", "maxprob", 1, mode="qa", k=16) for i in range(4)]
    with pytest.raises(A.AnalysisError, match=r"share several K \[16, 32\].*q-mode has K \[16, 32, 48\]; "
                                              r"qa-mode has K \[16, 32\]"):
        A.q_vs_qa_maxprob(tbl(both), groups=None)
    assert A.q_vs_qa_maxprob(tbl(both), groups=None, filters={"k": 16}).rows[0]["acc_qa"] == 1.0
    # No shared K: Q at 16 only, QA at 32 only -> never a comparison across budgets.
    apart = [r for r in rows if r["mode"] == "qa" or r["k"] == 16]
    with pytest.raises(A.AnalysisError, match=r"no frame budget K is shared.*q-mode has K \[16\]; qa-mode has K \[32\]"):
        A.q_vs_qa_maxprob(tbl(apart), groups=None)
    # A mode without rows is still reported as the missing condition.
    with pytest.raises(A.AnalysisError, match="no predictions for condition 'maxprob mode=qa"):
        A.q_vs_qa_maxprob(tbl([r for r in rows if r["mode"] == "q" and r["k"] == 32]), groups=None)


def test_table14_from_a_table_that_holds_n_frames():
    # 6 samples, 2 VLMs (MaxProb / MinProb QA-mode at K = 32, no-frame), L in the n_frames column.
    #   sample  L     K/L     bin         MaxProb  MinProb  FSS
    #   a       1000  .032    <0.10       [1, 1]   [0, 0]    1
    #   b       400   .08     <0.10       [1, 0]   [1, 0]    0
    #   c       320   .10     0.10-0.25   [1, 1]   [0, 1]   .5    (on an edge: the bin above)
    #   d       200   .16     0.10-0.25   [0, 0]   [1, 1]   -1
    #   e       64    .50     0.50-1.00   [1, 0]   [0, 0]   .5
    #   f       16    2.0     >=1.00      [0, 1]   [0, 1]    0    (fewer frames than K)
    # mean |FSS|: <0.10 (1 + 0) / 2 = .5; 0.10-0.25 (.5 + 1) / 2 = .75; 0.50-1.00 .5; >=1.00 0.
    spec = {"a": (1000, [1, 1], [0, 0]), "b": (400, [1, 0], [1, 0]), "c": (320, [1, 1], [0, 1]),
            "d": (200, [0, 0], [1, 1]), "e": (64, [1, 0], [0, 0]), "f": (16, [0, 1], [0, 1])}
    rows = []
    for sid, (L, plus, minus) in spec.items():
        for j in range(2):
            for strategy, c, mode in (("maxprob", plus[j], "qa"), ("minprob", minus[j], "qa"), ("noframe", 0, "none")):
                rows.append(row(sid, f"m{j}", strategy, c, mode=mode, n_frames=L))
    t = tbl(rows)
    d = diagnose(t)
    res = A.frame_coverage(t, d)
    got = {r["coverage"]: (r["n"], r["mean_abs_fss"]) for r in res.rows}
    assert got == {"<0.10": (2, 0.5), "0.10-0.25": (2, 0.75), "0.50-1.00": (1, 0.5), ">=1.00": (1, 0.0)}
    assert res.meta["k"] == 32 and res.notes[0].startswith("K = 32 (the K of the MaxProb / MinProb qa-mode rows)")
    assert "the paper names only '<0.10'" in res.notes[1]
    # A naive loop: bin by K / L against the edges, mean of |FSS|.
    fss = dict(zip(d.sample_id, d.fss))
    naive = defaultdict(list)
    for sid, (L, _, _) in spec.items():
        cov = 32 / L
        label = ("<0.10" if cov < 0.10 else "0.10-0.25" if cov < 0.25 else "0.25-0.50" if cov < 0.50 else
                 "0.50-1.00" if cov < 1.0 else ">=1.00")
        naive[label].append(abs(fss[sid]))
    assert got == {b: (len(v), pytest.approx(sum(v) / len(v))) for b, v in naive.items()}
    # Other K, edges; a table without n_frames names the column; several K must be chosen.
    assert {r["coverage"] for r in A.frame_coverage(t, d, k=8, edges=(0.5,)).rows} == {"<0.50", ">=0.50"}
    with pytest.raises(A.AnalysisError, match="no 'n_frames' column"):
        A.frame_coverage(tbl([{k: v for k, v in r.items() if k != "n_frames"} for r in rows]), d)
    more_k = tbl(rows + [row("a", "m0", "maxprob", 1, mode="qa", k=16, n_frames=1000)])
    with pytest.raises(A.AnalysisError, match=r"K values \[16, 32\]"):
        A.frame_coverage(more_k, d)


def test_window_frames_unknown_are_counted_and_parsing_matches_json():
    good = layout_rows("long", 100, 32, {2})
    blank = [dict(r, sample_id="blank", frame_indices=None) for r in layout_rows("x", 100, 32, {1})]
    broken = [dict(r, sample_id="broken", frame_indices="[1, two]") for r in layout_rows("y", 100, 32, {0})]
    d = make_diag("b", ["long", "blank", "broken"], [0.5, 0.5, 0.5])
    res = A.correct_window_centroids(tbl(good + blank + broken), d)
    (key,) = res.where(fss_category="key")
    assert key["n"] == 1 and key["mean"] == pytest.approx(0.80)
    assert res.meta["no_frames"] == {"b": 2} and any("without frame_indices" in n for n in res.notes)
    # The vectorised parser agrees with json on spacing, single frames and empty lists.
    import json

    texts = ["[0,1,2]", "[ 5 ]", "[]", None, "[10, 11,12 ,13]", "[3,x]"]
    mean, lo, hi, known = A._index_stats(pa.array(texts, type=pa.string()))
    for t, m, a, b, k in zip(texts, mean, lo, hi, known):
        idx = json.loads(t) if t and "x" not in t else []
        assert k == bool(idx)
        if idx:
            assert (m, a, b) == (np.mean(idx), min(idx), max(idx))
