"""The one registry (tempcore.registry): lazy entries, checks, the collision policy, freeze, suggestions,
and every kind of thing tempcore looks up by name built on it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tempcore.registry import GROUPS, Registry, RegistryError, UnknownNameError, did_you_mean, suggest


class Base:
    pass


class Child(Base):
    pass


@pytest.fixture
def plugin_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module on sys.path that counts its imports (to see that lazy entries stay lazy)."""
    name = f"regplug_{abs(hash(tmp_path)) % 10**8}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
        import builtins
        builtins.REGPLUG_IMPORTS = getattr(builtins, "REGPLUG_IMPORTS", 0) + 1

        class Thing:
            pass

        class Nested:
            class Inner:
                pass

        NOT_A_CLASS = 3
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import builtins

    monkeypatch.setattr(builtins, "REGPLUG_IMPORTS", 0, raising=False)
    return name


def test_lazy_entries_are_imported_on_first_lookup_only(plugin_module: str) -> None:
    import builtins

    reg: Registry[type] = Registry("thing")
    reg.register_lazy("thing", f"{plugin_module}:Thing", description="a thing")
    reg.register_lazy("inner", f"{plugin_module}:Nested.Inner")
    assert "thing" in reg and reg.names() == ["inner", "thing"] and len(reg) == 2
    assert reg.target("thing") == f"{plugin_module}:Thing" and reg.meta("thing") == {"description": "a thing"}
    assert builtins.REGPLUG_IMPORTS == 0  # listing, membership, target and meta import nothing
    thing = reg["thing"]
    assert thing.__name__ == "Thing" and reg.get("thing") is thing
    assert reg["inner"].__qualname__ == "Nested.Inner"
    assert builtins.REGPLUG_IMPORTS == 1


def test_lazy_target_must_be_module_colon_attr_and_exist(plugin_module: str) -> None:
    reg: Registry[object] = Registry("thing")
    with pytest.raises(RegistryError, match="'package.module:attr'"):
        reg.register_lazy("x", "no_colon_here")
    reg.register_lazy("missing", f"{plugin_module}:Missing")
    with pytest.raises(RegistryError, match="thing 'missing': cannot load"):
        reg["missing"]
    reg.register_lazy("gone", "tempcore_no_such_module_xyz:Thing")
    with pytest.raises(ImportError):  # a missing (optional) dependency propagates as is
        reg["gone"]


def test_base_class_and_check_are_applied_when_resolved(plugin_module: str) -> None:
    classes: Registry[type[Base]] = Registry("base", base=Base)
    classes.register("child", Child)
    classes.register("instance", Child())
    classes.register_lazy("other", f"{plugin_module}:Thing")
    assert classes["child"] is Child and isinstance(classes["instance"], Child)
    with pytest.raises(RegistryError, match=r"base 'other': .*Thing.* is not a .*Base"):
        classes["other"]

    def positive(name: str, value: object) -> None:
        if not (isinstance(value, int) and value > 0):
            raise RegistryError(f"{name}: not positive")

    numbers: Registry[int] = Registry("number", check=positive)
    numbers.register("one", 1)
    numbers.register("minus", -1)
    assert numbers["one"] == 1
    with pytest.raises(RegistryError, match="minus: not positive"):
        numbers["minus"]


def test_one_collision_policy_same_is_a_noop_other_needs_replace() -> None:
    reg: Registry[object] = Registry("widget")
    a, b = object(), object()
    reg.register("w", a)
    reg.register("w", a)  # the same object again
    with pytest.raises(RegistryError, match="widget 'w' is already registered .*replace=True"):
        reg.register("w", b)
    assert reg["w"] is a
    reg.register("w", b, replace=True)
    assert reg["w"] is b
    reg.register_lazy("lazy", "json:dumps")
    reg.register_lazy("lazy", "json:dumps")
    with pytest.raises(RegistryError, match="already registered as 'json:dumps'"):
        reg.register_lazy("lazy", "json:loads")
    import json

    assert reg["lazy"] is json.dumps
    reg.register_lazy("lazy", "json:loads", replace=True)
    assert reg["lazy"] is json.loads  # the resolved cache follows a replacement


def test_decorator_registers_and_returns_the_thing() -> None:
    reg: Registry[object] = Registry("function")

    @reg.register("double", description="twice")
    def double(x: int) -> int:
        return 2 * x

    assert double(2) == 4 and reg["double"] is double and reg.meta("double")["description"] == "twice"


def test_freeze_refuses_later_registration_and_removal() -> None:
    reg: Registry[int] = Registry("number")
    reg.register("one", 1)
    reg.freeze()
    assert reg.frozen and reg["one"] == 1
    with pytest.raises(RegistryError, match="frozen"):
        reg.register("two", 2)
    with pytest.raises(RegistryError, match="frozen"):
        reg.unregister("one")
    copy = reg.copy()
    copy.register("two", 2)
    assert "two" in copy and "two" not in reg


