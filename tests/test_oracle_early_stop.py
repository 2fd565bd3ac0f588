"""The early-stopped window oracle (``params: {early_stop: true}``, issue 18).

Each window of an early-stopped oracle is asked in decreasing mean frame score (ties by position)
and a (sample, model, rotation) is asked no more once one is right. Checked here on real runs of a
small synthetic world with two zoo models: the oracle correctness and the uniform-vs-oracle table
are the same with and without it, it makes fewer model calls (counted at the models), the stored
windows are the prefix of the asking order up to the first correct one, a run stopped mid-wave and
rerun ends with the rows of an uninterrupted one, Table 7 refuses the early-stopped rows, and the
dry run prints the calls either way.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tempcore.records import Condition, FrameSet, Sample
from tempcore.run.config import ConditionEntry, ConfigError, RunConfig, check_config, early_stop_mode
from tempcore.selection.windows import window_order
from test_ray import local_ray  # noqa: F401  (the local Ray fixture: a missing ray fails, never skips)

QUESTIONS = 8
K = 8
WINDOWS = 8
MODELS = ("zoo-mean", "zoo-text")


# --- configuration and the pure parts -----------------------------------------------------------------


def _cfg(tmp_path: Path, conditions: list[Any]) -> RunConfig:
    ann = tmp_path / "ann.json"
    ann.write_text("[]")
    return RunConfig.from_dict({
        "out": str(tmp_path / "out"), "benchmarks": [{"name": "generic", "annotations": str(ann)}],
        "models": [{"backend": "zoo", "model": "zoo-mean"}], "conditions": conditions,
    })


def test_early_stop_values_and_the_condition_key(tmp_path: Path) -> None:
    plain = _cfg(tmp_path, [{"strategy": "oracle", "params": {"stride": 8}}])
    # the key of the oracle without early stop is unchanged (existing stores keep matching)
    assert plain.conditions[0].condition(plain).key == "oracle|mode=none|k=32|fps=10|seed=0"
    assert early_stop_mode(plain.conditions[0]) is None
    for value, mode in ((False, None), (True, "qa"), ("qa", "qa"), ("q", "q")):
        cfg = _cfg(tmp_path, [{"strategy": "oracle", "params": {"early_stop": value}}])
        assert early_stop_mode(cfg.conditions[0]) == mode
        key = cfg.conditions[0].condition(cfg).key
        assert key == ("oracle|mode=none|k=32|fps=10|seed=0" if mode is None else "oracle|mode=none|k=32|fps=10|seed=0|variant=early_stop")
        assert cfg.needs_encoder is (mode is not None)  # the windows are ordered by frame scores
    assert Condition.from_key("oracle|k=32|window=3|fps=10|seed=0|variant=early_stop").variant == "early_stop"


@pytest.mark.parametrize(("condition", "message"), [
    ({"strategy": "oracle", "params": {"early_stop": "yes"}}, "early_stop must be true, false, q or qa, not 'yes'"),
    ({"strategy": "oracle", "params": {"early_stop": 1}}, "early_stop must be true, false, q or qa, not 1"),
    ({"strategy": "uniform", "params": {"early_stop": True}}, "early_stop is a parameter of the oracle only"),
])
def test_a_bad_early_stop_is_reported_by_the_config_check(tmp_path: Path, condition: dict[str, Any],
                                                         message: str) -> None:
    ann = tmp_path / "ann.json"
    ann.write_text("[]")
    cfg = RunConfig(out=str(tmp_path), benchmarks=(), models=({"backend": "zoo", "model": "zoo-mean"},),
                    conditions=(ConditionEntry(**condition),), source="run.yaml")
    with pytest.raises(ConfigError, match="conditions\\[0\\]: condition .*" + message.replace("(", r"\(")):
        check_config(cfg)


def test_window_order_by_mean_score_then_position() -> None:
    windows = [FrameSet((0, 1, 2, 3), (0, .1, .2, .3), 4), FrameSet((4, 5, 6, 7), (.4, .5, .6, .7), 4),
               FrameSet((6, 7, 8, 9), (.6, .7, .8, .9), 4)]
    scores = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1], dtype=float)
    assert window_order(windows, scores) == [1, 2, 0]  # 1 and 2 tie at mean 1: by position
    assert window_order(windows, scores[::-1].copy()) == [0, 1, 2]  # means 1, 0.5, 0
    assert window_order(windows, None) == [0, 1, 2]  # no scores in the mode: position order


def test_next_wave_from_what_is_stored() -> None:
    from tempcore.run.planning import WorkItem, next_oracle_wave, oracle_chains

    s = Sample("b", "s1", "v.mp4", "q?", ("x", "y"), 0)
    base = Condition("oracle", k=4, variant="early_stop")
    fs = FrameSet((0,), (0.0,), 4)
    items = [WorkItem(s, base.replace(window=w), fs, s.options, (0, 1)) for w in (2, 0, 1)]  # asking order
    items.append(WorkItem(s, Condition("uniform", k=4), fs, s.options, (0, 1)))
    chains = oracle_chains(items)
    assert len(chains) == 1 and [it.condition.window for it in chains[0].items] == [2, 0, 1]
    key = {w: items[i].key("m") for i, w in enumerate((2, 0, 1))}
    assert [it.condition.window for it in next_oracle_wave(chains, "m", {})] == [2]
    assert [it.condition.window for it in next_oracle_wave(chains, "m", {key[2]: False})] == [0]
    assert next_oracle_wave(chains, "m", {key[2]: False, key[0]: True}) == []  # solved: no more windows
    # window 0 was asked in this run and failed (no row): passed over, the chain goes on
    assert [it.condition.window for it in next_oracle_wave(chains, "m", {key[2]: False}, {key[0]})] == [1]
    assert next_oracle_wave(chains, "m", {key[2]: False, key[0]: False, key[1]: False}) == []  # all wrong
    assert [it.condition.window for it in next_oracle_wave(chains, "other", {key[2]: True})] == [2]  # per model


# --- runs of a small world ------------------------------------------------------------------------------


class Counting:
    """A model factory counting the requests each loaded model answers per strategy; with ``stop_after``
    it raises once that many oracle requests were answered (a run stopped in the middle of a wave)."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.calls: Counter[str] = Counter()
        self.stop_after = stop_after

    def __call__(self, spec: Any) -> Any:
        from tempcore.models import load_model

        return _Counted(load_model(spec), self)


