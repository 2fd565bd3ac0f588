"""The centralized-option audit (TemporalBench, Cai et al., 2024, §3.3): can a benchmark be solved by
the geometry of its answer options alone?

When every negative is a small edit of the correct option C, C sits at the centre of the options and
a model can pick it without the video. The paper shows the effect but gives no centrality formula;
this one is ours:

* **Tokenisation**: ``re.findall(r"\\w+", text.casefold())`` — maximal runs of Unicode word
  characters (letters, digits, underscore) after case folding; punctuation and whitespace only
  separate tokens. "The man cuts it twice." -> ``["the", "man", "cuts", "it", "twice"]``.
* **Distance** between two options: the Levenshtein distance between their token sequences
  (insertion, deletion and substitution of one token cost 1), divided by the length of the longer
  sequence; 0 for two empty options. It lies in [0, 1].
* **Centrality** of an option: its mean distance to the other options of the question (lower =
  more central). The **centroid** is the option of smallest mean distance. When two or more options
  share the smallest mean distance (every two-option question does) the question has no centroid:
  it is counted in ``ties`` and left out of the rates and the test.
* **Per benchmark and per task**: ``n`` (questions with a centroid and a known answer),
  ``centroid_correct`` (how often the centroid is the correct option), ``centroid_correct_rate``,
  ``chance_rate`` = mean of 1/n_options over those questions (what a random option would give) and
  ``p_value`` of the exact test of "the centroid is correct with probability 1/n_options": a
  binomial test (``scipy.stats.binomtest``) when all questions have the same option count, else
  the exact Poisson-binomial test (the sum of independent binomials, one per option count);
  two-sided by default (``alternative="greater"`` asks only "more often than chance"). The two-sided
  p-value sums the probabilities of the outcomes no more likely than the observed one, as
  ``binomtest`` does.
* The task of a sample: ``task_field`` if given, else the first metadata field of
  ``task``, ``task_type``, ``question_type``, ``category``, ``type`` that the benchmark's samples
  carry; ``by_task`` is empty when there is none.

**Per model** (from a tidy predictions table, typically a text-only or no-frame condition): per
benchmark x model x condition, over the predictions of questions with a centroid:
``centroid_pick_rate`` = answers that are the centroid / predictions with a parsed answer
(``n_parsed``; the ``answer`` column, in the original option order), against ``chance_pick_rate`` =
mean 1/n_options over those predictions, with the same exact test (``p_value``); and the model's
accuracy (the ``correct`` column, a parse failure is wrong) on the questions whose centroid is
correct (``accuracy_centroid_correct``, ``n_centroid_correct``) and on those whose centroid is not
(``accuracy_centroid_wrong``, ``n_centroid_wrong``). A model exploiting option geometry picks the
centroid well above chance and is far more accurate when the centroid is correct.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tempcore.errors import TempcoreError
from tempcore.records import Sample

if TYPE_CHECKING:
    import pyarrow as pa

TASK_FIELDS = ("task", "task_type", "question_type", "category", "type")
ALTERNATIVES = ("two-sided", "greater", "less")
_TOKEN = re.compile(r"\w+")


class OptionAuditError(TempcoreError):
    """The option audit cannot be computed as asked."""


def tokenize(text: str) -> list[str]:
    """The tokens of an option (module doc): word-character runs of the case-folded text."""
    return _TOKEN.findall(text.casefold())


def token_edit_distance(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Levenshtein distance between two token sequences (unit costs)."""
    # trim the common prefix and suffix: they never change the distance
    i = 0
    while i < len(a) and i < len(b) and a[i] == b[i]:
        i += 1
    a, b = a[i:], b[i:]
    j = 0
    while j < len(a) and j < len(b) and a[-1 - j] == b[-1 - j]:
        j += 1
    if j:
        a, b = a[:-j], b[:-j]
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    prev = list(range(len(b) + 1))
    for x in a:
        cur = [prev[0] + 1]
        for k, y in enumerate(b):
            cur.append(min(prev[k + 1] + 1, cur[k] + 1, prev[k] + (x != y)))
        prev = cur
    return prev[-1]


