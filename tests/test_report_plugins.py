"""Adding an analysis to the report from outside the package: through the registry API (in process)
and through the `tempcore.analyses` entry point of a small installed distribution (a subprocess with
the distribution on PYTHONPATH, running `tempcore report`). The report's catalogue is the registry."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tempcore.registry import RegistryError
from tempcore.report import build_report, write_report
from tempcore.report.build import _catalogue
from tempcore.report.catalogue import ANALYSES, Analysis, analysis, register_analysis

PLUGIN = textwrap.dedent('''
    """A user's package: one more report table (accuracy per strategy, counted by hand)."""

    from tempcore.diagnostics.accuracy import ResultTable
    from tempcore.report.catalogue import Analysis


    def per_strategy(ctx):
        counts = {}
        for row in ctx.table.select(["strategy", "correct"]).to_pylist():
            n, c = counts.get(row["strategy"], (0, 0))
            counts[row["strategy"]] = (n + 1, c + int(row["correct"]))
        rows = [{"strategy": s, "n": n, "right": c} for s, (n, c) in sorted(counts.items())]
        return ResultTable("plug_per_strategy", "Rows per strategy (plug-in)", ["strategy", "n", "right"], rows)


    PER_STRATEGY = Analysis("plug_per_strategy", "Rows per strategy (plug-in)", "plugins", per_strategy,
                            section_title="Plug-in analyses")
    NEEDS_ORACLE = Analysis("plug_needs_oracle", "Needs an oracle (plug-in)", "accuracy", per_strategy,
                            conditions=[("oracle", None)])
''')

ENTRY_POINTS = textwrap.dedent("""
    [tempcore.analyses]
    plug_per_strategy = tcana:PER_STRATEGY
    plug_needs_oracle = tcana:NEEDS_ORACLE
""")

# 6 samples x 2 models; MaxProb right on samples 0-3, MinProb on 0-1, no-frame on 0 only
RIGHT = {"maxprob": 4, "minprob": 2, "noframe": 1}


def predictions(path: Path) -> Path:
    rows = []
    for i in range(6):
        for model in ("m1", "m2"):
            for strategy, mode in (("maxprob", "qa"), ("minprob", "qa"), ("noframe", "none")):
                correct = int(i < RIGHT[strategy])
                rows.append({"benchmark": "toy", "sample_id": f"s{i}", "model": model, "strategy": strategy,
                             "mode": mode, "k": 4, "window": None, "correct": correct, "fps": 10.0,
                             "answer": 0 if correct else 1, "response": "A" if correct else "B"})
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


EXPECTED = [["maxprob", "12", "8"], ["minprob", "12", "4"], ["noframe", "12", "2"]]


def md_table(md: str, heading: str) -> list[list[str]]:
    lines = md[md.index(f"### {heading}\n"):].splitlines()[2:]
    body = []
    for line in lines:
        if not line.startswith("|"):
            break
        body.append([c.strip() for c in line.strip().strip("|").split("|")])
    return body[2:]


def test_the_catalogue_is_the_registry() -> None:
    keys = [key for _, key, _, _, _ in _catalogue()]
    assert keys == list(ANALYSES)
    assert keys[:4] == ["benchmark_profiles", "key_antikey_fractions", "lis_fss_spearman", "accuracy"]
    entry = ANALYSES["uniform_vs_oracle"]
    assert entry.section == "oracle" and entry.conditions == (("oracle", None), ("uniform", None))
    assert ANALYSES["human_tau_sweep"].inputs == ("ratings",)
    assert dict(ANALYSES["abs_fss_by_coverage"].columns) == {"n_frames": "the number of scored frames L per sample"}


def test_register_through_the_api_and_see_it_in_the_report(tmp_path: Path) -> None:
    from tempcore.diagnostics.accuracy import ResultTable

    @analysis("api_models", title="Models seen (API plug-in)", section="accuracy", columns={"model": ""})
    def api_models(ctx):  # type: ignore[no-untyped-def]
        return ResultTable("api_models", "Models seen", ["model"], [{"model": m} for m in ctx.facts.models])

    register_analysis(Analysis("api_needs_ratings", "Needs ratings (API plug-in)", "extras", api_models,
                               inputs=("ratings",), section_title="Extra analyses"))
    try:
        assert "api_models" in ANALYSES and list(ANALYSES)[-2:] == ["api_models", "api_needs_ratings"]
        report = build_report(pq.read_table(predictions(tmp_path / "pred.parquet")), n_boot=20, thumbnails=False)
        items = {t.key: t for t in report.tables}
        assert items["api_models"].table is not None and items["api_models"].table.column("model") == ["m1", "m2"]
        assert items["api_needs_ratings"].unavailable == "needs human ratings (--ratings FILE)"
        accuracy = next(s for s in report.sections if s.key == "accuracy")
        assert accuracy.items[-1].key == "api_models"  # registration order within its section
        extra = next(s for s in report.sections if s.key == "extras")
        assert extra.title == "Extra analyses" and [i.key for i in extra.items] == ["api_needs_ratings"]
        write_report(report, tmp_path / "out")
        md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
        assert md_table(md, "Models seen (API plug-in)") == [["m1"], ["m2"]]
        assert "### Needs ratings (API plug-in)\n\n*Not available: needs human ratings (--ratings FILE).*" in md
        # one collision policy: the same key with another analysis is refused
        with pytest.raises(RegistryError, match="already registered"):
            register_analysis(Analysis("api_models", "Other", "accuracy", api_models))
    finally:
        ANALYSES.unregister("api_models")
        ANALYSES.unregister("api_needs_ratings")
    assert "api_models" not in {key for _, key, _, _, _ in _catalogue()}


def test_an_analysis_under_another_key_is_refused() -> None:
    reg = ANALYSES.copy()
    reg.register("wrong_key", Analysis("right_key", "t", "accuracy", lambda c: None))
    with pytest.raises(RegistryError, match="another key than its own"):
        reg["wrong_key"]
    with pytest.raises(RegistryError, match="unknown inputs"):
        Analysis("x", "t", "accuracy", lambda c: None, inputs=("rating",))


def test_register_through_an_entry_point_and_see_it_in_the_report(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "tcana.py").write_text(PLUGIN)
    info = site / "tcana-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tcana\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    pred = predictions(tmp_path / "pred.parquet")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "HF_HUB_OFFLINE": "1"}
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "tempcore", "report", "--predictions", str(pred), "--out", str(out),
                           "--bootstrap", "20", "--no-thumbnails"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "not available: Needs an oracle (plug-in): needs oracle predictions" in done.stdout
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "## Plug-in analyses" in md
    assert md_table(md, "Rows per strategy (plug-in)") == EXPECTED
    assert "### Needs an oracle (plug-in)\n\n*Not available: needs oracle predictions.*" in md
    # without the distribution the report has neither table
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-m", "tempcore", "report", "--predictions", str(pred), "--out",
                           str(tmp_path / "plain"), "--bootstrap", "20", "--no-thumbnails"], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "plug-in" not in (tmp_path / "plain" / "report.md").read_text(encoding="utf-8")
