"""BA / MBA (TemporalBench): hand-worked examples, a naive second implementation on random tables,
TemporalBench-format files against a re-statement of the official scorer, and the CLI."""

from __future__ import annotations

import json
import math
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest

from tempcore.cli import main
from tempcore.diagnostics.mba import MBAError, mba_table
from tempcore.diagnostics.stats import wilson_interval
from tempcore.records import Sample
from tempcore.tidy.table import write_table

JSON_KEYS = {"model", "strategy", "mode", "n_binary", "correct_binary", "ba", "n_groups", "correct_groups", "mba",
             "chance_mba", "incomplete_groups"}


def table(rows, **extra):
    """rows: (sample_id, model, strategy, correct[, response]) -> a tidy table of benchmark 'b'."""
    n = len(rows)
    cols = {
        "benchmark": ["b"] * n,
        "sample_id": [r[0] for r in rows],
        "model": [r[1] for r in rows],
        "strategy": [r[2] for r in rows],
        "mode": ["none"] * n,
        "k": [8] * n,
        "window": pa.nulls(n, pa.int64()),
        "correct": pa.array([r[3] for r in rows], pa.int8()),
    }
    if rows and len(rows[0]) > 4:
        cols["response"] = [r[4] for r in rows]
    cols.update(extra)
    return pa.table(cols)


def one(result, view="overall", **where):
    rows = [r for r in getattr(result, view) if all(r.get(k) == v for k, v in where.items())]
    assert len(rows) == 1, rows
    return rows[0]


# --- hand-worked ------------------------------------------------------------------------------


def test_group_of_four_with_one_wrong_answer():
    t = table([("g#b0", "m", "uniform", 1), ("g#b1", "m", "uniform", 1), ("g#b2", "m", "uniform", 0),
               ("g#b3", "m", "uniform", 1)], n_options=[2, 2, 2, 2])
    r = one(mba_table(t))
    assert (r["n_binary"], r["correct_binary"], r["ba"]) == (4, 3, 0.75)
    assert (r["n_groups"], r["correct_groups"], r["mba"]) == (1, 0, 0.0)
    assert r["chance_mba"] == pytest.approx(0.5**4)
    assert r["incomplete_groups"] == 0
    low, high = wilson_interval(3, 4)
    assert (r["ba_ci_low"], r["ba_ci_high"]) == (pytest.approx(float(low)), pytest.approx(float(high)))
    assert r["mba_ci_low"] == 0.0 and r["mba_ci_high"] == pytest.approx(float(wilson_interval(0, 1)[1]))


def test_groups_of_different_sizes_and_option_counts():
    # g1: 3 questions all right (binary); g2: 1 question right, with 4 options; g3: 2 questions, one wrong
    t = table([("g1#b0", "m", "u", 1), ("g1#b1", "m", "u", 1), ("g1#b2", "m", "u", 1), ("g2#b0", "m", "u", 1),
               ("g3#b0", "m", "u", 0), ("g3#b1", "m", "u", 1)], n_options=[2, 2, 2, 4, 2, 2])
    r = one(mba_table(t))
    assert (r["n_binary"], r["correct_binary"]) == (6, 5)
    assert (r["n_groups"], r["correct_groups"]) == (3, 2)
    assert r["mba"] == pytest.approx(2 / 3)
    assert r["chance_mba"] == pytest.approx((1 / 8 + 1 / 4 + 1 / 4) / 3)


def test_incomplete_groups_are_counted_and_excluded():
    # model a answered everything; model b lacks g1#b1 -> g1 incomplete for b (never right, never wrong)
    rows = [(f"g{g}#b{i}", m, "u", 1) for g in range(3) for i in range(2) for m in ("a", "b")]
    rows = [r for r in rows if not (r[0] == "g1#b1" and r[1] == "b")]
    rows = [(s, m, st, 0 if (s == "g2#b0" and m == "b") else c) for s, m, st, c in rows]
    res = mba_table(table(rows))
    a, b = one(res, model="a"), one(res, model="b")
    assert (a["n_groups"], a["correct_groups"], a["incomplete_groups"], a["n_binary"]) == (3, 3, 0, 6)
    assert (b["n_groups"], b["correct_groups"], b["incomplete_groups"]) == (2, 1, 1)
    assert (b["n_binary"], b["correct_binary"]) == (4, 3)  # the incomplete group's question is left out of BA
    # TemporalBench's scorer scores what is present: g1 counts for b over its one question
    p = one(mba_table(table(rows), incomplete="present"), model="b")
    assert (p["n_groups"], p["correct_groups"], p["incomplete_groups"], p["n_binary"]) == (3, 2, 0, 5)


