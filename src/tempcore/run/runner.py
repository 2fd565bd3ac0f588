"""``tempcore run``: plan benchmarks x models x conditions, skip what is stored, answer the rest.

:func:`run` loads each benchmark, plans its work items (:mod:`tempcore.run.planning`), has an
executor (:mod:`tempcore.run.executor`) score the frames and answer what the run store does not hold
yet, checks that what is stored still has the identity of what would be asked now
(:mod:`tempcore.run.resume`), and writes the run's outputs (:mod:`tempcore.run.outputs`). A rerun of
the same configuration resumes: stored keys are never asked again.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tempcore.records import Prediction, Sample
from tempcore.run.config import FRAMELESS, RunConfig, early_stop_mode
from tempcore.run.executor import AnswerSettings, Executor, Key, ModelJob, ModelSummary
from tempcore.run.frames import _load_frames as _load_frames
from tempcore.run.local import LocalExecutor
from tempcore.run.planning import (
    BenchmarkPlan,
    OracleChain,
    RunError,
    Timeline,
    WorkItem,
    in_shard,
    is_early_stopped,
    next_oracle_wave,
    oracle_chains,
    plan_items,
)
from tempcore.run.planning import damage_of as _damage_of  # noqa: F401  (its old private name)
from tempcore.run.predictions import _request as _request

if TYPE_CHECKING:
    from tempcore.encoders.base import FrameTextEncoder
    from tempcore.encoders.cache import EmbeddingCache
    from tempcore.models.base import Model, ModelSpec
    from tempcore.run.store import RunStore
    from tempcore.video.types import DecodeCounter


from tempcore.run.outputs import RunSummary, _export, _print_summary, _stored_counts, _write_summary
from tempcore.run.resume import _check_identity, _model_identity, grounding_identity

_runlog = logging.getLogger(__name__)


#: the timeline of one sample (kept under its old private name)
_Timeline = Timeline


def plan_benchmark(
    cfg: RunConfig,
    bench_index: int,
    *,
    encoder: FrameTextEncoder | None = None,
    cache: EmbeddingCache | None,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
    log: Callable[[str], None] = print,
    progress: bool = True,
    video_hash: Callable[[Path], str] | None = None,
    executor: Executor | None = None,
) -> BenchmarkPlan:
    """Load, preflight, score and select: every WorkItem of one benchmark (no model is called).

    Frames are scored by ``executor`` (default: a :class:`LocalExecutor` scoring with ``encoder``);
    the items come from :func:`tempcore.run.planning.plan_items`. ``video_hash`` (default:
    :meth:`EmbeddingCache.content_hash` of ``cache``, else :func:`tempcore.encoders.cache.content_hash`)
    gives each present video's identity for the samples' fingerprints
    (:func:`tempcore.run.identity.sample_identity`).
    """
    from tempcore.benchmarks import resolve_video
    from tempcore.run.identity import fingerprint, sample_identity
    from tempcore.run.visual import IDENTITY_KEY, is_visual_sample, visual_identity, visual_items

    if executor is None:
        executor = LocalExecutor(encoder)
    plan, mc, video_root = _load_plan(cfg, bench_index, limit=limit, shard=shard, log=log)
    missing = set(plan.missing_videos)
    has_video = [s for s in mc if str(resolve_video(s, video_root)) not in missing]
    visual = {s.sample_id for s in mc if is_visual_sample(s)}  # answered under visual_options only
    for m in plan.missing_videos:
        log(f"  missing video: {m}")

    if video_hash is None:
        from tempcore.encoders.cache import content_hash

        video_hash = cache.content_hash if cache is not None else content_hash
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

    framed = [c for c in (e.condition(cfg) for e in cfg.conditions) if c.strategy not in FRAMELESS]
    # the early-stopped oracle orders its windows by the frame scores of its early-stop mode
    modes = sorted({c.mode for c in framed if c.mode != "none"}
                   | {m for m in (early_stop_mode(e) for e in cfg.conditions) if m is not None})
    timeline: dict[str, Timeline] = {}
    ordinary = [s for s in has_video if s.sample_id not in visual]
    if framed and ordinary:
        from tempcore.run.baseline import is_grounding

        # grounding samples have no answer text: their frames are scored in the modes but qa
        ground = [s for s in ordinary if is_grounding(s)]
        for group, group_modes in (([s for s in ordinary if not is_grounding(s)], modes),
                                   (ground, [m for m in modes if m != "qa"])):
            if not group:
                continue
            found = executor.timelines(group, group_modes, cfg=cfg, cache=cache,
                                       video_root=None if video_root is None else str(video_root),
                                       label=plan.name, log=log, progress=progress)
            timeline.update(found.by_sample)
            plan.failed_videos = sorted({*plan.failed_videos, *found.failed_videos})
            plan.damaged_videos = sorted({*plan.damaged_videos, *found.damaged_videos})
    if cfg.damaged_videos == "skip":
        for sid in [sid for sid, tl in timeline.items() if tl.damage is not None]:
            del timeline[sid]
            plan.damaged_skipped += 1
    if framed:
        plan.samples_without_frames = sum(s.sample_id not in timeline and s.sample_id not in visual for s in mc)
    plan.items = plan_items(cfg, [s for s in mc if s.sample_id not in visual], timeline, identity)
    try:
        plan.items += visual_items([s for s in has_video if s.sample_id in visual], identity)
    except ValueError as exc:  # a row without the metadata its build writes
        raise RunError(str(exc)) from None
    if plan.grounding:
        from tempcore.run.baseline import baseline_predictions

        plan.baseline = baseline_predictions(cfg, mc, timeline, identity)
    return plan


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
    from tempcore.run.baseline import is_grounding

    # answered: multiple-choice samples and grounding samples (windows, no options: [start, end])
    mc = [s for s in samples if (s.options and s.answer is not None) or is_grounding(s)]
    plan = BenchmarkPlan(
        name=samples[0].benchmark if samples else str(entry.options.get("benchmark_name", entry.name)),
        samples=mc, items=[], video_root=None if video_root is None else str(video_root),
        format=entry.name, config_index=bench_index,
        invalid=len(result.invalid), skipped=len(result.skipped), not_multiple_choice=len(samples) - len(mc),
        grounding=sum(is_grounding(s) for s in mc),
    )
    if plan.not_multiple_choice:
        log(f"  {plan.not_multiple_choice} sample(s) neither multiple choice nor grounding (open-ended) are "
            f"not answered by `tempcore run`")
    missing = {str(m.path) for m in preflight(mc, video_root)} if mc else set()
    plan.missing_videos = sorted({str(resolve_video(s, video_root)) for s in mc} & missing)
    return plan, mc, video_root


def run(
    cfg: RunConfig,
    *,
    dry_run: bool = False,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
    model_factory: Callable[[ModelSpec], Model] | None = None,
    encoder: FrameTextEncoder | None = None,
    recompute: bool = False,
    executor: Executor | None = None,
) -> RunSummary:
    """Plan and (unless ``dry_run``) execute ``cfg``; returns the summary. The choices (grey images, timestamps,
    ``n_frames``, damaged videos, the summary's counts) are in ``docs/design/run.md``.

    ``model_factory`` (default :func:`tempcore.models.load_model`) and ``encoder`` (default
    :func:`tempcore.encoders.load_encoder` of ``cfg.encoder``) let a caller pass loaded objects.
    ``executor`` (default :class:`tempcore.run.local.LocalExecutor`) scores the frames and answers;
    this process plans, checks identities and alone writes the store.
    ``shard=(i, n)`` keeps the samples of shard i of n (a stable hash partition), so n processes or
    machines can split one run; on one machine they may share the store, across machines each
    writes its own and ``tempcore import table`` merges them. ``recompute`` replaces the stored
    predictions whose fingerprints differ from this run's (without it the run stops, naming them).
    """
    from tempcore.run.config import check_config

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
    from tempcore.run.runlog import SHOWN, narrated, run_log
    from tempcore.run.store import RunStore
    from tempcore.video.types import count_decodes

    with run_log(out):
        log = narrated(log)
        executor = executor if executor is not None else _executor_for(cfg, names)
        try:
            with count_decodes() as decodes:
                return _execute(cfg, specs, out, store_path, executor, limit=limit, shard=shard, progress=progress,
                                log=log, model_factory=model_factory, encoder=encoder, recompute=recompute,
                                cache=EmbeddingCache(cfg.cache or default_cache_dir()), store_type=RunStore,
                                decodes=decodes)
        except KeyboardInterrupt as exc:
            from tempcore.run.interrupts import signal_name

            _runlog.warning("run stopped by %s", signal_name(exc), extra=SHOWN)
            raise
        except Exception as exc:
            _runlog.error("run failed: %s", exc, extra=SHOWN)  # the caller reports it
            raise
        finally:
            executor.close()


def _executor_for(cfg: RunConfig, model_names: list[str]) -> Executor:
    """The executor ``cfg.executor`` names: :class:`LocalExecutor`, or the Ray executor with the
    configuration's ``ray`` options (Ray itself is imported only when it starts)."""
    if cfg.executor == "ray":
        from tempcore.run.ray_executor import RayExecutor, RayOptions

        options = RayOptions.from_dict(cfg.ray)
        options.check_models(model_names)
        return RayExecutor(options)
    if cfg.executor != "local":
        raise RunError(f"unknown executor {cfg.executor!r} (known: local, ray)")
    return LocalExecutor()


def _execute(
    cfg: RunConfig, specs: list[tuple[ModelSpec, str]], out: Path, store_path: Path, executor: Executor, *,
    limit: int | None, shard: tuple[int, int] | None, progress: bool, log: Callable[[str], None],
    model_factory: Callable[[ModelSpec], Model] | None, encoder: FrameTextEncoder | None, recompute: bool,
    cache: EmbeddingCache, store_type: type[RunStore], decodes: DecodeCounter | None = None,
) -> RunSummary:
    """The run proper: plan every benchmark, check identities, hand the jobs to ``executor``.

    The cache holds the embeddings and memoises the videos' content hashes (sample fingerprints)."""
    used = executor.prepare(cfg, encoder=encoder, progress=progress)
    plans = []
    for i, b in enumerate(cfg.benchmarks):
        log(f"benchmark {_entry_label(b)}: {b.annotations}")
        plans.append(plan_benchmark(cfg, i, cache=cache, limit=limit, shard=shard, log=log, progress=progress,
                                    executor=executor))
    items = [it for p in plans for it in p.items]
    bench_info = {p.name: _bench_info(p) for p in plans}
    identities = [_model_identity(cfg, spec, method, used) for spec, method in specs]
    out.mkdir(parents=True, exist_ok=True)
    summaries = []
    enc_fp = getattr(used, "fingerprint", None) if cfg.needs_encoder else None
    baseline = [dataclasses.replace(p, encoder_fingerprint=None if enc_fp is None else str(enc_fp))
                for pl in plans for p in pl.baseline]
    with store_type.open(store_path) as store:
        # the baseline's changed rows first, so that one message names them with the models' ones
        baseline_todo, baseline_again = _baseline_todo(store, baseline, recompute=True)
        replace = _check_identity(store, plans, items, specs, identities, recompute=recompute,
                                  templates=[cfg.prompt or spec.prompt_template for spec, _m in specs],
                                  also=[(_baseline_change(baseline_again), len(baseline_again))] if baseline_again else [])
        for spec, _method in specs:
            keys = [it.key(spec.display_name) for it in items]
            missing = set(store.missing(keys))
            summaries.append(ModelSummary(spec.display_name, planned=len(keys),
                                          stored_before=len(keys) - len(missing) - len(replace[spec.display_name])))
        fingerprints: dict[str, tuple[str, dict[str, Any]]] = {}
        for p in plans:
            for digest, data in p.sample_identity.values():
                fingerprints[digest] = ("sample", data)
        for ident, data in identities:
            fingerprints[ident.model_fingerprint] = ("model", data)
            fingerprints[ident.grounding_fingerprint] = ("model", grounding_identity(data))
        if used is not None and cfg.needs_encoder and getattr(used, "fingerprint", None):
            fingerprints[used.fingerprint] = ("encoder", {"name": cfg.encoder})
        store.put_fingerprints(fingerprints)
        run_id = store.start_run({
            "config": cfg.to_dict() | {"models": [_without_url_credentials(m) for m in cfg.models]},
            "models": [_without_url_credentials(spec.to_dict()) | {"method": m, "fingerprint": ident.model_fingerprint}
                       for (spec, m), (ident, _d) in zip(specs, identities)],
            "encoder": {"name": cfg.encoder, "fingerprint": getattr(used, "fingerprint", None)}
            if used is not None else None,
            "seed": cfg.seed, "fps": cfg.fps, "k": cfg.k, "limit": limit, "shard": shard,
            "recompute": recompute, "benchmarks": bench_info,
        })
        if baseline:
            summaries.append(_store_baseline(store, run_id, baseline, baseline_todo, baseline_again, log))
        chains = oracle_chains(items)
        jobs = []
        for (spec, method), (ident, _data), summary in zip(specs, identities, summaries):
            again = replace[spec.display_name]
            # the early-stopped oracle's windows go in waves (_answer_in_waves), but replaced rows now
            by_key = {it.key(spec.display_name): it for it in items if not is_early_stopped(it)}
            todo = [by_key[k] for k in store.missing(list(by_key))] + [
                it for it in items if it.key(spec.display_name) in again]
            jobs.append(ModelJob(spec, method, todo, ident, summary, template=cfg.prompt or spec.prompt_template,
                                 replace=again))
        settings = AnswerSettings(video_root_of={p.name: p.video_root for p in plans},
                                  noframe_size=cfg.noframe_size, max_frames_in_memory=cfg.max_frames_in_memory,
                                  request_batch=cfg.request_batch, parallel_models=cfg.parallel_models,
                                  model_processes=cfg.model_processes)
        early: dict[str, dict[str, int]] = {}
        stopped: KeyboardInterrupt | None = None
        try:
            early = _answer_in_waves(executor, jobs, chains, store, run_id,
                                     factory=model_factory or _default_factory, settings=settings, log=log,
                                     progress=progress)
        except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP: what is answered is committed
            stopped = exc
        for (spec, _method), summary in zip(specs, summaries):  # the run's accuracy, not this invocation's
            stored = _stored_correct(store, [it.key(spec.display_name) for it in items])
            summary.run_rows, summary.run_correct = len(stored), sum(stored.values())
        predictions_file = _export(store, [s for p in plans for s in p.samples], out)
        totals = {m: n for (m,), n in store.count_by("model").items()}
        causes = _run_failures(store, run_id) if any(m.failed for m in summaries) else []
    result = RunSummary(str(out), str(store_path), run_id, bench_info, summaries, predictions_file=predictions_file,
                        oracle_early_stop=early, decodes=None if decodes is None else decodes.summary(),
                        failure_causes=causes)
    if stopped is not None:
        from tempcore.run.interrupts import signal_name

        result.interrupted = signal_name(stopped)
        log(f"stopped by {result.interrupted}: what was answered is stored; rerun the same command to resume")
    _print_summary(result, log)
    _write_summary(out, result, totals)
    if stopped is not None:
        done = sum(m.done for m in summaries)
        # `tempcore`'s interrupt message says it: what this invocation saved, and how to go on
        stopped.tempcore_note = (  # type: ignore[attr-defined]
            f"{done} prediction(s) answered before the stop are saved ({sum(totals.values())} in all in "
            f"{store_path}); rerun the same command to resume")
        raise stopped
    return result


def _run_failures(store: RunStore, run_id: str) -> list[dict[str, Any]]:
    """The failures this run recorded, grouped by cause (the first few), each logged."""
    from tempcore.run.failures import FIRST_CAUSES, describe_causes, failure_causes

    mine = [f.failure for f in store.failures() if f.run_id == run_id]
    for f in mine:
        _runlog.info("failed: %s/%s %s %s: %s", f.benchmark, f.sample_id, f.model, f.condition, f.error)
    causes = failure_causes(mine, FIRST_CAUSES)
    if mine:
        _runlog.warning("%s", "\n".join(describe_causes(causes, len(mine))))
    return causes


class _KeptModel:
    """A loaded model handed to one wave: ``close`` is left to :class:`_KeepLoaded` (the next wave
    answers with the same model); everything else is the model's."""

    def __init__(self, model: Model) -> None:
        self._model = model

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def close(self) -> None:
        """Nothing: the model stays loaded for the next wave."""


class _KeepLoaded:
    """A model factory that keeps the model it loaded last across the waves of one model (the local
    executor loads and closes a model per call): asked for another model it closes the one it holds
    first, so one model is in memory at a time, as without waves."""

    def __init__(self, factory: Callable[[ModelSpec], Model]) -> None:
        self.factory = factory
        self.name: str | None = None
        self.model: Model | None = None

    def __call__(self, spec: ModelSpec) -> Model:
        if self.model is None or self.name != spec.display_name:
            self.close()
            self.model = self.factory(spec)
            self.name = spec.display_name
        kept: Model = _KeptModel(self.model)
        return kept

    def close(self) -> None:
        model, self.model, self.name = self.model, None, None
        if model is not None:
            model.close()


def _stored_correct(store: RunStore, keys: list[Key]) -> dict[Key, bool]:
    """``key -> correct`` of the given keys that are stored (one query)."""
    if not keys:
        return {}
    sql = ("SELECT p.benchmark, p.sample_id, p.model, p.condition, p.correct FROM json_each(?) AS j "
           "JOIN predictions AS p ON p.benchmark = json_extract(j.value, '$[0]') "
           "AND p.sample_id = json_extract(j.value, '$[1]') AND p.model = json_extract(j.value, '$[2]') "
           "AND p.condition = json_extract(j.value, '$[3]')")
    out: dict[Key, bool] = {}
    for batch in store.iter_query(sql, [json.dumps(keys)]):
        for b, sid, m, c, correct in batch:
            out[(b, sid, m, c)] = bool(correct)
    return out


def _answer_in_waves(
    executor: Executor, jobs: list[ModelJob], chains: list[OracleChain], store: RunStore, run_id: str, *,
    factory: Callable[[ModelSpec], Model], settings: AnswerSettings, log: Callable[[str], None], progress: bool,
) -> dict[str, dict[str, int]]:
    """Hand ``jobs`` to ``executor``, the early-stopped oracle's windows (``chains``) in waves.

    Without chains: one call with every job that has items (as a run without early stop always
    was). With chains, per model (or, when the Ray executor runs models concurrently, for all of
    them together): wave 0 is the job's items plus the first window of every chain not answered
    correctly (:func:`tempcore.run.planning.next_oracle_wave` over the stored rows); each later wave
    reads the rows the previous one stored and asks the next windows, until no chain has one left.
    Returns, per model with chains: ``windows`` (planned), ``stored_before``, ``asked`` (model calls
    for oracle windows in this run), ``chains``, ``solved`` (chains with a correct window at the end)
    and ``waves``."""
    if not chains:
        todo = []
        for job in jobs:
            if job.items:
                todo.append(job)
            else:
                log(f"model {job.spec.display_name}: all {job.summary.planned} predictions already stored")
        if todo:
            executor.answer(todo, store, run_id, factory=factory, settings=settings, log=log, progress=progress)
        return {}
    options = getattr(executor, "options", None)
    groups = [jobs] if getattr(options, "concurrent_models", False) else [[job] for job in jobs]
    stats: dict[str, dict[str, int]] = {}
    for group in groups:
        keep = _KeepLoaded(factory) if isinstance(executor, LocalExecutor) else None
        state: dict[str, dict[Key, bool]] = {}
        asked: dict[str, set[Key]] = {}
        for job in group:
            name = job.spec.display_name
            keys = [it.key(name) for chain in chains for it in chain.items]
            state[name] = {k: v for k, v in _stored_correct(store, keys).items() if k not in job.replace}
            asked[name] = {k for k in keys if k in job.replace}  # asked in wave 0 with the job's items
            stats[name] = {"windows": len(keys), "stored_before": len(state[name]), "asked": 0,
                           "chains": len(chains), "solved": 0, "waves": 0}
        try:
            wave = 0
            while True:
                todo = []
                for job in group:
                    name = job.spec.display_name
                    nxt = next_oracle_wave(chains, name, state[name], asked[name])
                    items = (job.items if wave == 0 else []) + nxt
                    stats[name]["asked"] += sum(is_early_stopped(it) for it in items)
                    if items:
                        todo.append(dataclasses.replace(job, items=items))
                        stats[name]["waves"] = wave + 1
                    elif wave == 0:
                        log(f"model {name}: all {job.summary.planned} predictions already stored or not needed "
                            "(early-stopped oracle)")
                if not todo:
                    break
                wave_log = log if wave == 0 else (lambda line, w=wave: log(f"  oracle wave {w + 1}: {line}"))
                executor.answer(todo, store, run_id, factory=keep or factory, settings=settings, log=wave_log,
                                progress=progress)
                for job in todo:
                    name = job.spec.display_name
                    done = [it.key(name) for it in job.items if is_early_stopped(it)]
                    asked[name].update(done)
                    state[name].update(_stored_correct(store, done))
                wave += 1
        finally:
            if keep is not None:
                keep.close()
        for job in group:
            name = job.spec.display_name
            solved = sum(any(state[name].get(it.key(name)) for it in chain.items) for chain in chains)
            stats[name]["solved"] = solved
            st = stats[name]
            log(f"model {name}: early-stopped oracle: {st['asked']} window call(s) of {st['windows']} windows "
                f"({st['stored_before']} stored before), {solved} of {len(chains)} (sample, rotation)s solved, "
                f"{st['waves']} wave(s)")
    return stats


def _baseline_todo(
    store: RunStore, baseline: list[Prediction], *, recompute: bool
) -> tuple[list[Prediction], list[Prediction]]:
    """The retrieval baseline's predictions to write (not stored) and to replace (stored with other
    fingerprints: window parameters, encoder or sample changed). Without ``recompute`` a changed one
    stops the run, as a model's does."""
    stored = store.stored_identity([p.key for p in baseline])
    todo, again = [], []
    for p in baseline:
        have = stored.get(p.key)
        if have is None:
            todo.append(p)
        elif have != (p.sample_hash, p.model_fingerprint, p.encoder_fingerprint):
            again.append(p)
    if again and not recompute:
        raise RunError(_baseline_change(again) + "; rerun with --recompute to replace them")
    return todo, again


def _baseline_change(again: list[Prediction]) -> str:
    """What the identity check says of the retrieval baseline's changed rows."""
    return (f"{len(again)} stored prediction(s) of the retrieval baseline ({again[0].model}) were made with "
            "other window parameters, another encoder or other samples")


def _store_baseline(
    store: RunStore, run_id: str, baseline: list[Prediction], todo: list[Prediction], again: list[Prediction],
    log: Callable[[str], None],
) -> ModelSummary:
    """Write the retrieval baseline's predictions (no model is called) and summarise them as a model."""
    from tempcore.run.baseline import RETRIEVAL_MODEL

    summary = ModelSummary(RETRIEVAL_MODEL, planned=len(baseline), stored_before=len(baseline) - len(todo) - len(again))
    stored = store.put_new(todo, run_id)  # a row another writer stored first is not counted as this run's
    replaced = store.put(again, run_id, overwrite=True) if again else 0
    summary.done, summary.replaced, summary.discarded = len(stored) + replaced, replaced, len(todo) - len(stored)
    summary.correct = sum(p.correct for p in (*stored, *again))
    summary.seconds = sum(p.latency_s for p in (*todo, *again))
    log(f"model {RETRIEVAL_MODEL} (frame-level retrieval baseline, no model call): {len(todo) + len(again)} "
        f"window(s) stored of {len(baseline)}")
    return summary


def _entry_label(entry: Any) -> str:
    """A configured benchmark as the log names it: its stored name, with its format when they differ
    (``mybench (format generic)``, not ``generic`` for a benchmark the configuration named mybench)."""
    name = str((entry.options or {}).get("benchmark_name") or entry.name)
    return name if name == entry.name else f"{name} (format {entry.name})"


def _bench_info(p: BenchmarkPlan) -> dict[str, Any]:
    return {"format": p.format, "config_index": p.config_index, "samples": len(p.samples), "invalid": p.invalid, "skipped": p.skipped,
            "not_multiple_choice": p.not_multiple_choice, "missing_videos": len(p.missing_videos),
            "failed_videos": len(p.failed_videos), "damaged_videos": len(p.damaged_videos),
            "damaged_skipped": p.damaged_skipped, "samples_without_frames": p.samples_without_frames,
            "requests_per_model": len(p.items), "grounding": p.grounding, "baseline_predictions": len(p.baseline)}


def _dry_run(
    cfg: RunConfig, specs: list[tuple[Any, str]], out: Path, store_path: Path, *, limit: int | None,
    shard: tuple[int, int] | None, log: Callable[[str], None],
) -> RunSummary:
    """The plan from the annotations alone: no encoder, no decoding, no store written.

    Oracle conditions expand into windows whose number depends on each video's length, so they
    are counted as "up to ``max_windows``" per sample. An early-stopped oracle asks at least one
    window per (sample, rotation) and at most as many; both bounds are printed, and for each oracle
    condition the calls of the other setting of ``early_stop`` too. Stored predictions are counted
    per model from an existing store (opened read-only); whether they still match (fingerprints, the
    frames shown, which need the frame selection a dry run does not make) is checked by the real run
    before any model call."""
    plans = []
    upper = 0
    lower = 0
    lines = []
    oracle: dict[str, dict[str, int]] = {}
    for i, b in enumerate(cfg.benchmarks):
        log(f"benchmark {_entry_label(b)}: {b.annotations}")
        plan, mc, video_root = _load_plan(cfg, i, limit=limit, shard=shard, log=log)
        for m in plan.missing_videos:
            log(f"  missing video: {m}")
        from tempcore.benchmarks import resolve_video
        from tempcore.run.visual import VISUAL_STRATEGY, is_visual_sample

        with_video = [s for s in mc if str(resolve_video(s, video_root)) not in set(plan.missing_videos)]
        by_cond: Counter[str] = Counter()
        n_visual = sum(is_visual_sample(s) for s in with_video)
        if n_visual:  # visual-option samples: one visual_options request each (tempcore.run.visual)
            by_cond[VISUAL_STRATEGY] = n_visual
        mc = [s for s in mc if not is_visual_sample(s)]
        with_video = [s for s in with_video if not is_visual_sample(s)]
        windows = 0
        from tempcore.grounding.crops import CROP_STRATEGIES

        early_least = 0  # the fewest oracle window calls (early stop: one per (sample, rotation))
        oracle_lines: list[str] = []
        for entry in cfg.conditions:
            base = entry.condition(cfg)
            pool = mc if base.strategy in FRAMELESS else with_video
            if base.mode == "qa" or base.strategy == "retrieval":  # not asked of grounding samples
                from tempcore.run.baseline import is_grounding

                pool = [s for s in pool if not is_grounding(s)]
            if base.strategy in CROP_STRATEGIES:  # grounding crops: grounding samples only
                from tempcore.run.baseline import is_grounding

                pool = [s for s in pool if is_grounding(s)]
            label = base.strategy + ("" if base.mode == "none" else f"/{base.mode}")
            n = sum(len(entry.rotation_list(len(s.options))) for s in pool)
            if base.strategy == "oracle":
                w = int(entry.params.get("max_windows", 50))
                windows += n * w
                if early_stop_mode(entry) is not None:
                    early_least += n
                    oracle_lines.append(
                        f"    oracle (early_stop: {_yaml_value(entry.params['early_stop'])}): {n} to {n * w} window calls per "
                        f"model, one per (sample, rotation) at least, stopping at the first correct one "
                        f"(early_stop: false: up to {n * w})")
                else:
                    early_least += n * w
                    oracle_lines.append(
                        f"    oracle (early_stop: false): up to {n * w} window calls per model, every window "
                        f"(early_stop: true: {n} to {n * w})")
            else:
                by_cond[label] += n
        plan.items = []
        plans.append(plan)
        exact = sum(by_cond.values())
        upper += exact + windows
        lower += exact + early_least
        lines.append(f"  {plan.name}: {len(plan.samples)} samples, {exact} requests per model"
                     + (f" + up to {windows} oracle windows" if windows else "")
                     + f" ({', '.join(f'{k} {v}' for k, v in sorted(by_cond.items()) if v)})")
        lines.extend(oracle_lines)
        if oracle_lines:  # per model: every window / the fewest with the configured early stop
            oracle[plan.name] = {"at_most": windows, "at_least": early_least}
        if plan.missing_videos:
            lines.append(f"    {len(plan.missing_videos)} missing video(s): their samples get frameless conditions only")
    stored = _stored_counts(store_path)
    log("plan:")
    if cfg.executor != "local":
        log(f"  executor: {cfg.executor}" + (f" (address {cfg.ray['address']})" if cfg.ray.get("address") else ""))
    for line in lines:
        log(line)
    summaries = []
    between = "" if lower == upper else f"{lower} to "
    for spec, method in specs:
        n = stored.get(spec.display_name, 0)
        log(f"  model {spec.display_name}: {between or 'up to '}{upper} calls ({spec.backend}, {_method_label(spec, method)})"
            + (f"; {n} predictions of this model already in the store" if n else ""))
        summaries.append(ModelSummary(spec.display_name, planned=upper, stored_before=n))
    total = len(specs)
    log(f"  total: {f'{lower * total} to ' if between else 'up to '}{upper * total} model calls"
        + (" (the early-stopped oracle stops at the first correct window)" if between else "")
        + " (stored rows are reused when their fingerprints match)")
    info = {p.name: _bench_info(p) | ({"oracle_window_calls": oracle[p.name]} if p.name in oracle else {})
            for p in plans}
    return RunSummary(str(out), str(store_path), None, info, summaries, dry_run=True)


def _method_label(spec: ModelSpec, method: str) -> str:
    """How the model answers, as the dry run says it: the backend's own method when it has one
    (:attr:`tempcore.models.base.ModelSpec.answers_by`), else the entry's."""
    used = spec.answers_by or method
    what = {"option_scores": "scores the options", "generate": "generates the answer"}.get(used, used)
    if used != method:
        return f"{used}: {what}, whatever the entry's method ({method})"
    return f"{used}: {what}"


def _yaml_value(value: Any) -> str:
    """A configuration value as the YAML file spells it (``true``, ``qa``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


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
    redacted: dict[str, Any] = redact_secrets(dict(model), [key])
    return redacted


def _default_factory(spec: ModelSpec) -> Model:
    from tempcore.models import load_model

    return load_model(spec)


__all__ = [
    "BenchmarkPlan",
    "LocalExecutor",
    "RunError",
    "RunSummary",
    "WorkItem",
    "plan_benchmark",
    "run",
]
