"""Accuracy per model x condition: hand-worked tables, a naive reference, NExT-QA's official
grouping, sample-field joins through the real loaders, and the `tempcore accuracy` CLI."""

from __future__ import annotations

import json
import random
from collections import defaultdict

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from tempcore.benchmarks import load_benchmark
from tempcore.cli import main
from tempcore.diagnostics.accuracy import AccuracyError, accuracy_table, nextqa_official
from tempcore.diagnostics.table import TableError
from tempcore.records import Sample

COLS = ["benchmark", "sample_id", "model", "strategy", "mode", "k", "window", "correct"]


def tbl(rows: list[dict]) -> pa.Table:
    extra = sorted({k for r in rows for k in r} - set(COLS))
    data = {c: [r.get(c) for r in rows] for c in COLS + extra}
    types = {"window": pa.int64(), "k": pa.int64(), "correct": pa.int8(), "parse_error": pa.int8()}
    return pa.table({c: pa.array(v, type=types.get(c)) for c, v in data.items()})


def row(sid, model, strategy, correct, *, bench="b", mode="none", k=32, window=None, **extra):
    return dict(benchmark=bench, sample_id=sid, model=model, strategy=strategy, mode=mode, k=k, window=window,
                correct=correct, **extra)


def hand_table() -> pa.Table:
    rows = []
    # uniform: m0 [1, 0 (parse failure), 1, 1]; m1 [0, 0, 1, 0]
    for i, (c0, pe0, c1) in enumerate([(1, 0, 0), (0, 1, 0), (1, 0, 1), (1, 0, 0)]):
        rows.append(row(f"s{i + 1}", "m0", "uniform", c0, parse_error=pe0))
        rows.append(row(f"s{i + 1}", "m1", "uniform", c1, parse_error=0))
    oracle = {
        ("s1", "m0"): [0, 0, 0], ("s2", "m0"): [0, 1, 0], ("s3", "m0"): [1, 0, 0], ("s4", "m0"): [0, 0, 0],
        ("s1", "m1"): [0, 0, 1],
        ("s2", "m1"): [0, 0],  # window 2 missing and both wrong -> incomplete
        ("s3", "m1"): [0, 0, 0],
        ("s4", "m1"): [1],  # windows missing but one is right -> solved
    }
    for (sid, model), windows in oracle.items():
        for w, c in enumerate(windows):
            rows.append(row(sid, model, "oracle", c, window=w))
    return tbl(rows)


def by_key(result, *keys):
    return {tuple(r[k] for k in keys): r for r in result.rows}


def test_hand_worked_uniform_oracle_and_parse_failures():
    res = accuracy_table(hand_table())
    got = by_key(res, "model", "strategy")
    assert "window" not in res.columns and "k" not in res.columns  # k constant, no per-window rows
    u0, u1, o0, o1 = got["m0", "uniform"], got["m1", "uniform"], got["m0", "oracle"], got["m1", "oracle"]
    # m0 uniform 3/4 (the parse failure counts as wrong): Wilson (0.3006, 0.9544)
    assert (u0["n"], u0["correct"], u0["accuracy"], u0["parse_errors"]) == (4, 3, 0.75, 1)
    assert (u0["ci_low"], u0["ci_high"]) == pytest.approx((0.3006, 0.9544), abs=1e-4)
    # m1 uniform 1/4: Wilson (0.0456, 0.6994)
    assert (u1["n"], u1["correct"]) == (4, 1)
    assert (u1["ci_low"], u1["ci_high"]) == pytest.approx((0.0456, 0.6994), abs=1e-4)
    # m0 oracle: any window right on s2, s3 -> 2/4, Wilson (0.1500, 0.8500)
    assert (o0["n"], o0["correct"], o0["incomplete"]) == (4, 2, 0)
    assert (o0["ci_low"], o0["ci_high"]) == pytest.approx((0.1500, 0.8500), abs=1e-4)
    # m1 oracle: s1 and s4 solved, s3 wrong on all 3 windows, s2 cut short -> 2/3, 1 incomplete
    assert (o1["n"], o1["correct"], o1["incomplete"]) == (3, 2, 1)
    assert (o1["ci_low"], o1["ci_high"]) == pytest.approx((0.2077, 0.9385), abs=1e-4)


