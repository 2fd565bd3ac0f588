"""Answer-prior audits (TVBench, "Lost in Time", paper 001, §3): what the annotations alone give
away, and how far a model's chosen answers follow the label prior instead of the video.

**Label prior, from the annotations alone** (:func:`label_priors`), per benchmark and task:

* ``answers_by_text`` / ``answers_by_letter``: how often each option text / letter position is the
  correct answer (letters follow the benchmark's option order, as the paper's JSON order does).
* ``majority_baseline``: the accuracy of always answering the task's most frequent correct option
  text (MVBench's Action Count: '3' is right for 90 of 200 questions, 45%), against ``chance``, the
  mean of ``1 / n_options`` over the task's questions.
* ``letter_chi2_p``: the p-value of a chi-square goodness-of-fit test of the correct letters
  against uniform positions. With a varying number of options the expected count of letter j is
  ``sum over questions with more than j options of 1 / n_options`` (our reading; the paper gives no
  test); letters no question has are left out; ``None`` with fewer than two letters.
* ``flags``: the text-bias sources the paper names, for which it gives no detector or threshold —
  the detectors here are ours, each a parameter-free rule over lower-cased word tokens (``[a-z0-9']+``,
  a short stop-word list removed, a crude suffix stem ``-ing / -ed / -es / -s`` on words longer than
  four letters):

  - ``uncertain_option``: an option such as "not sure", "none of the above", "cannot be determined"
    (:data:`UNCERTAIN_PHRASES`, matched as whole phrases);
  - ``option_repeats_question``: an option with at least two content words, at least
    ``repeat_share`` (0.8) of them in the question;
  - ``subject_only_in_correct``: a content word of the question that occurs in the correct option
    and in no other option.

  Each flag gives ``count`` (questions flagged) and ``examples`` (the first ``max_examples`` ids).

**Prediction prior** (:func:`prediction_priors`), per model x condition x benchmark x task, over a
tidy predictions table joined to the samples: the distribution of the chosen letters and option
texts beside the label distribution of the same questions (parse failures are left out of both
and counted in ``unparsed``), their total-variation distances ``tv_letter`` / ``tv_text``
(``1/2 sum |p - q|``), the model's most chosen text and how often, the model's accuracy and the
accuracy of "always the most frequent answer of this task" over the same questions
(``majority_baseline``). Rows used: ``rotation`` 0 (or none), no oracle window.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.diagnostics.table import DiagnosticsError, EncodedPredictions
from tempcore.records import LETTERS, Sample

if TYPE_CHECKING:
    import pyarrow as pa

UNCERTAIN_PHRASES = (
    "not sure", "unsure", "none of the above", "none of above", "none of these", "none of them",
    "none of the options", "none of the answers", "cannot be determined", "can not be determined",
    "cannot determine", "cannot tell", "can't tell", "cannot say", "can't say", "cannot be known",
    "don't know", "do not know", "unknown", "unclear", "not clear", "not mentioned", "not shown",
    "not visible", "impossible to tell", "impossible to determine", "impossible to say", "no answer",
    "not enough information", "insufficient information",
)
"""Option phrases of the "I cannot tell" kind (TVBench names "not sure" and "none of the above")."""

STOP_WORDS = frozenset(
    "a an the of in on at to for from by with and or but is are was were be been being do does did done "
    "this that these those it its it's there here what which who whom whose when where why how than then "
    "as into onto out up down over under about after before during while video clip scene shown show "
    "person people someone one they he she his her their them we you your i my me not no yes can could "
    "would should will shall may might must has have had having first last".split()
)
FLAGS = ("uncertain_option", "option_repeats_question", "subject_only_in_correct")
_TOKEN = re.compile(r"[a-z0-9']+")


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of ``text``."""
    return _TOKEN.findall(str(text).lower())


