"""What a run writes besides the store: its summary (:class:`RunSummary`, ``summary.json``), the
predictions table, the dry-run plan and the text printed at the end.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tempcore.records import Condition, Sample
from tempcore.run.executor import ModelSummary
from tempcore.run.frames import _load_frames as _load_frames
from tempcore.run.planning import damage_of as _damage_of  # noqa: F401  (its old private name)
from tempcore.run.predictions import _request as _request

if TYPE_CHECKING:
    pass




@dataclass
class RunSummary:
    out: str
    store: str
    run_id: str | None
    benchmarks: dict[str, dict[str, Any]]
    models: list[ModelSummary]
    dry_run: bool = False
    predictions_file: str | None = None
    #: per model, what the early-stopped oracle asked (:func:`_answer_in_waves`); empty without one
    oracle_early_stop: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    #: decoding passes of this run in this process (:meth:`tempcore.video.types.DecodeCounter.summary`:
    #: ``videos``, ``passes``, ``max_per_video``, ``per_video``, ``by_kind``); ``None`` for a dry run
    decodes: dict[str, Any] | None = None
    #: the failed requests of this run grouped by cause, the most frequent first
    #: (:func:`tempcore.run.failures.failure_causes`, the first :data:`~tempcore.run.failures.FIRST_CAUSES`)
    failure_causes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: the signal that stopped the run (``SIGINT``, ``SIGTERM``, ``SIGHUP``); ``None``: it ran to the end
    interrupted: str | None = None

    @property
    def failed(self) -> int:
        """Requests of this run that failed (in the store's failures table, not answered)."""
        return sum(m.failed for m in self.models)

    def to_json(self) -> dict[str, Any]:
        out = {
            "out": self.out,
            "store": self.store,
            "run_id": self.run_id,
            "dry_run": self.dry_run,
            "benchmarks": self.benchmarks,
            "models": [vars(m) for m in self.models],
            "predictions_file": self.predictions_file,
            "decodes": self.decodes,
            "failed": self.failed,
            "failure_causes": self.failure_causes,
            "interrupted": self.interrupted,
        }
        if self.oracle_early_stop:
            out["oracle_early_stop"] = self.oracle_early_stop
        return out


def _condition_label(c: Condition) -> str:
    """A condition as the messages name it: its strategy, its scoring mode when it has one, its variant."""
    return c.strategy + ("" if c.mode == "none" else f"/{c.mode}") + ("" if c.variant is None else f" ({c.variant})")


def _stored_counts(store_path: Path) -> dict[str, int]:
    """Predictions per model of an existing store, read-only (nothing is created or migrated)."""
    import sqlite3

    if not store_path.is_file():
        return {}
    try:
        con = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True, timeout=5)
        try:
            return dict(con.execute("SELECT model, COUNT(*) FROM predictions GROUP BY model").fetchall())
        finally:
            con.close()
    except sqlite3.Error:
        return {}


def _write_summary(out: Path, result: RunSummary, totals: dict[str, int]) -> None:
    """``summaries/<run_id>.json`` for this run and ``summary.json`` over every run of the folder.

    ``summary.json`` keeps this run's fields at the top level, and adds ``runs`` (every run's summary,
    oldest first, read back from ``summaries/``) and ``store_predictions`` (rows per model in the
    store now: what all the runs together hold, duplicates counted once)."""
    folder = out / "summaries"
    folder.mkdir(exist_ok=True)
    mine = result.to_json()
    _atomic_json(folder / f"{result.run_id}.json", mine)
    runs = []
    for f in sorted(folder.glob("*.json")):
        try:
            runs.append(json.loads(f.read_text()))
        except (OSError, ValueError):
            continue  # another run writing at this moment: its own summary file is complete later
    doc = mine | {"runs": runs, "store_predictions": totals}
    _atomic_json(out / "summary.json", doc)


def _atomic_json(path: Path, data: Any) -> None:
    from tempcore.tidy.formats import atomic_write

    atomic_write(path, json.dumps(data, indent=1))


def _export(store: Any, samples: list[Sample], out: Path) -> str | None:
    """Write the run's tidy predictions table next to the store (Parquet when pyarrow is there)."""
    try:
        from tempcore.tidy.table import predictions_table, write_table
    except ImportError:  # pragma: no cover - pyarrow missing
        return None
    path = out / "predictions.parquet"
    write_table(predictions_table(store, samples=samples), path)
    return str(path)


def _print_summary(summary: RunSummary, log: Callable[[str], None]) -> None:
    log("summary:")
    for m in summary.models:
        acc = ""
        if m.run_rows:  # the run's accuracy: every stored row of the plan, earlier invocations' too
            acc = f", accuracy {m.run_correct / m.run_rows:.3f} over the run's {m.run_rows} stored rows"
            if m.done and m.done != m.run_rows:
                acc += f" (this invocation's {m.done}: {m.correct / m.done:.3f})"
        elif m.done:
            acc = f", accuracy {m.correct / m.done:.3f}"
        extra = (f", {m.replaced} replaced (--recompute)" if m.replaced else "") + (
            f", {m.discarded} discarded (stored meanwhile by another writer)" if m.discarded else "")
        log(f"  {m.model}: {m.done} done{extra}, {m.stored_before} skipped (stored), {m.failed} failed, "
            f"{m.parse_failures} parse failures{acc} ({m.seconds:.1f} s)")
    for name, info in summary.benchmarks.items():
        if info.get("damaged_videos"):
            what = "skipped" if info.get("damaged_skipped") else "answered and flagged (video_damage)"
            log(f"  {name}: {info['damaged_videos']} damaged video(s), {what}")
    d = summary.decodes
    if d and d["videos"]:
        log(f"  decodes: {d['passes']} pass(es) over {d['videos']} video(s), at most {d['max_per_video']} per video")
    if summary.predictions_file:
        log(f"  predictions: {summary.predictions_file}")
    log(f"  store: {summary.store}")


__all__ = [
    "RunSummary",
]
