"""The frames of a run: probing and scoring each sample's video (:func:`frame_events`,
:func:`collect_timelines`) and decoding the frames a unit of work items shows.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tempcore.records import Sample
from tempcore.run.planning import (
    RunError,
    Timeline,
    Timelines,
    WorkItem,
    damage_of,
)

if TYPE_CHECKING:
    from tempcore.encoders.base import FrameTextEncoder
    from tempcore.encoders.cache import EmbeddingCache
    from tempcore.run.frame_scoring import FrameScores, ScoreFailure
    from tempcore.run.framestore import RunKeeper
    from tempcore.video.types import FrameBatch




@dataclass(frozen=True)
class Probe:
    """A sample's timestamps from probing its video (runs without score-based conditions)."""

    sample_id: str
    video: str
    timestamps: np.ndarray
    damage: str | None = None


@dataclass(frozen=True)
class ProbeFailure:
    """A sample whose video could not be probed."""

    sample_id: str
    video: str
    error: str


def frame_events(
    samples: Sequence[Sample],
    modes: Sequence[str],
    *,
    fps: float | None,
    encoder: FrameTextEncoder | None,
    cache: EmbeddingCache | None,
    video_root: str | None,
    on_sample: Callable[[Sample], None] | None = None,
    keep: RunKeeper | None = None,
    workers: int = 1,
) -> Iterator[FrameScores | ScoreFailure | Probe | ProbeFailure]:
    """The results of scoring (``modes``) or probing (no modes) the videos of ``samples``, as data.

    Scoring yields :func:`tempcore.run.frame_scoring.score_samples`' records; probing one :class:`Probe` or
    :class:`ProbeFailure` per sample (samples that share a video and segment share one probe).
    ``on_sample`` is called once per sample done. ``keep`` (:class:`tempcore.run.framestore.RunKeeper`)
    keeps the frames answering will show from this pass: scoring hands it every decoded frame;
    probing then decodes with RGB conversion (a :class:`~tempcore.video.decode.VideoReader` pass, the same
    timestamps and damage report as :func:`~tempcore.video.decode.probe`) instead of a probe, so that
    answering needs no second pass. ``workers``: videos scored at once (:func:`~tempcore.run.frame_scoring.score_samples`)."""
    if modes:
        from tempcore.run.frame_scoring import score_samples

        if encoder is None:
            raise RunError(f"frame scoring in modes {list(modes)} needs an encoder")
        yield from score_samples(samples, encoder, list(modes), fps=fps, cache=cache, video_root=video_root,
                                 on_sample=on_sample, keep=keep, workers=workers)
        return
    from tempcore.benchmarks import resolve_video

    groups: dict[tuple[str, float | None, float | None, str], list[Sample]] = {}
    for s in samples:
        groups.setdefault((str(resolve_video(s, video_root)), s.start, s.end, s.media), []).append(s)
    for (path, start, end, media), group in groups.items():
        found = _probe_video(Path(path), fps, start, end, media, group, keep)
        for s in group:
            if isinstance(found, str):
                yield ProbeFailure(s.sample_id, path, found)
            else:
                yield Probe(s.sample_id, path, found[0], found[1])
            if on_sample is not None:
                on_sample(s)


def _probe_video(
    path: Path, fps: float | None, start: float | None, end: float | None, media: str, samples: Sequence[Sample],
    keep: RunKeeper | None,
) -> tuple[np.ndarray, str | None] | str:
    """(timestamps, damage) of one video's frames at ``fps``, or the decoding error's text; with
    ``keep``, a converting pass whose frames go to the keeper (see :func:`frame_events`)."""
    from tempcore.video.decode import VideoReader, probe
    from tempcore.video.types import VideoError

    if keep is None:
        try:
            info = probe(path, fps, start=start, end=end, media=media)
        except VideoError as exc:
            return str(exc)
        damage = damage_of(info)
        return np.asarray(info.timestamps, dtype=np.float64), None if not damage else str(damage)
    sink = keep.sink(path, samples)
    try:
        try:
            reader = VideoReader(path, fps, start=start, end=end, media=media)
            times = []
            for batch in reader:
                sink.add(batch)
                times.append(np.asarray(batch.timestamps, dtype=np.float64))
        except VideoError as exc:
            return str(exc)
        timestamps = np.concatenate(times) if times else np.empty(0, np.float64)
        damage = damage_of(reader)
        found = (timestamps, None if not damage else str(damage))
        keep.keep(path, samples, {s.sample_id: Timeline(timestamps, {}, found[1]) for s in samples}, sink)
        return found
    finally:
        sink.close()


