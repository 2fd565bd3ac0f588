"""The executor seam: where a run's frames are scored and its work items answered.

The runner (:mod:`tempcore.run.runner`) plans (:mod:`tempcore.run.planning`), checks identities and
owns the run store; an :class:`Executor` does the two heavy steps: :meth:`Executor.timelines` (the
candidate frames of one benchmark's samples and their Eq. 1 scores) and :meth:`Executor.answer`
(each :class:`ModelJob`: one model entry and the work items it has not answered yet). This module
holds the protocol and the job types; :mod:`.frames`, :mod:`.predictions` and :mod:`.answering`
the steps both executors share; :mod:`.local` the in-process executor and
:mod:`.ray_executor` the Ray one. Both store the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from tempcore.records import Condition, Sample
from tempcore.run.planning import (
    Timelines,
    WorkItem,
)

if TYPE_CHECKING:
    from tempcore.encoders.base import FrameTextEncoder
    from tempcore.encoders.cache import EmbeddingCache
    from tempcore.models.base import Model, ModelSpec
    from tempcore.run.config import RunConfig
    from tempcore.run.store import RunStore


from tempcore.grounding.crops import is_grounding

Key = tuple[str, str, str, str]


ModelFactory = Callable[["ModelSpec"], "Model"]


@dataclass
class ModelSummary:
    """What one model did in a run (counts of predictions; ``seconds`` spent answering)."""

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
    #: the run's rows of this model once this invocation ended: the plan's keys the store holds (rows
    #: answered by earlier invocations of a resumed run too) and how many of them are correct
    run_rows: int = 0
    run_correct: int = 0

    @property
    def accuracy(self) -> float | None:
        """The run's accuracy: over every stored row of the plan (``done`` alone when none is counted)."""
        if self.run_rows:
            return self.run_correct / self.run_rows
        return self.correct / self.done if self.done else None


@dataclass(frozen=True)
class Identity:
    """The fingerprints a model's predictions of one run carry (see :mod:`tempcore.run.identity`)."""

    model_fingerprint: str = ""
    encoder_fingerprint: str | None = None
    # grounding requests render the grounding template (the model's own when it is one, else the
    # built-in ``grounding``): their predictions carry the fingerprint of that template instead
    grounding_fingerprint: str = ""

    def model_for(self, item: WorkItem) -> str:
        """The model fingerprint an item's prediction carries (grounding items: the grounding one)."""
        if self.grounding_fingerprint and is_grounding(item.sample):
            return self.grounding_fingerprint
        return self.model_fingerprint

    def encoder_for(self, condition: Condition) -> str | None:
        """The encoder fingerprint for a condition: only score-based conditions depend on the encoder."""
        return self.encoder_fingerprint if condition.mode != "none" else None


@dataclass
class ModelJob:
    """One model entry's share of a run: the items it has to answer (stored keys are not in it).

    ``replace``: keys of stored rows whose fingerprints changed (``--recompute``), overwritten;
    ``template``: the prompt template (the run's ``prompt`` or the entry's ``prompt_template``);
    ``summary``: updated in place as batches are committed."""

    spec: ModelSpec
    method: str
    items: list[WorkItem]
    identity: Identity
    summary: ModelSummary
    template: str = "default"
    replace: set[Key] | frozenset[Key] = frozenset()

    def describe(self) -> str:
        """The line a run logs when it starts this job."""
        again = self.replace
        return (f"model {self.spec.display_name}: {len(self.items)} to answer ({self.summary.stored_before} stored"
                + (f", {len(again)} to replace" if again else "") + ")")


@dataclass(frozen=True)
class AnswerSettings:
    """The run settings answering needs (from :class:`tempcore.run.config.RunConfig`)."""

    video_root_of: Mapping[str, str | None] = field(default_factory=dict)
    noframe_size: int = 384
    max_frames_in_memory: int = 512
    request_batch: int = 32
    #: models the local executor answers at once (``parallel_models``; the Ray executor has its own
    #: ``concurrent_models``)
    parallel_models: int = 1
    #: with ``parallel_models`` > 1, load and answer each answering thread's models in a worker
    #: process of its own (``model_processes``, :mod:`tempcore.models.hosted`)
    model_processes: bool = False


class EncoderIdentity(Protocol):
    """What the runner needs to know of the encoder an executor scores with."""

    @property
    def name(self) -> str: ...

    @property
    def fingerprint(self) -> str: ...


class Executor(Protocol):
    """Runs the heavy steps of a planned run; the runner plans, checks and owns the store.

    ``prepare`` is called once before any scoring: it loads (or takes ``encoder``) the encoder
    when ``cfg.needs_encoder`` and returns it (or an object naming it, with its fingerprint), or
    ``None``. ``timelines`` scores the frames of one benchmark's samples. ``answer`` answers every
    job and commits each result to ``store`` as it arrives (only the caller's process writes the
    store). ``close`` releases what ``prepare`` / ``answer`` acquired."""

    def prepare(
        self, cfg: RunConfig, *, encoder: FrameTextEncoder | None, progress: bool,
    ) -> EncoderIdentity | None: ...

    def timelines(
        self, samples: Sequence[Sample], modes: Sequence[str], *, cfg: RunConfig, cache: EmbeddingCache | None,
        video_root: str | None, label: str, log: Callable[[str], None], progress: bool,
    ) -> Timelines: ...

    def answer(
        self, jobs: Sequence[ModelJob], store: RunStore, run_id: str, *, factory: ModelFactory,
        settings: AnswerSettings, log: Callable[[str], None], progress: bool,
    ) -> None: ...

    def close(self) -> None: ...


__all__ = [
    "AnswerSettings",
    "EncoderIdentity",
    "Executor",
    "Identity",
    "ModelFactory",
    "ModelJob",
    "ModelSummary",
]
