"""``tempcore run``: plan benchmarks x models x conditions, skip what is stored, answer the rest.

The pipeline (every arrow persisted or cached):

1. load each benchmark (:mod:`tempcore.benchmarks`) and preflight its videos: a sample whose
   video is missing is listed, and still answered under frameless conditions (no-frame);
2. score every frame of every video once per encoder (:mod:`tempcore.scoring`, embedding cache),
   in the text modes the conditions need; a video that fails to decode is listed and skipped;
3. select each condition's FrameSet (:mod:`tempcore.selection`; oracle conditions expand into
   one condition per window, ``window=i``; ``rotations`` into one per option rotation);
4. for each model (loaded once): ask the run store which keys are missing, decode the frames of
   those requests (one streaming pass per sample and chunk of conditions), answer in batches,
   extract the answer (:mod:`tempcore.answers`), map rotations back, and commit each batch in
   one transaction (:mod:`tempcore.store`). Failed calls go to the failures table, never into
   predictions. A rerun makes no call for a stored key whose fingerprints match.

Before the first heavy step the whole configuration is checked (:func:`tempcore.config.check_config`):
files, strategies, templates, models; every problem is reported at once. ``dry_run`` stops after
that and prints the plan from the annotations alone (no encoder, no decoding, no store written).

Identity (:mod:`tempcore.identity`): every prediction carries ``sample_hash``,
``model_fingerprint`` and (score-based conditions) ``encoder_fingerprint``. Before any model is
loaded, the run compares them with the stored rows of its keys; keys whose fingerprints differ are
never "already stored": the run stops with a message that says what changed and for how many rows,
unless ``recompute`` is set, which replaces exactly those rows.

Choices: no-frame requests show ``k`` uniform grey (128) images of ``noframe_size`` pixels square;
frames are shown at their decoded resolution (adapters resize: see ``max_image_side``); the prompt
template is the model's ``prompt_template`` unless the run sets ``prompt``; its ``{timestamps}``
slot is filled with the presentation times of the frames shown (nothing for no-frame requests),
as the world's answerers were trained with. ``n_frames`` of a prediction is L, the number of
decoded frames of its sample's video (or segment) at the run's fps (``None`` when the video was
not decoded: a missing video, or a run with no framed condition). A sample whose video decoded with
damage (the decoder's ``damage`` report) is answered and flagged (``video_damage``) or, with
``damaged_videos: skip``, treated as a failed video.

Counts in the summary: ``missing_videos`` and ``failed_videos`` count distinct *videos* (a video
several questions share counts once); ``samples_without_frames`` counts the *samples* whose framed
conditions were not answered for either reason. ``summary.json`` lists every run that wrote to the
folder (``runs``) and the store's totals, so runs that share an out folder are all described.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tempcore.config import FRAMELESS, ConditionEntry, RunConfig
from tempcore.errors import TempcoreError
from tempcore.records import Condition, Failure, FrameSet, Prediction, Sample

GREY = 128


class RunError(TempcoreError):
    """The run cannot start or go on (names what is wrong)."""


@dataclass(frozen=True)
class WorkItem:
    """One (sample, condition) to show a model: the FrameSet and the options in the order shown."""

    sample: Sample
    condition: Condition
    frames: FrameSet
    options: tuple[str, ...]
    permutation: tuple[int, ...]
    sample_hash: str = ""
    n_frames: int | None = None
    damage: str | None = None

    @property
    def key_suffix(self) -> tuple[str, str, str]:
        return (self.sample.benchmark, self.sample.sample_id, self.condition.key)


@dataclass
class BenchmarkPlan:
    name: str
    samples: list[Sample]
    items: list[WorkItem]
    video_root: str | None
    invalid: int = 0
    skipped: int = 0
    missing_videos: list[str] = field(default_factory=list)
    failed_videos: list[str] = field(default_factory=list)
    damaged_videos: list[str] = field(default_factory=list)
    samples_without_frames: int = 0
    damaged_skipped: int = 0
    not_multiple_choice: int = 0
    sample_identity: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)


@dataclass
class ModelSummary:
    model: str
    planned: int = 0
    stored_before: int = 0
    done: int = 0
    discarded: int = 0
    replaced: int = 0
    failed: int = 0
    parse_failures: int = 0
    correct: int = 0
    seconds: float = 0.0


@dataclass
class RunSummary:
    out: str
    store: str
    run_id: str | None
    benchmarks: dict[str, dict[str, Any]]
    models: list[ModelSummary]
    dry_run: bool = False
    predictions_file: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "out": self.out,
            "store": self.store,
            "run_id": self.run_id,
            "dry_run": self.dry_run,
            "benchmarks": self.benchmarks,
            "models": [vars(m) for m in self.models],
            "predictions_file": self.predictions_file,
        }


# --- planning ---------------------------------------------------------------------------------


def _expand(
    entry: ConditionEntry,
    base: Condition,
    sample: Sample,
    timestamps: np.ndarray | None,
    scores: dict[str, np.ndarray],
) -> list[tuple[Condition, FrameSet]]:
    """The (condition, FrameSet) pairs one condition entry gives for one sample."""
    from tempcore.selection import select

    if base.strategy in FRAMELESS:
        ts = timestamps if timestamps is not None else np.empty(0)
        pairs = [(base, select(base, ts, None, sample_id=sample.sample_id, **entry.params))]
    else:
        assert timestamps is not None
        s = scores.get(base.mode) if base.mode != "none" else None
        chosen = select(base, timestamps, s, sample_id=sample.sample_id, **entry.params)
        if isinstance(chosen, list):  # oracle: one condition per window
            pairs = [(base.replace(window=i), fs) for i, fs in enumerate(chosen)]
        else:
            pairs = [(base, chosen)]
    out = []
    for rotation in entry.rotation_list(len(sample.options)):
        for cond, fs in pairs:
            out.append((cond.replace(rotation=rotation) if rotation else cond, fs))
    return out


def in_shard(sample: Sample, shard: tuple[int, int] | None) -> bool:
    """Stable partition of samples into ``n`` shards by a hash of (benchmark, sample id)."""
    if shard is None:
        return True
    index, n = shard
    digest = hashlib.sha256(f"{sample.benchmark}\x1f{sample.sample_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n == index


def plan_benchmark(
    cfg: RunConfig,
    bench_index: int,
    *,
    encoder: Any | None,
    cache: Any | None,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
    log: Callable[[str], None] = print,
    progress: bool = True,
    video_hash: Callable[[Path], str] | None = None,
) -> BenchmarkPlan:
    """Load, preflight, score and select: every WorkItem of one benchmark (no model is called).

    ``video_hash`` (default: :meth:`EmbeddingCache.content_hash` of ``cache``, else
    :func:`tempcore.encoders.cache.content_hash`) gives each present video's identity for the
    samples' fingerprints (:func:`tempcore.identity.sample_identity`).
    """
    from tempcore.benchmarks import resolve_video
    from tempcore.identity import fingerprint, sample_identity
    from tempcore.visual.run import IDENTITY_KEY, is_visual_sample, visual_identity

    plan, mc, video_root = _load_plan(cfg, bench_index, limit=limit, shard=shard, log=log)
    missing = set(plan.missing_videos)
    has_video = [s for s in mc if str(resolve_video(s, video_root)) not in missing]
    visual = {s.sample_id for s in mc if is_visual_sample(s)}  # answered under visual_options only
    for m in plan.missing_videos:
        log(f"  missing video: {m}")

    if video_hash is None:
        if cache is not None:
            video_hash = cache.content_hash
        else:
            from tempcore.encoders.cache import content_hash as video_hash
    video_ids: dict[str, str] = {}
    for s in has_video:
        path = str(resolve_video(s, video_root))
        if path not in video_ids:
            try:
                video_ids[path] = video_hash(Path(path))
            except OSError as exc:  # vanished or unreadable since the preflight
                video_ids[path] = f"unreadable: {exc}"
    identity: dict[str, str] = {}
    for s in mc:
        data = sample_identity(s, video_ids.get(str(resolve_video(s, video_root))))
        if s.sample_id in visual:
            data[IDENTITY_KEY] = visual_identity(s, video_root)
        digest = fingerprint(data)
        identity[s.sample_id] = digest
        plan.sample_identity[s.sample_id] = (digest, data)

    conds = [(e, e.condition(cfg)) for e in cfg.conditions]
    framed = [(e, c) for e, c in conds if c.strategy not in FRAMELESS]
    modes = sorted({c.mode for _, c in framed if c.mode != "none"})
    timeline: dict[str, _Timeline] = {}
    ordinary = [s for s in has_video if s.sample_id not in visual]
    if framed and ordinary:
        timeline = _timelines(ordinary, modes, cfg, encoder, cache, video_root, plan, log, progress)
    if cfg.damaged_videos == "skip":
        for sid in [sid for sid, tl in timeline.items() if tl.damage is not None]:
            del timeline[sid]
            plan.damaged_skipped += 1
    if framed:
        plan.samples_without_frames = sum(s.sample_id not in timeline and s.sample_id not in visual for s in mc)
    plan.items.extend(_visual_items([s for s in has_video if s.sample_id in visual], identity))

    for sample in mc:
        if sample.sample_id in visual:
            continue
        tl = timeline.get(sample.sample_id)
        for entry_c, base in conds:
            if base.strategy not in FRAMELESS and tl is None:
                continue  # no frames for this sample (missing / failed / skipped video): listed above
            ts, scores = (tl.timestamps, tl.scores) if tl is not None else (None, {})
            for cond, fs in _expand(entry_c, base, sample, ts, scores):
                rotated, perm = _rotate(sample.options, cond.rotation)
                plan.items.append(WorkItem(
                    sample, cond, fs, rotated, perm, sample_hash=identity[sample.sample_id],
                    n_frames=None if tl is None else int(len(tl.timestamps)),
                    damage=None if tl is None else tl.damage,
                ))
    return plan


def _visual_items(samples: list[Sample], identity: dict[str, str]) -> list[WorkItem]:
    """One work item per visual-option sample (:mod:`tempcore.visual.run`); its frames are filled in
    when the request is built."""
    from tempcore.visual.run import visual_condition

    items = []
    for s in samples:
        try:
            cond = visual_condition(s)
        except ValueError as exc:
            raise RunError(str(exc)) from None
        items.append(WorkItem(s, cond, FrameSet((), (), requested=cond.k or 0), tuple(s.options),
                              tuple(range(len(s.options))), sample_hash=identity[s.sample_id]))
    return items


def _load_plan(
    cfg: RunConfig, bench_index: int, *, limit: int | None, shard: tuple[int, int] | None,
    log: Callable[[str], None],
) -> tuple[BenchmarkPlan, list[Sample], Any]:
    """Load one benchmark's samples and preflight their videos (existence only: nothing is decoded)."""
    from tempcore.benchmarks import load_benchmark, preflight, resolve_video

    entry = cfg.benchmarks[bench_index]
    result = load_benchmark(
        entry.name, entry.annotations, video_root=entry.video_root, skip_invalid=entry.skip_invalid,
        **entry.options,
    )
    for bad in result.invalid:
        log(f"  invalid row skipped: {bad}")
    samples = list(result.samples)
    n = limit if limit is not None else entry.limit
    if n is not None:
        samples = samples[:n]
    if entry.binary:
        from tempcore.benchmarks.binary import binarize

        samples = binarize(samples, seed=cfg.seed, skip_invalid=True)
    samples = [s for s in samples if in_shard(s, shard)]
    video_root = entry.video_root if entry.video_root is not None else getattr(result, "video_root", None)
    mc = [s for s in samples if s.options and s.answer is not None]
    plan = BenchmarkPlan(
        name=samples[0].benchmark if samples else entry.name, samples=mc, items=[],
        video_root=None if video_root is None else str(video_root),
        invalid=len(result.invalid), skipped=len(result.skipped), not_multiple_choice=len(samples) - len(mc),
    )
    if plan.not_multiple_choice:
        log(f"  {plan.not_multiple_choice} sample(s) without options (grounding / open-ended) are not "
            f"answered by `tempcore run`")
    missing = {str(m.path) for m in preflight(mc, video_root)} if mc else set()
    plan.missing_videos = sorted({str(resolve_video(s, video_root)) for s in mc} & missing)
    return plan, mc, video_root


