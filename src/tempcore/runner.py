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
   predictions. A rerun makes no call for a stored key.

Choices: no-frame requests show ``k`` uniform grey (128) images of ``noframe_size`` pixels square;
frames are shown at their decoded resolution (adapters resize: see ``max_image_side``); the prompt
template is the model's ``prompt_template`` unless the run sets ``prompt``.
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
    not_multiple_choice: int = 0


@dataclass
class ModelSummary:
    model: str
    planned: int = 0
    stored_before: int = 0
    done: int = 0
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
) -> BenchmarkPlan:
    """Load, preflight, score and select: every WorkItem of one benchmark (no model is called)."""
    from tempcore.benchmarks import load_benchmark, preflight

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
    from tempcore.benchmarks import resolve_video

    has_video = [s for s in mc if str(resolve_video(s, video_root)) not in missing]
    plan.missing_videos = sorted({str(resolve_video(s, video_root)) for s in mc} & missing)
    for m in plan.missing_videos:
        log(f"  missing video: {m}")

    conds = [(e, e.condition(cfg)) for e in cfg.conditions]
    framed = [(e, c) for e, c in conds if c.strategy not in FRAMELESS]
    modes = sorted({c.mode for _, c in framed if c.mode != "none"})
    timeline: dict[str, tuple[np.ndarray, dict[str, np.ndarray]]] = {}
    if framed and has_video:
        timeline = _timelines(has_video, modes, cfg, encoder, cache, video_root, plan, log, progress)

    for sample in mc:
        tl = timeline.get(sample.sample_id)
        for entry_c, base in conds:
            if base.strategy not in FRAMELESS and tl is None:
                continue  # no frames for this sample (missing / failed video): listed above
            ts, scores = tl if tl is not None else (None, {})
            for cond, fs in _expand(entry_c, base, sample, ts, scores):
                rotated, perm = _rotate(sample.options, cond.rotation)
                plan.items.append(WorkItem(sample, cond, fs, rotated, perm))
    return plan


def _rotate(options: Sequence[str], rotation: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    from tempcore.prompts import rotate_options

    return rotate_options(options, rotation)


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
) -> dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]:
    """Per sample: frame timestamps at the run's fps and the Eq. 1 scores of each needed mode."""
    out: dict[str, tuple[np.ndarray, dict[str, np.ndarray]]] = {}
    bar = _bar(len(samples), f"{plan.name}: frames", progress)
    if modes:
        from tempcore.scoring import FrameScores, score_samples

        assert encoder is not None
        for r in score_samples(samples, encoder, modes, fps=cfg.fps, cache=cache, video_root=video_root,
                               on_sample=lambda _s: bar.update(1)):
            if isinstance(r, FrameScores):
                ts, scores = out.setdefault(r.sample_id, (np.asarray(r.timestamps), {}))
                scores[r.mode] = np.asarray(r.s)
            else:
                plan.failed_videos.append(str(r))
                log(f"  cannot score: {r}")
    else:
        from tempcore.benchmarks import resolve_video
        from tempcore.video import VideoError, probe

        for s in samples:
            try:
                info = probe(resolve_video(s, video_root), cfg.fps, start=s.start, end=s.end, media=s.media)
                out[s.sample_id] = (np.asarray(info.timestamps, dtype=np.float64), {})
            except VideoError as exc:
                plan.failed_videos.append(f"sample {s.sample_id}: {exc}")
                log(f"  cannot decode: sample {s.sample_id}: {exc}")
            bar.update(1)
    bar.close()
    # A sample whose scores failed for one mode but not another keeps only complete entries.
    return {sid: v for sid, v in out.items() if set(v[1]) >= set(modes)}


def _bar(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, file=sys.stderr, leave=False, dynamic_ncols=True)


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
    prompt = render_prompt(item.sample.question, item.options, template)
    return ModelRequest(images=images, prompt=prompt, options=item.options, timestamps=timestamps,
                        key="|".join(item.key_suffix))


