"""Per-backend model specs: ``backend:`` chooses a small typed spec, and a model entry is checked against
it when the configuration is checked (``check_config``), naming the entry and the key."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tempcore.models import ModelConfigError, ModelSpec, as_spec
from tempcore.models.base import UnknownSpecKeys, spec_key
from tempcore.models.registry import BACKENDS, register_backend, spec_class
from tempcore.models.specs import HFTextSpec, HFVLMSpec, OpenAISpec, VLLMSpec, markdown_table, markdown_tables
from tempcore.prompts import get_template
from tempcore.run.config import ConfigError, RunConfig, check_config
from tempcore.run.identity import fingerprint, model_identity

README = Path(__file__).parent.parent / "README.md"
URL = "http://localhost:1/v1"


def _check(models: list[Any], tmp_path: Path) -> list[Any]:
    ann = tmp_path / "bench.jsonl"
    ann.write_text("")
    cfg = RunConfig.from_dict({"benchmarks": [{"name": "generic", "annotations": str(ann)}],
                               "models": models, "conditions": ["noframe"]}, source="run.yaml")
    return check_config(cfg)


def test_backend_chooses_the_spec_class() -> None:
    assert type(ModelSpec(backend="hf", model="x")) is HFVLMSpec
    assert type(ModelSpec(backend="hf-text", model="x")) is HFTextSpec
    assert type(ModelSpec(backend="openai", model="x", base_url=URL)) is OpenAISpec
    assert type(ModelSpec(backend="vllm", model="x")) is VLLMSpec
    assert type(as_spec({"preset": "qwen3-8b-text"})) is HFTextSpec
    assert type(as_spec("qwen3-vl-8b")) is HFVLMSpec
    zoo = spec_class("zoo")  # declared by the world's factory, registered through an entry point
    assert zoo.__name__ == "ZooSpec" and zoo.__module__ == "tempcore.world.answerers.model"
    assert type(as_spec({"backend": "zoo", "model": "zoo-max"})) is zoo


def test_unknown_key_names_the_entry_the_key_and_a_suggestion(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        _check([{"preset": "smolvlm2-256m"}, {"backend": "openai", "model": "m", "base_url": URL},
                {"backend": "hf", "model": "Qwen/Qwen2-VL-2B-Instruct", "name": "qwen", "max_new_token": 4,
                 "base_url": URL}], tmp_path)
    msg = str(err.value)
    assert "run.yaml: 2 problem(s)" in msg
    assert "models[2] (qwen): unknown key 'max_new_token' for backend hf; did you mean 'max_new_tokens'?" in msg
    assert "models[2] (qwen): unknown key 'base_url' for backend hf (known: backend, model," in msg


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"backend": "hf-text", "model": "a/b", "max_frames": 4}, "unknown key 'max_frames' for backend hf-text"),
        ({"backend": "hf-text", "model": "a/b", "processor_kwargs": {}}, "unknown key 'processor_kwargs'"),
        ({"backend": "openai", "model": "m", "base_url": URL, "device": "cuda"}, "unknown key 'device' for backend openai"),
        ({"backend": "openai", "model": "m", "base_url": URL, "concurency": 4},
         "unknown key 'concurency' for backend openai; did you mean 'concurrency'?"),
        ({"backend": "vllm", "model": "a/b", "score_option_text": True}, "unknown key 'score_option_text' for backend vllm"),
        ({"backend": "zoo", "model": "zoo-max", "max_new_tokens": 4}, "unknown key 'max_new_tokens' for backend zoo"),
        ({"preset": "qwen3-vl-8b", "max_frame": 8}, "models[0] (qwen3-vl-8b): unknown key 'max_frame' for backend hf; "
                                                    "did you mean 'max_frames'?"),
        ({"backend": "openai", "model": "m"}, "model m: the openai backend needs base_url"),
        ({"backend": "openai", "model": "m", "base_url": URL, "extra": {"image_fromat": "png"}},
         "unknown openai option(s) ['image_fromat'] in extra; did you mean 'image_format'?"),
        ({"backend": "hf", "model": "a/b", "extra": {"model_clas": "X"}}, "did you mean 'model_class'?"),
        ({"backend": "hf", "model": "a/b", "max_new_tokens": "8"}, "max_new_tokens must be an integer, not '8'"),
        ({"backend": "hf", "model": "a/b", "trust_remote_code": "yes"}, "trust_remote_code must be true or false"),
        ({"backend": "openai", "model": "m", "base_url": URL, "timeout_s": 0}, "timeout_s must be positive"),
        ({"backend": "zoo", "model": "zoo-max", "dtype": "bfloat16"}, "zoo answerers run in float32"),
    ],
)
def test_each_backend_refuses_what_it_does_not_have(tmp_path: Path, entry: dict, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        _check([entry], tmp_path)
    assert expected in str(err.value)


def test_what_a_backend_has_is_accepted(tmp_path: Path) -> None:
    specs = _check([
        {"backend": "hf", "model": "a/b", "max_frames": 32, "image_size": {"longest_edge": 384}, "device": "cpu"},
        {"backend": "hf-text", "model": "a/b", "system_prompt": "s", "score_option_text": True, "name": "t"},
        {"backend": "openai", "model": "m", "base_url": URL, "concurrency": 64, "timeout_s": 5, "name": "o",
         "extra": {"image_format": "png"}, "method": "option_scores"},
        {"backend": "vllm", "model": "a/b", "max_frames": 8, "extra": {"engine_kwargs": {"max_model_len": 4096}},
         "name": "v"},
        {"backend": "zoo", "model": "zoo-max", "max_frames": 2, "batch_size": 4},
    ], tmp_path)
    assert [type(s).__name__ for s, _ in specs] == ["HFVLMSpec", "HFTextSpec", "OpenAISpec", "VLLMSpec", "ZooSpec"]
    assert specs[2][1] == "option_scores" and specs[2][0].timeout_s == 5


def test_specs_round_trip_through_to_dict_and_pickle() -> None:
    for entry in ({"preset": "qwen3-vl-8b", "max_new_tokens": 4}, {"preset": "qwen3-8b-text"},
                  {"backend": "openai", "model": "m", "base_url": URL, "api_key_env": "KEY"},
                  {"backend": "vllm", "model": "a/b"}, {"backend": "zoo", "model": "zoo-mean"}):
        spec = as_spec(entry)
        data = spec.to_dict()
        assert list(data) == list(type(spec).spec_keys())  # the manifest lists this backend's keys only
        assert ModelSpec.from_dict(data) == spec and pickle.loads(pickle.dumps(spec)) == spec
    openai = as_spec({"backend": "openai", "model": "m", "base_url": URL})
    assert "device" not in openai.to_dict() and "processor_kwargs" not in openai.to_dict()
    moved = openai.replace(backend="hf", base_url=None)  # a switch of backend rebuilds the other spec
    assert type(moved) is HFVLMSpec and moved.model == "m"
    with pytest.raises(UnknownSpecKeys, match="unknown key 'base_url' for backend hf"):
        openai.replace(backend="hf")


#: Fingerprints computed by the one flat ModelSpec before the per-backend specs (``noframe_size=384``,
#: the ``default`` template, ``method="generate"``): the same settings keep their fingerprint, so answers
#: stored before the split are still reused.
PINNED = [
    ({"preset": "qwen3-vl-8b"}, "e7d5ef28999cc732e5f94e6bed37870a"),
    ({"preset": "qwen3-8b-text", "max_new_tokens": 4}, "5fddbc13420874a50499318e7e9687b6"),
    ({"preset": "smolvlm2-256m"}, "ffe91f9c92013aa281e01de72d3cc50b"),
    ({"backend": "openai", "model": "m", "base_url": "http://h/v1", "dtype": "bfloat16", "max_frames": 8},
     "0715bcd04c40b055733992600b5d1ebc"),
    ({"backend": "hf", "model": "x/y", "max_image_side": 224, "generation_kwargs": {"top_p": 0.5}},
     "3ad0104df6390c401e9a3323d9053a71"),
    ({"backend": "vllm", "model": "x/y", "system_prompt": "s"}, "3c7d5e28138a7503e95ed04b2a84df60"),
    ({"backend": "zoo", "model": "zoo-max", "extra": {"zoo_dir": "/tmp"}}, "c9e9378e7091f5a45cff4762a8965f04"),
    ({"backend": "hf-text", "model": "a/b", "score_option_text": True}, "2219cbf19536278aeeeaee73eb529a40"),
]


@pytest.mark.parametrize(("entry", "digest"), PINNED)
def test_fingerprints_are_those_of_the_flat_spec(entry: dict, digest: str) -> None:
    ident = model_identity(as_spec(entry), method="generate", template=get_template("default"), noframe_size=384)
    assert fingerprint(ident) == digest


@dataclass(frozen=True)
class EchoSpec(ModelSpec):
    """``backend: echo-test``: a test backend's own keys."""

    volume: int = spec_key(3, doc="how loud")
    max_new_tokens: int = spec_key(8, doc="default generation length")