class Stopped(RuntimeError):
    pass


class _Counted:
    def __init__(self, model: Any, counter: Counting) -> None:
        self._model, self._counter = model, counter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def answer(self, requests: Sequence[Any], **kwargs: Any) -> Any:
        c = self._counter
        if c.stop_after is not None and c.calls["oracle"] >= c.stop_after:
            raise Stopped("stopped in the middle of a wave")
        for r in requests:
            c.calls[str(r.key).split("|")[2]] += 1
        return self._model.answer(requests, **kwargs)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tempcore.world import generate_world

    return generate_world(tmp_path_factory.mktemp("world"), QUESTIONS, seed=11)


def _world_cfg(world: Any, out: Path, early: Any, cache: Path) -> RunConfig:
    from tempcore.demo import demo_config

    base: RunConfig = demo_config(world, out, k=K, oracle_windows=WINDOWS, cache=cache)
    return dataclasses.replace(
        base, models=tuple(m for m in base.models if m["model"] in MODELS),
        conditions=(ConditionEntry("uniform"),
                    ConditionEntry("oracle", params={"stride": K, "max_windows": WINDOWS, "early_stop": early})))


def _run(world: Any, out: Path, early: Any, cache: Path, counter: Counting) -> Any:
    import torch

    from tempcore.run.runner import run

    torch.set_num_threads(1)
    return run(_world_cfg(world, out, early, cache), progress=False, log=lambda _l: None, model_factory=counter)


def _rows(out: Path) -> dict[tuple[str, str, str, str], int]:
    from tempcore.run.store import RunStore

    with RunStore.open(out / "run" / "store.sqlite", create=False) as store:
        return {p.key: p.correct for p in store.predictions()}


