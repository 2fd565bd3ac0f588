"""One way to plug things in: a small generic registry of named things, and one "did you mean".

Every kind of thing tempcore looks up by name — benchmark formats, selection strategies, frame-text
encoders, model backends, model presets, prompt templates — lives in a :class:`Registry`:

- an entry is either the object itself (:meth:`Registry.register`, also usable as a decorator) or a
  lazy ``"package.module:attr"`` reference (:meth:`Registry.register_lazy`), imported on first
  lookup, so ``import tempcore`` never imports torch, transformers, httpx or vllm;
- a resolved entry is checked once (``base``: it must be that class or a subclass / an instance;
  ``check``: any further test), so a wrong plug-in fails when it is looked up, naming it;
- one collision policy: registering a name again with the *same* target is a no-op, a *different*
  target is refused unless ``replace=True``;
- :meth:`Registry.freeze` refuses every later registration;
- each registry reads a Python entry-point group (:data:`GROUPS`) on its first lookup, so another
  installed package adds a benchmark, strategy or model backend by declaring, in its
  ``pyproject.toml``::

      [project.entry-points."tempcore.strategies"]
      mystrategy = "mypackage.selection:mystrategy"

  An entry point is a lazy entry under the entry point's name, subject to the same collision policy.
  tempcore's own synthetic world plugs in its ``zoo`` backend and ``tempcore-world`` encoder this way.

Unknown names raise the registry's own error (each kind keeps its named error), with close names
suggested by :func:`did_you_mean`, the one suggestion helper of the package.
"""

from __future__ import annotations

import difflib
import importlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from tempcore.errors import TempcoreError

T = TypeVar("T")

GROUPS: Mapping[str, str] = {
    "benchmarks": "tempcore.benchmarks",
    "strategies": "tempcore.strategies",
    "encoders": "tempcore.encoders",
    "models": "tempcore.models",
    "presets": "tempcore.presets",
    "templates": "tempcore.templates",
    "analyses": "tempcore.analyses",
}
"""Entry-point group of each registry kind (``[project.entry-points."tempcore.models"]`` ...)."""


