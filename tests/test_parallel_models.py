"""Several models answered at once by the local executor (``parallel_models``, issue 18): a model's
batches, and so its answers, are the same as one model after the other (batches are formed within
the job's chunks either way); threads whose own jobs are done join the longest one; a failure in
one model stops the others and is raised, and what was stored stays stored (a rerun resumes)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from helpers.demo_runs import demo_run_config, table_rows
from tempcore.models import load_model
from tempcore.run.config import ConfigError, RunConfig
from tempcore.run.planning import CHUNK_BATCHES, answer_chunks
from tempcore.run.runner import run

N_QUESTIONS = 6
MODELS = ("zoo-mean", "zoo-order", "zoo-idefics3")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tempcore.world import generate_world

    return generate_world(tmp_path_factory.mktemp("world") / "world", N_QUESTIONS, 11)


def _config(world: Any, out: Path, **changes: Any) -> RunConfig:
    return demo_run_config(world, out, MODELS, source="test_parallel_models", **changes)


class _Recorder:
    """A loaded model that records each call's request keys and the thread that made it; with
    ``fail_at``, its call number ``fail_at`` raises."""

    def __init__(self, model: Any, calls: list[tuple[str, str, tuple[str, ...]]], fail_at: int | None = None) -> None:
        self._model, self._calls, self._fail_at = model, calls, fail_at

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def answer(self, requests: Any, method: str = "generate") -> Any:
        self._calls.append((self._model.name, threading.current_thread().name, tuple(r.key for r in requests)))
        if self._fail_at is not None and sum(c[0] == self._model.name for c in self._calls) == self._fail_at:
            raise RuntimeError(f"{self._model.name}: injected failure")
        return self._model.answer(requests, method=method)


def _run(cfg: RunConfig, **factory: Any) -> tuple[list[dict[str, Any]], list[tuple[str, str, tuple[str, ...]]]]:
    calls: list[tuple[str, str, tuple[str, ...]]] = []
    fail = factory.get("fail")

    def make(spec: Any) -> Any:
        model = load_model(spec)
        return _Recorder(model, calls, fail[1] if fail and fail[0] == model.name else None)

    summary = run(cfg, progress=False, log=lambda _m: None, model_factory=make)
    return table_rows(summary.predictions_file), calls


def _batches(calls: list[tuple[str, str, tuple[str, ...]]]) -> set[tuple[str, frozenset[str]]]:
    return {(model, frozenset(keys)) for model, _thread, keys in calls}


@pytest.mark.usefixtures("one_thread")
def test_two_threads_give_the_same_batches_and_answers_as_one(world: Any, tmp_path: Path) -> None:
    one, calls1 = _run(_config(world, tmp_path / "one", parallel_models=1))
    two, calls2 = _run(_config(world, tmp_path / "two", parallel_models=2))
    assert len(one) == len(MODELS) * N_QUESTIONS * 22  # every model answered every demo condition
    # every batch is the same set of requests (so every answer is the same, to the last bit)
    assert _batches(calls2) == _batches(calls1)
    assert two == one
    assert {t for _m, t, _k in calls1} == {threading.current_thread().name}
    assert len({t for _m, t, _k in calls2}) == 2
    # the longest job is shared at the end: some model was answered by both threads
    threads_of: dict[str, set[str]] = {}
    for model, thread, _keys in calls2:
        threads_of.setdefault(model, set()).add(thread)
    assert max(len(t) for t in threads_of.values()) == 2


@pytest.mark.usefixtures("one_thread")
def test_a_failing_model_stops_the_run_and_a_rerun_resumes(world: Any, tmp_path: Path) -> None:
    cfg = _config(world, tmp_path / "run", parallel_models=2)
    with pytest.raises(RuntimeError, match="zoo-order: injected failure"):
        _run(cfg, fail=("zoo-order", 3))
    from tempcore.run.store import RunStore

    with RunStore(Path(cfg.out) / "store.sqlite") as store:
        stored = {m: n for (m,), n in store.count_by("model").items()}
    assert sum(stored.values()) < len(MODELS) * N_QUESTIONS * 22  # stopped early, kept what it had
    rows, calls = _run(cfg)  # the rerun answers only what is missing
    assert len(rows) == len(MODELS) * N_QUESTIONS * 22
    asked = sum(len(keys) for _m, _t, keys in calls)
    assert asked == len(MODELS) * N_QUESTIONS * 22 - sum(stored.values())
    reference, _ = _run(_config(world, tmp_path / "ref", parallel_models=1))
    assert rows == reference  # nothing lost, nothing twice, the same answers


def test_chunks_are_whole_units_of_at_least_the_chunk_size() -> None:
    units = [[f"u{i}-{j}" for j in range(n)] for i, n in enumerate([3, 5, 2, 7, 1, 1, 4])]
    chunks = answer_chunks(units, request_batch=1)  # type: ignore[arg-type]
    size = CHUNK_BATCHES
    assert [u for c in chunks for u in c] == units  # every unit once, in order
    assert all(sum(len(u) for u in c) >= size for c in chunks[:-1])
    assert all(sum(len(u) for u in c[:-1]) < size for c in chunks)  # closed as soon as it is full
    assert answer_chunks([], 4) == []


@pytest.mark.parametrize("value", [0, -1, "2", True, 1.5])
def test_parallel_models_must_be_a_positive_integer(world: Any, tmp_path: Path, value: Any) -> None:
    with pytest.raises(ConfigError, match="parallel_models must be an integer >= 1"):
        _config(world, tmp_path / "x", parallel_models=value)


def test_parallel_models_is_the_local_executors(world: Any, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="use ray.concurrent_models"):
        _config(world, tmp_path / "x", parallel_models=2, executor="ray")
