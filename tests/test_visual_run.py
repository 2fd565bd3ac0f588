"""Visual-option questions through `tempcore run` and the run store: routing, the frames shown and
stored, resuming, and the identity (a changed question / option frames / model entry is never served
from the store)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tempcore.run.config import RunConfig
from tempcore.run.runner import RunError, run
from tempcore.run.store import RunStore
from tempcore.video.synthetic import write_video
from tempcore.visual.cmd import build_cmd
from tempcore.visual.tfr import build_tfr, read_annotations
from tempcore.visual.vfp import build_vfp

EVENTS = [
    {"label": "open door", "start": 1.0, "end": 3.0},
    {"label": "sit down", "start": 5.0, "end": 8.0},
    {"label": "drink", "start": 10.0, "end": 12.0},
]


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("visual_run")
    videos = root / "videos"
    # pattern videos: frame i (at i / 10 s) shows the code i (tempcore.video.synthetic.read_pattern)
    write_video(videos / "v1.mp4", duration=20.0, fps=10, size=(32, 32))
    write_video(videos / "v2.mp4", duration=15.0, fps=10, size=(32, 32))
    write_video(root / "clips" / "c1.mp4", duration=2.0, fps=10, size=(32, 32))
    (root / "events.jsonl").write_text(
        json.dumps({"video": "v1.mp4", "events": EVENTS, "duration": 20.0}) + "\n"
        + json.dumps({"video": "v2.mp4", "duration": 15.0, "events": [
            {"label": "wave", "start": 2, "end": 4}, {"label": "jump", "start": 6, "end": 9},
            {"label": "laugh", "start": 11, "end": 12}]}) + "\n")
    build_tfr(read_annotations(root / "events.jsonl"), root / "tfr", video_root=videos, seed=0, frames_per_option=2)
    build_vfp(root / "clips", root / "vfp", context_frames=4, future_frames=4)
    (root / "cmd.jsonl").write_text(json.dumps({
        "video": "v1.mp4", "contact": 6.05, "excise": [6.0, 6.5], "unrelated": [14.0, 19.0],
        "segment": [2.0, 10.0], "contact_label": "the cup touches the table"}) + "\n")
    build_cmd(root / "cmd.jsonl", videos, root / "cmd", seed=0)
    (root / "plain.jsonl").write_text(json.dumps({"id": "p1", "video": "v1.mp4", "question": "What is shown?",
                                                  "options": ["a", "b", "c", "d"], "answer": 1}) + "\n")
    return {"root": root, "videos": videos, "clips": root / "clips"}


def config(b: dict[str, Path], out: Path, *, tfr: Path | None = None, **model: Any) -> RunConfig:
    def bench(name: str, ann: Path, root: Path) -> dict[str, Any]:
        return {"name": "generic", "annotations": str(ann), "video_root": str(root),
                "options": {"benchmark_name": name}}

    return RunConfig.from_dict({
        "out": str(out), "k": 4, "fps": 10, "cache": str(b["root"] / "cache"),
        "benchmarks": [bench("tfr", tfr or b["root"] / "tfr" / "annotations.jsonl", b["videos"]),
                       bench("vfp", b["root"] / "vfp" / "annotations.jsonl", b["clips"]),
                       bench("cmd", b["root"] / "cmd" / "annotations.jsonl", b["root"] / "cmd"),
                       bench("plain", b["root"] / "plain.jsonl", b["videos"])],
        "models": [{"backend": "zoo", "model": "zoo-max", "method": "option_scores", **model}],
        "conditions": [{"strategy": "uniform"}],
    }, source="test")


class Counting:
    """A real model, counting the requests it is asked (to see what a rerun asks)."""

    def __init__(self, spec: Any) -> None:
        from tempcore.models import load_model

        self.inner = load_model(spec)
        self.name = self.inner.name
        self.requests: list[Any] = []

    def answer(self, requests: list[Any], method: str = "generate") -> list[Any]:
        self.requests.extend(requests)
        return self.inner.answer(requests, method=method)

    def close(self) -> None:
        self.inner.close()


def _run(cfg: RunConfig, **kw: Any) -> tuple[Any, list[Counting]]:
    made: list[Counting] = []

    def factory(spec: Any) -> Counting:
        made.append(Counting(spec))
        return made[-1]

    return run(cfg, progress=False, log=lambda _m: None, model_factory=factory, **kw), made


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _shown(t: float) -> float:
    """The presentation time of the pattern-video frame shown at ``t`` (10 fps)."""
    return math.floor(t * 10 + 1e-6) / 10


def test_visual_samples_run_through_the_store_and_resume(builds: dict[str, Path], tmp_path: Path) -> None:
    from tempcore.video.synthetic import read_pattern

    out = tmp_path / "run"
    summary, made = _run(config(builds, out))
    (model,) = made
    tfr_rows = {r["id"]: r for r in _rows(builds["root"] / "tfr" / "annotations.jsonl")}
    cmd_rows = {r["id"]: r for r in _rows(builds["root"] / "cmd" / "annotations.jsonl")}
    n_visual = len(tfr_rows) + 1 + len(cmd_rows)
    assert summary.models[0].failed == 0 and summary.models[0].done == n_visual + 1
    assert len(model.requests) == n_visual + 1
    with RunStore.open(out / "store.sqlite") as store:
        preds = {(p.benchmark, p.sample_id): p for p in store.predictions()}
    # routing: the plain question under the run's condition; every built row under visual_options only
    assert preds[("plain", "p1")].condition.startswith("uniform|")
    assert len(preds) == n_visual + 1
    for (bench, sid), p in preds.items():
        if bench != "plain":
            assert p.condition.startswith("visual_options|mode=none|k="), (sid, p.condition)
            assert p.sample_hash and p.model_fingerprint and p.n_frames is None
    # a TFR question: 8 context frames over the whole video, then each option's frames in label order
    q = tfr_rows["v1_0001_after"]
    p = preds[("tfr", "v1_0001_after")]
    opt_times = [t for o in q["visual_options"] for t in o["times"]]
    assert p.condition == f"visual_options|mode=none|k={8 + len(opt_times)}|fps=10|seed=0"
    assert list(p.frames.indices) == list(range(8 + len(opt_times)))
    assert list(p.frames.timestamps[8:]) == pytest.approx([_shown(t) for t in opt_times])
    assert list(p.frames.timestamps[:8]) == pytest.approx([_shown(20 * (i + 0.5) / 8) for i in range(8)])
    assert p.option_probs is not None and len(p.option_probs) == 4 and p.target == q["answer"]
    text = preds[("tfr", "v1_0001_after-text")]
    assert text.condition == "visual_options|mode=none|k=8|fps=10|seed=0" and len(text.frames) == 8
    # the request the model saw shows exactly those frames (decoded from the real video)
    req = next(r for r in model.requests if r.key.startswith("tfr|v1_0001_after|"))
    assert [read_pattern(im).index for im in req.images[8:]] == [round(_shown(t) * 10) for t in opt_times]
    assert '"A": ' in "".join(x for x in req.layout if isinstance(x, str))
    # CMD: min(8, stimulus frames) frames of the stimulus, then the probe frame (time -1)
    c = preds[("cmd", "v1_complete")]
    assert c.condition == "visual_options|mode=none|k=9|fps=10|seed=0" and c.frames.timestamps[-1] == -1.0
    assert c.frames.timestamps[0] == pytest.approx(0.0)
    assert preds[("cmd", "v1_complete-text")].condition == "visual_options|mode=none|k=8|fps=10|seed=0"
    # VFP: the recorded context (4 frames) then 4 options x 4 frames
    v = preds[("vfp", "c1")]
    assert v.condition == "visual_options|mode=none|k=20|fps=10|seed=0"
    assert list(v.frames.timestamps[:4]) == pytest.approx([0.0, 0.1, 0.2, 0.3])

    # resume: nothing is asked again
    again, made2 = _run(config(builds, out))
    assert again.models[0].done == 0 and again.models[0].stored_before == n_visual + 1
    assert not made2  # the model is not even loaded

    # the run's table scores as visual options (the visual / text gap per model)
    from tempcore.tidy.table import read_predictions
    from tempcore.visual.scoring import samples_from_annotations, score_predictions

    assert summary.predictions_file is not None
    result = score_predictions(read_predictions(summary.predictions_file),
                               samples_from_annotations(builds["root"] / "tfr" / "annotations.jsonl"), n_boot=200)
    (gap,) = result["gaps"]
    assert gap["model"] == "zoo-max" and gap["n_pairs"] == len(tfr_rows) // 2
    assert {g["options"] for g in result["groups"]} == {"visual", "text"}


def test_dry_run_counts_visual_options(builds: dict[str, Path], tmp_path: Path) -> None:
    lines: list[str] = []
    run(config(builds, tmp_path / "dry"), dry_run=True, progress=False, log=lines.append)
    text = "\n".join(lines)
    assert "tfr: 16 samples, 16 requests per model (visual_options 16)" in text
    assert "plain: 1 samples, 1 requests per model (uniform 1)" in text


def _edit(src: Path, dst: Path, sid: str, change: Any) -> Path:
    rows = _rows(src)
    for r in rows:
        if r["id"] == sid:
            change(r)
    dst.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dst


def test_changed_option_frames_question_or_model_are_not_served(builds: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "run"
    base = builds["root"] / "tfr" / "annotations.jsonl"
    _run(config(builds, out))

    def move_scrambled(r: dict[str, Any]) -> None:  # the same labels, the scrambled option's frames moved
        for o in r["visual_options"]:
            if o["type"] == "scrambled":
                o["times"] = [t + 0.5 for t in o["times"]]

    moved = _edit(base, tmp_path / "moved.jsonl", "v1_0001_after", move_scrambled)
    with pytest.raises(RunError, match=r"tfr: 1 sample changed its option frames \(1 stored prediction\)"):
        _run(config(builds, out, tfr=moved))
    redone, made = _run(config(builds, out, tfr=moved), recompute=True)
    assert redone.models[0].replaced == 1 and len(made[0].requests) == 1
    assert made[0].requests[0].key.startswith("tfr|v1_0001_after|visual_options")

    def reword(r: dict[str, Any]) -> None:
        r["question"] = r["question"].replace("What happens", "What comes")

    reworded = _edit(moved, tmp_path / "reworded.jsonl", "v1_0001_after-text", reword)
    with pytest.raises(RunError, match="changed its question"):
        _run(config(builds, out, tfr=reworded))
    # the model entry: another setting that reaches the model
    with pytest.raises(RunError, match="model zoo-max: .*changed"):
        _run(config(builds, out, tfr=moved, max_frames=999))


def test_a_request_that_cannot_be_built_is_a_failure_then_retried(builds: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    cmd = tmp_path / "cmd"
    shutil.copytree(builds["root"] / "cmd", cmd)
    probe = cmd / "frames" / "v1_contact.png"
    saved = probe.read_bytes()
    probe.unlink()
    cfg = RunConfig.from_dict({
        "out": str(tmp_path / "run"), "k": 4, "cache": str(builds["root"] / "cache"),
        "benchmarks": [{"name": "generic", "annotations": str(cmd / "annotations.jsonl"), "video_root": str(cmd),
                        "options": {"benchmark_name": "cmd"}}],
        "models": [{"backend": "zoo", "model": "zoo-max"}], "conditions": ["uniform"],
    }, source="test")
    first, _ = _run(cfg)
    # the four yes/no stimuli need the probe frame; their text controls do not
    assert first.models[0].failed == 4 and first.models[0].done == 4
    with RunStore.open(tmp_path / "run" / "store.sqlite") as store:
        fails = store.failures()
    assert len(fails) == 4 and all("visual options" in f.failure.error and "v1_contact.png" in f.failure.error for f in fails)
    probe.write_bytes(saved)
    second, _ = _run(cfg)
    assert second.models[0].done == 4 and second.models[0].failed == 0


def test_a_tiny_hf_vlm_answers_visual_options_through_the_run(builds: dict[str, Path], tmp_path: Path) -> None:
    from helpers.tiny_vlms import build_tiny_vlm

    vlm = build_tiny_vlm("qwen2_vl", tmp_path / "vlm")
    cfg = RunConfig.from_dict({
        "out": str(tmp_path / "run"), "k": 4, "cache": str(builds["root"] / "cache"),
        "benchmarks": [{"name": "generic", "annotations": str(builds["root"] / "vfp" / "annotations.jsonl"),
                        "video_root": str(builds["clips"]), "options": {"benchmark_name": "vfp"}}],
        "models": [{"backend": "hf", "model": str(vlm), "name": "tiny-qwen", "max_new_tokens": 3,
                    "method": "option_scores"}],
        "conditions": ["uniform"],
    }, source="test")
    summary, made = _run(cfg)
    assert summary.models[0].done == 1 and summary.models[0].failed == 0
    (req,) = made[0].requests
    # the HF chat template interleaves each option label with its own frames (4 context + 4 x 4)
    text = made[0].inner.render(req)
    pad = "<|vision_start|><|image_pad|><|vision_end|>"
    assert text.count(pad) == 20
    labels = [text.index(f'"{x}": ') for x in "ABCD"]
    assert text[:labels[0]].count(pad) == 4
    for a, b in zip(labels, labels[1:] + [len(text)]):
        assert text[a:b].count(pad) == 4
    with RunStore.open(tmp_path / "run" / "store.sqlite") as store:
        (p,) = store.predictions()
    assert p.answer in range(4) and p.option_probs is not None and len(p.frames) == 20


def test_a_visual_options_run_decodes_each_video_once_with_the_same_frames(builds: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    # issue 30 item 7: every request probed its video, then read its frames (2 passes per request and
    # model); the run's frame store now makes one pass per video for every model and sample
    import hashlib

    import numpy as np

    from tempcore.run.local import LocalExecutor
    from tempcore.video.types import count_decodes

    def visual_config(out: Path) -> RunConfig:
        raw = dict(config(builds, out).to_dict())
        raw.pop("source", None)
        raw["benchmarks"] = [b for b in raw["benchmarks"] if b["options"]["benchmark_name"] != "plain"]
        raw["models"] = [{"backend": "zoo", "model": m, "method": "option_scores"} for m in ("zoo-max", "zoo-mean")]
        return RunConfig.from_dict(raw, source="test")

    def shown(keep: bool, out: str) -> tuple[dict[tuple[str, str], Any], dict[str, Any]]:
        with count_decodes() as decodes:
            summary, made = _run(visual_config(tmp_path / out), executor=LocalExecutor(keep_frames=keep))
        assert all(m.failed == 0 for m in summary.models)
        seen = {(m.name, r.key): (tuple(hashlib.sha256(np.ascontiguousarray(im).tobytes()).hexdigest() + str(im.shape)
                                        for im in r.images), r.timestamps, r.prompt)
                for m in made for r in m.requests}
        return seen, decodes.summary()

    before, d0 = shown(False, "each")
    after, d1 = shown(True, "once")
    assert d0["max_per_video"] > 2  # a probe and a read per request and model
    assert d1["passes"] == d1["videos"] == d0["videos"] and d1["max_per_video"] == 1, d1
    assert after == before and len(before) == 2 * len({k for _m, k in before})