def test_per_window_rows_only_when_asked():
    res = accuracy_table(hand_table(), per_window=True)
    got = by_key(res, "model", "strategy", "window")
    assert got["m0", "oracle", None]["correct"] == 2  # the oracle itself is still there
    # m0 windows: w0 [0,0,1,0], w1 [0,1,0,0], w2 all wrong
    assert [(got["m0", "oracle", w]["correct"], got["m0", "oracle", w]["n"]) for w in (0, 1, 2)] == [
        (1, 4), (1, 4), (0, 4)]
    # m1: w0 right on s4 only; w1 has 3 samples, none right; w2 has s1 (right) and s3
    assert [(got["m1", "oracle", w]["correct"], got["m1", "oracle", w]["n"]) for w in (0, 1, 2)] == [
        (1, 4), (0, 3), (1, 2)]
    assert accuracy_table(hand_table(), by=["window"]).columns == res.columns


def test_varying_condition_columns_are_never_pooled():
    rows = [row("s1", "m", "maxprob", 1, mode="qa", k=16), row("s1", "m", "maxprob", 0, mode="qa", k=32),
            row("s2", "m", "maxprob", 1, mode="qa", k=16), row("s2", "m", "maxprob", 1, mode="qa", k=32)]
    res = accuracy_table(tbl(rows))
    assert "k" in res.columns
    assert {r["k"]: r["correct"] for r in res.rows} == {16: 2, 32: 1}


def test_group_by_predictions_column_and_sample_fields():
    rows = [row(f"s{i}", "m", "uniform", c) for i, c in enumerate([1, 0, 1, 1, 0])]
    samples = [Sample("b", f"s{i}", "v.mp4", "q?", ("x", "y"), 0, metadata={"duration": d})
               for i, d in enumerate(["short", "short", "long", "long", "long"])]
    res = accuracy_table(tbl(rows), by=["duration"], samples=samples)
    got = {r["duration"]: (r["correct"], r["n"]) for r in res.rows}
    assert got == {"short": (1, 2), "long": (2, 3)}
    # n_options is a Sample attribute
    res = accuracy_table(tbl(rows), by=["n_options"], samples=samples, benchmark="b")
    assert [(r["n_options"], r["n"]) for r in res.rows] == [(2, 5)]
    with pytest.raises(AccuracyError, match="no column or sample field 'nope'"):
        accuracy_table(tbl(rows), by=["nope"], samples=samples)
    with pytest.raises(AccuracyError, match="give the benchmark's annotations"):
        accuracy_table(tbl(rows), by=["duration"])


def test_unmatched_samples_error_or_kept_and_counted():
    rows = [row("s0", "m", "uniform", 1), row("ghost", "m", "uniform", 0)]
    samples = [Sample("b", "s0", "v.mp4", "q?", ("x", "y"), 0, metadata={"duration": "short"})]
    with pytest.raises(AccuracyError, match="1 sample.*not in the annotations.*'ghost'"):
        accuracy_table(tbl(rows), by=["duration"], samples=samples)
    res = accuracy_table(tbl(rows), by=["duration"], samples=samples, unmatched="keep")
    assert {r["duration"]: r["n"] for r in res.rows} == {"short": 1, None: 1}
    assert res.meta["unmatched_samples"] == 1


def test_duplicates_empty_and_one_model():
    dup = [row("s1", "m", "uniform", 1), row("s1", "m", "uniform", 0)]
    with pytest.raises(AccuracyError, match="duplicate predictions"):
        accuracy_table(tbl(dup))
    empty = tbl([row("s1", "m", "uniform", 1)]).slice(0, 0)
    with pytest.raises(TableError, match="no accuracy to report"):  # never an empty result
        accuracy_table(empty)
    one = accuracy_table(tbl([row("s1", "solo", "uniform", 1)]))
    assert [(r["model"], r["n"], r["accuracy"]) for r in one.rows] == [("solo", 1, 1.0)]
    with pytest.raises(AccuracyError, match="no rows for benchmark 'zz'"):
        accuracy_table(tbl(dup[:1]), benchmark="zz")
    with pytest.raises(TableError, match=r"unknown model\(s\) \['other'\]; the predictions have \['m'\]"):
        accuracy_table(tbl(dup[:1]), models=["other"])


