"""Query profile of a benchmark: how diverse and how template-bound its questions are.

ExtremeWhenBench (App. D) reports TTR, MATTR (W = 50), distinct-n, unique 4-token stems and the
top-5 stem coverage, and names descriptor density without defining it. The choices made here:

* **Tokens**: the question is NFKC-normalised and lower-cased (``lowercase=True``), tokens are
  runs of letters / digits with inner apostrophes (``[^\\W_]+(?:'[^\\W_]+)*``); punctuation is
  dropped. The paper states neither tokenisation nor case.
* **Question length**: tokens per question (mean and median).
* **TTR** = distinct tokens / tokens over the benchmark's concatenated token stream (questions
  in order). **MATTR** (Covington & McFall 2010) = mean TTR of every window of ``window`` (50)
  consecutive tokens of that stream; a stream shorter than the window gets its TTR.
  **MATTR per query** = the mean over questions of each question's MATTR (questions are
  usually shorter than 50 tokens, so this is their mean TTR).
* **distinct-n** (Li et al. 2016) = distinct n-grams / total tokens (their definition divides
  by the number of tokens generated; ``distinct_denominator="ngrams"`` divides by the number
  of n-grams instead, the other common reading); n-grams never cross questions.
* **Stems**: the first four tokens of a question (the whole question when shorter);
  ``unique_stems`` counts distinct stems; ``top5_stem_coverage`` the share of questions whose
  stem is one of the five most frequent (ties broken by first appearance).
* **WH-word entropy**: each question's class is its first token among what, when, where, which,
  who, whom, whose, why, how (``none`` without one); Shannon entropy in bits over the classes.
* **Descriptor density**: the share of a question's tokens that are visual descriptors of a
  fixed lexicon (:data:`DESCRIPTORS`: colours, sizes and shapes, materials, textures and
  lighting, spatial relations, counts and ordinals, digits), averaged over questions.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

WH_WORDS = ("what", "when", "where", "which", "who", "whom", "whose", "why", "how")
DESCRIPTORS = frozenset(
    # colours
    "red green blue yellow orange purple pink brown black white grey gray golden silver beige dark light "
    "bright pale colorful colourful "
    # sizes and shapes
    "big small large tiny huge little tall short long wide narrow thick thin round square circular "
    "rectangular triangular flat "
    # materials, textures, lighting
    "wooden metal metallic plastic glass paper stone leather wet dry shiny striped dotted checkered "
    "transparent dim illuminated "
    # spatial relations
    "left right top bottom front behind above below under over beside near next inside outside "
    "center centre middle background foreground upper lower "
    # counts and ordinals
    "one two three four five six seven eight nine ten first second third fourth fifth last final "
    "single pair several".split()
)
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def tokenize(text: str, *, lowercase: bool = True) -> list[str]:
    """The tokens of one question (see the module doc)."""
    t = unicodedata.normalize("NFKC", text)
    return _TOKEN.findall(t.lower() if lowercase else t)


def mattr(tokens: Any, window: int = 50) -> float:
    """Moving-average type-token ratio of a token sequence (TTR when shorter than ``window``).

    Vectorised: with ``prev[j]`` the previous position of token ``j``'s type, position ``j``
    adds a new type to every window starting in ``(prev[j], j]`` (and covering ``j``)."""
    if window < 1:
        raise ValueError(f"window must be >= 1, not {window}")
    toks = list(tokens)
    if not toks:
        return float("nan")
    codes = np.unique(np.array(toks, dtype=str), return_inverse=True)[1].reshape(-1)
    n = codes.size
    if n <= window:
        return float(np.unique(codes).size / n)
    order = np.lexsort((np.arange(n), codes))
    prev = np.full(n, -1, dtype=np.int64)
    same = codes[order][1:] == codes[order][:-1]
    prev[order[1:][same]] = order[:-1][same]
    j = np.arange(n)
    lo = np.maximum(prev + 1, j - window + 1)
    lo = np.maximum(lo, 0)
    hi = np.minimum(j, n - window)  # window starts i in [lo, hi]
    ok = lo <= hi
    diff = np.zeros(n - window + 2, dtype=np.int64)
    np.add.at(diff, lo[ok], 1)
    np.add.at(diff, hi[ok] + 1, -1)
    types = np.cumsum(diff)[: n - window + 1]
    return float(types.mean() / window)


def _entropy(counts: Iterable[int]) -> float:
    c = np.asarray(list(counts), dtype=np.float64)
    c = c[c > 0]
    if c.size == 0:
        return float("nan")
    p = c / c.sum()
    return float(-(p * np.log2(p)).sum() + 0.0)


def query_profile(
    questions: Iterable[str],
    *,
    window: int = 50,
    lowercase: bool = True,
    max_n: int = 4,
    stem_tokens: int = 4,
    distinct_denominator: str = "tokens",
) -> dict[str, Any]:
    """The profile of a list of questions (the module doc defines every figure).

    Returns ``{"n_questions", "tokens", "length_mean", "length_median", "ttr", "mattr",
    "mattr_per_query", "distinct": {"1": x, ..., "4": x}, "unique_stems", "top5_stems",
    "top5_stem_coverage", "wh_entropy", "wh_counts", "descriptor_density"}``.
    """
    if distinct_denominator not in ("tokens", "ngrams"):
        raise ValueError(f"distinct_denominator must be 'tokens' or 'ngrams', not {distinct_denominator!r}")
    toks = [tokenize(q, lowercase=lowercase) for q in questions]
    n_q = len(toks)
    stream = [t for q in toks for t in q]
    lengths = np.array([len(q) for q in toks], dtype=np.float64)
    distinct = {}
    for n in range(1, max_n + 1):
        grams = [tuple(q[i : i + n]) for q in toks for i in range(len(q) - n + 1)]
        denom = len(stream) if distinct_denominator == "tokens" else len(grams)
        distinct[str(n)] = float(len(set(grams)) / denom) if denom else float("nan")
    stems: Counter[tuple[str, ...]] = Counter()
    first_seen: dict[tuple[str, ...], int] = {}
    for i, q in enumerate(toks):
        s = tuple(q[:stem_tokens])
        stems[s] += 1
        first_seen.setdefault(s, i)
    top = sorted(stems, key=lambda s: (-stems[s], first_seen[s]))[:5]
    wh: Counter[str] = Counter()
    for q in toks:
        wh[next((t for t in q if t in WH_WORDS), "none")] += 1
    density = [sum(t in DESCRIPTORS or t.isdigit() for t in q) / len(q) for q in toks if q]
    per_query = [mattr(q, window) for q in toks if q]
    return {
        "n_questions": n_q,
        "tokens": len(stream),
        "length_mean": float(lengths.mean()) if n_q else float("nan"),
        "length_median": float(np.median(lengths)) if n_q else float("nan"),
        "ttr": float(len(set(stream)) / len(stream)) if stream else float("nan"),
        "mattr": mattr(stream, window),
        "mattr_per_query": float(np.mean(per_query)) if per_query else float("nan"),
        "distinct": distinct,
        "unique_stems": len(stems),
        "top5_stems": [" ".join(s) for s in top],
        "top5_stem_coverage": float(sum(stems[s] for s in top) / n_q) if n_q else float("nan"),
        "wh_entropy": _entropy(wh.values()),
        "wh_counts": dict(sorted(wh.items())),
        "descriptor_density": float(np.mean(density)) if density else float("nan"),
    }


__all__ = ["DESCRIPTORS", "WH_WORDS", "mattr", "query_profile", "tokenize"]
