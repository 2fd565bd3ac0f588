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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tempcore.errors import TempcoreError
from tempcore.records import Condition

DEFAULT_ENCODER = "google/siglip2-so400m-patch14-384"

#: Strategies whose frames depend on the Eq. 1 scores (they need an encoder and a text mode).
SCORE_BASED = frozenset({"maxprob", "minprob", "aks", "bolt"})
#: Strategies that show no video frames (grey images for ``noframe``, no image at all for ``textonly``).
FRAMELESS = frozenset({"noframe", "textonly"})


class ConfigError(TempcoreError):
    """The run configuration is invalid (names the file, the entry and the reason)."""


def _check_keys(where: str, data: Mapping[str, Any], cls: type) -> None:
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known: {sorted(names)}")


@dataclass(frozen=True)
class BenchmarkEntry:
    """A benchmark to audit: registry name, annotations (file or folder), video root, loader options."""

    name: str
    annotations: str
    video_root: str | None = None
    skip_invalid: bool = False
    limit: int | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ConditionEntry:
    """A condition family. ``mode`` defaults to ``qa`` for score-based strategies, else ``none``.

    ``k`` defaults to the run's K. ``rotations``: ``none`` (original option order), ``all`` (every
    cyclic rotation of each sample's options: circular evaluation) or a list of rotations.
    ``params`` go to the strategy (e.g. ``stride``, ``max_windows`` for ``oracle``; ``alpha`` for ``bolt``).
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
            variant=self.variant,
        )

    def rotation_list(self, n_options: int) -> list[int]:
        if self.rotations == "none":
            return [0]
        if self.rotations == "all":
            return list(range(max(n_options, 1)))
        return sorted({int(r) % max(n_options, 1) for r in self.rotations})


@dataclass(frozen=True)
class RunConfig:
    """Everything ``tempcore run`` needs. ``models`` are model-spec mappings (see
    :class:`tempcore.models.ModelSpec`) plus an optional ``method`` (``generate`` or ``option_scores``)."""

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
    tau: float = 0.15
    lam: float = 0.5
    source: str = ""

    @property
    def needs_encoder(self) -> bool:
        return any(c.condition(self).mode != "none" for c in self.conditions)

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
        try:
            cfg = cls(
                benchmarks=tuple(benchmarks), conditions=tuple(conditions), models=tuple(models),
                source=source, **data,
            )
            for c in cfg.conditions:
                c.condition(cfg)  # validates strategy / mode / k
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: {exc}") from exc
        return cfg


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