def _rotate(options: Sequence[str], rotation: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    from tempcore.prompts import rotate_options

    return rotate_options(options, rotation)


@dataclass
class _Timeline:
    """One sample's candidate frames: timestamps at the run's fps, Eq. 1 scores per mode, damage."""

    timestamps: np.ndarray
    scores: dict[str, np.ndarray]
    damage: str | None = None


def _timelines(
    samples: list[Sample],
    modes: list[str],
    cfg: RunConfig,
    encoder: Any | None,
    cache: Any | None,
    video_root: Any,
    plan: BenchmarkPlan,
    log: Callable[[str], None],
    progress: bool,
) -> dict[str, _Timeline]:
    """Per sample: frame timestamps at the run's fps, the Eq. 1 scores of each needed mode, and the
    damage the decoder reported (``damage`` of the scoring / probe result, ``None`` when clean).

    A video that fails is listed once in ``plan.failed_videos`` (distinct videos); a damaged one in
    ``plan.damaged_videos``."""
    out: dict[str, _Timeline] = {}
    failed: dict[str, None] = {}
    damaged: dict[str, None] = {}
    bar = _bar(len(samples), f"{plan.name}: frames", progress)
    if modes:
        from tempcore.scoring import FrameScores, score_samples

        assert encoder is not None
        for r in score_samples(samples, encoder, modes, fps=cfg.fps, cache=cache, video_root=video_root,
                               on_sample=lambda _s: bar.update(1)):
            if isinstance(r, FrameScores):
                tl = out.setdefault(r.sample_id, _Timeline(np.asarray(r.timestamps), {}))
                tl.scores[r.mode] = np.asarray(r.s)
                damage = _damage_of(r)
                if damage:
                    if tl.damage is None:
                        log(f"  damaged video (sample {r.sample_id}): {damage}")
                    tl.damage = str(damage)
                    damaged[str(getattr(r, "video", "") or r.sample_id)] = None
            else:
                failed[str(getattr(r, "video", r))] = None
                log(f"  cannot score: {r}")
    else:
        from tempcore.benchmarks import resolve_video
        from tempcore.video import VideoError, probe

        for s in samples:
            path = resolve_video(s, video_root)
            try:
                info = probe(path, cfg.fps, start=s.start, end=s.end, media=s.media)
                damage = _damage_of(info)
                out[s.sample_id] = _Timeline(np.asarray(info.timestamps, dtype=np.float64), {},
                                             None if not damage else str(damage))
                if damage:
                    damaged[str(path)] = None
                    log(f"  damaged video (sample {s.sample_id}): {damage}")
            except VideoError as exc:
                failed[str(path)] = None
                log(f"  cannot decode: sample {s.sample_id}: {exc}")
            bar.update(1)
    _close_bar(bar)
    plan.failed_videos = sorted(failed)
    plan.damaged_videos = sorted(damaged)
    # A sample whose scores failed for one mode but not another keeps only complete entries.
    return {sid: v for sid, v in out.items() if set(v.scores) >= set(modes)}


def _damage_of(result: Any) -> str | None:
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


def _bar(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, file=sys.stderr, leave=False, dynamic_ncols=True)


def _close_bar(bar: Any) -> None:
    """Show the final count before closing: tqdm redraws at most every ``mininterval`` seconds, so
    without this the last state shown stops short of the total."""
    bar.refresh()
    bar.close()


# --- answering --------------------------------------------------------------------------------


def _load_frames(items: list[WorkItem], video_root: str | None) -> dict[int, np.ndarray]:
    """Decode the union of the frames these items (all of one sample) show, in one pass."""
    from tempcore.benchmarks import resolve_video
    from tempcore.video import read_frames

    wanted = sorted({i for it in items for i in it.frames.indices})
    if not wanted:
        return {}
    s = items[0].sample
    batch = read_frames(resolve_video(s, video_root), wanted, items[0].condition.fps, start=s.start, end=s.end,
                        media=s.media)
    return {int(i): batch.frames[j] for j, i in enumerate(wanted)}


def _request(item: WorkItem, frames: dict[int, np.ndarray], template: str, noframe_size: int) -> Any:
    from tempcore.models import ModelRequest
    from tempcore.prompts import render_prompt

    if item.frames.grey:
        grey = np.full((noframe_size, noframe_size, 3), GREY, dtype=np.uint8)
        images: tuple[np.ndarray, ...] = tuple(grey for _ in range(item.frames.requested))
        timestamps = None
    else:
        images = tuple(frames[i] for i in item.frames.indices)
        timestamps = item.frames.timestamps
    prompt = render_prompt(item.sample.question, item.options, template, timestamps=timestamps)
    return ModelRequest(images=images, prompt=prompt, options=item.options, timestamps=timestamps,
                        key="|".join(item.key_suffix))


@dataclass(frozen=True)
class Identity:
    """The fingerprints a model's predictions of one run carry (see :mod:`tempcore.identity`)."""

    model_fingerprint: str = ""
    encoder_fingerprint: str | None = None

    def encoder_for(self, condition: Condition) -> str | None:
        """The encoder fingerprint for a condition: only score-based conditions depend on the encoder."""
        return self.encoder_fingerprint if _score_based(condition) else None


def _score_based(condition: Condition) -> bool:
    return condition.mode != "none"


def to_prediction(
    item: WorkItem, model: str, request: Any, response: Any, method: str, identity: Identity | None = None,
) -> Prediction | Failure:
    """A model's response as a Prediction (answer mapped back to the original option order) or a Failure."""
    from tempcore.answers import extract_choice
    from tempcore.prompts import prompt_hash

    identity = identity or Identity()
    s = item.sample
    if not response.ok:
        return Failure(s.benchmark, s.sample_id, model, item.condition.key, str(response.error),
                       attempts=max(int(response.attempts), 1))
    got = extract_choice(response.text, item.options)
    answer = None if got.index is None else item.permutation[got.index]
    probs = response.option_probs
    original_probs = None
    if probs is not None and len(probs) == len(item.options):
        reordered = [0.0] * len(probs)
        for j, p in enumerate(probs):
            reordered[item.permutation[j]] = float(p)
        original_probs = tuple(reordered)
    return Prediction(
        benchmark=s.benchmark, sample_id=s.sample_id, model=model, condition=item.condition.key,
        response=response.text, answer=answer, correct=int(answer is not None and answer == s.answer),
        frames=item.frames, prompt_hash=prompt_hash(request.prompt), latency_s=float(response.latency_s),
        answer_method=method, option_probs=original_probs,
        parse_error=got.error if answer is None else None, target=s.answer,
        sample_hash=item.sample_hash, model_fingerprint=identity.model_fingerprint,
        encoder_fingerprint=identity.encoder_for(item.condition), n_frames=item.n_frames,
        video_damage=item.damage,
    )


def answer_items(
    model: Any,
    items: list[WorkItem],
    store: Any,
    run_id: str,
    *,
    video_root_of: dict[str, str | None],
    method: str = "generate",
    template: str = "default",
    noframe_size: int = 384,
    max_frames_in_memory: int = 512,
    request_batch: int = 32,
    progress: bool = True,
    summary: ModelSummary | None = None,
    identity: Identity | None = None,
    replace: set[tuple[str, str, str, str]] | frozenset[tuple[str, str, str, str]] = frozenset(),
) -> ModelSummary:
    """Answer ``items`` with ``model`` and commit each batch to ``store`` (one transaction per batch).

    Keys in ``replace`` (stored rows whose fingerprints changed, ``--recompute``) are overwritten;
    every other key keeps the first write (a key another writer stored meanwhile counts as
    ``discarded``, not ``done``). No-frame requests need no decoding, so a video that fails to decode
    fails only the requests that show its frames.
    """
    from tempcore.visual.answering import STRATEGY as VISUAL_STRATEGY
    from tempcore.visual.run import visual_request

    summary = summary or ModelSummary(model.name)
    by_sample: dict[tuple[str, str], list[WorkItem]] = defaultdict(list)
    for it in items:
        by_sample[(it.sample.benchmark, it.sample.sample_id)].append(it)
    bar = _bar(len(items), model.name, progress)
    per_condition: Counter[str] = Counter()
    pending: list[tuple[WorkItem, Any]] = []
    started = time.perf_counter()

    def flush() -> None:
        if not pending:
            return
        responses = model.answer([r for _, r in pending], method=method)
        if len(responses) != len(pending):
            raise RunError(f"model {model.name} returned {len(responses)} responses for {len(pending)} requests")
        fresh, again, fails = [], [], []
        for (it, req), resp in zip(pending, responses):
            out = to_prediction(it, model.name, req, resp, method, identity)
            if isinstance(out, Failure):
                fails.append(out)
            else:
                (again if out.key in replace else fresh).append(out)
        written = store.put(fresh, run_id)
        replaced = store.put(again, run_id, overwrite=True) if again else 0
        if fails:
            store.put_failures(fails, run_id)
        summary.done += written + replaced
        summary.replaced += replaced
        summary.discarded += len(fresh) - written
        summary.failed += len(fails)
        summary.parse_failures += sum(p.answer is None for p in (*fresh, *again))
        summary.correct += sum(p.correct for p in (*fresh, *again))
        for it, _ in pending:
            per_condition[it.condition.strategy] += 1
        bar.update(len(pending))
        bar.set_postfix_str(" ".join(f"{k}:{v}" for k, v in sorted(per_condition.items())), refresh=False)
        pending.clear()

    for (bench, _sid), group in by_sample.items():
        for chunk in _chunks_by_frames(group, max_frames_in_memory):
            framed = [it for it in chunk if not it.frames.grey and it.frames.indices]
            frames: dict[int, np.ndarray] = {}
            if framed:
                try:
                    frames = _load_frames(framed, video_root_of.get(bench))
                except TempcoreError as exc:
                    fails = [Failure(it.sample.benchmark, it.sample.sample_id, model.name, it.condition.key,
                                     f"frames: {exc}") for it in framed]
                    store.put_failures(fails, run_id)
                    summary.failed += len(fails)
                    bar.update(len(fails))
                    failed_ids = {id(it) for it in framed}
                    chunk = [it for it in chunk if id(it) not in failed_ids]
            for it in chunk:
                if it.condition.strategy == VISUAL_STRATEGY:
                    try:
                        req, it = visual_request(it, video_root_of.get(bench))
                    except (TempcoreError, OSError, KeyError, ValueError) as exc:
                        store.put_failures([Failure(it.sample.benchmark, it.sample.sample_id, model.name,
                                                    it.condition.key, f"visual options: {exc}")], run_id)
                        summary.failed += 1
                        bar.update(1)
                        continue
                    pending.append((it, req))
                else:
                    pending.append((it, _request(it, frames, template, noframe_size)))
                if len(pending) >= request_batch:
                    flush()
            flush()  # frames of this chunk are released before the next one is decoded
    flush()
    _close_bar(bar)
    summary.seconds += time.perf_counter() - started
    return summary


def _chunks_by_frames(items: list[WorkItem], budget: int) -> Iterable[list[WorkItem]]:
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


# --- the whole run ----------------------------------------------------------------------------


def run(
    cfg: RunConfig,
    *,
    dry_run: bool = False,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
    model_factory: Callable[[dict[str, Any]], Any] | None = None,
    encoder: Any | None = None,
    recompute: bool = False,
) -> RunSummary:
    """Plan and (unless ``dry_run``) execute ``cfg``; returns the summary. See the module docstring.

    ``model_factory`` (default :func:`tempcore.models.load_model`) and ``encoder`` (default
    :func:`tempcore.encoders.load_encoder` of ``cfg.encoder``) let a caller pass loaded objects.
    ``shard=(i, n)`` keeps the samples of shard i of n (a stable hash partition), so n processes or
    machines can split one run; on one machine they may share the store, across machines each
    writes its own and ``tempcore import table`` merges them. ``recompute`` replaces the stored
    predictions whose fingerprints differ from this run's (without it the run stops, naming them).
    """
    from tempcore.config import check_config

    if shard is not None and not (shard[1] > 0 and 0 <= shard[0] < shard[1]):
        raise RunError(f"shard must be I/N with 0 <= I < N, not {shard[0]}/{shard[1]}")
    specs = check_config(cfg)  # every problem at once, before anything heavy
    out = Path(cfg.out)
    store_path = out / "store.sqlite"
    names = [spec.display_name for spec, _ in specs]
    if len(set(names)) != len(names):
        raise RunError(f"two models share a name: {names}; give each a distinct 'name'")
    if dry_run:
        return _dry_run(cfg, specs, out, store_path, limit=limit, shard=shard, log=log)

    from tempcore.encoders.cache import EmbeddingCache, default_cache_dir
    from tempcore.store import RunStore

    if cfg.needs_encoder and encoder is None:
        from tempcore.encoders import load_encoder
        from tempcore.encoders.hf import progress_bars

        with progress_bars(progress):  # --no-progress also hides transformers' "Loading weights"
            encoder = load_encoder(cfg.encoder, **cfg.encoder_options)
    # The cache holds the embeddings and memoises the videos' content hashes (sample fingerprints).
    cache = EmbeddingCache(cfg.cache or default_cache_dir())

    plans = []
    for i, b in enumerate(cfg.benchmarks):
        log(f"benchmark {b.name}: {b.annotations}")
        plans.append(plan_benchmark(cfg, i, encoder=encoder if cfg.needs_encoder else None, cache=cache,
                                    limit=limit, shard=shard, log=log, progress=progress))
    items = [it for p in plans for it in p.items]
    bench_info = {p.name: _bench_info(p) for p in plans}
    identities = [_model_identity(cfg, spec, method, encoder) for spec, method in specs]
    out.mkdir(parents=True, exist_ok=True)
    summaries = []
    with RunStore.open(store_path) as store:
        replace = _check_identity(store, plans, items, specs, identities, recompute=recompute)
        for spec, _method in specs:
            keys = [(it.sample.benchmark, it.sample.sample_id, spec.display_name, it.condition.key) for it in items]
            missing = set(store.missing(keys))
            summaries.append(ModelSummary(spec.display_name, planned=len(keys),
                                          stored_before=len(keys) - len(missing) - len(replace[spec.display_name])))
        fingerprints: dict[str, tuple[str, dict[str, Any]]] = {}
        for p in plans:
            for digest, data in p.sample_identity.values():
                fingerprints[digest] = ("sample", data)
        for ident, data in identities:
            fingerprints[ident.model_fingerprint] = ("model", data)
        if encoder is not None and cfg.needs_encoder and getattr(encoder, "fingerprint", None):
            fingerprints[encoder.fingerprint] = ("encoder", {"name": cfg.encoder})
        store.put_fingerprints(fingerprints)
        run_id = store.start_run({
            "config": cfg.to_dict() | {"models": [_without_url_credentials(m) for m in cfg.models]},
            "models": [_without_url_credentials(spec.to_dict()) | {"method": m, "fingerprint": ident.model_fingerprint}
                       for (spec, m), (ident, _d) in zip(specs, identities)],
            "encoder": {"name": cfg.encoder, "fingerprint": getattr(encoder, "fingerprint", None)}
            if encoder is not None else None,
            "seed": cfg.seed, "fps": cfg.fps, "k": cfg.k, "limit": limit, "shard": shard,
            "recompute": recompute, "benchmarks": bench_info,
        })
        video_root_of = {p.name: p.video_root for p in plans}
        factory = model_factory or _default_factory
        for (spec, method), (ident, _data), summary in zip(specs, identities, summaries):
            keys = {(it.sample.benchmark, it.sample.sample_id, spec.display_name, it.condition.key): it for it in items}
            again = replace[spec.display_name]
            todo = [keys[k] for k in store.missing(list(keys))] + [keys[k] for k in keys if k in again]
            if not todo:
                log(f"model {spec.display_name}: all {summary.planned} predictions already stored")
                continue
            log(f"model {spec.display_name}: {len(todo)} to answer ({summary.stored_before} stored"
                + (f", {len(again)} to replace" if again else "") + ")")
            model = _load_quietly(factory, spec, progress)
            try:
                template = cfg.prompt or spec.prompt_template
                answer_items(model, todo, store, run_id, video_root_of=video_root_of, method=method,
                             template=template, noframe_size=cfg.noframe_size,
                             max_frames_in_memory=cfg.max_frames_in_memory, request_batch=cfg.request_batch,
                             progress=progress, summary=summary, identity=ident, replace=again)
            finally:
                model.close()
        predictions_file = _export(store, [s for p in plans for s in p.samples], out)
        totals = {m: n for (m,), n in store.count_by("model").items()}
    result = RunSummary(str(out), str(store_path), run_id, bench_info, summaries, predictions_file=predictions_file)
    _print_summary(result, log)
    _write_summary(out, result, totals)
    return result


def _bench_info(p: BenchmarkPlan) -> dict[str, Any]:
    return {"samples": len(p.samples), "invalid": p.invalid, "skipped": p.skipped,
            "not_multiple_choice": p.not_multiple_choice, "missing_videos": len(p.missing_videos),
            "failed_videos": len(p.failed_videos), "damaged_videos": len(p.damaged_videos),
            "damaged_skipped": p.damaged_skipped, "samples_without_frames": p.samples_without_frames,
            "requests_per_model": len(p.items)}


def _model_identity(cfg: RunConfig, spec: Any, method: str, encoder: Any | None) -> tuple[Identity, dict[str, Any]]:
    from tempcore.identity import fingerprint, local_chat_template, model_identity
    from tempcore.prompts import get_template

    data = model_identity(spec, method=method, template=get_template(cfg.prompt or spec.prompt_template),
                          noframe_size=cfg.noframe_size, chat_template=local_chat_template(spec.model))
    enc = getattr(encoder, "fingerprint", None) if cfg.needs_encoder else None
    return Identity(fingerprint(data), None if enc is None else str(enc)), data


def _check_identity(
    store: Any,
    plans: list[BenchmarkPlan],
    items: list[WorkItem],
    specs: list[tuple[Any, str]],
    identities: list[tuple[Identity, dict[str, Any]]],
    *,
    recompute: bool,
) -> dict[str, set[tuple[str, str, str, str]]]:
    """The stored keys of this run whose fingerprints differ from the run's, per model.

    Without ``recompute`` any such key stops the run (a :class:`RunError` that says what changed and
    for how many stored predictions) before any model is loaded; with it they are returned to be
    replaced."""
    from tempcore.identity import changed_fields, describe_model_change, describe_sample_change

    new_samples = {(p.name, sid): data for p in plans for sid, (_d, data) in p.sample_identity.items()}
    replace: dict[str, set[tuple[str, str, str, str]]] = {}
    messages: list[str] = []
    sample_changes: dict[str, dict[str, list[str]]] = defaultdict(dict)
    sample_rows: Counter[str] = Counter()
    for (spec, _method), (ident, data) in zip(specs, identities):
        name = spec.display_name
        expected = {
            (it.sample.benchmark, it.sample.sample_id, name, it.condition.key):
                (it.sample_hash, ident.model_fingerprint, ident.encoder_for(it.condition))
            for it in items
        }
        stored = store.stored_identity(list(expected))
        changed: set[tuple[str, str, str, str]] = set()
        by_model: Counter[str] = Counter()
        by_encoder = 0
        old_samples: dict[tuple[str, str], str] = {}
        for key, (sh, mf, ef) in stored.items():
            want_sh, want_mf, want_ef = expected[key]
            if (sh, mf, ef) == (want_sh, want_mf, want_ef):
                continue
            changed.add(key)
            if mf != want_mf:
                by_model[mf] += 1
            if ef != want_ef and mf:
                by_encoder += 1
            if sh != want_sh and sh:
                old_samples[(key[0], key[1])] = sh
                sample_rows[key[0]] += 1
        replace[name] = changed
        old_model = store.fingerprint_data(list(by_model))
        for mf, n in sorted(by_model.items()):
            if not mf:
                messages.append(f"model {name}: {n} stored prediction{'s' if n != 1 else ''} carry no fingerprint "
                                "(stored before store schema v2, or imported without one)")
            else:
                messages.append(describe_model_change(name, old_model.get(mf), data, n))
        if by_encoder:
            messages.append(f"model {name}: the encoder changed (fingerprint) for {by_encoder} stored "
                            f"prediction{'s' if by_encoder != 1 else ''} of score-based conditions")
        old_data = store.fingerprint_data(set(old_samples.values()))
        for (bench, sid), sh in old_samples.items():
            sample_changes[bench][sid] = changed_fields(old_data.get(sh), new_samples.get((bench, sid), {}))
    for bench, changes in sorted(sample_changes.items()):
        messages.insert(0, describe_sample_change(bench, changes, sample_rows[bench]))
    total = sum(len(v) for v in replace.values())
    if total and not recompute:
        raise RunError(
            "stored predictions do not match this run (nothing was answered):\n  "
            + "\n  ".join(messages)
            + f"\nrerun with --recompute to replace exactly these {total} stored predictions, or use another --out"
        )
    return replace


def _dry_run(
    cfg: RunConfig, specs: list[tuple[Any, str]], out: Path, store_path: Path, *, limit: int | None,
    shard: tuple[int, int] | None, log: Callable[[str], None],
) -> RunSummary:
    """The plan from the annotations alone: no encoder, no decoding, no store written.

    Oracle conditions expand into windows whose number depends on each video's length, so they
    are counted as "up to ``max_windows``" per sample. Stored predictions are counted per model
    from an existing store (opened read-only); whether their fingerprints still match is checked by
    the real run before any model call."""
    plans = []
    upper = 0
    lines = []
    for i, b in enumerate(cfg.benchmarks):
        log(f"benchmark {b.name}: {b.annotations}")
        plan, mc, video_root = _load_plan(cfg, i, limit=limit, shard=shard, log=log)
        for m in plan.missing_videos:
            log(f"  missing video: {m}")
        from tempcore.benchmarks import resolve_video
        from tempcore.visual.answering import STRATEGY as VISUAL_STRATEGY
        from tempcore.visual.run import is_visual_sample

        with_video = [s for s in mc if str(resolve_video(s, video_root)) not in set(plan.missing_videos)]
        by_cond: Counter[str] = Counter()
        n_visual = sum(is_visual_sample(s) for s in with_video)
        if n_visual:
            by_cond[VISUAL_STRATEGY] = n_visual
        mc = [s for s in mc if not is_visual_sample(s)]
        with_video = [s for s in with_video if not is_visual_sample(s)]
        windows = 0
        for entry in cfg.conditions:
            base = entry.condition(cfg)
            pool = mc if base.strategy in FRAMELESS else with_video
            label = base.strategy + ("" if base.mode == "none" else f"/{base.mode}")
            n = sum(len(entry.rotation_list(len(s.options))) for s in pool)
            if base.strategy == "oracle":
                w = int(entry.params.get("max_windows", 50))
                windows += n * w
                label += f" (up to {w} windows)"
            else:
                by_cond[label] += n
        plan.items = []
        plans.append(plan)
        exact = sum(by_cond.values())
        upper += exact + windows
        lines.append(f"  {plan.name}: {len(plan.samples)} samples, {exact} requests per model"
                     + (f" + up to {windows} oracle windows" if windows else "")
                     + f" ({', '.join(f'{k} {v}' for k, v in sorted(by_cond.items()) if v)})")
        if plan.missing_videos:
            lines.append(f"    {len(plan.missing_videos)} missing video(s): their samples get frameless conditions only")
    stored = _stored_counts(store_path)
    log("plan:")
    for line in lines:
        log(line)
    summaries = []
    for spec, method in specs:
        n = stored.get(spec.display_name, 0)
        log(f"  model {spec.display_name}: up to {upper} calls ({spec.backend}, {method})"
            + (f"; {n} predictions of this model already in the store" if n else ""))
        summaries.append(ModelSummary(spec.display_name, planned=upper, stored_before=n))
    log(f"  total: up to {upper * len(specs)} model calls (stored rows are reused when their fingerprints match)")
    return RunSummary(str(out), str(store_path), None, {p.name: _bench_info(p) for p in plans}, summaries,
                      dry_run=True)


def _stored_counts(store_path: Path) -> dict[str, int]:
    """Predictions per model of an existing store, read-only (nothing is created or migrated)."""
    import sqlite3

    if not store_path.is_file():
        return {}
    try:
        con = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True, timeout=5)
        try:
            return dict(con.execute("SELECT model, COUNT(*) FROM predictions GROUP BY model").fetchall())
        finally:
            con.close()
    except sqlite3.Error:
        return {}


