"""A registry of kinds (embedders, rerankers, model judges), filled through the door.

ptah's own kinds and the installed plugins' come in by the kind's hook (:mod:`ptah.core.plugins`)
at the first lookup. An unknown kind is an :class:`InputError` (exit 2) naming the registered ones;
a plugin that cannot be loaded, registers something that is not a kind, or reuses a kind's name is
a :class:`PluginError` (exit 3) naming its entry point and distribution, and fails every later
lookup too.
"""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

from ptah.core import plugins
from ptah.core.errors import PluginError
from ptah.core.registry import Registry

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
