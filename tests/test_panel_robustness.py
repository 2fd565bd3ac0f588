"""``tempcore diagnose``'s panel robustness: ``tpi_ci`` (bootstrap over samples) and
``leave_one_model_out`` (each model dropped), checked against direct recomputations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tempcore.cli import main
from tempcore.diagnostics import diagnose
from tempcore.diagnostics.core import CATEGORIES, INCOMPLETE
from tempcore.diagnostics.robustness import leave_one_model_out, tpi_intervals

PANELS = {"b1": ("m1", "m2", "m3", "m4"), "b2": ("m1", "m2", "m5")}


def _table(seed: int = 1, n: int = 60) -> pa.Table:
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for bench, models in PANELS.items():
        for s in range(n):
            for m in models:
                for strategy, mode, p in (("maxprob", "qa", 0.7), ("minprob", "qa", 0.45), ("noframe", "none", 0.4)):
                    rows.append({"benchmark": bench, "sample_id": f"{bench}-{s}", "model": m, "strategy": strategy,
                                 "mode": mode, "k": 8, "window": None, "correct": int(rng.random() < p)})
    return pa.Table.from_pylist(rows)


def _without(table: pa.Table, model: str) -> pa.Table:
    return table.filter(pc.not_equal(table.column("model"), model))


def test_leave_one_model_out_equals_a_diagnosis_without_the_model() -> None:
    table = _table()
    base = diagnose(table)
    loo = leave_one_model_out(base, lambda models: diagnose(table, models=models))
    assert {b: sorted(v) for b, v in loo.items()} == {b: sorted(m) for b, m in PANELS.items()}
    before = dict(zip(zip(base.benchmark, base.sample_id), base.category))
    some_change = False
    for bench, models in PANELS.items():
        for model in models:
            direct = diagnose(_without(table, model))
            after = {k: c for k, c in zip(zip(direct.benchmark, direct.sample_id), direct.category) if k[0] == bench}
            changed = sum(1 for k, c in after.items() if INCOMPLETE not in (c, before[k]) and c != before[k])
            got = loo[bench][model]
            assert got["changed"] == changed
            assert got["tpi"] == pytest.approx(direct.benchmarks[bench]["tpi"])
            assert got["tpi_delta"] == pytest.approx(direct.benchmarks[bench]["tpi"] - base.benchmarks[bench]["tpi"])
            assert got["became_incomplete"] == got["became_complete"] == 0
            some_change |= changed > 0
    assert some_change


def test_a_model_of_one_benchmark_only_leaves_the_other_unchanged() -> None:
    table = _table()
    base = diagnose(table)
    loo = leave_one_model_out(base, lambda models: diagnose(table, models=models))
    assert "m5" not in loo["b1"] and "m3" not in loo["b2"]


def test_tpi_intervals_are_a_seeded_bootstrap_over_samples() -> None:
    table = _table(n=80)
    d = diagnose(table)
    ci = tpi_intervals(d, n_boot=3000, seed=7)
    assert tpi_intervals(d, n_boot=3000, seed=7) == ci  # reruns are identical
    for bench in PANELS:
        cats = d.category[(d.benchmark == bench) & (d.category != INCOMPLETE)]
        n = cats.size
        assert ci[bench]["n"] == n and ci[bench]["tpi"] == pytest.approx(d.benchmarks[bench]["tpi"])
        # the same draws: category counts are multinomial under resampling of samples
        counts = np.array([(cats == c).sum() for c in CATEGORIES])
        draws = np.random.default_rng(7).multinomial(n, counts / n, size=3000)
        tpis = (draws[:, 2] + draws[:, 3]) / (n - draws[:, 0])
        assert (ci[bench]["tpi_low"], ci[bench]["tpi_high"]) == pytest.approx(tuple(np.quantile(tpis, [0.025, 0.975])))
        for j, c in enumerate(CATEGORIES):
            share = ci[bench]["shares"][c]
            assert share["share"] == pytest.approx(counts[j] / n)
            assert (share["low"], share["high"]) == pytest.approx(tuple(np.quantile(draws[:, j] / n, [0.025, 0.975])))
        # and the same distribution as resampling the samples themselves (another generator)
        rng = np.random.default_rng(123)
        picks = cats[rng.integers(0, n, size=(3000, n))]
        sens = ((picks == "temporally_grounded") | (picks == "visual_bias")).sum(axis=1)
        direct = sens / (n - (picks == "trivial").sum(axis=1))
        low, high = np.quantile(direct, [0.025, 0.975])
        assert abs(low - ci[bench]["tpi_low"]) < 0.04 and abs(high - ci[bench]["tpi_high"]) < 0.04


def test_diagnose_json_adds_the_keys_and_keeps_every_other(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = _table()
    pq.write_table(table, tmp_path / "p.parquet")
    assert main(["diagnose", "--predictions", str(tmp_path / "p.parquet"), "--json", "--n-boot", "500"]) == 0
    out = json.loads(capsys.readouterr().out)
    cli_params = {"filters": {"k": None, "encoder": None}, "noframe_filters": {"k": None}}  # what the CLI passes
    plain = json.loads(json.dumps(diagnose(table, **cli_params).to_json()))
    assert {k: v for k, v in out.items() if k not in ("tpi_ci", "leave_one_model_out")} == plain
    assert out["tpi_ci"] == json.loads(json.dumps(tpi_intervals(diagnose(table), n_boot=500)))
    assert out["leave_one_model_out"]["b2"]["m5"]["changed"] >= 0
    assert main(["diagnose", "--predictions", str(tmp_path / "p.parquet"), "--n-boot", "500"]) == 0
    text = capsys.readouterr().out
    assert "bootstrap over samples (500 resamples, seed 0, 95% intervals):" in text
    assert "leave one model out" in text and "b2: m1 " in text


def test_a_benchmark_whose_only_model_is_dropped_says_so() -> None:
    table = pa.concat_tables([_table(), _table().filter(pc.equal(_table().column("model"), "m5")).set_column(
        0, "benchmark", pa.array(["b3"] * (3 * 60)))])
    table = table.set_column(1, "sample_id", pc.binary_join_element_wise(table.column("benchmark"),
                                                                         table.column("sample_id"), "/"))
    base = diagnose(table)
    loo = leave_one_model_out(base, lambda models: diagnose(table, models=models))
    solo = loo["b3"]["m5"]
    assert solo["became_incomplete"] == base.benchmarks["b3"]["n"] and solo["tpi"] is None
