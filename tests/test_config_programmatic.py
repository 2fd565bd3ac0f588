"""The run configuration is validated however it is built (a YAML file, the constructor,
``dataclasses.replace``, ``with_changes``), with the same messages; every problem in one pass."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from tempcore.models import ModelConfigError, as_spec
from tempcore.run.config import BenchmarkEntry, ConditionEntry, ConfigError, RunConfig, load_config
from tempcore.run.options import ActorResources, RayOptions

BASE: dict[str, Any] = {"out": "runs/x", "benchmarks": [{"name": "generic", "annotations": "a.jsonl"}],
                        "models": [{"backend": "zoo", "model": "zoo-mean"}], "conditions": ["uniform"]}
RULE = "parallel_models is the local executor's; with executor 'ray' use ray.concurrent_models"


def _built() -> RunConfig:
    return RunConfig(out="runs/x", benchmarks=(BenchmarkEntry("generic", "a.jsonl"),),
                     models=({"backend": "zoo", "model": "zoo-mean"},), conditions=(ConditionEntry("uniform"),),
                     source="run.yaml")


def _message(build: Any) -> str:
    with pytest.raises(ConfigError) as err:
        build()
    return str(err.value)


def test_an_invalid_combination_gets_the_same_error_however_the_config_is_built(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(BASE | {"parallel_models": 2, "executor": "ray"}))
    from_yaml = _message(lambda: load_config(path))
    assert from_yaml == f"{path}: {RULE}"
    expected = f"run.yaml: {RULE}"
    cfg = _built()
    assert _message(lambda: RunConfig(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
                                      | {"parallel_models": 2, "executor": "ray"})) == expected
    assert _message(lambda: dataclasses.replace(cfg, parallel_models=2, executor="ray")) == expected
    two = cfg.with_changes(parallel_models=2)
    assert _message(lambda: dataclasses.replace(two, executor="ray")) == expected  # the CLI's --executor ray
    assert _message(lambda: two.with_changes(executor="ray")) == expected
    assert _message(lambda: RunConfig.from_dict(BASE | {"parallel_models": 2, "executor": "ray"},
                                                source="run.yaml")) == expected


def test_the_cli_executor_override_is_validated_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tempcore.cli import main

    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(BASE | {"parallel_models": 2, "model_processes": True}))
    assert main(["run", "--config", str(path), "--dry-run", "--no-progress", "--executor", "ray"]) == 1
    err = capsys.readouterr().err
    assert RULE in err and "model_processes is the local executor's; executor 'ray' places its models itself" in err


def test_every_problem_in_one_pass_with_a_suggestion_at_every_level() -> None:
    data = BASE | {"condtions": ["uniform"], "lamda": 0.5, "fps": "10", "executor": "ray", "parallel_models": 2,
                   "benchmarks": [{"name": "generic", "annotations": "a.jsonl", "video_roots": "v", "binary": "yes"}],
                   "ray": {"encoder": {"gpus": 1}, "models": {"m": {"replicas": 0}}}}
    msg = _message(lambda: RunConfig.from_dict(data, source="run.yaml"))
    lines = msg.splitlines()
    assert lines[0] == "run.yaml: 7 problem(s):"
    assert "  benchmarks[0].binary must be true or false, not 'yes'" in lines
    assert any(line.startswith("  benchmarks[0]: unknown key(s) ['video_roots']; did you mean 'video_root'? "
                               "(known: name, annotations, video_root,") for line in lines)
    assert "  fps must be a number, not '10'" in lines
    assert "  ray.encoder: unknown key(s) ['gpus']; did you mean 'num_gpus'? (known: actors, num_gpus, num_cpus)" in lines
    assert "  ray.models.m.replicas must be an integer >= 1, not 0" in lines
    assert f"  {RULE}" in lines  # a rule across keys, reported with the others
    top = next(line for line in lines if "['condtions', 'lamda']" in line)
    assert "'condtions': did you mean 'conditions'?" in top and "'lamda': did you mean 'lambda'?" in top
    known = top.split("(known: ")[1]
    assert "lambda" in known.split(", ") and "lam" not in known.split(", ") and "source" not in known


def test_a_single_unknown_top_level_key_gets_its_suggestion() -> None:
    data = {k: v for k, v in BASE.items() if k != "conditions"} | {"conditions": ["uniform"], "condtions": []}
    msg = _message(lambda: RunConfig.from_dict(data, source="run.yaml"))
    assert msg.startswith("run.yaml: unknown key(s) ['condtions']; did you mean 'conditions'? (known: out, ")


def test_lambda_is_the_key_and_lam_the_field() -> None:
    cfg = RunConfig.from_dict(BASE | {"lambda": 0.25})
    assert cfg.lam == 0.25 and cfg.with_changes(**{"lambda": 0.75}).lam == 0.75
    raw = {k: v for k, v in cfg.to_dict().items() if k != "source"}
    assert raw["lam"] == 0.25 and RunConfig.from_dict(raw) == cfg  # a stored config (to_dict) loads again
    assert "lambda must be a number, not 'x'" in _message(lambda: cfg.with_changes(**{"lambda": "x"}))


def test_valid_values_are_kept_as_given() -> None:
    cfg = RunConfig.from_dict(BASE | {"fps": 10, "tau": 0, "ray": {"address": "auto"}})
    assert type(cfg.fps) is int and cfg.fps == 10 and type(cfg.tau) is int  # not converted to float
    assert cfg.ray == {"address": "auto"} and isinstance(cfg.ray, dict)
    assert cfg.models == ({"backend": "zoo", "model": "zoo-mean"},) and cfg.conditions == (ConditionEntry("uniform"),)
    assert RunConfig.from_dict(BASE | {"models": ["qwen3-vl-8b"]}).models == ({"preset": "qwen3-vl-8b"},)


def test_entries_and_options_built_alone_are_validated() -> None:
    bad: Any = "yes"
    assert _message(lambda: BenchmarkEntry("b", "a.jsonl", binary=bad)) == "benchmark b: binary must be true or false, not 'yes'"
    assert "a score-based strategy needs mode q or qa" in _message(lambda: ConditionEntry("maxprob", mode="none"))
    assert _message(lambda: RayOptions(max_attempts=0)) == "ray.max_attempts must be an integer >= 1, not 0"
    assert _message(lambda: RayOptions.from_dict({"max_attempts": 0})) == "ray.max_attempts must be an integer >= 1, not 0"
    assert _message(lambda: ActorResources(actors=0)) == "actor resources: actors must be an integer >= 1, not 0"
    assert RayOptions.from_dict({"model_defaults": {"replicas": 2, "num_gpus": 1}}).model_defaults == \
        ActorResources(actors=2, num_gpus=1.0)


@pytest.mark.parametrize(("change", "message"), [
    ({"fps": "10"}, "fps must be a number, not '10'"),
    ({"k": 32.0}, "k must be an integer, not 32.0"),
    ({"seed": True}, "seed must be an integer, not True"),
    ({"encoder": 3}, "encoder must be a string, not 3"),
    ({"conditions": [{"strategy": "uniform", "rotations": ["1"]}]},
     "conditions[0].rotations must be none, all or a list of integers, not ['1']"),
    ({"benchmarks": [{"name": "generic", "annotations": 2024}]}, "benchmarks[0].annotations must be a string, not 2024"),
    ({"benchmarks": [{"name": "generic", "annotations": "a", "options": [1]}]},
     "benchmarks[0].options must be a mapping, not [1]"),
])
def test_stricter_checks_refuse_odd_values(change: dict[str, Any], message: str) -> None:
    """Behaviour change: these were accepted by the hand-written checks (and failed later, or not)."""
    assert message in _message(lambda: RunConfig.from_dict(BASE | change))


def test_model_spec_values_are_checked_by_pydantic_all_at_once() -> None:
    with pytest.raises(ModelConfigError) as err:
        as_spec({"backend": "hf", "model": "a/b", "max_new_tokens": "8", "trust_remote_code": "yes"})
    assert "trust_remote_code must be true or false, not 'yes'" in str(err.value)
    assert "max_new_tokens must be an integer, not '8'" in str(err.value)
    with pytest.raises(ModelConfigError, match="image_size must be a mapping to integers or null"):
        as_spec({"backend": "hf", "model": "a/b", "image_size": {"longest_edge": 384.0}})  # behaviour change
    spec = as_spec({"backend": "openai", "model": "m", "base_url": "http://h/v1", "timeout_s": 5})
    assert type(spec.timeout_s) is int  # kept as given (the fingerprint hashes it)
