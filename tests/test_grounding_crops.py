"""Retrieve-then-ground and the window-length sweep (issue 15): the shown spans, the shown timeline
and its mapping back, hand-worked; and both as `tempcore run` conditions on the synthetic world,
with a scripted model that answers with the first and last frame time its prompt states."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from tempcore.diagnostics.grounding import GroundingError, iou
from tempcore.grounding.analysis import candidate_recall_rows, window_sweep
from tempcore.grounding.answer import grounding_prompt, score_grounding_response
from tempcore.grounding.crops import (
    candidate_spans,
    gt_crop_span,
    top_k_of,
    width_of,
)
from tempcore.grounding.retrieval import merge_windows, to_absolute, to_shown
from tempcore.models import ModelResponse
from tempcore.records import Sample
from tempcore.run.baseline import CANDIDATES_METHOD, RETRIEVAL_MODEL
from tempcore.run.config import RunConfig
from tempcore.run.runner import run
from tempcore.run.store import RunStore
from tempcore.selection import SelectionError
from tempcore.selection.spans import frames_in_spans
from tempcore.world import generate_world
from tempcore.world.grounding import GROUNDING_BENCHMARK, grounding_samples

QUIET = {"progress": False, "log": lambda _m: None}
TIMES = re.compile(r"Frame timestamps \(seconds\): (.*)")
DURATION = re.compile(r"The video is ([0-9.]+) seconds long\.")


# --- hand-worked ------------------------------------------------------------------------------


def test_shown_timeline_and_back():
    spans = [(0.0, 120.0), (400.0, 520.0)]
    # inside a span: cum + (t - start); in the gap: the junction; outside: clipped
    np.testing.assert_allclose(to_shown([50.0, 400.0, 450.0, 200.0, 600.0, -3.0], spans),
                               [50.0, 120.0, 170.0, 120.0, 240.0, 0.0])
    assert to_absolute(120.0, spans) == 400.0  # a start at the junction: the later span
    assert to_absolute(120.0, spans, junction="earlier") == 120.0  # an end: the earlier one
    x = np.array([0.0, 10.0, 119.5, 130.0, 239.0])
    np.testing.assert_allclose(to_shown(to_absolute(x, spans), spans), x)
    with pytest.raises(GroundingError, match="disjoint"):
        to_shown([1.0], [(0.0, 10.0), (5.0, 20.0)])
    with pytest.raises(GroundingError, match="junction"):
        to_absolute([1.0], spans, junction="middle")


def test_gt_centred_crop_shift_clip_and_full():
    video = (0.0, 1000.0)
    assert gt_crop_span([(100.0, 110.0)], 30.0, video) == (90.0, 120.0)
    assert gt_crop_span([(5.0, 10.0)], 30.0, video) == (0.0, 30.0)  # shifted: width kept
    assert gt_crop_span([(5.0, 10.0)], 30.0, video, fit="clip") == (0.0, 22.5)  # clipped: shorter
    assert gt_crop_span([(990.0, 1000.0)], 30.0, video) == (970.0, 1000.0)
    assert gt_crop_span([(100.0, 110.0)], None, video) == video  # full
    assert gt_crop_span([(100.0, 110.0)], 5000.0, video) == video  # wider than the video: all of it
    assert gt_crop_span([(100.0, 110.0), (200.0, 210.0)], 30.0, video) == (140.0, 170.0)  # hull centre 155
    assert gt_crop_span([(100.0, 160.0)], 30.0, video) == (115.0, 145.0)  # W < GT: the GT is cut
    with pytest.raises(GroundingError, match="no ground-truth window"):
        gt_crop_span([], 30.0, video)
    with pytest.raises(GroundingError, match="fit"):
        gt_crop_span([(1.0, 2.0)], 30.0, video, fit="pad")


def test_variants_name_k_and_w():
    assert top_k_of(None) == 3 and top_k_of("top1") == 1 and top_k_of("top10") == 10
    assert width_of("30s") == 30.0 and width_of("600s") == 600.0 and width_of("full") is None
    for bad in ("top0", "3", "k3"):
        with pytest.raises(GroundingError, match="top<K>"):
            top_k_of(bad)
    for bad in (None, "30", "0s", "5m"):
        with pytest.raises(GroundingError, match="seconds"):
            width_of(bad)


def test_frames_in_spans_and_candidate_spans_on_planted_peaks():
    t = np.arange(20.0)
    # inside: positions 2, 3, 4, 10, 11; uniform centres floor((i + 1/2) * 5 / 3) = 0, 2, 4
    np.testing.assert_array_equal(frames_in_spans(t, ((2.0, 5.0), (10.0, 12.0)), 3), [2, 4, 11])
    np.testing.assert_array_equal(frames_in_spans(t, ((2.0, 5.0),), 8), [2, 3, 4])  # fewer than K: all
    s = np.full(200, 0.1)
    s[30], s[100], s[104] = 0.9, 0.8, 0.85  # 104 suppressed by 100? no: 104 is higher, 100 falls in its NMS
    spans = candidate_spans(np.arange(200.0), s, k=2, nms_s=60.0, pad_s=10.0, smooth_frames=1)
    assert spans == ((20.0, 40.0), (94.0, 114.0))
    # windows that overlap merge into one span; a peak near the start is clipped to the video
    s2 = np.full(200, 0.1)
    s2[5], s2[80], s2[95] = 0.9, 0.8, 0.7
    assert candidate_spans(np.arange(200.0), s2, k=3, nms_s=10.0, pad_s=10.0, smooth_frames=1) == \
        ((0.0, 15.0), (70.0, 105.0))
    assert merge_windows([70.0, 85.0], [90.0, 105.0]) == [(70.0, 105.0)]


def test_prompt_and_answer_on_the_shown_timeline():
    sample = Sample(benchmark="b", sample_id="q1", video="v.mp4", question="When does it happen?",
                    answer_windows=((410.0, 430.0),), metadata={"duration": 3600.0})
    spans = ((0.0, 120.0), (400.0, 520.0))
    prompt = grounding_prompt(sample, "grounding", [10.0, 100.0, 405.0, 500.0], spans=spans)
    assert "The video is 240 seconds long." in prompt and "3600" not in prompt
    assert TIMES.search(prompt).group(1) == "10, 100, 125, 220"
    # the model answers on the shown timeline: 125-150 s there is 405-430 s in the video
    got = score_grounding_response("From 125 to 150 seconds.", sample.answer_windows, duration=240.0, spans=spans)
    assert (got.pred_start, got.pred_end) == (405.0, 430.0)
    assert got.iou == pytest.approx(20.0 / 25.0)
    # an answer ending at the junction stays in the first span; one starting there goes to the second
    got = score_grounding_response("[100, 120]", sample.answer_windows, duration=240.0, spans=spans)
    assert (got.pred_start, got.pred_end) == (100.0, 120.0)
    got = score_grounding_response("[120, 130]", sample.answer_windows, duration=240.0, spans=spans)
    assert (got.pred_start, got.pred_end) == (400.0, 410.0)


def test_the_strategies_refuse_what_they_cannot_use():
    from tempcore.selection.registry import call_strategy

    t = np.arange(30.0)
    fs = call_strategy("gtcrop", t, None, 4, variant="10s", windows=[(14.0, 16.0)], video=(0.0, 30.0))
    assert fs.timestamps == (11.0, 13.0, 16.0, 18.0)  # [10, 20): centres of 4 segments of 10 frames
    with pytest.raises(SelectionError, match="no ground-truth window"):
        call_strategy("gtcrop", t, None, 4, variant="10s", sample_id="x")
    with pytest.raises(SelectionError, match="no parameter"):
        call_strategy("retrieve_ground", t, np.ones(30), 4, variant="top2", beta=0.5)
    with pytest.raises(SelectionError, match="top<K>"):
        call_strategy("retrieve_ground", t, np.ones(30), 4, variant="3")


# --- the world ----------------------------------------------------------------------------------


class FirstToLastFrame:
    """Answers with the first and last frame time its prompt states; records every prompt."""

    supports_option_scores = False
    revision = None

    def __init__(self, spec: object) -> None:
        self.name = spec.display_name  # type: ignore[attr-defined]
        self.prompts: list[str] = []

    def answer(self, requests, *, method="generate"):  # noqa: ANN001
        out = []
        for r in requests:
            self.prompts.append(r.prompt)
            ts = [float(x) for x in TIMES.search(r.prompt).group(1).split(", ")]
            out.append(ModelResponse(f"From {ts[0]} to {ts[-1]} seconds."))
        return out

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("cropworld")
    return generate_world(root / "world", 10, seed=11, duration=(14.0, 16.0)), root


CONDITIONS = [
    {"strategy": "retrieve_ground", "mode": "q", "variant": "top2",
     "params": {"nms_s": 3.0, "pad_s": 1.5, "smooth_frames": 1}},
    {"strategy": "gtcrop", "variant": "4s"},
    {"strategy": "gtcrop", "variant": "full"},
    {"strategy": "uniform"},
]


def _cfg(w, root: Path, conditions) -> RunConfig:
    return RunConfig.from_dict({
        "out": str(root / "run"), "encoder": "tempcore-world", "encoder_options": {"device": "cpu"},
        "cache": str(root / "cache"), "fps": w.config.fps, "k": 4,
        "benchmarks": [{"name": "grounding", "annotations": str(w.grounding), "video_root": str(w.root),
                        "options": {"benchmark_name": GROUNDING_BENCHMARK}}],
        "models": [{"backend": "hf", "model": "unused-by-the-factory", "name": "reader"}],
        "conditions": conditions,
    })


def _shown(times, spans):
    """An independent reading of the shown timeline: a frame in span k sits at the spans before it
    plus its offset into span k."""
    out = []
    for t in times:
        before = 0.0
        for a, b in spans:
            if a - 1e-9 <= t < b:
                out.append(before + t - a)
                break
            before += b - a
        else:
            raise AssertionError(f"frame {t} outside the spans {spans}")
    return out


@pytest.fixture(scope="module")
def answered(world):
    w, root = world
    models: list[FirstToLastFrame] = []

    def factory(spec):  # noqa: ANN001, ANN202
        models.append(FirstToLastFrame(spec))
        return models[-1]

    summary = run(_cfg(w, root, CONDITIONS), model_factory=factory, **QUIET)
    with RunStore(Path(summary.store)) as store:
        preds = {(p.model, p.condition, p.sample_id): p for p in store.predictions()}
    (model,) = models
    return summary, preds, model.prompts


def _cfg_like(cfg: RunConfig, conditions) -> RunConfig:
    import dataclasses

    from tempcore.run.config import ConditionEntry

    return dataclasses.replace(cfg, conditions=tuple(ConditionEntry(**c) for c in conditions))


def test_retrieve_then_ground_shows_the_candidates_union_and_maps_back(world, answered):
    w, _ = world
    summary, preds, prompts = answered
    samples = grounding_samples(w.scenes)
    cond = next(c for (_m, c, _s) in preds if c.startswith("retrieve_ground"))
    assert "variant=top2" in cond
    checked = 0
    for s in samples:
        cand = preds[(RETRIEVAL_MODEL, cond, s.sample_id)]
        assert cand.answer_method == CANDIDATES_METHOD and cand.encoder_fingerprint
        ranked = json.loads(cand.response)
        assert 1 <= len(ranked) <= 2 and all(len(r) == 3 for r in ranked)
        assert ranked == sorted(ranked, key=lambda r: -r[2])  # rank order: peak score descending
        assert (cand.pred_start, cand.pred_end) == (ranked[0][0], ranked[0][1])
        spans = merge_windows([r[0] for r in ranked], [r[1] for r in ranked])
        p = preds[("reader", cond, s.sample_id)]
        assert p.frames is not None and len(p.frames.timestamps) >= 1
        shown = _shown(p.frames.timestamps, spans)  # every frame lies inside the union
        total = sum(b - a for a, b in spans)
        line = f"Frame timestamps (seconds): {', '.join(f'{x:g}' for x in shown)}"
        mine = [q for q in prompts if s.question in q and f"The video is {total:g} seconds long." in q]
        assert mine, f"{s.sample_id}: no prompt states the union's length {total:g} s"
        got = [float(x) for x in TIMES.search(mine[0]).group(1).split(", ")]
        assert got == pytest.approx(shown, abs=0.01), line
        # first..last shown time, mapped back: exactly the first and last frame in video time
        assert p.pred_start == pytest.approx(p.frames.timestamps[0], abs=0.01)
        assert p.pred_end == pytest.approx(p.frames.timestamps[-1], abs=0.01)
        (g0, g1), = s.answer_windows
        assert p.iou == pytest.approx(float(iou(p.pred_start, p.pred_end, g0, g1)), abs=1e-9)
        checked += 1
    assert checked == len(samples)
    # candidate recall: independent count of queries whose planted window a candidate overlaps
    table = pq.read_table(summary.predictions_file)
    (row,) = candidate_recall_rows(table, samples)
    assert row["condition"] == cond and row["top_k"] == 2 and row["n"] == len(samples)
    for k in (1, 2):
        hits = 0
        for s in samples:
            (g0, g1), = s.answer_windows
            ranked = json.loads(preds[(RETRIEVAL_MODEL, cond, s.sample_id)].response)[:k]
            hits += any(min(b, g1) - max(a, g0) > 0 for a, b, _ in ranked)
        assert row["overlap"][str(k)] == pytest.approx(hits / len(samples))
    assert row["overlap"]["2"] >= 0.8  # the shipped encoder finds the planted windows
    assert row["contained"]["1"] <= row["overlap"]["1"]


def test_window_sweep_crops_around_the_truth_and_maps_back(world, answered):
    w, _ = world
    summary, preds, prompts = answered
    samples = grounding_samples(w.scenes)
    crop4 = next(c for (_m, c, _s) in preds if c.startswith("gtcrop") and "variant=4s" in c)
    full = next(c for (_m, c, _s) in preds if c.startswith("gtcrop") and "variant=full" in c)
    for s in samples:
        (g0, g1), = s.answer_windows
        dur = s.metadata["duration"]
        a = min(max((g0 + g1) / 2 - 2.0, 0.0), dur - 4.0)
        p = preds[("reader", crop4, s.sample_id)]
        assert all(a - 1e-6 <= t < a + 4.0 for t in p.frames.timestamps)
        assert p.pred_start == pytest.approx(p.frames.timestamps[0], abs=0.01)
        assert p.pred_end == pytest.approx(p.frames.timestamps[-1], abs=0.01)
        shown = [t - a for t in p.frames.timestamps]
        mine = [q for q in prompts if s.question in q and "The video is 4 seconds long." in q
                and [float(x) for x in TIMES.search(q).group(1).split(", ")] == pytest.approx(shown, abs=0.01)]
        assert mine, f"{s.sample_id}: no 4 s prompt with the crop's own times"
        pf = preds[("reader", full, s.sample_id)]
        pu = preds[("reader", next(c for (_m, c, _s) in preds if c.startswith("uniform")), s.sample_id)]
        assert pf.frames.timestamps == pu.frames.timestamps  # full = the whole video, as uniform shows it
    table = pq.read_table(summary.predictions_file)
    rows = window_sweep(table, samples)
    assert [(r["model"], r["window"]) for r in rows] == [("reader", "4s"), ("reader", "full")]
    assert rows[0]["width_s"] == 4.0 and rows[1]["width_s"] is None
    for r, cond in zip(rows, (crop4, full)):
        ious = [preds[("reader", cond, s.sample_id)].iou for s in samples]
        assert r["n"] == len(samples) and r["miou"] == pytest.approx(float(np.mean(ious)))
        assert r["recall"]["0.5"] == pytest.approx(float(np.mean([v >= 0.5 for v in ious])))
    assert rows[0]["miou"] > rows[1]["miou"]  # a 4 s crop around a 1-3 s event: the first..last answer fits


def test_crop_conditions_are_for_grounding_samples_only(world, tmp_path):
    """A multiple-choice benchmark under the crop conditions plans no crop item (nothing to centre
    on; the hybrid grounds), while its other conditions are planned as before."""
    w, _ = world
    cfg = RunConfig.from_dict({
        "out": str(tmp_path / "run"), "encoder": "tempcore-world", "encoder_options": {"device": "cpu"},
        "cache": str(tmp_path / "cache"), "fps": w.config.fps, "k": 4,
        "benchmarks": [{"name": "generic", "annotations": str(w.annotations), "video_root": str(w.root),
                        "options": {"benchmark_name": "mc"}}],
        "models": [{"backend": "hf", "model": "unused", "name": "reader"}],
        "conditions": [{"strategy": "gtcrop", "variant": "4s"}, {"strategy": "uniform"}],
    })
    plan = run(cfg, dry_run=True, **QUIET)
    only_uniform = _cfg_like(cfg, [{"strategy": "uniform"}])
    assert run(only_uniform, dry_run=True, **QUIET).models[0].planned == plan.models[0].planned > 0
    # the planner itself (pure): a multiple-choice sample gets its uniform item only
    from tempcore.benchmarks import load_benchmark
    from tempcore.run.planning import Timeline, plan_items

    mc = load_benchmark("generic", w.annotations, benchmark_name="mc").samples[:3]
    timelines = {s.sample_id: Timeline(np.arange(0.0, 10.0, 0.5), {}) for s in mc}
    items = plan_items(cfg, mc, timelines, {s.sample_id: "h" for s in mc})
    assert [it.condition.strategy for it in items] == ["uniform"] * 3 and all(it.spans is None for it in items)
    g = grounding_samples(w.scenes)[:1]
    items = plan_items(cfg, g, {g[0].sample_id: Timeline(np.arange(0.0, 15.0, 0.5), {})}, {g[0].sample_id: "h"})
    crop = next(it for it in items if it.condition.strategy == "gtcrop")
    (a, b), = crop.spans
    assert b - a == pytest.approx(4.0) and all(a <= t < b for t in crop.frames.timestamps)


def test_cli_prints_the_sweep_and_candidate_recall(world, answered, capsys):
    from tempcore.cli import main

    w, _ = world
    summary, _preds, _prompts = answered
    samples = grounding_samples(w.scenes)
    table = pq.read_table(summary.predictions_file)
    args = ["grounding", "--predictions", summary.predictions_file, "--benchmark", "grounding", "--annotations",
            str(w.grounding), "-o", f"benchmark_name={GROUNDING_BENCHMARK}", "--sweep", "--candidates"]
    assert main([*args, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["sweep"] == json.loads(json.dumps(window_sweep(table, samples)))
    assert got["candidates"] == json.loads(json.dumps(candidate_recall_rows(table, samples)))
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "reader  W=4s: n=" in text and "reader  W=full: n=" in text and "overlap @1=" in text


def test_report_grounding_section(world, answered, tmp_path):
    from tempcore.report.build import build_report, write_report

    w, _ = world
    summary, preds, _prompts = answered
    samples = grounding_samples(w.scenes)
    table = pq.read_table(summary.predictions_file)
    # given under the loader's name (as `tempcore report --benchmark grounding` does): matched by Sample.benchmark
    report = build_report(table, samples_by_benchmark={"grounding": samples}, thumbnails=False, n_boot=50)
    (section,) = [s for s in report.sections if s.key == "grounding"]
    items = {it.key: it for it in section.items}
    for key in ("grounding_accuracy", "grounding_search_localize", "grounding_candidate_recall",
                "grounding_window_sweep", "query_profiles"):
        assert items[key].table is not None and items[key].unavailable is None, (key, items[key].unavailable)
    assert "grounding_window_sweep_plot" in items and "<svg" in items["grounding_window_sweep_plot"].svg
    acc = {(r["model"], r["condition"]): r for r in items["grounding_accuracy"].table.rows}
    for (model, cond), r in acc.items():
        mine = [p for (m, c, _s), p in preds.items() if m == model and (c == cond or c.split("|")[0] == cond)]
        assert r["n"] == len(samples) == len(mine)
        assert r["miou"] == pytest.approx(float(np.mean([p.iou or 0.0 for p in mine])))
    split = items["grounding_search_localize"].table.rows
    # 15 s videos: no prediction is 300 s from its truth, so every failure is a localize failure
    assert all(r["search_centre"] == 0 and r["localize_centre"] == r["failed"] - r["parse_fail"] for r in split)
    (prof,) = items["query_profiles"].table.rows
    assert prof["benchmark"] == GROUNDING_BENCHMARK and prof["n_questions"] == len(samples)
    # a table of grounding predictions alone has no FSS diagnosis: the report is still written
    assert report.diagnosis is None and report.sections[0].key == "tempcore"
    md = write_report(report, tmp_path / "report")[0].read_text()
    heads = [line for line in md.splitlines() if line.startswith("#")]
    assert heads.index("## Temporal grounding") < heads.index("### Accuracy vs GT-centred window width")
    assert "plots/" in md and "grounding_window_sweep_plot" in md
    # without annotations: the accuracy from the stored iou, the rest says what it needs
    bare = build_report(table, thumbnails=False, n_boot=50)
    items = {it.key: it for s in bare.sections if s.key == "grounding" for it in s.items}
    assert items["grounding_accuracy"].table is not None
    assert [r["miou"] for r in items["grounding_accuracy"].table.rows] == pytest.approx(
        [r["miou"] for r in acc.values()])
    assert "annotations" in items["grounding_search_localize"].unavailable
    assert "annotations" in items["grounding_candidate_recall"].unavailable


def test_changed_candidate_parameters_stop_a_rerun(world, answered):
    """``nms_s`` / ``pad_s`` are not part of the condition key; the stored candidates' fingerprint
    hashes them, so a rerun with other values stops before any model is called."""
    from tempcore.run.runner import RunError

    w, root = world
    calls: list[FirstToLastFrame] = []

    def factory(spec):  # noqa: ANN001, ANN202
        calls.append(FirstToLastFrame(spec))
        return calls[-1]

    again = run(_cfg(w, root, CONDITIONS), model_factory=factory, **QUIET)  # the same: all reused
    assert all(m.done == 0 for m in again.models)
    changed = [{**CONDITIONS[0], "params": {**CONDITIONS[0]["params"], "pad_s": 2.5}}, *CONDITIONS[1:]]
    with pytest.raises(RunError, match="retrieval baseline") as err:
        run(_cfg(w, root, changed), model_factory=factory, **QUIET)
    # the model's answers under retrieve_ground were shown the old candidates' frames: named too
    assert re.search(r"model reader: \d+ stored predictions? of condition retrieve_ground/q \(top2\) "
                     r"w(ere|as) shown other frames", str(err.value))
    assert not calls


def test_crop_strategies_take_distinct_chronological_frames_inside_their_spans():
    from tempcore.selection.registry import STRATEGIES

    rng = np.random.default_rng(5)
    for trial in range(40):
        n = int(rng.integers(1, 400))
        t = np.sort(rng.choice(np.arange(2000) * 0.5, size=n, replace=False))
        s = rng.random(n)
        k = int(rng.integers(1, 40))
        perm = rng.permutation(n)  # the caller's order need not be chronological
        fs = STRATEGIES["retrieve_ground"](t[perm], s[perm], k, variant=f"top{1 + trial % 4}",
                                           nms_s=20.0, pad_s=10.0, smooth_frames=1)
        spans = candidate_spans(t, s, k=1 + trial % 4, nms_s=20.0, pad_s=10.0, smooth_frames=1)
        inside = [i for i in range(n) if any(a - 1e-9 <= t[i] < b - 1e-9 for a, b in spans)]
        shown = [int(perm[i]) for i in fs.indices]
        assert len(set(shown)) == len(shown) == min(k, len(inside)) and set(shown) <= set(inside)
        assert list(fs.timestamps) == sorted(fs.timestamps) == [t[i] for i in shown]
        assert fs.requested == k
        g0 = float(t[int(rng.integers(0, n))])
        video = (float(t[0]), float(t[-1]) + 1.0)
        fs = STRATEGIES["gtcrop"](t[perm], None, k, variant="30s", windows=[(g0, g0 + 2.0)], video=video)
        a, b = gt_crop_span([(g0, g0 + 2.0)], 30.0, video)
        assert b - a == pytest.approx(min(30.0, video[1] - video[0]))
        inside = [i for i in range(n) if a - 1e-9 <= t[i] < b - 1e-9]
        shown = [int(perm[i]) for i in fs.indices]
        assert len(set(shown)) == len(shown) == min(k, len(inside)) and set(shown) <= set(inside)
        assert list(fs.timestamps) == sorted(fs.timestamps)


def test_a_grounding_prompt_that_changed_is_not_served(world, answered, tmp_path, monkeypatch):
    """A grounding prompt holds what neither a fingerprint nor the frames hold (the duration and the
    frame times on the shown spans), so the identity check compares each stored row's prompt hash
    with the prompt the plan renders: here every prompt renders otherwise (as after a change of the
    shown timeline), and no stored answer of the model is served; the retrieval baseline's rows
    (no prompt asked of a model) are not affected."""
    import dataclasses
    import shutil

    import tempcore.run.predictions as executor
    from tempcore.run.runner import RunError

    w, root = world
    summary, preds, _prompts = answered
    shutil.copytree(Path(summary.out), tmp_path / "run")
    cfg = dataclasses.replace(_cfg(w, root, CONDITIONS), out=str(tmp_path / "run"))
    calls: list[FirstToLastFrame] = []

    def factory(spec):  # noqa: ANN001, ANN202
        calls.append(FirstToLastFrame(spec))
        return calls[-1]

    assert all(m.done == 0 and m.replaced == 0 for m in run(cfg, model_factory=factory, **QUIET).models)
    real = executor.request_prompt
    monkeypatch.setattr(executor, "request_prompt", lambda item, template: real(item, template) + " ")
    with pytest.raises(RunError) as err:
        run(cfg, model_factory=factory, **QUIET)
    msg = str(err.value)
    reader = [k for k in preds if k[0] == "reader"]
    by_strategy: dict[str, int] = {}
    for _m, cond, _s in reader:
        strategy = cond.split("|")[0]
        by_strategy[strategy] = by_strategy.get(strategy, 0) + 1
    assert len(by_strategy) == 3  # retrieve_ground, gtcrop, uniform
    assert f"exactly these {len(reader)} stored predictions" in msg and "shown other frames" not in msg
    assert "asked another prompt (the option order, the frame times or the span shown changed?)" in msg
    assert "retrieval baseline" not in msg
    assert not any(c.prompts for c in calls)
    again = run(cfg, model_factory=factory, recompute=True, **QUIET)
    assert {m.model: m.replaced for m in again.models}["reader"] == len(reader)
