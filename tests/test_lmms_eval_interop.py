"""The lmms-eval round trip, checked by the real lmms-eval 0.7.x CLI.

Export a TempCore subset of a small synthetic world as an lmms-eval task, move the task folder,
run ``python -m lmms_eval`` on it end to end with lmms-eval's own ``dummy`` model and with a model
class registered through lmms-eval's entry points that answers in 28 styles
(``lmms_interop/tempcore_lmms_styles.py``), check that lmms-eval's scores equal tempcore's own
scoring of the same responses (overall and per category), then import the sample logs with
``tempcore import lmms-eval`` (no id / benchmark flags) and check ids, correctness and count.

lmms-eval runs in its own virtual environment, built once and cached outside the repository
(``~/.cache/tempcore/venv-lmms-0.7.3``; see ``lmms_interop/lmms_env.py`` for the recipe and what
installing 0.7.3 on CPU machines needs: CPU torch 2.13.0 first, torch pinned while lmms-eval installs,
torchvision removed). That environment has no tempcore: the task scores with its own copy of the
extractor. The test never skips: when the install fails, it fails and says why.

Runtime, measured on 2 shared CPU cores: building the cached venv took 167 s and 123 s with pip's
cache warm (a first attempt that also downloaded everything took 290 s, CUDA wheels included, which
the recipe now avoids); with the venv cached the whole file takes ~25 s, almost all of it the two
lmms-eval start-ups.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from tempcore.answers import extract_choice
from tempcore.benchmarks import load_benchmark
from tempcore.cli import main
from tempcore.diagnostics import diagnose
from tempcore.interop.export import export_tempcore

HERE = Path(__file__).resolve().parent
from lmms_interop.lmms_env import LmmsInstallError, ensure_lmms_venv  # noqa: E402
from lmms_interop.styles import STYLES, styled_response  # noqa: E402

BENCH = "tempcore-world"
TASK = "tempcore_tempcore_world"
# planted category -> (maxprob, minprob, noframe) correctness of both panel models
DESIGN = {
    "temporally_grounded": (1, 0, 0),
    "visual_bias": (0, 1, 0),
    "frame_agnostic": (1, 1, 0),
    "trivial": (1, 0, 1),
}


def _predictions(planted: dict[str, str]) -> pa.Table:
    rows = []
    for sid, category in planted.items():
        for strategy, mode, value in zip(("maxprob", "minprob", "noframe"), ("qa", "qa", "none"), DESIGN[category]):
            for model in ("m1", "m2"):
                rows.append({"benchmark": BENCH, "sample_id": sid, "model": model, "strategy": strategy,
                             "mode": mode, "k": 8, "window": None, "correct": value, "fps": 10.0,
                             "condition": f"{strategy}|mode={mode}|k=8|fps=10|seed=0"})
    return pa.Table.from_pylist(rows)


def _plugin_dir(where: Path) -> Path:
    """The style model as an installed distribution would look to importlib.metadata: module + .dist-info."""
    where.mkdir(parents=True)
    shutil.copy(HERE / "lmms_interop" / "tempcore_lmms_styles.py", where / "tempcore_lmms_styles.py")
    shutil.copy(HERE / "lmms_interop" / "styles.py", where / "tempcore_lmms_style_table.py")
    info = where / "tempcore_lmms_styles-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tempcore-lmms-styles\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[lmms_eval.models]\ntempcore_styles = tempcore_lmms_styles:manifest\n")
    return where


def _lmms_eval(python: Path, model: str, model_args: str, task_dir: Path, out: Path, env: dict) -> dict:
    cmd = [str(python), "-m", "lmms_eval", "--model", model, "--model_args", model_args, "--tasks", TASK,
           "--include_path", str(task_dir), "--output_path", str(out), "--log_samples", "--batch_size", "1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env, cwd=out.parent)
    log = f"$ {' '.join(cmd)}\n--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"
    assert proc.returncode == 0, log
    results = sorted(out.rglob("*_results.json"))
    samples = sorted(out.rglob(f"*_samples_{TASK}.jsonl"))
    assert len(results) == 1 and len(samples) == 1, f"expected one results and one samples file in {out}\n{log}"
    # lmms-eval logs an error and still exits 0 when a task cannot load: the task must be in the results
    data = json.loads(results[0].read_text(encoding="utf-8"))
    assert TASK in data["results"], log
    return {"results": data["results"][TASK], "samples": samples[0], "log": log}


@pytest.fixture(scope="module")
def lmms_python() -> tuple[Path, float]:
    try:
        return ensure_lmms_venv()
    except LmmsInstallError as exc:  # never a skip: the round trip is the acceptance test
        pytest.fail(f"installing lmms-eval failed, so the interop test cannot run:\n{exc}", pytrace=False)


@pytest.fixture(scope="module")
def round_trip(lmms_python, tmp_path_factory):
    python, install_s = lmms_python
    tmp = tmp_path_factory.mktemp("lmms")
    from tempcore.world import generate_world

    world = generate_world(tmp / "world", 56, seed=5, duration=(14.0, 16.0))
    loaded = load_benchmark("generic", world.annotations, video_root=world.root, benchmark_name=BENCH)
    table = _predictions(world.planted())
    export_tempcore(diagnose(table), {BENCH: loaded}, tmp / "export", "lmms-eval", table=table)
    # the folder moves: nothing in it names where it was written
    task_dir = tmp / "elsewhere" / "task"
    shutil.move(str(tmp / "export" / "tempcore_world"), task_dir)
    docs = [json.loads(x) for x in (task_dir / f"{TASK}.jsonl").read_text(encoding="utf-8").splitlines()]

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(PYTHONPATH=str(_plugin_dir(tmp / "plugin")), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               HF_HOME=str(tmp / "hf"), PATH=f"{python.parent}:{env.get('PATH', '')}")
    probe = subprocess.run([str(python), "-c", "import tempcore"], capture_output=True, env=env, cwd=tmp)
    assert probe.returncode != 0, "tempcore must not be importable where lmms-eval runs (the task stands alone)"
    start = time.monotonic()
    runs = {
        "dummy": _lmms_eval(python, "dummy", "response=B", task_dir, tmp / "out_dummy", env),
        "styles": _lmms_eval(python, "tempcore_styles", "", task_dir, tmp / "out_styles", env),
    }
    print(f"\nlmms-eval install {install_s:.0f} s, two lmms-eval runs {time.monotonic() - start:.0f} s")
    return {"tmp": tmp, "docs": docs, "runs": runs, "planted": world.planted(), "annotations": world.annotations}


def _tempcore_scores(responses: list[str], docs: list[dict]) -> dict[str, tuple[float, int]]:
    """tempcore's own scoring: accuracy (fraction) and n, overall and per category."""
    groups: dict[str, list[float]] = {"tempcore_accuracy": []}
    for response, doc in zip(responses, docs):
        score = float(extract_choice(response, doc["options"]).index == doc["answer"])
        groups["tempcore_accuracy"].append(score)
        groups.setdefault(f"tempcore_{doc['category']}_accuracy", []).append(score)
    return {k: (sum(v) / len(v), len(v)) for k, v in groups.items()}


