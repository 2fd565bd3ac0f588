"""The shared answer extractor: the corpus (the spec), named traps, intervals, properties and the CLI."""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tempcore import extractor as answers  # the choice rules live in the stdlib-only extractor
from tempcore.answers import (
    METHODS,
    AnswerArgumentError,
    Extraction,
    extract_choice,
    extract_interval,
)
from tempcore.cli import main
from tempcore.records import LETTERS

DATA = Path(__file__).parent / "data"
CORPUS = [
    json.loads(line) for line in (DATA / "answer_corpus.jsonl").read_text(encoding="utf-8").splitlines()
]
DOOR = [
    "The man opens the door",
    "The man closes the door",
    "The man sits on the chair",
    "The man leaves the room",
]
ARTICLE = ["A man walks into the room", "A dog runs across the yard", "A woman pours coffee", "A child plays"]


def _run(row: dict) -> Extraction:
    return extract_choice(row["response"], row.get("options"), row.get("n_options"))


def _corpus_failures() -> list[str]:
    return [row["id"] for row in CORPUS if _run(row).index != row["expected"]]


# --- the corpus --------------------------------------------------------------------------------


@pytest.mark.parametrize("row", CORPUS, ids=[r["id"] for r in CORPUS])
def test_corpus(row):
    got = _run(row)
    assert got.index == row["expected"], f"{row['response']!r} -> {got}"
    if got.index is None:
        assert got.letter is None and got.error, "a parse failure must say why"
    else:
        assert got.letter == LETTERS[got.index] and got.error is None and got.method in METHODS


def test_corpus_shape_and_coverage():
    assert len(CORPUS) >= 150
    ids = [r["id"] for r in CORPUS]
    assert len(ids) == len(set(ids))
    for r in CORPUS:
        n = len(r["options"]) if r.get("options") else r["n_options"]
        assert r["expected"] is None or 0 <= r["expected"] < n, r["id"]
    # every stage decides real responses, and failures are a real share of the corpus
    methods = Counter(_run(r).method for r in CORPUS if r["expected"] is not None)
    assert all(methods[m] >= 3 for m in METHODS), methods
    assert sum(r["expected"] is None for r in CORPUS) >= 30
    responses = "\n".join(r["response"] for r in CORPUS)
    for style in ("<think>", "</s>", "<|im_end|>", "**", "\u201c", "\uff22", "\n\n", "boxed", "\u7b54\u6848"):
        assert style in responses, style


def _first_capital(text: str, n: int) -> int | None:
    """The shape of the usual one-regex extractor: the first capital among the valid letters."""
    m = re.search(f"[{LETTERS[:n]}]", text)
    return None if m is None else LETTERS.index(m.group(0))


def _first_token(text: str, n: int) -> int | None:
    """A stricter naive extractor: the first standalone valid capital letter."""
    m = re.search(rf"\b([{LETTERS[:n]}])\b", text)
    return None if m is None else LETTERS.index(m.group(1))


@pytest.mark.parametrize("naive", [_first_capital, _first_token])
def test_corpus_defeats_naive_extractors(naive):
    """The corpus is hard enough that a one-regex extractor would fail it badly."""
    wrong = 0
    for r in CORPUS:
        n = len(r["options"]) if r.get("options") else r["n_options"]
        wrong += naive(r["response"], n) != r["expected"]
    assert wrong >= 60, wrong


_NEVER = re.compile(r"(?!x)x")

