"""Registry of benchmark loaders: lazy entries (a module is imported only when its loader is
asked for), typo suggestions for unknown names, and registration of user loaders."""

from __future__ import annotations

from dataclasses import dataclass

from tempcore.benchmarks.base import Loader
from tempcore.benchmarks.errors import UnknownBenchmarkError
from tempcore.registry import GROUPS, Registry, suggest


@dataclass(frozen=True)
class Entry:
    """A registered loader: ``target`` is ``"module:Class"`` (imported on first use) or a Loader class."""

    name: str
    target: str | type[Loader]
    description: str

    def load(self) -> Loader:
        return get_loader(self.name)


def _valid_name(name: str) -> None:
    if not name or not name.replace("_", "").replace("-", "").isalnum() or name != name.lower():
        raise ValueError(f"benchmark names are lower-case words (letters, digits, '_' or '-'), not {name!r}")


def _unknown(name: str, known: list[str]) -> UnknownBenchmarkError:
    return UnknownBenchmarkError(name, known, suggest(name.lower(), known, n=2, cutoff=0.6))


_PKG = "tempcore.benchmarks"
LOADERS: Registry[type[Loader]] = Registry(
    "benchmark", group=GROUPS["benchmarks"], base=Loader, unknown=_unknown, valid_name=_valid_name
)
"""Benchmark name -> Loader class. Other packages add formats through the ``tempcore.benchmarks``
entry-point group (an entry names a Loader subclass; its ``description`` is listed)."""


def register(name: str, target: str | type[Loader], description: str = "", *, replace: bool = False) -> None:
    """Register a loader under ``name`` (``target``: a Loader subclass or ``"module:Class"``).

    The same target again is a no-op; another target needs ``replace=True``. ``description``
    defaults to the loader class's own.
    """
    if isinstance(target, str):
        LOADERS.register_lazy(name, target, replace=replace, description=description)
    else:
        LOADERS.register(name, target, replace=replace, description=description or target.description)


def available() -> list[str]:
    """Registered benchmark names, sorted."""
    return LOADERS.names()


def describe(name: str) -> str:
    """One-line description of a registered benchmark."""
    return entry(name).description


def entry(name: str) -> Entry:
    target = LOADERS.target(name)
    description = LOADERS.meta(name).get("description") or getattr(LOADERS[name], "description", "")
    return Entry(name, target, str(description))


def get_loader(name: str) -> Loader:
    """An instance of the loader registered under ``name`` (UnknownBenchmarkError suggests names)."""
    return LOADERS[name]()


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

__all__ = ["LOADERS", "Entry", "available", "describe", "entry", "get_loader", "register"]
