"""Where the Ray executor's actors run, and what it does when a node is lost.

- :class:`PlacementError`: a step whose actors cannot be placed; it names what was asked for
  ("2 actors of 1 CPU each") and what the cluster has;
- :class:`Placed`: one actor, what it reserves, and its placement group (one bundle, its own);
- :class:`Placement`: places actors, each in a group of its own, waiting for the groups (never
  for the actors) at most ``ray.placement_timeout_s``; watches the cluster (``ray.nodes()`` and the
  groups, at most once a second) and names the actors whose group has been off a live node for
  longer than that timeout: Ray did not re-place them, so they are the executor's to stop, and
  their calls go to the other actors; it replaces an actor where there is room.

What Ray does itself: when a node dies, it re-places the groups that were on it where there is
room, restarts their actors there (``max_restarts``) and retries the calls they were running
(``max_task_retries``). An actor that reserves nothing (``num_cpus`` and ``num_gpus`` 0) has no
group: it fits on any node, and Ray restarts it on any.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tempcore.errors import RunError

__all__ = ["LOOK_INTERVAL_S", "TICK", "Placed", "Placement", "PlacementError", "asked_for", "describe_error"]

_log = logging.getLogger(__name__)

#: the least time between two looks at the cluster
LOOK_INTERVAL_S = 1.0
#: the longest the driver waits for a result before it looks at the cluster again (seconds)
TICK = 1.0


class PlacementError(RunError):
    """Actors that cannot be placed: what was asked for, and what the cluster has."""


def describe_error(exc: BaseException) -> str:
    """A Ray error in one line: the remote exception's type and message when there is one."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _n(x: float) -> str:
    return f"{x:g}"


def asked_for(n: int, num_cpus: float, num_gpus: float) -> str:
    """``2 actors of 1 CPU each``, ``1 actor of 2 CPU and 0.5 GPU``."""
    parts = [f"{_n(num_cpus)} CPU"] if num_cpus or not num_gpus else []
    parts += [f"{_n(num_gpus)} GPU"] if num_gpus else []
    return f"{n} actor{'s' if n != 1 else ''} of {' and '.join(parts)}{' each' if n != 1 else ''}"


@dataclass(eq=False)
class Placed:
    """An actor, the resources it reserves (``num_cpus``, ``num_gpus``) and its placement group
    (``None``: it reserves nothing)."""

    actor: Any
    num_cpus: float
    num_gpus: float
    group: Any = None
    paused_until: float = 0.0  # no calls before (it was unreachable: ActorUnavailableError)
    down_since: float | None = None  # its group off a live node since (monotonic), else None

    @property
    def shape(self) -> tuple[float, float]:
        return (self.num_cpus, self.num_gpus)

    def takes_calls(self, now: float) -> bool:
        return self.down_since is None and self.paused_until <= now


