"""benchmarks/gpu.py --tiny runs on CPU and writes every section."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_tiny(tmp_path: Path) -> None:
    out = tmp_path / "gpu.json"
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT / "src"))
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--tiny", "--out", str(out)],
        check=True, env=env, timeout=300,
    )
    result = json.loads(out.read_text())
    assert result["tiny"] is True
    assert [r["batch"] for r in result["siglip"]] == [1, 2]
    assert all(r["frames_per_s"] > 0 for r in result["siglip"])
    assert result["decode"]["frames"] > 0
    assert all(r["requests_per_s"] > 0 and r["video_tokens"] == 64 for r in result["qwen"])
