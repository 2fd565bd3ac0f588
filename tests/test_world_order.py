"""The world's planted order family (issue 14, "The world"): "which of these shapes appeared first?".

The truth is read from the rendered frames (which quadrant shows which colour), never from the
family's own helper: in order the frames give the planted answer, reversed the other object, and a
shuffle whatever the shuffled frames show first; frame-agnostic questions of the same videos keep
their answers. Then the order recovery (planted vs recovered order-sensitive) on hand-built tables.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from tempcore.world.families import (
    DEFAULT_WEIGHTS,
    ORDER_ROLES,
    ORDER_SENSITIVE_FAMILIES,
    FamilyError,
    seen_first,
)
from tempcore.world.generator import plan_world
from tempcore.world.recovery import RecoveryError, order_blind_models, order_recovery
from tempcore.world.scene import COLOURS, object_centre, render_frames


@pytest.fixture(scope="module")
def plan():
    return plan_world(240, seed=11)


def _order_questions(plan):
    scenes = plan.scene_map()
    out = [(wq, scenes[wq.video_id]) for wq in plan.questions if wq.question.family in ORDER_SENSITIVE_FAMILIES]
    assert len(out) >= 10
    return out


def _uniform_times(scene, k=8):
    return [int((j + 0.5) * scene.n_frames / k) / scene.fps for j in range(k)]


def _shows(frames, times, obj, size):
    """Per frame: does the pixel at the object's centre have its colour (read from the image)?"""
    want = np.array(COLOURS[obj.colour])
    out = []
    for frame, t in zip(frames, times):
        x, y = object_centre(obj, float(t), size)
        out.append(bool(np.abs(frame[int(y), int(x)].astype(int) - want).max() <= 30))
    return out


def _first_in_pixels(q, scene, frames, times):
    """The option of the object the frames, in the order given, show first (None: not both shown)."""
    first = {}
    for role in ORDER_ROLES:
        obj = scene.object(role)
        at = [i for i, s in enumerate(_shows(frames, times, obj, scene.size)) if s]
        if not at:
            return None
        first[role] = (at[0], f"the {obj.colour} {obj.shape}")
    (_, a), (_, b) = sorted(first.values())
    return q.options.index(f"{a}, then {b}")


def test_default_mix_plants_the_order_family_without_shrinking_the_world():
    w = plan_world(400, seed=20261129)
    counts = w.counts()
    assert sum(counts["families"].values()) == 400
    assert counts["families"]["appear_order"] == 25 and counts["families"]["brief_colour"] == 75
    assert set(counts["planted"].values()) == {100}
    assert DEFAULT_WEIGHTS["appear_order"] > 0
    # the order scenes use the brief quadrant: never a brief question in the same video
    by_video: dict[str, set[str]] = {}
    for wq in w.questions:
        by_video.setdefault(wq.video_id, set()).add(wq.question.family)
    assert all(not ({"appear_order", "brief_colour"} <= f) for f in by_video.values())



@pytest.mark.parametrize("n, seed", [(400, 20261129), (240, 11), (101, 3), (57, 5), (800, 42)])
def test_which_shape_comes_first_is_balanced_and_is_the_planted_answer(n, seed):
    # an order-blind prior on shapes ("the diamond comes first") must gain nothing (TVBench's warning):
    # the first object is the triangle in half of the order questions, the diamond in the other half
    w = plan_world(n, seed=seed)
    firsts = {"triangle": 0, "diamond": 0}
    scenes = w.scene_map()
    for wq in (wq for wq in w.questions if wq.question.family in ORDER_SENSITIVE_FAMILIES):
        scene = scenes[wq.video_id]
        q = wq.question
        a, b = (scene.object(r) for r in ORDER_ROLES)
        first, second = sorted((a, b), key=lambda o: o.appear.start)  # the truth, read from the scene
        assert first.appear.start < second.appear.start
        firsts[first.shape] += 1
        assert q.options[q.answer] == f"the {first.colour} {first.shape}, then the {second.colour} {second.shape}"
    total = firsts["triangle"] + firsts["diamond"]
    assert total == w.counts()["families"]["appear_order"] and total >= 3
    assert abs(firsts["triangle"] - firsts["diamond"]) <= 1, firsts