def _write_summary(out: Path, result: RunSummary, totals: dict[str, int]) -> None:
    """``summaries/<run_id>.json`` for this run and ``summary.json`` over every run of the folder.

    ``summary.json`` keeps this run's fields at the top level, and adds ``runs`` (every run's summary,
    oldest first, read back from ``summaries/``) and ``store_predictions`` (rows per model in the
    store now: what all the runs together hold, duplicates counted once)."""
    folder = out / "summaries"
    folder.mkdir(exist_ok=True)
    mine = result.to_json()
    _atomic_json(folder / f"{result.run_id}.json", mine)
    runs = []
    for f in sorted(folder.glob("*.json")):
        try:
            runs.append(json.loads(f.read_text()))
        except (OSError, ValueError):
            continue  # another run writing at this moment: its own summary file is complete later
    doc = mine | {"runs": runs, "store_predictions": totals}
    _atomic_json(out / "summary.json", doc)


def _atomic_json(path: Path, data: Any) -> None:
    import os

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def _model_entry(entry: dict[str, Any]) -> tuple[Any, str]:
    from tempcore.models.registry import as_spec

    entry = dict(entry)
    method = entry.pop("method", "generate")
    return as_spec(entry), method


def _without_url_credentials(model: dict[str, Any]) -> dict[str, Any]:
    """A model entry for the run manifest, through the one redaction function
    (:func:`tempcore.redaction.redact_secrets`): ``base_url`` user info (``user:pass@``) and secret
    query values (``?api-key=``, ``?key=``, ...) become ``<redacted>``, as do secret-named keys and
    the value of the entry's API key (read from its ``api_key_env``) wherever it appears."""
    import os

    from tempcore.redaction import redact_secrets

    env = model.get("api_key_env")
    key = os.environ.get(str(env)) if env else None
    return redact_secrets(dict(model), [key])


