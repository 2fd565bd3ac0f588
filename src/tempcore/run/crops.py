"""The crop conditions in a run (retrieve-then-ground and the window-length sweep): the planner's
hook that turns one condition entry and one grounding sample into the frames shown and the spans
they come from. The span maths live in :mod:`tempcore.grounding.crops`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tempcore.diagnostics.grounding import GroundingError
from tempcore.grounding.crops import RETRIEVE_GROUND, Spans, shown_spans
from tempcore.records import Sample
from tempcore.selection._common import SelectionError, prepare
from tempcore.selection.spans import frames_in_spans


def crop_pairs(
    entry: Any, base: Any, sample: Sample, timestamps: Any, scores: Mapping[str, Any],
) -> list[tuple[Any, Any, Spans]]:
    """``[(condition, FrameSet, spans)]`` of one crop condition entry for one grounding sample: the
    planner's hook (:func:`tempcore.run.planning.plan_items`). ``entry`` a
    :class:`tempcore.run.config.ConditionEntry`, ``base`` its Condition; ``scores`` the timeline's
    scores by mode."""
    s = scores.get(base.mode) if base.mode != "none" else None
    try:
        spans = shown_spans(base.strategy, base.variant, dict(entry.params), sample, timestamps, s, base.fps)
    except GroundingError as exc:
        raise SelectionError(f"sample {sample.sample_id!r}: {base.strategy}: {exc}") from None
    frames = prepare(timestamps, s, base.k, strategy=base.strategy, sample_id=sample.sample_id,
                     needs_scores=base.strategy == RETRIEVE_GROUND)
    return [(base, frames.frameset(frames_in_spans(frames.t, spans, frames.k)), spans)]


__all__ = ["crop_pairs"]
