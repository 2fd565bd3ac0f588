"""Batching with a per-item fallback: one bad request never fails the others."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from tempcore.models.base import ModelResponse


def split_batches(items: Sequence[int], size: int) -> list[list[int]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def run_with_fallback(
    indices: Sequence[int],
    run: Callable[[list[int]], list[ModelResponse]],
    batch_size: int,
) -> dict[int, ModelResponse]:
    """Run ``indices`` in batches; when a batch raises, rerun its items one by one.

    An item that still raises alone becomes an error response (``attempts=2`` when it was
    tried in a batch first). The others are unaffected.
    """
    results: dict[int, ModelResponse] = {}
    for batch in split_batches(indices, batch_size):
        try:
            for i, response in zip(batch, run(batch)):
                results[i] = response
            continue
        except Exception as exc:  # noqa: BLE001 - any failure of a batch falls back to single items
            if len(batch) == 1:
                results[batch[0]] = ModelResponse.failure(exc)
                continue
        for i in batch:
            start = time.perf_counter()
            try:
                (results[i],) = run([i])
                results[i] = _with_attempts(results[i], 2)
            except Exception as exc:  # noqa: BLE001 - this item fails alone; the rest go on
                results[i] = ModelResponse.failure(exc, latency_s=time.perf_counter() - start, attempts=2)
    return results


def _with_attempts(response: ModelResponse, attempts: int) -> ModelResponse:
    return replace(response, attempts=attempts)


__all__ = ["run_with_fallback", "split_batches"]