def to_prediction(item: WorkItem, model: str, request: Any, response: Any, method: str) -> Prediction | Failure:
    """A model's response as a Prediction (answer mapped back to the original option order) or a Failure."""
    from tempcore.answers import extract_choice
    from tempcore.prompts import prompt_hash

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
) -> ModelSummary:
    """Answer ``items`` with ``model`` and commit each batch to ``store`` (one transaction per batch)."""
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
        preds, fails = [], []
        for (it, req), resp in zip(pending, responses):
            out = to_prediction(it, model.name, req, resp, method)
            (preds if isinstance(out, Prediction) else fails).append(out)
        store.put(preds, run_id)
        if fails:
            store.put_failures(fails, run_id)
        summary.done += len(preds)
        summary.failed += len(fails)
        summary.parse_failures += sum(p.answer is None for p in preds)
        summary.correct += sum(p.correct for p in preds)
        for it, _ in pending:
            per_condition[it.condition.strategy] += 1
        bar.update(len(pending))
        bar.set_postfix_str(" ".join(f"{k}:{v}" for k, v in sorted(per_condition.items())), refresh=False)
        pending.clear()

    for (bench, _sid), group in by_sample.items():
        for chunk in _chunks_by_frames(group, max_frames_in_memory):
            try:
                frames = _load_frames(chunk, video_root_of.get(bench))
            except TempcoreError as exc:
                fails = [Failure(it.sample.benchmark, it.sample.sample_id, model.name, it.condition.key,
                                 f"frames: {exc}") for it in chunk]
                store.put_failures(fails, run_id)
                summary.failed += len(fails)
                bar.update(len(chunk))
                continue
            for it in chunk:
                pending.append((it, _request(it, frames, template, noframe_size)))
                if len(pending) >= request_batch:
                    flush()
            flush()  # frames of this chunk are released before the next one is decoded
    flush()
    bar.close()
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
) -> RunSummary:
    """Plan and (unless ``dry_run``) execute ``cfg``; returns the summary. See the module docstring.

    ``model_factory`` (default :func:`tempcore.models.load_model`) and ``encoder`` (default
    :func:`tempcore.encoders.load_encoder` of ``cfg.encoder``) let a caller pass loaded objects.
    ``shard=(i, n)`` keeps the samples of shard i of n (a stable hash partition), so n processes or
    machines can split one run; on one machine they may share the store, across machines each
    writes its own and ``tempcore import table`` merges them.
    """
    if shard is not None and not (shard[1] > 0 and 0 <= shard[0] < shard[1]):
        raise RunError(f"shard must be I/N with 0 <= I < N, not {shard[0]}/{shard[1]}")
    from tempcore.store import RunStore

    out = Path(cfg.out)
    store_path = out / "store.sqlite"
    specs = [_model_entry(m) for m in cfg.models]
    names = [spec.display_name for spec, _ in specs]
    if len(set(names)) != len(names):
        raise RunError(f"two models share a name: {names}; give each a distinct 'name'")
    if cfg.needs_encoder and encoder is None:
        from tempcore.encoders import load_encoder

        encoder = load_encoder(cfg.encoder, **cfg.encoder_options)
    cache = None
    if cfg.needs_encoder:
        from tempcore.encoders.cache import EmbeddingCache, default_cache_dir

        cache = EmbeddingCache(cfg.cache or default_cache_dir())

    plans = []
    for i, b in enumerate(cfg.benchmarks):
        log(f"benchmark {b.name}: {b.annotations}")
        plans.append(plan_benchmark(cfg, i, encoder=encoder, cache=cache, limit=limit, shard=shard, log=log,
                                    progress=progress))
    items = [it for p in plans for it in p.items]
    bench_info = {
        p.name: {"samples": len(p.samples), "invalid": p.invalid, "skipped": p.skipped,
                 "not_multiple_choice": p.not_multiple_choice, "missing_videos": len(p.missing_videos),
                 "failed_videos": len(p.failed_videos), "requests_per_model": len(p.items)}
        for p in plans
    }
    out.mkdir(parents=True, exist_ok=True)
    summaries = []
    with RunStore.open(store_path) as store:
        for spec, _method in specs:
            keys = [(it.sample.benchmark, it.sample.sample_id, spec.display_name, it.condition.key) for it in items]
            missing = set(store.missing(keys))
            summaries.append(ModelSummary(spec.display_name, planned=len(keys), stored_before=len(keys) - len(missing)))
        if dry_run:
            _print_plan(plans, summaries, log)
            return RunSummary(str(out), str(store_path), None, bench_info, summaries, dry_run=True)
        run_id = store.start_run({
            "config": cfg.to_dict() | {"models": [_without_url_credentials(m) for m in cfg.models]},
            "models": [_without_url_credentials(spec.to_dict()) | {"method": m} for spec, m in specs],
            "encoder": {"name": cfg.encoder, "fingerprint": getattr(encoder, "fingerprint", None)}
            if encoder is not None else None,
            "seed": cfg.seed, "fps": cfg.fps, "k": cfg.k, "limit": limit, "shard": shard,
            "benchmarks": bench_info,
        })
        video_root_of = {p.name: p.video_root for p in plans}
        factory = model_factory or _default_factory
        for (spec, method), summary in zip(specs, summaries):
            keys = {(it.sample.benchmark, it.sample.sample_id, spec.display_name, it.condition.key): it for it in items}
            todo = [keys[k] for k in store.missing(list(keys))]
            if not todo:
                log(f"model {spec.display_name}: all {summary.planned} predictions already stored")
                continue
            log(f"model {spec.display_name}: {len(todo)} to answer ({summary.stored_before} stored)")
            model = factory(spec)
            try:
                template = cfg.prompt or spec.prompt_template
                answer_items(model, todo, store, run_id, video_root_of=video_root_of, method=method,
                             template=template, noframe_size=cfg.noframe_size,
                             max_frames_in_memory=cfg.max_frames_in_memory, request_batch=cfg.request_batch,
                             progress=progress, summary=summary)
            finally:
                model.close()
        predictions_file = _export(store, [s for p in plans for s in p.samples], out)
    result = RunSummary(str(out), str(store_path), run_id, bench_info, summaries, predictions_file=predictions_file)
    _print_summary(result, log)
    (out / "summary.json").write_text(json.dumps(result.to_json(), indent=1))
    return result