def test_annotations_make_a_group_with_no_prediction_incomplete():
    samples = [Sample("b", f"q{i}", "v.mp4", "?", ("x", "y"), 0, metadata={"video_name": f"v{i // 2}"})
               for i in range(6)]
    rows = [("q0", "m", "u", 1), ("q1", "m", "u", 1), ("q2", "m", "u", 1)]  # v1 half done, v2 never started
    r = one(mba_table(table(rows), samples=samples, benchmark="b"))
    assert (r["n_groups"], r["correct_groups"], r["incomplete_groups"]) == (1, 1, 2)
    assert r["chance_mba"] == pytest.approx(0.25)


def test_groups_cannot_be_guessed():
    with pytest.raises(MBAError, match="cannot tell the question groups"):
        mba_table(table([("q0", "m", "u", 1)]))
    with pytest.raises(MBAError, match="duplicate predictions"):
        mba_table(table([("g#b0", "m", "u", 1), ("g#b0", "m", "u", 0)]))
    with pytest.raises(MBAError, match="unknown parse"):
        mba_table(table([("g#b0", "m", "u", 1)]), parse="last-char")
    # a predictions column can name the groups
    t = table([("q0", "m", "u", 1), ("q1", "m", "u", 0)], vid=["v", "v"])
    assert one(mba_table(t, group_by="vid"))["n_groups"] == 1
    with pytest.raises(MBAError, match="two values"):
        mba_table(table([("q0", "m", "u", 1), ("q0", "n", "u", 0)], vid=["v", "w"]), group_by="vid")


def test_first_char_rule_and_rotation():
    # correct option index 1 ("B"); rotation 1 of 2 options shows it as "A"
    t = table([("g#b0", "m", "u", 0, "b. the second"), ("g#b1", "m", "u", 1, " B"), ("g#b2", "m", "u", 1, ""),
               ("h#b0", "m", "u", 0, "A")], target=[1, 1, 1, 1], n_options=[2, 2, 2, 2], rotation=[0, 0, 0, 1])
    res = mba_table(t, parse="first-char")
    rows = {r["rotation"]: r for r in res.overall} if "rotation" in res.condition_columns else None
    assert rows is not None
    # rotation 0: "b..." right (case-insensitive), " B" wrong (no stripping), "" wrong
    assert (rows[0]["n_binary"], rows[0]["correct_binary"]) == (3, 1)
    assert (rows[1]["n_binary"], rows[1]["correct_binary"]) == (1, 1)
    extract = mba_table(t, parse="extract")
    assert {r["rotation"]: r["correct_binary"] for r in extract.overall} == {0: 2, 1: 0}
    with pytest.raises(MBAError, match="response"):
        mba_table(table([("g#b0", "m", "u", 1)], target=[0]), parse="first-char")


def test_oracle_window_rows_are_left_out():
    t = table([("g#b0", "m", "u", 1), ("g#b0", "m", "oracle", 1)])
    t = t.set_column(t.column_names.index("window"), "window", pa.array([None, 0], pa.int64()))
    res = mba_table(t)
    assert [r["strategy"] for r in res.overall] == ["u"] and res.meta["oracle_rows_skipped"] == 1


# --- naive second implementation on random tables --------------------------------------------


