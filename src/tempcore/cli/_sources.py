"""What ``--benchmark``, ``--annotations`` and ``--annotations-format`` mean in every analysis command.

One meaning (not a command itself):

* ``--benchmark NAME`` is the benchmark **name stored in the predictions** (their ``benchmark``
  column; a run whose configuration set ``benchmark_name`` stores that name). It selects rows.
* ``--annotations PATH`` are read with the format (loader) the run recorded for that benchmark,
  with the loader options it recorded (``benchmark_name``, ``task_table``, ...; ``-o`` overrides
  them); ``--annotations-format FORMAT`` names the format explicitly (a table without a run store
  records none: then a NAME that is a registered format is read with it, any other NAME as the
  generic format with ``benchmark_name=NAME``).
* The older spelling, ``--benchmark FORMAT`` (a format name, e.g. ``generic``), still works where it
  is unambiguous: when exactly one benchmark of the predictions was read with that format.

An analysis that would print nothing raises :class:`NothingToShowError`, which names what the
predictions hold (benchmarks, models, conditions): an empty answer is never a silent success.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tempcore.errors import TempcoreError


#: help of ``--benchmark`` in the analysis commands
class BenchmarkArgumentError(TempcoreError):
    """A ``--annotations`` / ``--video-root`` / ``--option`` value cannot be understood."""


def parse_key_values(pairs: list[str] | None, flag: str = "--option") -> dict[str, str]:
    """``["KEY=VALUE", ...]`` -> dict; a pair without ``=`` is a named error."""
    from tempcore.benchmarks import BenchmarkOptionError

    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise BenchmarkOptionError(f"{flag} expects KEY=VALUE, not {pair!r}")
        out[key.strip()] = value
    return out


BENCHMARK_HELP = ("the benchmark as the predictions name it (their benchmark column, e.g. a run's benchmark_name); "
                  "its rows are used and --annotations are read with the format the run recorded for it. A format "
                  "name (e.g. generic) also works when exactly one benchmark of the predictions was read with it")
#: help of ``--annotations-format``
FORMAT_HELP = ("the format (loader) of --annotations, e.g. generic, grounding, nextqa (default: the one the run "
               "recorded for the benchmark; for a bare table, NAME when it is a registered format, else generic)")


class NothingToShowError(TempcoreError):
    """An analysis has nothing to show for what was asked (no rows for that benchmark, model, ...)."""


class BenchmarkChoiceError(TempcoreError):
    """``--benchmark`` names no benchmark of the predictions, or a format several of them share."""


@dataclass
class RecordedBenchmark:
    """What a run store recorded about one benchmark: the stored name, the format (loader) that read
    its annotations, the loader options, and whether (and with which seed) it was binarised."""

    name: str
    format: str
    options: dict[str, Any] = field(default_factory=dict)
    binary: bool = False
    seed: int | None = None
    annotations: str | None = None


@dataclass
class Resolved:
    """One benchmark as an analysis command uses it: ``name`` selects rows, ``format`` and
    ``options`` read its annotations, ``binary`` / ``seed`` binarise them as the run did."""

    name: str
    format: str
    options: dict[str, Any] = field(default_factory=dict)
    binary: bool = False
    seed: int | None = None


def _names(values: Any, limit: int = 12) -> str:
    items = sorted({str(v) for v in values if v is not None})
    if not items:
        return "none"
    more = f", ... ({len(items)} in all)" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def table_contents(table: Any) -> str:
    """``benchmarks A, B; models X, Y; conditions uniform, maxprob/qa`` of a tidy table (or "no rows")."""
    if table is None or table.num_rows == 0:
        return "no rows"
    cols = table.column_names
    parts = [f"{table.num_rows} row(s)"]
    if "benchmark" in cols:
        parts.append(f"benchmarks {_names(table.column('benchmark').to_pylist())}")
    if "model" in cols:
        parts.append(f"models {_names(table.column('model').to_pylist())}")
    if "strategy" in cols:
        modes = table.column("mode").to_pylist() if "mode" in cols else [None] * table.num_rows
        conds = [s if m in (None, "none") else f"{s}/{m}" for s, m in zip(table.column("strategy").to_pylist(), modes)]
        parts.append(f"conditions {_names(conds)}")
    return "; ".join(parts)


def nothing_to_show(what: str, table: Any, asked: dict[str, Any] | None = None) -> NothingToShowError:
    """The error of an analysis with nothing to show: what was asked, and what the table holds."""
    given = ", ".join(f"{k} {v!r}" if not isinstance(v, list | tuple) else f"{k} {', '.join(map(str, v))}"
                      for k, v in (asked or {}).items() if v not in (None, [], ()))
    return NothingToShowError(f"{what}: nothing to show{f' for {given}' if given else ''}; the predictions hold "
                              f"{table_contents(table)}")


def store_of(predictions: Path | str | None) -> Path | None:
    """The run store behind ``--predictions``: the store file, a run folder's ``store.sqlite``, or the
    ``store.sqlite`` beside a table exported into a run folder; None for a bare table."""
    if predictions is None:
        return None
    from tempcore.run.store import STORE_FILENAME

    path = Path(predictions).expanduser()
    if path.is_dir():
        path = path / STORE_FILENAME
    elif path.suffix.lower() not in (".sqlite", ".sqlite3", ".db"):
        path = path.parent / STORE_FILENAME
    return path if path.is_file() else None


def recorded_benchmarks(predictions: Path | str | None) -> dict[str, RecordedBenchmark]:
    """Stored benchmark name -> what the runs of the store behind ``predictions`` recorded about it
    (the latest run wins); empty for a bare table or a store that records nothing."""
    path = store_of(predictions)
    if path is None:
        return {}
    from tempcore.run.store import RunStore

    out: dict[str, RecordedBenchmark] = {}
    try:
        with RunStore(path, create=False) as store:
            for run_id, _created in store.runs():
                try:
                    out.update(_from_manifest(store.manifest(run_id)))
                except (TypeError, ValueError, KeyError, AttributeError):  # an older or foreign manifest
                    continue
    except (TempcoreError, OSError):
        return {}
    return out


def _from_manifest(manifest: dict[str, Any]) -> dict[str, RecordedBenchmark]:
    """The benchmarks of one run manifest: ``benchmarks`` (keyed by stored name, in configuration
    order, with ``format`` since it is recorded) and the configuration's ``benchmarks`` entries."""
    config = manifest.get("config") or {}
    entries = [e for e in config.get("benchmarks") or [] if isinstance(e, dict)]
    info = manifest.get("benchmarks") or {}
    seed = config.get("seed", manifest.get("seed"))
    out: dict[str, RecordedBenchmark] = {}
    names = list(info) if isinstance(info, dict) else []
    for i, name in enumerate(names):
        item = info[name] if isinstance(info[name], dict) else {}
        index = item.get("config_index", i if len(names) == len(entries) else None)
        entry = entries[index] if isinstance(index, int) and 0 <= index < len(entries) else None
        fmt = item.get("format") or (entry or {}).get("name")
        if not fmt:
            continue
        out[str(name)] = RecordedBenchmark(
            str(name), str(fmt), options=dict((entry or {}).get("options") or {}),
            binary=bool((entry or {}).get("binary", False)), seed=seed if isinstance(seed, int) else None,
            annotations=(entry or {}).get("annotations"))
    return out


