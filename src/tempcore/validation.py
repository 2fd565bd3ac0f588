"""pydantic v2 validation of tempcore's configuration, with tempcore's own error messages.

The run configuration (:mod:`tempcore.run.config`) and the executor options (:mod:`tempcore.run.options`)
are pydantic dataclasses: every construction (a YAML file, a constructor call, ``dataclasses.replace``)
is validated. This module holds what they share:

* value types that check without converting (:func:`integer`, :func:`number`, :data:`Flag`,
  :data:`Text`, :func:`one_of`): a value that validates is stored as given, so configurations and the
  fingerprints derived from them stay what they were;
* :func:`guarded`, the body of each class's ``wrap`` model validator: the outermost validation turns
  pydantic's :class:`~pydantic.ValidationError` into one :class:`ConfigError` listing every problem;
* :func:`problems`, which renders pydantic's errors in tempcore's wording: the key path
  (``benchmarks[0].binary``, ``ray.models.m.replicas``), ``must be an integer >= 1, not 0``, and for
  unknown keys ``unknown key(s) ['condtions']; did you mean 'conditions'? (known: ...)``, the known
  keys being the documented names (a class's ``KEY_NAMES`` renames a field, ``HIDDEN_KEYS`` hides one).

Design notes: ``docs/design/configuration.md``.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Annotated, Any, Optional

from pydantic import PlainValidator, ValidationError
from pydantic_core import ArgsKwargs, ErrorDetails, PydanticCustomError

from tempcore.errors import TempcoreError
from tempcore.registry import did_you_mean


class ConfigError(TempcoreError):
    """The run configuration is invalid (names the file, the entry and the reason); ``problems``:
    one message per problem (key path and reason)."""

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems = list(problems) or [message]


def config_error(where: str, problems: Sequence[str], *, under: str = "") -> ConfigError:
    """One :class:`ConfigError` for ``problems`` found in ``where`` (the file, or what was built);
    ``under``: the problems are located under that key path, and a single one stands alone."""
    if under and len(problems) == 1:
        return ConfigError(problems[0], problems)
    if len(problems) == 1:
        return ConfigError(f"{where}: {problems[0]}", problems)
    return ConfigError(f"{where}: {len(problems)} problem(s):\n  " + "\n  ".join(problems), problems)


# --- value types: checked, never converted (except where a converter is asked for) ---------------

VALUE = "tempcore_value"
"""Error type of a bad value (rendered ``PATH MESSAGE``: ``k must be an integer, not '8'``)."""
RULE = "tempcore_rule"
"""Error type of a broken rule (rendered ``PATH: MESSAGE``: ``conditions[0]: condition ...``)."""


def bad_value(message: str) -> PydanticCustomError:
    return PydanticCustomError(VALUE, "{message}", {"message": message})


def broken_rule(message: str) -> PydanticCustomError:
    return PydanticCustomError(RULE, "{message}", {"message": message})


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def integer(minimum: int | None = None, *, none: bool = False) -> PlainValidator:
    """An ``int`` (not a bool, not a float, not a string), at least ``minimum`` when given; ``none``:
    or ``None``."""
    kind = "an integer" if minimum is None else f"an integer >= {minimum}"

    def check(value: object) -> int | None:
        if none and value is None:
            return None
        if not _is_int(value) or minimum is not None and typing.cast(int, value) < minimum:
            raise bad_value(f"must be {kind}, not {value!r}")
        return typing.cast(int, value)

    return PlainValidator(check)


def number(minimum: float | None = None, *, as_float: bool = False) -> PlainValidator:
    """An ``int`` or a ``float`` (not a bool), at least ``minimum`` when given; kept as given unless
    ``as_float``."""
    kind = "a number" if minimum is None else f"a number >= {minimum:g}"

    def check(value: object) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok or minimum is not None and typing.cast(float, value) < minimum:
            raise bad_value(f"must be {kind}, not {value!r}")
        return float(typing.cast(float, value)) if as_float else typing.cast(float, value)

    return PlainValidator(check)


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise bad_value(f"must be true or false, not {value!r}")
    return value


def _text(value: object) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise bad_value(f"must be a string, not {value!r}")
    return value


def one_of(*choices: str, wording: str | None = None) -> PlainValidator:
    """One of the strings ``choices`` (``must be WORDING``; default ``one of a, b``)."""
    wanted = wording or f"one of {', '.join(choices)}"

    def check(value: object) -> str:
        if not isinstance(value, str) or value not in choices:
            raise bad_value(f"must be {wanted}, not {value!r}")
        return value

    return PlainValidator(check)


Flag = Annotated[bool, PlainValidator(_flag)]
"""``true`` or ``false`` (``"yes"``, ``1`` and ``None`` are refused)."""
Text = Annotated[str, PlainValidator(_text)]
"""A string (a path-like object is taken as its path; nothing else is converted)."""
OptionalText = Annotated[Optional[str], PlainValidator(lambda v: None if v is None else _text(v))]  # noqa: UP045
"""A string or ``None``."""


# --- the outermost validation raises one ConfigError -----------------------------------------------

_DEPTH: ContextVar[int] = ContextVar("tempcore_validation_depth", default=0)


def arguments(cls: type, data: Any) -> dict[str, Any]:
    """The input of a dataclass's validation as a mapping of field names (``ArgsKwargs`` or a mapping)."""
    if isinstance(data, ArgsKwargs):
        names = [f.name for f in dataclasses.fields(cls)]
        return dict(zip(names, data.args)) | dict(data.kwargs or {})
    return dict(data) if isinstance(data, Mapping) else {}