class EchoModel:
    supports_option_scores = False

    def __init__(self, spec: EchoSpec) -> None:
        self.spec, self.name, self.revision = spec, spec.display_name, None


class DeclaringModel(EchoModel):
    spec_class = EchoSpec


def test_a_backend_registered_from_outside_brings_its_spec(tmp_path: Path) -> None:
    try:
        register_backend("echo-test", EchoModel, spec=EchoSpec)
        register_backend("echo-test", EchoModel, spec=EchoSpec)  # the same again: a no-op
        with pytest.raises(ModelConfigError, match="already registered with the spec"):
            register_backend("echo-test", EchoModel, spec=HFTextSpec)
        register_backend("echo-lazy", "test_config_specs:EchoModel", spec="test_config_specs:EchoSpec")
        register_backend("echo-attr", DeclaringModel)  # the factory's spec_class attribute
        register_backend("echo-plain", EchoModel)  # no spec: the common keys, options under extra
        with pytest.raises(ModelConfigError, match="not a ModelSpec subclass"):
            register_backend("echo-bad", EchoModel, spec=dict)  # type: ignore[arg-type]
        assert "echo-bad" not in BACKENDS
        specs = _check([{"backend": b, "model": "m", "name": b, "volume": 5}
                        for b in ("echo-test", "echo-lazy", "echo-attr")], tmp_path)
        assert [type(s).__name__ for s, _ in specs] == ["EchoSpec"] * 3 and specs[0][0].volume == 5
        assert spec_class("echo-plain") is ModelSpec
        with pytest.raises(ConfigError) as err:
            _check([{"backend": "echo-test", "model": "m", "volum": 5},
                    {"backend": "echo-plain", "model": "m", "volume": 5}], tmp_path)
        assert "models[0] (m): unknown key 'volum' for backend echo-test; did you mean 'volume'?" in str(err.value)
        assert "models[1] (m): unknown key 'volume' for backend echo-plain" in str(err.value)
        ident = model_identity(specs[0][0], method="generate", template=get_template("default"), noframe_size=8)
        assert ident["max_new_tokens"] == 8 and ident["processor_kwargs"] == {}  # unset: the flat defaults
    finally:
        for name in ("echo-test", "echo-lazy", "echo-attr", "echo-plain", "echo-bad"):
            BACKENDS.unregister(name)


