"""The plan of a run: (configuration, samples, timelines) -> work items, pure.

A *work item* is one (sample, condition) to show a model: the condition's FrameSet and the options
in the order shown. :func:`plan_items` builds them from what it is given and nothing else (no file,
no encoder, no model, no store): the samples of one benchmark (loaded and preflighted by the
runner), each sample's :class:`Timeline` (the candidate frames' timestamps at the run's fps and the
Eq. 1 scores of each text mode the conditions need, computed by an executor, see
:mod:`tempcore.run.executor`) and each sample's identity hash. The same plan is therefore run by every
executor (in process, or on a Ray cluster): only *where* frames are scored and questions answered
differs, never *what* is asked.

Expansion (the choices, stated once): a frameless condition (``noframe`` / ``textonly``) gives
one item per sample, also for a sample whose video is missing or failed; a framed condition gives
items only for the samples that have a timeline; ``oracle`` expands into one condition per window
(``window=i``); ``rotations`` into one condition per option rotation (outermost), each showing the
options rotated and carrying the permutation that maps the shown order back.

Early-stopped oracle (``params: {early_stop: true}``, :func:`tempcore.run.config.early_stop_mode`): its
window conditions carry ``variant=early_stop`` and :func:`plan_items` lists each (sample, rotation)'s
windows in the order they are asked (:func:`tempcore.selection.windows.window_order`: decreasing
mean frame score in the early-stop mode, ties by position). The runner does not hand them to the
executor at once: :func:`oracle_chains` groups them, and :func:`next_oracle_wave` gives, from what
is stored, the next window of every (sample, model, rotation) not yet answered correctly, one
wave after the other, so every wave reads the store and a resumed run continues where it stopped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tempcore.errors import RunError
from tempcore.records import Condition, FrameSet, Prediction, Sample
from tempcore.run.config import EARLY_STOP_VARIANT, FRAMELESS, ConditionEntry, RunConfig, early_stop_mode

__all__ = [
    "BenchmarkPlan",
    "OracleChain",
    "RunError",
    "Timeline",
    "Timelines",
    "WorkItem",
    "answer_chunks",
    "answer_units",
    "chunks_by_frames",
    "damage_of",
    "expand_condition",
    "in_shard",
    "next_oracle_wave",
    "oracle_chains",
    "plan_items",
]


@dataclass(frozen=True)
class WorkItem:
    """One (sample, condition) to show a model: the FrameSet and the options in the order shown.

    ``permutation[j]`` is the original index of the j-th option shown; ``sample_hash`` the sample's
    identity (:func:`tempcore.run.identity.sample_identity`); ``n_frames`` L, the number of decoded
    frames of the sample's video at the run's fps (``None`` without a timeline); ``damage`` what the
    decoder reported for the video (``None`` when clean)."""

    sample: Sample
    condition: Condition
    frames: FrameSet
    options: tuple[str, ...]
    permutation: tuple[int, ...]
    sample_hash: str = ""
    n_frames: int | None = None
    damage: str | None = None
    #: grounding crops (:mod:`tempcore.grounding.crops`): the spans of the video shown, in time order,
    #: on one concatenated timeline (the prompt's duration and times; answers map back); None: as is
    spans: tuple[tuple[float, float], ...] | None = None

    @property
    def key_suffix(self) -> tuple[str, str, str]:
        return (self.sample.benchmark, self.sample.sample_id, self.condition.key)

    def key(self, model: str) -> tuple[str, str, str, str]:
        """The run store's key of this item's prediction by ``model``."""
        return (self.sample.benchmark, self.sample.sample_id, model, self.condition.key)


@dataclass
class BenchmarkPlan:
    """One benchmark's samples, work items and what the preflight and the frame scoring found."""

    name: str
    samples: list[Sample]
    items: list[WorkItem]
    video_root: str | None
    #: the format (loader) that read the annotations, and the configuration entry's index
    format: str = ""
    config_index: int | None = None
    invalid: int = 0
    skipped: int = 0
    missing_videos: list[str] = field(default_factory=list)
    failed_videos: list[str] = field(default_factory=list)
    damaged_videos: list[str] = field(default_factory=list)
    samples_without_frames: int = 0
    damaged_skipped: int = 0
    not_multiple_choice: int = 0
    sample_identity: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    #: grounding samples among ``samples`` (answered with ``[start, end]``), and the retrieval
    #: baseline's predictions for them (no model is called: :mod:`tempcore.run.baseline`)
    grounding: int = 0
    baseline: list[Prediction] = field(default_factory=list)


