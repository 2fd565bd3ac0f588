"""The transformers adapters end to end on tiny random-weight checkpoints of each real architecture.

Every checkpoint is written with ``save_pretrained`` to a temporary folder and loaded through
``load_model`` exactly as a user's hub checkpoint is (``tests/helpers/tiny_vlms.py``).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import tiny_vlms  # noqa: E402
from tempcore.models import (  # noqa: E402
    MissingExtraError,
    ModelConfigError,
    ModelError,
    ModelRequest,
    ModelSpec,
    RemoteCodeRefused,
    as_spec,
    load_model,
)
from tempcore.models.presets import PAPER_PANEL, PRESETS, TEXT_PROBES, preset_spec  # noqa: E402

FAMILIES = tiny_vlms.FAMILIES


@pytest.fixture(scope="session")
def checkpoints(tiny_vlm_checkpoints: dict[str, Path]) -> dict[str, Path]:
    """Every tiny checkpoint, built once per session (conftest.py)."""
    return tiny_vlm_checkpoints


_loaded: dict[tuple[str, str], object] = {}


def model_for(checkpoints: dict[str, Path], family: str, backend: str = "hf", **spec: object):
    """Load (once per session and spec) the tiny checkpoint of ``family`` through the registry."""
    key = (family, json.dumps(spec, sort_keys=True, default=str))
    if key not in _loaded:
        _loaded[key] = load_model(ModelSpec(backend=backend, model=str(checkpoints[family]), **spec))
    return _loaded[key]


def frames(n: int, seed: int, shape: tuple[int, int] = (48, 64)) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return tuple(rng.integers(0, 256, (*shape, 3), dtype=np.uint8) for _ in range(n))


OPTIONS = ("the man opens the door", "the dog runs away", "a car stops", "nothing happens")


def prompt(question: str, options: tuple[str, ...] = OPTIONS) -> str:
    lettered = "\n".join(f"{'ABCD'[i]}. {o}" for i, o in enumerate(options))
    return f"{question}\n{lettered}\nAnswer with the option's letter from the given choices directly."


def requests() -> list[ModelRequest]:
    """Three requests with 1, 4 and 2 frames of different sizes and prompts of different lengths."""
    return [
        ModelRequest(frames(1, 0), prompt("What happens first?"), OPTIONS, key="r0"),
        ModelRequest(
            frames(4, 1, (40, 72)),
            prompt("Which event happens after the person walks in?"),
            OPTIONS,
            key="r1",
        ),
        ModelRequest(frames(2, 2, (64, 48)), prompt("What is shown?", OPTIONS[:3]), OPTIONS[:3], key="r2"),
    ]


# --- every architecture end to end -------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_generation_matches_one_at_a_time(checkpoints, family):
    model = model_for(checkpoints, family)
    assert model.tokenizer.padding_side == "left"
    reqs = requests()
    batched = model.answer(reqs)
    assert [r.ok for r in batched] == [True] * 3, [r.error for r in batched]
    single = [model.answer([r])[0] for r in reqs]
    assert [r.text for r in batched] == [r.text for r in single]
    # the texts differ between requests: the model really sees each request's own input
    assert len({r.text for r in batched}) > 1 or len({r.option_logprobs for r in batched}) > 1
    for b, s, req in zip(batched, single, reqs):
        assert isinstance(b.text, str)
        assert b.option_logprobs is not None and len(b.option_logprobs) == len(req.options)
        np.testing.assert_allclose(b.option_logprobs, s.option_logprobs, atol=1e-4)
        assert all(lp < 0 for lp in b.option_logprobs)


@pytest.mark.parametrize("family", FAMILIES)
def test_option_scores_are_finite_deterministic_and_match_generation(checkpoints, family):
    model = model_for(checkpoints, family)
    reqs = requests()
    first = model.answer(reqs, method="option_scores")
    second = model.answer(list(reversed(reqs)), method="option_scores")[::-1]
    generated = model.answer(reqs)
    for a, b, g, req in zip(first, second, generated, reqs):
        assert a.ok, a.error
        assert len(a.option_logprobs) == len(req.options)
        assert all(math.isfinite(x) for x in a.option_logprobs)
        np.testing.assert_allclose(a.option_logprobs, b.option_logprobs, atol=1e-5)
        assert a.text == req.letters[int(np.argmax(a.option_logprobs))]
        # letter scoring and the first step of greedy generation score the same letter tokens
        np.testing.assert_allclose(a.option_logprobs, g.option_logprobs, atol=1e-4)
        assert math.isclose(sum(a.option_probs), 1.0, rel_tol=1e-9)


@pytest.mark.parametrize("family", ["qwen2_vl", "idefics3", "llava_onevision"])
def test_option_text_scoring_matches_a_naive_forward_pass(checkpoints, family):
    """Sum of continuation log-probs, checked against one plain forward pass per option."""
    model = model_for(checkpoints, family, score_option_text=True)
    req = requests()[1]
    (scored,) = model.answer([req], method="option_scores")
    assert scored.ok, scored.error
    text = model.render(req)
    sep = "" if text[-1].isspace() else " "
    spelling = sep + "{}" if len(model.tokenizer.encode(sep + "A", add_special_tokens=False)) == 1 else "{}"
    pils = [[tiny_vlms_image(im) for im in req.images]]
    reference = []
    for letter, option in zip(req.letters, req.options):
        cont = model.tokenizer.encode(spelling.format(letter) + f". {option}", add_special_tokens=False)
        inputs = model.processor(text=[text], images=pils, return_tensors="pt", add_special_tokens=False)
        ids = torch.cat([inputs["input_ids"], torch.tensor([cont])], dim=1)
        inputs["input_ids"] = ids
        inputs["attention_mask"] = torch.ones_like(ids)
        if "mm_token_type_ids" in inputs:  # Qwen-VL: 0 marks text tokens
            extra = torch.zeros((1, n_cont := len(cont)), dtype=inputs["mm_token_type_ids"].dtype)
            assert n_cont > 0
            inputs["mm_token_type_ids"] = torch.cat([inputs["mm_token_type_ids"], extra], dim=1)
        with torch.no_grad():
            logits = model.model(**inputs).logits[0].float()
        logp = torch.log_softmax(logits, dim=-1)
        n = len(cont)
        reference.append(sum(float(logp[ids.shape[1] - n - 1 + t, tok]) for t, tok in enumerate(cont)))
    np.testing.assert_allclose(scored.option_logprobs, reference, atol=1e-3)
    assert scored.text == "ABCD"[int(np.argmax(reference))]


def tiny_vlms_image(image: np.ndarray):
    from PIL import Image

    return Image.fromarray(image)


def test_chat_render_has_one_image_entry_per_frame_then_the_text(checkpoints):
    model = model_for(checkpoints, "llava_onevision")
    req = requests()[1]
    text = model.render(req)
    assert text.count("<image>") == 4
    assert text.rindex("<image>") < text.index(req.prompt)
    assert text.endswith("<|im_start|>assistant\n")
    qwen = model_for(checkpoints, "qwen3_vl")
    assert qwen.render(req).count("<|vision_start|><|image_pad|><|vision_end|>") == 4


def test_a_failing_item_does_not_fail_the_batch(checkpoints):
    model = model_for(checkpoints, "qwen2_vl")
    good = requests()
    # Qwen's resizing refuses an aspect ratio above 200: this item fails inside the processor
    bad = ModelRequest((np.zeros((1, 400, 3), np.uint8),), prompt("Broken frame?"), OPTIONS, key="bad")
    out = model.answer([good[0], bad, good[1]])
    assert out[0].ok and out[2].ok
    assert not out[1].ok and out[1].text is None and "aspect ratio" in out[1].error
    assert out[1].attempts == 2
    alone = model.answer([good[0], good[1]])
    assert [out[0].text, out[2].text] == [r.text for r in alone]
    scored = model.answer([bad, good[2]], method="option_scores")
    assert not scored[0].ok and scored[1].ok


def test_requests_the_model_cannot_take_fail_alone(checkpoints):
    model = model_for(checkpoints, "smolvlm", max_frames=2)
    reqs = requests()
    out = model.answer(reqs)
    assert [r.ok for r in out] == [True, False, True]
    assert "max_frames=2" in out[1].error
    no_options = ModelRequest(frames(1, 5), "Describe the frame.", key="open")
    scored = model.answer([no_options, reqs[0]], method="option_scores")
    assert not scored[0].ok and "options" in scored[0].error and scored[1].ok


def test_requests_without_images_and_mixed_batches(checkpoints):
    model = model_for(checkpoints, "qwen2_5_vl")
    text_only = ModelRequest((), prompt("Which is most likely?"), OPTIONS, key="t")
    with_images = requests()[0]
    mixed = model.answer([text_only, with_images])
    assert all(r.ok for r in mixed)
    assert mixed[0].text == model.answer([text_only])[0].text
    assert mixed[1].text == model.answer([with_images])[0].text


def test_processor_and_image_size_hints_change_what_the_model_sees(checkpoints):
    req = [requests()[0]]
    split = model_for(checkpoints, "smolvlm").inputs_for(req)["input_ids"].shape[1]
    unsplit = model_for(checkpoints, "smolvlm", processor_kwargs={"do_image_splitting": False})
    assert unsplit.inputs_for(req)["input_ids"].shape[1] < split
    assert unsplit.answer(req)[0].ok
    big = model_for(checkpoints, "qwen2_vl").inputs_for(req)["input_ids"].shape[1]
    small = model_for(checkpoints, "qwen2_vl", image_size={"shortest_edge": 28 * 28, "longest_edge": 28 * 28})
    assert small.inputs_for(req)["input_ids"].shape[1] < big
    assert small.answer(req)[0].ok
    # LLaVA-OneVision's anyres grid follows the frame size: a smaller frame, fewer tiles
    full = model_for(checkpoints, "llava_onevision").inputs_for(req)["input_ids"].shape[1]
    capped = model_for(checkpoints, "llava_onevision", max_image_side=32)
    assert capped.inputs_for(req)["input_ids"].shape[1] < full
    assert capped.answer(req)[0].ok


def test_dtype_and_device_are_automatic_and_overridable(checkpoints):
    auto = model_for(checkpoints, "idefics3")
    assert auto.device == "cpu" and auto.dtype == torch.float32
    bf16 = model_for(checkpoints, "idefics3", dtype="bfloat16", device="cpu")
    assert next(bf16.model.parameters()).dtype == torch.bfloat16
    out = bf16.answer(requests()[:2], method="option_scores")
    assert all(r.ok and all(math.isfinite(x) for x in r.option_logprobs) for r in out)
    with pytest.raises(ModelConfigError, match="dtype"):
        load_model(ModelSpec(backend="hf", model=str(checkpoints["idefics3"]), dtype="float8"))


def test_system_prompt_and_revision_are_kept(checkpoints):
    model = model_for(checkpoints, "qwen2_vl", system_prompt="Answer with one letter.", name="tiny-qwen")
    text = model.render(requests()[0])
    assert text.startswith("<|im_start|>system\nAnswer with one letter.<|im_end|>")
    assert model.name == "tiny-qwen" and model.revision is None
    assert model.answer(requests()[:1])[0].ok


# --- text-only LLM ------------------------------------------------------------------------


def test_text_model_ignores_images_and_batches(checkpoints):
    model = model_for(checkpoints, "text", backend="hf-text")
    reqs = requests()
    stripped = [ModelRequest((), r.prompt, r.options, key=r.key) for r in reqs]
    batched = model.answer(reqs)
    assert all(r.ok for r in batched)
    assert [r.text for r in batched] == [r.text for r in model.answer(stripped)]
    assert [r.text for r in batched] == [model.answer([r])[0].text for r in reqs]
    assert model.render(reqs[0]) == f"<|im_start|>user\n{reqs[0].prompt}<|im_end|>\n<|im_start|>assistant\n"
    scored = model.answer(reqs, method="option_scores")
    again = model.answer(reqs, method="option_scores")
    for s, a, g in zip(scored, again, batched):
        assert s.ok and all(math.isfinite(x) for x in s.option_logprobs)
        assert s.option_logprobs == a.option_logprobs
        np.testing.assert_allclose(s.option_logprobs, g.option_logprobs, atol=1e-4)


def test_text_model_without_chat_template_sees_the_bare_prompt(checkpoints):
    model = model_for(checkpoints, "text_base", backend="hf-text", score_option_text=True)
    req = requests()[2]
    assert model.render(req) == req.prompt + "\n"
    out = model.answer([req], method="option_scores")[0]
    assert out.ok and len(out.option_logprobs) == 3 and out.text in "ABC"


# --- loading rules ------------------------------------------------------------------------


def _remote_code_checkpoint(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "model_type": "videollama3_qwen2",
        "architectures": ["Videollama3Qwen2ForCausalLM"],
        "auto_map": {"AutoConfig": "configuration_videollama3.Videollama3Qwen2Config"},
    }
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("backend", ["hf", "hf-text"])
def test_remote_code_checkpoints_need_the_opt_in(tmp_path, backend):
    folder = _remote_code_checkpoint(tmp_path / "remote")
    with pytest.raises(RemoteCodeRefused, match="trust_remote_code"):
        load_model(ModelSpec(backend=backend, model=str(folder)))


def test_remote_code_presets_are_refused_without_the_opt_in():
    with pytest.raises(RemoteCodeRefused, match="videollama3-2b"):
        load_model("videollama3-2b")
    with pytest.raises(RemoteCodeRefused):
        as_spec({"preset": "videollama3-7b"})
    spec = preset_spec("videollama3-2b", trust_remote_code=True)
    assert spec.trust_remote_code and spec.model == "DAMO-NLP-SG/VideoLLaMA3-2B"


def test_only_safetensors_weights_load(checkpoints, tmp_path):
    import shutil

    from safetensors.torch import load_file

    folder = tmp_path / "pickled"
    shutil.copytree(checkpoints["text"], folder)
    weights = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    torch.save(weights, folder / "pytorch_model.bin")
    with pytest.raises(ModelError, match="model.safetensors"):
        load_model(ModelSpec(backend="hf-text", model=str(folder)))


def test_vllm_backend_without_vllm_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # an import of vllm now fails, installed or not
    with pytest.raises(MissingExtraError, match=r"tempcore\[vllm\]"):
        load_model(ModelSpec(backend="vllm", model="Qwen/Qwen3-VL-8B-Instruct"))


def test_registry_errors_and_presets():
    with pytest.raises(ModelConfigError, match="did you mean 'hf-text'"):
        load_model(ModelSpec(backend="hf_text", model="x"))
    with pytest.raises(ModelConfigError, match="did you mean 'qwen3-vl-8b'"):
        load_model("qwen3-vl-8")
    with pytest.raises(ModelConfigError, match="do_sample"):
        ModelSpec(backend="hf", model="x", generation_kwargs={"do_sample": True})
    assert len(PAPER_PANEL) == 8 and all(name in PRESETS for name in PAPER_PANEL + TEXT_PROBES)
    spec = as_spec({"preset": "smolvlm2-256m", "max_new_tokens": 4, "processor_kwargs": {"foo": 1}})
    assert spec.model == "HuggingFaceTB/SmolVLM2-256M-Video-Instruct" and spec.max_new_tokens == 4
    assert spec.processor_kwargs == {"do_image_splitting": False, "foo": 1}
    assert preset_spec("qwen3-8b-text").extra["chat_template_kwargs"] == {"enable_thinking": False}


def test_importing_the_models_package_does_not_import_torch():
    code = "import sys, tempcore.models, tempcore.models.presets; print('torch' in sys.modules, 'httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


# --- the interface records ----------------------------------------------------------------


def test_request_and_response_records_validate():
    from tempcore.models import ModelResponse

    with pytest.raises(ValueError, match="image 0 must be uint8"):
        ModelRequest((np.zeros((4, 4, 3), np.float32),), "q")
    with pytest.raises(ValueError, match=r"\(H, W, 3\)"):
        ModelRequest((np.zeros((4, 4), np.uint8),), "q")
    with pytest.raises(ValueError, match="timestamps"):
        ModelRequest((np.zeros((4, 4, 3), np.uint8),), "q", timestamps=(0.0, 1.0))
    assert ModelRequest((), "q", ("x", "y", "z")).letters == ("A", "B", "C")
    failed = ModelResponse.failure(RuntimeError("boom"), attempts=3)
    assert (
        not failed.ok
        and failed.text is None
        and failed.error == "RuntimeError: boom"
        and failed.attempts == 3
    )
    with pytest.raises(ValueError):
        ModelResponse(text=None)
    probs = ModelResponse("A", option_logprobs=(math.log(0.2), math.log(0.6))).option_probs
    np.testing.assert_allclose(probs, (0.25, 0.75))


def test_empty_batches_and_unknown_methods(checkpoints):
    model = model_for(checkpoints, "text", backend="hf-text")
    assert model.answer([]) == []
    with pytest.raises(ModelConfigError, match="unknown answer method"):
        model.answer(requests()[:1], method="beam")
