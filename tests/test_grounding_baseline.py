"""The retrieval baseline as a run condition (strategy ``retrieval``) and the world's grounding questions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tempcore.answers import extract_interval
from tempcore.benchmarks import load_benchmark
from tempcore.grounding.retrieval import retrieval_windows
from tempcore.records import Condition, Sample
from tempcore.run.baseline import (
    RETRIEVAL_MODEL,
    is_grounding,
    retrieval_identity,
    retrieval_prediction,
    track_window,
)
from tempcore.run.identity import fingerprint
from tempcore.run.store import RunStore
from tempcore.selection import STRATEGIES, SelectionError, needs_scores
from tempcore.world import plan_world
from tempcore.world.grounding import (
    GROUNDING_BENCHMARK,
    GROUNDING_FILE,
    grounding_rows,
    grounding_samples,
)
from tempcore.world.scene import visible_objects

# A 30 s track at 1 fps: 0.4 everywhere, 0.5 on [10, 13): the level of Eq. 1's sigmoid(cos) scores.
T = np.arange(30, dtype=float)
S = np.full(30, 0.4)
S[10:13] = 0.5


def test_the_papers_rule_on_sigmoid_scores_grows_to_the_whole_video_and_floor_min_does_not():
    # zero floor: keep s >= 0.7 * 0.5 = 0.35, which every frame passes
    assert track_window(T, S, smooth_frames=1, min_len=0.0) == (0.0, 30.0)
    # min floor: keep s >= 0.4 + 0.7 * (0.5 - 0.4) = 0.47: exactly the planted frames
    assert track_window(T, S, smooth_frames=1, min_len=0.0, floor="min") == (10.0, 13.0)
    # the clip to min_len = 4 s grows it about its centre
    assert track_window(T, S, smooth_frames=1, floor="min") == (9.5, 13.5)
    w = retrieval_windows(np.stack([S, S]), smooth_frames=1, min_len=0.0, floor="min")
    assert w["start"].tolist() == [10.0, 10.0] and w["end"].tolist() == [13.0, 13.0]
    with pytest.raises(Exception, match="floor"):
        retrieval_windows(S, floor="median")
    # frames given out of order are put in time order first
    perm = np.random.default_rng(0).permutation(30)
    assert track_window(T[perm], S[perm], smooth_frames=1, min_len=0.0, floor="min") == (10.0, 13.0)
    # the frame rate is the track's unless given: at 2 fps the same frames span half the time
    assert track_window(T / 2, S, smooth_frames=1, min_len=0.0, floor="min") == (5.0, 6.5)


def test_retrieval_strategy_shows_frames_of_the_window():
    assert "retrieval" in STRATEGIES and needs_scores("retrieval")
    fs = STRATEGIES["retrieval"](T, S, 2, smooth_frames=1, min_len=0.0, floor="min")
    assert fs.indices == (10, 12) and fs.requested == 2  # uniform centres of the 3 window frames
    fs = STRATEGIES["retrieval"](T, S, 8, smooth_frames=1, min_len=0.0, floor="min")
    assert fs.indices == tuple(range(8, 16)) and fs.shortfall == 0  # the 8 frames nearest the centre 11.5
    with pytest.raises(SelectionError, match="no scores"):
        STRATEGIES["retrieval"](T, None, 4)


def _sample(windows=((10.0, 13.0),), sid: str = "q1") -> Sample:
    return Sample("bench", sid, "v.mp4", "When does the red triangle appear?", answer_windows=windows)


def test_a_grounding_sample_gets_the_window_as_a_stored_prediction(tmp_path):
    cond = Condition("retrieval", mode="q", k=8, encoder="enc", fps=1.0)
    params = {"smooth_frames": 1, "min_len": 0.0, "floor": "min"}
    assert is_grounding(_sample()) and not is_grounding(Sample("b", "s", "v", "q?", ("a", "b"), 0))
    p = retrieval_prediction(_sample(), cond, T, S, params=params, sample_hash="sh", encoder_fingerprint="ef",
                             n_frames=30)
    assert (p.model, p.condition, p.pred_start, p.pred_end, p.iou, p.correct) == (
        RETRIEVAL_MODEL, cond.key, 10.0, 13.0, 1.0, 1)
    assert p.answer is None and p.parse_error is None and p.frames is not None and p.frames.requested == 30
    got = extract_interval(p.response)  # the response reads back as the stored window
    assert (got.start, got.end) == (10.0, 13.0)
    assert p.model_fingerprint == fingerprint(retrieval_identity(params)) != fingerprint(retrieval_identity())
    # several GT windows: the best one; a miss is stored as an answer that is not correct
    two = retrieval_prediction(_sample(((0.0, 2.0), (11.0, 13.0)), "q2"), cond, T, S, params=params)
    assert two.iou == pytest.approx(2 / 3) and two.correct == 1
    miss = retrieval_prediction(_sample(((20.0, 26.0),), "q3"), cond, T, S, params=params)
    assert miss.iou == 0.0 and miss.correct == 0 and miss.pred_start == 10.0
    # the paper's rule on these scores: the whole video, IoU 3/30
    paper = retrieval_prediction(_sample(), cond, T, S)
    assert (paper.pred_start, paper.pred_end) == (0.0, 30.0) and paper.iou == pytest.approx(0.1)
    with RunStore(tmp_path / "s.sqlite") as store:
        store.put([p, two, miss], store.start_run({}, environment=False))
        assert {q.key: q for q in store.predictions()} == {q.key: q for q in (p, two, miss)}


# --- the world's grounding questions --------------------------------------------------------------


@pytest.fixture(scope="module")
def world():
    return plan_world(96, seed=3)


def test_every_planted_window_becomes_one_question_whose_object_shows_only_inside(world):
    rows = grounding_rows(world.scenes)
    scenes = world.scene_map()
    kinds = {r["kind"] for r in rows}
    assert kinds == {"appear", "recolour"}
    from tempcore.world.families import ORDER_ROLES

    # every planted window but those of the two objects of an order question (not grounding questions)
    n_events = sum(1 for s in scenes.values() for o in s.objects
                   if o.role not in ORDER_ROLES and (o.appear is not None or o.recolour is not None))
    assert any(o.role in ORDER_ROLES for s in scenes.values() for o in s.objects)
    assert len(rows) == n_events and len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        scene = scenes[r["video"].split("/")[-1].removesuffix(".mp4")]
        ((start, end),) = r["answer_windows"]
        colour, shape = r["object"].split()[1:]
        assert colour in r["question"] and shape in r["question"]
        # the phrase names what the frames show exactly inside [start, end), at every frame
        for i in range(scene.n_frames):
            t = i / scene.fps
            shows = (colour, shape) in visible_objects(scene, t)
            assert shows == (start - 1e-9 <= t < end - 1e-9), (r["id"], t)
        assert 1.0 <= end - start <= 3.0 and start >= 1.0 and end <= scene.duration - 1.0


def test_the_generator_writes_grounding_rows_the_loader_reads(tmp_path):
    from tempcore.world import generate_world

    w = generate_world(tmp_path / "w", 8, seed=5, duration=(14.0, 16.0))
    assert w.grounding == w.root / GROUNDING_FILE and w.grounding.is_file()
    lines = w.grounding.read_text().splitlines()
    assert [json.loads(x) for x in lines] == grounding_rows(w.scenes)
    result = load_benchmark("grounding", w.grounding, video_root=w.root,
                            benchmark_name=GROUNDING_BENCHMARK)
    assert not result.invalid
    want = grounding_samples(w.scenes)
    assert [(s.sample_id, s.question, s.answer_windows, s.video, s.benchmark) for s in result.samples] == [
        (s.sample_id, s.question, s.answer_windows, s.video, s.benchmark) for s in want]
    assert all((w.root / s.video).is_file() and is_grounding(s) for s in result.samples)
    again = generate_world(tmp_path / "again", 8, seed=5, duration=(14.0, 16.0))
    assert again.grounding.read_bytes() == w.grounding.read_bytes()


def test_variants_are_presets_that_explicit_params_override():
    from tempcore.selection.retrieval import resolve_params

    fine = Condition("retrieval", mode="q", k=8, encoder="enc", fps=1.0, variant="fine")
    assert "variant=fine" in fine.key
    p = retrieval_prediction(_sample(), fine, T, S)
    assert (p.pred_start, p.pred_end) == (10.0, 13.0)  # == smooth_frames=1, min_len=0, floor=min
    assert p.model_fingerprint == fingerprint(retrieval_identity({"smooth_frames": 1, "min_len": 0.0,
                                                                 "floor": "min"}))
    assert resolve_params("fine", {"min_len": 4.0})["min_len"] == 4.0
    assert STRATEGIES["retrieval"](T, S, 3, variant="fine").indices == (10, 11, 12)
    with pytest.raises(SelectionError, match="unknown variant"):
        resolve_params("coarse")
    with pytest.raises(SelectionError, match="no parameter"):
        STRATEGIES["retrieval"](T, S, 3, gamma=1.0)


def test_a_run_configuration_takes_retrieval_conditions(tmp_path):
    from tempcore.run.config import RunConfig

    cfg = RunConfig.from_dict({
        "out": str(tmp_path), "benchmarks": [{"name": "grounding", "annotations": str(tmp_path)}],
        "models": [{"backend": "zoo", "model": "zoo-mean"}],
        "conditions": [{"strategy": "retrieval", "mode": "q", "variant": "fine"}],
    })
    cond = cfg.conditions[0].condition(cfg)
    assert (cond.strategy, cond.mode, cond.variant, cond.encoder) == ("retrieval", "q", "fine", cfg.encoder)
    assert cfg.needs_encoder


# --- issue 32: the baseline runs on the paper's score, the raw cosine -----------------------------


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=float)))


# A 75 min track at 1 fps: cosine 0.1 everywhere, 0.3 on the 9 s event [2000, 2009).
T75 = np.arange(4500, dtype=float)
COS75 = np.full(4500, 0.1)
COS75[2000:2009] = 0.3


def test_the_papers_rule_on_the_cosine_finds_a_9_s_event_that_sigmoid_clips_to_60_s():
    # cosine: threshold 0.7 * 0.3 = 0.21; after the 5-frame smoothing the frame next to the event
    # averages (2 * 0.3 + 3 * 0.1) / 5 = 0.18 < 0.21 and the frame inside (3 * 0.3 + 2 * 0.1) / 5 = 0.22
    assert track_window(T75, COS75) == (2000.0, 2009.0)
    # sigmoid(cos): threshold 0.7 * sigmoid(0.3) = 0.402 < sigmoid(0.1) = 0.525, so every frame is kept
    # and the 4500 s window is clipped to 60 s centred on the peak frame 2002 ([2002, 2003)): IoU 9/60
    assert track_window(T75, _sigmoid(COS75)) == (1972.5, 2032.5)
    from tempcore.run.baseline import baseline_predictions
    from tempcore.run.config import RunConfig
    from tempcore.run.planning import Timeline
    from tempcore.selection.retrieval import VARIANTS

    cfg = RunConfig.from_dict({
        "out": "unused", "benchmarks": [{"name": "grounding", "annotations": "unused"}],
        "models": [{"backend": "zoo", "model": "zoo-mean"}], "fps": 1, "k": 4,
        "conditions": [{"strategy": "retrieval", "mode": "q", "variant": v} for v in VARIANTS]
                      + [{"strategy": "retrieval", "mode": "q", "params": {"score": "sigmoid"}}],
    })
    tl = Timeline(T75, {"q": _sigmoid(COS75)}, cos={"q": COS75})
    got = baseline_predictions(cfg, [_sample(((2000.0, 2009.0),))], {"q1": tl}, {"q1": "h"})
    by = {p.condition.split("variant=")[-1] if "variant=" in p.condition else "params": p for p in got}
    assert set(by) == {"paper", "fine", "paper_sigmoid", "params"}
    assert (by["paper"].pred_start, by["paper"].pred_end, by["paper"].iou) == (2000.0, 2009.0, 1.0)
    assert by["fine"].iou == 1.0  # floor min, no smoothing, on the cosine: the event's frames
    for name in ("paper_sigmoid", "params"):  # the paper's rule on sigmoid(cos), as `paper` ran before
        assert (by[name].pred_start, by[name].pred_end) == (1972.5, 2032.5)
        assert by[name].iou == pytest.approx(0.15)
    assert by["paper_sigmoid"].model_fingerprint == by["params"].model_fingerprint
    # the multiple-choice side (the `retrieval` strategy in the plan) takes the same track
    from tempcore.run.planning import expand_condition

    entry = cfg.conditions[0]
    ((_, fs),) = expand_condition(entry, entry.condition(cfg), Sample("b", "mc", "v", "q?", ("a", "b"), 0),
                                  T75, tl.scores, tl)
    assert fs.timestamps[0] >= 2000.0 and fs.timestamps[-1] < 2009.0
    entry = cfg.conditions[2]  # paper_sigmoid
    ((_, fs),) = expand_condition(entry, entry.condition(cfg), Sample("b", "mc", "v", "q?", ("a", "b"), 0),
                                  T75, tl.scores, tl)
    assert fs.timestamps[0] >= 1972.0 and fs.timestamps[-1] < 2033.0 and fs.timestamps[-1] - fs.timestamps[0] > 9


def test_the_variants_and_the_score_they_run_on():
    from tempcore.grounding.retrieval import DEFAULTS, SCORES
    from tempcore.selection.retrieval import VARIANTS, resolve_params

    assert SCORES == ("cosine", "sigmoid") and DEFAULTS["score"] == "cosine"
    assert list(VARIANTS) == ["paper", "fine", "paper_sigmoid"]
    assert {v: resolve_params(v)["score"] for v in (None, *VARIANTS)} == {
        None: "cosine", "paper": "cosine", "fine": "cosine", "paper_sigmoid": "sigmoid"}
    assert resolve_params("paper_sigmoid") == {**resolve_params("paper"), "score": "sigmoid"}
    with pytest.raises(SelectionError, match="score must be one of"):
        resolve_params(None, {"score": "logit"})
    assert "variant=paper_sigmoid" in Condition("retrieval", mode="q", variant="paper_sigmoid").key


def test_the_stored_identity_names_the_score_so_rows_on_sigmoid_are_not_served():
    from tempcore.grounding.retrieval import DEFAULTS

    ident = retrieval_identity()
    assert ident["score"] == "cosine" and retrieval_identity({"score": "sigmoid"})["score"] == "sigmoid"
    # the identity the baseline's rows were stored under before the score was a parameter
    before = {"model": RETRIEVAL_MODEL, "method": "retrieval",
              **{k: (DEFAULTS[k] if k == "floor" else float(DEFAULTS[k])) for k in sorted(DEFAULTS) if k != "score"}}
    assert {k: v for k, v in ident.items() if k != "score"} == before
    fps = {fingerprint(before), fingerprint(ident), fingerprint(retrieval_identity({"score": "sigmoid"}))}
    assert len(fps) == 3


def test_a_timeline_gives_the_cosine_or_says_it_has_none():
    from tempcore.errors import RunError
    from tempcore.run.planning import Timeline

    tl = Timeline(T, {"q": _sigmoid(S)}, cos={"q": S})
    assert tl.track("q", "cosine") is tl.cos["q"] and tl.track("q") is tl.scores["q"] and tl.track("qa") is None
    with pytest.raises(RunError, match="raw cosine"):
        Timeline(T, {"q": S}).track("q", "cosine")
    with pytest.raises(RunError, match="unknown frame score"):
        tl.track("q", "logit")
