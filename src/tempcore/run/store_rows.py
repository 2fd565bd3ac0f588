"""How a :class:`~tempcore.records.Prediction` becomes a row of the run store (:mod:`tempcore.run.store`)
and back, and the store's errors: a damaged row (:func:`damaged_row_error`) and a key stored with
another identity (:class:`FingerprintConflictError`)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from tempcore.errors import TempcoreError
from tempcore.records import FrameSet, Prediction
from tempcore.tidy.schema import KEY_COLUMNS, STORE_COLUMNS


class StoreError(TempcoreError):
    """The run store cannot be opened or written (names the file and the reason)."""


class FingerprintConflictError(StoreError):
    """A prediction's key is stored with another sample hash, model or encoder fingerprint: two
    configurations sharing a store gave one name to two different things (names both)."""


_IDENTITY_NAMES = ("sample hash", "model fingerprint", "encoder fingerprint")


class FloatText(dict[float, str]):
    """``float -> repr(float)``, filled on first use: :func:`frames_json` of many FrameSets of the
    same videos (the identity check's) formats each timestamp once."""

    def __missing__(self, value: float) -> str:
        text = self[value] = repr(value)
        return text


def frames_json(f: FrameSet, floats: FloatText | None = None) -> str:
    """The stored ``frames`` JSON of a FrameSet (compact, keys in this order). Built by hand, byte
    for byte what ``json.dumps({"indices": .., "timestamps": .., "requested": .., "grey": ..},
    separators=(",", ":"))`` gives, about 4x faster (the run's identity check builds one per stored
    key; ``floats`` memoises the timestamps' text across calls); a timestamp that JSON cannot hold
    (NaN, inf) goes through :func:`json.dumps` as before."""
    stamps = ",".join(map(repr if floats is None else floats.__getitem__, f.timestamps))
    if "n" not in stamps:  # finite floats repr as JSON does (digits, '.', 'e', '-'); nan / inf have an 'n'
        return (f'{{"indices":[{",".join(map(str, f.indices))}],"timestamps":[{stamps}],'
                f'"requested":{int(f.requested)},"grey":{"true" if f.grey else "false"}}}')
    data = {"indices": list(f.indices), "timestamps": list(f.timestamps), "requested": f.requested, "grey": f.grey}
    return json.dumps(data, separators=(",", ":"))


_frames_json = frames_json  # its old private name


def _prediction_row(p: Prediction) -> tuple[Any, ...]:
    """The store row of ``p``, in :data:`tempcore.tidy.schema.STORE_COLUMNS` order."""
    out = []
    for c in STORE_COLUMNS:
        value = getattr(p, c.name)
        if c.name == "frames":
            value = None if value is None else _frames_json(value)
        elif c.name == "option_probs":
            value = None if value is None else json.dumps(list(value), separators=(",", ":"))
        elif c.name == "correct":
            value = int(value)
        elif c.name == "latency_s":
            value = float(value)
        out.append(value)
    return tuple(out)


def damaged_row_error(key: Sequence[Any], what: str, store: str | os.PathLike[str] | None = None) -> StoreError:
    """The named error of one damaged stored prediction: its key, what is wrong, and how to repair it
    (the other rows are untouched)."""
    b, sid, model, cond = (str(x) for x in key[:4])
    where = f"{store}: " if store is not None else ""
    return StoreError(
        f"{where}stored prediction {(b, sid, model, cond)} is damaged: {what}. The other rows are intact; "
        f"replace this one (tempcore run --recompute, or tempcore import table --overwrite) or delete it: "
        f"sqlite3 STORE \"DELETE FROM predictions WHERE benchmark = '{b}' AND sample_id = '{sid}' "
        f"AND model = '{model}' AND condition = '{cond}'\""
    )


def row_to_prediction(row: Mapping[str, Any]) -> Prediction:
    """A :class:`Prediction` from a row of :meth:`RunStore.prediction_rows`; a damaged row (unreadable
    JSON, numbers a Prediction refuses) raises :func:`damaged_row_error`'s :class:`StoreError`."""
    try:
        return _row_to_prediction(row)
    except (ValueError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
        raise damaged_row_error([row[k] for k in KEY_COLUMNS], str(exc)) from exc


def _row_to_prediction(row: Mapping[str, Any]) -> Prediction:
    kwargs: dict[str, Any] = {}
    for c in STORE_COLUMNS:
        value = row[c.name]
        if c.name == "frames":
            value = None if value is None else FrameSet.from_dict(json.loads(value))
        elif c.name == "option_probs":
            value = None if value is None else tuple(float(x) for x in json.loads(value))
        elif c.name == "correct":
            value = int(value)
        elif c.name == "latency_s":
            value = float(value)
        kwargs[c.name] = value
    return Prediction(**kwargs)