def normalized_distance(a: str, b: str) -> float:
    """Token edit distance divided by the longer token count (0 for two empty texts)."""
    ta, tb = tokenize(a), tokenize(b)
    longest = max(len(ta), len(tb))
    return token_edit_distance(ta, tb) / longest if longest else 0.0


def distance_matrix(options: Sequence[str]) -> np.ndarray:
    """Pairwise normalised token distances of a question's options (symmetric, zero diagonal)."""
    tokens = [tokenize(o) for o in options]
    n = len(options)
    d = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            longest = max(len(tokens[i]), len(tokens[j]))
            d[i, j] = d[j, i] = token_edit_distance(tokens[i], tokens[j]) / longest if longest else 0.0
    return d


def centrality(options: Sequence[str]) -> np.ndarray:
    """Mean distance of each option to the other options (``nan`` with fewer than two options)."""
    n = len(options)
    if n < 2:
        return np.full(n, np.nan)
    out: np.ndarray = distance_matrix(options).sum(axis=1) / (n - 1)
    return out


def centroid(options: Sequence[str], rtol: float = 1e-12) -> int | None:
    """Index of the most central option, or ``None`` when the smallest mean distance is shared."""
    c = centrality(options)
    if c.size < 2:
        return None
    best = float(c.min())
    winners = np.flatnonzero(c <= best + rtol * max(1.0, abs(best)))
    return int(winners[0]) if winners.size == 1 else None


# --- the exact test ------------------------------------------------------------------------------


def _pmf_binomial(n: int, p: float) -> np.ndarray:
    from scipy import stats

    pmf: np.ndarray = stats.binom.pmf(np.arange(n + 1), n, p)
    return pmf


def chance_test(successes: int, option_counts: Sequence[int] | np.ndarray, alternative: str = "two-sided") -> float:
    """p-value of ``successes`` when trial i succeeds with probability ``1 / option_counts[i]`` (module doc)."""
    if alternative not in ALTERNATIVES:
        raise OptionAuditError(f"unknown alternative {alternative!r}; choose one of {', '.join(ALTERNATIVES)}")
    counts = np.asarray(option_counts, dtype=np.int64)
    n = int(counts.size)
    if n == 0:
        return math.nan
    values, sizes = np.unique(counts, return_counts=True)
    if values.size == 1:
        from scipy import stats

        return float(stats.binomtest(int(successes), n, 1.0 / float(values[0]), alternative=alternative).pvalue)
    from scipy import signal

    pmf = np.ones(1)
    for v, m in zip(values, sizes):
        pmf = signal.fftconvolve(pmf, _pmf_binomial(int(m), 1.0 / float(v)))
    pmf = np.clip(pmf[: n + 1], 0.0, None)
    pmf /= pmf.sum()
    k = int(successes)
    if alternative == "greater":
        return float(min(1.0, pmf[k:].sum()))
    if alternative == "less":
        return float(min(1.0, pmf[: k + 1].sum()))
    d = pmf[k]
    return float(min(1.0, pmf[pmf <= d * (1 + 1e-7)].sum()))


# --- the audit -----------------------------------------------------------------------------------


@dataclass
class OptionGeometry:
    """Per-question centroids: parallel arrays over the samples given."""

    benchmark: list[str]
    sample_id: list[str]
    n_options: np.ndarray  # (n,)
    answer: np.ndarray  # (n,) -1 when unknown
    centroid: np.ndarray  # (n,) -1 when the question has no centroid
    task: list[Any]
    task_field: str | None
    centrality: list[list[float]] = field(default_factory=list)


