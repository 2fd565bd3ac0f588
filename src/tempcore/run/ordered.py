"""Work done ahead in threads and handed on in order (frame scoring, the decoding before answering),
and :func:`in_context`, which every thread tempcore starts for work that may decode runs its work
through: a thread starts in a copy of its starter's :mod:`contextvars` context, so what a run counts
in its own context (its decoding passes, :func:`tempcore.video.types.count_decodes`) follows its work into
its threads, and two runs in two threads of one process count apart."""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")


def in_context(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn``, to be called in another thread, run in a copy of the calling thread's context as it is
    now (a fresh copy at each call, so that calls in several threads at once never share one)."""
    context = contextvars.copy_context()

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return context.copy().run(fn, *args, **kwargs)

    return run


def ordered_map(
    fn: Callable[[T], R], items: Iterable[T], *, threads: int, ahead: int | None = None,
    discard: Callable[[R], None] | None = None, name: str = "tempcore",
) -> Generator[R, None, None]:
    """``fn(item)`` for each item, yielded in the items' order, computed by ``threads`` threads at
    most ``ahead`` (default ``threads``) items ahead of the consumer; an item's exception is raised
    when its turn comes. ``threads`` = 0 calls ``fn`` in the consumer's thread, one item at a time
    (``threads`` = 1: one thread computes the next items while the consumer works).

    When the consumer stops early (the generator is closed, or it raised), the items not started
    are cancelled, the running ones are waited for, and ``discard`` gets every result computed
    ahead and never handed on (to release what it holds)."""
    if threads <= 0:
        yield from (fn(item) for item in items)
        return
    todo = iter(items)
    task = in_context(fn)
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)
    pending: deque[Future[R]] = deque()
    try:
        for item in todo:
            pending.append(pool.submit(task, item))
            if len(pending) >= max(1, ahead or threads):
                break
        while pending:
            ready = pending.popleft().result()
            for item in todo:
                pending.append(pool.submit(task, item))
                break
            yield ready
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True)
        if discard is not None:
            for future in pending:
                if not future.cancelled() and future.exception() is None:
                    discard(future.result())


__all__ = ["in_context", "ordered_map"]
