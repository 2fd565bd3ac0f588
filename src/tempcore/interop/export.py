"""TempCore subsets: each benchmark's Temporally Sensitive samples, written for other tools.

The TempCore paper (§7, "Practical usage") defines the TempCore subset of a benchmark as its
Temporally Sensitive samples: vision-dependent (``LIS > lambda``) and frame-sensitive
(``|FSS| > tau``), i.e. the categories Temporally Grounded (``FSS > tau``) and Visual Bias
(``FSS < -tau``). :func:`export_tempcore` takes a :class:`~tempcore.diagnostics.Diagnosis` (which
fixes tau, lambda, the FSS text mode and the scoring) and the benchmark's samples, and writes per
benchmark a folder ``<out>/<benchmark>/`` holding:

* the subset, one record per sample, in annotation order: every field of the
  :class:`~tempcore.records.Sample` plus ``fss``, ``lis``, ``fss_category`` (key / anti_key) and
  ``category`` (temporally_grounded / visual_bias), as ``jsonl`` (``tempcore_<name>.jsonl``;
  ``Sample.from_dict`` of a record minus the four score fields gives the sample back), ``parquet``
  (``tempcore_<name>.parquet``; ``metadata`` as JSON text) or an ``lmms-eval`` task folder;
* ``manifest.json``: the benchmark, its annotation files and their SHA-256, the panel's models and
  conditions, tau, lambda, FSS mode, scoring, the per-category counts of the whole benchmark, how
  many samples were exported, the SHA-256 of the written files, the tempcore version and the time.

The lmms-eval task folder holds the task YAML, the data file (JSONL), ``manifest.json``, ``utils.py``
(a copy of :mod:`tempcore.interop.lmms_task`) and ``tempcore_extractor.py`` (a copy of
:mod:`tempcore.extractor`). Run it with ``python -m lmms_eval --tasks tempcore_<name>
--include_path <out>/<name>`` (every exported task also carries the tag ``tempcore``). Its choices
(explained in ``docs/design/interop.md``; checked against lmms-eval 0.7.3 by
``tests/test_lmms_eval_interop.py``):

* ``data_files`` is relative to the YAML, so the folder can be moved or copied to another machine.
* Videos resolve against the video root known at export time; ``TEMPCORE_VIDEO_ROOT`` overrides it
  at run time. ``doc_to_visual`` returns the whole video path, as lmms-eval's own video tasks do.
* The prompt is lmms-eval's common multiple-choice phrasing, overridable through
  ``lmms_eval_specific_kwargs``.
* Responses are parsed by the task's copy of tempcore's extractor; a parse failure is a wrong answer.
* Metric items describe their sample, so ``tempcore import lmms-eval`` needs no flags. Metrics:
  ``tempcore_accuracy`` and ``tempcore_<category>_accuracy`` (that category's documents only), as
  fractions 0-1, with ``cluster_key: video``.
* Only multiple-choice samples can become a task: a grounding sample is an :class:`ExportError`.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tempcore._version import __version__
from tempcore.errors import TempcoreError
from tempcore.records import LETTERS, Condition, Sample

if TYPE_CHECKING:
    from tempcore.benchmarks.base import LoadResult
    from tempcore.diagnostics import Diagnosis

EXPORT_FORMATS = ("jsonl", "parquet", "lmms-eval")
SENSITIVE = ("temporally_grounded", "visual_bias")
SCORE_FIELDS = ("fss", "lis", "fss_category", "category")
TAG = "tempcore"


class ExportError(TempcoreError):
    """A TempCore subset cannot be written (unknown benchmark, sample missing from the annotations...)."""


@dataclass(frozen=True)
class BenchmarkSource:
    """What the export knows about one benchmark's annotations.

    ``annotations_sha256`` and ``source_files`` come from the loader (:class:`LoadResult`); they are
    ``None`` / empty when the samples were given directly. ``video_root`` is where the samples'
    relative video paths resolve (written into the lmms-eval task).
    """

    samples: tuple[Sample, ...]
    annotations_sha256: str | None = None
    source_files: tuple[str, ...] = ()
    video_root: str | None = None

    @classmethod
    def of(cls, value: LoadResult | BenchmarkSource | Iterable[Sample], video_root: Any = None) -> BenchmarkSource:
        if isinstance(value, BenchmarkSource):
            return value if video_root is None else cls(value.samples, value.annotations_sha256,
                                                        value.source_files, str(video_root))
        samples = getattr(value, "samples", None)
        if samples is not None and hasattr(value, "annotations_hash"):
            loaded: Any = value  # a LoadResult, or anything shaped like one
            root = video_root if video_root is not None else loaded.video_root
            return cls(
                tuple(samples),
                loaded.annotations_hash,
                tuple(str(Path(p).resolve()) for p in loaded.source_files),
                None if root is None else str(root),
            )
        return cls(tuple(value), None, (), None if video_root is None else str(video_root))


# --- what the subset holds --------------------------------------------------------------------


def _num(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def subset_records(diagnosis: Diagnosis, benchmark: str, samples: Sequence[Sample]) -> list[dict[str, Any]]:
    """The TempCore subset of ``benchmark``: its Temporally Sensitive samples as records.

    Records come in the order of ``samples`` (the annotation order). Every Temporally Sensitive
    sample of the diagnosis must be among ``samples``; otherwise :class:`ExportError` lists the
    missing ids (the predictions and the annotations do not belong together).
    """
    scores = _scores_of(diagnosis, benchmark)
    by_id = {s.sample_id: s for s in samples}
    wanted = {sid for sid, row in scores.items() if row["category"] in SENSITIVE}
    missing = sorted(wanted - by_id.keys())
    if missing:
        shown = ", ".join(repr(m) for m in missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise ExportError(
            f"{benchmark}: {len(missing)} Temporally Sensitive sample(s) of the predictions are not in the "
            f"annotations ({shown}); are the annotations the ones the predictions were made on?"
        )
    out = []
    for sample in samples:
        if sample.sample_id in wanted:
            record = sample.to_dict()
            record.update(scores[sample.sample_id])
            out.append(record)
    return out


def _scores_of(diagnosis: Diagnosis, benchmark: str) -> dict[str, dict[str, Any]]:
    if benchmark not in diagnosis.benchmarks:
        known = ", ".join(sorted(diagnosis.benchmarks)) or "none"
        raise ExportError(f"benchmark {benchmark!r} has no predictions (the predictions hold: {known})")
    rows = {}
    for b, sid, f, li, fc, c in zip(
        diagnosis.benchmark, diagnosis.sample_id, diagnosis.fss, diagnosis.lis,
        diagnosis.fss_category, diagnosis.category,
    ):
        if b == benchmark:
            rows[str(sid)] = {"fss": _num(f), "lis": _num(li), "fss_category": str(fc), "category": str(c)}
    return rows


def table_provenance(table: Any, diagnosis: Diagnosis) -> dict[str, dict[str, list[str]]]:
    """Per benchmark, the ``models`` of its panel and the ``conditions`` (keys) the scores used.

    The rows used are those :func:`~tempcore.diagnostics.diagnose` reads: MaxProb and MinProb in
    the diagnosis' FSS mode (with its filters) and no-frame of the models in its LIS panel
    (``params["panels"]``); option rotation 0 unless the scoring is ``circular``; models restricted
    to the diagnosis' model subset when it has one.
    """
    import pyarrow.compute as pc

    params = diagnosis.params
    names = table.column_names
    fss_mode = params.get("fss_mode", "qa")
    strategy = table.column("strategy")
    scored = pc.and_(pc.is_in(strategy, value_set=_pa_array(["maxprob", "minprob"])),
                     pc.equal(table.column("mode"), fss_mode))
    for col, value in (params.get("filters") or {}).items():
        if value is not None and col in names:
            scored = pc.and_(scored, pc.equal(table.column(col), value))
    used = pc.or_(pc.fill_null(scored, False), pc.equal(strategy, "noframe"))
    if params.get("scoring") != "circular" and "rotation" in names:
        used = pc.and_(used, pc.equal(pc.fill_null(table.column("rotation"), 0), 0))
    models = params.get("models")
    if models:
        used = pc.and_(used, pc.is_in(table.column("model"), value_set=_pa_array(list(models))))
    rows = table.filter(pc.fill_null(used, False))
    keep = [c for c in ("benchmark", "model", "condition", "strategy", "mode", "k", "window", "encoder",
                        "fps", "seed", "rotation", "variant") if c in names]
    lis_panels = {b: set(p.get("lis", ())) for b, p in (params.get("panels") or {}).items()}
    out: dict[str, dict[str, set[str]]] = {}
    for row in rows.select(keep).group_by(keep).aggregate([]).to_pylist():
        if row["strategy"] == "noframe" and str(row["benchmark"]) in lis_panels and \
                str(row["model"]) not in lis_panels[str(row["benchmark"])]:
            continue  # a no-frame-only probe the LIS panel leaves out (diagnose's lis_panel rule)
        entry = out.setdefault(str(row["benchmark"]), {"models": set(), "conditions": set()})
        entry["models"].add(str(row["model"]))
        entry["conditions"].add(_condition_key(row))
    return {b: {"models": sorted(v["models"]), "conditions": sorted(v["conditions"])} for b, v in out.items()}


def _pa_array(values: list[str]) -> Any:
    import pyarrow as pa

    return pa.array(values, type=pa.string())


def _condition_key(row: Mapping[str, Any]) -> str:
    if row.get("condition"):
        return str(row["condition"])
    kwargs = {"strategy": row["strategy"], "mode": row["mode"], "k": int(row["k"])}
    for name in ("window", "encoder", "fps", "seed", "rotation", "variant"):
        if row.get(name) is not None:
            kwargs[name] = row[name]
    try:
        return Condition(**kwargs).key
    except (TypeError, ValueError):
        return "|".join(f"{k}={v}" for k, v in kwargs.items())


# --- writing ----------------------------------------------------------------------------------


def slug(benchmark: str) -> str:
    """A file- and task-name-safe form of a benchmark name (lower case, ``[a-z0-9_]``); a name longer
    than :data:`SLUG_CHARS` is cut and ends in 8 hex digits of its hash (a file name has at most 255
    bytes), so two long names that differ late still get two slugs."""
    text = re.sub(r"[^a-z0-9_]+", "_", benchmark.lower()).strip("_")
    if not text:
        raise ExportError(f"benchmark name {benchmark[:100]!r} has no letters or digits to name its files")
    if len(text) > SLUG_CHARS:
        digest = hashlib.sha256(benchmark.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        text = f"{text[:SLUG_CHARS - 9].rstrip('_')}_{digest}"
    return text


#: the longest slug (:func:`slug`): ``tempcore_<slug>.parquet`` stays far below 255 bytes
SLUG_CHARS = 100


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _atomic_write(path: Path, data: bytes) -> Path:
    from tempcore.tidy.formats import atomic_write

    return atomic_write(path, data)


def _json_safe(value: Any) -> Any:
    """JSON has no NaN / infinity: such metadata values (e.g. from a Parquet annotation file) become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _jsonl(records: Iterable[Mapping[str, Any]]) -> bytes:
    lines = [json.dumps(_json_safe(r), ensure_ascii=False, allow_nan=False, default=str) for r in records]
    return ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")