def naive_accuracy(rows):
    """Dict-and-loop reference: non-oracle rows counted per group; the oracle per the module rules."""
    groups = defaultdict(lambda: [0, 0, 0])  # n, correct, incomplete
    windows = defaultdict(dict)
    for r in rows:
        if r["strategy"] == "oracle":
            windows[(r["benchmark"], r["sample_id"], r["model"], r["k"])][r["window"]] = r["correct"]
        else:
            g = groups[(r["benchmark"], r["model"], r["strategy"], r["mode"], r["k"])]
            g[0] += 1
            g[1] += r["correct"]
    expected = defaultdict(int)
    for (b, s, _m, k), w in windows.items():
        expected[(b, s, k)] = max(expected[(b, s, k)], len(w))
    for (b, s, m, k), w in windows.items():
        g = groups[(b, m, "oracle", "none", k)]
        solved = any(w.values())
        if solved or len(w) == expected[(b, s, k)]:
            g[0] += 1
            g[1] += int(solved)
        else:
            g[2] += 1
    return {key: tuple(v) for key, v in groups.items() if v[0] > 0}


@pytest.mark.parametrize("seed", range(6))
def test_matches_naive_reference_on_random_tables(seed):
    rng = random.Random(seed)
    rows = []
    for b in ("b0", "b1"):
        for s in range(rng.randint(1, 15)):
            n_windows = rng.randint(1, 4)
            for m in [f"m{i}" for i in range(rng.randint(1, 3))]:
                for strategy, mode, k in (("maxprob", "qa", 16), ("maxprob", "qa", 32), ("uniform", "none", 32)):
                    if rng.random() > 0.1:
                        rows.append(row(f"s{s}", m, strategy, int(rng.random() < 0.5), bench=b, mode=mode, k=k))
                for w in range(n_windows):
                    if rng.random() > 0.2:
                        rows.append(row(f"s{s}", m, "oracle", int(rng.random() < 0.2), bench=b, k=32, window=w))
    res = accuracy_table(tbl(rows))
    got = {(r["benchmark"], r["model"], r["strategy"], r["mode"], r["k"]): (r["n"], r["correct"], r["incomplete"])
           for r in res.rows}
    assert got == naive_accuracy(rows)
    for r in res.rows:
        assert r["accuracy"] == pytest.approx(r["correct"] / r["n"])
        assert r["ci_low"] <= r["accuracy"] <= r["ci_high"]


# --- NExT-QA ---------------------------------------------------------------------------------

NEXTQA_CSV = """video,frame_count,width,height,question,answer,qid,type,a0,a1,a2,a3,a4
100,10,640,480,why did the man wave,0,1,CW,a,b,c,d,e
100,10,640,480,what did the man do after waving,1,2,TP,a,b,c,d,e
101,10,640,480,when did the dog bark,2,3,TC,a,b,c,d,e
101,10,640,480,how many dogs are there,3,4,DC,a,b,c,d,e
102,10,640,480,what did the boy do before running,4,5,TN,a,b,c,d,e
102,10,640,480,how did the boy open the box,0,6,CH,a,b,c,d,e
"""


def nextqa_samples(tmp_path):
    path = tmp_path / "val.csv"
    path.write_text(NEXTQA_CSV)
    return path, load_benchmark("nextqa", path).samples


def test_nextqa_official_hand_worked(tmp_path):
    _, samples = nextqa_samples(tmp_path)
    # correct: CW 1, TP 1 (-> TN), TC 0, DC 1, TN 0, CH 0
    outcome = {"100_1": 1, "100_2": 1, "101_3": 0, "101_4": 1, "102_5": 0, "102_6": 0}
    rows = [row(sid, "m", "uniform", c, bench="nextqa") for sid, c in outcome.items()]
    res = nextqa_official(tbl(rows), samples)
    got = {r["type"]: (r["correct"], r["n"], r["level"], r["type_name"]) for r in res.rows}
    assert [r["type"] for r in res.rows] == ["CW", "CH", "TN", "TC", "DC", "C", "T", "D", "all"]
    assert got["TN"] == (1, 2, "type", "Bef&Aft")  # TP merged into TN: 1 of 2
    assert got["C"] == (1, 2, "family", "Acc_C")  # CW 1/1 + CH 0/1, pooled
    assert got["T"] == (1, 3, "family", "Acc_T")  # TN 1/2 + TC 0/1
    assert got["D"] == (1, 1, "family", "Acc_D")
    assert got["all"] == (3, 6, "overall", "All")
    bad = [Sample("nextqa", "100_1", "v.mp4", "q", ("a", "b"), 0, metadata={"type": "XX"})]
    with pytest.raises(AccuracyError, match="not official types"):
        nextqa_official(tbl(rows[:1]), bad)


