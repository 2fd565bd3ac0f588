"""Identity of a prediction (issue 9, defects 1, 2 and 6) and the runner-side points of issues 13 and 19.

Fast: a fake model (records what it is asked, answers "A") over real videos and a real run store;
the conditions need no encoder (uniform, random, noframe). Score-based conditions and the encoder
fingerprint are tested in test_runner.py with the tiny real encoder.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tempcore.errors import TempcoreError
from tempcore.models import ModelResponse
from tempcore.records import Condition
from tempcore.run.config import ConfigError, RunConfig
from tempcore.run.runner import RunError, run
from tempcore.run.store import RunStore
from tempcore.video.synthetic import write_video

NAMES = ["red", "green", "blue", "yellow"]


class FakeModel:
    """Answers "A" to everything; counts and keeps the requests it saw."""

    calls: list[Any] = []
    loads = 0

    def __init__(self, spec: Any) -> None:
        type(self).loads += 1
        self.name = spec.display_name
        self.revision = spec.revision
        self.supports_option_scores = True

    def answer(self, requests: Any, *, method: str = "generate") -> list[ModelResponse]:
        type(self).calls.extend(requests)
        return [ModelResponse("A", latency_s=0.001) for _ in requests]

    def close(self) -> None:
        pass


@pytest.fixture(autouse=True)
def _reset_fake() -> None:
    FakeModel.calls = []
    FakeModel.loads = 0


def _write_world(root: Path, rows: list[dict] | None = None) -> Path:
    videos = root / "videos"
    videos.mkdir(parents=True, exist_ok=True)
    for i in range(3):
        if not (videos / f"v{i}.mp4").exists():
            write_video(videos / f"v{i}.mp4", fps=10, duration=2.0 + i, size=(32, 32),
                        make_frame=lambda n, t, i=i: np.full((32, 32, 3), 30 * (i + 1) + n, np.uint8))
    rows = rows or [{"id": f"q{i}", "video": f"v{i}.mp4", "question": f"What colour is {i}?", "options": NAMES,
                     "answer": i % 4} for i in range(3)]
    ann = root / "bench.jsonl"
    ann.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return ann


def _config(root: Path, *, model: dict | None = None, **extra: Any) -> RunConfig:
    data = {
        "out": str(root / "run"),
        "cache": str(root / "cache"),
        "k": 4,
        "fps": 10,
        "benchmarks": [{"name": "generic", "annotations": str(root / "bench.jsonl"),
                        "video_root": str(root / "videos"), "options": {"benchmark_name": "toy"}}],
        "models": [model or {"backend": "openai", "model": "fake-model", "name": "fake",
                             "base_url": "http://localhost:1/v1"}],
        "conditions": [{"strategy": "uniform"}, {"strategy": "random"}, {"strategy": "noframe"}],
    }
    data.update(extra)
    return RunConfig.from_dict(data, source="test")


def _run(cfg: RunConfig, **kw: Any) -> Any:
    return run(cfg, progress=False, log=lambda _m: None, model_factory=FakeModel, **kw)


def _rows(root: Path) -> dict[tuple, dict]:
    with RunStore.open(root / "run") as s:
        return {(r["sample_id"], r["condition"]): r for r in s.prediction_rows()}


# --- defect 1: the annotations change under the same ids -------------------------------------


def test_annotations_rewritten_with_same_ids_are_not_reused(tmp_path: Path) -> None:
    _write_world(tmp_path)
    first = _run(_config(tmp_path))
    assert first.models[0].done == 9
    before = _rows(tmp_path)
    rows = [{"id": "q0", "video": "v0.mp4", "question": "What colour is 0? (reworded)", "options": NAMES,
             "answer": 0},
            {"id": "q1", "video": "v1.mp4", "question": "What colour is 1?", "options": NAMES[::-1], "answer": 2},
            {"id": "q2", "video": "v2.mp4", "question": "What colour is 2?", "options": NAMES, "answer": 2}]
    _write_world(tmp_path, rows)
    FakeModel.calls.clear()
    with pytest.raises(RunError) as err:
        _run(_config(tmp_path))
    msg = str(err.value)
    assert "toy: 2 samples changed their question, options or answer (6 stored predictions)" in msg
    assert "--recompute" in msg and "6 stored predictions" in msg
    assert FakeModel.loads == 1 and not FakeModel.calls  # stopped before any model was loaded or called
    assert _rows(tmp_path) == before

    again = _run(_config(tmp_path), recompute=True)
    assert again.models[0].replaced == 6 and again.models[0].done == 6
    after = _rows(tmp_path)
    assert set(after) == set(before)
    for key, row in after.items():
        if key[0] == "q2":  # unchanged: kept as it was
            assert row == before[key]
        else:
            assert row["run_id"] == again.run_id and row["sample_hash"] != before[key]["sample_hash"]
    q1 = [r for k, r in after.items() if k[0] == "q1"]
    assert all(r["target"] == 2 for r in q1)
    # and a third run reuses everything
    third = _run(_config(tmp_path))
    assert third.models[0].done == 0 and third.models[0].stored_before == 9


def test_a_changed_answer_or_video_is_named(tmp_path: Path) -> None:
    _write_world(tmp_path)
    _run(_config(tmp_path))
    rows = [{"id": f"q{i}", "video": f"v{i}.mp4", "question": f"What colour is {i}?", "options": NAMES,
             "answer": (i + (i == 0)) % 4} for i in range(3)]
    _write_world(tmp_path, rows)
    with pytest.raises(RunError, match=r"toy: 1 sample changed its answer \(3 stored predictions\)"):
        _run(_config(tmp_path))
    _write_world(tmp_path)  # the answer back, but the video re-encoded (other content, same path)
    write_video(tmp_path / "videos" / "v2.mp4", fps=10, duration=4.0, size=(32, 32),
                make_frame=lambda n, t: np.full((32, 32, 3), 200, np.uint8))
    with pytest.raises(RunError, match=r"toy: 1 sample changed its video \(3 stored predictions\)"):
        _run(_config(tmp_path))


# --- defect 2: the model entry changes ----------------------------------------------------------

_BASE = {"backend": "openai", "model": "fake-model", "name": "fake", "base_url": "http://localhost:1/v1"}


@pytest.mark.parametrize(
    ("change", "label"),
    [
        ({"prompt_template": "letter_only"}, "prompt template"),
        ({"revision": "abc123"}, "revision"),
        ({"method": "option_scores"}, "answer method"),
        ({"max_new_tokens": 16}, "max_new_tokens"),
        ({"dtype": "bfloat16"}, "dtype"),
        ({"max_image_side": 224}, "max_image_side"),
        ({"max_frames": 8}, "max_frames"),
        ({"generation_kwargs": {"temperature": 0.0, "top_p": 0.5}}, "generation settings"),
        ({"system_prompt": "You are careful."}, "system prompt"),
        ({"model": "fake-model-2"}, "model id"),
    ],
)
def test_each_model_entry_change_is_not_reused(tmp_path: Path, change: dict, label: str) -> None:
    _write_world(tmp_path)
    _run(_config(tmp_path, model=_BASE))
    with pytest.raises(RunError, match=rf"model fake: {label} changed \(9 stored predictions\)"):
        _run(_config(tmp_path, model=_BASE | change))
    assert FakeModel.loads == 1
    assert _run(_config(tmp_path, model=_BASE | change), recompute=True).models[0].replaced == 9


def test_run_prompt_and_noframe_size_are_part_of_the_fingerprint(tmp_path: Path) -> None:
    _write_world(tmp_path)
    _run(_config(tmp_path))
    with pytest.raises(RunError, match=r"model fake: prompt template changed"):
        _run(_config(tmp_path, prompt="lmms_eval"))
    with pytest.raises(RunError, match=r"model fake: no-frame image size changed"):
        _run(_config(tmp_path, noframe_size=64))


def test_settings_that_do_not_change_answers_keep_the_rows(tmp_path: Path) -> None:
    _write_world(tmp_path)
    _run(_config(tmp_path, model=_BASE))
    same = _BASE | {"batch_size": 2, "concurrency": 3, "timeout_s": 5.0, "max_retries": 1,
                    "base_url": "http://elsewhere:2/v1"}
    assert _run(_config(tmp_path, model=same)).models[0].stored_before == 9


def test_rows_of_a_v1_store_carry_no_fingerprint_and_are_not_reused(tmp_path: Path) -> None:
    _write_world(tmp_path)
    _run(_config(tmp_path))
    con = sqlite3.connect(tmp_path / "run" / "store.sqlite")
    con.execute("UPDATE predictions SET sample_hash = '', model_fingerprint = ''")  # as migrated from v1
    con.commit()
    con.close()
    with pytest.raises(RunError, match=r"model fake: 9 stored predictions carry no fingerprint"):
        _run(_config(tmp_path))


# --- defect 6: a dry run that is dry, and checks first ---------------------------------------------


def test_dry_run_writes_no_store_loads_no_encoder_and_decodes_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    _write_world(tmp_path)

    def boom(*a: Any, **k: Any) -> None:
        raise AssertionError("a dry run must not load an encoder or decode a video")

    monkeypatch.setattr("tempcore.encoders.load_encoder", boom)
    monkeypatch.setattr("tempcore.video.decode.probe", boom)
    monkeypatch.setattr("tempcore.video.decode.read_frames", boom)
    cfg = _config(tmp_path, conditions=[{"strategy": "maxprob", "mode": "qa"}, {"strategy": "noframe"},
                                        {"strategy": "oracle", "params": {"max_windows": 5}}])
    summary = run(cfg, dry_run=True, progress=False, model_factory=FakeModel)
    out = capsys.readouterr().out
    assert summary.dry_run and not (tmp_path / "run").exists()
    assert "toy: 3 samples, 6 requests per model + up to 15 oracle windows" in out
    assert "model fake: up to 21 calls" in out
    assert FakeModel.loads == 0


def test_typos_are_reported_up_front_all_at_once(tmp_path: Path, monkeypatch) -> None:
    _write_world(tmp_path)
    monkeypatch.setattr("tempcore.encoders.load_encoder",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("loaded the encoder first")))
    cfg = _config(
        tmp_path,
        benchmarks=[{"name": "genric", "annotations": str(tmp_path / "bench.jsonl")},
                    {"name": "generic", "annotations": str(tmp_path / "bnech.jsonl")}],
        models=[{"preset": "no-such-preset"}, {"backend": "hf", "model": str(tmp_path / "no-model-here")},
                {"backend": "opnai", "model": "x"}, _BASE | {"prompt_template": "letter_onyl"}],
        conditions=[{"strategy": "maxprb", "mode": "qa"}, {"strategy": "noframe"}],
    )
    for dry in (True, False):
        with pytest.raises(ConfigError) as err:
            run(cfg, dry_run=dry, progress=False, model_factory=FakeModel)
        msg = str(err.value)
        assert "unknown benchmark 'genric'" in msg and "bnech.jsonl: no such file" in msg
        assert "no-such-preset" in msg and "no-model-here does not exist" in msg
        assert "unknown backend 'opnai'; did you mean 'openai'" in msg
        assert "unknown prompt template 'letter_onyl'" in msg
        assert "unknown strategy 'maxprb'; did you mean 'maxprob'" in msg
    assert not (tmp_path / "run").exists()


def test_an_unknown_zoo_member_or_encoder_name_is_reported_by_the_dry_run(tmp_path: Path) -> None:
    """Issue 9.6 (found by the acceptance check): ``model: zoo-txet`` and ``encoder: tempcore-wrold``
    passed ``--dry-run``; the real run failed only after decoding and writing the store."""
    _write_world(tmp_path)
    cfg = _config(tmp_path, model={"backend": "zoo", "model": "zoo-txet"}, encoder="tempcore-wrold",
                  conditions=[{"strategy": "maxprob", "mode": "q"}])
    for dry in (True, False):
        with pytest.raises(ConfigError) as err:
            run(cfg, dry_run=dry, progress=False, log=lambda _m: None)
        msg = str(err.value)
        assert "models[0] (zoo-txet): zoo answerer 'zoo-txet'" in msg and "did you mean 'zoo-text'" in msg
        assert "unknown encoder 'tempcore-wrold'" in msg and "did you mean tempcore-world" in msg
    assert not (tmp_path / "run").exists()
    # the right names pass the check (nothing loaded by it)
    from tempcore.run.config import check_config

    good = _config(tmp_path, model={"backend": "zoo", "model": "zoo-text"}, encoder="tempcore-world",
                   conditions=[{"strategy": "maxprob", "mode": "q"}])
    assert [spec.model for spec, _m in check_config(good)] == ["zoo-text"]


# --- item 7: timestamps; issue 19: n_frames; issue 13: damage, counts, summaries ---------------------


def test_prompts_show_frame_timestamps_and_predictions_record_n_frames(tmp_path: Path) -> None:
    _write_world(tmp_path)
    _run(_config(tmp_path))
    framed = [r for r in FakeModel.calls if not r.key.split("|")[2].startswith("noframe")]
    grey = [r for r in FakeModel.calls if r.key.split("|")[2].startswith("noframe")]
    assert framed and grey
    for r in framed:
        shown = ", ".join(f"{t:.2f}".rstrip("0").rstrip(".") for t in r.timestamps)
        assert f"Frame timestamps (seconds): {shown}" in r.prompt
    assert not any("Frame timestamps" in r.prompt for r in grey)
    rows = _rows(tmp_path)
    # 2 s, 3 s, 4 s of video at 10 fps
    assert {k[0]: r["n_frames"] for k, r in rows.items()} == {"q0": 20, "q1": 30, "q2": 40}
    assert all(r["video_damage"] is None for r in rows.values())


@dataclasses.dataclass
class _DamagedInfo:
    timestamps: tuple[float, ...]
    damage: str | None


def _damage_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    import tempcore.video.decode as video

    real = video.probe

    def probe(path: Any, fps: float, **kw: Any) -> Any:
        info = real(path, fps, **kw)
        damage = "truncated: index ends at 1.2 s of 3 s" if Path(path).name == "v1.mp4" else None
        return _DamagedInfo(tuple(info.timestamps), damage)

    monkeypatch.setattr(video, "probe", probe)
    # a run that keeps the frames it decodes for answering probes with a converting pass of the
    # reader (decode once per run): the same damage, reported by the reader after its pass
    real_record = video.VideoReader._record

    def _record(self: Any, decode: Any) -> None:
        real_record(self, decode)
        if Path(self.path).name == "v1.mp4":
            self.damage = "truncated: index ends at 1.2 s of 3 s"

    monkeypatch.setattr(video.VideoReader, "_record", _record)


def test_damaged_video_is_answered_and_flagged_by_default(tmp_path: Path, monkeypatch) -> None:
    _write_world(tmp_path)
    _damage_probe(monkeypatch)
    summary = _run(_config(tmp_path))
    assert summary.benchmarks["toy"]["damaged_videos"] == 1 and summary.benchmarks["toy"]["damaged_skipped"] == 0
    rows = _rows(tmp_path)
    assert {k[0] for k, r in rows.items() if r["video_damage"]} == {"q1"}
    assert all(r["video_damage"].startswith("truncated") for k, r in rows.items() if k[0] == "q1")


def test_damaged_videos_skip(tmp_path: Path, monkeypatch) -> None:
    _write_world(tmp_path)
    _damage_probe(monkeypatch)
    summary = _run(_config(tmp_path, damaged_videos="skip"))
    info = summary.benchmarks["toy"]
    assert (info["damaged_videos"], info["damaged_skipped"], info["samples_without_frames"]) == (1, 1, 1)
    conds = {Condition.from_key(k[1]).strategy for k in _rows(tmp_path) if k[0] == "q1"}
    assert conds == {"noframe"}
    with pytest.raises(ConfigError, match="damaged_videos must be answer or skip"):
        _config(tmp_path, damaged_videos="ignore")


def test_a_failing_video_does_not_fail_its_noframe_requests(tmp_path: Path, monkeypatch) -> None:
    _write_world(tmp_path)
    import tempcore.run.answering as executor

    def broken(items: Any, video_root: Any) -> Any:
        if items[0].sample.sample_id == "q0":
            raise TempcoreError("v0.mp4: decoder gave up at frame 3")
        return real(items, video_root)

    real = executor._load_frames
    monkeypatch.setattr(executor, "_load_frames", broken)
    summary = _run(_config(tmp_path))
    rows = _rows(tmp_path)
    q0 = {Condition.from_key(k[1]).strategy for k in rows if k[0] == "q0"}
    assert q0 == {"noframe"}
    assert summary.models[0].failed == 2 and summary.models[0].done == 7
    with RunStore.open(tmp_path / "run") as s:
        assert {Condition.from_key(f.failure.condition).strategy for f in s.failures()} == {"uniform", "random"}


def test_failed_and_missing_videos_count_videos_and_samples_without_frames_counts_samples(tmp_path: Path) -> None:
    _write_world(tmp_path)
    (tmp_path / "videos" / "broken.mp4").write_bytes(b"not a video at all" * 10)
    rows = [{"id": f"q{i}", "video": "broken.mp4", "question": f"Q{i}?", "options": NAMES, "answer": 0}
            for i in range(2)]
    rows += [{"id": f"m{i}", "video": "gone.mp4", "question": f"M{i}?", "options": NAMES, "answer": 0}
             for i in range(3)]
    rows += [{"id": "ok", "video": "v0.mp4", "question": "ok?", "options": NAMES, "answer": 0}]
    _write_world(tmp_path, rows)
    summary = _run(_config(tmp_path))
    info = summary.benchmarks["toy"]
    assert (info["failed_videos"], info["missing_videos"], info["samples_without_frames"]) == (1, 1, 5)
    assert summary.models[0].done == 6 + 2  # every sample's noframe + the good one's uniform and random


def test_summary_json_describes_every_run_sharing_the_folder(tmp_path: Path) -> None:
    _write_world(tmp_path)
    a = _run(_config(tmp_path))
    b = _run(_config(tmp_path, model=_BASE | {"name": "fake2"}))
    c = _run(_config(tmp_path))  # nothing new
    doc = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [r["run_id"] for r in doc["runs"]] == sorted([a.run_id, b.run_id, c.run_id])
    assert doc["store_predictions"] == {"fake": 9, "fake2": 9}
    assert doc["run_id"] == c.run_id and doc["models"][0]["done"] == 0


def test_rows_stored_meanwhile_by_another_writer_count_as_discarded_not_done(tmp_path: Path, monkeypatch) -> None:
    _write_world(tmp_path)
    first = _run(_config(tmp_path))
    import tempcore.run.store as store_mod

    real_missing = store_mod.RunStore.missing
    with RunStore.open(tmp_path / "run") as s:
        keys = list(s.stored_keys())
    # the run asks which keys are missing; another writer stores them right after it asked
    monkeypatch.setattr(store_mod.RunStore, "missing", lambda self, ks: [k for k in ks if k in set(keys)]
                        or real_missing(self, ks))
    second = _run(_config(tmp_path))
    assert second.models[0].done == 0 and second.models[0].discarded == 9
    assert first.models[0].done == 9


def test_damage_is_read_from_damage_or_the_truncation_flags() -> None:
    from types import SimpleNamespace

    from tempcore.run.runner import _damage_of

    assert _damage_of(SimpleNamespace(damage="garbled data at 4.1 s")) == "garbled data at 4.1 s"
    assert _damage_of(SimpleNamespace(truncated=True, error="moov atom cut")) == (
        "truncated: the decoder stopped early (moov atom cut)")
    assert _damage_of(SimpleNamespace(truncated_video=True)) == "truncated: the decoder stopped early"
    assert _damage_of(SimpleNamespace(truncated=False, damage=None)) is None


def test_progress_bars_reach_the_total(tmp_path: Path, capsys) -> None:
    _write_world(tmp_path)
    run(_config(tmp_path), progress=True, log=lambda _m: None, model_factory=FakeModel)
    err = capsys.readouterr().err
    assert "toy: frames" in err and "3/3" in err  # three videos probed
    assert "9/9" in err  # nine requests answered


def test_cli_stops_on_changed_fingerprints_and_recompute_replaces(tmp_path: Path, monkeypatch, capsys) -> None:
    import yaml

    from tempcore.cli import main

    _write_world(tmp_path)
    monkeypatch.setattr("tempcore.run.runner._default_factory", FakeModel)
    cfg = _config(tmp_path).to_dict()
    cfg.pop("source")
    cfg["lambda"] = cfg.pop("lam")
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["run", "--config", str(path), "--no-progress"]) == 0
    cfg["models"][0]["prompt_template"] = "letter_only"
    path.write_text(yaml.safe_dump(cfg))
    capsys.readouterr()
    assert main(["run", "--config", str(path), "--no-progress"]) != 0
    err = capsys.readouterr().err
    assert "model fake: prompt template changed (9 stored predictions)" in err and "--recompute" in err
    assert main(["run", "--config", str(path), "--no-progress", "--recompute", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["models"][0]["replaced"] == 9


def test_a_changed_chat_template_of_a_local_checkpoint_is_not_reused(tmp_path: Path) -> None:
    """Issue 9, identity of a prediction: "the chat template when known" is part of the model's
    fingerprint: a local checkpoint whose chat template is edited in place (same folder, same
    entry) must not reuse its stored answers."""
    _write_world(tmp_path)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    model = {"backend": "hf", "model": str(ckpt), "name": "fake"}
    assert _run(_config(tmp_path, model=model)).models[0].done == 9
    assert _run(_config(tmp_path, model=model)).models[0].stored_before == 9  # unchanged: reused
    (ckpt / "chat_template.jinja").write_text("<|user|>{% for m in messages %}{{ m.content }}{% endfor %}")
    with pytest.raises(RunError, match=r"model fake: chat template changed \(9 stored predictions\)"):
        _run(_config(tmp_path, model=model))
    assert _run(_config(tmp_path, model=model), recompute=True).models[0].replaced == 9
    # a template kept in tokenizer_config.json (older checkpoints) counts too
    (ckpt / "chat_template.jinja").unlink()
    (ckpt / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}))
    with pytest.raises(RunError, match=r"model fake: chat template changed"):
        _run(_config(tmp_path, model=model))


# --- a condition's strategy params change (the frames shown change under the same key) -------------


def _oracle(**params: Any) -> list[dict[str, Any]]:
    return [{"strategy": "oracle", "params": params}, {"strategy": "noframe"}]


def test_changed_oracle_stride_is_not_served_from_the_store(tmp_path: Path) -> None:
    """The oracle's ``stride`` is not part of the condition key: the same keys, other frames. A
    rerun must not hand back answers given for the old windows' frames."""
    _write_world(tmp_path)
    first = _run(_config(tmp_path, conditions=_oracle(stride=4)))
    before = _rows(tmp_path)
    oracle_rows = {k: r for k, r in before.items() if k[1].startswith("oracle")}
    assert first.models[0].done == len(before) and oracle_rows
    # the same store, another stride: windows 1.. start elsewhere (window 0 starts at 0 either way)
    FakeModel.calls.clear()
    with pytest.raises(RunError) as err:
        _run(_config(tmp_path, conditions=_oracle(stride=2)))
    msg = str(err.value)
    stale = [k for k, r in oracle_rows.items() if json.loads(r["frames"])["indices"][0] != 0]
    assert stale
    assert (f"model fake: {len(stale)} stored predictions of condition oracle were shown other frames "
            "(the condition's params changed?)") in msg
    assert "--recompute" in msg
    assert FakeModel.loads == 1 and not FakeModel.calls  # stopped before any call
    assert _rows(tmp_path) == before

    again = _run(_config(tmp_path, conditions=_oracle(stride=2)), recompute=True)
    assert again.models[0].replaced == len(stale)
    after = _rows(tmp_path)
    for key in stale:  # replaced: the frames of the new windows
        assert after[key]["run_id"] == again.run_id
        assert json.loads(after[key]["frames"])["indices"] != json.loads(before[key]["frames"])["indices"]
    for key in set(before) - set(stale):
        if key in after:
            assert after[key] == before[key]  # unchanged rows (window 0, noframe) kept as they were
    shown = {r.key: r for r in FakeModel.calls}
    for key in stale:  # what the model was shown is what the row says
        req = shown["|".join(("toy", key[0], key[1]))]
        assert list(req.timestamps) == json.loads(after[key]["frames"])["timestamps"]
    # and an identical rerun reuses everything
    third = _run(_config(tmp_path, conditions=_oracle(stride=2)))
    assert third.models[0].done == 0 and third.models[0].replaced == 0


