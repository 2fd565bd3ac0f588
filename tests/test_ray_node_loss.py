"""The Ray executor when a node is lost (issue 27, items 4 and 5), on a real two-node cluster.

A ``ray.cluster_utils.Cluster`` on this machine, every process bound to 127.0.0.1 (checked): the
head (1 CPU; this process is its driver) and a worker node (1 CPU); each step asks for two actors
of 1 CPU, so one runs on each node. The worker node is SIGKILLed (its raylet alone, or every
process of it) mid-model, between two models (the driver held at the switch until the node is
known dead) and while the next model loads; each run ends with exactly the rows of a local run,
and no failure. Actors that cannot be placed stop the run within seconds, saying what was asked
for and what the cluster has; a resume on a one-node cluster runs on fewer actors and logs it.
Kills happen at chosen points of the run (rows in the store, files the loads write), never at a
random time."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import ray  # a missing ray fails this module: it never skips
from ray.cluster_utils import Cluster

from helpers.demo_runs import demo_run_config
from tempcore.run.ray_executor import PlacementError
from tempcore.run.runner import run
from tempcore.run.store import RunStore
from test_runner import count_rows

HERE = Path(__file__).parent
MODELS = ("zoo-mean", "zoo-max", "zoo-attn", "zoo-order")
N_QUESTIONS = 6
#: the head's health checks, faster than Ray's defaults: a dead node is known dead in ~3-5 s, not ~30 s
SYSTEM_CONFIG = {"health_check_period_ms": 1000, "health_check_failure_threshold": 3,
                 "health_check_timeout_ms": 1000}


# --- the cluster ---------------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            out.setdefault(ppid, []).append(int(entry.name))
    return out


def _tree(roots: list[int]) -> list[int]:
    """``roots`` and all their descendants."""
    children, found, todo = _children(), [], list(roots)
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _title(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""


def _node_pids(node: Any) -> list[int]:
    """Every process of a Ray node: its own (raylet, agents) and their descendants (the workers)."""
    return _tree([p.process.pid for infos in node.all_processes.values() for p in infos])


def _actor_pids(node: Any) -> list[int]:
    return [pid for pid in _node_pids(node) if _title(pid).startswith("ray::_Worker")]


def _listening(pids: list[int]) -> list[str]:
    """HOST:PORT of every listening TCP socket the processes ``pids`` hold."""
    inodes: set[int] = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.startswith("socket:["):
                        inodes.add(int(link[8:-1]))
    found = []
    for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or int(fields[9]) not in inodes:  # 0A: LISTEN
                continue
            host, port = fields[1].split(":")
            raw = bytes.fromhex(host)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # little-endian words
            found.append(f"{socket.inet_ntop(family, raw)}:{int(port, 16)}")
    return found


class TwoNodes:
    """The module's cluster: the head and at most one worker node, replaced when killed."""

    def __init__(self) -> None:
        self.cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False,
            "_system_config": SYSTEM_CONFIG})
        self.worker: Any = None
        self.dead: list[Any] = []  # killed nodes (their leftovers stopped at the end)
        self.add_worker()

    def add_worker(self) -> None:
        self.worker = self.cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")

    def live_nodes(self) -> int:
        return sum(bool(n["Alive"]) for n in ray.nodes())

    def wait_nodes(self, n: int, timeout: float = 60) -> None:
        deadline = time.time() + timeout
        while self.live_nodes() != n:
            assert time.time() < deadline, f"the cluster did not reach {n} live nodes: {ray.nodes()}"
            time.sleep(0.1)

    def two(self) -> None:
        """Head and one live worker node."""
        if self.worker is None:
            self.add_worker()
        self.wait_nodes(2)

    def one(self) -> None:
        """The head alone (the worker node removed as an operator would)."""
        if self.worker is not None:
            self.cluster.remove_node(self.worker)
            self.worker = None
        self.wait_nodes(1)

    def kill_worker(self, *, everything: bool) -> list[int]:
        """SIGKILL the worker node: its raylet alone, or every process of it at once; the pids."""
        node, self.worker = self.worker, None
        raylet = node.all_processes["raylet"][0].process.pid
        victims = _node_pids(node) if everything else [raylet]
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.dead.append(node)
        return victims

    def wait_dead(self, timeout: float = 60) -> None:
        """Until Ray knows a node died."""
        deadline = time.time() + timeout
        while self.live_nodes() != 1 + (self.worker is not None):
            assert time.time() < deadline, f"Ray did not notice the dead node: {ray.nodes()}"
            time.sleep(0.1)

    def pids(self) -> list[int]:
        return [pid for node in self.cluster.list_all_nodes() for pid in _node_pids(node)]

    def shutdown(self) -> None:
        for node in [*self.dead, *self.cluster.list_all_nodes()]:  # processes that already died are fine
            with contextlib.suppress(ProcessLookupError):
                for pid in _node_pids(node):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            for infos in node.all_processes.values():
                for info in infos:
                    with contextlib.suppress(Exception):
                        info.process.wait(timeout=10)
        self.cluster.worker_nodes.clear()
        self.cluster.head_node = None
        with contextlib.suppress(Exception):
            ray.experimental.internal_kv._internal_kv_reset()
        with contextlib.suppress(Exception):
            ray._common.utils.reset_ray_address()