def naive_official(rows, types):
    """A loop port of doc-doc/NExT-QA eval_mc.py's grouping, per (model, strategy)."""
    out = {}
    per = defaultdict(list)
    for r in rows:
        per[(r["model"], r["strategy"])].append(r)
    for key, rs in per.items():
        group_acc = {t: 0 for t in ("CW", "CH", "TN", "TC", "DC", "DL", "DO")}
        group_cnt = dict(group_acc)
        overall_acc, overall_cnt = {"C": 0, "T": 0, "D": 0}, {"C": 0, "T": 0, "D": 0}
        all_acc = all_cnt = 0
        for r in rs:
            t = types[r["sample_id"]]
            if t == "TP":
                t = "TN"
            group_cnt[t] += 1
            group_acc[t] += r["correct"]
            overall_cnt[t[0]] += 1
            overall_acc[t[0]] += r["correct"]
            all_cnt += 1
            all_acc += r["correct"]
        for t in group_acc:
            if group_cnt[t]:
                out[(*key, t)] = (group_acc[t], group_cnt[t])
        for t in overall_acc:
            if overall_cnt[t]:
                out[(*key, t)] = (overall_acc[t], overall_cnt[t])
        out[(*key, "all")] = (all_acc, all_cnt)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_nextqa_official_matches_loop_port(seed):
    rng = random.Random(seed)
    codes = ["CW", "CH", "TN", "TC", "TP", "DC", "DL", "DO"]
    types = {f"v_{i}": rng.choice(codes) for i in range(rng.randint(3, 40))}
    samples = [Sample("nextqa", sid, "v.mp4", "q", ("a", "b"), 0, metadata={"type": t}) for sid, t in types.items()]
    rows = [row(sid, m, s, int(rng.random() < 0.6), bench="nextqa") for sid in types
            for m in ("m0", "m1") for s in ("uniform", "noframe")]
    res = nextqa_official(tbl(rows), samples)
    got = {(r["model"], r["strategy"], r["type"]): (r["correct"], r["n"]) for r in res.rows}
    assert got == naive_official(rows, types)


# --- CLI -------------------------------------------------------------------------------------


def write(table: pa.Table, path):
    if path.suffix == ".parquet":
        pq.write_table(table, path)
    else:
        pacsv.write_csv(table, path)
    return str(path)