def test_rows_without_a_record_of_what_they_were_shown_are_not_served(tmp_path: Path) -> None:
    """A row that records neither the frames it was shown nor its prompt (imported without them)
    cannot be checked against the plan, so it is not served (as a row without fingerprints)."""
    _write_world(tmp_path)
    cfg = _config(tmp_path)
    assert _run(cfg).models[0].done == 9
    assert _run(cfg).models[0].stored_before == 9  # identical rerun: every row reused
    con = sqlite3.connect(tmp_path / "run" / "store.sqlite")
    con.execute("UPDATE predictions SET frames = NULL WHERE condition LIKE 'uniform%' AND sample_id = 'q1'")
    con.execute("UPDATE predictions SET prompt_hash = '' WHERE condition LIKE 'noframe%' AND sample_id = 'q2'")
    con.commit()
    con.close()
    with pytest.raises(RunError) as err:
        _run(cfg)
    for label in ("uniform", "noframe"):
        assert (f"model fake: 1 stored prediction of condition {label} was stored without a record of the frames "
                "shown or the prompt asked (imported?): it cannot be checked") in str(err.value)
    assert "2 stored predictions" in str(err.value)
    assert _run(cfg, recompute=True).models[0].replaced == 2


def test_a_lowered_max_windows_flags_only_the_windows_that_moved(tmp_path: Path) -> None:
    """``max_windows`` lowered: the oracle takes evenly spaced windows of the stride's, so window i
    of the new plan is another window than the stored window i, except the first. Rows of windows
    no longer planned are not this run's: they are neither checked nor replaced."""
    _write_world(tmp_path)
    _run(_config(tmp_path, conditions=_oracle()))  # K = 4, stride K: 5, 8 and 10 windows
    assert _run(_config(tmp_path, conditions=_oracle())).models[0].stored_before == 26  # 23 windows + 3 noframe
    # max_windows 3: windows 0, 1, 2 of each sample start at (0, 8, 16), (0, 16, 26), (0, 20, 36): two moved each
    with pytest.raises(RunError, match=r"model fake: 6 stored predictions of condition oracle were shown other "
                                       r"frames \(the condition's params changed\?\)"):
        _run(_config(tmp_path, conditions=_oracle(max_windows=3)))
    again = _run(_config(tmp_path, conditions=_oracle(max_windows=3)), recompute=True)
    assert again.models[0].replaced == 6 and again.models[0].stored_before == 6  # window 0 and noframe kept
    starts = {k: json.loads(r["frames"])["indices"][0] for k, r in _rows(tmp_path).items() if k[1].startswith("oracle")}
    assert {(sid, Condition.from_key(c).window): v for (sid, c), v in starts.items()
            if (Condition.from_key(c).window or 0) < 3} == {
        ("q0", 0): 0, ("q0", 1): 8, ("q0", 2): 16, ("q1", 0): 0, ("q1", 1): 16, ("q1", 2): 26,
        ("q2", 0): 0, ("q2", 1): 20, ("q2", 2): 36}


def test_a_store_rebuilt_from_its_exported_table_is_reused_whole(tmp_path: Path) -> None:
    """Export the tidy table, import it into an empty store (what merging shards does): the rows
    keep the frames they were shown, so a rerun on the new store checks and reuses every one."""
    from tempcore.tidy.table import import_table, read_predictions, table_to_predictions

    _write_world(tmp_path)
    cfg = _config(tmp_path, conditions=_oracle(stride=2))
    first = _run(cfg)
    assert first.predictions_file is not None
    preds = table_to_predictions(read_predictions(first.predictions_file))
    assert len(preds) == first.models[0].done and all(p.frames is not None for p in preds)
    other = dataclasses.replace(cfg, out=str(tmp_path / "merged"))
    with RunStore.open(tmp_path / "merged") as store:
        assert import_table(first.predictions_file, store)[1:] == (len(preds), len(preds))  # `tempcore import table`
    FakeModel.calls.clear()
    again = _run(other)
    assert again.models[0].stored_before == len(preds) and again.models[0].done == 0 and not FakeModel.calls
