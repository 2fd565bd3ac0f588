"""Video paths of samples and the preflight that lists every missing video at once.

``Sample.video`` is the path *relative to the video root* as the benchmark defines it
(absolute paths are kept as they are). The preflight only checks existence and kind: a
``frames`` sample needs a directory, a ``video`` or ``gif`` sample a file. It does not open
or decode anything; the decoder reports unreadable files with its own named errors.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tempcore.records import Sample


@dataclass(frozen=True)
class MissingVideo:
    """A video (file or frame folder) that samples need and the video root does not hold.

    ``sample_ids`` are all samples that use it (in load order); ``expected`` is ``file`` or
    ``directory``; ``reason`` says what was found instead (nothing, or the wrong kind).
    """

    video: str
    path: Path
    expected: str
    reason: str
    sample_ids: tuple[str, ...]

    def __str__(self) -> str:
        n = len(self.sample_ids)
        return f"{self.path}: {self.reason} (needed by {n} sample{'s' if n != 1 else ''})"

    def to_dict(self, max_ids: int = 5) -> dict[str, Any]:
        return {
            "video": self.video,
            "path": str(self.path),
            "expected": self.expected,
            "reason": self.reason,
            "samples": len(self.sample_ids),
            "sample_ids": list(self.sample_ids[:max_ids]),
        }


def resolve_video(sample: Sample, video_root: str | os.PathLike[str] | None) -> Path:
    """The path of the sample's video: ``video_root / sample.video`` (an absolute ``sample.video``
    is returned unchanged; without a root the relative path is returned as is)."""
    video = Path(sample.video).expanduser()
    if video.is_absolute() or video_root is None:
        return video
    return Path(video_root).expanduser() / video


def preflight(samples: Iterable[Sample], video_root: str | Path | None) -> list[MissingVideo]:
    """Every missing video of ``samples``, once per distinct path, in first-use order."""
    users: dict[Path, list[str]] = {}
    kinds: dict[Path, tuple[str, str]] = {}
    for sample in samples:
        path = resolve_video(sample, video_root)
        users.setdefault(path, []).append(sample.sample_id)
        kinds.setdefault(path, (sample.video, "directory" if sample.media == "frames" else "file"))
    missing = []
    for path, ids in users.items():
        video, expected = kinds[path]
        if expected == "directory":
            ok, wrong = path.is_dir(), path.is_file()
        else:
            ok, wrong = path.is_file(), path.is_dir()
        if ok:
            continue
        if wrong:
            found = "a directory" if expected == "file" else "a file"
            reason = f"is {found}, expected a {'frame folder' if expected == 'directory' else 'video file'}"
        else:
            reason = "frame folder not found" if expected == "directory" else "video not found"
        missing.append(MissingVideo(video, path, expected, reason, tuple(ids)))
    return missing


__all__ = ["MissingVideo", "preflight", "resolve_video"]
