"""The executor options of a run configuration: the ``ray`` mapping (:class:`RayOptions`) and the
resources of the Ray executor's actors (:class:`ActorResources`), validated by pydantic
(:mod:`tempcore.validation`) on every construction."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Field, GetPydanticSchema, TypeAdapter, model_validator
from pydantic.dataclasses import dataclass
from pydantic_core import core_schema
from pydantic_core.core_schema import ValidatorFunctionWrapHandler

from tempcore.errors import RunError
from tempcore.validation import ConfigError, Flag, Schema, bad_value, guarded, integer, number, validate

_CONFIG = ConfigDict(extra="forbid")


@dataclass(frozen=True, config=_CONFIG)
class ActorResources:
    """How many actors of one kind, and what each reserves (Ray's ``num_gpus`` / ``num_cpus``;
    fractional GPUs share one device)."""

    actors: Annotated[int, integer(1)] = 1
    num_gpus: Annotated[float, number(0, as_float=True)] = 0.0
    num_cpus: Annotated[float, number(0, as_float=True)] = 1.0

    @model_validator(mode="wrap")
    @classmethod
    def _validate(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        return guarded(cls, data, handler, where=lambda _raw: "actor resources")

    @classmethod
    def from_dict(cls, where: str, data: Any, *, count_key: str) -> ActorResources:
        """Validate ``{COUNT_KEY, num_gpus, num_cpus}`` (``count_key``: ``actors`` or ``replicas``)."""
        target: type = cls if count_key == "actors" else _Replicas
        resources: ActorResources = validate(target, TypeAdapter(target), data, where=where)
        return _as_actors(resources)


@dataclass(frozen=True, config=_CONFIG)
class _Replicas(ActorResources):
    """The resources of a model's actors: the same, the count under the key ``replicas``."""

    actors: Annotated[int, integer(1), Field(alias="replicas")] = 1


def _as_actors(res: ActorResources) -> ActorResources:
    return ActorResources(res.actors, res.num_gpus, res.num_cpus) if type(res) is not ActorResources else res


def _default_if_none(value: Any) -> Any:
    return {} if value is None else value


def _address(value: Any) -> Any:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise bad_value(f"must be auto or HOST:PORT, not {value!r}")
    return value


def _mapping(value: Any) -> Any:
    if value is not None and not isinstance(value, Mapping):
        raise bad_value(f"must be a mapping, not {value!r}")
    return None if value is None else dict(value)


Workers = Annotated[ActorResources, BeforeValidator(_default_if_none)]
Replicas = Annotated[
    ActorResources,
    Schema(_Replicas),
    GetPydanticSchema(lambda _tp, handler: core_schema.no_info_before_validator_function(
        _default_if_none, core_schema.no_info_after_validator_function(_as_actors, handler.generate_schema(_Replicas)))),
]
"""A model's resources: validated as ``{replicas, num_gpus, num_cpus}``, kept as :class:`ActorResources`."""


@dataclass(frozen=True, config=_CONFIG)
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

    address: Annotated[str | None, BeforeValidator(_address)] = None
    runtime_env: Annotated[dict[str, Any] | None, BeforeValidator(_mapping)] = None
    concurrent_models: Flag = False
    max_in_flight: Annotated[int, integer(1)] = 2
    max_restarts: Annotated[int, integer(-1)] = 3
    max_task_retries: Annotated[int, integer(-1)] = 3
    max_attempts: Annotated[int, integer(1)] = 3
    placement_timeout_s: Annotated[float, number(1, as_float=True)] = 10.0
    encoder: Workers = ActorResources()
    model_defaults: Replicas = ActorResources()
    models: Annotated[dict[str, Replicas], BeforeValidator(_default_if_none)] = dataclasses.field(
        default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _validate(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        return guarded(cls, data, handler, where=lambda _raw: "ray", under="ray")

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "ray") -> RayOptions:
        """Validate a ``ray:`` mapping; a :class:`ConfigError` names each bad key under ``where``."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where} must be a mapping, not {type(data).__name__}")
        options: RayOptions = validate(cls, _ADAPTER, {str(k): v for k, v in data.items()}, where=where)
        return options

    def for_model(self, name: str) -> ActorResources:
        return self.models.get(name, self.model_defaults)

    def check_models(self, names: Sequence[str]) -> None:
        """Every ``models`` key names a model of the run (a typo would silently get the defaults)."""
        unknown = sorted(set(self.models) - set(names))
        if unknown:
            raise RunError(f"ray.models names {unknown}, not models of this run (its models: {list(names)})")


_ADAPTER: TypeAdapter[RayOptions] = TypeAdapter(RayOptions)


__all__ = ["ActorResources", "ConfigError", "RayOptions"]