def guarded(
    cls: type, data: Any, handler: Callable[[Any], Any], *, where: Callable[[dict[str, Any]], str],
    rules: Callable[[dict[str, Any], bool], list[str]] | None = None, under: str = "",
) -> Any:
    """Validate ``data`` with ``handler`` (a wrap model validator's), then ``rules`` (``(values,
    complete) -> problems``; ``complete`` is false when the fields failed and ``values`` are the raw
    input, so that a broken rule is reported with the other problems). Nested in another class's
    validation, errors stay pydantic's (located by the outer one); outermost, they become one
    :class:`ConfigError` for ``where(input)``."""
    depth = _DEPTH.get()
    token = _DEPTH.set(depth + 1)
    try:
        try:
            value = handler(data)
        except ValidationError as exc:
            if depth:
                raise
            raw = arguments(cls, data)
            found = problems(exc.errors(), cls, under=under) + (rules(raw, False) if rules else [])
            raise config_error(where(raw), found, under=under) from None
        broken = rules({f.name: getattr(value, f.name) for f in dataclasses.fields(cls)}, True) if rules else []
        if broken:
            if depth:
                raise broken_rule("; ".join(broken))
            raise config_error(where(arguments(cls, data)), broken, under=under)
        return value
    finally:
        _DEPTH.reset(token)


def validate(cls: type, adapter: Any, data: Any, *, where: str) -> Any:
    """``adapter.validate_python(data)`` (a :class:`~pydantic.TypeAdapter` of ``cls``), its errors as
    one :class:`ConfigError`, located under the key path ``where`` (``ray``, ``ray.encoder``)."""
    token = _DEPTH.set(_DEPTH.get() + 1)
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        raise config_error(where, problems(exc.errors(), cls, under=where), under=where) from None
    finally:
        _DEPTH.reset(token)


# --- pydantic's errors in tempcore's words ------------------------------------------------------------

_UNKNOWN = ("extra_forbidden", "unexpected_keyword_argument")
_MISSING = ("missing", "missing_argument", "missing_keyword_only_argument", "missing_positional_only_argument")
_WANTED = {
    "dict_type": "a mapping", "mapping_type": "a mapping", "dataclass_type": "a mapping",
    "dataclass_exact_type": "a mapping", "model_type": "a mapping", "tuple_type": "a list",
    "list_type": "a list", "string_type": "a string", "bool_type": "true or false",
    "int_type": "an integer", "float_type": "a number",
}


def _unwrap(tp: Any) -> Any:
    """The class or container a type stands for: ``Annotated`` stripped (a ``Schema(X)`` marker in its
    metadata: ``X``), ``X | None`` as ``X``."""
    while True:
        if typing.get_origin(tp) is Annotated:
            marker = [m for m in tp.__metadata__ if isinstance(m, Schema)]
            tp = marker[0].cls if marker else tp.__origin__
            continue
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if typing.get_origin(tp) in (typing.Union, types.UnionType) and args:
            tp = args[0]
            continue
        return tp


@dataclasses.dataclass(frozen=True)
class Schema:
    """``Annotated`` metadata: the field is validated as ``cls`` (its keys are ``cls``'s)."""

    cls: type