@dataclass
class Timeline:
    """One sample's candidate frames: timestamps at the run's fps, Eq. 1 scores ``sigmoid(cos)`` per
    mode, damage, and the raw cosine per mode (``cos``; what the retrieval baseline runs on, the
    score of the paper that defines it: :mod:`tempcore.grounding.retrieval`). Both come from the same
    embeddings; the sigmoid is increasing, so everything TempCore ranks by score is the same on
    either."""

    timestamps: np.ndarray
    scores: dict[str, np.ndarray]
    damage: str | None = None
    cos: dict[str, np.ndarray] = field(default_factory=dict)

    def track(self, mode: str, score: str = "sigmoid") -> np.ndarray | None:
        """The frame scores of ``mode``: ``score="sigmoid"`` the Eq. 1 scores, ``"cosine"`` the raw
        cosine; ``None`` when the mode was not scored. A timeline that has the mode's Eq. 1 scores
        but not its cosine (built by hand) has no cosine to give: a :class:`RunError`, never the
        sigmoid in its place."""
        if score == "sigmoid":
            return self.scores.get(mode)
        if score != "cosine":
            raise RunError(f"unknown frame score {score!r} (known: cosine, sigmoid)")
        if mode in self.cos:
            return self.cos[mode]
        if mode in self.scores:
            raise RunError(f"the timeline has the Eq. 1 scores of mode {mode!r} but not their raw cosine, "
                           "which the retrieval baseline runs on")
        return None


@dataclass
class Timelines:
    """What an executor's frame scoring of one benchmark returns.

    ``by_sample``: the timeline of every sample that has all the needed modes; ``failed_videos``
    and ``damaged_videos``: distinct video paths (sorted) that failed to decode / decoded with
    damage."""

    by_sample: dict[str, Timeline]
    failed_videos: list[str] = field(default_factory=list)
    damaged_videos: list[str] = field(default_factory=list)


