"""The identity of a prediction: what decided it, as fingerprints stored with it.

A prediction is *keyed* by (benchmark, sample id, model name, condition key). Its *fingerprint* is
everything else that decided it; ``tempcore run`` reuses a stored prediction only when all of these
match the run's (why each field is in or out: ``docs/design/run.md``):

``sample_hash``  (:func:`sample_identity`)
    The sample's content: question, options in order, answer index, answer interval, segment
    (start / end), media kind, and its video's *content* hash (SHA-256 of the file's bytes, of every
    file of a frame folder: :func:`tempcore.encoders.cache.content_hash`), so a benchmark copied
    elsewhere keeps its fingerprints and a video rewritten in place changes them. A missing video
    has the identity ``"missing"`` (when it appears, the sample's no-frame rows change too). Not
    included: the sample id (it is in the key) and ``metadata``.
``model_fingerprint``  (:func:`model_identity`)
    What of the model entry can change an answer: the fields of :data:`MODEL_FIELDS` (backend,
    model id, revision, dtype, generation and image settings, system prompt...), the answer method,
    the prompt template actually rendered, the chat template when known without loading the model
    and the run's no-frame image size.
    Left out: display name, preset name, device, batching, concurrency, timeouts, retries,
    ``api_key_env`` and ``base_url`` (another server with another model needs another ``name`` or
    ``revision``). Secrets never enter the data.
``encoder_fingerprint``
    For score-based strategies (maxprob, minprob, aks, bolt and their variants) the encoder's own
    ``fingerprint`` (weights, image preprocessing, dtype), ``None`` otherwise.

The condition key itself (strategy, mode, K, window, fps, seed, rotation, variant) is part of the key.
A condition's ``params`` are in neither: the run compares each stored row's ``frames`` (and a
grounding row's ``prompt_hash``) with what its planned work item shows
(:func:`tempcore.run.resume._check_identity`).

Fingerprints are 32 hex digits of the SHA-256 of the canonical JSON of the data (sorted keys). The
data behind each fingerprint is kept in the store's ``fingerprints`` table so that a rerun can say
what changed (:func:`describe_model_change`, :func:`describe_sample_change`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tempcore.records import Sample

FINGERPRINT_LENGTH = 32
MISSING_VIDEO = "missing"

#: ModelSpec fields that decide an answer (see the module docstring for those left out).
MODEL_FIELDS = (
    "backend", "model", "revision", "dtype", "trust_remote_code", "max_new_tokens", "max_image_side",
    "image_size", "max_frames", "generation_kwargs", "processor_kwargs", "system_prompt",
    "score_option_text", "extra",
)
_LABELS = {
    "backend": "backend", "model": "model id", "revision": "revision", "dtype": "dtype",
    "trust_remote_code": "trust_remote_code", "max_new_tokens": "max_new_tokens",
    "max_image_side": "max_image_side", "image_size": "image_size", "max_frames": "max_frames",
    "generation_kwargs": "generation settings", "processor_kwargs": "processor settings",
    "system_prompt": "system prompt", "score_option_text": "score_option_text", "extra": "backend options",
    "method": "answer method", "prompt_template": "prompt template", "chat_template": "chat template",
    "noframe_size": "no-frame image size",
    "question": "question", "options": "options", "answer": "answer", "answer_interval": "answer interval",
    "answer_windows": "answer windows",
    "segment": "segment", "media": "media", "video": "video",
}


def fingerprint(data: Mapping[str, Any]) -> str:
    """32 hex digits of the SHA-256 of ``data`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:FINGERPRINT_LENGTH]


def sample_identity(sample: Sample, video_id: str | None) -> dict[str, Any]:
    """What of ``sample`` decides an answer; ``video_id`` is the video's content hash or ``None`` (missing)."""
    data: dict[str, Any] = {
        "question": sample.question,
        "options": list(sample.options),
        "answer": sample.answer,
        "answer_interval": None if sample.answer_interval is None else list(sample.answer_interval),
        "segment": [sample.start, sample.end],
        "media": sample.media,
        "video": video_id or MISSING_VIDEO,
    }
    # Every ground-truth window decides a grounding score (QVHighlights has several). Only a sample
    # with more than its first window carries the key, so that the hash of every other sample (and
    # every store written before windows were fingerprinted) stays what it was.
    if len(sample.answer_windows) > 1:
        data["answer_windows"] = [list(w) for w in sample.answer_windows]
    return data


def model_identity(
    spec: Any,
    *,
    method: str,
    template: Any,
    noframe_size: int,
    chat_template: str | None = None,
) -> dict[str, Any]:
    """What of a model entry decides its answers (``spec`` a :class:`tempcore.models.ModelSpec`,
    ``template`` the :class:`tempcore.prompts.PromptTemplate` the runner renders)."""
    from tempcore.run.store import redact_secrets

    data = {name: _plain(spec.setting(name)) for name in MODEL_FIELDS}  # the backend's or UNSET_SETTINGS
    data["method"] = method
    data["prompt_template"] = {"name": template.name, "text": template.text, "option_format": template.option_format}
    data["chat_template"] = chat_template
    data["noframe_size"] = int(noframe_size)
    redacted: dict[str, Any] = redact_secrets(data)
    return redacted


def local_chat_template(model: str) -> str | None:
    """The chat template of a local checkpoint folder, when it has one (read, never executed)."""
    folder = Path(os.path.expanduser(model))
    if not folder.is_dir():
        return None
    for name in ("chat_template.jinja", "chat_template.json"):
        f = folder / name
        if f.is_file():
            return f.read_text(encoding="utf-8", errors="replace")
    cfg = folder / "tokenizer_config.json"
    if cfg.is_file():
        try:
            value = json.loads(cfg.read_text(encoding="utf-8")).get("chat_template")
        except (OSError, ValueError, AttributeError):
            return None
        return None if value is None else json.dumps(value, sort_keys=True)
    return None


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def changed_fields(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[str]:
    """Readable names of the entries that differ between two identities (``old`` unknown: ``[]``)."""
    if old is None:
        return []
    names = sorted(set(old) | set(new), key=lambda n: list(_LABELS).index(n) if n in _LABELS else 99)
    return [_LABELS.get(n, n) for n in names if old.get(n) != new.get(n)]


def describe_model_change(model: str, old: Mapping[str, Any] | None, new: Mapping[str, Any], n: int) -> str:
    """``"model qwen3-vl-8b: prompt template changed (400 stored predictions)"``."""
    what = changed_fields(old, new)
    if old is None:
        reason = "entry changed (the stored fingerprint's details are not in this store)"
    else:
        reason = (" and ".join([", ".join(what[:-1]), what[-1]]) if len(what) > 1 else what[0]) + " changed" \
            if what else "entry changed"
    return f"model {model}: {reason} ({n} stored prediction{'s' if n != 1 else ''})"


def describe_sample_change(benchmark: str, changes: Mapping[str, list[str]], n_rows: int) -> str:
    """``"videomme: 37 samples changed their question or options (2220 stored predictions)"``.

    ``changes`` maps sample id -> the changed fields of that sample."""
    fields: list[str] = []
    for what in changes.values():
        for f in what or ["content"]:
            if f not in fields:
                fields.append(f)
    order = [v for v in _LABELS.values()]
    fields.sort(key=lambda f: order.index(f) if f in order else 99)
    n = len(changes)
    joined = fields[0] if len(fields) == 1 else ", ".join(fields[:-1]) + " or " + fields[-1]
    return (f"{benchmark}: {n} sample{'s' if n != 1 else ''} changed {'its' if n == 1 else 'their'} {joined} "
            f"({n_rows} stored prediction{'s' if n_rows != 1 else ''})")


__all__ = [
    "FINGERPRINT_LENGTH",
    "MODEL_FIELDS",
    "changed_fields",
    "describe_model_change",
    "describe_sample_change",
    "fingerprint",
    "local_chat_template",
    "model_identity",
    "sample_identity",
]
