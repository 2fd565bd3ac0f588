"""Frame-text encoders: tiny random-weight SigLIP / SigLIP2 / CLIP checkpoints loaded by path, exactly as
a user's checkpoint folder or hub snapshot would be, through ``tempcore.encoders.load_encoder``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers.tiny_encoders import FAMILIES, build_tiny_siglip2_fixres
from tempcore.encoders import (
    EncoderLoadError,
    FrameTextEncoder,
    TextEncoding,
    UnknownEncoderError,
    UnsupportedEncoderError,
    load_encoder,
    register_encoder,
    resolve_encoder_id,
)


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread(one_torch_thread_per_module):
    """Tiny models run fastest on one thread (conftest.py)."""


@pytest.fixture(scope="session")
def checkpoints(tiny_encoder_checkpoints: dict[str, Path]) -> dict[str, Path]:
    return tiny_encoder_checkpoints  # built once per session (conftest.py)


@pytest.fixture(scope="session")
def encoders(checkpoints: dict[str, Path]) -> dict[str, FrameTextEncoder]:
    return {family: load_encoder(path, batch_size=4) for family, path in checkpoints.items()}


def frames(n: int, h: int = 40, w: int = 56, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


SHORT = "a red dog runs in the park"
LONG = " ".join(["the man picks the blue cup from the kitchen table and walks to the door"] * 4)


def test_importing_encoders_and_scoring_does_not_import_torch() -> None:
    code = (
        "import sys, tempcore, tempcore.encoders, tempcore.run.frame_scoring, tempcore.cli.score, tempcore.encoders.cache\n"
        "heavy = sorted(m for m in ('torch', 'transformers') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("family", FAMILIES)
def test_loads_by_path_and_is_a_frame_text_encoder(
    encoders: dict[str, FrameTextEncoder], family: str
) -> None:
    enc = encoders[family]
    assert isinstance(enc, FrameTextEncoder)
    assert enc.family == family  # type: ignore[attr-defined]
    assert str(enc.device) == "cpu" and str(enc.dtype) == "torch.float32"  # type: ignore[attr-defined]
    assert len(enc.fingerprint) == 64


@pytest.mark.parametrize("family", FAMILIES)
def test_image_embeddings_are_normalised_batched_and_distinct(
    encoders: dict[str, FrameTextEncoder], family: str
) -> None:
    enc = encoders[family]
    x = frames(7)
    e = enc.encode_images(x)  # batch_size 4: two batches
    assert e.shape == (7, enc.dim) and e.dtype == np.float32  # type: ignore[attr-defined]
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    one_by_one = np.concatenate([enc.encode_images(x[i : i + 1]) for i in range(7)])
    np.testing.assert_allclose(e, one_by_one, atol=1e-5)
    gram = e @ e.T
    assert np.all(gram[~np.eye(7, dtype=bool)] < 0.99999), "different frames gave the same embedding"
    assert enc.encode_images(x[:0]).shape == (0, enc.dim)  # type: ignore[attr-defined]


@pytest.mark.parametrize("family", FAMILIES)
def test_text_embeddings_normalised_distinct_and_batch_independent(
    encoders: dict[str, FrameTextEncoder], family: str
) -> None:
    enc = encoders[family]
    texts = [SHORT, "what does the woman hold", "who opens the window", SHORT]
    out = enc.encode_texts(texts)
    assert isinstance(out, TextEncoding) and out.embeddings.shape == (4, enc.dim)  # type: ignore[attr-defined]
    np.testing.assert_allclose(np.linalg.norm(out.embeddings, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(out.embeddings[0], out.embeddings[3], atol=1e-6)
    for i in range(3):
        for j in range(i + 1, 3):
            assert out.embeddings[i] @ out.embeddings[j] < 0.9999, (texts[i], texts[j])
    alone = enc.encode_texts([SHORT]).embeddings[0]
    np.testing.assert_allclose(alone, out.embeddings[0], atol=1e-5)  # padding does not depend on the batch


@pytest.mark.parametrize("family", FAMILIES)
def test_long_texts_are_truncated_by_the_tokenizer_and_recorded(
    encoders: dict[str, FrameTextEncoder], family: str
) -> None:
    enc = encoders[family]
    assert enc.max_length == 16  # type: ignore[attr-defined]  # the tiny checkpoints' text limit
    out = enc.encode_texts([SHORT, LONG, LONG + " and then the dog jumps"])
    assert out.truncated.tolist() == [False, True, True]
    assert out.token_counts[0] <= 16 < out.token_counts[1] < out.token_counts[2]
    assert out.max_length == 16
    # Both long texts are cut to the same first 16 tokens, so they get the same embedding.
    np.testing.assert_allclose(out.embeddings[1], out.embeddings[2], atol=1e-6)


def test_siglip2_uses_the_saved_naflex_patch_settings(encoders: dict[str, FrameTextEncoder]) -> None:
    enc = encoders["siglip2"]
    # Siglip2Processor's call-time defaults are patch 16 / 256 patches; the checkpoint saved 8 / 16.
    assert enc.image_kwargs == {"patch_size": 8, "max_num_patches": 16}  # type: ignore[attr-defined]
    prepared = enc.prepare_images(frames(2, h=30, w=90))  # type: ignore[attr-defined]
    assert tuple(prepared["pixel_values"].shape) == (2, 16, 8 * 8 * 3)
    shapes = prepared["spatial_shapes"].tolist()
    assert shapes[0][0] * shapes[0][1] <= 16 and shapes[0][1] > shapes[0][0]  # wide frame kept wide
    assert type(enc.tokenizer).__name__ == "Siglip2Tokenizer"  # type: ignore[attr-defined]
    e = enc.encode_prepared(prepared)  # type: ignore[attr-defined]
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)


def test_siglip_family_texts_are_lower_cased_even_with_a_plain_gemma_tokenizer(tmp_path: Path) -> None:
    enc = load_encoder(build_tiny_siglip2_fixres(tmp_path / "siglip2-fixres"))
    assert enc.family == "siglip" and type(enc.tokenizer).__name__ == "GemmaTokenizer"  # type: ignore[attr-defined]
    # the tokenizer alone tells the cases apart; the encoder must not (SigLIP2 was trained lower-cased)
    assert enc.tokenizer("A Red Dog")["input_ids"] != enc.tokenizer("a red dog")["input_ids"]  # type: ignore[attr-defined]
    out = enc.encode_texts(["A Red Dog runs IN the Park", "a red dog runs in the park", "a blue cat sits"])
    np.testing.assert_allclose(out.embeddings[0], out.embeddings[1], atol=1e-6)
    assert out.embeddings[0] @ out.embeddings[2] < 0.9999


def test_fingerprint_is_stable_and_tracks_weights_preprocessing_and_dtype(
    checkpoints: dict[str, Path], encoders: dict[str, FrameTextEncoder], tmp_path: Path
) -> None:
    again = load_encoder(checkpoints["siglip"])
    assert again.fingerprint == encoders["siglip"].fingerprint
    assert len({e.fingerprint for e in encoders.values()}) == 3
    bf16 = load_encoder(checkpoints["siglip"], dtype="bfloat16")
    assert bf16.fingerprint != again.fingerprint
    low, full = bf16.encode_images(frames(3)), again.encode_images(frames(3))
    assert low.dtype == np.float32 and np.all(np.sum(low * full, axis=1) > 0.99)  # bf16 compute, fp32 output

    resized = tmp_path / "siglip-48px"
    shutil.copytree(checkpoints["siglip"], resized)
    cfg_path = resized / "preprocessor_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["size"] = {"height": 48, "width": 48}
    cfg_path.write_text(json.dumps(cfg))
    assert load_encoder(resized).fingerprint != again.fingerprint

    retrained = tmp_path / "siglip-other-weights"
    shutil.copytree(checkpoints["siglip"], retrained)
    from safetensors.numpy import load_file, save_file

    weights = load_file(retrained / "model.safetensors")
    name = next(k for k in sorted(weights) if k.startswith("vision_model") and weights[k].ndim == 2)
    weights[name] = weights[name] + 0.01
    save_file(weights, retrained / "model.safetensors", metadata={"format": "pt"})
    assert load_encoder(retrained).fingerprint != again.fingerprint


def test_clip_with_an_eos_id_the_tokenizer_does_not_end_with_is_refused(
    checkpoints: dict[str, Path], tmp_path: Path
) -> None:
    broken = tmp_path / "clip-bad-eos"
    shutil.copytree(checkpoints["clip"], broken)
    cfg = json.loads((broken / "config.json").read_text())
    cfg["text_config"]["eos_token_id"] = 5
    (broken / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(EncoderLoadError, match="EOS"):
        load_encoder(broken)


def test_only_safetensors_weights_are_loaded(checkpoints: dict[str, Path], tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    pickled = tmp_path / "siglip-pickle"
    shutil.copytree(checkpoints["siglip"], pickled)
    torch.save(load_file(pickled / "model.safetensors"), pickled / "pytorch_model.bin")
    (pickled / "model.safetensors").unlink()
    with pytest.raises(EncoderLoadError, match="safetensors"):
        load_encoder(pickled)


def test_unsupported_architecture_and_unknown_names(tmp_path: Path) -> None:
    bert = tmp_path / "bert"
    bert.mkdir()
    (bert / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 8}))
    with pytest.raises(UnsupportedEncoderError, match="bert"):
        load_encoder(bert)
    with pytest.raises(UnknownEncoderError, match="did you mean siglip2"):
        load_encoder("siglp2")
    with pytest.raises(UnknownEncoderError, match="no such folder"):
        load_encoder(str(tmp_path / "nowhere" / "model"))
    assert resolve_encoder_id("siglip2") == "google/siglip2-so400m-patch14-384"
    assert resolve_encoder_id("clip") == "openai/clip-vit-large-patch14"
    assert resolve_encoder_id("someone/some-siglip") == "someone/some-siglip"


def test_registered_factories_get_the_load_options(encoders: dict[str, FrameTextEncoder]) -> None:
    seen = {}

    def factory(**kwargs: object) -> FrameTextEncoder:
        seen.update(kwargs)
        return encoders["clip"]

    register_encoder("my-test-encoder", factory)
    assert load_encoder("my-test-encoder", device="cpu", batch_size=3) is encoders["clip"]
    assert seen == {
        "device": "cpu",
        "dtype": None,
        "revision": None,
        "trust_remote_code": False,
        "batch_size": 3,
    }


def test_device_and_dtype_resolution() -> None:
    import torch

    from tempcore.encoders.hf import resolve_device, resolve_dtype

    auto = resolve_device(None)
    if torch.cuda.is_available():
        assert auto.type == "cuda"
        expected = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        assert resolve_dtype(None, auto) == expected
    elif torch.backends.mps.is_available():
        assert auto.type == "mps" and resolve_dtype(None, auto) == torch.float16
    else:
        assert auto.type == "cpu" and resolve_dtype("auto", auto) == torch.float32
    cpu = torch.device("cpu")
    assert resolve_dtype("bf16", cpu) == torch.bfloat16
    assert resolve_dtype("float16", cpu) == torch.float16
    assert resolve_dtype(torch.float64, cpu) == torch.float64
    with pytest.raises(EncoderLoadError, match="unknown dtype"):
        resolve_dtype("int8", cpu)