def naive(rows, expected_of=None, policy="exclude"):
    """rows: dicts with sample_id, model, strategy, correct, group, n_options, label."""
    by = defaultdict(lambda: defaultdict(list))
    members = defaultdict(set)
    for r in rows:
        by[(r["model"], r["strategy"], r["label"])][r["group"]].append(r)
        members[(r["label"], r["group"])].add(r["sample_id"])
    if expected_of is not None:
        members = expected_of
    universe = defaultdict(set)
    for (label, group) in members:
        universe[label].add(group)
    out = {}
    for key, groups in by.items():
        nb = cb = ng = cg = 0
        chance = 0.0
        for group, rs in groups.items():
            complete = policy == "present" or {r["sample_id"] for r in rs} == members[(key[2], group)]
            if not complete:
                continue
            ng += 1
            nb += len(rs)
            cb += sum(r["correct"] for r in rs)
            cg += all(r["correct"] for r in rs)
            chance += math.prod(1 / r["n_options"] for r in rs)
        inc = 0 if policy == "present" else len(universe[key[2]]) - ng
        out[key] = (nb, cb, ng, cg, chance / ng if ng else None, inc)
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("policy", ["exclude", "present"])
def test_matches_naive_implementation(seed, policy):
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(int(rng.integers(5, 40))):
        size = int(rng.integers(1, 6))
        cat = f"c{rng.integers(0, 3)}"
        for i in range(size):
            n_opt = int(rng.choice([2, 3, 4]))
            for m in ("m0", "m1"):
                for st in ("uniform", "noframe"):
                    if rng.random() < 0.1:
                        continue  # missing prediction
                    rows.append({"sample_id": f"g{g}#b{i}", "model": m, "strategy": st,
                                 "correct": int(rng.random() < 0.7), "group": f"g{g}", "n_options": n_opt,
                                 "dataset": f"d{g % 3}", "category": cat if rng.random() < 0.8 else "other"})
    # category must be a per-sample field: fix it per sample
    cat_of = {}
    for r in rows:
        r["category"] = cat_of.setdefault(r["sample_id"], r["category"])
    order = rng.permutation(len(rows))
    rows = [rows[i] for i in order]
    t = table([(r["sample_id"], r["model"], r["strategy"], r["correct"]) for r in rows],
              n_options=[r["n_options"] for r in rows], dataset=[r["dataset"] for r in rows],
              category=[r["category"] for r in rows])
    res = mba_table(t, incomplete=policy)
    for view, field in (("overall", None), ("by_dataset", "dataset"), ("by_category", "category")):
        want = naive([dict(r, label=None if field is None else r[field]) for r in rows], policy=policy)
        got = {}
        for r in getattr(res, view):
            key = (r["model"], r["strategy"], None if field is None else r[field])
            got[key] = (r["n_binary"], r["correct_binary"], r["n_groups"], r["correct_groups"], r["chance_mba"],
                        r["incomplete_groups"])
        assert set(got) == set(want)
        for k in want:
            nb, cb, ng, cg, ch, inc = got[k]
            assert (nb, cb, ng, cg, inc) == want[k][:4] + (want[k][5],), (view, k)
            assert (ch is None and want[k][4] is None) or ch == pytest.approx(want[k][4])
        for r in getattr(res, view):
            if r["n_groups"]:
                assert r["mba"] == pytest.approx(r["correct_groups"] / r["n_groups"])
                assert r["ba"] == pytest.approx(r["correct_binary"] / r["n_binary"])


def test_parquet_dictionary_columns_give_the_same_figures(tmp_path):
    rows = [(f"g{g}#b{i}", "m", "u", (g + i) % 3 != 0) for g in range(20) for i in range(3)]
    t = table([(a, b, c, int(d)) for a, b, c, d in rows], n_options=[2] * len(rows))
    plain = mba_table(t).overall
    dict_t = t.set_column(1, "sample_id", t.column("sample_id").dictionary_encode())
    path = tmp_path / "p.parquet"
    write_table(dict_t, path)
    import pyarrow.parquet as pq

    assert mba_table(pq.read_table(path)).overall == plain


# --- TemporalBench-format files, against TemporalBench's published scorer ----------------------