def _registered() -> list[str]:
    from tempcore.benchmarks import available

    return list(available())


def renames(fmt: str) -> bool:
    """Whether the loader ``fmt`` takes a ``benchmark_name`` option (generic, grounding)."""
    from tempcore.benchmarks import get_loader

    try:
        return "benchmark_name" in (getattr(get_loader(fmt), "options", None) or {})
    except TempcoreError:
        return False


def _default(name: str, fmt: str | None) -> Resolved:
    """No record: NAME with --annotations-format, else NAME's own format, else generic named NAME."""
    chosen = fmt or (name if name in _registered() else "generic")
    options = {"benchmark_name": name} if chosen != name and renames(chosen) else {}
    return Resolved(name, chosen, options)


def resolve(name: str | None, *, table: Any = None, recorded: dict[str, RecordedBenchmark] | None = None,
            fmt: str | None = None, flag: str = "--benchmark") -> Resolved | None:
    """The benchmark ``--benchmark NAME`` (``--annotations-format fmt``) stands for, given the
    predictions' rows (``table``, may be None) and what their run recorded (``recorded``).

    ``name`` None: the table's only benchmark when it holds one, else None (every benchmark)."""
    recorded = recorded or {}
    stored = None if table is None or "benchmark" not in table.column_names else \
        sorted({str(b) for b in table.column("benchmark").to_pylist()})
    if name is None:
        if stored is not None and len(stored) == 1:
            name = stored[0]
        else:
            return None
    if stored is None or name in stored:
        rec = recorded.get(name)
        if rec is not None and (fmt is None or fmt == rec.format):
            return Resolved(name, rec.format, dict(rec.options), rec.binary, rec.seed)
        return _default(name, fmt)
    # not a stored name: a format name that exactly one stored benchmark was read with
    matches = sorted(r.name for r in recorded.values() if r.format == name and r.name in stored)
    if len(matches) == 1:
        rec = recorded[matches[0]]
        return Resolved(rec.name, rec.format, dict(rec.options), rec.binary, rec.seed)
    if len(matches) > 1:
        raise BenchmarkChoiceError(f"{flag} {name!r}: several benchmarks of the predictions were read with format "
                                   f"{name!r} ({', '.join(matches)}); give {flag} one of them")
    hint = ""
    if name not in _registered():
        from tempcore.registry import did_you_mean

        hint = (f" ({name!r} is not a registered benchmark format either"
                f"{did_you_mean(name, _registered() + list(stored or []), n=1)})")
    elif stored:
        hint = (f" ({name!r} is a format: to read annotations of format {name!r} for a benchmark of these "
                f"predictions, give --benchmark {stored[0]} --annotations-format {name})")
    raise BenchmarkChoiceError(f"{flag} {name!r}: the predictions have no rows for benchmark {name!r}; they hold "
                               f"{table_contents(table)}{hint}")


