"""`tempcore demo --visual`: visual answer options built from the synthetic world's planted events,
answered by the zoo through the run store, checked against the planted windows and scored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.mark.timeout(300)
def test_demo_visual_recovers_the_planted_windows_and_scores_the_gap(tmp_path: Path) -> None:
    from tempcore.demo import HELD_OUT_SEED, demo_visual, format_visual
    from tempcore.world import generate_world
    from tempcore.world.visual import scene_events

    world = generate_world(tmp_path / "world", 24, HELD_OUT_SEED)
    models = [{"backend": "zoo", "model": "zoo-text"}, {"backend": "zoo", "model": "zoo-max"}]
    result = demo_visual(world, tmp_path, progress=False, log=lambda _m: None, n_boot=1000, models=models)
    two_events = sum(len(scene_events(s)) >= 2 for s in world.scenes)
    assert two_events > 0
    # each two-event video gives one "after" and one "before" question (balanced, both kept)
    assert result["tfr"]["questions"] == 2 * two_events and result["tfr"]["rows"] == 4 * two_events
    assert result["vfp"]["questions"] == len(world.scenes) == result["videos"]
    planted = result["planted"]
    n_tfr, n_vfp = result["tfr"]["questions"], result["vfp"]["questions"]
    assert planted["tfr"] == {"questions": n_tfr, "anchor_planted": n_tfr, "correct_planted": n_tfr,
                              "correct_in_window": n_tfr, "fallback_anchor": n_tfr}
    assert planted["vfp"] == {"questions": n_vfp, "correct_is_future": n_vfp}
    groups = {(g["model"], g["task"], g["options"]): g for g in result["groups"]}
    assert set(groups) == {(m, t, o) for m in ("zoo-text", "zoo-max")
                           for t, o in (("tfr", "visual"), ("tfr", "text"), ("vfp", "visual"))}
    for (_m, task, _o), g in groups.items():
        assert g["n"] == (n_tfr if task == "tfr" else n_vfp) and g["chance"] == 0.25
        assert 0.0 <= g["accuracy"] <= 1.0 and g["wilson"][0] <= g["accuracy"] <= g["wilson"][1]
        assert g["perplexity"] is not None and 1.0 <= g["perplexity"] <= 4.0
    assert sorted(g["model"] for g in result["gaps"]) == ["zoo-max", "zoo-text"]
    for gap in result["gaps"]:
        assert gap["task"] == "tfr" and gap["n_pairs"] == n_tfr
        assert gap["gap"] == pytest.approx(gap["visual"] - gap["text"])
    text = format_visual(result)
    assert f"correct option inside the planted window {n_tfr}/{n_tfr}" in text and "gap zoo-max tfr" in text
    # through the run store: a second pass answers nothing again
    again = demo_visual(world, tmp_path, progress=False, log=lambda _m: None, n_boot=1000, models=models)
    summary = json.loads((Path(again["run"]) / "summary.json").read_text())
    assert [m["done"] for m in summary["models"]] == [0, 0]
    assert all(m["stored_before"] == m["planned"] > 0 for m in summary["models"])
    assert again["groups"] == result["groups"]


@pytest.mark.timeout(400)
def test_demo_cli_visual_flag_adds_the_visual_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tempcore.cli import main

    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--questions", "12", "--no-progress", "--json", "--visual"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    # the demo's other keys are test_demo's (which also checks that without --visual there is no 'visual')
    assert {"scoring", "mba", "report", "subset", "visual"} <= set(result)
    v = result["visual"]
    assert v["planted"]["tfr"]["correct_in_window"] == v["tfr"]["questions"]
    assert v["planted"]["vfp"]["correct_is_future"] == v["vfp"]["questions"] > 0
    assert (out / "visual" / "run" / "store.sqlite").exists()
