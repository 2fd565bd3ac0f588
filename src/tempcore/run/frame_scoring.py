"""Frame scoring (TempCore paper, §3.1): Eq. 1 for every decoded frame, in Q-mode and QA-mode.

Eq. 1
    ``s(f, t) = sigmoid(cos(E_V(f), E_T(t)))`` with E_V / E_T the encoder's image / text towers and
    ``cos`` the cosine similarity of the L2-normalised embeddings. This is the *plain* sigmoid of
    the cosine, exactly as the paper writes it: SigLIP's learned ``logit_scale`` / ``logit_bias``
    are **not** applied, so s lies in [sigmoid(-1), sigmoid(1)] ~ [0.269, 0.731]. Ranking by s and by
    cos is the same (sigmoid is increasing); both are kept. cos is float32 (the embeddings' dtype),
    s is computed from it in float64.

Text modes
    ``q``:  t = the question (``sample.question`` with surrounding whitespace stripped).
    ``qa``: t = ``f"{question} {answer_text}"``: the stripped question, one space, the stripped text
            of the correct option (no letter, no "Answer:" prefix). The paper says only
            "concatenation"; a single space is the plain join. QA-mode needs the answer (an oracle
            upper bound); a sample without one fails with :class:`TextModeError`.
    Texts longer than the encoder's limit (64 tokens for SigLIP / SigLIP2, 77 for CLIP) are cut by
    the tokenizer; each score records ``text_truncated`` and ``text_tokens`` (tokens before cutting).

Frames
    Decoded by :class:`tempcore.video.decode.VideoReader` at ``fps`` (default 10, the paper's rate) with
    real presentation timestamps; positions 0..L-1 are the indices a FrameSet refers to. Frame
    embeddings are computed once per video x segment x fps x encoder and kept in an
    :class:`EmbeddingCache`, so samples that share a video, both text modes and reruns only encode
    text. Decoding (and the encoder's CPU preprocessing) run in background threads, bounded queues of
    two batches between stages, while the encoder runs on the current batch; for small frames (at
    most :data:`tempcore.video.types.SMALL_FRAME_PIXELS`) the stages run one after the other in the
    calling thread instead (see :func:`frame_embeddings`).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from tempcore import profiling
from tempcore.encoders.base import FrameTextEncoder, SupportsPreparedImages, TextEncoding
from tempcore.encoders.cache import CachedEmbeddings, CacheKey, EmbeddingCache, default_cache_dir
from tempcore.errors import TempcoreError
from tempcore.records import Sample
from tempcore.run.ordered import in_context, ordered_map

if TYPE_CHECKING:
    from tempcore.video.types import FrameBatch

MODES = ("q", "qa")
QA_JOIN = "{question} {answer}"
"""The QA-mode text: question, one space, the correct option's text (both stripped)."""

log = logging.getLogger(__name__)

DECODER_CONVENTION = "tempcore.video.VideoReader/pts-last-shown/1"
"""Which frames decoding at ``fps`` picks; part of the cache key so a change of rule never reuses entries."""

DEFAULT_FPS = 10.0
_QUEUE_BATCHES = 2


class ScoringError(TempcoreError):
    """Scoring a sample failed (names the sample and the reason)."""


class TextModeError(ScoringError):
    """The text of a mode cannot be built for a sample (unknown mode, or QA-mode without an answer)."""


class NoFramesError(ScoringError):
    """Decoding produced no frame to score."""


# --- text modes and Eq. 1 ---------------------------------------------------------------------


def parse_modes(mode: str | Sequence[str]) -> tuple[str, ...]:
    """``"q"``, ``"qa"``, ``"both"`` (= q, qa) or a sequence of them -> tuple of modes, in order, once each."""
    items = [mode] if isinstance(mode, str) else list(mode)
    out: list[str] = []
    for m in items:
        for one in MODES if m == "both" else (m,):
            if one not in MODES:
                raise TextModeError(f"unknown text mode {one!r}; choose q, qa or both")
            if one not in out:
                out.append(one)
    if not out:
        raise TextModeError("no text mode given")
    return tuple(out)