def official_scorer(questions, preds, short):
    """TemporalBench get_qa_acc.py, re-stated: first character vs GT (case-insensitive), groups keyed by
    video_name overall, by (dataset, video_name) per dataset and (category, video_name) per category."""
    by_idx = {q["idx"]: q for q in questions}
    correct = 0
    mba = {}
    per_ds, per_ds_mba, per_cat, per_cat_mba = defaultdict(list), defaultdict(dict), defaultdict(list), defaultdict(dict)
    for p in preds:
        q = by_idx[p["idx"]]
        ok = q["GT"].lower() == p["response"][0].lower()
        correct += ok
        v = q["video_name"]
        mba[v] = mba.get(v, True) and ok
        ds = q["dataset"] if "dataset" in q else q["source_dataset"]  # the script reads 'dataset'
        per_ds[ds].append(ok)
        per_ds_mba[ds][v] = per_ds_mba[ds].get(v, True) and ok
        if short:
            per_cat[q["category"]].append(ok)
            per_cat_mba[q["category"]][v] = per_cat_mba[q["category"]].get(v, True) and ok
    out = {"ba": (correct, len(preds)), "mba": (sum(mba.values()), len(mba)),
           "ds": {d: (sum(x), len(x), sum(per_ds_mba[d].values()), len(per_ds_mba[d])) for d, x in per_ds.items()},
           "cat": {c: (sum(x), len(x), sum(per_cat_mba[c].values()), len(per_cat_mba[c])) for c, x in per_cat.items()}}
    return out


CATEGORIES = ["Action Order", "Action Frequency", "Action Type", "Motion Magnitude", "Event Order"]


def temporalbench_files(tmp_path, kind, spelling, seed):
    rng = np.random.default_rng(seed)
    questions = []
    for v in range(25):
        video = f"{kind}_video/{['COIN', 'Charades', 'Oops'][v % 3]}/clip{v}.mp4"
        for i in range(int(rng.integers(1, 6))):
            gt = str(rng.choice(["A", "B"]))
            q = {"idx": f"{video}_{i}", "video_name": video,
                 "category": str(rng.choice(CATEGORIES)), spelling: ["COIN", "Charades", "Oops"][v % 3],
                 "question": "Which caption best describes this video?\nA. A man cuts the ginger twice.\n"
                             f"B. A man cuts the ginger {i + 3} times.\n"
                             "Answer with the option's letter from the given choices directly.",
                 "GT": gt}
            questions.append(q)
    path = tmp_path / f"temporalbench_{kind}_qa.json"
    path.write_text(json.dumps(questions))
    responses = ["A", "B", "a", "b.", "B. A man", "The answer is A", " A", "(B)", "A\n"]
    preds = [{"idx": q["idx"], "response": str(rng.choice(responses))} for q in questions if rng.random() > 0.1]
    return path, questions, preds


def tidy_from(preds, model="gpt"):
    n = len(preds)
    return pa.table({"benchmark": ["temporalbench"] * n, "sample_id": [p["idx"] for p in preds],
                     "model": [model] * n, "strategy": ["uniform"] * n, "mode": ["none"] * n, "k": [16] * n,
                     "window": pa.nulls(n, pa.int64()), "correct": pa.array([0] * n, pa.int8()),
                     "response": [p["response"] for p in preds]})


@pytest.mark.parametrize("kind,spelling", [("short", "dataset"), ("long", "source_dataset"),
                                           ("short", "source_dataset"), ("long", "dataset")])
@pytest.mark.parametrize("seed", [0, 1])
def test_first_char_equals_temporalbench_scorer(tmp_path, kind, spelling, seed):
    from tempcore.benchmarks import load_benchmark

    path, questions, preds = temporalbench_files(tmp_path, kind, spelling, seed)
    samples = load_benchmark("temporalbench", path).samples
    res = mba_table(tidy_from(preds), samples=samples, benchmark="temporalbench", parse="first-char",
                    incomplete="present")
    want = official_scorer(questions, preds, short=kind == "short")
    r = one(res)
    assert (r["correct_binary"], r["n_binary"]) == want["ba"]
    assert (r["correct_groups"], r["n_groups"]) == want["mba"]
    got_ds = {x["dataset"]: (x["correct_binary"], x["n_binary"], x["correct_groups"], x["n_groups"])
              for x in res.by_dataset}
    assert got_ds == want["ds"]
    got_cat = {x["category"]: (x["correct_binary"], x["n_binary"], x["correct_groups"], x["n_groups"])
               for x in res.by_category}
    if kind == "short":
        assert got_cat == want["cat"]
    # with the default policy, videos missing a question are incomplete rather than scored
    strict = one(mba_table(tidy_from(preds), samples=samples, benchmark="temporalbench", parse="first-char"))
    answered = {p["idx"] for p in preds}
    full = {q["video_name"] for q in questions} - {q["video_name"] for q in questions if q["idx"] not in answered}
    assert strict["n_groups"] == len(full)
    assert strict["incomplete_groups"] == len({q["video_name"] for q in questions}) - len(full)
    assert strict["chance_mba"] == pytest.approx(
        np.mean([0.5 ** sum(q["video_name"] == v for q in questions) for v in full]))


