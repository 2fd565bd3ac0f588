"""Visual answer options (paper 002): builders on hand-made annotations, CMD stimuli decoded back,
the statistics against hand-worked values, the score CLI, the world end to end."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from tempcore.benchmarks import load_benchmark
from tempcore.video.synthetic import read_pattern, write_video
from tempcore.visual.cmd import build_cmd
from tempcore.visual.common import VisualBuildError, span_times
from tempcore.visual.scoring import (
    bootstrap_accuracy,
    criterion,
    d_prime,
    error_shares,
    modal_perplexity,
    signal_detection,
)
from tempcore.visual.tfr import Event, build_tfr, kept_events, read_annotations
from tempcore.visual.vfp import build_vfp


def _rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "annotations.jsonl").read_text().splitlines()]


EVENTS = [
    {"label": "open door", "start": 1.0, "end": 3.0},
    {"label": "sit down", "start": 5.0, "end": 8.0},
    {"label": "drink", "start": 10.0, "end": 12.0},
    {"label": "hold phone", "start": 0.0, "end": 20.0},  # 20 s: too long, dropped
    {"label": "blink", "start": 13.0, "end": 13.5},  # 0.5 s: too short, dropped
]


@pytest.fixture()
def tfr_input(tmp_path: Path) -> Path:
    root = tmp_path / "videos"
    rows = [{"video": "v1.mp4", "events": EVENTS, "duration": 20.0},
            {"video": "v2.mp4", "events": [{"label": "wave", "start": 2, "end": 4},
                                           {"label": "jump", "start": 6, "end": 9},
                                           {"label": "laugh", "start": 11, "end": 12}], "duration": 15.0}]
    root.mkdir()
    (root / "ann.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_kept_actions_bounds_are_inclusive() -> None:
    evs = [Event("a", 0, 1.0), Event("b", 2, 7.0), Event("c", 0, 0.99), Event("d", 1, 6.01)]
    assert [e.label for e in kept_events(evs)] == ["a", "b"]
    assert [e.label for e in kept_events(evs, 1.0, 4.99)] == ["a"]


def test_tfr_options_spans_and_frames(tfr_input: Path, tmp_path: Path) -> None:
    build = build_tfr(read_annotations(tfr_input / "ann.jsonl"), tmp_path / "out", video_root=tfr_input,
                      seed=3, frames_per_option=4)
    rows = _rows(tmp_path / "out")
    visual = {r["id"]: r for r in rows if r["option_modality"] == "visual"}
    # v1: kept open door [1,3], sit down [5,8], drink [10,12]; anchors with a neighbour on the correct side
    assert set(visual) == {"v1_0000_after", "v1_0001_after", "v1_0001_before", "v1_0002_before",
                           "v2_0000_after", "v2_0001_after", "v2_0001_before", "v2_0002_before"}
    q = visual["v1_0001_after"]  # anchor sit down: correct drink, distractor open door
    assert q["question"] == "What happens after the following action: sit down?"
    by_type = {o["type"]: o for o in q["visual_options"]}
    assert by_type["correct"]["span"] == [10.0, 12.0]
    assert by_type["correct"]["times"] == [10.25, 10.75, 11.25, 11.75]
    assert by_type["reversed"]["times"] == [11.75, 11.25, 10.75, 10.25]
    assert by_type["neighbor"]["span"] == [1.0, 3.0] and by_type["neighbor"]["times"] == [1.25, 1.75, 2.25, 2.75]
    scr = by_type["scrambled"]["times"]
    assert len(scr) == 4 and scr != sorted(scr)
    assert all(i * 5.0 <= t < (i + 1) * 5.0 for i, t in enumerate(sorted(scr)))  # one per quarter of 20 s
    assert q["options"] == ["A", "B", "C", "D"] and q["option_types"][q["answer"]] == "correct"
    for r in visual.values():
        seqs = [tuple(o["times"]) for o in r["visual_options"]]
        assert len(set(seqs)) == 4
    before = visual["v1_0001_before"]  # anchor sit down, before: correct open door, distractor drink
    assert {o["type"]: o["span"] for o in before["visual_options"]}["neighbor"] == [10.0, 12.0]
    # no-neighbour case: open door "after" has no previous action -> distractor falls back to the anchor
    fb = visual["v1_0000_after"]
    assert fb["distractor_fallback"] == "anchor"
    assert {o["type"]: o for o in fb["visual_options"]}["neighbor"]["span"] == [1.0, 3.0]
    assert build["fallback_anchor"] == 4 and build["by_type"] == {"after": 4, "before": 4}
    # text control: same positions, labels; reversed / scrambled texts come from the other video
    text = {r["id"]: r for r in rows if r["option_modality"] == "text"}
    t = text["v1_0001_after-text"]
    assert t["pair"] == "v1_0001_after" and q["pair"] == "v1_0001_after-text"
    assert t["options"][t["answer"]] == "drink" and t["answer"] == q["answer"]
    types = dict(zip(t["option_types"], t["options"]))
    assert types["neighbor"] == "open door"
    assert {types["reversed"], types["scrambled"]} <= {"wave", "jump", "laugh"}
    # the generic loader reads it; the option provenance lands in the metadata
    loaded = load_benchmark("generic", tmp_path / "out" / "annotations.jsonl")
    s = {x.sample_id: x for x in loaded.samples}["v1_0001_after"]
    assert s.options == ("A", "B", "C", "D") and s.metadata["visual_options"][0]["label"] == "A"


def test_tfr_is_seeded_and_balanced(tfr_input: Path, tmp_path: Path) -> None:
    videos = read_annotations(tfr_input / "ann.jsonl")
    build_tfr(videos, tmp_path / "a", video_root=tfr_input, seed=1)
    build_tfr(videos, tmp_path / "b", video_root=tfr_input, seed=1)
    build_tfr(videos, tmp_path / "c", video_root=tfr_input, seed=2)
    a = (tmp_path / "a" / "annotations.jsonl").read_bytes()
    assert a == (tmp_path / "b" / "annotations.jsonl").read_bytes()
    assert a != (tmp_path / "c" / "annotations.jsonl").read_bytes()
    answers = [r["answer"] for r in _rows(tmp_path / "a") if r["option_modality"] == "visual"]
    assert sorted(answers) == [0, 0, 1, 1, 2, 2, 3, 3]  # 4 after + 4 before, each balanced over A-D


def test_tfr_reads_charades(tmp_path: Path) -> None:
    (tmp_path / "classes.txt").write_text("c001 Opening a door\nc002 Sitting down\nc003 Drinking\n")
    with open(tmp_path / "test.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "scene", "actions", "length"])
        w.writerow(["ABC12", "Kitchen", "c001 1.00 3.00;c002 5.0 8.0;c003 10.0 11.0", "20.5"])
        w.writerow(["XYZ34", "Hall", "", "10"])
    videos = read_annotations(tmp_path / "test.csv", tmp_path / "classes.txt")
    assert videos[0].video == "ABC12.mp4" and videos[0].duration == 20.5
    assert [e.label for e in videos[0].events] == ["Opening a door", "Sitting down", "Drinking"]
    assert videos[1].events == ()
    with pytest.raises(VisualBuildError, match="class file"):
        read_annotations(tmp_path / "test.csv")


def test_span_times_are_segment_centres() -> None:
    assert span_times(0.0, 4.0, 4) == [0.5, 1.5, 2.5, 3.5]
    with pytest.raises(VisualBuildError):
        span_times(2.0, 2.0, 3)


def test_vfp_options(tmp_path: Path) -> None:
    clips = tmp_path / "clips"
    write_video(clips / "c1.mp4", duration=2.0, fps=10, size=(64, 64))  # 20 frames
    write_video(clips / "short.mp4", duration=1.0, fps=10, size=(64, 64))  # 10 < 16 frames
    build = build_vfp(clips, tmp_path / "out", seed=0)
    assert build["questions"] == 1 and build["too_short"] == ["short.mp4"]
    (row,) = _rows(tmp_path / "out")
    opts = {o["type"]: o for o in row["visual_options"]}
    assert opts["correct"]["frames"] == list(range(12, 20))
    assert opts["rev_correct"]["frames"] == list(range(19, 11, -1))
    assert opts["rev_input"]["frames"] == list(range(7, -1, -1))
    scr = opts["scrambled"]["frames"]
    assert scr[0] == 12 and scr[-1] == 19 and sorted(scr) == list(range(12, 20)) and scr != list(range(12, 20))
    assert opts["correct"]["times"] == pytest.approx([i / 10 for i in range(12, 20)])
    assert row["end"] == pytest.approx(0.8) and row["context"]["frames"] == list(range(8))
    assert row["option_types"][row["answer"]] == "correct"
    s = load_benchmark("generic", tmp_path / "out" / "annotations.jsonl").samples[0]
    assert s.end == pytest.approx(0.8)
    with pytest.raises(VisualBuildError, match="future_frames"):
        build_vfp(clips, tmp_path / "x", future_frames=3)


def _decoded_codes(path: Path) -> list[int]:
    from tempcore.video.decode import VideoReader

    batch = VideoReader(path, None).read_all()
    return [read_pattern(f).index for f in batch.frames]


def test_cmd_stimuli_decode_back(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write_video(src / "v.mp4", duration=20.0, fps=10, size=(64, 64))  # frame i at i/10 shows code i
    ann = {"video": "v.mp4", "contact": 6.05, "excise": [6.0, 6.5], "unrelated": [14.0, 19.0],
           "segment": [2.0, 10.0], "contact_label": "the cup touches the table"}
    (src / "cmd.jsonl").write_text(json.dumps(ann) + "\n")
    build_cmd(src / "cmd.jsonl", src, tmp_path / "out", seed=0)
    rows = {r["id"]: r for r in _rows(tmp_path / "out")}
    complete = _decoded_codes(tmp_path / "out" / "videos" / "v_complete.mp4")
    assert complete == list(range(20, 100))
    with_imp = _decoded_codes(tmp_path / "out" / "videos" / "v_incomplete_with_implication.mp4")
    assert with_imp == list(range(20, 60)) + list(range(65, 100))
    without = _decoded_codes(tmp_path / "out" / "videos" / "v_incomplete_without_implication.mp4")
    assert without == list(range(20, 60)) + list(range(140, 175))
    scrambled = _decoded_codes(tmp_path / "out" / "videos" / "v_scrambled.mp4")
    assert sorted(scrambled) == with_imp and scrambled != with_imp
    perm = rows["v_scrambled"]["permutation"]
    pieces = [with_imp[j * 18:(j + 1) * 18] for j in range(3)] + [with_imp[54:]]
    assert scrambled == [c for j in perm for c in pieces[j]]
    contact = rows["v_complete"]["contact"]["frame"]
    assert contact == 60 and contact in complete
    assert all(contact not in codes for codes in (with_imp, without, scrambled))
    for name, codes in [("complete", complete), ("incomplete_with_implication", with_imp),
                        ("incomplete_without_implication", without), ("scrambled", scrambled)]:
        assert abs(len(codes) / 10 - 8.0) <= 1.0
        r = rows[f"v_{name}"]
        assert r["expected"] == ("yes" if name == "complete" else "no")
        assert r["options"] == ["Yes", "No"] and r["answer"] == (0 if name == "complete" else 1)
        assert r["stimulus_duration"] == pytest.approx(len(codes) / 10)
    from PIL import Image

    probe = np.asarray(Image.open(tmp_path / "out" / rows["v_complete"]["probe_image"]).convert("RGB"))
    assert read_pattern(probe).index == 60
    assert rows["v_complete-text"]["question"].endswith("the cup touches the table?")
    samples = {s.sample_id: s for s in load_benchmark("generic", tmp_path / "out" / "annotations.jsonl").samples}
    assert len(samples) == 8
    from tempcore.visual.requests import request_for_sample

    req = request_for_sample(samples["v_incomplete_with_implication"], tmp_path / "out", context_k=5)
    assert len(req.images) == 6 and read_pattern(req.images[-1]).index == 60  # 5 video frames + the probe
    assert [read_pattern(im).index for im in req.images[:5]] == [with_imp[i] for i in (0, 18, 37, 56, 74)]
    assert req.options == ("Yes", "No") and "Did this frame appear in the video?" in req.layout[-3] and req.layout[-2] == 5
    ctrl = request_for_sample(samples["v_incomplete_with_implication-text"], tmp_path / "out", context_k=5)
    assert len(ctrl.images) == 5 and "the cup touches the table" in ctrl.layout[-1]


def test_cmd_refuses_unmatched_durations(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write_video(src / "v.mp4", duration=20.0, fps=10, size=(64, 64))
    (src / "cmd.jsonl").write_text(json.dumps({"video": "v.mp4", "contact": 6.05, "excise": [5.0, 7.5],
                                               "unrelated": [14.0, 19.0], "segment": [2.0, 10.0]}) + "\n")
    with pytest.raises(VisualBuildError, match="more than 1.0 s from complete"):
        build_cmd(src / "cmd.jsonl", src, tmp_path / "out")
    (src / "cmd.jsonl").write_text(json.dumps({"video": "v.mp4", "contact": 4.0, "excise": [5.0, 6.0],
                                               "unrelated": [14.0, 19.0]}) + "\n")
    with pytest.raises(VisualBuildError, match="not inside excise"):
        build_cmd(src / "cmd.jsonl", src, tmp_path / "out")


# --- statistics ----------------------------------------------------------------------------


def test_sdt_matches_the_paper() -> None:
    assert d_prime(0.57, 0.37) == pytest.approx(0.508, abs=1e-3)
    assert criterion(0.57, 0.37) == pytest.approx(0.078, abs=1e-3)
    assert round(d_prime(0.57, 0.37), 2) == 0.51 and round(criterion(0.57, 0.37), 2) == 0.08
    # Gemini row of Table 4: sensitivity 83, specificity 33 -> d' 0.51, c -0.70
    assert round(d_prime(0.83, 0.67), 2) == 0.51 and round(criterion(0.83, 0.67), 2) == -0.70
    s = signal_detection(57, 100, 37, 100)
    assert s["hit_rate"] == 0.57 and s["specificity"] == pytest.approx(0.63) and not s["corrected"]
    assert s["d_prime"] == pytest.approx(d_prime(0.57, 0.37))


def test_sdt_log_linear_correction() -> None:
    s = signal_detection(10, 10, 0, 10)  # raw H = 1, FA = 0: corrected to 10.5/11 and 0.5/11
    assert s["hit_rate"] == 1.0 and s["false_alarm_rate"] == 0.0 and s["corrected"]
    assert s["d_prime"] == pytest.approx(d_prime(10.5 / 11, 0.5 / 11))
    assert s["d_prime"] == pytest.approx(2 * 1.6906, abs=1e-3)
    assert s["criterion"] == pytest.approx(0.0, abs=1e-12)
    assert signal_detection(10, 10, 0, 10, "none")["d_prime"] is None
    always = signal_detection(5, 10, 5, 10, "always")
    assert always["corrected"] and always["d_prime"] == pytest.approx(0.0)


def test_perplexity_and_error_shares() -> None:
    assert modal_perplexity([0.25] * 4) == pytest.approx(4.0)
    assert modal_perplexity([1, 0, 0, 0]) == pytest.approx(1.0)
    assert modal_perplexity([0.5, 0.5, 0, 0]) == pytest.approx(2.0)
    assert error_shares(["neighbor", "neighbor", "reversed", "scrambled"]) == {
        "neighbor": 0.5, "reversed": 0.25, "scrambled": 0.25}


def test_bootstrap_seeded_and_by_video() -> None:
    c = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1]
    a = bootstrap_accuracy(c, n_boot=10_000, seed=5)
    assert a == bootstrap_accuracy(c, n_boot=10_000, seed=5) and a[0] < 0.6 < a[1]
    v = bootstrap_accuracy(c, ["x"] * 5 + ["y"] * 5, n_boot=2000, seed=0)
    # two videos (accuracy 0.6 each): every resample pools to 0.6
    assert v == [pytest.approx(0.6), pytest.approx(0.6)]


def test_score_cli(tfr_input: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tempcore.cli import main

    out = tmp_path / "out"
    build_tfr(read_annotations(tfr_input / "ann.jsonl"), out, video_root=tfr_input, seed=0)
    rows = _rows(out)
    preds = []
    for r in rows:
        types = r["option_types"]
        if r["option_modality"] == "text":
            answer = r["answer"]  # the text model is always right
        else:  # the visual model always picks the neighbour distractor
            answer = types.index("neighbor")
        probs = [0.25] * 4 if r["option_modality"] == "visual" else None
        preds.append({"benchmark": "generic", "sample_id": r["id"], "model": "m", "strategy": "visual",
                      "mode": "none", "k": 32, "window": None, "correct": int(answer == r["answer"]),
                      "answer": answer, "option_probs": json.dumps(probs) if probs else None})
    with open(tmp_path / "p.jsonl", "w") as fh:
        for p in preds:
            fh.write(json.dumps(p) + "\n")
    assert main(["visual", "score", "--predictions", str(tmp_path / "p.jsonl"), "--annotations",
                 str(out / "annotations.jsonl"), "--n-boot", "2000", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    groups = {g["options"]: g for g in result["groups"]}
    vis, txt = groups["visual"], groups["text"]
    for key in ("model", "task", "n", "accuracy", "wilson", "bootstrap", "chance", "errors_by_distractor",
                "sdt", "perplexity"):
        assert key in vis
    assert vis["accuracy"] == 0.0 and vis["n"] == 8 and vis["chance"] == 0.25
    assert vis["errors_by_distractor"] == {"neighbor": 1.0}
    assert vis["perplexity"] == pytest.approx(4.0) and txt["perplexity"] is None
    assert txt["accuracy"] == 1.0 and vis["sdt"] is None
    assert set(vis["by_question_type"]) == {"after", "before"}
    (gap,) = result["gaps"]
    assert gap["gap"] == -1.0 and gap["n_pairs"] == 8 and gap["bootstrap"] == [-1.0, -1.0]


def test_score_cmd_sdt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tempcore.cli import main

    rows = []
    for v in range(10):
        for stim in ("complete", "incomplete_with_implication"):
            rows.append({"id": f"v{v}_{stim}", "video": f"videos/v{v}_{stim}.mp4", "question": "Did this frame appear?",
                         "options": ["Yes", "No"], "answer": 0 if stim == "complete" else 1, "task": "cmd",
                         "option_modality": "visual", "stimulus": stim, "video_id": f"v{v}"})
    (tmp_path / "annotations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    preds = []
    for i, r in enumerate(rows):  # says yes to 8/10 complete, 3/10 incomplete
        v = i // 2
        yes = (v < 8) if r["stimulus"] == "complete" else (v < 3)
        answer = 0 if yes else 1
        preds.append({"benchmark": "generic", "sample_id": r["id"], "model": "m", "strategy": "video",
                      "mode": "none", "k": 8, "window": None, "correct": int(answer == r["answer"]), "answer": answer})
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds))
    assert main(["visual", "score", "--predictions", str(tmp_path / "p.jsonl"), "--unit", "video",
                 "--n-boot", "1000", "--json"]) == 0
    (g,) = json.loads(capsys.readouterr().out)["groups"]
    assert g["chance"] == 0.5 and g["accuracy"] == pytest.approx(0.75)
    s = g["sdt"]
    assert s["hit_rate"] == 0.8 and s["false_alarm_rate"] == 0.3
    assert s["d_prime"] == pytest.approx(d_prime(0.8, 0.3)) and s["criterion"] == pytest.approx(criterion(0.8, 0.3))
    assert not math.isnan(g["bootstrap"][0]) and g["bootstrap_unit"] == "video"
    assert s["false_alarm_by_stimulus"] == {"incomplete_with_implication": 0.3}
    # misses on complete (2) and false alarms on incomplete (3): errors keyed by stimulus
    assert g["errors_by_distractor"] == {"complete": 0.4, "incomplete_with_implication": 0.6}


def test_world_tfr_and_vfp_end_to_end(tmp_path: Path) -> None:
    from tempcore.world import generate_world
    from tempcore.world.visual import world_tfr, world_vfp

    manifest = generate_world(tmp_path / "w", n_questions=8, seed=0, duration=(14.0, 16.0))
    build = world_tfr(manifest, tmp_path / "tfr", frames_per_option=4)
    assert build["questions"] > 0 and build["fallback_anchor"] == build["questions"]
    samples = load_benchmark("generic", tmp_path / "tfr" / "annotations.jsonl", video_root=manifest.root).samples
    from tempcore.benchmarks import preflight

    assert preflight(samples, manifest.root) == []
    scenes = manifest.world.scene_map()
    from tempcore.video.decode import read_frames
    from tempcore.world.scene import render_frame

    s = next(x for x in samples if x.metadata["option_modality"] == "visual")
    scene = scenes[s.metadata["video_id"]]
    correct = s.metadata["visual_options"][s.answer]
    assert correct["type"] == "correct"
    ev = correct["event"]
    # the correct option's frames show the neighbour event (decoded from the real encoded video)
    t = correct["times"][0]
    assert ev["start"] <= t < ev["end"]
    batch = read_frames(manifest.root / s.video, [int(math.floor(t * scene.fps + 1e-9))], None)
    rendered = render_frame(scene, batch.timestamps[0])
    assert np.abs(batch.frames[0].astype(int) - rendered.astype(int)).mean() < 12
    vbuild = world_vfp(manifest, tmp_path / "vfp")
    assert vbuild["questions"] == len(manifest.scenes)


# --- answering: interleaved visual options ---------------------------------------------------


def _tiny_frames(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (32, 32, 3), dtype=np.uint8) for _ in range(n)]


def test_interleaved_layout_and_openai_parts() -> None:
    from tempcore.models.openai_http import OpenAIChatModel, build_chat_body
    from tempcore.visual.requests import InterleavedRequest, multiple_choice_request, yes_no_request

    req = multiple_choice_request("What happens after x?", [_tiny_frames(2, i) for i in range(4)],
                                  context=_tiny_frames(3, 9))
    assert len(req.images) == 11 and req.options == ("A", "B", "C", "D")
    body = build_chat_body(OpenAIChatModel("m", "http://127.0.0.1:9/v1"), req)
    parts = body["messages"][-1]["content"]
    kinds = "".join("I" if p["type"] == "image_url" else "T" for p in parts)
    # instruction + "Video:", 3 context frames, question + '"A": ', 2 frames, '"B": ', ... , answer instruction
    assert kinds == "TIIITIITIITIITIIT"
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert texts[1].endswith('Options:\n"A": ') and texts[2:4] == ['\n"B": ', '\n"C": ']
    assert texts[-1].startswith("\n\nAnswer with the option")
    yn = yes_no_request(_tiny_frames(4, 1), _tiny_frames(1, 2)[0])
    assert yn.options == ("Yes", "No") and yn.layout[5] == 4 and "Did this frame appear" in yn.layout[4]
    with pytest.raises(ValueError, match="layout"):
        InterleavedRequest(images=tuple(_tiny_frames(2, 0)), prompt="x", layout=(1, 0))


def test_tiny_vlm_answers_interleaved_visual_options(tmp_path: Path) -> None:
    from helpers import tiny_vlms
    from tempcore.models import load_model
    from tempcore.models.base import ModelSpec
    from tempcore.visual.requests import request_for_sample

    clips = tmp_path / "clips"
    write_video(clips / "c1.mp4", duration=2.0, fps=10, size=(32, 32))
    build_vfp(clips, tmp_path / "vfp", context_frames=4, future_frames=4)
    (sample,) = load_benchmark("generic", tmp_path / "vfp" / "annotations.jsonl").samples
    req = request_for_sample(sample, clips)
    assert len(req.images) == 4 + 4 * 4  # the context, then four options of four frames
    codes = [read_pattern(im).index for im in req.images]
    opts = sample.metadata["visual_options"]
    assert codes == [0, 1, 2, 3, *(f for o in opts for f in o["frames"])]  # exactly the recorded frames, in order
    folder = tiny_vlms.build_tiny_vlm("qwen2_vl", tmp_path / "qwen2_vl")
    model = load_model(ModelSpec(backend="hf", model=str(folder), max_new_tokens=4))
    text = model.render(req)
    pad = "<|vision_start|><|image_pad|><|vision_end|>"
    assert text.count(pad) == 20
    a, b = text.index('"A": '), text.index('"B": ')
    assert text[a:b].count(pad) == 4  # option A's four frames sit between its label and B's
    gen, scored = model.answer([req])[0], model.answer([req], method="option_scores")[0]
    assert gen.ok and scored.ok and len(scored.option_logprobs) == 4
    assert scored.text in ("A", "B", "C", "D")
    model.close()


def test_zoo_answers_world_tfr_visual_and_text_and_the_gap_is_scored(tmp_path: Path) -> None:
    from tempcore.models import load_model
    from tempcore.models.base import ModelSpec
    from tempcore.tidy.table import predictions_table, write_table
    from tempcore.visual.answering import answer_samples
    from tempcore.visual.scoring import samples_from_annotations, score_predictions
    from tempcore.world import generate_world
    from tempcore.world.visual import world_tfr

    manifest = generate_world(tmp_path / "w", n_questions=24, seed=1, duration=(14.0, 16.0))
    world_tfr(manifest, tmp_path / "tfr", frames_per_option=2)
    samples = load_benchmark("generic", tmp_path / "tfr" / "annotations.jsonl").samples
    model = load_model(ModelSpec(backend="zoo", model="zoo-max"))
    preds, failures = answer_samples(model, samples, manifest.root, method="option_scores", context_k=4)
    assert not failures and len(preds) == len(samples)
    visual = next(p for p in preds if not p.sample_id.endswith("-text"))
    assert len(visual.frames) == 4 + 4 * 2 and visual.option_probs is not None
    write_table(predictions_table(preds, samples=samples), tmp_path / "p.parquet")
    from tempcore.tidy.table import read_predictions

    result = score_predictions(read_predictions(tmp_path / "p.parquet"),
                               samples_from_annotations(tmp_path / "tfr" / "annotations.jsonl"), n_boot=500)
    assert {g["options"] for g in result["groups"]} == {"visual", "text"}
    (gap,) = result["gaps"]
    assert gap["n_pairs"] == len(samples) // 2 and gap["model"] == "zoo-max"
    assert gap["gap"] == pytest.approx(gap["visual"] - gap["text"])
    assert all(1.0 <= g["perplexity"] <= 4.0 for g in result["groups"])


def test_cli_build_and_inspect(tfr_input: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tempcore.cli import main

    out = tmp_path / "cli"
    assert main(["visual", "build", "tfr", "--annotations", str(tfr_input / "ann.jsonl"), "--video-root",
                 str(tfr_input), "--out", str(out), "--frames-per-option", "4", "--json"]) == 0
    build = json.loads(capsys.readouterr().out)
    assert build["questions"] == 8 and build["rows"] == 16 and (out / "build.json").is_file()
    assert main(["benchmarks", "inspect", "generic", "--annotations", str(out / "annotations.jsonl"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["invalid"] == 0 and info["samples"] == 16


def test_import_tempcore_does_not_import_torch() -> None:
    import subprocess
    import sys

    code = ("import sys, tempcore, tempcore.visual, tempcore.visual.tfr, tempcore.visual.scoring, "
            "tempcore.visual.requests, tempcore.cli.visual; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_vfp_from_frame_folders(tmp_path: Path) -> None:
    from tempcore.video.synthetic import write_frame_folder

    clips = tmp_path / "clips"
    write_frame_folder(clips / "tower1", 16, size=(32, 32))
    build = build_vfp(clips, tmp_path / "out", folder_fps=4.0)
    (row,) = _rows(tmp_path / "out")
    assert build["questions"] == 1 and row["media"] == "frames" and row["frames_fps"] == 4.0
    assert row["end"] == pytest.approx(2.0) and row["context"]["times"] == pytest.approx([i / 4 for i in range(8)])
    from tempcore.visual.requests import request_for_sample

    (sample,) = load_benchmark("generic", tmp_path / "out" / "annotations.jsonl").samples
    assert sample.media == "frames"
    req = request_for_sample(sample, clips)
    opts = sample.metadata["visual_options"]
    assert [read_pattern(im).index for im in req.images] == [*range(8), *(f for o in opts for f in o["frames"])]


def test_score_cli_text_prints_intervals_in_percent(tfr_input: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 30: the Wilson and bootstrap intervals read as the accuracy beside them (percent), not raw floats."""
    from tempcore.cli import main

    out = tmp_path / "out"
    build_tfr(read_annotations(tfr_input / "ann.jsonl"), out, video_root=tfr_input, seed=0)
    with open(tmp_path / "p.jsonl", "w") as fh:
        for r in _rows(out):
            fh.write(json.dumps({"benchmark": "generic", "sample_id": r["id"], "model": "m", "strategy": "visual",
                                 "mode": "none", "k": 32, "window": None, "correct": 1, "answer": r["answer"]})
                     + "\n")
    assert main(["visual", "score", "--predictions", str(tmp_path / "p.jsonl"), "--annotations",
                 str(out / "annotations.jsonl"), "--n-boot", "200"]) == 0
    text = capsys.readouterr().out
    line = next(ln for ln in text.splitlines() if ln.startswith("m ") and "visual" in ln)
    assert "acc=100.0%" in line and "chance=25.0%" in line
    assert re.search(r"wilson=\[\d+\.\d, 100\.0\]% bootstrap=\[100\.0, 100\.0\]% ", line), line
