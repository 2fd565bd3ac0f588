"""Plugging in from outside the package: a new benchmark format, strategy and model backend, through the
registry API (in process) and through the entry points of a small installed distribution (a subprocess
with the distribution on PYTHONPATH), run through `tempcore select` and `tempcore run`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

from tempcore.cli import main
from tempcore.run.store import RunStore
from tempcore.video.synthetic import write_video

PLUGIN = textwrap.dedent('''
    """A user's package: a benchmark format, a strategy and a model backend for tempcore."""

    from __future__ import annotations

    from pathlib import Path

    import numpy as np

    from tempcore.benchmarks.base import Loader
    from tempcore.benchmarks.choices import InvalidRow
    from tempcore.models.base import ModelResponse
    from tempcore.records import Sample
    from tempcore.selection import Frames, strategy


    class PipeLoader(Loader):
        """One sample per line: id|video|question|option;option;...|answer index."""

        name = "pipes"
        description = "pipe-separated lines: id|video|question|options;...|answer"
        options = {}
        folder_patterns = ("*.pipes",)

        def read(self, annotations, ctx):
            for file in self.annotation_files(annotations):
                lines = ctx.log.read_text(file).splitlines()
                for row, line in enumerate(lines, 1):
                    parts = line.split("|")
                    if len(parts) != 5:
                        yield file, row, InvalidRow("shape", f"{len(parts)} fields, expected 5", None)
                        continue
                    sid, video, question, options, answer = parts
                    yield file, row, Sample("pipes", sid, video, question, tuple(options.split(";")), int(answer))


    @strategy("every_other", needs_scores=False)
    def every_other(frames: Frames, *, offset: int = 0):
        """Every second frame from ``offset``, at most K."""
        return frames.frameset(np.arange(offset, frames.n, 2)[: frames.k])


    class FirstOption:
        """Answers A, always (and fails a request shown another number of frames than K=3)."""

        supports_option_scores = False

        def __init__(self, spec):
            self.spec = spec
            self.name = spec.display_name
            self.revision = "v1"

        @classmethod
        def from_spec(cls, spec):
            return cls(spec)

        def answer(self, requests, *, method="generate"):
            return [ModelResponse("A", None, 0.0) if len(r.images) == 3
                    else ModelResponse.failure(f"{len(r.images)} images") for r in requests]

        def close(self):
            pass
''')

ENTRY_POINTS = textwrap.dedent("""
    [tempcore.benchmarks]
    pipes = tcplug:PipeLoader

    [tempcore.strategies]
    every_other = tcplug:every_other

    [tempcore.models]
    first-option = tcplug:FirstOption
""")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small installed distribution: a module and its .dist-info with entry points."""
    root = tmp_path_factory.mktemp("site")
    (root / "tcplug.py").write_text(PLUGIN)
    info = root / "tcplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tcplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return root


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("pipes")
    videos = root / "videos"
    videos.mkdir()
    for i in range(2):
        write_video(videos / f"v{i}.mp4", fps=10, duration=1.0, size=(16, 16),
                    make_frame=lambda n, t, i=i: np.full((16, 16, 3), 60 + 40 * i, np.uint8))
    ann = root / "toy.pipes"
    ann.write_text("a|v0.mp4|What colour?|grey;black|0\nb|v1.mp4|What colour?|black;grey|1\n")
    return {"root": root, "videos": videos, "ann": ann}


def config(bench: dict[str, Path], out: Path, backend: str) -> Path:
    cfg = {
        "out": str(out),
        "k": 3,
        "fps": 10,
        "benchmarks": [{"name": "pipes", "annotations": str(bench["ann"]), "video_root": str(bench["videos"])}],
        "models": [{"backend": backend, "model": "none", "name": "first"}],
        "conditions": [{"strategy": "every_other", "params": {"offset": 1}}, {"strategy": "uniform"}],
    }
    path = out.parent / f"{out.name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def check_store(out: Path) -> None:
    with RunStore.open(out / "store.sqlite") as store:
        rows = list(store.predictions())
    assert len(rows) == 4 and {p.benchmark for p in rows} == {"pipes"}, [p.key for p in rows]
    other = [p for p in rows if p.condition.startswith("every_other")]
    assert len(other) == 2
    for p in other:
        # 10 frames at 10 fps, offset 1, every other frame, K=3: frames 1, 3, 5
        assert list(p.frames.indices) == [1, 3, 5] and p.response == "A"
        assert p.answer == 0
    assert {p.sample_id: p.correct for p in other} == {"a": 1, "b": 0}


def test_register_through_the_api_and_run_select_and_run(bench, tmp_path, capsys, monkeypatch):
    mods = tmp_path / "mods"  # a plain module, no distribution metadata: registered by hand
    mods.mkdir()
    (mods / "tcplug_api.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(mods))
    import tcplug_api as tcplug

    from tempcore.benchmarks import register
    from tempcore.benchmarks.registry import LOADERS
    from tempcore.models.registry import BACKENDS, register_backend
    from tempcore.selection import STRATEGIES

    assert "pipes" not in LOADERS and "every_other" not in STRATEGIES and "first-option" not in BACKENDS
    register("pipes", tcplug.PipeLoader)
    STRATEGIES.register("every_other", tcplug.every_other)
    register_backend("first-option", tcplug.FirstOption)
    try:
        assert main(["benchmarks", "list", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["pipes"].startswith("pipe-separated")
        scores = tmp_path / "scores.json"
        scores.write_text(json.dumps({"timestamps": [0, 1, 2, 3, 4, 5], "scores": [0] * 6}))
        assert main(["select", "--scores", str(scores), "--strategy", "every_other", "--k", "2",
                     "--param", "offset=1", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["indices"] == [1, 3]
        out = tmp_path / "run"
        assert main(["run", "--config", str(config(bench, out, "first-option")), "--no-progress"]) == 0
        capsys.readouterr()
        check_store(out)
    finally:
        LOADERS.unregister("pipes")
        STRATEGIES.unregister("every_other")
        BACKENDS.unregister("first-option")


def test_register_through_entry_points_of_an_installed_distribution(dist, bench, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(dist), os.environ.get("PYTHONPATH", "")]),
           "HF_HUB_OFFLINE": "1"}

    def tempcore(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "tempcore", *args], capture_output=True, text=True,
                              env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    listed = json.loads(tempcore("benchmarks", "list", "--json"))
    assert listed["pipes"].startswith("pipe-separated") and "generic" in listed
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps({"timestamps": [0, 1, 2, 3, 4, 5], "scores": [0] * 6}))
    picked = json.loads(tempcore("select", "--scores", str(scores), "--strategy", "every_other", "--k", "3",
                                 "--json"))
    assert picked["indices"] == [0, 2, 4]
    out = tmp_path / "run"
    tempcore("run", "--config", str(config(bench, out, "first-option")), "--no-progress")
    check_store(out)
    # without the distribution the names are unknown, with a suggestion from the same helper
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-m", "tempcore", "select", "--scores", str(scores), "--strategy",
                           "every_other"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1 and "unknown strategy 'every_other'" in done.stderr


def test_a_conflicting_entry_point_is_refused_naming_its_distribution(dist, tmp_path):
    bad = tmp_path / "site"
    bad.mkdir()
    info = bad / "tcbad-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tcbad\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tempcore.strategies]\nmaxprob = tcplug:every_other\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(bad), str(dist)])}
    code = "from tempcore.selection import get_strategy; get_strategy('uniform')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode != 0
    assert "entry point 'maxprob' of tcbad" in done.stderr and "already registered" in done.stderr
