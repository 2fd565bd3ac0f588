"""Prompt templates, the per-model registry, prompt hashes and option rotation (circular evaluation)."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tempcore import prompts
from tempcore.answers import extract_choice
from tempcore.prompts import (
    PromptError,
    PromptTemplate,
    get_template,
    letters_phrase,
    prompt_hash,
    register_model_template,
    register_template,
    render_grounding_prompt,
    render_prompt,
    rotate_index,
    rotate_options,
    template_for_model,
    unrotate_index,
)
from tempcore.records import LETTERS, Sample

OPTIONS = ("The man opens the door", "The man closes the door", "The man sits down", "The man leaves")


@pytest.fixture
def isolated_registry(monkeypatch):
    monkeypatch.setattr(prompts, "TEMPLATES", prompts.TEMPLATES.copy())
    monkeypatch.setattr(prompts, "_MODEL_TEMPLATES", [])


# --- the default template -------------------------------------------------------------------


def test_default_prompt_letters_options_in_order_and_asks_for_the_letter():
    text = render_prompt("What does the man do?", OPTIONS)
    lines = text.split("\n")
    assert lines[0] == "Question: What does the man do?"
    assert lines[1] == "Options:"
    assert lines[2:6] == [f"{LETTERS[i]}. {o}" for i, o in enumerate(OPTIONS)]
    assert lines[6] == "Answer with the option's letter (A, B, C, or D) only."
    assert "" not in lines  # no blank line left by the absent timestamps


def test_render_from_sample_uses_its_options_unless_given():
    s = Sample("nextqa", "v_1", "v.mp4", "Why did the boy run?", options=("x ray", "y axis"), answer=1)
    text = render_prompt(s)
    assert "Question: Why did the boy run?" in text and "A. x ray\nB. y axis" in text
    assert "(A or B)" in text
    rotated = render_prompt(s, options=("y axis", "x ray"))
    assert "A. y axis\nB. x ray" in rotated


def test_multiline_option_stays_on_one_line():
    text = render_prompt("Q?", ["first line\nsecond  line", "b"])
    assert "A. first line second line\nB. b" in text


def test_timestamps_line_and_verbatim_braces_in_question():
    text = render_prompt("What is {this}?", OPTIONS[:2], timestamps=[0.0, 1.5, 12.25, 3.333])
    assert text.split("\n")[0] == "Frame timestamps (seconds): 0, 1.5, 12.25, 3.33"
    assert "Question: What is {this}?" in text


def test_options_inside_question_use_n_options():
    q = "Which caption matches the video?\nA. she cuts twice\nB. she cuts three times"
    text = render_prompt(q, (), n_options=2)
    assert "Options:" not in text and text.count("A. she cuts twice") == 1
    assert text.endswith("Answer with the option's letter (A or B) only.")
    with pytest.raises(PromptError, match="needs options"):
        render_prompt(q, ())
    with pytest.raises(PromptError, match="n_options=3 but 2 options"):
        render_prompt(q, ("a", "b"), n_options=3)


def test_too_many_options_and_wrong_kind_are_named_errors():
    with pytest.raises(PromptError, match="at most 26 options"):
        render_prompt("q", [f"o{i}" for i in range(27)])
    with pytest.raises(PromptError, match="grounding template"):
        render_prompt("q", OPTIONS, template="grounding")
    with pytest.raises(PromptError, match="mc template"):
        render_grounding_prompt("a man waves", template="default")


@pytest.mark.parametrize("n, phrase", [(1, "A"), (2, "A or B"), (3, "A, B, or C"), (5, "A, B, C, D, or E")])
def test_letters_phrase(n, phrase):
    assert letters_phrase(n) == phrase


@pytest.mark.parametrize("name", ["default", "letter_only", "lmms_eval", "lmms_eval_videomme", "text_only"])
@pytest.mark.parametrize("n", [2, 3, 5])
def test_every_multiple_choice_template_lists_all_options(name, n):
    options = [f"choice number {i}" for i in range(n)]
    text = render_prompt("What happens first?", options, template=name, timestamps=[1.0, 2.0])
    for i, o in enumerate(options):
        assert f"\n{LETTERS[i]}. {o}\n" in f"\n{text}\n"
    assert "What happens first?" in text
    assert "\n\n" not in text


def test_lmms_eval_phrasings():
    lvb = render_prompt("Q?", OPTIONS, template="lmms_eval")
    assert lvb == "Q?\n" + "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(OPTIONS)) + (
        "\nAnswer with the option's letter from the given choices directly."
    )
    mme = render_prompt("Q?", OPTIONS, template="lmms_eval_videomme")
    assert mme.startswith(
        "Select the best answer to the following multiple-choice question based on the video."
    )
    assert "Respond with only the letter (A, B, C, or D)" in mme
    assert mme.endswith("The best answer is:")


def test_text_only_probe_has_no_frames_and_says_so():
    text = render_prompt("What colour is the car?", ["red", "blue"], template="text_only", timestamps=[1, 2])
    assert "Frame timestamps" not in text
    assert "not available" in text and "most plausible" in text
    assert "A. red\nB. blue" in text


def test_grounding_prompt_asks_for_start_and_end_seconds():
    text = render_grounding_prompt("the man opens the fridge", duration=3600.0, timestamps=[0, 30])
    assert text.split("\n")[0] == "The video is 3600 seconds long."
    assert "Frame timestamps (seconds): 0, 30" in text
    assert "the man opens the fridge" in text and "start and end time" in text and "seconds" in text
    bare = render_grounding_prompt("x")
    assert bare.startswith("Find the moment") and "\n\n" not in bare


# --- template validation and registry --------------------------------------------------------


@pytest.mark.parametrize(
    "text, match",
    [
        ("{question} {choices}", "unknown placeholder"),
        ("Options: {options}", "must contain {question}"),
        ("{question} {}", "not a plain name"),
        ("{question} {0}", "not a plain name"),
        ("{question", "malformed placeholder"),
    ],
)
def test_template_validation(text, match):
    with pytest.raises(PromptError, match=match):
        PromptTemplate("bad", text)


def test_grounding_template_validation():
    with pytest.raises(PromptError, match="unknown placeholder"):
        PromptTemplate("g", "{query} {options}", kind="grounding")
    with pytest.raises(PromptError, match="kind must be"):
        PromptTemplate("g", "{question}", kind="open")


def test_unknown_template_suggests_a_close_name():
    with pytest.raises(PromptError, match="did you mean 'default'"):
        get_template("defualt")


def test_register_refuses_silent_replacement(isolated_registry):
    t = PromptTemplate("mine", "{question}\n{options}\nLetter:")
    register_template(t)
    assert get_template("mine") is t
    register_template(t)  # the same template again is fine
    with pytest.raises(PromptError, match="already registered"):
        register_template(PromptTemplate("mine", "{question}\n{options}"))
    register_template(PromptTemplate("mine", "{question}\n{options}"), overwrite=True)
    assert render_prompt("Q", ["x", "y"], template="mine") == "Q\nA. x\nB. y"


def test_per_model_overrides_last_match_wins(isolated_registry):
    assert template_for_model("Qwen/Qwen3-VL-8B-Instruct").name == "default"
    register_model_template("*smolvlm*", "letter_only")
    register_model_template("*smolvlm2-256m*", "lmms_eval")
    assert template_for_model("HuggingFaceTB/SmolVLM2-2.2B-Instruct").name == "letter_only"
    assert template_for_model("HuggingFaceTB/SmolVLM2-256M-Video-Instruct").name == "lmms_eval"
    assert template_for_model("llava-hf/llava-onevision-qwen2-0.5b-ov-hf").name == "default"
    assert prompts.model_templates() == [("*smolvlm*", "letter_only"), ("*smolvlm2-256m*", "lmms_eval")]
    with pytest.raises(PromptError, match="unknown prompt template"):
        register_model_template("*x*", "no_such_template")


# --- prompt hash ------------------------------------------------------------------------------


def test_prompt_hash_is_sha256_of_exact_text():
    text = render_prompt("What happens?", OPTIONS)
    h = prompt_hash(text)
    assert h == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert prompt_hash(text, length=16) == h[:16] and re.fullmatch(r"[0-9a-f]{16}", h[:16])
    assert h == prompt_hash(render_prompt("What happens?", OPTIONS))
    assert h != prompt_hash(text + " ")
    assert h != prompt_hash(render_prompt("What happens?", OPTIONS[::-1]))
    with pytest.raises(PromptError):
        prompt_hash(text, length=0)


# --- option rotation --------------------------------------------------------------------------

option_lists = st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=8)


@settings(max_examples=150, deadline=None)
@given(options=option_lists, rotation=st.integers(-50, 50))
def test_rotation_properties(options, rotation):
    n = len(options)
    rotated, perm = rotate_options(options, rotation)
    assert sorted(perm) == list(range(n))
    assert all(rotated[j] == options[perm[j]] for j in range(n))
    assert rotate_options(options, rotation + n) == (rotated, perm)
    for j in range(n):
        original = unrotate_index(j, rotation, n)
        assert original == perm[j]
        assert rotate_index(original, rotation, n) == j
    if rotation % n == 0:
        assert rotated == tuple(options)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 26), answer=st.data())
def test_every_rotation_maps_back_and_visits_every_position(n, answer):
    correct = answer.draw(st.integers(0, n - 1))
    positions = [rotate_index(correct, r, n) for r in range(n)]
    assert sorted(positions) == list(range(n))
    assert all(unrotate_index(positions[r], r, n) == correct for r in range(n))


def test_rotation_edge_cases():
    assert rotate_options([], 3) == ((), ())
    assert rotate_options(["a", "b", "c"], 1) == (("b", "c", "a"), (1, 2, 0))
    assert rotate_options(["a", "b", "c"], -1) == (("c", "a", "b"), (2, 0, 1))
    with pytest.raises(PromptError):
        unrotate_index(3, 0, 3)
    with pytest.raises(PromptError):
        rotate_index(0, 1, 0)


def _letter_of_text_in_prompt(prompt: str, text: str) -> str:
    """A reader of the rendered prompt: the letter printed before ``text``."""
    (letter,) = [line[0] for line in prompt.split("\n") if line[3:] == text and line[1:3] == ". "]
    return letter


@pytest.mark.parametrize("template", ["default", "lmms_eval", "letter_only"])
def test_circular_evaluation_round_trip(template):
    """Rotate, render, answer in the rotated prompt's letter, extract, map back: the original index."""
    sample = Sample("b", "s", "v.mp4", "What does the man do?", options=OPTIONS, answer=2)
    seen_letters = set()
    for rotation in range(len(OPTIONS)):
        rotated, perm = rotate_options(sample.options, rotation)
        prompt = render_prompt(sample, rotated, template=template)
        letter = _letter_of_text_in_prompt(prompt, sample.answer_text)
        seen_letters.add(letter)
        assert LETTERS.index(letter) == rotate_index(sample.answer, rotation, len(OPTIONS))
        parsed = extract_choice(f"The correct answer is ({letter}).", rotated)
        assert unrotate_index(parsed.index, rotation, len(OPTIONS)) == sample.answer
        assert perm[parsed.index] == sample.answer
    assert seen_letters == {"A", "B", "C", "D"}