def test_names_are_checked_and_unknown_names_suggest() -> None:
    def lower(name: str) -> None:
        if name != name.lower():
            raise RegistryError(f"{name!r} is not lower case")

    reg: Registry[int] = Registry("colour", valid_name=lower)
    for i, name in enumerate(("red", "green", "blue")):
        reg.register(name, i)
    with pytest.raises(RegistryError, match="not lower case"):
        reg.register("Red", 9)
    with pytest.raises(RegistryError, match="non-empty"):
        reg.register("", 9)
    with pytest.raises(UnknownNameError, match=r"unknown colour 'gren'; did you mean 'green'\? \(known: blue, green, red\)"):
        reg["gren"]
    assert isinstance(UnknownNameError("x"), KeyError)
    assert reg.get("gren", None) is None and reg.get("red") == 0
    with pytest.raises(ValueError, match="my own error for 'x'"):
        Registry("c", unknown=lambda name, known: ValueError(f"my own error for {name!r}")).get("x")


def test_did_you_mean_is_the_one_suggestion_helper() -> None:
    known = ["maxprob", "minprob", "uniform"]
    assert suggest("maxprb", known) == ["maxprob", "minprob"]
    assert did_you_mean("maxprb", known, n=1) == "; did you mean 'maxprob'?"
    assert did_you_mean("maxprb", known) == "; did you mean 'maxprob' or 'minprob'?"
    assert did_you_mean("siglp2", ["siglip2"], quote=False) == "; did you mean siglip2?"
    assert did_you_mean("zzz", known) == ""


def test_every_kind_of_thing_is_a_registry_with_its_entry_point_group() -> None:
    from tempcore.benchmarks.registry import LOADERS
    from tempcore.encoders import ENCODERS
    from tempcore.models.presets import PRESETS
    from tempcore.models.registry import BACKENDS
    from tempcore.prompts import TEMPLATES
    from tempcore.selection import STRATEGIES

    kinds = {"benchmarks": LOADERS, "strategies": STRATEGIES, "encoders": ENCODERS, "models": BACKENDS,
             "presets": PRESETS, "templates": TEMPLATES}
    for kind, reg in kinds.items():
        assert isinstance(reg, Registry) and reg.group == GROUPS[kind] == f"tempcore.{kind}"
    assert GROUPS["analyses"] == "tempcore.analyses"
    # the world plugs in through tempcore's own entry points, not by the library naming it
    assert BACKENDS.meta("zoo") == {"entry_point": "tempcore"}
    assert BACKENDS.target("zoo") == "tempcore.world.answerers.model:ZooModel"
    assert ENCODERS.target("tempcore-world") == "tempcore.world:ENCODER_DIR"


def test_domain_registries_keep_their_errors_and_policies() -> None:
    from tempcore.benchmarks import UnknownBenchmarkError, register
    from tempcore.benchmarks.generic import GenericLoader
    from tempcore.benchmarks.registry import LOADERS, describe
    from tempcore.encoders import ENCODERS, EncoderLoadError, register_encoder
    from tempcore.models.base import ModelConfigError
    from tempcore.models.registry import BACKENDS, register_backend
    from tempcore.prompts import PromptError, PromptTemplate, register_template

    with pytest.raises(UnknownBenchmarkError):
        LOADERS["videome"]
    with pytest.raises(ValueError, match="lower-case words"):
        register("Bad Name", GenericLoader)
    register("generic", "tempcore.benchmarks.generic:GenericLoader", "generic JSONL / CSV schema (docs/benchmark-format.md)")
    with pytest.raises(ValueError, match="already registered"):
        register("generic", GenericLoader)
    assert describe("generic").startswith("generic JSONL")

    with pytest.raises(ModelConfigError, match="already registered"):
        register_backend("hf", "tempcore.models.hf_text:HFTextModel")
    register_backend("hf", "tempcore.models.hf_vlm:HFVisionLanguageModel")  # the same again: fine
    with pytest.raises(ModelConfigError, match="module:attr"):
        register_backend("new", "no-colon")
    assert "new" not in BACKENDS

    def factory(**kw: object) -> object:
        raise AssertionError("never called")

    register_encoder("reg-test-encoder", factory)
    register_encoder("reg-test-encoder", factory)
    with pytest.raises(EncoderLoadError, match="already registered"):
        register_encoder("reg-test-encoder", lambda **kw: None)  # encoders now have a collision check
    with pytest.raises(ValueError, match="invalid encoder name"):
        register_encoder("a|b", factory)
    ENCODERS.unregister("reg-test-encoder")

    with pytest.raises(PromptError, match="registered under another name"):
        from tempcore.prompts import TEMPLATES

        copy = TEMPLATES.copy()
        copy.register("x", PromptTemplate("y", "{question}"))
        copy["x"]
    with pytest.raises(PromptError, match="already registered"):
        register_template(PromptTemplate("default", "{question}"))


