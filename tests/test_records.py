from __future__ import annotations

import json

import pytest

from tempcore.records import Condition, Failure, FrameSet, Prediction, Sample


def roundtrip(record):
    return type(record).from_dict(json.loads(json.dumps(record.to_dict())))


def test_sample_roundtrip_and_answer_text():
    s = Sample(
        benchmark="nextqa",
        sample_id="123_4",
        video="a/123.mp4",
        question="why?",
        options=("x", "y", "z"),
        answer=2,
        start=1.5,
        end=9.0,
        metadata={"type": "CW", "tags": [1, 2]},
    )
    back = roundtrip(s)
    assert back == s and back.metadata == s.metadata
    assert s.answer_text == "z" and s.answer_letter == "C"
    g = Sample("extremewhenbench", "q1", "v.mp4", "when?", answer_interval=(3.0, 7.5))
    assert roundtrip(g) == g and roundtrip(g).answer_interval == (3.0, 7.5)


def test_sample_rejects_out_of_range_answer():
    with pytest.raises(ValueError, match="answer index 3"):
        Sample("b", "s", "v.mp4", "q", options=("a", "b"), answer=3)


@pytest.mark.parametrize(
    "cond, key",
    [
        (Condition("maxprob", "qa", 32, encoder="google/siglip2", fps=10), "maxprob|mode=qa|k=32|encoder=google/siglip2|fps=10|seed=0"),
        (Condition("uniform", k=8, variant="linspace"), "uniform|mode=none|k=8|fps=10|seed=0|variant=linspace"),
        (Condition("oracle", "qa", 16, window=7, encoder="e", fps=2.5, seed=3, rotation=1), "oracle|mode=qa|k=16|window=7|encoder=e|fps=2.5|seed=3|rotation=1"),
    ],
)
def test_condition_key_is_stable_and_parses_back(cond, key):
    assert cond.key == key
    assert Condition.from_key(key) == cond
    assert roundtrip(cond) == cond


def test_condition_validation():
    with pytest.raises(ValueError):
        Condition("maxprob", mode="both")
    with pytest.raises(ValueError):
        Condition("maxprob", k=0)
    with pytest.raises(ValueError):
        Condition.from_key("maxprob|bogus=1")


def test_frameset_and_prediction_roundtrip():
    fs = FrameSet((1, 5, 9), (0.1, 0.5, 0.9), requested=4)
    assert fs.shortfall == 1 and len(fs) == 3
    assert roundtrip(fs) == fs
    p = Prediction("b", "s", "m", Condition("maxprob", "qa").key, "The answer is B", 1, 1, frames=fs,
                   option_probs=(0.1, 0.7, 0.2))
    assert roundtrip(p) == p
    with pytest.raises(ValueError):
        Prediction("b", "s", "m", "c", "???", None, 1)
    f = Failure("b", "s", "m", "c", "HTTP 500", attempts=3)
    assert roundtrip(f) == f