def query_text(sample: Sample, mode: str) -> str:
    """The text t of Eq. 1 for ``sample`` in ``mode`` (see the module docstring for the exact join)."""
    question = sample.question.strip()
    if mode == "q":
        return question
    if mode == "qa":
        answer = sample.answer_text
        if answer is None:
            raise TextModeError(
                f"sample {sample.sample_id} ({sample.benchmark}): QA-mode needs the correct answer, and it has none"
            )
        return QA_JOIN.format(question=question, answer=answer.strip())
    raise TextModeError(f"unknown text mode {mode!r}; choose q or qa")


def sigmoid(x: np.ndarray) -> np.ndarray:
    """Logistic sigmoid in float64, stable for any sign."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    e = np.exp(x[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def eq1_scores(image_embeddings: np.ndarray, text_embedding: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 1: ``(cos, s)`` per frame, ``cos = <e_i, e_t>`` of L2-normalised rows, ``s = sigmoid(cos)``.

    ``image_embeddings`` (L, D) and ``text_embedding`` (D,) must be L2-normalised (every
    :class:`FrameTextEncoder` returns them so). No logit scale or bias is applied.
    """
    emb = np.asarray(image_embeddings, dtype=np.float32)
    text = np.asarray(text_embedding, dtype=np.float32)
    if emb.ndim != 2 or text.shape != (emb.shape[1],):
        raise ValueError(f"eq1_scores: image embeddings {emb.shape} and text embedding {text.shape} disagree")
    cos = emb @ text
    return cos, sigmoid(cos)


# --- records ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FrameEmbeddings:
    """Per-frame embeddings of one video (segment) at one fps.

    timestamps: (L,) float64 presentation times (s); embeddings: (L, D) float32 L2-normalised;
    indices: (L,) int64 positions 0..L-1 in the decoded sequence; cache_hit: read from the cache;
    truncated / decode_error: what the decoder reported (a damaged file yields the frames it had).
    """

    timestamps: np.ndarray
    embeddings: np.ndarray
    cache_hit: bool
    indices: np.ndarray
    video: str = ""
    key: str | None = None
    truncated: bool = False
    decode_error: str | None = None

    def __len__(self) -> int:
        return int(self.timestamps.shape[0])

    @property
    def damage(self) -> str | None:
        """None for a clean video, else the decoder's short reason (truncated, undecodable data)."""
        return self.decode_error or ("truncated" if self.truncated else None)


@dataclass(frozen=True)
class FrameScores:
    """Eq. 1 scores of every decoded frame of a sample's video for one text mode.

    timestamps (L,) float64 s; cos (L,) float32; s (L,) float64 = sigmoid(cos); ``text`` the scored
    text; ``text_truncated`` whether the tokenizer cut it; ``text_tokens`` its length before cutting.
    """

    sample_id: str
    mode: str
    timestamps: np.ndarray
    cos: np.ndarray
    s: np.ndarray
    text: str
    text_truncated: bool
    benchmark: str = ""
    encoder: str = ""
    fps: float | None = DEFAULT_FPS
    text_tokens: int = 0
    cache_hit: bool = False
    video: str = ""
    truncated_video: bool = False
    #: None for a clean video, else why its frames are incomplete (truncated file, undecodable data);
    #: the scores cover only the frames that decoded
    damage: str | None = None

    def __len__(self) -> int:
        return int(self.timestamps.shape[0])

    def to_json(self) -> dict[str, Any]:
        """The record ``tempcore score`` writes (one JSONL line; schema in :mod:`tempcore.cli.score`)."""
        return {
            "benchmark": self.benchmark,
            "sample_id": self.sample_id,
            "mode": self.mode,
            "encoder": self.encoder,
            "fps": self.fps,
            "text_truncated": self.text_truncated,
            "text_tokens": self.text_tokens,
            "frames": len(self),
            "timestamps": np.asarray(self.timestamps, dtype=np.float64).tolist(),
            # shortest decimals that read back as the same float32 values
            "cos": [float(str(c)) for c in np.asarray(self.cos, dtype=np.float32)],
            "s": np.asarray(self.s, dtype=np.float64).tolist(),
        }