def _flat(record: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(record)
    out["metadata"] = json.dumps(_json_safe(record.get("metadata") or {}), ensure_ascii=False, sort_keys=True,
                                 allow_nan=False, default=str)
    return out


def _write_parquet(path: Path, records: list[dict[str, Any]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([
        ("benchmark", pa.string()), ("sample_id", pa.string()), ("video", pa.string()),
        ("question", pa.string()), ("options", pa.list_(pa.string())), ("answer", pa.int64()),
        ("start", pa.float64()), ("end", pa.float64()), ("media", pa.string()),
        ("answer_interval", pa.list_(pa.float64())), ("metadata", pa.string()),
        ("fss", pa.float64()), ("lis", pa.float64()), ("fss_category", pa.string()), ("category", pa.string()),
    ])
    table = pa.Table.from_pylist([_flat(r) for r in records], schema=schema)
    from tempcore.tidy.formats import atomic_output

    with atomic_output(path) as fh:
        pq.write_table(table, fh)
    return path


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def build_manifest(
    diagnosis: Diagnosis,
    benchmark: str,
    source: BenchmarkSource,
    exported: list[dict[str, Any]],
    *,
    fmt: str,
    provenance: Mapping[str, Any] | None = None,
    files: Mapping[str, str] | None = None,
    created: str | None = None,
) -> dict[str, Any]:
    """The manifest of one benchmark's subset (see the module docstring)."""
    params = diagnosis.params
    scores = _scores_of(diagnosis, benchmark)
    annotated = {s.sample_id for s in source.samples}
    prov = provenance or {}
    return {
        "benchmark": benchmark,
        "format": fmt,
        "annotations": {"sha256": source.annotations_sha256, "files": list(source.source_files)},
        "video_root": None if source.video_root is None else str(Path(source.video_root).expanduser().resolve()),
        "models": list(prov.get("models") or params.get("models") or []),
        "conditions": list(prov.get("conditions") or []),
        "tau": params.get("tau"),
        "lambda": params.get("lambda"),
        "fss_mode": params.get("fss_mode"),
        "scoring": params.get("scoring"),
        "filters": params.get("filters") or {},
        "counts": dict(diagnosis.benchmarks[benchmark]),
        "exported": len(exported),
        "exported_by_category": {c: sum(1 for r in exported if r["category"] == c) for c in SENSITIVE},
        "predictions_not_in_annotations": len(set(scores) - annotated),
        "annotations_without_predictions": len(annotated - set(scores)),
        "files": dict(files or {}),
        "tempcore_version": __version__,
        "created": created or _now(),
    }


def export_tempcore(
    diagnosis: Diagnosis,
    samples_by_benchmark: Mapping[str, LoadResult | BenchmarkSource | Iterable[Sample]],
    out_dir: str | os.PathLike[str],
    format: str = "jsonl",
    *,
    table: Any = None,
    video_roots: Mapping[str, str | os.PathLike[str]] | None = None,
    created: str | None = None,
) -> list[Path]:
    """Write the TempCore subset and manifest of every benchmark in ``samples_by_benchmark``.

    ``samples_by_benchmark`` maps a benchmark name of the diagnosis to its samples: a
    :class:`~tempcore.benchmarks.LoadResult` (gives the annotations hash and files), a
    :class:`BenchmarkSource`, or any iterable of :class:`~tempcore.records.Sample`. ``table`` (the
    predictions table the diagnosis came from) adds the models and conditions to the manifests.
    ``video_roots`` overrides the video root per benchmark. Returns the paths written (data file,
    manifest, and for lmms-eval the task YAML and ``utils.py``), benchmark by benchmark.
    """
    if format not in EXPORT_FORMATS:
        raise ExportError(f"unknown export format {format!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    out = Path(out_dir)
    roots = dict(video_roots or {})
    sources = {b: BenchmarkSource.of(v, roots.get(b)) for b, v in samples_by_benchmark.items()}
    slugs: dict[str, str] = {}
    for bench in sources:
        s = slug(bench)
        if s in slugs:
            raise ExportError(f"benchmarks {slugs[s]!r} and {bench!r} would share the folder {s!r}")
        slugs[s] = bench
        _scores_of(diagnosis, bench)  # unknown benchmark -> error before anything is written
    prov = table_provenance(table, diagnosis) if table is not None else {}
    stamp = created or _now()
    written: list[Path] = []
    for bench, source in sources.items():
        records = subset_records(diagnosis, bench, source.samples)
        folder = out / slug(bench)
        name = f"tempcore_{slug(bench)}"
        files: dict[str, str] = {}
        paths: list[Path] = []
        if format == "jsonl":
            data = _atomic_write(folder / f"{name}.jsonl", _jsonl(records))
        elif format == "parquet":
            data = _write_parquet(folder / f"{name}.parquet", records)
        else:
            data = _atomic_write(folder / f"{name}.jsonl", _jsonl(_flat(r) for r in _lmms_docs(bench, records)))
            categories = [c for c in SENSITIVE if any(r["category"] == c for r in records)]
            yaml_path = _atomic_write(folder / f"{name}.yaml", lmms_eval_yaml(name, data.name, categories).encode("utf-8"))
            files["task_yaml"] = yaml_path.name
            paths.append(yaml_path)
            for file_name in TASK_FILES:
                task_file = _atomic_write(folder / file_name, task_file_source(file_name))
                key = file_name.removesuffix(".py")
                files[key] = task_file.name
                files[f"{key}_sha256"] = _sha256(task_file)
                paths.append(task_file)
        files["data"] = data.name
        files["data_sha256"] = _sha256(data)
        manifest = build_manifest(diagnosis, bench, source, records, fmt=format, provenance=prov.get(bench),
                                  files=files, created=stamp)
        manifest_path = _atomic_write(
            folder / "manifest.json", (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        )
        written += [data, *paths, manifest_path]
    return written


# --- lmms-eval task -----------------------------------------------------------------------------


def _lmms_docs(benchmark: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for r in records:
        if not r.get("options") or r.get("answer") is None:
            raise ExportError(
                f"{benchmark}: sample {r['sample_id']!r} is not a multiple-choice question; an lmms-eval "
                "task can only hold multiple-choice samples (use --format jsonl or parquet)"
            )
        if len(r["options"]) > len(LETTERS):
            raise ExportError(f"{benchmark}: sample {r['sample_id']!r} has more options than letters")
    return records


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON string syntax is a subset of it)."""
    return json.dumps(text, ensure_ascii=False)


def lmms_eval_yaml(task: str, data_file: str, categories: Sequence[str]) -> str:
    """The task YAML of an exported subset (lmms-eval conventions; see the module docstring).

    ``data_file`` is the data file's name in the task folder: lmms-eval (0.7) resolves a relative
    ``data_files`` path of a ``dataset_path: json`` task against the YAML's folder.
    """
    metrics = ["tempcore_accuracy"] + [f"tempcore_{c}_accuracy" for c in categories]
    metric_lines = "".join(
        f"  - metric: {m}\n    aggregation: !function utils.aggregate_{m[len('tempcore_'):]}\n"
        "    higher_is_better: true\n"
        for m in metrics
    )
    return (
        f"# TempCore subset written by tempcore {__version__}: the Temporally Sensitive samples only.\n"
        "# data_files is relative to this file (lmms-eval >= 0.7 resolves it against the YAML's folder), so\n"
        "# the folder can be moved or copied. Videos: manifest.json's video_root, or TEMPCORE_VIDEO_ROOT.\n"
        f"task: {task}\n"
        f"tag: {TAG}\n"
        "dataset_path: json\n"
        "dataset_kwargs:\n"
        "  data_files:\n"
        f"    test: {_q(data_file)}\n"
        "test_split: test\n"
        "output_type: generate_until\n"
        "doc_to_visual: !function utils.doc_to_visual\n"
        "doc_to_text: !function utils.doc_to_text\n"
        "doc_to_target: !function utils.doc_to_target\n"
        "process_results: !function utils.process_results\n"
        "# clustered standard errors: questions about one video are not independent\n"
        "cluster_key: video\n"
        "generation_kwargs:\n"
        "  max_new_tokens: 16\n"
        "  temperature: 0\n"
        "  top_p: 1.0\n"
        "  num_beams: 1\n"
        "  do_sample: false\n"
        f"metric_list:\n{metric_lines}"
        "lmms_eval_specific_kwargs:\n"
        "  default:\n"
        '    pre_prompt: ""\n'
        f"    post_prompt: {_q(DEFAULT_POST_PROMPT)}\n"
        "metadata:\n"
        "  - version: 0.0\n"
    )


DEFAULT_POST_PROMPT = "Answer with the option's letter from the given choices directly."

# The task's Python files: real modules of this package, copied byte for byte (the manifest keeps
# their SHA-256). utils.py reads the benchmark and video root from manifest.json next to it.
TASK_FILES = {"utils.py": "interop/lmms_task.py", "tempcore_extractor.py": "extractor.py"}


def task_file_source(name: str) -> bytes:
    """The bytes of a task file (``utils.py`` / ``tempcore_extractor.py``): the package module it copies."""
    from importlib.resources import files

    return files("tempcore").joinpath(TASK_FILES[name]).read_bytes()


__all__ = [
    "EXPORT_FORMATS",
    "BenchmarkSource",
    "ExportError",
    "build_manifest",
    "export_tempcore",
    "task_file_source",
    "lmms_eval_yaml",
    "slug",
    "subset_records",
    "table_provenance",
]
