"""The Ray executor on a real local Ray (``ray.init(num_cpus=2)``, started by these tests).

Same plan, same rows as the local executor (on a synthetic world with the zoo panel, and on the
toy world of test_runner.py); worker processes killed with SIGKILL from outside at seeded random
points of a world run, and model actors that kill themselves, are restarted and their units
retried, with nothing lost or duplicated; a unit that keeps failing lands in the failures table;
a killed driver resumes from the store."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import ray  # a missing ray fails this module: it never skips
import yaml

import test_runner
from tempcore.models import ModelResponse
from tempcore.run.config import ConfigError, RunConfig, load_config
from tempcore.run.runner import run
from tempcore.run.store import RunStore
from test_runner import count_rows, write_config

HERE = Path(__file__).parent
world = test_runner.world  # the tiny world fixture of test_runner.py


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray of 2 CPUs for this module; its workers import this test module (PYTHONPATH)."""
    old = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), old) if p)
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    except Exception as exc:  # the failure says why, it never skips
        pytest.fail(f"a local Ray (num_cpus=2) did not start: {type(exc).__name__}: {exc}")
    yield ray
    ray.shutdown()
    os.environ["PYTHONPATH"] = old


class KeyedModel:
    """A deterministic answerer: the letter is a hash of the request's key and prompt, so every
    actor (and the local run) gives every request the same answer."""

    supports_option_scores = False
    revision = None

    def __init__(self, spec: object) -> None:
        self.name = spec.display_name  # type: ignore[attr-defined]

    def answer(self, requests, *, method="generate"):  # noqa: ANN001
        out = []
        for r in requests:
            h = int(hashlib.sha256((r.key + r.prompt).encode()).hexdigest(), 16)
            out.append(ModelResponse(f"({'ABCD'[h % len(r.options)]})"))
        return out

    def close(self) -> None:
        pass


class DiesAt(KeyedModel):
    """Kills its own worker process (``os._exit``, no cleanup) on the run's calls number ``deaths``
    (counted across restarts by files in ``folder``)."""

    def __init__(self, spec: object, folder: str, deaths: tuple[int, ...]) -> None:
        super().__init__(spec)
        self.folder, self.deaths = Path(folder), deaths

    def answer(self, requests, *, method="generate"):  # noqa: ANN001
        self.folder.mkdir(exist_ok=True)
        call = len(list(self.folder.iterdir())) + 1
        (self.folder / f"call{call}").write_text(str(os.getpid()))
        if call in self.deaths:
            os._exit(1)
        return super().answer(requests, method=method)


class FailsOnQ1(KeyedModel):
    """Raises on every call that holds a request of sample q1."""

    def answer(self, requests, *, method="generate"):  # noqa: ANN001
        if any("|q1|" in r.key for r in requests):
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return super().answer(requests, method=method)


def _rows(store_path: Path) -> dict[tuple, dict]:
    """Every stored prediction, every column but the timing."""
    with RunStore.open(store_path) as store:
        return {p.key: dataclasses.asdict(dataclasses.replace(p, latency_s=0.0)) for p in store.predictions()}


def _ray_cfg(cfg: RunConfig, **ray_options: object) -> RunConfig:
    # parallel_models / model_processes are the local executor's: a copy for Ray drops them (the
    # configuration is validated again, and refuses them with executor ray)
    return dataclasses.replace(cfg, executor="ray", ray=ray_options, parallel_models=1, model_processes=False)


QUIET = {"progress": False, "log": lambda _m: None}


@pytest.fixture(scope="module")
def demo_world(tmp_path_factory):
    """A reduced demo world: 6 questions of the held-out seed, videos of 14-16 s."""
    from tempcore.demo import HELD_OUT_SEED
    from tempcore.world import generate_world

    return generate_world(tmp_path_factory.mktemp("demo-world") / "world", 6, HELD_OUT_SEED, duration=(14.0, 16.0))


