"""Binarise a multiple-choice benchmark (TemporalBench, Cai et al., 2024, §3.3): Samples in, binary Samples out.

A sample with n options, correct option C and negatives N_1..N_{n-1} (the other options, in the
sample's order) becomes n-1 binary samples {C, N_i}:

* id ``{sample_id}#b{i}``, i = 0..n-2 numbering the negatives in their original order;
* the same video, segment, media and question text; options ``(C, N_i)`` or ``(N_i, C)``;
* metadata: the original's metadata plus ``binary_group`` (the original sample id: the group of
  multiple binary accuracy, see :mod:`tempcore.diagnostics.mba`), ``binary_index`` (i),
  ``binary_negative`` (N_i's index among the original options), ``binary_source_answer`` (C's
  original index), ``binary_source_options`` (n) and ``binary_correct_position`` (0 or 1).

Position balance: within each benchmark the binary questions are ordered by a seeded hash of
(seed, benchmark, binary id) — SHA-256, so the order depends neither on the order of the samples
nor on Python's hash seed — and the first ceil(T/2) of the T questions show the correct option
first, the rest second. So exactly half (up to one) of a benchmark's binary questions have the
correct answer in each position, and the same seed always gives the same assignment.

A sample that is already binary (two options) gives one binary sample (its position rebalanced).
A sample with fewer than two options or no answer cannot be binarised: :class:`BinarizeError`
(``skip_invalid=True`` passes it through unchanged instead, e.g. a grounding sample).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from tempcore.errors import TempcoreError
from tempcore.records import Sample

SUFFIX = "#b"


class BinarizeError(TempcoreError):
    """A sample cannot be turned into binary questions."""


def binary_id(sample_id: str, i: int) -> str:
    """The id of the i-th binary question of ``sample_id``."""
    return f"{sample_id}{SUFFIX}{i}"


def _rank_key(seed: int, benchmark: str, sid: str) -> bytes:
    return hashlib.sha256(f"{seed}\x00{benchmark}\x00{sid}".encode()).digest()


def binarize(samples: Iterable[Sample], *, seed: int = 0, skip_invalid: bool = False) -> list[Sample]:
    """The binary samples of ``samples`` (module doc), in the input order (each sample's questions together)."""
    pending: list[tuple[Sample, int, int] | Sample] = []  # (source, i, negative) or a passed-through sample
    ids_by_bench: dict[str, list[str]] = {}
    for s in samples:
        if len(s.options) < 2 or s.answer is None:
            if skip_invalid:
                pending.append(s)
                continue
            why = "no answer" if s.answer is None else f"{len(s.options)} option(s)"
            raise BinarizeError(f"sample {s.sample_id!r} of {s.benchmark!r} cannot be binarised: {why}")
        negatives = [j for j in range(len(s.options)) if j != s.answer]
        for i, j in enumerate(negatives):
            pending.append((s, i, j))
            ids_by_bench.setdefault(s.benchmark, []).append(binary_id(s.sample_id, i))
    first: set[tuple[str, str]] = set()
    for bench, ids in ids_by_bench.items():
        if len(set(ids)) != len(ids):
            dup = next(x for x in ids if ids.count(x) > 1)
            raise BinarizeError(f"benchmark {bench!r}: binary id {dup!r} occurs twice (repeated sample ids?)")
        ranked = sorted(ids, key=lambda x: _rank_key(seed, bench, x))
        first.update((bench, x) for x in ranked[: (len(ranked) + 1) // 2])
    out = []
    for item in pending:
        if isinstance(item, Sample):
            out.append(item)
            continue
        s, i, j = item
        bid = binary_id(s.sample_id, i)
        assert s.answer is not None
        correct_first = (s.benchmark, bid) in first
        options = (s.options[s.answer], s.options[j]) if correct_first else (s.options[j], s.options[s.answer])
        meta = dict(s.metadata)
        meta.update(
            binary_group=s.sample_id,
            binary_index=i,
            binary_negative=j,
            binary_source_answer=s.answer,
            binary_source_options=len(s.options),
            binary_correct_position=0 if correct_first else 1,
        )
        out.append(Sample(
            benchmark=s.benchmark, sample_id=bid, video=s.video, question=s.question, options=options,
            answer=0 if correct_first else 1, start=s.start, end=s.end, media=s.media, metadata=meta,
        ))
    return out


__all__ = ["SUFFIX", "BinarizeError", "binarize", "binary_id"]