@dataclass(frozen=True)
class ScoreFailure:
    """A sample that could not be scored; carried as data so a run goes on with the others.

    stage: ``text`` (no text for the mode) or ``video`` (decoding or encoding its video failed).
    """

    benchmark: str
    sample_id: str
    video: str
    error: str
    stage: str
    modes: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"sample {self.sample_id}: {self.video}: {self.error}"


# --- keeping frames for answering --------------------------------------------------------------


class FrameSink(Protocol):
    """Where a video's decoded frames go while it is scored (:class:`tempcore.run.framestore.FrameSpool`)."""

    def add(self, batch: FrameBatch) -> None: ...

    def close(self) -> None: ...


class FrameKeeper(Protocol):
    """What :func:`score_samples` tells about each video it scores, so the frames answering needs
    can be kept from this one decoding pass (:mod:`tempcore.run.framestore`).

    ``sink(path, samples)`` is called before a video (shared by ``samples``) is decoded or read
    from the cache and returns where its decoded frames go (``None``: nowhere); ``done(path,
    samples, records, sink)`` once its scores are known (``records``: the FrameScores of its
    samples; ``sink`` the one returned, which received every frame when the video was decoded, and
    none on a cache hit), before they are yielded. The sink is closed afterwards in every case."""

    def sink(self, path: Path, samples: Sequence[Sample]) -> FrameSink | None: ...

    def done(self, path: Path, samples: Sequence[Sample], records: Sequence[FrameScores],
             sink: FrameSink | None) -> None: ...


# --- decoding / encoding pipeline --------------------------------------------------------------

_END = object()


class _Raised:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _background(
    items: Iterable[Any], fn: Callable[[Any], Any] | None = None, maxsize: int = _QUEUE_BATCHES
) -> Iterator[Any]:
    """Iterate ``items`` (applying ``fn``) in a daemon thread, ``maxsize`` results ahead of the consumer.

    Exceptions are re-raised in the consumer. Closing the generator early stops the thread and
    closes ``items`` (so a chained background stage, or a decoder, is shut down too).
    """
    q: queue.Queue[Any] = queue.Queue(maxsize=maxsize)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        it = iter(items)
        try:
            for item in it:
                if stop.is_set() or not put(fn(item) if fn is not None else item):
                    return
            put(_END)
        except BaseException as exc:  # forwarded to the consumer, re-raised there
            put(_Raised(exc))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=in_context(work), name="tempcore-pipeline", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _END:
                return
            if isinstance(item, _Raised):
                raise item.exc
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            try:
                q.get(timeout=0.05)
            except queue.Empty:
                pass
        thread.join()


def _inline(items: Iterable[Any], fn: Callable[[Any], Any] | None = None) -> Iterator[Any]:
    """:func:`_background`'s stage in the calling thread: ``items`` (with ``fn`` applied) as they
    come; closing it closes ``items``."""
    it = iter(items)
    try:
        for item in it:
            yield fn(item) if fn is not None else item
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()


def _resolve_path(sample: Sample, video_root: str | os.PathLike[str] | None) -> Path:
    from tempcore.benchmarks.videos import resolve_video

    return resolve_video(sample, video_root)


def _encoder_batch_size(encoder: FrameTextEncoder, batch_size: int | None) -> int:
    if batch_size is not None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, not {batch_size}")
        return int(batch_size)
    return int(getattr(encoder, "batch_size", 32))


def cache_key_for(
    cache: EmbeddingCache,
    path: Path,
    encoder: FrameTextEncoder,
    *,
    fps: float | None,
    stream: int = 0,
    start: float | None = None,
    end: float | None = None,
    media: str = "video",
    size: tuple[int, int] | None = None,
    folder_fps: float | None = None,
) -> CacheKey:
    """The cache key of a video's frame embeddings (hashes the video's content, memoised)."""
    return CacheKey.build(
        content=cache.content_hash(path),
        encoder_fingerprint=encoder.fingerprint,
        fps=fps,
        stream=stream,
        start=start,
        end=end,
        media=media,
        size=size,
        folder_fps=folder_fps,
        decoder=DECODER_CONVENTION,
    )