def suggest(name: object, known: Iterable[str], *, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The names of ``known`` closest to ``name`` (best first; :func:`difflib.get_close_matches`)."""
    return difflib.get_close_matches(str(name), list(known), n=n, cutoff=cutoff)


def did_you_mean(
    name: object,
    known: Iterable[str],
    *,
    n: int = 3,
    cutoff: float = 0.6,
    quote: bool = True,
) -> str:
    """``"; did you mean 'a' or 'b'?"`` for the close names of ``known``, or ``""`` when none is close.

    ``quote=False`` leaves the names unquoted (``"; did you mean a or b?"``).
    """
    return hint(suggest(name, known, n=n, cutoff=cutoff), quote=quote)


def hint(close: Iterable[str], *, quote: bool = True) -> str:
    """``"; did you mean 'a' or 'b'?"`` for names already chosen (``""`` for none)."""
    names = [repr(c) if quote else c for c in close]
    return "; did you mean " + " or ".join(names) + "?" if names else ""


class RegistryError(TempcoreError, ValueError):
    """A registration refused (bad name, collision, frozen registry) or a plug-in that is not valid."""


class UnknownNameError(TempcoreError, KeyError):
    """A name no registry entry has (the default error of :meth:`Registry.get`)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@dataclass(frozen=True)
class Lazy:
    """A lazy entry: ``"package.module:attr"`` (dotted attributes allowed), imported on first use."""

    target: str

    def __post_init__(self) -> None:
        module, sep, attr = self.target.partition(":")
        if not sep or not module or not attr:
            raise RegistryError(f"a lazy entry is 'package.module:attr', not {self.target!r}")

    def load(self) -> Any:
        module_name, _, attr = self.target.partition(":")
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj


_MISSING: Any = object()


class Registry(Mapping[str, T], Generic[T]):
    """Named things of one ``kind``: a read-only mapping ``name -> thing`` that loads lazily.

    ``group``: the entry-point group read on the first lookup (``None``: none). ``base``: a class
    every entry must be (a subclass of, when the entry is a class; an instance of, otherwise).
    ``check(name, obj)`` raises for an invalid entry. ``unknown(name, known)`` builds the error for
    an unknown name (default :class:`UnknownNameError` with suggestions). ``error`` is the class of
    registration errors (default :class:`RegistryError`). ``valid_name(name)`` may refuse a bad name
    by raising. Iteration is in registration order.
    """

    def __init__(
        self,
        kind: str,
        *,
        group: str | None = None,
        base: type | None = None,
        check: Callable[[str, Any], None] | None = None,
        unknown: Callable[[str, list[str]], Exception] | None = None,
        error: Callable[[str], Exception] = RegistryError,
        valid_name: Callable[[str], None] | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self.base = base
        self._check = check
        self._unknown = unknown
        self._error = error
        self._valid_name = valid_name
        self._entries: dict[str, Any] = {}  # name -> object or Lazy
        self._resolved: dict[str, T] = {}
        self._meta: dict[str, dict[str, Any]] = {}
        self._frozen = False
        self._entry_points_read = group is None
        self._lock = threading.RLock()

    # --- registering -------------------------------------------------------------------

    @overload
    def register(self, name: str, obj: None = None, *, replace: bool = ..., **meta: Any) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, obj: T, *, replace: bool = ..., **meta: Any) -> T: ...

    def register(self, name: str, obj: Any = None, *, replace: bool = False, **meta: Any) -> Any:
        """Register ``obj`` under ``name`` and return it; without ``obj``, a decorator doing that.

        ``meta`` (e.g. ``description=...``) is kept beside the entry (:meth:`meta`).
        """
        if obj is None:

            def decorator(thing: T) -> T:
                self._add(name, thing, replace=replace, meta=meta)
                return thing

            return decorator
        self._add(name, obj, replace=replace, meta=meta)
        return obj

    def register_lazy(self, name: str, target: str, *, replace: bool = False, **meta: Any) -> None:
        """Register ``"package.module:attr"`` under ``name``; it is imported when first looked up."""
        try:
            lazy = Lazy(target)
        except RegistryError as exc:
            raise self._error(f"{self.kind} {name!r}: {exc}") from None
        self._add(name, lazy, replace=replace, meta=meta)

    def _add(self, name: str, entry: Any, *, replace: bool, meta: Mapping[str, Any]) -> None:
        with self._lock:
            if self._frozen:
                raise self._error(f"the {self.kind} registry is frozen; {name!r} cannot be registered")
            if not isinstance(name, str) or not name:
                raise self._error(f"a {self.kind} name is a non-empty string, not {name!r}")
            if self._valid_name is not None:
                self._valid_name(name)
            old = self._entries.get(name, _MISSING)
            if old is not _MISSING and not replace:
                if _same(old, entry):
                    return
                raise self._error(
                    f"{self.kind} {name!r} is already registered as {_describe(old)} "
                    f"(pass replace=True to replace it)"
                )
            self._entries[name] = entry
            self._resolved.pop(name, None)
            self._meta[name] = dict(meta)

    def unregister(self, name: str) -> None:
        """Remove ``name`` (for tests and interactive use; refused once frozen)."""
        with self._lock:
            if self._frozen:
                raise self._error(f"the {self.kind} registry is frozen; {name!r} cannot be removed")
            self._entries.pop(name, None)
            self._resolved.pop(name, None)
            self._meta.pop(name, None)

    def freeze(self) -> None:
        """Refuse every later registration (entry points are read first, so none is lost)."""
        self._read_entry_points()
        self._frozen = True

    @property
    def frozen(self) -> bool:
        return self._frozen

    # --- entry points ------------------------------------------------------------------

    def _read_entry_points(self) -> None:
        if self._entry_points_read or self.group is None:  # no group: nothing to read
            return
        with self._lock:
            if self._entry_points_read:
                return
            from importlib.metadata import entry_points

            for ep in entry_points(group=self.group):
                target = ep.value.split("[", 1)[0].strip()
                dist = getattr(getattr(ep, "dist", None), "name", None) or "an installed package"
                try:
                    lazy = Lazy(target)
                except RegistryError:
                    raise self._error(
                        f"entry point {ep.name!r} of {dist} (group {self.group}): "
                        f"{target!r} is not 'package.module:attr'"
                    ) from None
                old = self._entries.get(ep.name, _MISSING)
                if old is not _MISSING and not _same(old, lazy):
                    raise self._error(
                        f"entry point {ep.name!r} of {dist} (group {self.group}) names {target!r}, "
                        f"but {self.kind} {ep.name!r} is already registered as {_describe(old)}"
                    )
                if self._valid_name is not None:
                    self._valid_name(ep.name)
                self._entries.setdefault(ep.name, lazy)
                self._meta.setdefault(ep.name, {"entry_point": dist})
            self._entry_points_read = True

    def reload_entry_points(self) -> None:
        """Read the entry-point group again (after installing a package in a running process)."""
        self._entry_points_read = self.group is None
        self._read_entry_points()

    # --- looking up --------------------------------------------------------------------

    def get(self, name: str, default: Any = _MISSING) -> Any:
        """The thing called ``name`` (imported and checked on first use).

        An unknown name returns ``default`` when one is given, else raises the registry's
        unknown-name error (with close names suggested).
        """
        self._read_entry_points()
        entry = self._entries.get(name, _MISSING) if isinstance(name, str) else _MISSING
        if entry is _MISSING:
            if default is not _MISSING:
                return default
            raise self._unknown_error(name)
        if name in self._resolved:
            return self._resolved[name]
        obj = entry
        if isinstance(entry, Lazy):
            try:
                obj = entry.load()  # an ImportError (a missing optional dependency) propagates as is
            except AttributeError as exc:
                raise self._error(f"{self.kind} {name!r}: cannot load {entry.target!r} ({exc})") from exc
        self._validate(name, obj)
        with self._lock:
            if self._entries.get(name) is entry:
                self._resolved[name] = obj
        return obj

    def __getitem__(self, name: str) -> T:
        return self.get(name)  # type: ignore[no-any-return]

    def _validate(self, name: str, obj: Any) -> None:
        if self.base is not None:
            ok = issubclass(obj, self.base) if isinstance(obj, type) else isinstance(obj, self.base)
            if not ok:
                raise self._error(
                    f"{self.kind} {name!r}: {obj!r} is not a {self.base.__module__}.{self.base.__qualname__}"
                )
        if self._check is not None:
            self._check(name, obj)

    def _unknown_error(self, name: object) -> Exception:
        known = self.names()
        if self._unknown is not None:
            return self._unknown(str(name), known)
        return UnknownNameError(
            f"unknown {self.kind} {name!r}{did_you_mean(name, known)} (known: {', '.join(known)})"
        )

    def __contains__(self, name: object) -> bool:
        self._read_entry_points()
        return isinstance(name, str) and name in self._entries

    def __iter__(self) -> Iterator[str]:
        self._read_entry_points()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self._read_entry_points()
        return len(self._entries)

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        self._read_entry_points()
        return sorted(self._entries)

    def target(self, name: str) -> Any:
        """What ``name`` was registered as: the object, or the ``"module:attr"`` string of a lazy entry
        (without importing it)."""
        self._read_entry_points()
        if name not in self._entries:
            raise self._unknown_error(name)
        entry = self._entries[name]
        return entry.target if isinstance(entry, Lazy) else entry

    def meta(self, name: str) -> Mapping[str, Any]:
        """The metadata given when ``name`` was registered (``description`` ...), without importing it."""
        self._read_entry_points()
        if name not in self._entries:
            raise self._unknown_error(name)
        return dict(self._meta.get(name, {}))

    def copy(self) -> Registry[T]:
        """An independent registry with the same settings and entries (not frozen): for tests that
        register things without leaking them."""
        self._read_entry_points()
        other: Registry[T] = Registry(
            self.kind, group=self.group, base=self.base, check=self._check, unknown=self._unknown,
            error=self._error, valid_name=self._valid_name,
        )
        other._entries = dict(self._entries)
        other._resolved = dict(self._resolved)
        other._meta = {k: dict(v) for k, v in self._meta.items()}
        other._entry_points_read = True
        return other

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._entries)} entries{', frozen' if self._frozen else ''})"


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` that import each exported name from its module
    on first use (``exports`` maps a name to the module, relative to ``package``, that defines it),
    so importing the package imports none of its modules."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__


def _same(old: Any, new: Any) -> bool:
    if old is new:
        return True
    try:
        return bool(old == new)
    except Exception:  # an object with a strange __eq__ is not "the same"
        return False


def _describe(entry: Any) -> str:
    if isinstance(entry, Lazy):
        return repr(entry.target)
    module = getattr(entry, "__module__", None)
    qualname = getattr(entry, "__qualname__", None)
    if module and qualname:
        return f"{module}:{qualname}"
    text = repr(entry)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = [
    "GROUPS",
    "Lazy",
    "Registry",
    "RegistryError",
    "UnknownNameError",
    "did_you_mean",
    "hint",
    "lazy_exports",
    "suggest",
]
