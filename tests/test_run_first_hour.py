"""Issue 30 (the first hour), item 8: what a resumed run's summary, a dry run and an unreachable hub say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tempcore.run.config import RunConfig
from tempcore.run.runner import run
from tempcore.run.store import RunStore


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tempcore.world import generate_world

    return generate_world(tmp_path_factory.mktemp("world") / "world", 8, 3)


def _config(world: Any, out: Path) -> RunConfig:
    from tempcore.demo import demo_config

    raw = dict(demo_config(world, out, cache=out.parent / "cache").to_dict())
    raw.pop("source", None)
    raw["models"] = [m for m in raw["models"] if m["model"] == "zoo-mean"]
    raw["conditions"] = [{"strategy": "uniform"}, {"strategy": "noframe"}]
    return RunConfig.from_dict(raw, source="test_run_first_hour")


def test_a_resumed_runs_summary_gives_the_runs_accuracy_and_labels_the_invocations(world: Any,
                                                                                   tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = run(_config(world, out), limit=3, progress=False, log=lambda _m: None)
    lines: list[str] = []
    again = run(_config(world, out), progress=False, log=lines.append)
    (m,) = again.models
    assert m.stored_before == first.models[0].done > 0 and m.done > 0
    with RunStore.open(again.store) as store:
        rows = [p for p in store.predictions() if p.model == "zoo-mean"]
    assert m.run_rows == len(rows) == m.done + m.stored_before
    run_accuracy = sum(p.correct for p in rows) / len(rows)
    assert m.accuracy == pytest.approx(run_accuracy)
    line = next(x for x in lines if x.strip().startswith("zoo-mean:"))
    assert f"accuracy {run_accuracy:.3f} over the run's {len(rows)} stored rows" in line
    assert f"(this invocation's {m.done}: {m.correct / m.done:.3f})" in line


def test_the_dry_run_says_that_zoo_members_score_the_options(world: Any, tmp_path: Path) -> None:
    lines: list[str] = []
    run(_config(world, tmp_path / "dry"), dry_run=True, progress=False, log=lines.append)
    (line,) = [x for x in lines if x.strip().startswith("model zoo-mean:")]
    # the zoo backend scores the options whatever the entry's method (the default, generate)
    assert "(zoo, option_scores: scores the options, whatever the entry's method (generate))" in line, line
    assert "(zoo, generate)" not in line


def test_a_hub_id_that_cannot_be_had_fails_at_once_saying_the_hub_is_unreachable(monkeypatch: Any,
                                                                                tmp_path: Path) -> None:
    import time

    from tempcore.encoders import load_encoder
    from tempcore.encoders.hf import EncoderLoadError
    from tempcore.models import ModelError, hub, load_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(ModelError) as model_error:
        load_model({"backend": "hf-text", "model": "tempcore-test/no-such-model"})
    with pytest.raises(EncoderLoadError) as encoder_error:
        load_encoder("tempcore-test/no-such-encoder")
    assert time.perf_counter() - start < 10
    for exc, key in ((model_error.value, "model"), (encoder_error.value, "encoder")):
        text = str(exc)
        assert "hub is unreachable (HF_HUB_OFFLINE is set)" in text, text
        assert f"point `{key}:` at a local folder" in text and "--local-dir" in text
    # not offline, but no connection to the hub's host: the same advice, the reason named
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setattr(hub, "_reachable", {})
    problem = hub.hub_problem("model m", "tempcore-test/no-such-model")
    assert problem is not None and "no connection to 127.0.0.1" in problem
    # a local folder, and a name that is no hub id, are never checked
    assert hub.hub_problem("model m", str(tmp_path)) is None
    assert not hub.looks_like_hub_id("./a/b") and not hub.looks_like_hub_id("siglip2")