def test_the_first_object_changes_nothing_else_of_the_scene():
    from tempcore.world.generator import WorldConfig, WorldError, make_scene

    cfg = WorldConfig(10, 0, (48, 48), 10.0, (10.0, 40.0), (1.0, 3.0), 8, dict(DEFAULT_WEIGHTS), 18)
    for v in range(6):
        scenes = {r: make_scene("v", np.random.default_rng([9, v]), cfg, order=True, order_first=r) for r in ORDER_ROLES}
        drawn = make_scene("v", np.random.default_rng([9, v]), cfg, order=True)
        a_first, b_first = scenes["order_a"], scenes["order_b"]
        assert a_first.object("order_a").appear.start < a_first.object("order_b").appear.start
        assert b_first.object("order_b").appear.start < b_first.object("order_a").appear.start
        # the same scene but for the two windows, swapped (and the drawn one is one of the two)
        assert a_first.object("order_a").appear == b_first.object("order_b").appear
        assert a_first.object("order_b").appear == b_first.object("order_a").appear
        strip = [[(o.shape, o.colour, o.slot, o.role, o.drift) for o in s.objects] for s in (a_first, b_first)]
        assert strip[0] == strip[1] and a_first.duration == b_first.duration
        assert a_first.noise_seed == b_first.noise_seed and a_first.background == b_first.background
        assert drawn in (a_first, b_first)
    with pytest.raises(WorldError, match="order_first"):
        make_scene("v", np.random.default_rng(0), cfg, order=True, order_first="brief")
    with pytest.raises(WorldError, match="order_first"):
        make_scene("v", np.random.default_rng(0), cfg, order_first="order_a")


def test_order_scenes_and_options_are_as_planted(plan):
    for wq, scene in _order_questions(plan):
        q = wq.question
        a, b = (scene.object(r) for r in ORDER_ROLES)
        assert {a.shape, b.shape} == {"triangle", "diamond"} and scene.object("brief") is None
        first, second = sorted((a, b), key=lambda o: o.appear.start)
        assert first.appear.end + 1.0 - 1e-9 <= second.appear.start  # >= 1 s apart, one after the other
        assert first.appear.start >= 1.0 - 1e-9 and second.appear.end <= scene.duration - 1.0 + 1e-9
        for o in (a, b):
            assert 0.25 * scene.duration - 0.1 - 1e-9 <= o.appear.length <= 0.3 * scene.duration + 0.1 + 1e-9
            assert math.isclose(o.appear.start * scene.fps, round(o.appear.start * scene.fps))
        one, two = f"the {first.colour} {first.shape}", f"the {second.colour} {second.shape}"
        assert q.options[q.answer] == f"{one}, then {two}" and f"{two}, then {one}" in q.options
        # the other two options are both orders of a triangle and a diamond that appear nowhere:
        # every option names a triangle and a diamond, two in each order, so the text says nothing
        pairs = [o.split(", then ") for o in q.options]
        assert all(sorted(p.split()[-1] for p in pair) == ["diamond", "triangle"] for pair in pairs)
        assert sorted(pair[0].split()[-1] for pair in pairs) == ["diamond", "diamond", "triangle", "triangle"]
        absent = [pair for pair in pairs if one not in pair]
        assert len(absent) == 2 and absent[0] == absent[1][::-1]
        assert not {p.split()[1] for p in absent[0]} & scene.colours()
        assert q.window is None and q.planted == "temporally_grounded"


