"""Registry of benchmark loaders: lazy entries (a module is imported only when its loader is
asked for), typo suggestions for unknown names, and registration of user loaders."""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass

from tempcore.benchmarks.base import Loader
from tempcore.benchmarks.errors import UnknownBenchmarkError


@dataclass(frozen=True)
class Entry:
    """A registered loader: ``target`` is ``"module:Class"`` (imported on first use) or a Loader class."""

    name: str
    target: str | type[Loader]
    description: str

    def load(self) -> Loader:
        if isinstance(self.target, str):
            module, _, attr = self.target.partition(":")
            cls = getattr(importlib.import_module(module), attr)
        else:
            cls = self.target
        return cls()


_PKG = "tempcore.benchmarks"
_REGISTRY: dict[str, Entry] = {}


def register(name: str, target: str | type[Loader], description: str, *, replace: bool = False) -> None:
    """Register a loader under ``name`` (``target``: a Loader subclass or ``"module:Class"``)."""
    if not name or not name.replace("_", "").replace("-", "").isalnum() or name != name.lower():
        raise ValueError(f"benchmark names are lower-case words (letters, digits, '_' or '-'), not {name!r}")
    if name in _REGISTRY and not replace:
        raise ValueError(f"benchmark {name!r} is already registered (pass replace=True to override)")
    _REGISTRY[name] = Entry(name, target, description)


def available() -> list[str]:
    """Registered benchmark names, sorted."""
    return sorted(_REGISTRY)


def describe(name: str) -> str:
    """One-line description of a registered benchmark."""
    return entry(name).description


def entry(name: str) -> Entry:
    try:
        return _REGISTRY[name]
    except KeyError:
        known = available()
        close = difflib.get_close_matches(name.lower(), known, n=2, cutoff=0.6)
        raise UnknownBenchmarkError(name, known, close) from None


def get_loader(name: str) -> Loader:
    """An instance of the loader registered under ``name`` (UnknownBenchmarkError suggests names)."""
    return entry(name).load()


for _name, _target, _description in (
    (
        "videomme",
        "videomme:VideoMMELoader",
        "Video-MME: one row per question, lettered options, videos {videoID}.mp4",
    ),
    (
        "longvideobench",
        "longvideobench:LongVideoBenchLoader",
        "LongVideoBench: 3-5 candidates, index answers, video_path",
    ),
    (
        "nextqa",
        "nextqa:NExTQALoader",
        "NExT-QA multiple choice CSV (a0..a4), ids {video}_{qid}, map_vid_vidorID.json",
    ),
    (
        "mlvu",
        "mlvu:MLVULoader",
        "MLVU dev: one JSON per task, text answers; open-ended tasks reported as skipped",
    ),
    (
        "egoschema",
        "egoschema:EgoSchemaLoader",
        "EgoSchema: questions.json + subset_answers.json (public 500)",
    ),
    (
        "mvbench",
        "mvbench:MVBenchLoader",
        "MVBench: json/{task}.json + task table (video / gif / frame folders, segments)",
    ),
    (
        "tvbench",
        "tvbench:TVBenchLoader",
        "TVBench: json/{task}.json, video/{task}/ folders, segments; revision recorded",
    ),
    (
        "temporalbench",
        "temporalbench:TemporalBenchLoader",
        "TemporalBench binary QA: options parsed from the question",
    ),
    (
        "extremewhenbench",
        "extremewhenbench:ExtremeWhenBenchLoader",
        "ExtremeWhenBench grounding: interval answers",
    ),
    ("charades_sta", "charades_sta:CharadesSTALoader", "Charades-STA grounding: 'VID START END##sentence' lines"),
    ("qvhighlights", "qvhighlights:QVHighlightsLoader", "QVHighlights moment retrieval: JSONL, several windows"),
    ("grounding", "grounding:GroundingLoader", "generic grounding rows: answer_windows / answer_interval"),
    ("generic", "generic:GenericLoader", "generic JSONL / CSV schema (docs/benchmark-format.md)"),
):
    module, _, cls = _target.partition(":")
    register(_name, f"{_PKG}.{module}:{cls}", _description)

__all__ = ["Entry", "available", "describe", "entry", "get_loader", "register"]
