"""`tempcore world train --only ...`: what each choice trains and where (``--dry-run``), and that
``--only members`` retrains the five zoo members alone (``train_answerers(ZOO/answerers, seed)``,
its default steps) and never the generative ``zoo-idefics3``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tempcore.cli import main
from tempcore.world import ZOO

FIVE = ["zoo-text", "zoo-mean", "zoo-max", "zoo-attn", "zoo-order"]


def _dry(capsys, *argv: str) -> dict:
    assert main(["world", "train", *argv, "--dry-run"]) == 0
    return json.loads(capsys.readouterr().out)


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_dry_run_says_what_each_choice_trains(tmp_path, capsys) -> None:
    out = tmp_path / "z"
    members = _dry(capsys, "--only", "members", "--out", str(out))
    assert members["encoder"] is None and members["hf"] is None
    assert members["members"] == {"path": str(out / "answerers"), "names": FIVE, "steps": 3000, "encoder_steps": 600}
    assert members["zoo"] == str(out) and members["seed"] == 0
    answerers = _dry(capsys, "--only", "answerers", "--out", str(out), "--seed", "3")
    assert answerers["members"] == members["members"] and answerers["encoder"] is None
    assert answerers["hf"] == {"path": str(out / "zoo-idefics3"), "name": "zoo-idefics3"} and answerers["seed"] == 3
    everything = _dry(capsys, "--out", str(out), "--encoder-steps", "7")
    assert everything["encoder"] == {"path": str(out / "encoder"), "steps": 7}
    assert everything["members"] == members["members"] and everything["hf"] == answerers["hf"]
    encoder = _dry(capsys, "--only", "encoder", "--out", str(out))
    assert encoder["encoder"]["steps"] == 2400 and encoder["members"] is None and encoder["hf"] is None
    assert not out.exists()  # a dry run writes nothing


def test_members_into_the_package_is_the_shipped_answerers_folder(capsys) -> None:
    shipped = _digest(Path(ZOO))
    plan = _dry(capsys, "--only", "members", "--into-package")
    assert Path(plan["members"]["path"]) == Path(ZOO) / "answerers" and plan["hf"] is None
    assert sorted(p.stem for p in (Path(ZOO) / "answerers").glob("*.safetensors")) == sorted(FIVE)
    assert _digest(Path(ZOO)) == shipped
    # the guard still holds for the members: --out inside the package needs --into-package
    assert main(["world", "train", "--only", "members", "--out", str(Path(ZOO) / "answerers"), "--dry-run"]) == 1
    assert "Add --into-package" in capsys.readouterr().err


def test_only_members_calls_train_answerers_alone(tmp_path, capsys, monkeypatch) -> None:
    from tempcore.world import answerers
    from tempcore.world.answerers.training import TrainLog

    calls: list[tuple[tuple, dict]] = []

    def record(*args, **kwargs):
        calls.append((args, kwargs))
        return {}, None, TrainLog({m: [1.0, 0.5] for m in FIVE}, 3000, 1.0)

    def refuse(*args, **kwargs):
        raise AssertionError("--only members must not train zoo-idefics3 (train_all)")

    monkeypatch.setattr(answerers, "train_answerers", record, raising=False)
    monkeypatch.setattr(answerers, "train_all", refuse, raising=False)
    assert main(["world", "train", "--only", "members", "--out", str(tmp_path)]) == 0
    (args, kwargs), = calls
    assert args == (tmp_path / "answerers", 0) and set(kwargs) == {"log"}  # the default steps, as shipped
    captured = capsys.readouterr()
    summary = json.loads(captured.out.split("answerers: ", 1)[1].splitlines()[0])
    assert summary["final_loss"] == {m: 0.5 for m in FIVE} and "hf" not in summary
    assert "zoo-idefics3 untouched" in captured.err
    assert not (tmp_path / "encoder").exists()


def test_unknown_choice_is_refused(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["world", "train", "--only", "idefics", "--dry-run"])
    assert "invalid choice" in capsys.readouterr().err
