"""Table 14 (|FSS| by frame coverage K/L) computed from the predictions of a real `tempcore run`.

The paper bins samples by K/L, "the ratio of the K=32 frame budget to the number of scored frames
L" (§C.3). L is known only to the run (the frames it decoded from each sample's video or segment
at its fps), so every prediction a run writes must carry it as ``n_frames``. This test makes a run
through the CLI on a tiny synthetic world (short videos, so the samples fall into several K/L
bins), checks that each sample's ``n_frames`` is the number of frames decoding its video at the
run's fps gives, and that Table 14 computed from that table matches a loop over the samples.

It needs runs that record ``n_frames`` (branch ``trust-store``); until that lands it fails on the
first assertion, which names the missing column.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from tempcore.cli import main

K = 16
FPS = 10.0


@pytest.mark.timeout(300)
def test_table14_from_the_predictions_of_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tempcore.benchmarks import load_benchmark, resolve_video
    from tempcore.demo import WORLD_ENCODER
    from tempcore.diagnostics import analyses as A
    from tempcore.diagnostics import diagnose
    from tempcore.tidy.table import read_predictions
    from tempcore.video.decode import probe
    from tempcore.world import BENCHMARK_NAME, generate_world

    # Videos of 2-20 s at 10 FPS (those with an event last >= 14 s): L from about 20 to 200 frames, so
    # with K = 16 the samples fall into at least two K/L bins (16/140 = 0.114, 16/200 = 0.08).
    world = generate_world(tmp_path / "world", 10, seed=7, duration=(2.0, 20.0), fps=FPS)
    cfg = {
        "out": str(tmp_path / "run"),
        "encoder": WORLD_ENCODER,
        "encoder_options": {"device": "cpu"},
        "cache": str(tmp_path / "cache"),
        "fps": FPS,
        "k": K,
        "benchmarks": [{"name": "generic", "annotations": str(world.annotations), "video_root": str(world.root),
                        "options": {"benchmark_name": BENCHMARK_NAME}}],
        "models": [{"backend": "zoo", "model": "zoo-mean"}, {"backend": "zoo", "model": "zoo-max"}],
        "conditions": [{"strategy": "maxprob", "mode": "qa"}, {"strategy": "minprob", "mode": "qa"},
                       {"strategy": "noframe"}],
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["run", "--config", str(path), "--no-progress", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    table = read_predictions(summary["predictions_file"])

    assert "n_frames" in table.column_names, (
        "the run's predictions carry no n_frames column (L, the decoded frames of each sample's video or "
        "segment at the run's fps): Table 14 cannot be computed from a run until runs record it"
    )
    # L is what decoding the sample's video (or segment) at the run's fps gives, on every row of the sample.
    samples = {s.sample_id: s for s in load_benchmark("generic", world.annotations, video_root=world.root,
                                                     benchmark_name=BENCHMARK_NAME).samples}
    expected_L = {sid: probe(resolve_video(s, str(world.root)), FPS, start=s.start, end=s.end, media=s.media).frames
                  for sid, s in samples.items()}
    # (A no-frame row shows grey images, so it may leave L blank; every row that showed frames carries it.)
    seen: dict[str, set[int]] = defaultdict(set)
    for r in table.select(["sample_id", "strategy", "n_frames"]).to_pylist():
        if r["strategy"] != "noframe" or r["n_frames"] is not None:
            seen[r["sample_id"]].add(r["n_frames"])
    assert set(seen) == set(expected_L)
    assert {sid: sorted(v, key=str) for sid, v in seen.items()} == {sid: [expected_L[sid]] for sid in seen}

    d = diagnose(table)
    res = A.frame_coverage(table, d)
    assert res.meta["k"] == K
    # A loop over the samples: K/L against the documented bins, mean |FSS| per bin.
    fss = {str(s): float(f) for s, f in zip(d.sample_id, d.fss)}
    per_bin: dict[str, list[float]] = defaultdict(list)
    for sid, L in expected_L.items():
        if sid not in fss:
            continue
        cov = K / L
        label = ("<0.10" if cov < 0.10 else "0.10-0.25" if cov < 0.25 else "0.25-0.50" if cov < 0.50 else
                 "0.50-1.00" if cov < 1.0 else ">=1.00")
        per_bin[label].append(abs(fss[sid]))
    got = {r["coverage"]: (r["n"], r["mean_abs_fss"]) for r in res.rows}
    assert got == {b: (len(v), pytest.approx(sum(v) / len(v))) for b, v in per_bin.items()}
    assert len(got) >= 2  # the short videos populate more than one coverage bin
