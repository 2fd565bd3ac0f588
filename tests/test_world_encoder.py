"""The world's frame-text encoder: the shipped weights through the real adapter, and its training."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tempcore.cli import main
from tempcore.encoders import load_encoder
from tempcore.encoders.hf import HFFrameTextEncoder
from tempcore.run.frame_scoring import query_text
from tempcore.world import encoder_path, generate_world, plan_world
from tempcore.world.encoder_zoo import (
    MAX_TEXT_TOKENS,
    build_tokenizer,
    caption_matches,
    make_batch,
    sample_caption,
    train_encoder,
    training_scenes,
)
from tempcore.world.probe import probe_encoder

WINDOWED = {"brief_colour": 1.0, "circle_left": 1.0, "circle_recoloured": 1.0}


@pytest.fixture(scope="module")
def shipped():
    return load_encoder(str(encoder_path()), device="cpu", dtype="float32")


def test_shipped_encoder_is_a_plain_siglip_folder(shipped):
    folder = encoder_path()
    names = {p.name for p in folder.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "preprocessor_config.json"} <= names
    assert not any(n.endswith((".bin", ".pt", ".pkl")) for n in names)
    assert json.loads((folder / "config.json").read_text())["model_type"] == "siglip"
    assert (folder / "model.safetensors").stat().st_size < 4_000_000
    assert isinstance(shipped, HFFrameTextEncoder) and shipped.family == "siglip"
    assert shipped.max_length == MAX_TEXT_TOKENS
    # the shipped tokenizer is the one train_encoder builds (so the weights are reproducible)
    texts = ["What colour was the triangle that appeared briefly? red", "a yellow circle and a blue square"]
    assert shipped.tokenizer(texts)["input_ids"] == build_tokenizer()(texts)["input_ids"]


def test_world_texts_fit_the_text_limit(shipped):
    samples = plan_world(400, seed=0).samples()
    texts = sorted({query_text(s, m) for s in samples for m in ("q", "qa")})
    enc = shipped.encode_texts(texts)
    assert not enc.truncated.any(), [t for t, cut in zip(texts, enc.truncated) if cut]


def test_shipped_encoder_finds_planted_windows(shipped, tmp_path, one_thread, capsys):
    """QA-mode MaxProb frames land in the evidence window of temporally grounded questions and MinProb
    frames avoid it; for visual-bias questions it is the other way round (the planted design)."""
    world = generate_world(tmp_path, 24, seed=11, duration=(14.0, 20.0), weights=WINDOWED)
    result = probe_encoder(shipped, world, k=8, mode="qa")
    assert main(["world", "probe", "--world", str(tmp_path), "--k", "8", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["groups"] == result["groups"]
    assert not result["failures"]
    tg, vb = result["groups"]["temporally_grounded"], result["groups"]["visual_bias"]
    assert tg["n"] == 8 and vb["n"] == 16
    assert tg["maxprob_any"] >= 0.85 and tg["minprob_any"] <= 0.15, tg
    assert tg["maxprob_top1"] >= 0.75, tg
    assert vb["minprob_any"] >= 0.75 and vb["maxprob_any"] <= 0.25, vb


def test_captions_and_labels():
    scene = training_scenes(1, seed=3)[0]
    rng = np.random.default_rng(0)
    for _ in range(20):
        t = float(rng.uniform(0, scene.duration))
        text, mentions = sample_caption(scene, t, rng)
        assert mentions and caption_matches(mentions, [(c, s) for c, s in _visible(scene, t)])
        for c, s in mentions:
            assert (c is None or c in text) and (s is None or s in text)
    assert caption_matches([("red", None)], [("red", "circle")])
    assert not caption_matches([("red", "square")], [("red", "circle"), ("blue", "square")])
    batch = make_batch(training_scenes(8, seed=1), rng, 16)
    assert batch.frames.shape == (16, 48, 48, 3) and batch.labels.shape == (16, 16)
    assert np.all(np.diag(batch.labels) == 1)  # every caption is true of its own frame


def _visible(scene, t):
    from tempcore.world import visible_objects

    return visible_objects(scene, t)


def test_training_reduces_loss_and_is_reproducible(tmp_path, one_thread):
    kw = dict(steps=80, batch_size=32, n_scenes=40, lr=5e-3)
    a = train_encoder(tmp_path / "a", seed=4, **kw)
    # the loss on a fixed held-out batch (single training batches of 32 are too noisy to compare)
    assert a.eval_after < 0.95 * a.eval_before, (a.eval_before, a.eval_after)
    assert len(a.losses) == 80 and all(np.isfinite(a.losses))
    b = train_encoder(tmp_path / "b", seed=4, **kw)
    assert a.losses == b.losses
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()
    enc = load_encoder(str(tmp_path / "a"), device="cpu")
    emb = enc.encode_images(np.zeros((2, 48, 48, 3), np.uint8))
    assert emb.shape == (2, 64) and np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)


def test_cli_train_encoder(tmp_path, one_thread, capsys):
    assert main(["world", "train", "--only", "encoder", "--out", str(tmp_path), "--encoder-steps", "3"]) == 0
    assert "encoder: " in capsys.readouterr().out
    card = json.loads((tmp_path / "encoder" / "training.json").read_text())
    assert card["steps"] == 3 and card["seed"] == 0
    assert load_encoder(str(tmp_path / "encoder"), device="cpu").family == "siglip"