def test_order_answer_follows_the_frames_and_breaks_when_reordered(plan):
    rng = np.random.default_rng(0)
    changed_by_shuffle = 0
    for wq, scene in _order_questions(plan):
        q = wq.question
        times = _uniform_times(scene)
        frames = render_frames(scene, np.array(times))
        # uniform K = 8 frames hold both windows (>= 2 frames each): in order they give the planted answer
        for role in ORDER_ROLES:
            assert sum(_shows(frames, times, scene.object(role), scene.size)) >= 2
        assert _first_in_pixels(q, scene, frames, times) == q.answer == seen_first(q, scene, times)
        # reversed: the frames now show the *other* object first (the reversed order's option)
        rev = _first_in_pixels(q, scene, frames[::-1], times[::-1])
        assert rev is not None and rev != q.answer and rev == seen_first(q, scene, times[::-1])
        # shuffled: whatever the shuffled frames show first (often the other object)
        perm = rng.permutation(len(times))
        shuffled = _first_in_pixels(q, scene, frames[perm], [times[i] for i in perm])
        assert shuffled == seen_first(q, scene, [times[i] for i in perm])
        changed_by_shuffle += shuffled != q.answer
    assert changed_by_shuffle >= 3


def test_frame_agnostic_questions_of_the_same_videos_keep_their_answers(plan):
    scenes = plan.scene_map()
    order_videos = {wq.video_id for wq, _ in _order_questions(plan)}
    checked = 0
    for wq in plan.questions:
        q = wq.question
        if wq.video_id not in order_videos or q.family != "anchor_colour":
            continue
        scene = scenes[wq.video_id]
        times = _uniform_times(scene)
        frames = render_frames(scene, np.array(times))
        square = scene.object("anchor")
        for order in (slice(None), slice(None, None, -1), np.random.default_rng(1).permutation(8)):
            shown = frames[order]
            ts = np.array(times)[order]
            # every frame in any order shows the square in the planted colour
            assert all(_shows(shown, ts, square, scene.size))
            assert q.options[q.answer] == square.colour
        checked += 1
    assert checked >= 3


def test_seen_first_refuses_other_families_and_needs_both_objects(plan):
    (wq, scene), *_ = _order_questions(plan)
    first = scene.object(ORDER_ROLES[0])
    outside = [t / scene.fps for t in range(scene.n_frames) if not first.visible_at(t / scene.fps)]
    assert seen_first(wq.question, scene, outside) is None
    other = next(q.question for q in plan.questions if q.question.family == "anchor_colour")
    with pytest.raises(FamilyError, match="not an order family"):
        seen_first(other, scene, [0.0])


def test_training_draws_reordered_frames_relabel_only_order_questions(plan):
    from tempcore.world.answerers.sampling import ExampleSampler

    sampler = ExampleSampler(plan, reorder_p=1.0)
    scenes = plan.scene_map()
    rng = np.random.default_rng(3)
    relabelled = 0
    for i, wq in enumerate(sampler.questions):
        d = sampler.draw(i, "uniform", 8, rng)
        q = wq.question
        if q.family in ORDER_SENSITIVE_FAMILIES:
            frames = render_frames(scenes[wq.video_id], np.array(d.timestamps))
            assert d.answer == _first_in_pixels(q, scenes[wq.video_id], frames, list(d.timestamps))
            relabelled += d.answer != q.answer
        else:
            assert d.answer == q.answer
    assert relabelled > 0
    plain = ExampleSampler(plan)  # reorder_p 0: frames in time order
    d = plain.draw(0, "random", 8, np.random.default_rng(0))
    assert list(d.indices) == sorted(d.indices)


# --- the order recovery on hand-built tables ------------------------------------------------


def _table(rows):
    cols = ["benchmark", "sample_id", "model", "strategy", "correct", "p_correct", "answer", "window", "rotation"]
    data = {c: [] for c in cols}
    for sid, model, strategy, correct, p in rows:
        for c, v in zip(cols, ["w", sid, model, strategy, correct, p, 0 if correct else 1, None, 0]):
            data[c].append(v)
    return pa.table({
        "benchmark": pa.array(data["benchmark"], pa.string()), "sample_id": pa.array(data["sample_id"], pa.string()),
        "model": pa.array(data["model"], pa.string()), "strategy": pa.array(data["strategy"], pa.string()),
        "correct": pa.array(data["correct"], pa.bool_()), "p_correct": pa.array(data["p_correct"], pa.float64()),
        "answer": pa.array(data["answer"], pa.int64()), "window": pa.array(data["window"], pa.string()),
        "rotation": pa.array(data["rotation"], pa.int64()),
        "mode": pa.array([None] * len(rows), pa.string()), "k": pa.array([8] * len(rows), pa.int64()),
    })