def run_cli(capsys, *argv):
    rc = main(["accuracy", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_cli_json_groups(tmp_path, capsys, suffix):
    path = write(hand_table(), tmp_path / f"preds{suffix}")
    rc, out, _ = run_cli(capsys, "--predictions", path, "--json")
    assert rc == 0
    groups = json.loads(out)["groups"]
    need = {"model", "strategy", "mode", "n", "correct", "accuracy", "ci_low", "ci_high"}
    assert all(need <= set(g) for g in groups)
    got = {(g["model"], g["strategy"]): (g["correct"], g["n"], g["accuracy"]) for g in groups}
    assert got == {("m0", "uniform"): (3, 4, 0.75), ("m1", "uniform"): (1, 4, 0.25),
                   ("m0", "oracle"): (2, 4, 0.5), ("m1", "oracle"): (2, 3, 2 / 3)}
    rc, out, _ = run_cli(capsys, "--predictions", path)
    assert rc == 0 and "Accuracy" in out and "oracle" in out


def test_cli_nextqa_official_with_annotations(tmp_path, capsys):
    ann, _ = nextqa_samples(tmp_path)
    outcome = {"100_1": 1, "100_2": 1, "101_3": 0, "101_4": 1, "102_5": 0, "102_6": 0}
    preds = write(tbl([row(s, "m", "uniform", c, bench="nextqa") for s, c in outcome.items()]),
                  tmp_path / "p.parquet")
    rc, out, _ = run_cli(capsys, "--predictions", preds, "--benchmark", "nextqa", "--annotations", str(ann),
                         "--by", "type", "--json")
    assert rc == 0
    groups = json.loads(out)["groups"]
    assert [(g["type"], g["correct"], g["n"]) for g in groups] == [
        ("CW", 1, 1), ("CH", 0, 1), ("TN", 1, 2), ("TC", 0, 1), ("DC", 1, 1),
        ("C", 1, 2), ("T", 1, 3), ("D", 1, 1), ("all", 3, 6)]
    rc, out, _ = run_cli(capsys, "--predictions", preds, "--benchmark", "nextqa", "--annotations", str(ann),
                         "--by", "type", "--plain", "--json")
    assert {g["type"] for g in json.loads(out)["groups"]} == {"CW", "TP", "TC", "DC", "TN", "CH"}


def test_cli_videomme_duration_and_task_type(tmp_path, capsys, data_dir):
    ann = data_dir / "formats" / "videomme_excerpt.json"
    samples = load_benchmark("videomme", ann).samples
    rows = [row(s.sample_id, "m", "uniform", i % 2, bench="videomme") for i, s in enumerate(samples)]
    preds = write(tbl(rows), tmp_path / "p.csv")
    for field in ("duration", "task_type"):
        rc, out, _ = run_cli(capsys, "--predictions", preds, "--benchmark", "videomme", "--annotations", str(ann),
                             "--by", field, "--json")
        assert rc == 0
        groups = json.loads(out)["groups"]
        expected = defaultdict(lambda: [0, 0])
        for i, s in enumerate(samples):
            expected[s.metadata[field]][0] += i % 2
            expected[s.metadata[field]][1] += 1
        assert {g[field]: [g["correct"], g["n"]] for g in groups} == dict(expected)


def test_cli_errors_and_unmatched(tmp_path, capsys):
    ann, _ = nextqa_samples(tmp_path)
    preds = write(tbl([row("100_1", "m", "uniform", 1, bench="nextqa"), row("999_9", "m", "uniform", 0,
                                                                         bench="nextqa")]), tmp_path / "p.csv")
    rc, _, err = run_cli(capsys, "--predictions", preds, "--benchmark", "nextqa", "--annotations", str(ann),
                         "--by", "type")
    assert rc == 1 and "not in the annotations" in err and "999_9" in err
    rc, out, _ = run_cli(capsys, "--predictions", preds, "--benchmark", "nextqa", "--annotations", str(ann),
                         "--by", "type", "--unmatched", "keep", "--json")
    data = json.loads(out)
    assert rc == 0 and data["unmatched_samples"] == 1
    assert [(g["type"], g["level"], g["n"]) for g in data["groups"]] == [
        ("CW", "type", 1), ("C", "family", 1), ("all", "overall", 1), (None, "unknown", 1)]
    rc, _, err = run_cli(capsys, "--predictions", preds, "--annotations", str(ann))
    assert rc == 1 and "--benchmark" in err


def test_blank_rotation_is_rotation_zero():
    """A blank rotation is the original option order (rotation 0), as ``diagnose`` reads it: one model's
    MaxProb on 12 samples, 3 rows with a blank rotation and 9 with rotation 0, is one group of 12."""
    correct = [1, 0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1]  # 8 of 12
    rows = [row(f"s{i}", "m", "maxprob", c, mode="qa", rotation=None if i < 3 else 0) for i, c in enumerate(correct)]
    res = accuracy_table(tbl(rows))
    assert "rotation" not in res.columns  # one rotation: not a varying condition column
    assert [(r["n"], r["correct"]) for r in res.rows] == [(12, 8)]
    # With a second rotation the column varies: blank rows still pool with rotation 0, never on their own.
    rows += [row(f"s{i}", "m", "maxprob", 1 - c, mode="qa", rotation=1) for i, c in enumerate(correct)]
    res = accuracy_table(tbl(rows))
    assert {r["rotation"]: (r["n"], r["correct"]) for r in res.rows} == {0: (12, 8), 1: (12, 4)}
    # The same as diagnose, which reads a blank rotation as 0.
    from tempcore.diagnostics import EncodedPredictions

    enc = EncodedPredictions.from_table(tbl(rows))
    vals = enc.values(enc.rows("maxprob", "qa"), "hard", "maxprob")
    assert vals.shape == (12, 1) and vals.sum() == 8
    # A prediction stored both with a blank rotation and with rotation 0 is a duplicate.
    dup = [row("s0", "m", "maxprob", 1, mode="qa", rotation=None), row("s0", "m", "maxprob", 1, mode="qa", rotation=0)]
    with pytest.raises(AccuracyError, match="duplicate"):
        accuracy_table(tbl(dup))