def in_shard(sample: Sample, shard: tuple[int, int] | None) -> bool:
    """Stable partition of samples into ``n`` shards by a hash of (benchmark, sample id)."""
    if shard is None:
        return True
    index, n = shard
    digest = hashlib.sha256(f"{sample.benchmark}\x1f{sample.sample_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n == index


def damage_of(result: Any) -> str | None:
    """What the decoder reported as damage for a scoring / probe result, ``None`` for a clean decode.

    ``damage`` (text) when the result carries it; otherwise the older flags: ``truncated`` /
    ``truncated_video`` (the file stopped early) with ``error`` when given."""
    damage = getattr(result, "damage", None)
    if damage:
        return str(damage)
    if getattr(result, "truncated", False) or getattr(result, "truncated_video", False):
        error = getattr(result, "error", None)
        return "truncated: the decoder stopped early" + (f" ({error})" if error else "")
    return None


def expand_condition(
    entry: ConditionEntry,
    base: Condition,
    sample: Sample,
    timestamps: np.ndarray | None,
    scores: Mapping[str, np.ndarray],
    timeline: Timeline | None = None,
) -> list[tuple[Condition, FrameSet]]:
    """The (condition, FrameSet) pairs one condition entry gives for one sample.

    ``scores``: the Eq. 1 scores per mode; a ``retrieval`` condition instead takes the track its
    ``score`` parameter names from ``timeline`` (:meth:`Timeline.track`: the raw cosine by default)."""
    from tempcore.selection import select

    pairs: list[tuple[Condition, FrameSet]]
    early = early_stop_mode(entry)
    params = {k: v for k, v in entry.params.items() if k != "early_stop"}
    if base.strategy in FRAMELESS:
        ts = timestamps if timestamps is not None else np.empty(0)
        chosen = select(base, ts, None, sample_id=sample.sample_id, **params)
        assert not isinstance(chosen, list)
        pairs = [(base, chosen)]
    else:
        if timestamps is None:
            raise RunError(f"sample {sample.sample_id}: condition {base.key} needs frames but has no timeline")
        s = scores.get(base.mode) if base.mode != "none" else None
        if base.strategy == "retrieval" and timeline is not None and base.mode != "none":
            from tempcore.selection.retrieval import resolve_params

            s = timeline.track(base.mode, str(resolve_params(base.variant, params)["score"]))
        # the early-stop variant only names the rows; the windows are the oracle's own
        shown = base.replace(variant=None) if early is not None else base
        got = select(shown, timestamps, s, sample_id=sample.sample_id, **params)
        if isinstance(got, list):  # oracle: one condition per window
            order: list[int] = list(range(len(got)))
            if early is not None:
                from tempcore.selection.windows import window_order

                order = window_order(got, scores.get(early))
            pairs = [(base.replace(window=i), got[i]) for i in order]
        else:
            pairs = [(base, got)]
    out = []
    for rotation in entry.rotation_list(len(sample.options)):
        for cond, fs in pairs:
            out.append((cond.replace(rotation=rotation) if rotation else cond, fs))
    return out


def _rotate(options: Sequence[str], rotation: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    from tempcore.prompts import rotate_options

    return rotate_options(options, rotation)


def plan_items(
    cfg: RunConfig,
    samples: Sequence[Sample],
    timelines: Mapping[str, Timeline],
    sample_hashes: Mapping[str, str],
) -> list[WorkItem]:
    """Every work item of ``samples`` under ``cfg.conditions``, in sample order then condition order.

    Pure: reads only its arguments. A sample without a timeline gets its frameless conditions
    only (its video is missing, failed to decode, or was skipped as damaged; the runner lists it).

    A grounding sample (:func:`tempcore.run.baseline.is_grounding`: windows, no options) is
    shown to the models under every condition but two: ``qa``-mode conditions (a grounding sample
    has no answer text to score frames with) and ``retrieval`` (the baseline answers it without a
    model: :func:`tempcore.run.baseline.baseline_predictions`). The crop conditions
    (``retrieve_ground``, ``gtcrop``: :mod:`tempcore.grounding.crops`) are shown to grounding samples
    only, their items carrying the spans shown."""
    from tempcore.grounding.crops import CROP_STRATEGIES
    from tempcore.run.baseline import RETRIEVAL_STRATEGY, is_grounding
    from tempcore.run.crops import crop_pairs

    conds = [(e, e.condition(cfg)) for e in cfg.conditions]
    items: list[WorkItem] = []
    for sample in samples:
        tl = timelines.get(sample.sample_id)
        grounding = is_grounding(sample)
        for entry, base in conds:
            if base.strategy not in FRAMELESS and tl is None:
                continue
            if grounding and (base.mode == "qa" or base.strategy == RETRIEVAL_STRATEGY):
                continue
            ts, scores = (tl.timestamps, tl.scores) if tl is not None else (None, {})
            if base.strategy in CROP_STRATEGIES:  # grounding crops: frames from spans of the video
                if grounding and tl is not None:
                    items.extend(WorkItem(sample, cond, fs, (), (), sample_hash=sample_hashes[sample.sample_id],
                                          n_frames=int(len(tl.timestamps)), damage=tl.damage, spans=spans)
                                 for cond, fs, spans in crop_pairs(entry, base, sample, tl.timestamps, tl.scores))
                continue
            for cond, fs in expand_condition(entry, base, sample, ts, scores, tl):
                rotated, perm = _rotate(sample.options, cond.rotation)
                items.append(WorkItem(
                    sample, cond, fs, rotated, perm, sample_hash=sample_hashes[sample.sample_id],
                    n_frames=None if tl is None else int(len(tl.timestamps)),
                    damage=None if tl is None else tl.damage,
                ))
    return items


def chunks_by_frames(items: Iterable[WorkItem], budget: int) -> Iterable[list[WorkItem]]:
    """Consecutive runs of ``items`` whose union of frame indices stays within ``budget`` frames.

    A single item showing more frames than the budget is a chunk of its own."""
    chunk: list[WorkItem] = []
    frames: set[int] = set()
    for it in items:
        new = frames | set(it.frames.indices)
        if chunk and len(new) > budget:
            yield chunk
            chunk, new = [], set(it.frames.indices)
        chunk.append(it)
        frames = new
    if chunk:
        yield chunk


def answer_units(items: Sequence[WorkItem], max_frames_in_memory: int) -> list[list[WorkItem]]:
    """The units an executor answers: items grouped by sample (first appearance order), each
    group split by :func:`chunks_by_frames`. One unit's frames are decoded in one pass and held
    together; no unit spans two samples."""
    by_sample: dict[tuple[str, str], list[WorkItem]] = {}
    for it in items:
        by_sample.setdefault((it.sample.benchmark, it.sample.sample_id), []).append(it)
    return [chunk for group in by_sample.values() for chunk in chunks_by_frames(group, max_frames_in_memory)]


CHUNK_BATCHES = 8
"""A batched model's job is answered in chunks of whole units of at least this many times
``request_batch`` requests (:func:`answer_chunks`)."""


def answer_chunks(units: Sequence[Sequence[WorkItem]], request_batch: int) -> list[list[Sequence[WorkItem]]]:
    """``units`` (:func:`answer_units`) cut into chunks: consecutive units, a chunk closed once it
    holds at least :data:`CHUNK_BATCHES` x ``request_batch`` items (the last one may hold fewer).

    A batched model's requests are put into batches within a chunk, never across two, whoever
    answers it: so the local executor can hand a job's chunks to several threads
    (``parallel_models``) and every batch, and so every answer, is the same as when one thread
    answers the job (a model's scores depend, at the last bits, on what shares their batch). The
    cost is at most one partial batch per chunk."""
    size = CHUNK_BATCHES * max(1, request_batch)
    chunks: list[list[Sequence[WorkItem]]] = []
    current: list[Sequence[WorkItem]] = []
    n = 0
    for unit in units:
        current.append(unit)
        n += len(unit)
        if n >= size:
            chunks.append(current)
            current, n = [], 0
    if current:
        chunks.append(current)
    return chunks


# --- the early-stopped oracle -----------------------------------------------------------------


@dataclass(frozen=True)
class OracleChain:
    """The windows of one early-stopped oracle (sample, condition without window, rotation), in the
    order they are asked (:func:`tempcore.selection.windows.window_order`)."""

    items: tuple[WorkItem, ...]

    @property
    def family(self) -> tuple[str, str, str]:
        """(benchmark, sample_id, condition key without the window): what the chain stands for."""
        first = self.items[0]
        return (first.sample.benchmark, first.sample.sample_id, first.condition.replace(window=None).key)


def is_early_stopped(item: WorkItem) -> bool:
    """Whether ``item`` is a window of an early-stopped oracle (asked in waves, not all at once)."""
    c = item.condition
    return c.strategy == "oracle" and c.window is not None and c.variant == EARLY_STOP_VARIANT


def oracle_chains(items: Sequence[WorkItem]) -> list[OracleChain]:
    """The early-stopped oracle windows among ``items``, one chain per (benchmark, sample, condition
    without window: k, fps, seed, rotation ...), each keeping the order :func:`plan_items` gave them
    (the asking order), chains in order of first appearance."""
    chains: dict[tuple[str, str, str], list[WorkItem]] = {}
    for it in items:
        if is_early_stopped(it):
            key = (it.sample.benchmark, it.sample.sample_id, it.condition.replace(window=None).key)
            chains.setdefault(key, []).append(it)
    return [OracleChain(tuple(v)) for v in chains.values()]


def next_oracle_wave(
    chains: Sequence[OracleChain],
    model: str,
    stored: Mapping[tuple[str, str, str, str], bool],
    asked: Iterable[tuple[str, str, str, str]] = (),
) -> list[WorkItem]:
    """The next window to ask ``model`` of every chain it has not answered correctly yet.

    ``stored``: the store's ``correct`` of the keys of ``model`` it holds (rows that count: a row
    ``--recompute`` is about to replace does not until it is replaced). ``asked``: keys asked in
    this run that have no stored row (their call failed: recorded in the failures table), passed
    over so the chain goes on; a rerun asks them again, as it does every missing key.

    A chain is done when one of its windows is stored correct, or when none is left to ask (every
    window stored wrong or failed); otherwise its next window is the first, in asking order, that
    is neither stored nor asked. Pure: the same store gives the same wave, so a run killed at any
    point and rerun ends with the same rows as one that was not (the stored windows of a chain are
    always a prefix of its order, up to the first correct one, less failed calls)."""
    passed = set(asked)
    wave: list[WorkItem] = []
    for chain in chains:
        keys = [it.key(model) for it in chain.items]
        if any(stored.get(k) for k in keys):
            continue
        for it, k in zip(chain.items, keys):
            if k not in stored and k not in passed:
                wave.append(it)
                break
    return wave