def test_subset_is_the_planted_temporally_sensitive_questions(round_trip) -> None:
    docs, planted = round_trip["docs"], round_trip["planted"]
    assert sorted(d["sample_id"] for d in docs) == sorted(
        s for s, c in planted.items() if c in ("temporally_grounded", "visual_bias"))
    assert len(docs) == 28  # every style answers at least once


@pytest.mark.parametrize("model", ["dummy", "styles"])
def test_lmms_eval_scores_equal_tempcore_scoring(round_trip, model: str) -> None:
    docs, run = round_trip["docs"], round_trip["runs"][model]
    lines = [json.loads(x) for x in run["samples"].read_text(encoding="utf-8").splitlines()]
    assert len(lines) == len(docs)
    by_doc = {line["doc_id"]: line for line in lines}
    # the 0.7 layout: doc_id, target, input, filtered_resps (a string), the metric dicts, no doc
    assert all("doc" not in line and isinstance(line["filtered_resps"], str) for line in lines)
    # the model's raw response: "resps" when lmms-eval's filters changed it (0.7 strips <think>...</think>)
    responses = [by_doc[i].get("resps", by_doc[i]["filtered_resps"]) for i in range(len(docs))]
    if model == "styles":  # the model answered as the style table says, one style per document
        assert responses == [styled_response(i, d["options"], d["answer"]) for i, d in enumerate(docs)]
        assert by_doc[22]["filtered_resps"] != by_doc[22]["resps"]  # the <think> style
        assert len({i % len(STYLES) for i in range(len(docs))}) == 28
    else:
        assert set(responses) == {"B"}
    ours = _tempcore_scores(responses, docs)
    results = run["results"]
    for metric, (accuracy, n) in ours.items():
        assert results[f"{metric},none"] == pytest.approx(accuracy), (metric, run["log"][-3000:])
        # per-category metrics saw their own documents only: the CLT stderr is of that n, on the same scale
        scores = [float(extract_choice(responses[i], d["options"]).index == d["answer"])
                  for i, d in enumerate(docs) if metric == "tempcore_accuracy" or metric.endswith(f"{d['category']}_accuracy")]
        assert len(scores) == n
        mean = sum(scores) / n
        stderr = (sum((s - mean) ** 2 for s in scores) / (n - 1) / n) ** 0.5
        assert results[f"{metric}_stderr_clt,none"] == pytest.approx(stderr), metric
        assert isinstance(results[f"{metric}_stderr_clustered,none"], float), metric  # cluster_key: video
    if model == "styles":
        # tempcore reads every style: gold for two documents in three
        assert results["tempcore_accuracy,none"] == pytest.approx(sum(i % 3 != 2 for i in range(28)) / 28)


