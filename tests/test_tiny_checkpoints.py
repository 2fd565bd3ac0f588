"""``tempcore tiny-checkpoints``: the written folders load through the user's code path
(``load_encoder`` for the encoder, ``load_model`` with ``backend: hf`` for the VLM) and answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")

from tempcore.encoders import load_encoder  # noqa: E402
from tempcore.models import ModelRequest, ModelSpec, load_model  # noqa: E402

OPTIONS = ("a red square", "a blue circle", "a green triangle")


def test_command_writes_checkpoints_that_load_through_the_user_path(tmp_path: Path, one_thread: None) -> None:
    out = tmp_path / "tiny"
    proc = subprocess.run([sys.executable, "-m", "tempcore", "tiny-checkpoints", str(out), "--json"],
                          capture_output=True, text=True, timeout=300, check=True)
    paths = json.loads(proc.stdout)
    assert paths == {"siglip": str(out / "siglip"), "idefics3": str(out / "idefics3")}
    for folder in paths.values():
        assert (Path(folder) / "model.safetensors").is_file()
        assert (Path(folder) / "config.json").is_file()

    encoder = load_encoder(paths["siglip"])
    frames = np.random.default_rng(0).integers(0, 256, size=(3, 48, 64, 3), dtype=np.uint8)
    image_embeddings = encoder.encode_images(frames)
    assert image_embeddings.shape[0] == 3 and np.isfinite(image_embeddings).all()

    model = load_model(ModelSpec(backend="hf", model=paths["idefics3"], max_new_tokens=4))
    images = tuple(frames[i] for i in range(2))
    [response] = model.answer([ModelRequest(images, "Which shape is shown? A. a red square B. a blue circle "
                                            "C. a green triangle", OPTIONS, key="q")])
    assert isinstance(response.text, str)


def test_the_builders_module_imports_neither_torch_nor_transformers() -> None:
    code = ("import sys, tempcore.models.tiny, tempcore.cli.tiny_checkpoints\n"
            "print('torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "False"]


def test_unknown_family_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "tempcore", "tiny-checkpoints", str(tmp_path), "--vlm", "gpt5"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