@pytest.fixture(scope="module")
def nodes() -> Iterator[TwoNodes]:
    """The two-node cluster on loopback; this process is its driver (its workers import this
    module: PYTHONPATH)."""
    import ray._private.ray_constants as ray_constants

    old = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), str(HERE.parent / "src"), old) if p)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    cluster = TwoNodes()
    try:
        # Ray replaces 127.0.0.1 in an address by this machine's address (where a loopback-only
        # cluster does not listen) unless it runs without clusters; the driver joins as loopback
        enabled, ray_constants.ENABLE_RAY_CLUSTER = ray_constants.ENABLE_RAY_CLUSTER, False
        try:
            ray.init(address=cluster.cluster.address, include_dashboard=False, log_to_driver=False)
        finally:
            ray_constants.ENABLE_RAY_CLUSTER = enabled
        cluster.wait_nodes(2)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
        os.environ["PYTHONPATH"] = old


# --- runs ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tempcore.world import generate_world

    return generate_world(tmp_path_factory.mktemp("world") / "world", N_QUESTIONS, 11)


def _config(world: Any, out: Path, **ray_options: Any) -> Any:
    """The demo's configuration over ``world`` (four zoo members), on Ray: two actors per model."""
    options = {"model_defaults": {"replicas": 2}, "placement_timeout_s": 3} | ray_options
    return demo_run_config(world, out, MODELS, source="test_ray_node_loss", executor="ray", ray=options)


def _rows(out: Path) -> dict[tuple, dict]:
    """Every stored prediction, every column but the timing."""
    with RunStore.open(out / "store.sqlite") as store:
        return {p.key: dataclasses.asdict(dataclasses.replace(p, latency_s=0.0)) for p in store.predictions()}


@pytest.fixture(scope="module")
def expected(world: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple, dict]:
    """The rows of a local run of the same configuration."""
    out = tmp_path_factory.mktemp("local") / "run"
    cfg = demo_run_config(world, out, MODELS, source="test_ray_node_loss")
    run(cfg, progress=False, log=lambda _m: None)
    return _rows(Path(cfg.out))


def _check(cfg: Any, expected: dict[tuple, dict], summary: Any) -> None:
    """Exactly the local run's rows, none failed."""
    got = _rows(Path(cfg.out))
    assert got == expected, f"lost {len(set(expected) - set(got))}, extra {len(set(got) - set(expected))}"
    with RunStore.open(Path(cfg.out) / "store.sqlite") as store:
        assert store.failures() == []
    assert all(m.failed == 0 for m in summary.models)


