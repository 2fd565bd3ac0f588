"""tempcore.profiling: exclusive nested sections, hand-measured time, threads, and nothing when off."""

from __future__ import annotations

import threading
import time

import pytest

from tempcore import profiling
from tempcore.profiling import collect, format_profile, section


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_sections_are_exclusive_and_nested_paths_add_up_to_the_wall():
    with collect() as prof:
        with section("outer"):
            _spin(0.05)
            with section("inner"):
                _spin(0.1)
            profiling.add("decode", 0.02)  # measured by hand: a child of "outer"
        with section("inner"):
            _spin(0.03)
    assert list(prof.main) == ["outer", "outer/inner", "outer/decode", "inner"]  # parents first
    assert prof.main["outer/inner"] == pytest.approx(0.1, abs=0.03)
    assert prof.main["outer"] == pytest.approx(0.05 - 0.02, abs=0.03)  # its children are not in it
    assert prof.main["outer/decode"] == 0.02
    assert sum(prof.main.values()) <= prof.wall + 1e-6
    by = prof.by_name()
    assert by["inner"] == pytest.approx(prof.main["outer/inner"] + prof.main["inner"])
    text = format_profile(prof, extra={"decoding passes": "3 over 3 videos"})
    assert "outer" in text and "decoding passes: 3 over 3 videos" in text


def test_other_threads_are_reported_alongside():
    with collect() as prof:
        t = threading.Thread(target=lambda: profiling.add("decode", 0.5))
        t.start()
        t.join()
        with section("encode"):
            pass
    assert prof.alongside == {"decode": 0.5} and "decode" not in prof.main
    assert prof.by_name()["decode"] == 0.5


def test_nothing_is_recorded_when_off_and_one_collector_at_a_time():
    assert not profiling.active()
    assert section("x") is section("y")  # the shared do-nothing context
    profiling.add("decode", 1.0)  # no collector: ignored
    with collect() as prof:
        assert profiling.active()
        with pytest.raises(RuntimeError):
            with collect():
                pass
    assert prof.main == {} and not profiling.active()