def frame_embeddings(
    sample_or_path: Sample | str | os.PathLike[str],
    encoder: FrameTextEncoder,
    *,
    fps: float | None = DEFAULT_FPS,
    cache: EmbeddingCache | None = None,
    video_root: str | os.PathLike[str] | None = None,
    batch_size: int | None = None,
    stream: int = 0,
    start: float | None = None,
    end: float | None = None,
    media: str | None = None,
    size: tuple[int, int] | None = None,
    threads: int = 0,
    folder_fps: float | None = None,
    on_batch: Callable[[FrameBatch], None] | None = None,
) -> FrameEmbeddings:
    """Embeddings of every frame decoded at ``fps`` from a sample's video (its segment) or a path.

    For a :class:`Sample`, the path is ``video_root / sample.video`` and ``start`` / ``end`` /
    ``media`` default to the sample's. ``size`` = (width, height) resizes while decoding (FFmpeg) before
    the encoder's own preprocessing; ``folder_fps`` is the rate of a frame folder's images (default
    :data:`tempcore.video.types.DEFAULT_FOLDER_FPS`); both are part of the cache key. With a ``cache``, a stored entry is returned without
    decoding; otherwise the frames are decoded (background thread), preprocessed (another
    background thread, when the encoder supports :class:`SupportsPreparedImages`) and encoded in
    batches of ``batch_size`` (default: the encoder's), and the result is stored. ``on_batch`` is
    called with every decoded :class:`~tempcore.video.types.FrameBatch` (in order; not on a cache hit),
    e.g. to keep the frames answering will show (:mod:`tempcore.run.framestore`).
    Raises the decoder's named :class:`~tempcore.video.types.VideoError` s, or :class:`NoFramesError`.
    """
    from tempcore.video.decode import VideoReader
    from tempcore.video.types import DEFAULT_FOLDER_FPS, SMALL_FRAME_PIXELS, VideoNotFoundError

    if isinstance(sample_or_path, Sample):
        sample = sample_or_path
        path = _resolve_path(sample, video_root)
        start = sample.start if start is None else start
        end = sample.end if end is None else end
        media = media or sample.media
    else:
        path = Path(sample_or_path).expanduser()
        if video_root is not None and not path.is_absolute():
            path = Path(video_root).expanduser() / path
    if not path.exists():
        raise VideoNotFoundError(path, "no such file or folder")
    media = media or ("frames" if path.is_dir() else "gif" if path.suffix.lower() == ".gif" else "video")
    folder_fps = (
        (DEFAULT_FOLDER_FPS if folder_fps is None else float(folder_fps)) if media == "frames" else None
    )
    bs = _encoder_batch_size(encoder, batch_size)

    key: CacheKey | None = None
    if cache is not None:
        key = cache_key_for(
            cache,
            path,
            encoder,
            fps=fps,
            stream=stream,
            start=start,
            end=end,
            media=media,
            size=size,
            folder_fps=folder_fps,
        )
        hit = cache.get(key)
        if hit is not None:
            return _from_cache(hit, path, key)

    reader = VideoReader(
        path,
        fps,
        stream=stream,
        start=start,
        end=end,
        size=size,
        batch_size=bs,
        media=media,
        threads=threads,
        folder_fps=folder_fps if folder_fps is not None else DEFAULT_FOLDER_FPS,
    )
    prepare = encoder.prepare_images if isinstance(encoder, SupportsPreparedImages) else None
    # Small frames: the stages in this thread. Per frame they are mostly Python (the decoder's
    # loop, the image processor), so stage threads spend their time waiting for each other's GIL:
    # with single-threaded decoding, scoring 40 of the world's 48 x 48 videos is a median 1.26x
    # faster than FFmpeg threading + the two stage threads (benchmarks/decode_threads.py --scoring,
    # 2-core machine, load 1).
    stage = _inline if 0 < reader.frame_pixels <= SMALL_FRAME_PIXELS else _background
    batches: Iterator[Any] = stage(reader)
    if prepare is not None:
        def prepared(b: Any) -> tuple[Any, Any]:
            with profiling.section("prepare images"):
                return b, prepare(b.frames)

        batches = stage(batches, prepared)
    embs, times, idxs = [], [], []
    try:
        for item in batches:
            if prepare is not None:
                batch, prepared = item
                with profiling.section("encode"):
                    emb = encoder.encode_prepared(prepared)  # type: ignore[attr-defined]
            else:
                batch = item
                with profiling.section("encode"):
                    emb = encoder.encode_images(batch.frames)
            if on_batch is not None:
                on_batch(batch)
            embs.append(np.asarray(emb, dtype=np.float32))
            times.append(np.asarray(batch.timestamps, dtype=np.float64))
            idxs.append(np.asarray(batch.indices, dtype=np.int64))
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()
    if not embs:
        raise NoFramesError(f"{path}: no frame decoded at fps={fps}")
    embeddings = np.concatenate(embs)
    timestamps = np.concatenate(times)
    indices = np.concatenate(idxs)
    if embeddings.shape[0] != timestamps.shape[0]:
        raise ScoringError(
            f"{path}: encoder {encoder.name} returned {embeddings.shape[0]} embeddings for {timestamps.shape[0]} frames"
        )
    if cache is not None and key is not None:
        cache.put(
            key,
            embeddings,
            timestamps,
            indices,
            {
                "encoder": encoder.name,
                "encoder_fingerprint": encoder.fingerprint,
                "video": str(path),
                "fps": fps,
                "stream": stream,
                "start": start,
                "end": end,
                "media": media,
                "frames": int(embeddings.shape[0]),
                "truncated": bool(reader.truncated),
                "decode_error": reader.error,
            },
        )
    return FrameEmbeddings(
        timestamps=timestamps,
        embeddings=embeddings,
        cache_hit=False,
        indices=indices,
        video=str(path),
        key=None if key is None else key.digest,
        truncated=bool(reader.truncated),
        decode_error=reader.error,
    )