def collect_timelines(
    events: Iterable[FrameScores | ScoreFailure | Probe | ProbeFailure],
    modes: Sequence[str],
    log: Callable[[str], None],
) -> Timelines:
    """Per sample: frame timestamps at the run's fps, the Eq. 1 scores of each needed mode, and the
    damage the decoder reported (``None`` when clean); logs each failed and damaged sample.

    A video that fails is listed once in ``failed_videos`` (distinct videos); a damaged one in
    ``damaged_videos``. A sample whose scores failed for one mode but not another keeps no timeline."""
    from tempcore.run.frame_scoring import FrameScores

    out: dict[str, Timeline] = {}
    failed: dict[str, None] = {}
    damaged: dict[str, None] = {}
    for r in events:
        if isinstance(r, FrameScores):
            tl = out.setdefault(r.sample_id, Timeline(np.asarray(r.timestamps), {}))
            tl.scores[r.mode] = np.asarray(r.s)
            tl.cos[r.mode] = np.asarray(r.cos)
            damage = damage_of(r)
            if damage:
                if tl.damage is None:
                    log(f"  damaged video (sample {r.sample_id}): {damage}")
                tl.damage = str(damage)
                damaged[str(getattr(r, "video", "") or r.sample_id)] = None
        elif isinstance(r, Probe):
            out[r.sample_id] = Timeline(r.timestamps, {}, r.damage)
            if r.damage:
                damaged[r.video] = None
                log(f"  damaged video (sample {r.sample_id}): {r.damage}")
        elif isinstance(r, ProbeFailure):
            failed[r.video] = None
            log(f"  cannot decode: sample {r.sample_id}: {r.error}")
        else:
            failed[str(getattr(r, "video", r))] = None
            log(f"  cannot score: {r}")
    return Timelines({sid: v for sid, v in out.items() if set(v.scores) >= set(modes)},
                     failed_videos=sorted(failed), damaged_videos=sorted(damaged))


def _load_frames(items: list[WorkItem], video_root: str | None) -> dict[int, np.ndarray]:
    """The union of the frames these items (all of one sample) show, by position.

    From the active frame store when there is one (:func:`tempcore.run.framestore.active_store`: the
    local executor keeps the frames its scoring pass decoded, so answering decodes nothing), else
    decoded in one :func:`tempcore.video.decode.read_frames` pass. The arrays are the same either way."""
    from tempcore.benchmarks import resolve_video
    from tempcore.run.framestore import active_store, video_key
    from tempcore.video.decode import read_frames

    wanted = sorted({i for it in items for i in it.frames.indices})
    if not wanted:
        return {}
    s = items[0].sample
    path, fps = resolve_video(s, video_root), items[0].condition.fps

    def decode(positions: list[int]) -> FrameBatch:
        return read_frames(path, positions, fps, start=s.start, end=s.end, media=s.media)

    store = active_store()
    if store is not None:
        return store.frames(video_key(path, s.start, s.end, s.media, fps), wanted, decode)
    batch = decode(wanted)
    return {int(i): batch.frames[j] for j, i in enumerate(wanted)}


def default_decoders() -> int:
    """Decoding threads of a stream: the machine's cores, at most 4 (at least 1)."""
    return max(1, min(4, os.cpu_count() or 1))


__all__ = [
    "Probe",
    "ProbeFailure",
    "collect_timelines",
    "default_decoders",
    "frame_events",
]
