"""A benchmark name over 255 characters (issue 31, item 16) made ``export`` fail with
``OSError: File name too long``: its slug is cut and ends in a hash of the whole name."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from tempcore.benchmarks import load_benchmark
from tempcore.diagnostics import diagnose
from tempcore.interop.export import SLUG_CHARS, export_tempcore, slug


def _rows(benchmark: str) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for strategy, mode, correct in (("maxprob", "qa", 1), ("minprob", "qa", 0), ("noframe", "none", 0)):
        for model in ("m1", "m2"):
            rows.append({"benchmark": benchmark, "sample_id": "s1", "model": model, "strategy": strategy,
                         "mode": mode, "k": 4, "window": None, "correct": correct, "fps": 10.0,
                         "condition": f"{strategy}|mode={mode}|k=4|fps=10|seed=0"})
    return rows


def test_a_300_character_benchmark_name_exports(tmp_path: Path) -> None:
    name = "b" * 150 + "-" + "x" * 150
    ann = tmp_path / "a.jsonl"
    ann.write_text(json.dumps({"id": "s1", "video": "v.mp4", "question": "q?", "options": ["a", "b"],
                               "answer": 0}) + "\n", encoding="utf-8")
    loaded = load_benchmark("generic", ann, benchmark_name=name, video_root=tmp_path)
    table = pa.Table.from_pylist(_rows(name))
    for fmt in ("jsonl", "parquet", "lmms-eval"):
        paths = export_tempcore(diagnose(table), {name: loaded}, tmp_path / fmt, fmt, table=table)
        assert paths and all(p.exists() and len(p.name) < 255 for p in paths)
        assert len(paths[0].parent.name) == SLUG_CHARS
    assert slug(name) != slug(name[:-1] + "y") and slug("bench") == "bench"  # long names stay apart
