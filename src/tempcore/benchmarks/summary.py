"""The inspection summary of a load (what ``tempcore benchmarks inspect --json`` prints)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from tempcore.benchmarks.base import LoadResult
from tempcore.benchmarks.videos import MissingVideo
from tempcore.records import Sample

LIST_CAP = 20


def _histogram(values: Iterable[Any]) -> dict[str, int]:
    """``{str(value): count}`` sorted by value (JSON object keys are strings)."""
    counts = Counter(values)
    return {str(k): counts[k] for k in sorted(counts, key=lambda v: (isinstance(v, str), v))}


def options_histogram(samples: Sequence[Sample]) -> dict[str, int]:
    """``{number of options: samples}`` over the multiple-choice samples."""
    return _histogram(len(s.options) for s in samples if s.options)


def answer_histogram(samples: Sequence[Sample]) -> dict[str, int]:
    """``{answer index: samples}`` over the multiple-choice samples (the label prior)."""
    return _histogram(s.answer for s in samples if s.answer is not None)


def summarize(
    result: LoadResult, missing: Sequence[MissingVideo] | None = None, cap: int = LIST_CAP
) -> dict[str, Any]:
    """A JSON-ready summary: counts, histograms, and the first ``cap`` invalid / skipped rows and
    missing videos (the full counts are always given). ``missing_videos`` is present only when
    a preflight was run (``missing`` is not None)."""
    samples = result.samples
    out: dict[str, Any] = {
        "benchmark": result.benchmark,
        "annotations_hash": result.annotations_hash,
        "source_files": [str(p) for p in result.source_files],
        "samples": len(samples),
        "multiple_choice": sum(1 for s in samples if s.options),
        "grounding": sum(1 for s in samples if s.answer_interval is not None and not s.options),
        "options_histogram": options_histogram(samples),
        "answer_histogram": answer_histogram(samples),
        "media_histogram": _histogram(s.media for s in samples),
        "segments": sum(1 for s in samples if s.start is not None or s.end is not None),
        "invalid": len(result.invalid),
        "invalid_by_kind": dict(Counter(r.kind for r in result.invalid).most_common()),
        "invalid_reasons": [r.to_dict() for r in result.invalid[:cap]],
        "skipped": len(result.skipped),
        "skipped_by_reason": dict(Counter(r.reason for r in result.skipped).most_common()),
        "skipped_rows": [r.to_dict() for r in result.skipped[:cap]],
        "list_cap": cap,
        "provenance": result.provenance,
    }
    if missing is not None:
        out["video_root"] = str(result.video_root) if result.video_root is not None else None
        out["missing_videos"] = len(missing)
        out["samples_missing_video"] = sum(len(m.sample_ids) for m in missing)
        out["missing"] = [m.to_dict() for m in missing[:cap]]
    return out


def render_text(summary: dict[str, Any]) -> str:
    """A readable version of :func:`summarize`'s output."""
    lines = [
        f"benchmark        {summary['benchmark']}",
        f"files            {', '.join(summary['source_files'])}",
        f"annotations hash {summary['annotations_hash'][:16]}",
        f"samples          {summary['samples']} ({summary['multiple_choice']} multiple choice, "
        f"{summary['grounding']} grounding, {summary['segments']} with a segment)",
    ]
    if summary["options_histogram"]:
        hist = ", ".join(f"{k}: {v}" for k, v in summary["options_histogram"].items())
        lines.append(f"options per row  {hist}")
    if summary["answer_histogram"]:
        from tempcore.records import LETTERS

        hist = ", ".join(f"{LETTERS[int(k)]}: {v}" for k, v in summary["answer_histogram"].items())
        lines.append(f"answers          {hist}")
    lines.append(
        f"media            {', '.join(f'{k}: {v}' for k, v in summary['media_histogram'].items()) or '-'}"
    )
    lines.append(f"skipped          {summary['skipped']}")
    for reason, n in summary["skipped_by_reason"].items():
        lines.append(f"  {n:>6}  {reason}")
    lines.append(f"invalid          {summary['invalid']}")
    for row in summary["invalid_reasons"]:
        where = f" [{row['sample_id']}]" if row["sample_id"] else ""
        lines.append(f"  {row['file']}:{row['row']}:{where} {row['reason']}")
    if summary["invalid"] > len(summary["invalid_reasons"]):
        lines.append(f"  ... and {summary['invalid'] - len(summary['invalid_reasons'])} more")
    if "missing_videos" in summary:
        lines.append(
            f"missing videos   {summary['missing_videos']} under {summary['video_root']} "
            f"({summary['samples_missing_video']} samples)"
        )
        for m in summary["missing"]:
            plural = "s" if m["samples"] != 1 else ""
            lines.append(f"  {m['path']}: {m['reason']} ({m['samples']} sample{plural})")
        if summary["missing_videos"] > len(summary["missing"]):
            lines.append(f"  ... and {summary['missing_videos'] - len(summary['missing'])} more")
    return "\n".join(lines)


__all__ = ["LIST_CAP", "answer_histogram", "options_histogram", "render_text", "summarize"]