class Driver:
    """A run in a thread; ``log`` lines collected (and handed to ``hook``)."""

    def __init__(self, cfg: Any, hook: Callable[[str], None] | None = None, **kwargs: Any) -> None:
        self.cfg, self.lines, self.outcome = cfg, list[str](), dict[str, Any]()
        self.hook = hook

        def log(line: str) -> None:
            self.lines.append(line)
            if self.hook is not None:
                self.hook(line)

        def target() -> None:
            try:
                self.outcome["summary"] = run(cfg, progress=False, log=log, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                self.outcome["error"] = exc

        self.thread = threading.Thread(target=target, daemon=True)
        self.thread.start()

    def until(self, condition: Callable[[], bool], what: str, timeout: float = 300) -> None:
        deadline = time.time() + timeout
        while not condition():
            assert self.thread.is_alive(), f"the run ended before {what}: {self.outcome}"
            assert time.time() < deadline, f"no {what} within {timeout} s"
            time.sleep(0.005)

    def summary(self, timeout: float = 400) -> Any:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the run did not finish"
        assert "error" not in self.outcome, f"the run failed: {self.outcome['error']!r}\n" + "\n".join(self.lines)
        return self.outcome["summary"]

    def rows(self) -> int:
        return count_rows(Path(self.cfg.out) / "store.sqlite")


def _run_log(cfg: Any) -> str:
    return (Path(cfg.out) / "run.log").read_text()


# --- node loss ----------------------------------------------------------------------------------


class HeldAnswers:
    """A model factory: the zoo's models, whose answers wait while ``folder/hold`` exists."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def __call__(self, spec: Any) -> Any:
        from tempcore.models import load_model

        return _Held(load_model(spec), Path(self.folder) / "hold")


class _Held:
    def __init__(self, model: Any, hold: Path) -> None:
        self._model, self._hold = model, hold

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def answer(self, requests: Any, **kwargs: Any) -> Any:
        while self._hold.exists():
            time.sleep(0.01)
        return self._model.answer(requests, **kwargs)


def _group_on(node_id: str) -> bool:
    """Whether a placement group is placed on the node ``node_id``."""
    return any(g["state"] == "CREATED" and node_id in g["bundles_to_node_id"].values()
               for g in ray.util.placement_group_table().values())


@pytest.mark.timeout(600)
def test_a_worker_node_whose_raylet_is_killed_mid_model_is_placed_again_by_ray(world, expected, nodes, tmp_path):
    """The worker node's raylet SIGKILLed (its workers left to notice) while the first model
    answers, a third of its rows stored and the answers held; a fresh node joins at once; once Ray
    has placed the lost actor's group on it, the answers go on (the executor waits for Ray:
    ``placement_timeout_s`` 60). Every row of a local run, none failed, two actors to the end and
    none placed by the executor. Every listening socket of the cluster and its driver is on 127.0.0.1."""
    nodes.two()
    cfg = _config(world, tmp_path / "run", placement_timeout_s=60)
    per_model = len(expected) // len(MODELS)
    driver = Driver(cfg, model_factory=HeldAnswers(str(tmp_path)))
    node = nodes.worker
    driver.until(lambda: driver.rows() >= per_model // 3 and bool(_actor_pids(node)), "answers on both nodes")
    (tmp_path / "hold").write_text("")
    listening = _listening([*nodes.pids(), os.getpid()])
    assert listening and all(a.rsplit(":", 1)[0] in ("127.0.0.1", "::ffff:127.0.0.1") for a in listening), listening
    nodes.kill_worker(everything=False)
    nodes.add_worker()
    driver.until(lambda: _group_on(nodes.worker.node_id), "the lost group placed on the new node", timeout=120)
    at = driver.rows()
    (tmp_path / "hold").unlink()
    summary = driver.summary()
    assert at < per_model, f"the kill did not land mid-model ({at} rows of {per_model})"
    _check(cfg, expected, summary)
    log = _run_log(cfg)  # the group on the new node is Ray's doing: the executor placed none, stopped none
    assert "placed within" not in log and "not reused" not in log and "did not place it again" not in log, log


@pytest.mark.timeout(600)
def test_a_worker_node_killed_mid_model_goes_on_the_surviving_node(world, expected, nodes, tmp_path):
    """Every process of the worker node SIGKILLed while the first model answers (a third of its
    rows stored, the answers held); no node takes its place: once the executor has given up the
    group Ray cannot place again (``placement_timeout_s`` 3 s after Ray knows the node is dead),
    the answers go on, the lost actor's calls on the head's actor, and the run ends there
    (logged): every row of a local run, none failed."""
    nodes.two()
    cfg = _config(world, tmp_path / "run")
    per_model = len(expected) // len(MODELS)
    driver = Driver(cfg, model_factory=HeldAnswers(str(tmp_path)))
    node = nodes.worker
    driver.until(lambda: driver.rows() >= per_model // 3 and bool(_actor_pids(node)), "answers on both nodes")
    (tmp_path / "hold").write_text("")
    nodes.kill_worker(everything=True)
    gave_up = "an actor's node is lost and Ray did not place it again within 3 s"
    driver.until(lambda: any(gave_up in line for line in driver.lines), "the lost actor given up", timeout=120)
    at = driver.rows()
    (tmp_path / "hold").unlink()
    summary = driver.summary()
    assert at < per_model, f"the kill did not land mid-model ({at} rows of {per_model})"
    _check(cfg, expected, summary)
    log = _run_log(cfg)
    assert f"model {MODELS[0]}: no room for a new worker; going on with 1" in log, log
    for model in MODELS[1:]:  # the next models: one actor
        assert f"model {model}: asked for 2 actors of 1 CPU each, 1 placed" in log, log


@pytest.mark.timeout(600)
def test_a_worker_node_killed_between_two_models_is_not_reused(world, expected, nodes, tmp_path):
    """The driver held where the second model starts (its first log line) while every process
    of the worker node is SIGKILLed and until Ray knows the node is dead: the idle worker there is
    not reused, the second model runs on the head's actor alone (logged), and so on to the end."""
    nodes.two()
    cfg = _config(world, tmp_path / "run")
    killed: list[int] = []

    def hook(line: str) -> None:
        if line.startswith(f"model {MODELS[1]}:") and "to answer (" in line and not killed:
            assert _actor_pids(nodes.worker), "no idle worker on the worker node"
            killed.extend(nodes.kill_worker(everything=True))
            nodes.wait_dead()

    driver = Driver(cfg, hook)
    summary = driver.summary()
    assert killed, driver.lines
    _check(cfg, expected, summary)
    log = _run_log(cfg)
    assert f"model {MODELS[1]}: an idle worker's node is lost; it is not reused" in log
    assert f"model {MODELS[1]}: asked for 2 actors of 1 CPU each, 1 placed" in log


