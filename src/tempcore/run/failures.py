"""Failed requests grouped by cause, for a run's summary and ``tempcore failures``.

A failure (:class:`tempcore.records.Failure`: a call that produced no answer) is kept in the run
store's ``failures`` table until a later run answers its key. Failures of one cause (a server that
is down, a video that does not decode) share their error text; :func:`failure_causes` counts them
per (model, first line of the error), most frequent first, with one example key each.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tempcore.records import Failure

#: how many causes a run's summary names (``tempcore failures`` lists them all)
FIRST_CAUSES = 5


def cause_of(failure: Failure) -> str:
    """The cause a failure is grouped by: the first line of its error text (a traceback or a server's
    echoed body below it differs from call to call)."""
    lines = failure.error.strip().splitlines()
    return lines[0].strip() if lines else "(no error text)"


def failure_causes(failures: Iterable[Failure], first: int | None = None) -> list[dict[str, Any]]:
    """``[{"model", "error", "count", "example": {benchmark, sample_id, condition}}, ...]`` per
    (model, :func:`cause_of`), by count (most first), then model and error; the ``first`` ones only
    when given."""
    groups: dict[tuple[str, str], list[Failure]] = {}
    for f in failures:
        groups.setdefault((f.model, cause_of(f)), []).append(f)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    out = [{"model": model, "error": error, "count": len(fs),
            "example": {"benchmark": fs[0].benchmark, "sample_id": fs[0].sample_id, "condition": fs[0].condition}}
           for (model, error), fs in ranked]
    return out if first is None else out[:first]


def describe_causes(causes: list[dict[str, Any]], total: int) -> list[str]:
    """Lines that name ``total`` failed requests and the causes given (as :func:`failure_causes`)."""
    lines = [f"{total} request(s) failed" + (":" if causes else "")]
    for c in causes:
        ex = c["example"]
        lines.append(f"  {c['count']} x {c['model']}: {c['error']} "
                     f"(e.g. {ex['benchmark']}/{ex['sample_id']} {ex['condition']})")
    shown = sum(c["count"] for c in causes)
    if shown < total:
        lines.append(f"  ... and {total - shown} more of other causes")
    return lines


__all__ = ["FIRST_CAUSES", "cause_of", "describe_causes", "failure_causes"]
