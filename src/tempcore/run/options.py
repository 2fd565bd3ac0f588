"""The executor options of a run configuration: the ``ray`` mapping (:class:`RayOptions`) and the
resources of the Ray executor's actors (:class:`ActorResources`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tempcore.errors import RunError, TempcoreError


class ConfigError(TempcoreError):
    """The run configuration is invalid (names the file, the entry and the reason)."""


def _config_error(message: str) -> TempcoreError:
    return ConfigError(message)


def _number(where: str, value: Any, *, minimum: float, integer: bool) -> Any:
    ok = isinstance(value, int if integer else (int, float)) and not isinstance(value, bool)
    if not ok or value < minimum:
        kind = "an integer" if integer else "a number"
        raise _config_error(f"{where} must be {kind} >= {minimum:g}, not {value!r}")
    return value


@dataclass(frozen=True)
class ActorResources:
    """How many actors of one kind, and what each reserves (Ray's ``num_gpus`` / ``num_cpus``;
    fractional GPUs share one device)."""

    actors: int = 1
    num_gpus: float = 0.0
    num_cpus: float = 1.0

    @classmethod
    def from_dict(cls, where: str, data: Any, *, count_key: str) -> ActorResources:
        if not isinstance(data, Mapping):
            raise _config_error(f"{where} must be a mapping with {count_key}, num_gpus, num_cpus")
        unknown = sorted(set(data) - {count_key, "num_gpus", "num_cpus"})
        if unknown:
            raise _config_error(f"{where}: unknown key(s) {unknown} (known: {count_key}, num_gpus, num_cpus)")
        return cls(
            actors=_number(f"{where}.{count_key}", data.get(count_key, 1), minimum=1, integer=True),
            num_gpus=float(_number(f"{where}.num_gpus", data.get("num_gpus", 0), minimum=0, integer=False)),
            num_cpus=float(_number(f"{where}.num_cpus", data.get("num_cpus", 1), minimum=0, integer=False)),
        )


_KEYS = ("address", "runtime_env", "concurrent_models", "max_in_flight", "max_restarts", "max_task_retries",
         "max_attempts", "placement_timeout_s", "encoder", "model_defaults", "models")


@dataclass(frozen=True)
class RayOptions:
    """The ``ray:`` section of a run configuration (every key optional).

    address:           ``auto`` (the cluster this machine belongs to, ``ray start``), ``HOST:PORT``
                       (``ray://HOST:PORT`` for Ray Client), or none: a Ray already initialised in
                       this process, else the cluster ``RAY_ADDRESS`` names, else a local Ray
                       started for the run and stopped after it;
    runtime_env:       passed to ``ray.init`` (e.g. ``env_vars``, ``py_modules``);
    concurrent_models: all models' actors at once (default: one model after the other);
    max_in_flight:     calls outstanding per actor (default 2: one running, one queued);
    max_restarts:      Ray restarts of a dead actor (default 3);
    max_task_retries:  Ray retries of the call a dead actor was running (default 3);
    max_attempts:      tries of one unit before its items go to the failures table (default 3);
    placement_timeout_s: how long actors may wait to be placed, and an actor whose node was lost to
                       be placed again by Ray, before the executor runs without it (default 10);
    encoder:           ``{actors, num_gpus, num_cpus}`` of the frame actors (default 1, 0, 1);
    model_defaults:    ``{replicas, num_gpus, num_cpus}`` of each model (default 1, 0, 1);
    models:            per model name (its ``name``, or the display name): ``{replicas, num_gpus, num_cpus}``.
    """

    address: str | None = None
    runtime_env: dict[str, Any] | None = None
    concurrent_models: bool = False
    max_in_flight: int = 2
    max_restarts: int = 3
    max_task_retries: int = 3
    max_attempts: int = 3
    placement_timeout_s: float = 10.0
    encoder: ActorResources = ActorResources()
    model_defaults: ActorResources = ActorResources()
    models: dict[str, ActorResources] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "ray") -> RayOptions:
        """Validate a ``ray:`` mapping; a :class:`~tempcore.run.config.ConfigError` names the key."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise _config_error(f"{where} must be a mapping, not {type(data).__name__}")
        unknown = sorted(set(data) - set(_KEYS))
        if unknown:
            from tempcore.registry import did_you_mean

            hints = "".join(did_you_mean(str(k), list(_KEYS), n=1) for k in unknown)
            raise _config_error(f"{where}: unknown key(s) {unknown}{hints} (known: {', '.join(_KEYS)})")
        address = data.get("address")
        if address is not None and (not isinstance(address, str) or not address.strip()):
            raise _config_error(f"{where}.address must be auto or HOST:PORT, not {address!r}")
        runtime_env = data.get("runtime_env")
        if runtime_env is not None and not isinstance(runtime_env, Mapping):
            raise _config_error(f"{where}.runtime_env must be a mapping")
        concurrent = data.get("concurrent_models", False)
        if not isinstance(concurrent, bool):
            raise _config_error(f"{where}.concurrent_models must be true or false, not {concurrent!r}")
        models = data.get("models") or {}
        if not isinstance(models, Mapping):
            raise _config_error(f"{where}.models must map model names to {{replicas, num_gpus, num_cpus}}")
        return cls(
            address=address,
            runtime_env=None if runtime_env is None else dict(runtime_env),
            concurrent_models=concurrent,
            max_in_flight=_number(f"{where}.max_in_flight", data.get("max_in_flight", 2), minimum=1, integer=True),
            max_restarts=_number(f"{where}.max_restarts", data.get("max_restarts", 3), minimum=-1, integer=True),
            max_task_retries=_number(f"{where}.max_task_retries", data.get("max_task_retries", 3), minimum=-1,
                                     integer=True),
            max_attempts=_number(f"{where}.max_attempts", data.get("max_attempts", 3), minimum=1, integer=True),
            placement_timeout_s=float(_number(f"{where}.placement_timeout_s", data.get("placement_timeout_s", 10),
                                              minimum=1, integer=False)),
            encoder=ActorResources.from_dict(f"{where}.encoder", data.get("encoder") or {}, count_key="actors"),
            model_defaults=ActorResources.from_dict(f"{where}.model_defaults", data.get("model_defaults") or {},
                                                    count_key="replicas"),
            models={str(k): ActorResources.from_dict(f"{where}.models.{k}", v, count_key="replicas")
                    for k, v in models.items()},
        )

    def for_model(self, name: str) -> ActorResources:
        return self.models.get(name, self.model_defaults)

    def check_models(self, names: Sequence[str]) -> None:
        """Every ``models`` key names a model of the run (a typo would silently get the defaults)."""
        unknown = sorted(set(self.models) - set(names))
        if unknown:
            raise RunError(f"ray.models names {unknown}, not models of this run (its models: {list(names)})")


# --- the worker (a plain class; wrapped by ray.remote when the executor starts) ----------------


__all__ = ["ActorResources", "ConfigError", "RayOptions"]