class GatedLoads:
    """A model factory: the zoo's loader, but a load of model ``gated`` first writes
    ``folder/loading-PID`` and waits for ``folder/open``."""

    def __init__(self, folder: str, gated: str) -> None:
        self.folder, self.gated = Path(folder), gated

    def __call__(self, spec: Any) -> Any:
        from tempcore.models import load_model

        if spec.display_name == self.gated:
            (self.folder / f"loading-{os.getpid()}").write_text("")
            while not (self.folder / "open").exists():
                time.sleep(0.01)
        return load_model(spec)


@pytest.mark.timeout(600)
def test_a_model_load_lost_with_its_node_is_done_again_on_another_node(world, expected, nodes, tmp_path):
    """Both actors loading the second model (held in their loads) when every process of the worker
    node is SIGKILLed; a fresh node joins and the loads go on: the lost load is done again on the
    new node, and the run ends with every row of a local run."""
    nodes.two()
    cfg = _config(world, tmp_path / "run")
    gate = tmp_path / "gate"
    gate.mkdir()
    driver = Driver(cfg, model_factory=GatedLoads(str(gate), MODELS[1]))
    node = nodes.worker
    driver.until(lambda: len(list(gate.glob("loading-*"))) == 2, "both loads of the second model")
    worker_pids = set(_actor_pids(node))
    assert any(f"loading-{pid}" in {p.name for p in gate.iterdir()} for pid in worker_pids), "no load on the worker"
    nodes.kill_worker(everything=True)
    nodes.add_worker()
    (gate / "open").write_text("")
    summary = driver.summary()
    _check(cfg, expected, summary)
    loads = {p.name for p in gate.glob("loading-*")}
    assert len(loads) >= 3, loads  # the two held loads, and the lost one done again by a new process