PLUGIN = textwrap.dedent('''
    from dataclasses import dataclass

    from tempcore.models.base import ModelSpec, spec_key


    @dataclass(frozen=True)
    class LoudSpec(ModelSpec):
        """``backend: loud``: a plug-in's own keys."""

        volume: int = spec_key(3, doc="how loud")


    class LoudModel:
        spec_class = LoudSpec
        supports_option_scores = False

        def __init__(self, spec):
            raise AssertionError("a dry run loads no model")
''')


def test_an_entry_point_backend_brings_its_spec_to_the_config_check(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "loudplug.py").write_text(PLUGIN)
    info = site / "loudplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: loudplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tempcore.models]\nloud = loudplug:LoudModel\n")
    ann = tmp_path / "bench.jsonl"
    ann.write_text('{"id": "q", "video": "v.mp4", "question": "Q?", "options": ["a", "b"], "answer": 0}\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}

    def dry_run(model: dict) -> subprocess.CompletedProcess:
        cfg = tmp_path / "run.yaml"
        cfg.write_text(json.dumps({"out": str(tmp_path / "run"), "benchmarks": [{"name": "generic",
                                   "annotations": str(ann)}], "models": [model], "conditions": ["noframe"]}))
        return subprocess.run([sys.executable, "-m", "tempcore", "run", "--config", str(cfg), "--dry-run"],
                              capture_output=True, text=True, env=env, timeout=300)

    ok = dry_run({"backend": "loud", "model": "m", "volume": 11})
    assert ok.returncode == 0, ok.stderr
    bad = dry_run({"backend": "loud", "model": "m", "name": "amp", "volum": 11, "max_new_tokens": 4})
    assert bad.returncode != 0
    assert "models[0] (amp): unknown key 'volum' for backend loud; did you mean 'volume'?" in bad.stderr
    assert "models[0] (amp): unknown key 'max_new_tokens' for backend loud" in bad.stderr


def test_checking_built_in_entries_imports_no_adapter_no_torch_and_no_httpx() -> None:
    code = (
        "import sys\n"
        "from tempcore.models.registry import as_spec\n"
        "as_spec({'backend': 'openai', 'model': 'm', 'base_url': 'http://h/v1'}); as_spec('qwen3-vl-8b')\n"
        "as_spec({'backend': 'vllm', 'model': 'a/b'}); as_spec({'backend': 'hf-text', 'model': 'a/b'})\n"
        "adapters = ('openai_http', 'hf_vlm', 'hf_text', 'vllm_offline', '_hf_common')\n"
        "print('torch' in sys.modules, 'httpx' in sys.modules, 'vllm' in sys.modules,\n"
        "      [a for a in adapters if 'tempcore.models.' + a in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "False False False []"  # the specs come without their adapters


def test_checking_the_zoo_panel_imports_no_torch() -> None:
    # a Ray driver checks every model entry (check_config) but runs none: the zoo backend's spec
    # must come without torch (importing it cost the driver ~2 s before its actors were created)
    code = (
        "import sys\n"
        "from tempcore.models.registry import as_spec\n"
        "from tempcore.world.answerers.model import zoo_specs\n"
        "[as_spec(s.to_dict()) for s in zoo_specs() if s.backend == 'zoo']\n"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "False"


def test_the_docs_model_entry_tables_are_the_declared_ones() -> None:
    """The site's model-spec page is generated from the specs (tools/mkdocs_hooks.py), never copied."""
    page = README.parent / "docs" / "reference" / "model-specs.md"
    assert "<!-- generated: model-specs -->" in page.read_text()
    hooks = _docs_hooks()
    assert markdown_tables() in hooks.generated("model-specs")
    assert markdown_table(spec_class("zoo")) in hooks.generated("model-specs")


def _docs_hooks():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location("mkdocs_hooks", README.parent / "tools" / "mkdocs_hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