def _load_quietly(factory: Callable[[Any], Any], spec: Any, progress: bool) -> Any:
    """``factory(spec)``; with progress off, transformers' "Loading weights" bars are off too."""
    if progress:
        return factory(spec)
    from tempcore.encoders.hf import progress_bars

    with progress_bars(False):
        return factory(spec)


def _default_factory(spec: Any) -> Any:
    from tempcore.models import load_model

    return load_model(spec)


def _export(store: Any, samples: list[Sample], out: Path) -> str | None:
    """Write the run's tidy predictions table next to the store (Parquet when pyarrow is there)."""
    try:
        from tempcore.tidy import predictions_table, write_table
    except ImportError:  # pragma: no cover - pyarrow missing
        return None
    path = out / "predictions.parquet"
    write_table(predictions_table(store, samples=samples), path)
    return str(path)


def _print_summary(summary: RunSummary, log: Callable[[str], None]) -> None:
    log("summary:")
    for m in summary.models:
        acc = f", accuracy {m.correct / m.done:.3f}" if m.done else ""
        extra = (f", {m.replaced} replaced (--recompute)" if m.replaced else "") + (
            f", {m.discarded} discarded (stored meanwhile by another writer)" if m.discarded else "")
        log(f"  {m.model}: {m.done} done{extra}, {m.stored_before} skipped (stored), {m.failed} failed, "
            f"{m.parse_failures} parse failures{acc} ({m.seconds:.1f} s)")
    for name, info in summary.benchmarks.items():
        if info.get("damaged_videos"):
            what = "skipped" if info.get("damaged_skipped") else "answered and flagged (video_damage)"
            log(f"  {name}: {info['damaged_videos']} damaged video(s), {what}")
    if summary.predictions_file:
        log(f"  predictions: {summary.predictions_file}")
    log(f"  store: {summary.store}")