def _stem(word: str) -> str:
    if len(word) > 4:
        for suffix in ("ing", "ed", "es", "s"):
            if word.endswith(suffix):
                return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    """The stemmed content words of ``text`` (stop words removed)."""
    return {_stem(w) for w in tokens(text) if w not in STOP_WORDS and len(w) > 1}


def is_uncertain(option: str) -> bool:
    """Whether ``option`` contains one of :data:`UNCERTAIN_PHRASES` as whole words."""
    padded = " " + " ".join(tokens(option)) + " "
    return any(" " + " ".join(tokens(p)) + " " in padded for p in UNCERTAIN_PHRASES)


def repeats_question(option: str, question: str, repeat_share: float = 0.8) -> bool:
    """Whether ``option`` has >= 2 content words and at least ``repeat_share`` of them are the question's."""
    words = content_words(option)
    if len(words) < 2:
        return False
    return len(words & content_words(question)) >= repeat_share * len(words) - 1e-12


def subject_only_in_correct(sample: Sample) -> bool:
    """Whether a content word of the question is in the correct option and in no other option."""
    if sample.answer is None or len(sample.options) < 2:
        return False
    q = content_words(sample.question)
    right = content_words(sample.options[sample.answer])
    others: set[str] = set()
    for j, o in enumerate(sample.options):
        if j != sample.answer:
            others |= content_words(o)
    return bool((q & right) - others)


def sample_flags(sample: Sample, repeat_share: float = 0.8) -> dict[str, bool]:
    """Every flag of :data:`FLAGS` for one question."""
    return {
        "uncertain_option": any(is_uncertain(o) for o in sample.options),
        "option_repeats_question": any(repeats_question(o, sample.question, repeat_share) for o in sample.options),
        "subject_only_in_correct": subject_only_in_correct(sample),
    }


def task_of(sample: Sample, field: str = "task") -> str:
    """A sample's task: its metadata ``field`` (MVBench / TVBench ``task``), else ``"all"``."""
    value = sample.metadata.get(field)
    return "all" if value is None else str(value)


def letter_chi2(letters: Sequence[int], n_options: Sequence[int]) -> float | None:
    """p-value of the chi-square test of correct letter positions against uniform positions
    (expected count of letter j: sum of ``1 / n_options`` over questions with more than j options)."""
    positions = np.asarray(letters, dtype=np.int64)
    n_opt = np.asarray(n_options, dtype=np.int64)
    if positions.size == 0:
        return None
    width = int(n_opt.max())
    observed = np.bincount(positions, minlength=width).astype(np.float64)
    expected = np.zeros(width)
    for n in np.unique(n_opt):
        expected[: int(n)] += (n_opt == n).sum() / float(n)
    used = expected > 0
    if used.sum() < 2:
        return None
    from scipy import stats

    stat = float((((observed - expected) ** 2)[used] / expected[used]).sum())
    return float(stats.chi2.sf(stat, int(used.sum()) - 1))


def _task_prior(samples: list[Sample], *, repeat_share: float, max_examples: int) -> dict[str, Any]:
    mc = [s for s in samples if s.answer is not None and s.options]
    answers = [int(s.answer) for s in mc if s.answer is not None]  # every one (mc keeps answered samples)
    n = len(mc)
    by_text = Counter(s.options[a] for s, a in zip(mc, answers))
    by_letter = Counter(LETTERS[a] for a in answers)
    flags: dict[str, dict[str, Any]] = {f: {"count": 0, "examples": []} for f in FLAGS}
    for s in mc:
        for name, hit in sample_flags(s, repeat_share).items():
            if hit:
                flags[name]["count"] += 1
                if len(flags[name]["examples"]) < max_examples:
                    flags[name]["examples"].append(s.sample_id)
    return {
        "n": n,
        "answers_by_text": dict(by_text.most_common()),
        "answers_by_letter": {k: by_letter[k] for k in sorted(by_letter)},
        "majority_baseline": by_text.most_common(1)[0][1] / n if n else None,
        "chance": float(np.mean([1.0 / len(s.options) for s in mc])) if n else None,
        "letter_chi2_p": letter_chi2(answers, [len(s.options) for s in mc]) if n else None,
        "flags": flags,
    }