# --- placement ----------------------------------------------------------------------------------


@pytest.mark.timeout(300)
def test_actors_that_cannot_be_placed_stop_the_run_within_seconds_saying_what_and_where(
        world, nodes, tmp_path):
    """Two frame actors of 2 CPU each on two nodes of 1 CPU: a PlacementError after
    ``placement_timeout_s``, naming what was asked for and what the cluster has."""
    nodes.two()
    cfg = _config(world, tmp_path / "run", encoder={"actors": 2, "num_cpus": 2})
    started = time.monotonic()
    with pytest.raises(PlacementError) as err:
        run(cfg, progress=False, log=lambda _m: None)
    assert time.monotonic() - started < 60
    message = str(err.value)
    assert "frame scoring: asked for 2 actors of 2 CPU each, 0 placed within 3 s" in message, message
    assert re.search(r"the cluster has 2 live nodes( \(\d+ dead\))?: 2 CPU \(2 free\), 0 GPU \(0 free\), "
                     r"the largest 1 CPU and 0 GPU", message), message


@pytest.mark.timeout(600)
def test_a_resume_on_a_smaller_cluster_runs_on_fewer_actors_and_says_so(world, expected, nodes, tmp_path):
    """A run stopped after its first models (a load that fails), resumed with the same
    configuration on the head alone (one CPU, two actors asked for per step): it runs on one
    actor, logs it, and the store ends with every row of a local run."""
    nodes.two()
    out = tmp_path / "run"
    cfg = _config(world, out)

    def fails_on_third(spec: Any) -> Any:
        from tempcore.models import load_model

        if spec.display_name == MODELS[2]:
            raise RuntimeError("out of memory")
        return load_model(spec)

    with pytest.raises(Exception, match="out of memory"):
        run(cfg, progress=False, log=lambda _m: None, model_factory=fails_on_third)
    stored = count_rows(Path(cfg.out) / "store.sqlite")
    assert 0 < stored < len(expected)
    nodes.one()
    lines: list[str] = []
    started = time.monotonic()
    summary = run(cfg, progress=False, log=lines.append)
    assert time.monotonic() - started < 300
    _check(cfg, expected, summary)
    assert sum(m.stored_before for m in summary.models) == stored
    assert f"model {MODELS[2]}: asked for 2 actors of 1 CPU each, 1 placed within 3 s" in _run_log(cfg)


def test_placement_timeout_is_an_option_checked_like_the_others():
    from tempcore.run.config import ConfigError
    from tempcore.run.ray_executor import RayOptions
    from tempcore.run.ray_placement import asked_for

    assert RayOptions.from_dict({}).placement_timeout_s == 10.0
    assert RayOptions.from_dict({"placement_timeout_s": 2.5}).placement_timeout_s == 2.5
    for bad in (0, -1, "10", True):
        with pytest.raises(ConfigError, match=r"ray.placement_timeout_s must be a number >= 1, not "):
            RayOptions.from_dict({"placement_timeout_s": bad})
    assert asked_for(2, 1, 0) == "2 actors of 1 CPU each"
    assert asked_for(1, 2, 0.5) == "1 actor of 2 CPU and 0.5 GPU"
    assert asked_for(3, 0, 1) == "3 actors of 1 GPU each"
