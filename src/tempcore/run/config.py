"""The typed run configuration of ``tempcore run`` (a YAML file), validated with clear errors.

Example (the paper's default audit: K=32 frames, 10 FPS, SigLIP2, QA-mode FSS)::

    out: runs/paper-audit                # run folder: store.sqlite, predictions.parquet, summary.json
    encoder: google/siglip2-so400m-patch14-384
    fps: 10
    k: 32
    seed: 0
    benchmarks:
      - {name: videomme, annotations: /data/videomme/test.json, video_root: /data/videomme/videos}
    models:
      - {preset: llava-onevision-0.5b}
      - {backend: openai, model: Qwen/Qwen3-VL-8B-Instruct, base_url: "http://localhost:8000/v1"}
    conditions:
      - {strategy: maxprob, mode: qa}
      - {strategy: minprob, mode: qa}
      - {strategy: noframe}
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, ConfigDict, GetPydanticSchema, PlainValidator, model_validator
from pydantic.dataclasses import dataclass
from pydantic_core import ArgsKwargs, core_schema
from pydantic_core.core_schema import ValidatorFunctionWrapHandler

from tempcore.errors import TempcoreError
from tempcore.records import EARLY_STOP_VARIANT as EARLY_STOP_VARIANT  # re-exported: it lives in records
from tempcore.records import Condition
from tempcore.registry import did_you_mean
from tempcore.run.options import RayOptions
from tempcore.validation import (
    ConfigError,
    Flag,
    OptionalText,
    Schema,
    Text,
    bad_value,
    config_error,
    guarded,
    integer,
    keys_of,
    number,
    one_of,
    unknown_keys,
)

DEFAULT_ENCODER = "google/siglip2-so400m-patch14-384"

#: Strategies whose frames depend on the Eq. 1 scores (they need an encoder and a text mode).
SCORE_BASED = frozenset({"maxprob", "minprob", "aks", "bolt"})
#: Strategies that show no video frames (grey images for ``noframe``, no image at all for ``textonly``).
FRAMELESS = frozenset({"noframe", "textonly"})

EXECUTORS = ("local", "ray")
DAMAGED_VIDEOS = ("answer", "skip")

_CONFIG = ConfigDict(extra="forbid")


def _rotations(value: Any) -> Any:
    if value in ("none", "all") or isinstance(value, (list, tuple)) and all(
            isinstance(r, int) and not isinstance(r, bool) for r in value):
        return value
    raise bad_value(f"must be none, all or a list of integers, not {value!r}")


def _mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise bad_value(f"must be a mapping, not {value!r}")
    return dict(value)


Options = Annotated[dict[str, Any], PlainValidator(_mapping)]
OptionalInt = Annotated[int | None, integer(none=True)]


@dataclass(frozen=True, config=_CONFIG)
class BenchmarkEntry:
    """A benchmark to audit: registry name, annotations (file or folder), video root, loader options.

    ``binary``: answer the benchmark as binary questions (:func:`tempcore.benchmarks.binary.binarize`,
    seeded with the run's seed; ``limit`` counts the original samples).
    """

    name: Text
    annotations: Text
    video_root: OptionalText = None
    skip_invalid: Flag = False
    limit: OptionalInt = None
    options: Options = dataclasses.field(default_factory=dict)
    binary: Flag = False

    @model_validator(mode="wrap")
    @classmethod
    def _validate(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        return guarded(cls, data, handler, where=lambda raw: f"benchmark {raw.get('name', '?')}")


def _mode_problems(values: Mapping[str, Any], complete: bool) -> list[str]:
    """A score-based strategy needs mode q or qa; another takes none (registered strategies only)."""
    from tempcore.selection.registry import STRATEGIES, needs_scores

    strategy, mode, variant = values.get("strategy"), values.get("mode"), values.get("variant")
    if not (isinstance(strategy, str) and strategy in STRATEGIES and isinstance(mode, (str, type(None)))
            and isinstance(variant, (str, type(None)))):
        return []
    score_based = needs_scores(strategy, variant)
    mode = mode or ("qa" if score_based else "none")
    if score_based and mode == "none":
        return [f"condition {strategy}: a score-based strategy needs mode q or qa"]
    if not score_based and mode != "none":
        return [f"condition {strategy}: mode {mode!r} given to a strategy that ignores scores"]
    return []


@dataclass(frozen=True, config=_CONFIG)
class ConditionEntry:
    """A condition family. ``mode`` defaults to ``qa`` for score-based strategies, else ``none``.

    ``k`` defaults to the run's K. ``rotations``: ``none`` (original option order), ``all`` (every
    cyclic rotation of each sample's options: circular evaluation) or a list of rotations.
    ``params`` go to the strategy (e.g. ``stride``, ``max_windows`` for ``oracle``; ``alpha`` for ``bolt``),
    except ``early_stop`` of ``oracle`` (:func:`early_stop_mode`), which the runner reads.
    """

    strategy: Text
    mode: OptionalText = None
    k: OptionalInt = None
    variant: OptionalText = None
    rotations: Annotated[str | list[int], PlainValidator(_rotations)] = "none"
    params: Options = dataclasses.field(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _validate(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        return guarded(cls, data, handler, where=lambda _raw: "ConditionEntry",
                       rules=_mode_problems)

    def condition(self, run: RunConfig) -> Condition:
        """The base Condition (window and rotation unset) this entry stands for in ``run``."""
        from tempcore.selection.registry import needs_scores

        score_based = needs_scores(self.strategy, self.variant)
        mode = self.mode or ("qa" if score_based else "none")
        if score_based and mode == "none":
            raise ConfigError(f"condition {self.strategy}: a score-based strategy needs mode q or qa")
        if not score_based and mode != "none":
            raise ConfigError(f"condition {self.strategy}: mode {mode!r} given to a strategy that ignores scores")
        return Condition(
            strategy=self.strategy,
            mode=mode,
            k=self.k or run.k,
            encoder=run.encoder if score_based else None,
            fps=run.fps,
            seed=run.seed,
            variant=EARLY_STOP_VARIANT if early_stop_mode(self) is not None else self.variant,
        )

    def rotation_list(self, n_options: int) -> list[int]:
        if self.rotations == "none":
            return [0]
        if self.rotations == "all":
            return list(range(max(n_options, 1)))
        return sorted({int(r) % max(n_options, 1) for r in self.rotations})


EARLY_STOP_MODES = ("q", "qa")
"""The text modes whose Eq. 1 frame scores order an early-stopped oracle's windows."""


def early_stop_mode(entry: ConditionEntry) -> str | None:
    """The text mode ordering an early-stopped oracle's windows, or ``None`` without early stop.

    ``params.early_stop`` of an ``oracle`` entry: ``false`` (default: every window is asked, as
    the paper does; Table 7 needs that), ``true`` (= ``qa``, the paper's oracle-text mode: the
    windows whose frames match the question and its answer best come first), ``qa`` or ``q``.
    With it, a (sample, model, rotation) is asked its windows one at a time in decreasing mean
    Eq. 1 score of their frames in that mode (ties: by position) and no more once one is answered
    correctly (:func:`tempcore.run.planning.next_oracle_wave`). Any other value, or ``early_stop`` on
    another strategy, is a :class:`ConfigError`."""
    params = entry.params if isinstance(entry.params, Mapping) else {}
    value = params.get("early_stop", False)
    if entry.strategy != "oracle":
        if "early_stop" in params:
            raise ConfigError(f"condition {entry.strategy}: early_stop is a parameter of the oracle only")
        return None
    if value is False or value is None:
        return None
    if not (value is True or isinstance(value, str) and value in EARLY_STOP_MODES):
        raise ConfigError(f"condition oracle: early_stop must be true, false, q or qa, not {value!r}")
    if entry.variant is not None:
        raise ConfigError(f"condition oracle: early_stop cannot be combined with variant {entry.variant!r}")
    return "qa" if value is True else str(value)


def _model_entry(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"preset": value}
    if not isinstance(value, Mapping):
        raise bad_value(f"must be a mapping or a preset name, not {value!r}")
    return dict(value)


def _condition_entry(value: Any) -> Any:
    return {"strategy": value} if isinstance(value, str) else value


def _ray_mapping(value: Any, handler: ValidatorFunctionWrapHandler) -> dict[str, Any]:
    """The ``ray`` mapping, validated as :class:`RayOptions` and kept as given (a plain dict)."""
    if value is None:
        return {}
    handler(value)
    return dict(value)


RayMapping = Annotated[
    dict[str, Any],
    Schema(RayOptions),
    GetPydanticSchema(lambda _tp, handler: core_schema.no_info_wrap_validator_function(
        _ray_mapping, handler.generate_schema(RayOptions))),
]


def _executor_problems(values: Mapping[str, Any], complete: bool) -> list[str]:
    """``parallel_models`` and ``model_processes`` are the local executor's (checked on the raw
    values too, when other keys failed, so that these are reported with them)."""
    executor = values.get("executor", "local")
    if executor not in EXECUTORS or executor == "local":
        return []
    problems = []
    parallel = values.get("parallel_models", 1)
    if isinstance(parallel, int) and not isinstance(parallel, bool) and parallel > 1:
        problems.append(f"parallel_models is the local executor's; with executor {executor!r} use "
                        "ray.concurrent_models")
    if values.get("model_processes", False) is True:
        problems.append(f"model_processes is the local executor's; executor {executor!r} places its "
                        "models itself")
    return problems


@dataclass(frozen=True, config=_CONFIG)
class RunConfig:
    """Everything ``tempcore run`` needs. ``models`` are model-spec mappings (see
    :class:`tempcore.models.ModelSpec`) plus an optional ``method`` (``generate`` or ``option_scores``).

    ``damaged_videos``: what to do with a sample whose video decoded with damage (truncated,
    corrupt data; the decoder reports it): ``answer`` (default: answered on the frames that
    decoded, and flagged in ``video_damage`` of every prediction) or ``skip`` (its framed conditions
    are not answered, as for a video that does not decode; no-frame conditions still are).

    ``executor``: ``local`` (default: this process) or ``ray`` (:mod:`tempcore.run.ray_executor`), with
    the ``ray`` mapping (:class:`tempcore.run.options.RayOptions`: address, actors per model, ...).
    ``parallel_models``: how many models the local executor answers at once (default 1: one after
    the other; N: N models loaded and answering together, see
    :class:`tempcore.run.local.LocalExecutor`); the Ray executor's own is ``ray.concurrent_models``.
    ``model_processes``: with ``parallel_models`` > 1, each answering thread loads its models in a
    worker process of its own (:mod:`tempcore.models.hosted`), so that local models answering side
    by side do not share one interpreter lock (default ``false``: threads of this process).

    Validated on every construction (:meth:`from_dict`, the constructor, ``dataclasses.replace``,
    :meth:`with_changes`): a :class:`ConfigError` lists every problem. ``lam`` is the key ``lambda``.
    """

    out: Text
    benchmarks: tuple[BenchmarkEntry, ...]
    models: tuple[Annotated[dict[str, Any], PlainValidator(_model_entry)], ...]
    conditions: tuple[Annotated[ConditionEntry, BeforeValidator(_condition_entry)], ...]
    encoder: Text = DEFAULT_ENCODER
    encoder_options: Options = dataclasses.field(default_factory=dict)
    fps: Annotated[float, number()] = 10.0
    k: Annotated[int, integer()] = 32
    seed: Annotated[int, integer()] = 0
    cache: OptionalText = None
    prompt: OptionalText = None
    noframe_size: Annotated[int, integer()] = 384
    max_frames_in_memory: Annotated[int, integer()] = 512
    request_batch: Annotated[int, integer()] = 32
    parallel_models: Annotated[int, integer(1)] = 1
    model_processes: Flag = False
    tau: Annotated[float, number()] = 0.15
    lam: Annotated[float, number()] = 0.5
    damaged_videos: Annotated[str, one_of(*DAMAGED_VIDEOS, wording="answer or skip")] = "answer"
    executor: Annotated[str, one_of(*EXECUTORS)] = "local"
    ray: RayMapping = dataclasses.field(default_factory=dict)
    source: Text = ""

    #: The documented key of a field named otherwise, and the fields that are no key of the file.
    KEY_NAMES: ClassVar[Mapping[str, str]] = {"lam": "lambda"}
    HIDDEN_KEYS: ClassVar[tuple[str, ...]] = ("source",)

    @model_validator(mode="wrap")
    @classmethod
    def _validate(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(data, ArgsKwargs) and data.kwargs and "lambda" in data.kwargs:
            kwargs = dict(data.kwargs)
            kwargs["lam"] = kwargs.pop("lambda")
            data = ArgsKwargs(data.args, kwargs)
        elif isinstance(data, Mapping) and "lambda" in data:
            data = {("lam" if k == "lambda" else k): v for k, v in data.items() if k != "lam"}
        return guarded(cls, data, handler, where=lambda raw: str(raw.get("source") or "<config>"),
                       rules=_executor_problems)

    @property
    def needs_encoder(self) -> bool:
        return any(c.condition(self).mode != "none" or early_stop_mode(c) is not None for c in self.conditions)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def with_changes(self, **changes: Any) -> RunConfig:
        """A copy with ``changes`` (keys as in the file: ``lambda`` too), validated again."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "<config>") -> RunConfig:
        """The configuration a YAML mapping describes; a :class:`ConfigError` lists every problem.

        Beyond the constructor's checks: ``benchmarks``, ``models`` and ``conditions`` list at least one
        entry, ``out`` defaults to ``runs/<the file's stem>``, ``source`` is no key of the file."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: the configuration must be a mapping")
        data = {str(k): v for k, v in data.items()}
        problems = []
        if "source" in data:
            data.pop("source")
            problems.append(unknown_keys("", ["source"], list(keys_of(cls))))
        for required in ("benchmarks", "models", "conditions"):
            if not data.get(required):
                problems.append(f"{required!r} must list at least one entry")
                data[required] = ()
        data.setdefault("out", "runs/" + Path(source).stem if source != "<config>" else "runs/run")
        try:
            cfg = cls(**data, source=source)
        except ConfigError as exc:
            raise config_error(source, problems + exc.problems) from None
        if problems:
            raise config_error(source, problems)
        return cfg


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or os.sep in name and not _HUB_ID.match(name)


_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def _entry_label(entry: Mapping[str, Any]) -> str:
    """How a model entry is named in errors before its spec is built: its name, model or preset."""
    for key in ("name", "model", "preset"):
        if entry.get(key):
            return str(entry[key])
    return "?"


def check_config(cfg: RunConfig) -> list[Any]:
    """Check everything a run needs that can be checked without loading a model, an encoder or a
    video; return the model specs (``(ModelSpec, method)`` per entry) or raise one :class:`ConfigError`
    listing every problem found.

    Checked: each benchmark is registered, its annotations file / folder and its video root exist;
    each condition's strategy is registered (with a suggestion for a typo); the run's ``prompt`` and
    each model's ``prompt_template`` are registered templates; each model entry resolves (a known
    preset, a registered backend, only keys of that backend's spec (:mod:`tempcore.models.specs`;
    each unknown key reported as ``models[i] (name): unknown key 'k' for backend b; did you mean
    ...?``), values of the right type and range, a known answer method) and, when its ``model`` is a
    local path, the folder exists; the encoder, when needed and given as a path, exists. A hub id is
    not looked up (that would need the network): it fails when the model loads.
    """
    from tempcore.benchmarks.registry import entry as benchmark_entry
    from tempcore.models.base import METHODS, UnknownSpecKeys
    from tempcore.models.registry import BACKENDS, as_spec
    from tempcore.prompts import get_template
    from tempcore.selection.registry import STRATEGIES

    where = cfg.source or "<config>"
    problems: list[str] = []
    for i, b in enumerate(cfg.benchmarks):
        try:
            benchmark_entry(b.name)
        except TempcoreError as exc:
            problems.append(f"benchmarks[{i}]: {exc}")
        if not Path(b.annotations).exists():
            problems.append(f"benchmarks[{i}] ({b.name}): annotations {b.annotations}: no such file or folder")
        if b.video_root is not None and not Path(b.video_root).is_dir():
            problems.append(f"benchmarks[{i}] ({b.name}): video_root {b.video_root}: no such folder")
    for i, c in enumerate(cfg.conditions):
        try:
            early_stop_mode(c)
        except ConfigError as exc:
            problems.append(f"conditions[{i}]: {exc}")
        names = [c.strategy]
        if c.strategy in ("shuffled", "reversed") and c.variant:
            names.append(c.variant.split(":")[0])
        for name in names:
            if name not in STRATEGIES:
                hint = did_you_mean(name.lower(), sorted(STRATEGIES), n=2)
                problems.append(f"conditions[{i}]: unknown strategy {name!r}{hint} (known: {', '.join(sorted(STRATEGIES))})")
    templates = []
    if cfg.prompt is not None:
        templates.append(("prompt", cfg.prompt))
    specs: list[Any] = []
    for i, m in enumerate(cfg.models):
        entry = dict(m)
        method = entry.pop("method", "generate")
        label = f"models[{i}] ({_entry_label(entry)})"
        backend = entry.get("backend")
        if isinstance(backend, str) and backend not in BACKENDS:
            hint = did_you_mean(backend, sorted(BACKENDS), n=2, cutoff=0.5)
            problems.append(f"{label}: unknown backend {backend!r}{hint} (known: {', '.join(sorted(BACKENDS))})")
            continue
        try:
            spec = as_spec(entry)  # the backend's own spec: unknown keys and bad values are named here
        except UnknownSpecKeys as exc:
            problems.extend(f"{label}: {p}" for p in exc.problems)
            continue
        except (TempcoreError, TypeError, ValueError) as exc:
            problems.append(f"models[{i}]: {exc}")
            continue
        label = f"models[{i}] ({spec.display_name})"
        if method not in METHODS:
            problems.append(f"{label}: unknown answer method {method!r} (known: {', '.join(METHODS)})")
        if spec.backend in ("hf", "hf-text", "vllm") and _looks_like_path(spec.model):
            if not Path(spec.model).expanduser().is_dir():
                problems.append(f"{label}: model folder {spec.model} does not exist")
        problems.extend(f"{label}: {p}" for p in spec.preflight())
        if cfg.prompt is None:
            templates.append((f"{label} prompt_template", spec.prompt_template))
        specs.append((spec, method))
    for label, name in templates:
        try:
            get_template(name)
        except TempcoreError as exc:
            problems.append(f"{label}: {exc}")
    try:
        needs_encoder = cfg.needs_encoder
    except ConfigError:
        needs_encoder = False  # an unknown strategy, reported above
    if needs_encoder:
        from tempcore.encoders.registry import resolve_encoder_id

        try:  # a registered name, a folder or a hub id owner/name (nothing is loaded)
            resolve_encoder_id(cfg.encoder)
        except TempcoreError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError(f"{where}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    return specs


def load_config(path: str | Path) -> RunConfig:
    """Read a YAML (or JSON) run configuration; relative paths in it stay relative to the working dir."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: no such configuration file")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {exc}") from exc
    return RunConfig.from_dict(data, source=str(p))
