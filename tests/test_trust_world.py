"""Issue 9, item 7: the world encoder loads without alarming warnings or unasked-for bars, and
`tempcore world train` never writes into the installed package unless told to."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tempcore.cli import main
from tempcore.world import ZOO, encoder_path

SPURIOUS = "must be `None` or an integer within the vocabulary"


@pytest.fixture
def fresh_warnings():
    """transformers prints each warning once per process: forget which it printed."""
    from transformers.utils import logging as hf_logging

    hf_logging.warning_once.cache_clear()
    yield
    hf_logging.warning_once.cache_clear()


def test_world_encoder_loads_without_token_id_warnings(fresh_warnings, caplog) -> None:
    from transformers import AutoConfig

    from tempcore.encoders import load_encoder

    caplog.set_level("WARNING")
    enc = load_encoder(str(encoder_path()), device="cpu")
    assert enc.family == "siglip"
    assert not [r for r in caplog.records if SPURIOUS in r.getMessage()]
    # the control: the plain AutoConfig path warns (transformers' invalid SigLIP class defaults)
    AutoConfig.from_pretrained(str(encoder_path()))
    assert len([r for r in caplog.records if SPURIOUS in r.getMessage()]) == 2


def test_no_progress_hides_the_loading_bars_and_restores_the_setting(capfd) -> None:
    from transformers.utils import logging as hf_logging

    from tempcore.encoders.hf import HFFrameTextEncoder

    assert hf_logging.is_progress_bar_enabled()
    HFFrameTextEncoder.from_pretrained(encoder_path(), device="cpu", progress=False)
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled()
    HFFrameTextEncoder.from_pretrained(encoder_path(), device="cpu")
    assert "Loading weights" in capfd.readouterr().err


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_world_train_defaults_to_a_folder_outside_the_package(tmp_path, monkeypatch, capsys, one_thread) -> None:
    shipped = _digest(Path(ZOO))
    monkeypatch.chdir(tmp_path)
    assert main(["world", "train", "--only", "encoder", "--encoder-steps", "2"]) == 0
    assert (tmp_path / "world-zoo" / "encoder" / "model.safetensors").is_file()
    assert "wrote the zoo to world-zoo" in capsys.readouterr().out
    assert _digest(Path(ZOO)) == shipped


def test_world_train_into_the_package_needs_the_flag(tmp_path, capsys) -> None:
    for out in (Path(ZOO), Path(ZOO) / "encoder"):
        assert main(["world", "train", "--only", "encoder", "--encoder-steps", "2", "--out", str(out)]) == 1
        assert "Add --into-package" in capsys.readouterr().err
    assert main(["world", "train", "--into-package", "--out", str(tmp_path), "--encoder-steps", "2"]) == 1
    assert "not both" in capsys.readouterr().err


def test_train_destination_with_the_flag_is_the_package_zoo() -> None:
    from tempcore.cli.world import train_destination

    assert train_destination(None, True) == Path(ZOO)
    assert train_destination(None, False) == Path("world-zoo")
