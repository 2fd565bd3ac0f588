"""CPU per successful request of a retry wrapper: the HTTP client's own loop vs tenacity's ``AsyncRetrying``.

The OpenAI-compatible client (:mod:`tempcore.models.openai_http`) keeps its own retry loop; this
measures what a library wrapper would add to every request that succeeds at once (the common case),
both as ratios against the plain loop measured in the same run. tenacity is not a dependency of
tempcore: install it where you run this (``pip install tenacity``, or ``--path`` to an unpacked wheel).

    python benchmarks/retry_overhead.py [--requests 20000] [--path DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable


async def _answer() -> int:
    return 1


async def plain() -> int:
    """The client's shape: try, classify, sleep and try again only on a retryable outcome."""
    for _attempt in range(3):
        result = await _answer()
        if result:
            return result
    raise RuntimeError("unreachable")


def _with_tenacity() -> Callable[[], Awaitable[int]]:
    from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

    async def wrapped() -> int:
        async for attempt in AsyncRetrying(stop=stop_after_attempt(3), reraise=True,
                                           wait=wait_random_exponential(multiplier=0.5, max=30),
                                           retry=retry_if_exception_type(OSError)):
            with attempt:
                return await _answer()
        raise RuntimeError("unreachable")

    return wrapped


async def _cpu_per_call(fn: Callable[[], Awaitable[int]], n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        await fn()
    return (time.process_time() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--path", help="a folder holding the tenacity package (an unpacked wheel)")
    args = parser.parse_args()
    if args.path:
        sys.path.insert(0, args.path)
    try:
        tenacity = _with_tenacity()
    except ImportError:  # not a dependency: `make bench` goes on
        print("retry_overhead: tenacity is not installed here; pip install tenacity (or --path DIR) to compare")
        return

    async def run() -> None:
        rounds = [(await _cpu_per_call(plain, args.requests), await _cpu_per_call(tenacity, args.requests))
                  for _ in range(3)]
        for own, lib in rounds:
            print(f"own loop {own * 1e6:6.2f} us  tenacity {lib * 1e6:6.2f} us  ratio {lib / own:5.1f}x")

    asyncio.run(run())


if __name__ == "__main__":
    main()
