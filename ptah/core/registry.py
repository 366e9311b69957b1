"""Named things of one kind, in the order registered: the one registry class behind ptah's extension
points.

Sources, stores, channels, embedders, measures and output formats each keep a
:class:`Registry`; what a registry adds (which kind claims a URL, a measure's
case-blind aliases, plugin discovery) stays with its owner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from ptah.core.errors import InputError, PluginError

T = TypeVar("T")


class Registry(Generic[T]):
    """``what`` names an item in messages (``channel``, ``store kind``); ``unknown`` is the error a
    miss raises, ``use`` the words before the registered names in it."""

    def __init__(
        self, what: str, unknown: Callable[[str], Exception] = InputError, use: str = "use"
    ) -> None:
        self.what = what
        self._unknown = unknown
        self._use = use
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T) -> T:
        """Add ``item`` as ``name``; :class:`PluginError` (exit 3) when the name is taken."""
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
        try:
            return self._items[name]
        except KeyError:
            raise self.unknown(name) from None

    def unknown(self, name: str) -> Exception:
        return self._unknown(f"unknown {self.what} {name!r}; {self._use} {', '.join(self._items)}")

    def names(self) -> tuple[str, ...]:
        return tuple(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[T]:
        """The items, in the order registered (a snapshot: registering while iterating is safe)."""
        return iter(tuple(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)