def _model_entry(entry: dict[str, Any]) -> tuple[Any, str]:
    from tempcore.models.registry import as_spec

    entry = dict(entry)
    method = entry.pop("method", "generate")
    return as_spec(entry), method


def _without_url_credentials(model: dict[str, Any]) -> dict[str, Any]:
    """A model entry for the run manifest: credentials inside ``base_url`` (``user:pass@``) removed."""
    from urllib.parse import urlsplit, urlunsplit

    data = dict(model)
    url = data.get("base_url")
    if url:
        parts = urlsplit(str(url))
        if parts.username or parts.password:
            netloc = f"<redacted>@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
            data["base_url"] = urlunsplit(parts._replace(netloc=netloc))
    return data


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


def _print_plan(plans: list[BenchmarkPlan], summaries: list[ModelSummary], log: Callable[[str], None]) -> None:
    log("plan:")
    for p in plans:
        by_cond = Counter(it.condition.strategy + ("" if it.condition.mode == "none" else f"/{it.condition.mode}")
                          for it in p.items)
        log(f"  {p.name}: {len(p.samples)} samples, {len(p.items)} requests per model "
            f"({', '.join(f'{k} {v}' for k, v in sorted(by_cond.items()))})")
        if p.missing_videos or p.failed_videos:
            log(f"    {len(p.missing_videos)} missing and {len(p.failed_videos)} undecodable video(s)")
    total = 0
    for s in summaries:
        calls = s.planned - s.stored_before
        total += calls
        log(f"  model {s.model}: {calls} calls ({s.stored_before} of {s.planned} already stored)")
    log(f"  total: {total} model calls")


def _print_summary(summary: RunSummary, log: Callable[[str], None]) -> None:
    log("summary:")
    for m in summary.models:
        acc = f", accuracy {m.correct / m.done:.3f}" if m.done else ""
        log(f"  {m.model}: {m.done} done, {m.stored_before} skipped (stored), {m.failed} failed, "
            f"{m.parse_failures} parse failures{acc} ({m.seconds:.1f} s)")
    if summary.predictions_file:
        log(f"  predictions: {summary.predictions_file}")
    log(f"  store: {summary.store}")

