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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tempcore.errors import TempcoreError
from tempcore.records import EARLY_STOP_VARIANT as EARLY_STOP_VARIANT  # re-exported: it lives in records
from tempcore.records import Condition
from tempcore.registry import did_you_mean
from tempcore.run.options import ConfigError, RayOptions

DEFAULT_ENCODER = "google/siglip2-so400m-patch14-384"

#: Strategies whose frames depend on the Eq. 1 scores (they need an encoder and a text mode).
SCORE_BASED = frozenset({"maxprob", "minprob", "aks", "bolt"})
#: Strategies that show no video frames (grey images for ``noframe``, no image at all for ``textonly``).
FRAMELESS = frozenset({"noframe", "textonly"})


def _check_keys(where: str, data: Mapping[str, Any], cls: type) -> None:
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known: {sorted(names)}")


@dataclass(frozen=True)
class BenchmarkEntry:
    """A benchmark to audit: registry name, annotations (file or folder), video root, loader options.

    ``binary``: answer the benchmark as binary questions (:func:`tempcore.benchmarks.binary.binarize`,
    seeded with the run's seed; ``limit`` counts the original samples).
    """

    name: str
    annotations: str
    video_root: str | None = None
    skip_invalid: bool = False
    limit: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    binary: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.binary, bool):
            raise ConfigError(f"benchmark {self.name}: binary must be true or false, not {self.binary!r}")


@dataclass(frozen=True)
class ConditionEntry:
    """A condition family. ``mode`` defaults to ``qa`` for score-based strategies, else ``none``.

    ``k`` defaults to the run's K. ``rotations``: ``none`` (original option order), ``all`` (every
    cyclic rotation of each sample's options: circular evaluation) or a list of rotations.
    ``params`` go to the strategy (e.g. ``stride``, ``max_windows`` for ``oracle``; ``alpha`` for ``bolt``),
    except ``early_stop`` of ``oracle`` (:func:`early_stop_mode`), which the runner reads.
    """

    strategy: str
    mode: str | None = None
    k: int | None = None
    variant: str | None = None
    rotations: str | list[int] = "none"
    params: dict[str, Any] = field(default_factory=dict)

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


@dataclass(frozen=True)
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
    """

    out: str
    benchmarks: tuple[BenchmarkEntry, ...]
    models: tuple[dict[str, Any], ...]
    conditions: tuple[ConditionEntry, ...]
    encoder: str = DEFAULT_ENCODER
    encoder_options: dict[str, Any] = field(default_factory=dict)
    fps: float = 10.0
    k: int = 32
    seed: int = 0
    cache: str | None = None
    prompt: str | None = None
    noframe_size: int = 384
    max_frames_in_memory: int = 512
    request_batch: int = 32
    parallel_models: int = 1
    model_processes: bool = False
    tau: float = 0.15
    lam: float = 0.5
    damaged_videos: str = "answer"
    executor: str = "local"
    ray: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    @property
    def needs_encoder(self) -> bool:
        return any(c.condition(self).mode != "none" or early_stop_mode(c) is not None for c in self.conditions)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "<config>") -> RunConfig:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: the configuration must be a mapping")
        data = dict(data)
        if "lambda" in data:
            data["lam"] = data.pop("lambda")
        _check_keys(source, data, cls)
        for required in ("benchmarks", "models", "conditions"):
            if not data.get(required):
                raise ConfigError(f"{source}: {required!r} must list at least one entry")
        data.setdefault("out", "runs/" + Path(source).stem if source != "<config>" else "runs/run")
        benchmarks = []
        for i, b in enumerate(data.pop("benchmarks")):
            where = f"{source}: benchmarks[{i}]"
            if not isinstance(b, Mapping) or "name" not in b or "annotations" not in b:
                raise ConfigError(f"{where}: needs 'name' and 'annotations'")
            _check_keys(where, b, BenchmarkEntry)
            benchmarks.append(BenchmarkEntry(**{**b, "annotations": str(b["annotations"])}))
        conditions = []
        for i, c in enumerate(data.pop("conditions")):
            where = f"{source}: conditions[{i}]"
            if isinstance(c, str):
                c = {"strategy": c}
            if not isinstance(c, Mapping) or "strategy" not in c:
                raise ConfigError(f"{where}: needs 'strategy'")
            _check_keys(where, c, ConditionEntry)
            rot = c.get("rotations", "none")
            if not (rot in ("none", "all") or isinstance(rot, list)):
                raise ConfigError(f"{where}: rotations must be none, all or a list of integers")
            conditions.append(ConditionEntry(**c))
        models = []
        for i, m in enumerate(data.pop("models")):
            if isinstance(m, str):
                m = {"preset": m}
            if not isinstance(m, Mapping):
                raise ConfigError(f"{source}: models[{i}] must be a mapping or a preset name")
            models.append(dict(m))
        if data.get("damaged_videos", "answer") not in ("answer", "skip"):
            raise ConfigError(f"{source}: damaged_videos must be answer or skip, not {data['damaged_videos']!r}")
        _check_executor(source, data)
        parallel = data.get("parallel_models", 1)
        if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
            raise ConfigError(f"{source}: parallel_models must be an integer >= 1, not {parallel!r}")
        if parallel > 1 and data.get("executor", "local") != "local":
            raise ConfigError(f"{source}: parallel_models is the local executor's; with executor "
                              f"{data['executor']!r} use ray.concurrent_models")
        processes = data.get("model_processes", False)
        if not isinstance(processes, bool):
            raise ConfigError(f"{source}: model_processes must be true or false, not {processes!r}")
        if processes and data.get("executor", "local") != "local":
            raise ConfigError(f"{source}: model_processes is the local executor's; executor "
                              f"{data['executor']!r} places its models itself")
        try:
            cfg = cls(
                benchmarks=tuple(benchmarks), conditions=tuple(conditions), models=tuple(models),
                source=source, **data,
            )
            from tempcore.selection.registry import STRATEGIES

            for c in cfg.conditions:
                if c.strategy in STRATEGIES:  # an unknown one is reported (with the others) by check_config
                    c.condition(cfg)  # validates mode / k
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: {exc}") from exc
        return cfg


EXECUTORS = ("local", "ray")


def _check_executor(source: str, data: dict[str, Any]) -> None:
    """``executor`` is local or ray; the ``ray`` mapping is valid (checked without importing ray)."""
    executor = data.get("executor", "local")
    if executor not in EXECUTORS:
        raise ConfigError(f"{source}: executor must be one of {', '.join(EXECUTORS)}, not {executor!r}")
    RayOptions.from_dict(data.get("ray") or {}, where=f"{source}: ray")
    data["ray"] = dict(data.get("ray") or {})


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