MUTATIONS = {
    "no_bare_stage": {"_BARE": _NEVER},
    "no_answer_phrases": {"_PHRASE_RE": _NEVER},
    "no_postfix_phrases": {"_POSTFIX_RE": _NEVER},
    "no_leading_letter": {"_LEADING": _NEVER},
    "no_markers": {"_MARKERS": []},
    "no_exact_option_text": {"_option_text_exact": lambda text, options: None},
    "no_contained_option_text": {"_option_text_contained": lambda text, options: (None, [])},
    "no_word_rule": {"_is_word_use": lambda letter, enclosed, after: False},
    "no_negation": {"_NEGATED_AFTER": _NEVER, "_NEGATED_BEFORE": _NEVER, "_NEGATED_PHRASE": _NEVER},
    "no_hedges": {"_HEDGE_AFTER": _NEVER},
    "no_retraction": {"_RETRACT": _NEVER},
    "no_list_after_leading_letter": {"_LIST_AFTER": _NEVER},
    "no_echo_detection": {"_echo_positions": lambda cands: set()},
    "no_option_masking": {"_strip_options": lambda text, options: text},
    "no_letter_list_removal": {"_ENUM3": _NEVER, "_ENUM2": _NEVER},
    "first_match_instead_of_last": {"_phrase_candidates": None},
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_corpus_catches_each_regression(monkeypatch, mutation):
    """Disabling any one rule of the extractor makes the corpus fail: every rule is pinned by it."""
    for name, value in MUTATIONS[mutation].items():
        if mutation == "first_match_instead_of_last":
            original = answers._phrase_candidates

            def first_only(text, _orig=original):
                cands, denied = _orig(text)
                return cands[:1], denied

            value = first_only
        monkeypatch.setattr(answers, name, value)
    assert _corpus_failures(), f"the corpus does not notice {mutation}"


# --- named traps --------------------------------------------------------------------------------

TRAPS = [
    ("bare_letter", "B", 1),
    ("paren", "(B)", 1),
    ("period", "B.", 1),
    ("close_paren", "B)", 1),
    ("brackets", "[B]", 1),
    ("answer_colon", "Answer: B", 1),
    ("answer_is", "I believe the answer is B", 1),
    ("correct_answer_paren_not_T", "The correct answer is (B)", 1),
    ("bold", "**B**", 1),
    ("option_word", "Option B", 1),
    ("letter_colon_text", "B: The man closes the door", 1),
    ("option_text_exact", "The man closes the door", 1),
    ("option_text_normalised", "  the MAN closes, the door!! ", 1),
    ("E_beyond_four_options", "E", None),
    ("E_stated_beyond_four_options", "The answer is E.", None),
    ("lowercase_b_paren", "b)", 1),
    ("lowercase_b_paren_in_sentence", "I'd say b) here", 1),
    ("last_match", "I think A... no, the answer is C", 2),
    ("article_A_in_sentence", "A man walks to the chair.", None),
    ("article_A_then_answer", "A man walks in. Answer: D", 3),
    ("pronoun_I", "I can see the man clearly.", None),
    ("pronoun_I_then_letter", "I would pick C.", 2),
    ("first_letter_of_word", "The correct answer is D.", 3),
    ("capital_word_only", "Definitely.", None),
    ("letter_text_mismatch_letter_wins", "C. The man opens the door", 2),
    ("none_of_the_above", "None of the above.", None),
    ("refusal", "I'm sorry, I cannot answer questions about videos.", None),
]


@pytest.mark.parametrize("response, expected", [t[1:] for t in TRAPS], ids=[t[0] for t in TRAPS])
def test_trap(response, expected):
    assert extract_choice(response, DOOR).index == expected


@pytest.mark.parametrize(
    "response, expected",
    [
        ("A man walks into the room", 0),  # the article is part of the option text
        ("A dog runs across the yard.", 1),
        ("C. A woman pours coffee", 2),
        ("A. A woman pours coffee", 0),  # letter and text disagree: the explicit letter wins
        ("A child plays", 3),
        ("A man walks into the room and a dog runs across the yard", None),
    ],
)
def test_article_options(response, expected):
    assert extract_choice(response, ARTICLE).index == expected


def test_failures_are_explicit_and_say_why():
    cases = {
        "": "empty response",
        "E": "letter E is not among the 4 options (A-D)",
        "The answer is A or B.": "hedged answer",
        "<think>maybe A": "unfinished reasoning",
        "I'm sorry, I can't see videos.": "refusal",
        "The man walks.": "no option letter or option text found",
        "A. The man opens the door\nB. The man closes the door\nC. The man sits on the chair": (
            "lists the options"
        ),
    }
    for response, error in cases.items():
        got = extract_choice(response, DOOR)
        assert got.index is None and got.letter is None and not got.ok
        assert error in got.error, (response, got)


def test_binary_questions_use_two_letters():
    assert extract_choice("B", n_options=2).index == 1
    assert extract_choice("Answer: A", n_options=2).index == 0
    assert extract_choice("C", n_options=2).index is None
    assert extract_choice("The answer is (C).", n_options=2).index is None


def test_without_options_every_letter_counts():
    assert extract_choice("Answer: K").index == 10
    assert extract_choice("(Z)").index == 25


def test_argument_errors():
    with pytest.raises(AnswerArgumentError, match="4 options given but n_options=5"):
        extract_choice("B", DOOR, n_options=5)
    with pytest.raises(AnswerArgumentError, match="1..26"):
        extract_choice("B", n_options=0)
    assert extract_choice(None, DOOR).error == "response is NoneType, not text"  # type: ignore[arg-type]
    assert extract_choice("B", DOOR).to_dict() == {"index": 1, "letter": "B", "method": "bare", "error": None}


# --- properties ---------------------------------------------------------------------------------

FORMATS = [
    "{l}",
    "({l})",
    "{l}.",
    "{l})",
    "[{l}]",
    "**{l}**",
    "Answer: {l}",
    "The answer is {l}.",
    "The correct answer is ({l}).",
    "Option {l}",
    "{l}: something",
    "{l}. something else",
    "Looking at the frames, I choose {l}.",
    "<think>{w} is tempting</think>\n{l}",
]


@settings(max_examples=200, deadline=None)
@given(n=st.integers(2, 26), data=st.data(), fmt=st.sampled_from(FORMATS))
def test_every_format_of_every_valid_letter(n, data, fmt):
    i = data.draw(st.integers(0, n - 1))
    wrong = data.draw(st.sampled_from(LETTERS))
    response = fmt.format(l=LETTERS[i], w=wrong)
    assert extract_choice(response, n_options=n).index == i
    if n < 26:
        beyond = data.draw(st.integers(n, 25))
        assert extract_choice(fmt.format(l=LETTERS[beyond], w=wrong), n_options=n).index is None


words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=8)