def _demo_cfg(world, out: Path, members: tuple[str, ...] | None = None) -> RunConfig:
    """The demo's run configuration (:func:`tempcore.demo.demo_config`: the world encoder, every
    demo condition incl. the rotations and the oracle) over ``world``, with its own cache (frames
    are scored where the run runs), restricted to the zoo ``members`` when given."""
    from tempcore.demo import demo_config

    cfg = demo_config(world, out, oracle_windows=2, cache=out / "cache")
    if members is not None:
        cfg = dataclasses.replace(cfg, models=tuple(m for m in cfg.models if (m.get("name") or m["model"]) in members))
        assert len(cfg.models) == len(members), cfg.models
    return cfg


def _worker_pids() -> dict[int, str]:
    """The Ray worker processes holding tempcore's actors (``ray::_Worker...``) among this
    process's descendants (the local Ray's raylet is a child of this driver): pid -> title."""
    children: dict[int, list[int]] = {}
    titles: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            titles[int(entry.name)] = (entry / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = {}, [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            if titles.get(child, "").startswith("ray::_Worker"):
                found[child] = titles[child]
    return found


@pytest.mark.timeout(600)
def test_a_demo_world_run_on_ray_stores_exactly_the_predictions_of_a_local_run(demo_world, tmp_path, local_ray):
    """The demo's configuration (the shipped world encoder scoring every frame, the five zoo
    members and the tiny Idefics3, maxprob / minprob / noframe in every rotation, uniform, random,
    the oracle) over a reduced world: the Ray run (frames scored by the frame actor into its own
    cache, two replicas for one model) stores exactly the local run's rows, every column but the
    timing."""
    a = run(_demo_cfg(demo_world, tmp_path / "local"), **QUIET)
    cfg = _demo_cfg(demo_world, tmp_path / "ray")
    assert any(m["backend"] == "hf" for m in cfg.models) and sum(m["backend"] == "zoo" for m in cfg.models) == 5
    b = run(_ray_cfg(cfg, models={"zoo-mean": {"replicas": 2}}), **QUIET)
    expected, got = _rows(tmp_path / "local" / "run" / "store.sqlite"), _rows(tmp_path / "ray" / "run" / "store.sqlite")
    n_models = len(cfg.models)
    assert len(expected) == sum(m.done for m in a.models) and len(expected) >= 6 * 10 * n_models
    assert got == expected
    assert [(m.model, m.done, m.failed, m.correct, m.parse_failures) for m in b.models] == \
        [(m.model, m.done, m.failed, m.correct, m.parse_failures) for m in a.models]


@pytest.mark.timeout(600)
def test_worker_processes_killed_with_sigkill_at_random_points_lose_and_duplicate_nothing(
        demo_world, tmp_path, local_ray):
    """A world run on Ray while this test SIGKILLs a tempcore worker process (found among this
    driver's descendants, the frame actor or a model actor, whichever lives) at each of four
    seeded random points of the run (store row counts); Ray restarts the worker, the call it was
    running is retried (a restarted worker loads its model again), and the store ends with exactly
    the local run's rows: none lost, none twice, no failure."""
    members = ("zoo-mean", "zoo-attn", "zoo-order")
    run(_demo_cfg(demo_world, tmp_path / "local", members), **QUIET)
    expected = _rows(tmp_path / "local" / "run" / "store.sqlite")
    total = len(expected)
    rng = random.Random(1717)
    # one before the first answer; the others in the first half, so that a fast host cannot end the
    # run before the last is noticed (each kill pauses the run while Ray restarts a worker)
    points = sorted([0, *rng.sample(range(1, total // 2), 3)])
    store_path = tmp_path / "ray" / "run" / "store.sqlite"
    cfg = _ray_cfg(_demo_cfg(demo_world, tmp_path / "ray", members), max_restarts=4, max_task_retries=4)
    outcome: dict[str, object] = {}

    def driver() -> None:
        try:
            outcome["summary"] = run(cfg, **QUIET)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            outcome["error"] = exc

    thread = threading.Thread(target=driver, daemon=True)
    thread.start()
    killed: list[tuple[int, int, str]] = []  # (rows stored at the kill, pid, process title)
    deadline = time.time() + 400
    while thread.is_alive() and len(killed) < len(points) and time.time() < deadline:
        rows = count_rows(store_path)
        pids = _worker_pids()
        if rows >= points[len(killed)] and pids:
            pid = rng.choice(sorted(pids))
            os.kill(pid, signal.SIGKILL)
            killed.append((rows, pid, pids[pid]))
            while pid in _worker_pids():  # gone before the next point is looked for
                time.sleep(0.01)
        time.sleep(0.01)
    thread.join(timeout=max(1.0, deadline - time.time()))
    assert not thread.is_alive(), "the Ray run did not finish after the kills"
    assert "error" not in outcome, f"the run failed: {outcome.get('error')!r}; kills: {killed}"
    assert len(killed) == len(points), f"only {len(killed)} of {len(points)} kills landed mid-run: {killed}"
    assert all(rows < total for rows, _pid, _title in killed), killed
    assert len({pid for _rows, pid, _title in killed}) == len(killed)  # four different processes died
    got = _rows(store_path)
    assert got == expected, f"lost {len(set(expected) - set(got))}, extra {len(set(got) - set(expected))}"
    with RunStore.open(store_path) as store:
        assert store.failures() == [] and store.counts().predictions == total
    summary = outcome["summary"]
    assert sum(m.done for m in summary.models) == total and all(m.failed == 0 for m in summary.models)


def test_ray_run_stores_exactly_the_predictions_of_a_local_run(world, tmp_path, local_ray):
    conds = [{"strategy": "maxprob", "mode": "qa"}, {"strategy": "uniform"}, {"strategy": "noframe"}]
    # one request per call: a batched model's greedy answers depend on the batch's composition
    # (padding numerics), and the local executor forms its batches across samples while a Ray
    # actor batches within its unit; one per call, the rows of both must be the same
    local = load_config(write_config(world, tmp_path / "local", conditions=conds, request_batch=1))
    remote = load_config(write_config(world, tmp_path / "ray", conditions=conds, request_batch=1))
    a = run(local, **QUIET)
    b = run(_ray_cfg(remote, models={"tiny-qwen": {"replicas": 2}}), **QUIET)
    expected, got = _rows(tmp_path / "local" / "store.sqlite"), _rows(tmp_path / "ray" / "store.sqlite")
    assert len(expected) == 4 * 3 + 1 and got == expected
    ma, mb = a.models[0], b.models[0]
    assert (mb.done, mb.failed, mb.correct, mb.parse_failures) == (ma.done, ma.failed, ma.correct, ma.parse_failures)
    assert b.benchmarks == a.benchmarks
    again = run(_ray_cfg(remote), **QUIET, model_factory=lambda spec: pytest.fail("a stored key was asked again"))
    assert again.models[0].stored_before == len(expected) and again.models[0].done == 0


def test_killed_model_actors_are_restarted_or_replaced_and_nothing_is_lost_or_duplicated(world, tmp_path,
                                                                                        local_ray):
    """Three deaths with ``max_restarts: 1``: the first is restarted by Ray (its call retried), the
    second exhausts the restarts (the driver starts a new actor and resends the unit), the third
    is restarted again. The store ends with exactly the local run's rows and no failure."""
    conds = [{"strategy": "uniform"}, {"strategy": "random"}, {"strategy": "noframe"}]
    local = load_config(write_config(world, tmp_path / "local", conditions=conds, request_batch=2))
    run(local, **QUIET, model_factory=KeyedModel)
    calls = tmp_path / "calls"
    cfg = load_config(write_config(world, tmp_path / "ray", conditions=conds, request_batch=2))
    logged: list[str] = []
    summary = run(_ray_cfg(cfg, max_restarts=1, max_task_retries=1), progress=False, log=logged.append,
                  model_factory=functools.partial(DiesAt, folder=str(calls), deaths=(1, 3, 5)))
    died = [c for c in (1, 3, 5) if (calls / f"call{c}").exists()]
    assert died == [1, 3, 5], f"the model actor did not die three times: {sorted(os.listdir(calls))}"
    assert any("an actor died for good" in line for line in logged), logged
    expected = _rows(tmp_path / "local" / "store.sqlite")
    got = _rows(tmp_path / "ray" / "store.sqlite")
    assert got == expected and summary.models[0].done == len(expected) and summary.models[0].failed == 0
    with RunStore.open(tmp_path / "ray" / "store.sqlite") as store:
        assert store.failures() == [] and store.counts().predictions == len(expected)


def test_a_unit_that_keeps_failing_goes_to_the_failures_table(world, tmp_path, local_ray):
    conds = [{"strategy": "uniform"}, {"strategy": "noframe"}]
    cfg = load_config(write_config(world, tmp_path / "ray", conditions=conds))
    summary = run(_ray_cfg(cfg, max_attempts=2), **QUIET, model_factory=FailsOnQ1)
    m = summary.models[0]
    assert (m.done, m.failed) == (4 * 2 + 1 - 2, 2)
    with RunStore.open(tmp_path / "ray" / "store.sqlite") as store:
        fails = store.failures()
        assert {f.failure.sample_id for f in fails} == {"q1"} and len(fails) == 2
        assert all("RuntimeError: CUDA error" in f.failure.error and "after 2 attempts" in f.failure.error
                   and f.failure.attempts == 2 for f in fails)
        assert not any(p.sample_id == "q1" for p in store.predictions())


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def ray_head(tmp_path):
    """A separate cluster from ``ray start --head`` on loopback (stopped by its process group)."""
    import tempcore

    port = _free_port()
    src = str(Path(tempcore.__file__).resolve().parents[1])
    # RAY_AUTH_MODE=token: the cluster uses Ray's token authentication (its default for a new
    # cluster), and a driver joining by an explicit address must be told so (Ray enables it by
    # itself only for a cluster it finds)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
               HF_HUB_OFFLINE="1", RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="token")
    ray_cli = Path(sys.executable).with_name("ray")
    log = (tmp_path / "head.log").open("w")
    head = subprocess.Popen([str(ray_cli), "start", "--head", "--block", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                             "--disable-usage-stats"], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.time() + 120
        while not (found := re.search(r"ray start --address='([^']+)'", (tmp_path / "head.log").read_text())):
            if head.poll() is not None or time.time() > deadline:
                pytest.fail(f"ray start --head did not start: {(tmp_path / 'head.log').read_text()[-2000:]}")
            time.sleep(0.2)
        yield found.group(1), env  # HOST:PORT, HOST the node's address as Ray chose it
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):  # the whole group may have ended with the SIGTERM
            os.killpg(head.pid, signal.SIGKILL)
        head.wait()
        log.close()


@pytest.mark.timeout(400)
def test_a_killed_driver_resumes_from_the_store_on_a_ray_start_cluster(world, tmp_path, ray_head):
    """``tempcore run --executor ray --ray-address HOST:PORT`` on a ``ray start --head`` cluster,
    its driver killed (SIGKILL) after its first commit; the rerun (``--ray-address auto``, the
    cluster named by RAY_ADDRESS) completes it and the store holds exactly the rows of a local run."""
    address, env = ray_head
    conds = [{"strategy": "uniform"}, {"strategy": "random"}, {"strategy": "noframe"}]
    local = load_config(write_config(world, tmp_path / "local", conditions=conds, request_batch=1))
    run(local, **QUIET)
    expected = _rows(tmp_path / "local" / "store.sqlite")
    path = write_config(world, tmp_path / "ray", conditions=conds, request_batch=1)
    doc = yaml.safe_load(path.read_text()) | {"executor": "ray", "ray": {"max_in_flight": 1}}
    path.write_text(yaml.safe_dump(doc))
    cmd = [sys.executable, "-m", "tempcore", "run", "--no-progress", "--config", str(path)]
    store_path = tmp_path / "ray" / "store.sqlite"
    err = (tmp_path / "driver.err").open("w")
    proc = subprocess.Popen([*cmd, "--ray-address", address], env=env, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.time() + 240
    while proc.poll() is None and count_rows(store_path) == 0 and time.time() < deadline:
        time.sleep(0.002)  # kill within a few ms of the first commit: on a fast host the run is short
    proc.send_signal(signal.SIGKILL)  # the driver only: the cluster (and its store-less actors) lives on
    proc.wait()
    err.close()
    partial = count_rows(store_path)
    assert 0 < partial < len(expected), (f"the kill did not land mid-run ({partial} of {len(expected)} rows): "
                                         + (tmp_path / "driver.err").read_text()[-3000:])
    done = subprocess.run([*cmd, "--ray-address", "auto", "--json"], env=dict(env, RAY_ADDRESS=address),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["models"][0]["stored_before"] == partial
    assert summary["models"][0]["done"] == len(expected) - partial
    assert _rows(store_path) == expected


def test_executor_and_ray_options_are_checked_when_the_config_loads(tmp_path):
    base = {"benchmarks": [{"name": "x", "annotations": "y"}], "models": ["m"], "conditions": ["uniform"]}
    with pytest.raises(ConfigError, match="executor must be one of local, ray, not 'dask'"):
        RunConfig.from_dict(base | {"executor": "dask"})
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['modles'\].*models"):
        RunConfig.from_dict(base | {"executor": "ray", "ray": {"modles": {}}})
    with pytest.raises(ConfigError, match=r"ray.models.m.replicas must be an integer >= 1, not 0"):
        RunConfig.from_dict(base | {"executor": "ray", "ray": {"models": {"m": {"replicas": 0}}}})
    with pytest.raises(ConfigError, match=r"ray.encoder: unknown key\(s\) \['gpus'\]"):
        RunConfig.from_dict(base | {"ray": {"encoder": {"gpus": 1}}})
    cfg = RunConfig.from_dict(base | {"executor": "ray", "ray": {"address": "auto", "models": {"m": {"num_gpus": 0.5}}}})
    assert cfg.executor == "ray" and cfg.ray["address"] == "auto"
    from tempcore.run.planning import RunError
    from tempcore.run.ray_executor import RayOptions

    opts = RayOptions.from_dict(cfg.ray)
    assert opts.for_model("m").num_gpus == 0.5 and opts.for_model("other").actors == 1
    with pytest.raises(RunError, match=r"ray.models names \['m'\], not models of this run"):
        opts.check_models(["tiny-qwen"])


def test_dry_run_names_the_executor_and_the_cli_checks_its_flags(world, tmp_path, capsys):
    from tempcore.cli import main

    path = write_config(world, tmp_path / "dry", conditions=[{"strategy": "noframe"}])
    assert main(["run", "--config", str(path), "--dry-run", "--no-progress", "--ray-address", "auto"]) == 0
    out = capsys.readouterr().out
    assert "executor: ray (address auto)" in out and "model tiny-qwen:" in out
    assert main(["run", "--config", str(path), "--executor", "local", "--ray-address", "auto"]) == 1
    assert "--ray-address joins a Ray cluster: use it with --executor ray" in capsys.readouterr().err


def test_import_and_a_ray_config_never_import_ray(tmp_path):
    code = ("import sys, tempcore, tempcore.run.runner, tempcore.cli.run; from tempcore.run.config import RunConfig; "
            "RunConfig.from_dict({'benchmarks': [{'name': 'x', 'annotations': 'y'}], 'models': ['m'], "
            "'conditions': ['uniform'], 'executor': 'ray', 'ray': {'address': 'auto'}}); "
            "print(sorted(m for m in ('ray', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


def test_a_call_takes_fresh_units_until_one_batch_and_a_tried_unit_goes_alone():
    """:func:`tempcore.run.ray_executor._next_call`: consecutive never-tried units until the call holds
    ``request_batch`` items; a retried unit (or one split out of a failed call) is sent alone,
    with its own attempt count."""
    from collections import deque

    from tempcore.run.ray_executor import _ALONE, _next_call

    units = [[f"u{i}-{j}" for j in range(n)] for i, n in enumerate((3, 3, 3, 5, 2))]
    queue = deque((u, 0) for u in units)
    got, attempts = _next_call(queue, 8)  # 3 + 3 < 8, + 3 = 9 >= 8
    assert (got, attempts) == (units[:3], 0) and list(queue) == [(units[3], 0), (units[4], 0)]
    queue.appendleft((units[2], 1))  # a retry goes alone, ahead of the fresh ones
    assert _next_call(queue, 8) == ([units[2]], 1)
    queue.appendleft((units[1], _ALONE))  # split out of a failed call: alone, no attempt counted yet
    assert _next_call(queue, 8) == ([units[1]], 0)
    assert _next_call(queue, 8) == (units[3:], 0) and not queue  # the queue's end closes a short call
    assert _next_call(deque([(units[0], 0), (units[1], 2), (units[3], 0)]), 100) == ([units[0]], 0)
