"""Named things of one kind, in the order registered: the one registry class behind ptah's
extension points.

A registry with a ``hook`` is filled through the door (:mod:`ptah.core.plugins`) at its first
lookup: ptah's own kinds first, then the installed plugins' when a lookup needs them (a name that
is not one of ptah's own, or every name). What a registry adds (which kind claims a URL, a
measure's case-blind aliases) stays with its owner, which passes its own ``add`` when it checks
what is registered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

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
        if not self._filling:
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
        # another thread waits here until the registry is filled; the filling thread itself passes
        # (the lock is re-entrant) and finds _filling set
        with self._lock:
            if self._filling:  # a hook looking this registry up while it is being filled
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