def test_order_recovery_worked_by_hand():
    # two models; sample a: planted order-sensitive, both lose it when reordered (OS 1 hard, 0.7 soft);
    # b: planted, only m1 loses it reversed, softly by 0.2 (hard OS 0.5, soft OS 0.1 <= tau);
    # c: not planted, unchanged (OS 0); d: not planted, m2 loses it shuffled (hard OS 0.5: a false positive)
    rows = []
    for m in ("m1", "m2"):
        rows += [("a", m, "uniform", True, 0.9), ("a", m, "shuffled", False, 0.2), ("a", m, "reversed", False, 0.2)]
        rows += [("c", m, "uniform", True, 0.8), ("c", m, "shuffled", True, 0.8), ("c", m, "reversed", True, 0.8)]
    rows += [("b", "m1", "uniform", True, 0.6), ("b", "m1", "shuffled", True, 0.6), ("b", "m1", "reversed", False, 0.4)]
    rows += [("b", "m2", "uniform", True, 0.6), ("b", "m2", "shuffled", True, 0.6), ("b", "m2", "reversed", True, 0.6)]
    rows += [("d", "m1", "uniform", True, 0.7), ("d", "m1", "shuffled", True, 0.7), ("d", "m1", "reversed", True, 0.7)]
    rows += [("d", "m2", "uniform", True, 0.55), ("d", "m2", "shuffled", False, 0.45), ("d", "m2", "reversed", True, 0.55)]
    table = _table(rows)
    planted = {"a": True, "b": True, "c": False, "d": False}
    hard = order_recovery(table, planted, scoring="hard")
    assert hard["os"]["a"] == {"shuffled": 1.0, "reversed": 1.0}
    assert hard["os"]["b"]["reversed"] == 0.5 and hard["os"]["d"]["shuffled"] == 0.5
    # recovered {a, b, d}: precision 2/3, recall 2/2
    assert hard["precision"] == pytest.approx(2 / 3) and hard["recall"] == 1.0 and hard["recovered"] == 3
    soft = order_recovery(table, planted, scoring="soft")
    assert soft["os"]["a"]["shuffled"] == pytest.approx(0.7) and soft["os"]["b"]["reversed"] == pytest.approx(0.1)
    assert soft["os"]["d"]["shuffled"] == pytest.approx(0.05)
    # recovered {a}: precision 1, recall 1/2
    assert soft["precision"] == 1.0 and soft["recall"] == 0.5 and soft["recovered"] == 1
    # the panel: m2 alone (b unchanged for it, d lost): recovered {a, d} hard
    only = order_recovery(table, planted, scoring="hard", models=["m2"])
    assert only["models"] == ["m2"] and only["precision"] == 0.5 and only["recall"] == 0.5
    # a sample without an OS is not recovered (lowers recall), a foreign sample is an error
    part = table.filter(pa.compute.not_equal(table.column("sample_id"), "a"))
    assert order_recovery(part, planted, scoring="hard")["recall"] == 0.5
    with pytest.raises(RecoveryError, match="never planted"):
        order_recovery(table, {"a": True}, scoring="hard")
    with pytest.raises(RecoveryError, match="soft or hard"):
        order_recovery(table, planted, scoring="circular")


def test_order_blind_models_are_the_pooling_members():
    assert order_blind_models(["zoo-text", "zoo-mean", "zoo-max", "zoo-attn", "zoo-order", "zoo-idefics3", "x"]) == [
        "zoo-text", "zoo-mean", "zoo-max", "zoo-attn"]