def test_cli_json_keys_and_both_parsers(tmp_path, capsys):
    path, questions, preds = temporalbench_files(tmp_path, "short", "dataset", 3)
    pred_path = tmp_path / "preds.parquet"
    write_table(tidy_from(preds), pred_path)
    assert main(["mba", "--predictions", str(pred_path), "--benchmark", "temporalbench", "--annotations", str(path),
                 "--parse", "first-char", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"overall", "by_dataset", "by_category"}
    assert JSON_KEYS <= set(out["overall"][0])
    assert JSON_KEYS | {"dataset"} <= set(out["by_dataset"][0])
    assert JSON_KEYS | {"category"} <= set(out["by_category"][0])
    assert 0.0 <= out["overall"][0]["mba"] <= out["overall"][0]["ba"] <= 1.0
    assert main(["mba", "--predictions", str(pred_path), "--benchmark", "temporalbench", "--annotations", str(path),
                 "--parse", "both", "--json"]) == 0
    both = json.loads(capsys.readouterr().out)
    assert sorted(r["parse"] for r in both["overall"]) == ["extract", "first-char"]
    assert [r["correct_binary"] for r in both["overall"] if r["parse"] == "extract"] == [0]
    assert main(["mba", "--predictions", str(pred_path), "--benchmark", "temporalbench", "--annotations",
                 str(path)]) == 0
    assert "mba" in capsys.readouterr().out
    # without annotations TemporalBench ids carry no group: a named error, exit 1
    assert main(["mba", "--predictions", str(pred_path)]) == 1
    assert "cannot tell the question groups" in capsys.readouterr().err


# --- report section ----------------------------------------------------------------------------


def test_report_section_shows_ba_mba_and_gap():
    from tempcore.report import build_report
    from tempcore.report.markdown import render_markdown

    rows = [(f"g{g}#b{i}", m, s, int(not (g == 0 and i == 1 and m == "a"))) for g in range(4) for i in range(3)
            for m in ("a", "b") for s in ("maxprob", "minprob", "noframe")]
    t = table(rows, n_options=[2] * len(rows))
    t = t.set_column(t.column_names.index("mode"), "mode",
                     pa.array(["none" if r[2] == "noframe" else "qa" for r in rows]))
    report = build_report(t, n_boot=10, thumbnails=False)
    section = next(s for s in report.sections if s.key == "mba")
    res = section.items[0].table
    a = [r for r in res.rows if r["model"] == "a" and r["strategy"] == "maxprob"][0]
    assert (a["mba"], a["ba"]) == (0.75, 11 / 12) and a["gap"] == pytest.approx(11 / 12 - 0.75)
    assert "Multiple binary accuracy" in render_markdown(report)
    # a table without question groups gets no such section
    rows = [(f"q{i}", "a", s, 1) for i in range(3) for s in ("maxprob", "minprob", "noframe")]
    plain = table(rows)
    plain = plain.set_column(plain.column_names.index("mode"), "mode",
                             pa.array(["none" if r[2] == "noframe" else "qa" for r in rows]))
    assert all(s.key != "mba" for s in build_report(plain, n_boot=10, thumbnails=False).sections)


def test_sorted_and_shuffled_large_tables_agree():
    # over 65536 rows a sorted sample_id column is coded from runs (no hashing); both paths must agree
    rng = np.random.default_rng(5)
    n_groups = 30000
    sizes = rng.integers(1, 5, n_groups)
    ids = [f"g{g}#b{i}" for g in range(n_groups) for i in range(sizes[g])]
    ids.sort()
    n = len(ids)
    correct = (rng.random(n) < 0.8).astype(np.int8)
    t = table([(s, "m", "u", int(c)) for s, c in zip(ids, correct)], dataset=[s[1] for s in ids])
    assert n > 65536
    order = rng.permutation(n)
    shuffled = t.take(pa.array(order))
    a, b = mba_table(t), mba_table(shuffled)
    assert a.overall == b.overall and a.by_dataset == b.by_dataset
    groups = defaultdict(list)
    for s, c in zip(ids, correct):
        groups[s.split("#b")[0]].append(c)
    assert a.overall[0]["correct_groups"] == sum(all(v) for v in groups.values())
    assert a.overall[0]["n_groups"] == n_groups


@pytest.mark.parametrize("seed", range(4))
def test_binary_id_split_equals_the_regex(seed):
    """The buffer-level split of ``{group}#b{i}`` ids equals the regex it replaces, on ids made of
    the suffix's own characters (and a multi-byte one), sliced arrays and large strings."""
    import pyarrow.compute as pc

    from tempcore.diagnostics.mba import BINARY_SUFFIX, _split_binary_ids

    rng = np.random.default_rng(seed)
    alphabet = list("ab#0123456789é")
    for _ in range(400):
        ids = pa.array(["".join(rng.choice(alphabet, rng.integers(0, 8))) for _ in range(rng.integers(2, 9))])
        if rng.random() < 0.3:
            ids = ids.slice(1)
        if rng.random() < 0.3:
            ids = ids.cast(pa.large_string())
        has, stripped = _split_binary_ids(ids)
        assert has.tolist() == pc.match_substring_regex(ids, BINARY_SUFFIX).to_pylist()
        assert stripped.to_pylist() == pc.replace_substring_regex(ids, pattern=BINARY_SUFFIX, replacement="").to_pylist()
    assert _split_binary_ids(pa.array(["a#b1", None])) is None  # nulls: the regex path


def test_large_tables_with_chunked_dictionary_columns_agree_with_plain_strings():
    """Over 65536 rows a column holding one value is coded without per-row work; chunks whose
    one-entry dictionaries differ (two models, as Parquet row groups give) are not one value."""
    rng = np.random.default_rng(7)
    ids = [f"g{g}#b{i}" for g in range(12000) for i in range(3)]
    n = len(ids)
    rows = [(s, m, "u", int(rng.random() < 0.7)) for m in ("m1", "m2") for s in ids]
    plain = table(rows)
    assert plain.num_rows > 65536

    def chunked_dictionary(values):
        half = len(values) // 2
        return pa.chunked_array([pa.array(values[:half]).dictionary_encode(), pa.array(values[half:]).dictionary_encode()])

    coded = plain
    for name in ("benchmark", "model", "strategy", "mode"):
        coded = coded.set_column(coded.column_names.index(name), name, chunked_dictionary(plain.column(name).to_pylist()))
    assert len(coded.column("model").chunk(0).dictionary) == 1  # one model per chunk: m1, then m2
    a, b = mba_table(plain), mba_table(coded)
    assert a.overall == b.overall and [r["model"] for r in a.overall] == ["m1", "m2"]
    for r in a.overall:
        assert r["n_binary"] == n and r["n_groups"] == 12000


def _large_table(rng, n_models, n_options, drop):
    """Over 65536 sorted rows: groups of 1-8 binary questions (plus some ids without the suffix),
    a dataset per group, a category per question, dictionary-coded chunked columns."""
    ids, dataset, category = [], [], []
    for g in range(int(rng.integers(17000, 19000))):
        size = int(rng.integers(1, 9))
        d = f"d{g % 7}"
        for i in range(size):
            ids.append(f"g{g}#b{i}" if g % 50 else f"solo{g}x{i}")
            dataset.append(d)
            category.append(f"c{rng.integers(0, 3)}")
    order = sorted(range(len(ids)), key=lambda i: ids[i])
    ids, dataset, category = [ids[i] for i in order], [dataset[i] for i in order], [category[i] for i in order]
    rows = []
    for m in range(n_models):
        for sid, d, c in zip(ids, dataset, category):
            if rng.random() < drop:
                continue
            n_opt = n_options if n_options else int(rng.integers(2, 5))
            target = int(rng.integers(0, 2))
            ok = int(rng.random() < 0.8)
            rows.append({"sample_id": sid, "model": f"m{m}", "strategy": "uniform", "correct": ok,
                         "group": sid.split("#b")[0], "n_options": n_opt, "dataset": d, "category": c,
                         "target": target, "response": "AB"[target if ok else 1 - target] + " because"})

    def chunked(values, dictionary=True):
        cut = len(values) // 3
        parts = [values[:cut], values[cut:2 * cut], values[2 * cut:]]
        return pa.chunked_array([pa.array(p).dictionary_encode() if dictionary else pa.array(p) for p in parts])

    t = table([(r["sample_id"], r["model"], r["strategy"], r["correct"]) for r in rows],
              n_options=[r["n_options"] for r in rows], target=[r["target"] for r in rows])
    for name in ("dataset", "category", "response"):
        t = t.append_column(name, chunked([r[name] for r in rows]))
    for name in ("model", "sample_id"):
        t = t.set_column(t.column_names.index(name), name, chunked(t.column(name).to_pylist(), name == "model"))
    return t, rows


@pytest.mark.parametrize("n_models,n_options,drop", [(1, 2, 0.0), (1, 0, 0.05), (2, 2, 0.05), (2, 0, 0.0)])
def test_fast_paths_give_exactly_the_general_figures(monkeypatch, n_models, n_options, drop):
    """Over 65536 rows the run-based fast paths run (sorted ids coded from runs, sums over contiguous
    runs, a view whose label is constant within the groups sharing the overall units, one option
    count for every row, first characters decided per dictionary entry). With the threshold raised
    the general bincount paths run instead: every figure must be identical, floats included, and
    the counts those of the naive implementation."""
    import tempcore.diagnostics.mba as mba

    rng = np.random.default_rng(n_models * 10 + n_options)
    t, rows = _large_table(rng, n_models, n_options, drop)
    assert t.num_rows > mba._RUNS_MIN_ROWS
    fast = {(p, i): mba_table(t, parse=p, incomplete=i).to_json()
            for p in ("extract", "first-char") for i in ("exclude", "present")}
    monkeypatch.setattr(mba, "_RUNS_MIN_ROWS", 10**12)
    for (p, i), got in fast.items():
        assert got == mba_table(t, parse=p, incomplete=i).to_json(), (p, i)
    assert fast[("extract", "exclude")]["overall"] == [
        {k: v for k, v in r.items() if k != "parse"} for r in fast[("first-char", "exclude")]["overall"]]
    for view, field in (("overall", None), ("by_dataset", "dataset"), ("by_category", "category")):
        want = naive([dict(r, label=None if field is None else r[field]) for r in rows])
        got = {(r["model"], r["strategy"], None if field is None else r[field]): r
               for r in fast[("extract", "exclude")][view]}
        assert set(got) == set(want), view
        for k, (nb, cb, ng, cg, ch, inc) in want.items():
            r = got[k]
            assert (r["n_binary"], r["correct_binary"], r["n_groups"], r["correct_groups"],
                    r["incomplete_groups"]) == (nb, cb, ng, cg, inc), (view, k)
            assert r["chance_mba"] == pytest.approx(ch, rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_binary_group_keys_partition_ids_as_the_regex_groups(seed):
    """The keys the groups are coded from (the group followed by ``#b``, no slicing) are equal for
    two ids exactly when their regex-stripped groups are, on ids made of the suffix's own
    characters (and a multi-byte one), with and without the suffix, plain and chunked."""
    import pyarrow.compute as pc

    from tempcore.diagnostics.mba import BINARY_SUFFIX, _binary_group_keys

    rng = np.random.default_rng(seed)
    alphabet = list("ab#0123456789é")
    for _ in range(300):
        ids = pa.array(["".join(rng.choice(alphabet, rng.integers(0, 7))) for _ in range(rng.integers(2, 12))])
        if rng.random() < 0.3:
            ids = pa.chunked_array([ids.slice(0, 1), ids.slice(1)])
        has, keys = _binary_group_keys(ids)
        assert has.tolist() == pc.match_substring_regex(ids, BINARY_SUFFIX).to_pylist()
        groups = pc.replace_substring_regex(ids, pattern=BINARY_SUFFIX, replacement="").to_pylist()
        keys = keys.to_pylist()
        for i in range(len(groups)):
            for j in range(len(groups)):
                assert (groups[i] == groups[j]) == (keys[i] == keys[j]), (ids, i, j)
    has, keys = _binary_group_keys(pa.array(["a#b1", "a#b2", "a#b#b3", "é#b10"]))  # every id has the suffix
    assert has.all() and keys.to_pylist() == ["a#b", "a#b", "a#b#b", "é#b"]