def keys_of(cls: type) -> dict[str, str]:
    """The input keys of a config class, ``{key: field name}``: documented names (``KEY_NAMES``,
    a field's alias), without ``HIDDEN_KEYS``."""
    renamed: Mapping[str, str] = getattr(cls, "KEY_NAMES", {})
    hidden: Sequence[str] = getattr(cls, "HIDDEN_KEYS", ())
    out = {}
    for f in dataclasses.fields(cls):
        if f.name in hidden:
            continue
        alias = getattr(getattr(cls, "__pydantic_fields__", {}).get(f.name), "alias", None)
        out[renamed.get(f.name, alias or f.name)] = f.name
    return out


def _walk(root: type, loc: Sequence[int | str]) -> tuple[list[int | str], Any]:
    """The displayed path of ``loc`` (documented key names) and the type found at its end."""
    tp: Any = root
    shown: list[int | str] = []
    for part in loc:
        tp = _unwrap(tp)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp) and isinstance(part, str):
            keys = keys_of(tp)
            name = keys.get(part, part)
            shown.append(next((k for k, v in keys.items() if v == name), part))
            hints = typing.get_type_hints(tp, include_extras=True)
            tp = hints.get(name, Any)
            continue
        shown.append(part)
        args = typing.get_args(tp)
        origin = typing.get_origin(tp)
        if origin in (tuple, list, Sequence) and args and isinstance(part, int):
            tp = args[0]
        elif origin in (dict, Mapping) and len(args) == 2:
            tp = args[1]
        else:
            tp = Any
    return shown, _unwrap(tp)


def path(parts: Sequence[int | str]) -> str:
    """``["benchmarks", 0, "binary"]`` -> ``benchmarks[0].binary``."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _joined(where: str, message: str, sep: str) -> str:
    return f"{where}{sep}{message}" if where else message


def unknown_keys(where: str, unknown: Sequence[str], known: Sequence[str]) -> str:
    """``where: unknown key(s) ['x']; did you mean 'y'? (known: a, b)``."""
    if len(unknown) == 1:
        hints = did_you_mean(unknown[0], known, n=1)
    else:
        hints = "".join(f"; {k!r}: did you mean {did_you_mean(k, known, n=1)[len('; did you mean '):]}"
                        for k in unknown if did_you_mean(k, known, n=1))
    return _joined(where, f"unknown key(s) {list(unknown)}{hints} (known: {', '.join(known)})", ": ")


def problems(errors: Sequence[ErrorDetails], root: type, *, under: str = "") -> list[str]:
    """One message per problem of pydantic's ``errors`` (validating ``root``, whose keys are under the
    key path ``under``), in their order; the unknown (missing) keys of one mapping are one message."""

    def located(parts: Sequence[int | str]) -> str:
        inner = path(parts)
        if not under:
            return inner
        return under + inner if inner.startswith("[") else ".".join(p for p in (under, inner) if p)

    out: list[str] = []
    unknown: dict[tuple[int | str, ...], list[str]] = {}
    missing: dict[tuple[int | str, ...], list[str]] = {}
    slots: dict[tuple[str, tuple[int | str, ...]], int] = {}
    for e in errors:
        loc = tuple(e["loc"])
        kind = e["type"]
        if kind in _UNKNOWN or kind in _MISSING:
            group = unknown if kind in _UNKNOWN else missing
            parent = loc[:-1]
            if ("u" if group is unknown else "m", parent) not in slots:
                slots["u" if group is unknown else "m", parent] = len(out)
                out.append("")
            group.setdefault(parent, []).append(str(loc[-1]))
            continue
        shown, _ = _walk(root, loc)
        where = located(shown)
        if kind == VALUE:
            out.append(_joined(where, e["msg"], " "))
        elif kind == RULE:
            out.append(_joined(where, e["msg"], ": "))
        elif kind in _WANTED:
            out.append(_joined(where, f"must be {_WANTED[kind]}, not {e['input']!r}", " "))
        else:
            out.append(_joined(where, f"{e['msg'][:1].lower()}{e['msg'][1:]} (got {e['input']!r})", ": "))
    for (what, parent), slot in slots.items():
        shown, tp = _walk(root, parent)
        known = list(keys_of(tp)) if isinstance(tp, type) and dataclasses.is_dataclass(tp) else []
        if what == "u":
            out[slot] = unknown_keys(located(shown), unknown[parent], known)
        else:
            names = [next((k for k, v in keys_of(tp).items() if v == n), n) if known else n for n in missing[parent]]
            out[slot] = _joined(located(shown), "needs " + " and ".join(repr(n) for n in names), ": ")
    return out


__all__ = [
    "ConfigError", "Flag", "OptionalText", "Schema", "Text", "bad_value", "broken_rule", "config_error",
    "guarded", "integer", "keys_of", "number", "one_of", "path", "problems", "unknown_keys", "validate",
]
