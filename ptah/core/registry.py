"""Named things of one kind, in the order registered: the one registry class behind ptah's
extension points.

A registry with a ``hook`` is filled through the door (:mod:`ptah.core.plugins`) at its first
lookup: ptah's own kinds first, then the installed plugins' when a lookup needs them (a name that
is not one of ptah's own, or every name). What a registry adds (which kind claims a URL, a
measure's case-blind aliases) stays with its owner, which passes its own ``add`` when it checks
what is registered.

A registry of kinds (embedders, rerankers, model judges), filled through the door.

ptah's own kinds and the installed plugins' come in by the kind's hook (:mod:`ptah.core.plugins`)
at the first lookup. An unknown kind is an :class:`InputError` (exit 2) naming the registered ones;
a plugin that cannot be loaded, registers something that is not a kind, or reuses a kind's name is
a :class:`PluginError` (exit 3) naming its entry point and distribution, and fails every later
lookup too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from ptah.core import plugins
from ptah.core.errors import InputError, PluginError

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
