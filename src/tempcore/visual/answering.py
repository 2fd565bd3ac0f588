"""Answer built visual-option samples with any :class:`tempcore.models.Model`, outside the runner.

:func:`answer_samples` builds each sample's interleaved request (:func:`.requests.request_for_sample`),
asks the model, parses the response with the one extractor (:func:`tempcore.answers.extract_choice`;
option scoring answers with the letter directly) and returns :class:`tempcore.records.Prediction` s
whose ``frames`` hold the timestamps of every image shown, in order (context, then each option's
frames; the probe frame of a yes/no question has timestamp ``-1``) and whose ``indices`` are the
image positions in the request. A failed call becomes a :class:`tempcore.records.Failure`.
Write the predictions with :func:`tempcore.tidy.table.predictions_table` and score them with
``tempcore visual score``.

The condition is ``Condition(strategy="visual_options", k=<images shown>)`` (mode ``none``), the
same as ``tempcore run`` gives these samples (:mod:`tempcore.run.visual`), which also stores, resumes
and fingerprints them; this function is the store-less path (one call, nothing cached).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tempcore.records import Condition, Failure, FrameSet, Prediction, Sample

STRATEGY = "visual_options"


def answer_samples(
    model: object,
    samples: Sequence[Sample],
    video_root: str | Path | None = None,
    *,
    method: str = "generate",
    context_k: int = 8,
    size: tuple[int, int] | None = None,
) -> tuple[list[Prediction], list[Failure]]:
    from tempcore.answers import extract_choice
    from tempcore.visual.requests import request_for_sample

    preds: list[Prediction] = []
    failures: list[Failure] = []
    requests = [request_for_sample(s, video_root, context_k=context_k, size=size) for s in samples]
    responses = model.answer(requests, method=method)  # type: ignore[attr-defined]
    for s, req, resp in zip(samples, requests, responses):
        cond = Condition(strategy=STRATEGY, k=max(1, len(req.images))).key
        name = model.name  # type: ignore[attr-defined]
        if not resp.ok:
            failures.append(Failure(s.benchmark, s.sample_id, name, cond, resp.error or "no text"))
            continue
        ex = extract_choice(resp.text or "", list(req.options))
        frames = FrameSet(tuple(range(len(req.images))), req.timestamps or tuple(-1.0 for _ in req.images),
                          requested=len(req.images))
        preds.append(Prediction(
            benchmark=s.benchmark, sample_id=s.sample_id, model=name, condition=cond, response=resp.text or "",
            answer=ex.index, correct=int(ex.index is not None and ex.index == s.answer), frames=frames,
            latency_s=resp.latency_s, answer_method=method, option_probs=resp.option_probs,
            parse_error=ex.error, target=s.answer,
        ))
    return preds, failures


__all__ = ["STRATEGY", "answer_samples"]