def test_the_strategy_decorator_owns_preparation_and_error_prefixes() -> None:
    import inspect

    from tempcore.records import FrameSet
    from tempcore.selection import STRATEGIES, Frames, SelectionError, needs_scores, strategy

    @strategy("reg-every-other", needs_scores=False)
    def every_other(frames: Frames, *, start: int = 0, sample_id: str) -> FrameSet:
        if start < 0:
            raise SelectionError(f"start must be >= 0, not {start}")
        return frames.frameset(np.arange(start, frames.n, 2)[: frames.k])

    sig = inspect.signature(every_other)
    assert list(sig.parameters) == ["timestamps", "scores", "k", "seed", "sample_id", "start"]
    assert every_other.__name__ == "every_other" and every_other.needs_scores is False
    t = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 2.5])
    # positions 1 and 3 in time order (0.5 s, 1.5 s) are the caller's indices 4 and 2
    assert every_other(t[::-1], None, 2, start=1).indices == (4, 2)
    with pytest.raises(SelectionError, match=r"^sample 'q': reg-every-other: start must be >= 0, not -1$"):
        every_other(t, None, 2, sample_id="q", start=-1)
    with pytest.raises(SelectionError, match=r"^sample 'q': reg-every-other: K must be a positive int"):
        every_other(t, None, 0, sample_id="q")
    assert "reg-every-other" not in STRATEGIES

    @strategy("reg-best", needs_scores=True, register=True)
    def best(frames: Frames) -> FrameSet:
        return frames.frameset(np.argsort(-frames.s, kind="stable")[:1])

    try:
        assert STRATEGIES["reg-best"] is best and needs_scores("reg-best")
        assert needs_scores("shuffled", "reg-best") and not needs_scores("shuffled", "uniform")
        with pytest.raises(SelectionError, match="reg-best: this strategy ranks frames by score"):
            best(t, None, 1)
        assert best(t, np.array([0, 0, 5, 0, 0, 0.0]), 1).indices == (2,)
    finally:
        STRATEGIES.unregister("reg-best")
    assert not needs_scores("no-such-strategy")  # selection names the unknown strategy, not the config
    with pytest.raises(TypeError, match="keyword-only"):
        strategy("bad", needs_scores=False)(lambda frames, k: None)


LIBRARY_EXEMPT = ("world/", "demo.py", "cli/world.py", "cli/demo.py")


def _names_world(node: object) -> str | None:
    import ast

    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name == "tempcore.world" or alias.name.startswith("tempcore.world."):
                return alias.name
    if isinstance(node, ast.ImportFrom) and node.module:
        if node.module == "tempcore.world" or node.module.startswith("tempcore.world."):
            return node.module
        if node.module == "tempcore" and any(a.name == "world" for a in node.names):
            return "from tempcore import world"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        import re

        # a lazy "module:attr" reference or a module name handed to importlib
        if re.fullmatch(r"tempcore\.world(\.\w+)*(:[\w.]+)?", node.value):
            return node.value
    return None


def test_the_library_never_imports_the_world() -> None:
    import ast

    import tempcore

    root = Path(tempcore.__file__).parent
    offenders = []
    scanned = 0
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(LIBRARY_EXEMPT):
            continue
        scanned += 1
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            named = _names_world(node)
            if named:
                offenders.append(f"{rel}:{getattr(node, 'lineno', '?')}: {named}")
    assert scanned > 50
    assert offenders == [], "library modules that name tempcore.world:\n" + "\n".join(offenders)


def test_the_scan_sees_each_way_of_naming_the_world() -> None:
    import ast

    for code in ("import tempcore.world", "from tempcore.world.answerers import ZooModel",
                 "from tempcore import world", "BACKENDS = {'zoo': 'tempcore.world.answerers:ZooModel'}",
                 "importlib.import_module('tempcore.world')"):
        assert any(_names_world(n) for n in ast.walk(ast.parse(code))), code
    for code in ("import tempcore.worldly", "x = 'see tempcore.world.encoder_path() for the folder'"):
        assert not any(_names_world(n) for n in ast.walk(ast.parse(code))), code


def test_importing_the_registries_imports_neither_torch_nor_the_world() -> None:
    code = (
        "import sys, tempcore, tempcore.registry, tempcore.selection, tempcore.benchmarks, tempcore.encoders, "
        "tempcore.models, tempcore.prompts, tempcore.models.presets\n"
        "from tempcore.models.registry import BACKENDS\n"
        "from tempcore.encoders import available_encoders\n"
        "assert 'zoo' in BACKENDS and 'tempcore-world' in available_encoders()\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('tempcore.world')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_a_run_imports_the_zoo_adapter_but_no_training_code() -> None:
    code = (
        "import sys\n"
        "from tempcore.models import load_model\n"
        "m = load_model({'backend': 'zoo', 'model': 'zoo-text'})\n"
        "print(type(m).__module__, sorted(n for n in sys.modules if n.startswith('tempcore.world.answerers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    module, loaded = out.stdout.strip().split(" ", 1)
    assert module == "tempcore.world.answerers.model"
    assert "training" not in loaded and "evaluation" not in loaded and "sampling" not in loaded, loaded
