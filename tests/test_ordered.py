"""ordered_map: work done ahead in threads, handed on in order, released when the consumer stops."""

from __future__ import annotations

import threading
import time

import pytest

from tempcore.run.ordered import ordered_map


def test_results_come_in_order_whatever_order_they_finish_in() -> None:
    def slow_first(i: int) -> int:
        time.sleep(0.02 if i % 3 == 0 else 0.0)
        return i * i

    for threads in (0, 1, 2, 4):
        assert list(ordered_map(slow_first, range(10), threads=threads)) == [i * i for i in range(10)]


def test_at_most_ahead_items_are_started_before_the_consumer_takes_one() -> None:
    started: list[int] = []
    lock = threading.Lock()

    def note(i: int) -> int:
        with lock:
            started.append(i)
        return i

    out = ordered_map(note, range(20), threads=2, ahead=3)
    assert next(out) == 0
    time.sleep(0.05)
    assert len(started) <= 4  # three ahead, then one more once the first is taken
    out.close()


def test_threads_zero_runs_in_the_consumers_thread() -> None:
    me = threading.current_thread()
    assert list(ordered_map(lambda _i: threading.current_thread() is me, range(3), threads=0)) == [True] * 3
    assert not any(ordered_map(lambda _i: threading.current_thread() is me, range(3), threads=1))


def test_an_items_error_is_raised_in_its_turn() -> None:
    def fail_at_two(i: int) -> int:
        if i == 2:
            raise ValueError("item 2")
        return i

    out = ordered_map(fail_at_two, range(5), threads=2)
    assert [next(out), next(out)] == [0, 1]
    with pytest.raises(ValueError, match="item 2"):
        next(out)


def test_results_computed_ahead_and_never_taken_are_discarded() -> None:
    discarded: list[int] = []
    out = ordered_map(lambda i: i, range(10), threads=2, ahead=4, discard=discarded.append)
    assert next(out) == 0  # 1-4 are ahead (the fifth started when the first was taken)
    time.sleep(0.05)  # ... and done
    out.close()
    assert discarded == [1, 2, 3, 4]