def load_resolved(resolved: Resolved, path: Path | str, *, video_root: Path | str | None = None,
                  skip_invalid: bool = False, options: dict[str, Any] | None = None) -> Any:
    """Load ``resolved``'s annotations from ``path`` with its format and options (``options``
    override the recorded ones); the samples carry the stored name. Skipped invalid rows are listed
    on standard error (standard output may be JSON)."""
    import sys

    from tempcore.benchmarks import load_benchmark
    from tempcore.registry import did_you_mean

    opts = {**resolved.options, **(options or {})}
    try:
        result = load_benchmark(resolved.format, path, video_root=video_root, skip_invalid=skip_invalid, **opts)
    except TempcoreError as exc:
        if resolved.format == "generic" and resolved.name not in _registered():
            hint = did_you_mean(resolved.name, _registered(), n=1)
            raise BenchmarkArgumentError(
                f"{exc} ({resolved.name!r} records no format and is not a registered benchmark format, so its "
                f"annotations were read as the generic format{hint}; --annotations-format names another)"
            ) from exc
        raise
    if any(s.benchmark != resolved.name for s in result.samples):  # a format without benchmark_name
        result.samples = [dataclasses.replace(s, benchmark=resolved.name) for s in result.samples]
    for bad in result.invalid:
        print(f"skipped invalid row: {bad}", file=sys.stderr)
    return result


def binarized(samples: list[Any], resolved: Resolved | None, binary: bool, seed: int | None) -> list[Any]:
    """``samples`` binarised as the run did (``binary`` flag or the run's record), seeded with
    ``seed`` (flag) else the run's seed else 0."""
    if not (binary or (resolved is not None and resolved.binary)):
        return samples
    from tempcore.benchmarks.binary import binarize

    chosen = seed if seed is not None else (resolved.seed if resolved is not None and resolved.seed is not None else 0)
    return binarize(samples, seed=chosen)


def describe(resolved: Resolved) -> str:
    """``tempcore-world (format generic, benchmark_name=tempcore-world)``: for messages."""
    opts = ", ".join(f"{k}={v}" for k, v in resolved.options.items())
    return f"{resolved.name} (format {resolved.format}{', ' + opts if opts else ''})"


def add_format_argument(p: Any) -> None:
    """``--annotations-format FORMAT``."""
    p.add_argument("--annotations-format", metavar="FORMAT", help=FORMAT_HELP)


def annotations_of(args: Any, table: Any, predictions: Path | str | None = None) -> tuple[Resolved | None, Any]:
    """The benchmark (``args.benchmark`` / ``args.annotations_format``) of a one-benchmark command
    and its loaded ``args.annotations`` (None without): ``(resolved, LoadResult or None)``.

    ``table`` (the predictions, or None) and the run store behind ``predictions`` decide what the
    name means (:func:`resolve`); ``args.option`` (``-o KEY=VALUE``) override the recorded options."""
    fmt = getattr(args, "annotations_format", None)
    if args.annotations is not None and args.benchmark is None:
        raise BenchmarkChoiceError("--annotations needs --benchmark NAME (the benchmark they belong to"
                                   + (f"; the predictions hold {table_contents(table)})" if table is not None else ")"))
    resolved = resolve(args.benchmark, table=table, recorded=recorded_benchmarks(predictions), fmt=fmt)
    if args.annotations is None:
        return resolved, None
    assert resolved is not None  # a name was given
    loaded = load_resolved(resolved, args.annotations, skip_invalid=getattr(args, "skip_invalid", False),
                           options=parse_key_values(getattr(args, "option", []), "--option"))
    return resolved, loaded


def only_benchmark(table: Any, name: str | None, predictions: Path | str | None = None) -> Any:
    """``table``'s rows of benchmark ``name`` (:func:`resolve`); all of them when ``name`` is None."""
    if name is None:
        return table
    import pyarrow.compute as pc

    resolved = resolve(name, table=table, recorded=recorded_benchmarks(predictions))
    assert resolved is not None
    return table.filter(pc.equal(table.column("benchmark"), resolved.name))