def _from_cache(hit: CachedEmbeddings, path: Path, key: CacheKey) -> FrameEmbeddings:
    return FrameEmbeddings(
        timestamps=hit.timestamps,
        embeddings=hit.embeddings,
        cache_hit=True,
        indices=hit.indices,
        video=str(path),
        key=key.digest,
        truncated=bool(hit.header.get("truncated", False)),
        decode_error=hit.header.get("decode_error"),
    )


# --- scoring ---------------------------------------------------------------------------------


def _scores(
    sample: Sample,
    mode: str,
    frames: FrameEmbeddings,
    text: str,
    enc: TextEncoding,
    row: int,
    encoder: str,
    fps: float | None,
) -> FrameScores:
    cos, s = eq1_scores(frames.embeddings, enc.embeddings[row])
    if frames.damage is not None:
        log.warning(
            "sample %s: video %s is damaged (%s); scored on the %d frames that decoded",
            sample.sample_id,
            frames.video,
            frames.damage,
            len(frames),
        )
    return FrameScores(
        sample_id=sample.sample_id,
        mode=mode,
        timestamps=frames.timestamps,
        cos=cos,
        s=s,
        text=text,
        text_truncated=bool(enc.truncated[row]),
        benchmark=sample.benchmark,
        encoder=encoder,
        fps=None if fps is None else float(fps),
        text_tokens=int(enc.token_counts[row]),
        cache_hit=frames.cache_hit,
        video=frames.video,
        truncated_video=frames.truncated,
        damage=frames.damage,
    )