@settings(max_examples=150, deadline=None)
@given(
    options=st.lists(
        st.lists(words, min_size=1, max_size=4).map(" ".join), min_size=2, max_size=6, unique=True
    ),
    data=st.data(),
)
def test_exact_option_text_always_maps_to_its_index(options, data):
    i = data.draw(st.integers(0, len(options) - 1))
    assume(sum(o == options[i] for o in options) == 1)
    response = data.draw(st.sampled_from(["{t}", "{T}.", '"{t}"', "Answer: {t}"])).format(
        t=options[i], T=options[i].capitalize()
    )
    assert extract_choice(response, options).index == i


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_never_raises_on_any_text(text):
    got = extract_choice(text, DOOR)
    assert (got.index is None) == (got.letter is None)
    assert got.index is None or 0 <= got.index < 4
    got = extract_interval(text)
    assert (got.start is None) == (got.end is None)
    assert got.start is None or got.start <= got.end


# --- intervals ----------------------------------------------------------------------------------

INTERVALS = [
    ("from_to_units", "from 12.5s to 30s", 12.5, 30.0),
    ("brackets", "[12.5, 30.0]", 12.5, 30.0),
    ("parens", "(65.0, 80.5)", 65.0, 80.5),
    ("hh_mm_ss_dash", "00:01:05 - 00:01:20", 65.0, 80.0),
    ("between_seconds", "between 65 and 80 seconds", 65.0, 80.0),
    ("mm_ss_sentence", "The event happens from 1:05 to 1:20.", 65.0, 80.0),
    ("bare_range", "12.5 - 30.0", 12.5, 30.0),
    ("en_dash_unit", "12.5\u201330.0 seconds", 12.5, 30.0),
    ("json", '{"start": 12.5, "end": 30}', 12.5, 30.0),
    ("labelled", "Start time: 12.5s, End time: 30s", 12.5, 30.0),
    ("starts_ends", "The person starts at 12 seconds and ends at 18 seconds.", 12.0, 18.0),
    ("unit_inherited", "from 1.5 to 2 minutes", 90.0, 120.0),
    ("minutes_each", "from 2 min to 3 min", 120.0, 180.0),
    ("compound", "1m05s - 1m20s", 65.0, 80.0),
    ("compound_hours", "from 1h2m3s to 1h2m30s", 3723.0, 3750.0),
    ("fractional_clock", "between 00:10:05.5 and 00:10:20", 605.5, 620.0),
    ("two_values", "12.5, 30.0", 12.5, 30.0),
    ("tilde", "The relevant segment: 3.2s ~ 8.9s", 3.2, 8.9),
    ("second_prefix", "from second 12 to second 30", 12.0, 30.0),
    ("last_pair_wins", "The video is 0 - 120 s long; the event is at 40 - 50 s.", 40.0, 50.0),
    ("after_think", "<think>maybe 12 to 30</think>The answer: 40 - 50", 40.0, 50.0),
    ("zero_length", "12 - 12", 12.0, 12.0),
    ("markdown", "**Start:** 4.0 s, **End:** 9.0 s", 4.0, 9.0),
    ("finishes", "It starts at 0:04 and finishes at 0:09.", 4.0, 9.0),
    (
        "duration_then_range",
        "The video is 120 seconds long. The event occurs from 12 to 30 seconds.",
        12.0,
        30.0,
    ),
]