@pytest.mark.parametrize("model", ["dummy", "styles"])
def test_import_the_log_without_flags(round_trip, model: str, capsys) -> None:
    tmp, docs, run = round_trip["tmp"], round_trip["docs"], round_trip["runs"][model]
    store = tmp / f"store_{model}.sqlite"
    rc = main(["import", "lmms-eval", str(run["samples"]), "--store", str(store), "--model", model, "--k", "8"])
    out = capsys.readouterr().out
    assert rc == 0, out
    lines = [json.loads(x) for x in run["samples"].read_text(encoding="utf-8").splitlines()]
    lmms_score = {line["tempcore_accuracy"]["sample_id"]: line["tempcore_accuracy"]["score"] for line in lines}
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT benchmark, sample_id, correct FROM predictions").fetchall()
    assert len(rows) == len(docs)
    assert {r[0] for r in rows} == {BENCH}
    assert sorted(r[1] for r in rows) == sorted(d["sample_id"] for d in docs)
    assert {r[1]: float(r[2]) for r in rows} == lmms_score


def test_import_joined_with_the_annotations(round_trip, capsys) -> None:
    """With the benchmark's annotations the import checks every id and option list against them and
    reports the samples of the benchmark the log has no response for (the rest of the world)."""
    tmp, run = round_trip["tmp"], round_trip["runs"]["styles"]
    rc = main(["import", "lmms-eval", str(run["samples"]), "--store", str(tmp / "joined.sqlite"), "--model", "s",
               "--k", "8", "--annotations", f"{BENCH}={round_trip['annotations']}"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "28 predictions of tempcore-world read" in out and "28 sample(s) of tempcore-world have no response" in out


def test_a_failed_install_step_fails_and_says_why(tmp_path: Path) -> None:
    """The installer never degrades to a skip: a failing step raises with the command and its output."""
    from lmms_interop.lmms_env import _run

    with pytest.raises(LmmsInstallError, match=r"failed \(exit 3\).*no such package here"):
        _run([sys.executable, "-c", "import sys; print('no such package here'); sys.exit(3)"], tmp_path / "log", 60)
