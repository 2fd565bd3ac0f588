"""lmms-eval task functions of an exported TempCore subset (this file is copied as the task's ``utils.py``).

Written by ``tempcore export tempcore --format lmms-eval`` next to the task YAML, the subset
(``tempcore_<name>.jsonl``), ``manifest.json`` and ``tempcore_extractor.py`` (a verbatim copy of
tempcore's answer extractor). Needs neither tempcore nor lmms-eval to import: responses are parsed by
that copy, so lmms-eval scores exactly as tempcore does, with or without tempcore installed.

Docs are the subset's records: ``benchmark, sample_id, video, question, options, answer`` (0-based
index of the correct option), ``start, end, media, answer_interval, metadata`` (JSON text), ``fss,
lis, fss_category, category``.

Every metric item (what ``process_results`` returns, and what lmms-eval writes into its
``--log_samples`` file) describes its sample by itself: ``benchmark``, ``sample_id``, ``video``
(the task's ``cluster_key``: lmms-eval's clustered standard error groups questions of one video),
``options``, ``answer`` (gold index), ``target`` (gold letter), ``category``, ``response``,
``parsed`` (letter or null), ``parse_method``, ``parse_error``, ``score`` (1.0 / 0.0) and
``extractor_sha256``. ``tempcore import lmms-eval`` reads them back without any flag.

Metrics, all on one scale (fractions 0-1, like ``score``, so lmms-eval's ``_stderr_clt`` and
``_stderr_clustered`` match the value): ``tempcore_accuracy`` over the subset, and
``tempcore_<category>_accuracy`` over the documents of that category only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
CATEGORIES = ("temporally_grounded", "visual_bias")
DEFAULT_POST_PROMPT = "Answer with the option's letter from the given choices directly."


def _load_manifest() -> dict[str, Any]:
    with open(os.path.join(HERE, "manifest.json"), encoding="utf-8") as fh:
        manifest: dict[str, Any] = json.load(fh)
    return manifest


def _load_extractor() -> tuple[Any, str]:
    """The verbatim copy of tempcore's extractor next to this file (a unique module name per folder)."""
    path = os.path.join(HERE, "tempcore_extractor.py")
    with open(path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    name = f"tempcore_extractor_{digest[:16]}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load the extractor copy {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while the class is made
        spec.loader.exec_module(module)
    return module, digest


_STATE: dict[str, Any] = {}


def _state() -> dict[str, Any]:
    """manifest, extractor module and its SHA-256, read on first use (importing this file reads nothing)."""
    if not _STATE:
        extractor, digest = _load_extractor()
        _STATE.update(manifest=_load_manifest(), extractor=extractor, sha256=digest)
    return _STATE


def benchmark() -> str:
    name: str = _state()["manifest"]["benchmark"]
    return name


def video_root() -> str | None:
    """Where relative video paths resolve: ``TEMPCORE_VIDEO_ROOT`` if set, else the export's video root."""
    return os.environ.get("TEMPCORE_VIDEO_ROOT") or _state()["manifest"].get("video_root")


def video_path(doc: dict[str, Any]) -> str:
    """The sample's video: absolute as given, else joined to the video root."""
    video: str = doc["video"]
    root = video_root()
    if os.path.isabs(video) or not root:
        return video
    return os.path.join(root, video)


def doc_to_visual(doc: dict[str, Any]) -> list[str]:
    """[path of the video] (the whole file; lmms-eval models sample frames themselves)."""
    path = video_path(doc)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"TempCore subset of {benchmark()}: video of sample {doc['sample_id']} not found: {path} "
            "(set TEMPCORE_VIDEO_ROOT to the folder the videos are relative to)"
        )
    return [path]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """pre_prompt + question + one "A. text" line per option + post_prompt."""
    kwargs = lmms_eval_specific_kwargs or {}
    pre: str = kwargs.get("pre_prompt", "")
    post: str = kwargs.get("post_prompt", DEFAULT_POST_PROMPT)
    lines = [f"{LETTERS[i]}. {text}" for i, text in enumerate(doc["options"])]
    question: str = doc["question"]
    return pre + question + "\n" + "\n".join(lines) + ("\n" + post if post else "")


def doc_to_target(doc: dict[str, Any]) -> str:
    """The correct option's letter."""
    return LETTERS[int(doc["answer"])]


def parse_choice(response: str, options: Sequence[str]) -> Any:
    """tempcore's extraction of ``response``: an object with ``index`` (None on a parse failure),
    ``letter``, ``method`` and ``error``."""
    return _state()["extractor"].extract_choice(response, list(options))


def process_results(doc: dict[str, Any], results: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Score one response: 1.0 when it names the correct option; a parse failure is 0.0."""
    response = results[0] if results else ""
    if not isinstance(response, str):
        response = "" if response is None else str(response)
    extraction = parse_choice(response, doc["options"])
    gold = int(doc["answer"])
    item = {
        "benchmark": benchmark(),  # the name the predictions (and the manifest) know it by
        "sample_id": doc["sample_id"],
        "video": doc["video"],
        "options": list(doc["options"]),
        "answer": gold,
        "target": LETTERS[gold],
        "category": doc["category"],
        "response": response,
        "parsed": extraction.letter,
        "parse_method": extraction.method,
        "parse_error": extraction.error,
        "score": 1.0 if extraction.index == gold else 0.0,
        "extractor_sha256": _state()["sha256"],
    }
    out = {"tempcore_accuracy": item}
    if doc["category"] in CATEGORIES:
        # a category metric sees its own documents only: its n (and standard error) is the category's
        out[f"tempcore_{doc['category']}_accuracy"] = item
    return out


def _mean(items: Iterable[dict[str, Any]]) -> float:
    items = list(items)
    if not items:
        return float("nan")
    return sum(float(i["score"]) for i in items) / len(items)


def aggregate_accuracy(results: list[dict[str, Any]]) -> float:
    """Accuracy (fraction 0-1) over the whole subset."""
    return _mean(results)


def aggregate_temporally_grounded_accuracy(results: list[dict[str, Any]]) -> float:
    """Accuracy (fraction 0-1) over the Temporally Grounded samples (FSS > tau)."""
    return _mean(r for r in results if r["category"] == "temporally_grounded")


def aggregate_visual_bias_accuracy(results: list[dict[str, Any]]) -> float:
    """Accuracy (fraction 0-1) over the Visual Bias samples (FSS < -tau)."""
    return _mean(r for r in results if r["category"] == "visual_bias")