@pytest.mark.parametrize("response, start, end", [c[1:] for c in INTERVALS], ids=[c[0] for c in INTERVALS])
def test_interval(response, start, end):
    got = extract_interval(response)
    assert (got.start, got.end, got.error) == (pytest.approx(start), pytest.approx(end), None), got


@pytest.mark.parametrize(
    "response, error",
    [
        ("The moment occurs at 12 seconds.", "one time found"),
        ("I cannot find this event in the video.", "no time found"),
        ("12 30 45", "3 numbers"),
        ("", "empty response"),
        ("<think>it starts around 12", "unfinished reasoning"),
        ("from 20% to 40% of the video", "needs the video duration"),
    ],
)
def test_interval_failures(response, error):
    got = extract_interval(response)
    assert got.start is None and got.end is None and not got.ok
    assert error in got.error


def test_reversed_interval_is_swapped_and_flagged_or_rejected():
    got = extract_interval("from 30 to 12.5 seconds")
    assert (got.start, got.end, got.swapped, got.error) == (12.5, 30.0, True, None)
    rejected = extract_interval("from 30 to 12.5 seconds", reversed_pairs="reject")
    assert rejected.start is None and "after end" in rejected.error
    with pytest.raises(AnswerArgumentError):
        extract_interval("1 - 2", reversed_pairs="sort")


def test_percent_interval_with_duration():
    got = extract_interval("from 20% to 40% of the video", duration=300.0)
    assert (got.start, got.end) == (60.0, 120.0)


@settings(max_examples=150, deadline=None)
@given(
    a=st.integers(0, 36000 * 100),
    b=st.integers(0, 36000 * 100),
    fmt=st.sampled_from(
        [
            "from {a}s to {b}s",
            "[{a}, {b}]",
            "{a} - {b}",
            "between {a} and {b} seconds",
            "start: {a}, end: {b}",
            "{ca} - {cb}",
            "The event lasts from {ca} to {cb}.",
        ]
    ),
)
def test_interval_round_trip(a, b, fmt):
    a, b = sorted((a / 100, b / 100))

    def clock(t: float) -> str:
        h, rest = divmod(t, 3600)
        m, s = divmod(rest, 60)
        return f"{int(h):02d}:{int(m):02d}:{s:05.2f}"

    def num(t: float) -> str:
        return f"{t:.2f}".rstrip("0").rstrip(".")

    got = extract_interval(fmt.format(a=num(a), b=num(b), ca=clock(a), cb=clock(b)))
    assert got.error is None and not got.swapped
    assert got.start == pytest.approx(a, abs=1e-6) and got.end == pytest.approx(b, abs=1e-6)


# --- CLI ----------------------------------------------------------------------------------------