def score_sample(
    sample: Sample,
    encoder: FrameTextEncoder,
    mode: str = "qa",
    *,
    fps: float | None = DEFAULT_FPS,
    cache: EmbeddingCache | None = None,
    video_root: str | os.PathLike[str] | None = None,
    batch_size: int | None = None,
) -> FrameScores:
    """Eq. 1 scores of every frame of ``sample``'s video for ``mode`` (``q`` or ``qa``). Raises on failure."""
    if mode not in MODES:
        raise TextModeError(f"unknown text mode {mode!r}; choose q or qa")
    text = query_text(sample, mode)
    frames = frame_embeddings(
        sample, encoder, fps=fps, cache=cache, video_root=video_root, batch_size=batch_size
    )
    enc = encoder.encode_texts([text])
    return _scores(sample, mode, frames, text, enc, 0, encoder.name, fps)


@dataclass
class _Group:
    """Samples that share one decoded video (same file, segment, media)."""

    path: Path
    samples: list[Sample] = field(default_factory=list)


def _video_group_key(sample: Sample, video_root: str | os.PathLike[str] | None) -> tuple[Any, ...]:
    return (str(_resolve_path(sample, video_root)), sample.start, sample.end, sample.media)


def score_samples(
    samples: Iterable[Sample],
    encoder: FrameTextEncoder,
    mode: str | Sequence[str] = "both",
    *,
    fps: float | None = DEFAULT_FPS,
    cache: EmbeddingCache | None = None,
    video_root: str | os.PathLike[str] | None = None,
    batch_size: int | None = None,
    text_batch: int = 256,
    on_sample: Callable[[Sample], None] | None = None,
    keep: FrameKeeper | None = None,
    workers: int = 1,
) -> Iterator[FrameScores | ScoreFailure]:
    """Score many samples; yields a :class:`FrameScores` per (sample, mode) or a :class:`ScoreFailure`.

    Samples that share a video (same file and segment) are grouped and their video is decoded and
    encoded once, even without a cache; results come group by group, groups in order of first
    appearance, samples in input order within a group, modes in the order given. Texts are encoded
    in batches of about ``text_batch`` across samples. A sample whose text cannot be built, or whose
    video fails to decode or encode, becomes a ScoreFailure (sample id, video path, error) and the
    run goes on. ``on_sample`` is called once per sample when it is done (progress bars).
    ``keep`` hears of every video scored (:class:`FrameKeeper`): the frames answering shows can
    be kept from this decoding pass (:mod:`tempcore.run.framestore`). ``workers`` > 1 decodes and
    encodes that many videos at once (threads; the results and their order are the same): the
    decoder, the image processor and the encoder release the GIL for part of each frame, so a
    second video fills a core the first leaves idle (small frames are decoded and encoded in one
    thread each, :data:`tempcore.video.types.SMALL_FRAME_PIXELS`).
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, not {workers}")
    modes = parse_modes(mode)
    groups: dict[tuple[Any, ...], _Group] = {}
    for sample in samples:
        gk = _video_group_key(sample, video_root)
        groups.setdefault(gk, _Group(_resolve_path(sample, video_root))).samples.append(sample)

    pending = list(groups.values())
    while pending:
        chunk: list[_Group] = []
        n_texts = 0
        while pending and (not chunk or n_texts < text_batch):
            group = pending.pop(0)
            chunk.append(group)
            n_texts += len(group.samples) * len(modes)
        yield from _score_chunk(chunk, encoder, modes, fps, cache, video_root, batch_size, on_sample, keep,
                                workers)


def _score_chunk(
    chunk: list[_Group],
    encoder: FrameTextEncoder,
    modes: tuple[str, ...],
    fps: float | None,
    cache: EmbeddingCache | None,
    video_root: str | os.PathLike[str] | None,
    batch_size: int | None,
    on_sample: Callable[[Sample], None] | None,
    keep: FrameKeeper | None = None,
    workers: int = 1,
) -> Iterator[FrameScores | ScoreFailure]:
    texts: list[str] = []
    rows: dict[str, int] = {}
    wanted: dict[tuple[int, str], tuple[str, int]] = {}
    text_failures: dict[int, ScoreFailure] = {}
    for group in chunk:
        for sample in group.samples:
            for m in modes:
                try:
                    text = query_text(sample, m)
                except TextModeError as exc:
                    text_failures[id(sample)] = ScoreFailure(
                        sample.benchmark,
                        sample.sample_id,
                        str(group.path),
                        f"{type(exc).__name__}: {exc}",
                        "text",
                        (m,),
                    )
                    continue
                if text not in rows:
                    rows[text] = len(texts)
                    texts.append(text)
                wanted[(id(sample), m)] = (text, rows[text])
    with profiling.section("encode"):
        encoding = encoder.encode_texts(texts) if texts else None

    def embed(group: _Group) -> tuple[FrameEmbeddings | None, str | None, FrameSink | None]:
        sink = keep.sink(group.path, group.samples) if keep is not None else None
        try:
            return frame_embeddings(
                group.samples[0],
                encoder,
                fps=fps,
                cache=cache,
                video_root=video_root,
                batch_size=batch_size,
                on_batch=None if sink is None else sink.add,
            ), None, sink
        except Exception as exc:  # a failed video is reported and skipped, never fatal
            return None, f"{type(exc).__name__}: {exc}", sink

    def discard(result: tuple[Any, Any, FrameSink | None]) -> None:
        if result[2] is not None:
            result[2].close()

    needs = [any((id(s), m) in wanted for s in g.samples for m in modes) for g in chunk]
    results = ordered_map(embed, [g for g, need in zip(chunk, needs) if need], threads=workers if workers > 1 else 0,
                          discard=discard, name="tempcore-score")
    try:
        yield from _chunk_records(chunk, needs, results, modes, wanted, text_failures, encoding, encoder, fps,
                                  on_sample, keep)
    finally:
        results.close()  # videos scored ahead and not taken: their frames are let go


def _chunk_records(
    chunk: list[_Group], needs: list[bool], results: Iterator[tuple[FrameEmbeddings | None, str | None, Any]],
    modes: tuple[str, ...], wanted: dict[tuple[int, str], tuple[str, int]], text_failures: dict[int, ScoreFailure],
    encoding: Any, encoder: FrameTextEncoder, fps: float | None, on_sample: Callable[[Sample], None] | None,
    keep: FrameKeeper | None,
) -> Iterator[FrameScores | ScoreFailure]:
    """The records of one chunk's groups, in order, from their videos' ``results``."""
    for group, needs_video in zip(chunk, needs):
        frames: FrameEmbeddings | None = None
        video_error: str | None = None
        sink: FrameSink | None = None
        try:
            if needs_video:
                frames, video_error, sink = next(results)
            out: list[tuple[Sample, list[FrameScores | ScoreFailure]]] = []
            for sample in group.samples:
                records: list[FrameScores | ScoreFailure] = []
                if id(sample) in text_failures:
                    records.append(text_failures[id(sample)])
                todo = [m for m in modes if (id(sample), m) in wanted]
                if todo and frames is None:
                    records.append(ScoreFailure(
                        sample.benchmark,
                        sample.sample_id,
                        str(group.path),
                        video_error or "no frames",
                        "video",
                        tuple(todo),
                    ))
                elif frames is not None and encoding is not None:
                    for m in todo:
                        text, row = wanted[(id(sample), m)]
                        records.append(_scores(sample, m, frames, text, encoding, row, encoder.name, fps))
                out.append((sample, records))
            if keep is not None and frames is not None:
                keep.done(group.path, group.samples,
                          [r for _s, rs in out for r in rs if isinstance(r, FrameScores)], sink)
        finally:
            if sink is not None:
                sink.close()
        for sample, records in out:
            yield from records
            if on_sample is not None:
                on_sample(sample)


__all__ = [
    "DECODER_CONVENTION",
    "DEFAULT_FPS",
    "MODES",
    "QA_JOIN",
    "EmbeddingCache",
    "FrameEmbeddings",
    "FrameKeeper",
    "FrameScores",
    "FrameSink",
    "NoFramesError",
    "ScoreFailure",
    "ScoringError",
    "TextModeError",
    "cache_key_for",
    "default_cache_dir",
    "eq1_scores",
    "frame_embeddings",
    "parse_modes",
    "query_text",
    "score_sample",
    "score_samples",
    "sigmoid",
]
