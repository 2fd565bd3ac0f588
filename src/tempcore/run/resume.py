"""Resuming a run: the identity check of what is stored against what would be asked now.

Every stored prediction carries the fingerprints of what decided it (:mod:`tempcore.run.identity`:
the sample, the model entry, the prompt, the encoder); before answering, :func:`_check_identity`
compares them with the planned work items, so a stored result whose inputs changed is never served:
the run names what changed and asks again only what must be asked again.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tempcore.run.config import RunConfig
from tempcore.run.executor import Identity
from tempcore.run.frames import _load_frames as _load_frames
from tempcore.run.planning import (
    BenchmarkPlan,
    RunError,
    WorkItem,
)
from tempcore.run.planning import damage_of as _damage_of  # noqa: F401  (its old private name)
from tempcore.run.predictions import _request as _request

if TYPE_CHECKING:
    pass


from tempcore.run.outputs import _condition_label


def _model_identity(cfg: RunConfig, spec: Any, method: str, encoder: Any | None) -> tuple[Identity, dict[str, Any]]:
    from tempcore.prompts import get_template
    from tempcore.run.identity import fingerprint, local_chat_template, model_identity

    data = model_identity(spec, method=method, template=get_template(cfg.prompt or spec.prompt_template),
                          noframe_size=cfg.noframe_size, chat_template=local_chat_template(spec.model))
    enc = getattr(encoder, "fingerprint", None) if cfg.needs_encoder else None
    return Identity(fingerprint(data), None if enc is None else str(enc),
                    grounding_fingerprint=fingerprint(grounding_identity(data))), data


def grounding_identity(data: dict[str, Any]) -> dict[str, Any]:
    """A model's identity (:func:`tempcore.run.identity.model_identity`) for its grounding requests: the
    template those render instead of its own (:func:`tempcore.grounding.answer.grounding_prompt`:
    its own when it is a grounding template, else the built-in ``grounding``), so a changed
    grounding prompt is never served from the store."""
    from tempcore.prompts import get_template

    own = get_template(str(data["prompt_template"]["name"]))
    used = own if own.kind == "grounding" else get_template("grounding")
    return {**data, "prompt_template": {"name": used.name, "text": used.text, "option_format": used.option_format}}


def _check_identity(
    store: Any,
    plans: list[BenchmarkPlan],
    items: list[WorkItem],
    specs: list[tuple[Any, str]],
    identities: list[tuple[Identity, dict[str, Any]]],
    *,
    recompute: bool,
    templates: list[str] | None = None,
    also: Sequence[tuple[str, int]] = (),
) -> dict[str, set[tuple[str, str, str, str]]]:
    """The stored keys of this run that were asked something else than this run would ask, per model.

    A stored prediction matches its planned :class:`WorkItem` when (1) its fingerprints are the
    run's (sample, model entry, encoder: :mod:`tempcore.run.identity`), (2) it was shown the frames the
    item shows (the stored ``frames``: indices, timestamps, K requested, grey, against
    ``WorkItem.frames``), which catches every change of a condition's ``params`` that moves its
    frames under the same condition key (the oracle's ``stride`` / ``max_windows``, a strategy
    plug-in's own), and (3) it was asked the prompt the item renders (the stored ``prompt_hash``
    against :func:`tempcore.run.predictions.request_prompt` with the model's template ``templates[i]``,
    default ``spec.prompt_template``): the option order, the frame times and a grounding item's
    shown spans and duration, which no fingerprint holds. A row that does not record its frames
    or its prompt (imported without them) cannot be checked and does not match. Visual-option
    items are checked by fingerprint only: their frames and prompt are built from the sample's
    metadata, which its fingerprint holds (:func:`tempcore.run.visual.visual_identity`).

    Without ``recompute`` any such key stops the run (a :class:`RunError` that says what changed and
    for how many stored predictions) before any model is loaded; with it they are returned to be
    replaced. ``also``: (message, rows) of other changed stored rows the run replaces (the retrieval
    baseline's), named in the same message."""
    from tempcore.prompts import prompt_hash
    from tempcore.run.identity import changed_fields, describe_model_change, describe_sample_change
    from tempcore.run.predictions import request_prompt
    from tempcore.run.store import FloatText, frames_json
    from tempcore.run.visual import VISUAL_STRATEGY

    new_samples = {(p.name, sid): data for p in plans for sid, (_d, data) in p.sample_identity.items()}
    replace: dict[str, set[tuple[str, str, str, str]]] = {}
    messages: list[str] = []
    sample_changes: dict[str, dict[str, list[str]]] = defaultdict(dict)
    sample_rows: Counter[str] = Counter()
    planned_frames: dict[int, str] = {}  # item index -> frames_json (the same for every model)
    floats = FloatText()  # the timestamps' JSON text, each formatted once
    planned_prompts: dict[tuple[str, int], str] = {}  # (template, item index) -> prompt hash

    def prompt_of(item: WorkItem, template: str) -> str:
        return prompt_hash(request_prompt(item, template))

    def planned_json(frames: Any) -> str:
        return frames_json(frames, floats)

    for m, ((spec, _method), (ident, data)) in enumerate(zip(specs, identities)):
        name = spec.display_name
        template = templates[m] if templates is not None else spec.prompt_template
        expected = {
            (it.sample.benchmark, it.sample.sample_id, name, it.condition.key):
                (i, (it.sample_hash, ident.model_for(it), ident.encoder_for(it.condition)))
            for i, it in enumerate(items)
        }
        new_data = {ident.model_fingerprint: data, ident.grounding_fingerprint: grounding_identity(data)}
        stored = store.stored_requests(list(expected))
        changed: set[tuple[str, str, str, str]] = set()
        by_model: Counter[tuple[str, str]] = Counter()
        by_encoder = 0
        old_samples: dict[tuple[str, str], str] = {}
        asked: dict[str, Counter[str]] = {"frames": Counter(), "prompt": Counter(), "unrecorded": Counter()}
        for key, row in stored.items():
            i, want = expected[key]
            sh, mf, ef = row[:3]
            if (sh, mf, ef) != want:
                want_sh, want_mf, want_ef = want
                changed.add(key)
                if mf != want_mf:
                    by_model[(mf, want_mf)] += 1
                if ef != want_ef and mf:
                    by_encoder += 1
                if sh != want_sh and sh:
                    old_samples[(key[0], key[1])] = sh
                    sample_rows[key[0]] += 1
                continue
            it = items[i]
            if it.condition.strategy == VISUAL_STRATEGY:
                continue
            what = _request_change(row, it, i, template, planned_frames, planned_prompts,
                                   frames_json=planned_json, prompt_of=prompt_of)
            if what is not None:
                changed.add(key)
                asked[what][_condition_label(it.condition)] += 1
        replace[name] = changed
        old_model = store.fingerprint_data([mf for mf, _want in by_model])
        for (mf, want_mf), n in sorted(by_model.items()):
            if not mf:
                messages.append(f"model {name}: {n} stored prediction{'s' if n != 1 else ''} carry no fingerprint "
                                "(stored before store schema v2, or imported without one)")
            else:
                messages.append(describe_model_change(name, old_model.get(mf), new_data.get(want_mf, data), n))
        if by_encoder:
            messages.append(f"model {name}: the encoder changed (fingerprint) for {by_encoder} stored "
                            f"prediction{'s' if by_encoder != 1 else ''} of score-based conditions")
        for what, reason in _REQUEST_CHANGES.items():
            for label, n in sorted(asked[what].items()):
                messages.append(f"model {name}: {n} stored prediction{'s' if n != 1 else ''} of condition {label} "
                                f"{'were' if n != 1 else 'was'} {reason}")
        old_data = store.fingerprint_data(set(old_samples.values()))
        for (bench, sid), sh in old_samples.items():
            sample_changes[bench][sid] = changed_fields(old_data.get(sh), new_samples.get((bench, sid), {}))
    for bench, changes in sorted(sample_changes.items()):
        messages.insert(0, describe_sample_change(bench, changes, sample_rows[bench]))
    messages.extend(message for message, _n in also)
    total = sum(len(v) for v in replace.values()) + sum(n for _m, n in also)
    if total and not recompute:
        raise RunError(
            "stored predictions do not match this run (nothing was answered):\n  "
            + "\n  ".join(messages)
            + f"\nrerun with --recompute to replace exactly these {total} stored predictions, or use another --out"
        )
    return replace


#: what :func:`_request_change` found, as the identity check's message says it
_REQUEST_CHANGES = {
    "frames": "shown other frames (the condition's params changed?)",
    "prompt": "asked another prompt (the option order, the frame times or the span shown changed?)",
    "unrecorded": "stored without a record of the frames shown or the prompt asked (imported?): it cannot be "
                  "checked",
}


def _request_change(
    row: Any, item: WorkItem, index: int, template: str, planned_frames: dict[int, str],
    planned_prompts: dict[tuple[str, int], str], *, frames_json: Callable[[Any], str],
    prompt_of: Callable[[WorkItem, str], str],
) -> str | None:
    """``None`` when a stored row (:class:`tempcore.run.store.StoredRequest`) was asked what ``item``
    asks, else which part differs: ``frames``, ``prompt`` or ``unrecorded`` (see :data:`_REQUEST_CHANGES`).

    The frames compare as stored text first (what :func:`tempcore.run.store.frames_json` writes; one
    string comparison per row), then, when the texts differ, as values (a store written by another
    serialiser); the prompt hash is computed only for rows whose frames match."""
    from tempcore.records import FrameSet

    if row.frames is None or not row.prompt_hash:
        return "unrecorded"
    want = planned_frames.get(index)
    if want is None:
        want = planned_frames[index] = frames_json(item.frames)
    if row.frames != want:
        try:
            same = FrameSet.from_dict(json.loads(row.frames)) == item.frames
        except (ValueError, TypeError, KeyError):
            same = False
        if not same:
            return "frames"
    if not _prompt_has_more(item):
        return None
    digest = planned_prompts.get((template, index))
    if digest is None:
        digest = planned_prompts[(template, index)] = prompt_of(item, template)
    return None if row.prompt_hash == digest else "prompt"


def _prompt_has_more(item: WorkItem) -> bool:
    """Whether an item's prompt holds inputs that neither a fingerprint nor its frames hold, so that
    the identity check compares its stored ``prompt_hash``: a grounding item's (its duration, L
    frames at the fps, and the spans shown, on which its frame times are given). A multiple-choice
    prompt is the question and the options (the sample's fingerprint) in the order of the key's
    rotation, the template (the model's fingerprint) and the frames' timestamps (compared as frames):
    rendering it again for every stored row would cost ~25 us a row (2.5 s per 100k) and find nothing."""
    from tempcore.run.baseline import is_grounding

    return is_grounding(item.sample)