def option_geometry(samples: Iterable[Sample], task_field: str | None = None) -> OptionGeometry:
    """Centroid of every multiple-choice sample (samples without options are skipped)."""
    items = [s for s in samples if len(s.options) > 0]
    if task_field is None:
        task_field = next((f for f in TASK_FIELDS if any(f in s.metadata for s in items)), None)
    cents = [centrality(s.options) for s in items]
    cids = []
    for s in items:
        c = centroid(s.options)
        cids.append(-1 if c is None else c)
    return OptionGeometry(
        benchmark=[s.benchmark for s in items],
        sample_id=[s.sample_id for s in items],
        n_options=np.array([len(s.options) for s in items], dtype=np.int64),
        answer=np.array([-1 if s.answer is None else s.answer for s in items], dtype=np.int64),
        centroid=np.array(cids, dtype=np.int64),
        task=[None if task_field is None else s.metadata.get(task_field) for s in items],
        task_field=task_field,
        centrality=[[float(x) for x in c] for c in cents],
    )


def _summary(n_opt: np.ndarray, hit: np.ndarray, ties: int, alternative: str) -> dict[str, Any]:
    n = int(n_opt.size)
    k = int(hit.sum())
    return {
        "n": n,
        "centroid_correct": k,
        "centroid_correct_rate": k / n if n else None,
        "chance_rate": float(np.mean(1.0 / n_opt)) if n else None,
        "p_value": chance_test(k, n_opt, alternative) if n else None,
        "ties": ties,
    }


def audit_options(
    samples: Iterable[Sample] | OptionGeometry, *, task_field: str | None = None, alternative: str = "two-sided"
) -> dict[str, dict[str, Any]]:
    """``{benchmark: {n, centroid_correct, centroid_correct_rate, chance_rate, p_value, ties, questions,
    task_field, by_task: {task: {...}}}}`` from annotations alone (module doc)."""
    geo = samples if isinstance(samples, OptionGeometry) else option_geometry(samples, task_field)
    bench = np.array(geo.benchmark, dtype=object)
    task = np.array([None if t is None else str(t) for t in geo.task], dtype=object)
    out: dict[str, dict[str, Any]] = {}
    for b in sorted(set(geo.benchmark)):
        in_b = bench == b
        usable = in_b & (geo.centroid >= 0) & (geo.answer >= 0)
        ties = int((in_b & (geo.centroid < 0)).sum())
        row = _summary(geo.n_options[usable], geo.centroid[usable] == geo.answer[usable], ties, alternative)
        row["questions"] = int(in_b.sum())
        row["task_field"] = geo.task_field
        by_task = {}
        if geo.task_field is not None:
            for t in sorted({x for x in task[in_b] if x is not None}):
                sel = usable & (task == t)
                t_ties = int((in_b & (task == t) & (geo.centroid < 0)).sum())
                by_task[t] = _summary(geo.n_options[sel], geo.centroid[sel] == geo.answer[sel], t_ties, alternative)
        row["by_task"] = by_task
        out[b] = row
    return out