@pytest.fixture(scope="module")
def runs(world: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("runs")
    out: dict[str, Any] = {}
    for name, early in (("full", False), ("early", True)):
        counter = Counting()
        summary = _run(world, root / name, early, root / "cache", counter)
        out[name] = {"summary": summary, "calls": counter.calls, "dir": root / name}
    out["root"] = root
    return out


def _table(run: dict[str, Any]) -> Any:
    from tempcore.tidy.table import read_predictions

    return read_predictions(run["summary"].predictions_file)


def _oracle_cells(table: Any) -> dict[tuple[str, str], float]:
    from tempcore.diagnostics.compare import ConditionQuery, condition_matrix
    from tempcore.diagnostics.table import EncodedPredictions

    enc = EncodedPredictions.from_table(table)
    m = condition_matrix(enc, ConditionQuery("oracle"))
    return {(str(enc.sample_id[i]), str(enc.models[j])): float(m[i, j])
            for i in range(m.shape[0]) for j in range(m.shape[1])}


def test_same_oracle_correctness_and_uniform_vs_oracle_with_fewer_calls(runs: dict[str, Any]) -> None:
    from tempcore.diagnostics.analyses import uniform_vs_oracle

    full, early = _table(runs["full"]), _table(runs["early"])
    cells = _oracle_cells(full)
    assert len(cells) == QUESTIONS * len(MODELS) and not any(np.isnan(v) for v in cells.values())
    assert 0 < sum(cells.values()) < len(cells)  # some solved, some not: both ways of ending a chain are met
    assert _oracle_cells(early) == cells
    assert uniform_vs_oracle(early, n_boot=100).rows == uniform_vs_oracle(full, n_boot=100).rows
    # the uniform condition is answered the same; the oracle is asked fewer windows
    assert runs["early"]["calls"]["uniform"] == runs["full"]["calls"]["uniform"] == QUESTIONS * len(MODELS)
    n_full, n_early = runs["full"]["calls"]["oracle"], runs["early"]["calls"]["oracle"]
    assert n_full == full.num_rows - QUESTIONS * len(MODELS)  # every window, once
    assert n_early < n_full
    # every early call is a stored row: the calls made are exactly the windows stored
    assert n_early == early.num_rows - QUESTIONS * len(MODELS)
    stats = runs["early"]["summary"].oracle_early_stop
    assert sum(st["asked"] for st in stats.values()) == n_early
    assert sum(st["solved"] for st in stats.values()) == sum(cells.values())


def test_stored_windows_are_the_asking_order_up_to_the_first_correct(world: Any, runs: dict[str, Any]) -> None:
    full, early = _rows(runs["full"]["dir"]), _rows(runs["early"]["dir"])
    scores = _window_means(world, _table(runs["full"]), runs["root"] / "cache")
    chains: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for (_b, sid, model, cond), correct in full.items():
        c = Condition.from_key(cond)
        if c.strategy == "oracle":
            assert c.window is not None
            chains.setdefault((sid, model), []).append((c.window, correct))
    for (sid, model), windows in chains.items():
        order = sorted(windows, key=lambda wc: (-scores[(sid, wc[0])], wc[0]))
        expected = []
        for w, correct in order:
            expected.append(w)
            if correct:
                break
        got = sorted(Condition.from_key(cond).window or 0 for (b, s, m, cond) in early
                     if s == sid and m == model and cond.startswith("oracle|"))
        assert got == sorted(expected), (sid, model)
        for w in expected:  # the same answers: each early row is the full run's row of that window
            key = next(k for k in full if k[1] == sid and k[2] == model and k[3].startswith("oracle|")
                       and Condition.from_key(k[3]).window == w)
            early_key = (key[0], key[1], key[2], key[3] + "|variant=early_stop")
            assert early[early_key] == full[key]


def _window_means(world: Any, early_table: Any, cache: Path) -> dict[tuple[str, int], float]:
    """(sample, window) -> mean QA-mode Eq. 1 score of the window's frames (as stored), from the
    scoring module directly (not through the planner's ordering code)."""
    import json

    from tempcore.demo import WORLD_ENCODER
    from tempcore.encoders import load_encoder
    from tempcore.encoders.cache import EmbeddingCache
    from tempcore.run.frame_scoring import FrameScores, score_samples

    enc = load_encoder(WORLD_ENCODER, device="cpu")
    scores: dict[str, np.ndarray] = {}
    for r in score_samples(list(world.samples()), enc, ["qa"], fps=world.config.fps, cache=EmbeddingCache(cache),
                           video_root=str(world.root)):
        assert isinstance(r, FrameScores), r  # every world video scores
        scores[r.sample_id] = np.asarray(r.s)
    means: dict[tuple[str, int], float] = {}
    for r in early_table.select(["sample_id", "condition", "frame_indices"]).to_pylist():
        if r["condition"].startswith("oracle|"):
            w = Condition.from_key(r["condition"]).window
            assert w is not None
            means[(r["sample_id"], w)] = float(np.mean(scores[r["sample_id"]][json.loads(r["frame_indices"])]))
    return means


def test_a_run_stopped_mid_wave_resumes_to_the_same_rows(world: Any, runs: dict[str, Any], tmp_path: Path) -> None:
    n_early = runs["early"]["calls"]["oracle"]
    stopped = Counting(stop_after=n_early // 2)  # stops the run in the middle of the oracle's waves
    with pytest.raises(Stopped):
        _run(world, tmp_path / "resumed", True, runs["root"] / "cache", stopped)
    partial = _rows(tmp_path / "resumed")
    final = _rows(runs["early"]["dir"])
    assert 0 < len(partial) < len(final) and all(final[k] == v for k, v in partial.items())
    again = Counting()
    _run(world, tmp_path / "resumed", True, runs["root"] / "cache", again)
    assert _rows(tmp_path / "resumed") == final
    # the rerun asks only what the stopped run had not stored
    assert again.calls["oracle"] + again.calls["uniform"] == len(final) - len(partial)


def test_a_complete_early_stopped_store_is_reused_whole(world: Any, runs: dict[str, Any], tmp_path: Path) -> None:
    """The early-stopped chains answered only some windows: the identity check compares the stored
    ones (their frames and prompts) with the plan and flags none; the windows never asked are not
    stored rows, and a rerun asks nothing."""
    import shutil

    shutil.copytree(runs["early"]["dir"], tmp_path / "again")
    before = _rows(tmp_path / "again")
    again = Counting()
    summary = _run(world, tmp_path / "again", True, runs["root"] / "cache", again)
    assert sum(again.calls.values()) == 0 and _rows(tmp_path / "again") == before
    assert all(m.replaced == 0 and m.done == 0 for m in summary.models)


def test_table7_needs_every_window(runs: dict[str, Any]) -> None:
    from tempcore.diagnostics.compare import AnalysisError
    from tempcore.diagnostics.oracle_gaps import correct_window_centroids, early_stopped_oracle_rows
    from tempcore.diagnostics.table import EncodedPredictions
    from tempcore.report.catalogue import ANALYSES, Context, Facts

    full, early = _table(runs["full"]), _table(runs["early"])
    with pytest.raises(AnalysisError, match="needs every oracle window.*early_stop: false"):
        correct_window_centroids(early, None)
    assert early_stopped_oracle_rows(early) == early.num_rows - QUESTIONS * len(MODELS)
    assert early_stopped_oracle_rows(full) == 0  # every window: Table 7 can use it
    entry = ANALYSES["correct_window_centroids"]
    for table, reason in ((early, "early_stop: false"), (full, None)):
        ctx = Context(table, EncodedPredictions.from_table(table), None, Facts.of(table), "qa", "hard")
        got = entry.unmet(ctx)
        assert (got is None) if reason is None else (got is not None and reason in got)
        # the oracle gaps need only the oracle correctness: they take the early-stopped rows
        assert ANALYSES["oracle_gap_by_fss_category"].unmet(ctx) is None


def test_dry_run_prints_the_calls_either_way(world: Any, tmp_path: Path) -> None:
    from tempcore.run.runner import run

    n_rows = QUESTIONS  # no rotations: one (sample, rotation) per sample
    for early in (False, True):
        lines: list[str] = []
        summary = run(_world_cfg(world, tmp_path / str(early), early, tmp_path / "cache"), dry_run=True,
                      log=lines.append)
        info = next(iter(summary.benchmarks.values()))["oracle_window_calls"]
        assert info == {"at_most": n_rows * WINDOWS, "at_least": n_rows if early else n_rows * WINDOWS}
        text = "\n".join(lines)
        if early:
            assert f"oracle (early_stop: true): {n_rows} to {n_rows * WINDOWS} window calls" in text
            assert f"early_stop: false: up to {n_rows * WINDOWS}" in text
            assert f"{(n_rows + n_rows) * len(MODELS)} to {(n_rows + n_rows * WINDOWS) * len(MODELS)} model calls" in text
        else:
            assert f"oracle (early_stop: false): up to {n_rows * WINDOWS} window calls" in text
            assert f"(early_stop: true: {n_rows} to {n_rows * WINDOWS})" in text
            assert f"up to {(n_rows + n_rows * WINDOWS) * len(MODELS)} model calls" in text
        assert not (tmp_path / str(early) / "run" / "store.sqlite").exists()


@pytest.mark.usefixtures("local_ray")
def test_the_ray_executor_runs_the_same_waves(world: Any, runs: dict[str, Any], tmp_path: Path) -> None:
    """The Ray executor answers each wave (actors started per wave): the same rows as the local run."""
    import torch

    from tempcore.run.runner import run

    torch.set_num_threads(1)
    cfg = _world_cfg(world, tmp_path / "ray", True, runs["root"] / "cache")
    cfg = dataclasses.replace(cfg, models=tuple(m for m in cfg.models if m["model"] == "zoo-mean"), executor="ray",
                              parallel_models=1)  # the local executor's (refused with executor ray)
    summary = run(cfg, progress=False, log=lambda _l: None)
    local = {k: v for k, v in _rows(runs["early"]["dir"]).items() if k[2] == "zoo-mean"}
    assert _rows(tmp_path / "ray") == local
    assert summary.oracle_early_stop["zoo-mean"] == runs["early"]["summary"].oracle_early_stop["zoo-mean"]