def _cli(monkeypatch, capsys, argv, stdin):
    monkeypatch.setattr("sys.stdin", stdin)
    code = main(argv)
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_cli_extract_one_line_per_input_in_order(monkeypatch, capsys):
    lines = [
        json.dumps({"response": "The correct answer is (B)."}),
        "this is not json",
        json.dumps({"response": "blue", "options": ["red", "blue", "green"]}),
        "",
        json.dumps(["a list"]),
        json.dumps({"options": ["x"]}),
        json.dumps({"response": 7}),
        json.dumps({"response": "B", "options": "AB"}),
        json.dumps({"response": "E"}),
        json.dumps({"response": "E", "options": DOOR + ["The man dances"]}),
        json.dumps({"response": "Answer: \u201cC\u201d", "options": None}),
    ]
    code, rows, err = _cli(
        monkeypatch, capsys, ["answers", "extract", "--options", "4"], io.StringIO("\n".join(lines) + "\n")
    )
    assert code == 0 and len(rows) == len(lines)
    assert [r["index"] for r in rows] == [1, None, 1, None, None, None, None, None, None, 4, 2]
    assert [r["letter"] for r in rows] == ["B", None, "B", None, None, None, None, None, None, "E", "C"]
    assert rows[1]["error"].startswith("line 2: not JSON")
    assert rows[3]["error"] == "line 4: empty line"
    assert "JSON object" in rows[4]["error"] and 'no "response"' in rows[5]["error"]
    assert "not a string" in rows[6]["error"] and "list of strings" in rows[7]["error"]
    assert "not among the 4 options" in rows[8]["error"]
    assert rows[2]["method"] == "option_text_exact" and rows[0]["error"] is None
    assert "11 line(s), 1 parse failure(s), 6 malformed line(s)" in err


def test_cli_bytes_stdin_with_invalid_utf8_and_bom(monkeypatch, capsys):
    raw = ("\ufeff" + json.dumps({"response": "A"}) + "\n").encode("utf-8") + b'{"response": "\xff B"}\n'
    raw += json.dumps({"response": "Answer: (b)"}).encode() + b"\r\n"
    stdin = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8")
    code, rows, _ = _cli(monkeypatch, capsys, ["answers", "extract", "--options", "2", "--quiet"], stdin)
    assert code == 0 and [r["index"] for r in rows] == [0, None, 1]
    assert rows[1]["error"].startswith("line 2: not UTF-8")


def test_cli_interval_mode(monkeypatch, capsys):
    lines = [
        json.dumps({"response": "from 12.5s to 30s"}),
        json.dumps({"response": "00:01:05 - 00:01:20"}),
        json.dumps({"response": "from 20% to 40%", "duration": 50}),
        json.dumps({"response": "somewhere in the middle"}),
        json.dumps({"response": "30 to 10"}),
        "{broken",
        json.dumps({"response": "1 - 2", "duration": "long"}),
    ]
    code, rows, _ = _cli(
        monkeypatch, capsys, ["answers", "extract", "--interval"], io.StringIO("\n".join(lines))
    )
    assert code == 0 and len(rows) == len(lines)
    assert [(r["start"], r["end"]) for r in rows] == [
        (12.5, 30.0),
        (65.0, 80.0),
        (10.0, 20.0),
        (None, None),
        (10.0, 30.0),
        (None, None),
        (None, None),
    ]
    assert rows[4]["swapped"] is True and rows[3]["error"] and "line 6" in rows[5]["error"]
    assert "duration" in rows[6]["error"]
    code, rows, _ = _cli(
        monkeypatch,
        capsys,
        ["answers", "extract", "--interval", "--reversed", "reject"],
        io.StringIO(json.dumps({"response": "30 to 10"})),
    )
    assert rows[0]["start"] is None and "after end" in rows[0]["error"]


def test_cli_matches_the_library_on_the_whole_corpus(monkeypatch, capsys):
    for n in (None, 2, 4):
        subset = [r for r in CORPUS if r.get("n_options") == n]
        stdin = io.StringIO(
            "".join(
                json.dumps({"response": r["response"], "options": r.get("options")}) + "\n" for r in subset
            )
        )
        argv = ["answers", "extract", "--quiet"] + (["--options", str(n)] if n else [])
        code, rows, _ = _cli(monkeypatch, capsys, argv, stdin)
        assert code == 0 and [r["index"] for r in rows] == [r["expected"] for r in subset]


class _Unreadable(io.StringIO):
    def __iter__(self):
        raise OSError("Input/output error")


def test_cli_unreadable_stdin_is_exit_1(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", _Unreadable())
    assert main(["answers", "extract"]) == 1
    assert "cannot read standard input" in capsys.readouterr().err


def test_cli_rejects_bad_arguments(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    with pytest.raises(SystemExit) as exc:
        main(["answers", "extract", "--options", "27"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        main(["answers", "extract", "--options", "4", "--interval"])
    assert main(["answers"]) == 2