def centroid_picks(
    table: pa.Table,
    samples: Iterable[Sample] | OptionGeometry,
    *,
    benchmark: str | None = None,
    models: Sequence[str] | None = None,
    strategies: Sequence[str] | None = None,
    alternative: str = "two-sided",
) -> list[dict[str, Any]]:
    """Per benchmark x model x condition: how often the model picks the centroid, and its accuracy when
    the centroid is / is not correct (module doc). ``table``: the tidy predictions table (needs
    ``answer`` and ``correct``); samples are matched on ``sample_id`` when ``benchmark`` is given, else on
    (benchmark, sample_id); predictions of samples the annotations lack are an error."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from tempcore.diagnostics.accuracy import _sort_key, condition_columns, group_codes

    geo = samples if isinstance(samples, OptionGeometry) else option_geometry(samples)
    for col in ("benchmark", "sample_id", "model", "strategy", "mode", "correct", "answer"):
        if col not in table.column_names:
            raise OptionAuditError(f"the predictions lack column {col!r} (the per-model audit needs parsed answers)")
    if benchmark is not None:
        table = table.filter(pc.equal(table.column("benchmark"), benchmark))
    if models is not None:
        table = table.filter(pc.is_in(table.column("model"), value_set=pa.array(list(models), type=pa.string())))
    if strategies is not None:
        table = table.filter(pc.is_in(table.column("strategy"), value_set=pa.array(list(strategies), type=pa.string())))
    if "window" in table.column_names:
        table = table.filter(pc.is_null(table.column("window")))
    if table.num_rows == 0:
        return []
    # per-sample geometry, joined on the distinct (benchmark, sample_id) of the table
    index: dict[Any, int]
    if benchmark is not None:
        index = {sid: i for i, sid in enumerate(geo.sample_id)}
        key_cols = ["sample_id"]
    else:
        index = {(b, sid): i for i, (b, sid) in enumerate(zip(geo.benchmark, geo.sample_id))}
        key_cols = ["benchmark", "sample_id"]
    gid, n_keys = group_codes(table, key_cols)
    first = np.full(n_keys, -1, dtype=np.int64)
    first[gid[::-1]] = np.arange(table.num_rows - 1, -1, -1)
    heads = table.select(key_cols).take(pa.array(first)).to_pylist()
    keys = [h["sample_id"] if benchmark is not None else (h["benchmark"], h["sample_id"]) for h in heads]
    pos = np.array([index.get(k, -1) for k in keys], dtype=np.int64)
    if (pos < 0).any():
        bad = [k for k, p in zip(keys, pos) if p < 0][:5]
        raise OptionAuditError(f"{int((pos < 0).sum())} predicted sample(s) are not in the annotations, e.g. {bad}")
    row_pos = pos[gid]
    cent = geo.centroid[row_pos]
    ans_true = geo.answer[row_pos]
    n_opt = geo.n_options[row_pos]
    answer = pc.fill_null(table.column("answer").cast(pa.int64()), -1).to_numpy(zero_copy_only=False)
    correct = table.column("correct").to_numpy(zero_copy_only=False).astype(np.int64)
    cond = condition_columns(table)
    keys_cols = ["benchmark", "model", *cond]
    cid, n_cond = group_codes(table, keys_cols)
    cfirst = np.full(n_cond, -1, dtype=np.int64)
    cfirst[cid[::-1]] = np.arange(table.num_rows - 1, -1, -1)
    cheads = table.select(keys_cols).take(pa.array(cfirst)).to_pylist()
    out = []
    for c in range(n_cond):
        sel = (cid == c) & (cent >= 0)
        parsed = sel & (answer >= 0)
        picks = int((answer[parsed] == cent[parsed]).sum())
        n_parsed = int(parsed.sum())
        right_c = sel & (cent == ans_true)
        wrong_c = sel & (cent != ans_true) & (ans_true >= 0)
        row = dict(cheads[c])
        row.update(
            n=int(sel.sum()),
            n_parsed=n_parsed,
            centroid_picks=picks,
            centroid_pick_rate=picks / n_parsed if n_parsed else None,
            chance_pick_rate=float(np.mean(1.0 / n_opt[parsed])) if n_parsed else None,
            p_value=chance_test(picks, n_opt[parsed], alternative) if n_parsed else None,
            n_centroid_correct=int(right_c.sum()),
            accuracy_centroid_correct=float(correct[right_c].mean()) if right_c.any() else None,
            n_centroid_wrong=int(wrong_c.sum()),
            accuracy_centroid_wrong=float(correct[wrong_c].mean()) if wrong_c.any() else None,
        )
        out.append(row)
    out.sort(key=_sort_key(keys_cols))
    return out


__all__ = [
    "ALTERNATIVES",
    "TASK_FIELDS",
    "OptionAuditError",
    "OptionGeometry",
    "audit_options",
    "centrality",
    "centroid",
    "centroid_picks",
    "chance_test",
    "distance_matrix",
    "normalized_distance",
    "option_geometry",
    "token_edit_distance",
    "tokenize",
]