class Placement:
    """Places the executor's actors and watches the nodes they are on (see the module docstring).

    ``make(num_cpus, num_gpus, strategy)`` starts one actor (``strategy``: the scheduling strategy
    that puts it in its group, ``None`` for an actor without one)."""

    def __init__(self, ray: Any, make: Callable[[float, float, Any], Any], timeout_s: float,
                 max_attempts: int = 3) -> None:
        self._ray = ray
        self.max_attempts = max_attempts
        self._make = make
        self.timeout_s = timeout_s
        self._groups: list[Any] = []  # placed, not yet removed
        self._looked = -math.inf
        self._live: set[str] = set()

    # placing

    def place(self, num_cpus: float, num_gpus: float, n: int) -> list[Placed]:
        """Up to ``n`` new actors, each in a placement group of its own; waits at most
        ``timeout_s`` for the groups, removes those not placed by then (fewer actors, no error)."""
        if n <= 0:
            return []
        bundle = {k: v for k, v in (("CPU", num_cpus), ("GPU", num_gpus)) if v}
        if not bundle:
            return [Placed(self._make(num_cpus, num_gpus, None), num_cpus, num_gpus) for _ in range(n)]
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        groups = [placement_group([bundle]) for _ in range(n)]
        self._groups += groups
        ready_refs = [g.ready() for g in groups]
        ready, _ = self._ray.wait(ready_refs, num_returns=n, timeout=self.timeout_s)
        done = set(ready)
        placed = []
        for group, ref in zip(groups, ready_refs, strict=True):
            if ref in done:
                strategy = PlacementGroupSchedulingStrategy(placement_group=group, placement_group_bundle_index=0)
                placed.append(Placed(self._make(num_cpus, num_gpus, strategy), num_cpus, num_gpus, group))
            else:
                self._remove(group)
        return placed

    def fill(self, what: str, num_cpus: float, num_gpus: float, n: int, have: list[Placed]) -> list[Placed]:
        """``have`` and new actors up to ``n`` in all: fewer is logged, none is a
        :class:`PlacementError` (what was asked for, what the cluster has)."""
        got = have + self.place(num_cpus, num_gpus, n - len(have))
        if len(got) < n:
            message = (f"{what}: asked for {asked_for(n, num_cpus, num_gpus)}, "
                       f"{len(got)} placed within {_n(self.timeout_s)} s; {self.cluster()}")
            if not got:
                raise PlacementError(message)
            _log.warning("%s; it runs on %d", message, len(got))
        return got

    def renew(self, old: Placed) -> Placed | None:
        """A new actor in place of ``old`` (stopped): in its group when the group is on a live node,
        else in a new group; ``None`` when none could be placed."""
        try:
            self._ray.kill(old.actor, no_restart=True)
        except Exception:  # noqa: BLE001,S110 - an actor already gone
            pass
        if old.group is not None and self.usable(old, look=True):
            from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

            strategy = PlacementGroupSchedulingStrategy(placement_group=old.group, placement_group_bundle_index=0)
            return Placed(self._make(old.num_cpus, old.num_gpus, strategy), old.num_cpus, old.num_gpus, old.group)
        self.stop(old)
        if not self.room_for(old.num_cpus, old.num_gpus):
            return None
        got = self.place(old.num_cpus, old.num_gpus, 1)
        return got[0] if got else None

    def load(self, what: str, placed: Sequence[Placed], call: Callable[[Any], Any],
             started: Sequence[Any] | None = None, failed: str = "cannot load on Ray") -> list[tuple[Placed, Any]]:
        """Have every worker of ``placed`` run ``call`` (a load; ``started``: its calls already
        sent) and wait for them: each worker loaded, and what its call returned. A worker that
        is unreachable (its node lost, not yet known) is asked again after a pause; one that
        died for good, or whose node is lost and not placed again by Ray, is replaced and loads
        again (at most ``max_attempts`` times); an error of the load itself stops the run
        (:class:`RunError`); no worker left is a :class:`PlacementError`."""
        from ray.exceptions import ActorUnavailableError, RayActorError

        ray, placement = self._ray, self
        refs = list(started) if started is not None else [call(p.actor) for p in placed]
        pending: dict[Any, tuple[Placed, int]] = {ref: (p, 0) for ref, p in zip(refs, placed, strict=True)}
        paused: list[tuple[Placed, int]] = []
        done: list[tuple[Placed, Any]] = []

        def again(p: Placed, tries: int, why: str) -> None:
            if tries >= self.max_attempts:
                placement.stop(p)
            new = placement.renew(p) if tries < self.max_attempts else None
            _log.warning("%s: a worker was lost (%s); %s", what, why,
                         "loading on a new one" if new else "going on without it")
            if new is not None:
                pending[call(new.actor)] = (new, tries)

        while pending or paused:
            ready = ray.wait(list(pending), num_returns=1, timeout=TICK)[0] if pending else []
            if not pending:
                time.sleep(TICK / 4)
            for ref in ready:
                p, tries = pending.pop(ref)
                try:
                    done.append((p, ray.get(ref)))
                except ActorUnavailableError as exc:
                    _log.info("%s: a worker is unreachable (%s); asking it again", what, describe_error(exc))
                    p.paused_until = time.monotonic() + TICK
                    paused.append((p, tries))
                except RayActorError as exc:  # it died for good
                    again(p, tries + 1, describe_error(exc))
                except Exception as exc:
                    for q in [p, *(q for q, _ in done), *(q for q, _ in pending.values()), *(q for q, _ in paused)]:
                        placement.stop(q)
                    raise RunError(f"{what}: {failed}: {describe_error(exc)}") from exc
            lost = placement.lost([*(q for q, _ in pending.values()), *(q for q, _ in paused)])
            for ref, (q, tries) in list(pending.items()):
                if q in lost:
                    del pending[ref]
                    again(q, tries, f"its node, not placed again within {placement.timeout_s:g} s")
            now, still = time.monotonic(), []
            for q, tries in paused:
                if q in lost:
                    again(q, tries, f"its node, not placed again within {placement.timeout_s:g} s")
                elif q.takes_calls(now):
                    pending[call(q.actor)] = (q, tries)
                else:
                    still.append((q, tries))
            paused = still
        if not done:
            raise PlacementError(f"{what}: no worker could load it; {placement.cluster()}")
        return done

    def stop(self, placed: Placed) -> None:
        """Kill the actor (no restart) and remove its group."""
        try:
            self._ray.kill(placed.actor, no_restart=True)
        except Exception:  # noqa: BLE001,S110 - an actor already gone
            pass
        if placed.group is not None:
            self._remove(placed.group)
            placed.group = None

    def _remove(self, group: Any) -> None:
        from ray.util.placement_group import remove_placement_group

        self._groups = [g for g in self._groups if g is not group]
        try:
            remove_placement_group(group)
        except Exception:  # noqa: BLE001,S110 - a group already removed
            pass

    def close(self) -> None:
        """Remove every group still placed (the actors in them stop with them)."""
        for group in list(self._groups):
            self._remove(group)

    # watching

    def look(self, *, now: bool = False) -> bool:
        """Read which nodes are alive, at most once a second (``now``: at once); whether it looked."""
        t = time.monotonic()
        if not now and t - self._looked < LOOK_INTERVAL_S:
            return False
        self._looked = t
        self._live = {n["NodeID"] for n in self._ray.nodes() if n.get("Alive")}
        return True

    def usable(self, placed: Placed, *, look: bool = False) -> bool:
        """Whether the actor's group is placed on a live node (an actor without a group: always)."""
        if look:
            self.look(now=True)
        if placed.group is None:
            return True
        from ray.util.placement_group import placement_group_table

        try:
            table = placement_group_table(placed.group)
        except Exception:  # noqa: BLE001 - a removed group
            return False
        nodes = list(table.get("bundles_to_node_id", {}).values())
        return table.get("state") == "CREATED" and bool(nodes) and all(n in self._live for n in nodes)

    def lost(self, placed: Iterable[Placed]) -> list[Placed]:
        """At most once a second: mark the actors whose group is off a live node (``down_since``;
        no calls go to them) and return those off for longer than ``timeout_s``."""
        if not self.look():
            return []
        t = time.monotonic()
        out = []
        for p in placed:
            if self.usable(p):
                p.down_since = None
                continue
            if p.down_since is None:
                p.down_since = t
                _log.info("an actor's node is lost; waiting up to %g s for Ray to place it again", self.timeout_s)
            if t - p.down_since >= self.timeout_s:
                out.append(p)
        return out

    def room_for(self, num_cpus: float, num_gpus: float) -> bool:
        """Whether the cluster has the resources of one more actor free (in all)."""
        free = self._ray.available_resources()
        return bool(free.get("CPU", 0.0) >= num_cpus and free.get("GPU", 0.0) >= num_gpus)

    def cluster(self) -> str:
        """What the cluster has: its live nodes, CPUs and GPUs (free of them), the largest node."""
        nodes = self._ray.nodes()
        alive: list[dict[str, float]] = [n.get("Resources", {}) for n in nodes if n.get("Alive")]
        dead = len(nodes) - len(alive)
        free = self._ray.available_resources()
        cpu, gpu = (sum(r.get(k, 0.0) for r in alive) for k in ("CPU", "GPU"))
        big = max(alive, key=lambda r: (r.get("GPU", 0.0), r.get("CPU", 0.0)), default={})
        return (f"the cluster has {len(alive)} live node{'s' if len(alive) != 1 else ''}"
                + (f" ({dead} dead)" if dead else "")
                + f": {_n(cpu)} CPU ({_n(free.get('CPU', 0.0))} free), {_n(gpu)} GPU ({_n(free.get('GPU', 0.0))} free)"
                + (f", the largest {_n(big.get('CPU', 0.0))} CPU and {_n(big.get('GPU', 0.0))} GPU" if alive else ""))
