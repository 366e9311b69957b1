"""Named things of one kind, in the order registered: the registries behind ptah's extension points,
and options declared once.

* :class:`Registry` -- with a ``hook``, filled through the door (:mod:`ptah.core.plugins`) at its
  first lookup: ptah's own first, the installed plugins' when a lookup needs them (a name not
  ptah's own, or every name). What an owner adds (which kind claims a URL, a measure's case-blind
  aliases) stays with it, passing its own ``add``.
* :class:`KindRegistry` -- embedders, rerankers, model judges. An unknown kind is an
  :class:`InputError` (exit 2) naming the registered ones; a plugin that cannot be loaded,
  registers a non-kind or reuses a name is a :class:`PluginError` (exit 3) naming its entry point
  and distribution, and fails every later lookup too.
* :func:`option` -- an option declared on the dataclass field that holds it (type, default,
  bounds, help), checked in ``__post_init__`` (:func:`check_options`); :func:`declared` lists them,
  nested ones included, and :func:`made` builds one from values by name. The CLI's ``evaluate``
  options, the API's keywords and the server's body and schema come from :func:`declared`; a
  refusal is an :class:`OptionError` naming the option.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields, is_dataclass, replace
from typing import Any, Generic, TypeVar

from ptah.core import plugins
from ptah.core.errors import InputError, PluginError
from ptah.core.visible import abbreviated

T = TypeVar("T")


class Registry(Generic[T]):
    """``what`` names an item in messages (``channel``, ``store kind``); ``unknown`` is the error a
    miss raises, ``use`` the words before the registered names in it; ``hook`` the door's hook
    that fills it, whose ``register`` is ``add`` (by default: register an item by its ``name``)."""

    def __init__(
        self,
        what: str,
        unknown: Callable[[str], Exception] = InputError,
        use: str = "use",
        *,
        hook: str | None = None,
        add: Callable[[Any], object] | None = None,
    ) -> None:
        self.what = what
        self._unknown = unknown
        self._use = use
        self._items: dict[str, T] = {}
        self._hook = hook
        self._add = add
        self._filled = self._scanned = hook is None
        self._filling = False
        self._lock = threading.RLock()

    def adding(self, add: Callable[[Any], object]) -> None:
        """Fill this registry through ``add`` (the owner's checked ``register``)."""
        self._add = add

    def register(self, name: str, item: T) -> T:
        """Add ``item`` as ``name``; :class:`PluginError` (exit 3) when the name is taken."""
        self._fill(installed=False)
        if name in self._items:
            raise PluginError(f'the {self.what} "{name}" is registered already')
        self._items[name] = item
        return item

    def unregister(self, name: str) -> None:
        """Remove ``name`` if it is registered (a test's toy)."""
        self._items.pop(name, None)

    def get(self, name: str) -> T:
        """The item registered as ``name``; the ``unknown`` error naming every registered name
        otherwise."""
        if name not in self:
            raise self.unknown(name) from None
        return self._items[name]

    def unknown(self, name: str) -> Exception:
        return self._unknown(f"unknown {self.what} {name!r}; {self._use} {', '.join(self.names())}")

    def names(self) -> tuple[str, ...]:
        self._fill(installed=True)
        return tuple(self._items)

    def __contains__(self, name: object) -> bool:
        self._fill(installed=False)
        if name not in self._items:
            self._fill(installed=True)
        return name in self._items

    def __iter__(self) -> Iterator[T]:
        """The items, in the order registered (a snapshot: registering while iterating is safe)."""
        self._fill(installed=True)
        return iter(tuple(self._items.values()))

    def __len__(self) -> int:
        self._fill(installed=True)
        return len(self._items)

    def _fill(self, *, installed: bool) -> None:
        if self._scanned or (self._filled and not installed):
            return
        from ptah.core import plugins

        assert self._hook is not None
        with self._lock:  # another thread waits here until the registry is filled
            if self._filling:  # this thread, in a hook that looks the registry up while it fills
                return
            if self._scanned or (self._filled and not installed):
                return
            add = self._add or self._by_name
            self._filling = True
            try:
                if not self._filled:
                    plugins.fill(self._hook, installed=False, register=add, owner=self)
                    self._filled = True
                if installed and not self._scanned:
                    plugins.fill(self._hook, installed=True, register=add, owner=self)
                    self._scanned = True
            finally:
                self._filling = False

    def _by_name(self, item: Any) -> object:
        return self.register(item.name, item)


K = TypeVar("K")


class KindRegistry(Generic[K]):
    """Kinds by name, ptah's and the installed plugins' (the door's ``hook``; ``group``, the entry
    point group of earlier releases) registered at the first lookup; ``discover=False`` gives an
    empty registry holding only what is registered on it (tests).

    ``protocol`` is the runtime-checkable protocol a kind satisfies, ``what`` its name in messages
    ("reranker kind") and ``shape`` what a kind must have ("a name and open(settings, context)").
    """

    hook: str
    group: str
    what: str
    shape: str
    protocol: type[K]

    def __init__(self, *, discover: bool = True):
        self._kinds: Registry[K] = Registry(self.what, use="the registered kinds are")
        self._origins: dict[str, str] = {}
        self._discovered = not discover
        self._complete = not discover  # every kind registered: lookups need not wait
        self._failure: PluginError | None = None  # a broken plugin fails every later lookup
        # a plugin's register() may look the kinds up while discovery runs
        self._lock = threading.RLock()

    @property
    def a_what(self) -> str:
        return ("an " if self.what[0] in "aeiou" else "a ") + self.what

    def register(self, kind: K) -> None:
        origin = plugins.origin() or f"the module {type(kind).__module__}"
        if isinstance(kind, type) or not isinstance(kind, self.protocol):
            raise PluginError(
                f"{origin} registered {kind!r}, which is not {self.a_what}: register an object "
                f"with {self.shape}"
            )
        name = getattr(kind, "name", None)
        if not isinstance(name, str) or not name.strip():
            raise PluginError(
                f"{origin} registered {self.a_what} whose name is {name!r}; name it with some text"
            )
        if name in self._kinds:
            raise PluginError(
                f'{origin} registered the {self.what} "{name}", which {self._origins[name]} '
                "already registered; uninstall one of them"
            )
        self._kinds.register(name, kind)
        self._origins[name] = origin

    def names(self) -> tuple[str, ...]:
        """The registered kinds' names, in the order registered."""
        self._discover()
        return self._kinds.names()

    def origin(self, name: str) -> str:
        """Who registered the kind ``name`` (``ptah``, or the plugin's entry point and
        distribution)."""
        self._discover()
        return self._origins[name]

    def find(self, name: str) -> K | None:
        """The kind ``name``, or None when none is registered (a specification reader checks what
        it can of a kind it knows)."""
        self._discover()
        return self._kinds.get(name) if name in self._kinds else None

    def get(self, name: str) -> K:
        """The kind ``name``; :class:`InputError` naming the registered kinds when there is none."""
        self._discover()
        return self._kinds.get(name)

    def _discover(self) -> None:
        if self._complete:
            return
        with self._lock:  # other threads wait for the kinds; the discovering thread may look again
            if self._failure is not None:
                raise self._failure
            if self._discovered:
                return
            self._discovered = True
            try:
                plugins.fill(self.hook, installed=False, register=self.register, owner=self)
                plugins.fill(self.hook, installed=True, register=self.register, owner=self)
            except PluginError as exc:
                self._failure = exc
                raise
            self._complete = True


_KEY = "ptah.option"


class OptionError(InputError):
    """An option's value refused: ``name`` (the option) and ``problem`` (what is wrong, one sentence
    without it)."""

    def __init__(self, name: str, problem: str):
        super().__init__(lambda words: f"{words.option(name)}: {problem}.")
        self.name, self.problem = name, problem


@dataclass(frozen=True)
class Option:
    """One option: ``kind`` is bool, int, float, str, tuple (a list of names) or dict (name ->
    number); ``default`` None makes it optional; ``flags`` spell it on the command line (default
    ``--the-name``); ``served``: a field of the server's evaluation body."""

    name: str
    kind: type
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    served: bool = True

    @property
    def spellings(self) -> tuple[str, ...]:
        return self.flags or ("--" + self.name.replace("_", "-"),)

    def expected(self) -> str:
        """What a value must be, as a refusal says it."""
        if self.choices:
            return f"one of {', '.join(self.choices)}"
        if self.kind in (int, float):
            what = "a whole number" if self.kind is int else "a finite number"
            if self.low is not None and self.high is not None:
                return f"{what} from {self.low:,} to {self.high:,}"
            return what if self.low is None else f"{what} of at least {self.low:,}"
        return {
            bool: "true or false",
            str: "a text",
            tuple: "a list of names",
            dict: "a mapping of names to numbers",
        }[self.kind]

    def check(self, value: Any) -> Any:
        """``value`` as the option holds it (a tuple of names, a dict, a path as text); OptionError
        otherwise."""
        if value is None and self.default is None:
            return None
        if (
            self.kind is tuple
            and not isinstance(value, (str, bytes))
            and isinstance(value, Iterable)
        ):
            return tuple(value)
        if self.kind is dict and isinstance(value, Mapping):
            return dict(value)
        if self.kind is str and isinstance(value, os.PathLike):
            value = os.fspath(value)
        if (
            self.kind is float
            and isinstance(value, int)
            and not isinstance(value, bool)
            and abs(value) < 1e308
        ):
            value = float(
                value
            )  # a whole number where a number is asked; one past floats is refused below
        if self._fits(value):
            return value
        raise OptionError(self.name, f"must be {self.expected()}, not {abbreviated(repr(value))}")

    def _fits(self, value: Any) -> bool:
        if self.kind in (int, float):
            if isinstance(value, bool) or not isinstance(value, self.kind):
                return False
            if self.kind is float and not math.isfinite(value):
                return False
            return (self.low is None or value >= self.low) and (
                self.high is None or value <= self.high
            )
        return isinstance(value, self.kind) and (not self.choices or value in self.choices)


def option(
    default: Any, help: str, *, kind: type | None = None, name: str = "", **bounds: Any
) -> Any:
    """A dataclass field holding an option (its name: the field's, unless ``name`` is given);
    ``bounds``: the other :class:`Option` attributes (``low``, ``high``, ``choices``, ``flags``,
    ``served``)."""
    declared_option = Option(name, kind or type(default), default, help, **bounds)
    if isinstance(default, (dict, list)):
        return field(default_factory=type(default), metadata={_KEY: declared_option})
    return field(default=default, metadata={_KEY: declared_option})


def _named(item: Field) -> Option | None:
    found = item.metadata.get(_KEY)
    return None if found is None else found if found.name else replace(found, name=item.name)


def _nested(item: Field) -> type | None:
    """The dataclass of options a field's default is (EvaluationRequest.search: SearchOptions), else
    None."""
    kind = type(item.default)
    return kind if item.default is not MISSING and is_dataclass(kind) and declared(kind) else None


@functools.cache
def declared(cls: type) -> tuple[Option, ...]:
    """The options of a dataclass, in field order, those of its nested option dataclasses in their
    place."""
    found: list[Option] = []
    for item in fields(cls):
        own, nested = _named(item), _nested(item)
        found.extend([own] if own is not None else declared(nested) if nested is not None else [])
    return tuple(found)


def check_options(instance: Any) -> None:
    """Check and normalise each option field of a dataclass instance (its ``__post_init__`` calls
    this)."""
    for item in fields(instance):
        own = _named(item)
        if own is not None:
            object.__setattr__(instance, item.name, own.check(getattr(instance, item.name)))


def made(cls: type, values: Mapping[str, Any]) -> Any:
    """An instance of ``cls`` with the options ``values`` names (by option name; the rest default).
    TypeError for a name that is not one of its options, as for an unknown keyword argument."""
    known = [declared_option.name for declared_option in declared(cls)]
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise TypeError(
            f"{unknown[0]!r} is not an option of {cls.__name__}; its options are {', '.join(known)}"
        )
    return _made(cls, values)


def _made(cls: type, values: Mapping[str, Any]) -> Any:
    arguments: dict[str, Any] = {}
    for item in fields(cls):
        own, nested = _named(item), _nested(item)
        if own is not None and own.name in values:
            arguments[item.name] = values[own.name]
        elif nested is not None:
            arguments[item.name] = _made(nested, values)
    return cls(**arguments)