def label_priors(
    samples: Iterable[Sample],
    *,
    field: str = "task",
    repeat_share: float = 0.8,
    max_examples: int = 5,
) -> dict[str, dict[str, Any]]:
    """``{benchmark: {"tasks": {task: {...}}}}`` of the module docstring, from annotations alone.
    Samples without options or answer (grounding, open-ended) are left out."""
    groups: dict[str, dict[str, list[Sample]]] = {}
    for s in samples:
        groups.setdefault(s.benchmark, {}).setdefault(task_of(s, field), []).append(s)
    return {
        bench: {"tasks": {task: _task_prior(ss, repeat_share=repeat_share, max_examples=max_examples)
                          for task, ss in sorted(tasks.items())}}
        for bench, tasks in sorted(groups.items())
    }


def total_variation(p: dict[Any, int], q: dict[Any, int]) -> float | None:
    """``1/2 sum |p - q|`` of two count dictionaries, each normalised to a distribution."""
    np_, nq = sum(p.values()), sum(q.values())
    if not np_ or not nq:
        return None
    keys = set(p) | set(q)
    return 0.5 * sum(abs(p.get(k, 0) / np_ - q.get(k, 0) / nq) for k in keys)


def _counts(codes: np.ndarray, names: Sequence[Any]) -> dict[Any, int]:
    c = np.bincount(codes, minlength=len(names)) if codes.size else np.zeros(len(names), dtype=np.int64)
    order = np.lexsort((np.arange(len(names)), -c))
    return {names[i]: int(c[i]) for i in order if c[i] > 0}


