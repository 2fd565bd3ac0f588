"""Models answered in worker processes (``model_processes: true``, :mod:`tempcore.models.hosted`,
issue 18): the same answers, to the last bit, as in the run's own process; a worker per answering
thread; a worker that dies stops the run naming the model, keeps what was committed, and a rerun
resumes; errors from a worker come back named; nothing a model prints breaks the pipe; no worker
outlives its run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.demo_runs import demo_run_config, table_rows
from helpers.worker_models import DIE_ENV, PIDS_ENV, failing_factory, recording_factory
from tempcore.models import ModelError, load_model
from tempcore.models.base import ModelRequest
from tempcore.models.hosted import ModelHost
from tempcore.run.config import ConfigError, RunConfig
from tempcore.run.runner import run

N_QUESTIONS = 6
MODELS = ("zoo-mean", "zoo-order", "zoo-idefics3")
TOTAL = len(MODELS) * N_QUESTIONS * 22  # every demo condition


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tempcore.world import generate_world

    return generate_world(tmp_path_factory.mktemp("world") / "world", N_QUESTIONS, 11)


def _config(world: Any, out: Path, **changes: Any) -> RunConfig:
    return demo_run_config(world, out, MODELS, source="test_model_processes", **changes)


def _rows(summary: Any) -> list[dict[str, Any]]:
    return table_rows(summary.predictions_file)


def _quiet(cfg: RunConfig, **kwargs: Any) -> Any:
    return run(cfg, progress=False, log=lambda _m: None, **kwargs)


@pytest.fixture(scope="module")
def reference(world: Any, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The table of one model after the other, in this process (one torch thread, as the workers)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = tmp_path_factory.mktemp("ref") / "run"
        return _rows(_quiet(_config(world, out, parallel_models=1, model_processes=False)))
    finally:
        torch.set_num_threads(before)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _pids(path: Path) -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for line in path.read_text().splitlines():
        pid, name = line.split()
        found.setdefault(int(pid), set()).add(name)
    return found


@pytest.fixture
def worker_run(world: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[RunConfig, Path]:
    """A run configuration answering in two worker processes, and the file the workers note their pids in."""
    pids = tmp_path / "pids.txt"
    monkeypatch.setenv(PIDS_ENV, str(pids))
    return _config(world, tmp_path / "run", parallel_models=2, model_processes=True), pids


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_workers_answer_exactly_as_this_process_and_end_with_the_run(
    worker_run: tuple[RunConfig, Path], reference: list[dict[str, Any]],
) -> None:
    cfg, pids = worker_run
    rows = _rows(_quiet(cfg, model_factory=recording_factory))
    assert len(rows) == TOTAL
    assert rows == reference  # the same answers and option probabilities, to the last bit
    loaded = _pids(pids)
    assert os.getpid() not in loaded and len(loaded) == 2  # one worker per answering thread
    assert set().union(*loaded.values()) == set(MODELS)
    assert not any(_alive(pid) for pid in loaded)  # the run ended its workers


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_a_worker_that_dies_stops_the_run_naming_the_model_and_a_rerun_resumes(
    worker_run: tuple[RunConfig, Path], reference: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg, pids = worker_run
    monkeypatch.setenv(DIE_ENV, "zoo-order:3")
    with pytest.raises(ModelError, match=r"model zoo-order: its worker process \(pid \d+\) exited with status 7"):
        _quiet(cfg, model_factory=recording_factory)
    assert not any(_alive(pid) for pid in _pids(pids))  # the other worker was ended too
    from tempcore.run.store import RunStore

    with RunStore(Path(cfg.out) / "store.sqlite") as store:
        stored = sum(n for (_m,), n in store.count_by("model").items())
        failures = store.failures()
    assert 0 < stored < TOTAL  # stopped early, kept what was committed
    assert failures == []  # the crash is not recorded against any item
    monkeypatch.delenv(DIE_ENV)
    summary = _quiet(cfg, model_factory=recording_factory)  # the rerun answers only what is missing
    assert sum(m.done for m in summary.models) == TOTAL - stored
    assert _rows(summary) == reference  # nothing lost, nothing twice, the same answers


def test_a_factory_that_cannot_be_sent_to_a_worker_is_a_named_error(world: Any, tmp_path: Path) -> None:
    cfg = _config(world, tmp_path / "run", parallel_models=2, model_processes=True)
    with pytest.raises(ModelError, match="model_processes loads models in worker processes.*cannot be sent"):
        _quiet(cfg, model_factory=lambda spec: load_model(spec))


def _requests(n: int) -> list[ModelRequest]:
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 255, (48, 48, 3), dtype=np.uint8) for _ in range(8)]
    return [ModelRequest(images=tuple(frames[i % 3:i % 3 + 4]), prompt=f"Which colour? {i}\nA. red\nB. blue",
                         options=("red", "blue")) for i in range(n)]


@pytest.mark.usefixtures("one_thread")
def test_a_hosted_model_prints_freely_and_reports_errors_by_name(tmp_path: Path) -> None:
    from tempcore.world.answerers.model import zoo_specs

    spec = next(s for s in zoo_specs() if s.display_name == "zoo-attn")
    with ModelHost(warm=["zoo"]) as host:
        hosted = host.load(spec, recording_factory)  # its answer prints a line to standard output
        assert (hosted.name, hosted.supports_option_scores) == ("zoo-attn", load_model(spec).supports_option_scores)
        here = load_model(spec).answer(_requests(5), method="generate")
        there = hosted.answer(_requests(5), method="generate")
        assert [(r.text, r.option_logprobs) for r in there] == [(r.text, r.option_logprobs) for r in here]
        # a load error that pickles comes back as itself, the model named
        from tempcore.world.hf_answerer import hf_spec

        with pytest.raises(ModelError, match="model zoo-idefics3: cannot read config.json"):
            host.load(hf_spec(tmp_path / "nowhere"), load_model)
        # one that does not pickle comes back as its description, with the worker's traceback
        with pytest.raises(ModelError, match=r"Unpicklable: no/model\n\(in the model's worker process\)"):
            host.load(spec, failing_factory)
        hosted.close()
        # the worker is still there for the next model after errors
        again = host.load(spec, load_model)
        assert [r.text for r in again.answer(_requests(5))] == [r.text for r in here]
        pid = host.pid
    assert pid is not None and not _alive(pid)


@pytest.mark.parametrize("value", [1, "yes", None])
def test_model_processes_must_be_true_or_false(world: Any, tmp_path: Path, value: Any) -> None:
    with pytest.raises(ConfigError, match="model_processes must be true or false"):
        _config(world, tmp_path / "x", model_processes=value)


def test_model_processes_is_the_local_executors(world: Any, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="model_processes is the local executor's"):
        _config(world, tmp_path / "x", parallel_models=1, model_processes=True, executor="ray")