def prediction_priors(
    table: pa.Table | EncodedPredictions,
    samples: Iterable[Sample],
    *,
    field: str = "task",
    conditions: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Per model x condition (strategy) x benchmark x task: the chosen-answer distributions against
    the label prior (see the module docstring). Every predicted sample must be in ``samples``."""
    from tempcore.diagnostics.kernel import dictionary_codes

    enc = table if isinstance(table, EncodedPredictions) else EncodedPredictions.from_table(table)
    t = enc.table
    lookup = {(s.benchmark, s.sample_id): s for s in samples if s.options and s.answer is not None}
    found = [lookup.get(k) for k in zip(enc.sample_benchmark, enc.sample_id)]
    missing = [k for k, s in zip(zip(enc.sample_benchmark, enc.sample_id), found) if s is None]
    if missing:
        shown = ", ".join(f"{sid!r} of {b!r}" for b, sid in missing[:5])
        raise DiagnosticsError(f"{len(missing)} predicted sample(s) are not in the annotations, e.g. {shown}")
    if "answer" not in t.column_names:
        raise DiagnosticsError("the prediction-prior audit needs the predictions' 'answer' column (chosen option)")
    texts: dict[str, int] = {}
    width = max((len(s.options) for s in found if s is not None), default=1)
    option_code = np.full((len(found), width), -1, dtype=np.int64)
    target = np.zeros(len(found), dtype=np.int64)
    tasks: dict[str, int] = {}
    task_code = np.zeros(len(found), dtype=np.int64)
    for i, s in enumerate(found):
        assert s is not None and s.answer is not None  # lookup keeps only samples with an answer
        for j, o in enumerate(s.options):
            option_code[i, j] = texts.setdefault(o, len(texts))
        target[i] = int(s.answer) if s.answer is not None else -1  # found keeps answered samples only
        task_code[i] = tasks.setdefault(task_of(s, field), len(tasks))
    text_names = list(texts)
    task_names = list(tasks)
    keep = enc.rotations() == 0
    keep &= np.isnan(enc.numeric("window"))
    s_codes, s_names = dictionary_codes(t.column("strategy"))
    if conditions is not None:
        wanted = np.array([v in set(conditions) for v in s_names] + [False])
        keep &= wanted[s_codes]
    rows = np.flatnonzero(keep)
    sc = enc.sample_code[rows]
    answer = enc.numeric("answer")[rows]
    parsed = ~np.isnan(answer)
    ans = np.where(parsed, np.nan_to_num(answer), 0).astype(np.int64)
    in_range = parsed & (ans >= 0) & (ans < width)
    chosen_text = np.where(in_range, option_code[sc, np.clip(ans, 0, width - 1)], -1)
    parsed &= chosen_text >= 0
    correct = enc.numeric("correct")[rows]
    label_text = option_code[sc, target[sc]]
    bench_names = sorted(set(enc.sample_benchmark))
    bench_index = {b: i for i, b in enumerate(bench_names)}
    bench_code = np.array([bench_index[b] for b in enc.sample_benchmark], dtype=np.int64)[sc]
    n_st, n_b, n_t = len(s_names), len(bench_names), len(task_names)
    gkey = ((enc.model_code[rows].astype(np.int64) * n_st + s_codes[rows]) * n_b + bench_code) * n_t + task_code[sc]
    # the groups present, numbered in key order (np.unique's numbering) by a bitmap over the small
    # key range instead of a sort of every row; then the rows of each group by a stable sort of
    # narrow group numbers (a radix sort for 16-bit keys)
    span = len(enc.models) * n_st * n_b * n_t
    if 0 < span <= max(4 * gkey.size, 1 << 16):
        seen = np.zeros(span, dtype=bool)
        seen[gkey] = True
        uniq = np.flatnonzero(seen)
        gid = (np.cumsum(seen) - 1)[gkey]
    else:
        uniq, gid = np.unique(gkey, return_inverse=True)
    order = np.argsort(gid.astype(np.int16) if uniq.size < 2**15 else gid, kind="stable")
    bounds = np.searchsorted(gid[order], np.arange(uniq.size + 1))
    letters = list(LETTERS[:width])
    out: list[dict[str, Any]] = []
    for g, u in enumerate(uniq.tolist()):
        idx = order[bounds[g]:bounds[g + 1]]
        task, rest = u % n_t, u // n_t
        bench, rest = rest % n_b, rest // n_b
        cond, m = rest % n_st, rest // n_st
        ok = idx[parsed[idx]]
        chosen_l = _counts(ans[ok], letters)
        label_l = _counts(target[sc[ok]], letters)
        chosen_t = _counts(chosen_text[ok], text_names)
        label_t = _counts(label_text[ok], text_names)
        majority = int(np.bincount(label_text[idx]).max()) / idx.size
        top = next(iter(chosen_t.items()), (None, 0))
        out.append({
            "model": enc.models[m], "benchmark": bench_names[bench], "task": task_names[task],
            "condition": str(s_names[cond]), "n": int(idx.size), "unparsed": int(idx.size - ok.size),
            "accuracy": float(correct[idx].mean()),
            "chosen_by_letter": chosen_l, "label_by_letter": label_l, "tv_letter": total_variation(chosen_l, label_l),
            "chosen_by_text": chosen_t, "label_by_text": label_t, "tv_text": total_variation(chosen_t, label_t),
            "most_chosen": top[0], "most_chosen_count": int(top[1]),
            "majority_baseline": majority,
        })
    out.sort(key=lambda r: (r["model"], r["condition"], r["benchmark"], r["task"]))
    return out


__all__ = [
    "FLAGS",
    "STOP_WORDS",
    "UNCERTAIN_PHRASES",
    "content_words",
    "is_uncertain",
    "label_priors",
    "letter_chi2",
    "prediction_priors",
    "repeats_question",
    "sample_flags",
    "subject_only_in_correct",
    "task_of",
    "tokens",
    "total_variation",
]
