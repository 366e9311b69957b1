"""A registry of kinds (rerankers, model judges) that installed packages extend by entry point.

ptah registers its own kinds first, then every entry point of the kind's group,
at the first lookup. An entry point names a kind object or a function
``register(registry)`` calling ``registry.register(kind)``. An unknown kind is
an :class:`InputError` (exit 2) naming the registered ones; a plugin that cannot
be loaded, registers something that is not a kind, or reuses a kind's name is a
:class:`PluginError` (exit 3) naming its entry point, and fails every later
lookup too.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Generic, Sequence, TypeVar

from ptah.adapters.embedders.registry import entry_points, load_plugin
from ptah.core.errors import PluginError
from ptah.core.registry import Registry

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

K = TypeVar("K")


class KindRegistry(Generic[K]):
    """Kinds by name, ptah's (``builtins``) and the installed plugins' (entry point ``group``) registered at the
    first lookup; ``discover=False`` gives an empty registry holding only what is registered on it (tests).

    ``protocol`` is the runtime-checkable protocol a kind satisfies, ``what`` its name in messages ("reranker
    kind") and ``shape`` what a kind must have ("a name and open(settings, context)").
    """

    group: str
    what: str
    shape: str
    protocol: type

    def __init__(self, *, discover: bool = True):
        self._kinds: Registry[K] = Registry(self.what, use="the registered kinds are")
        self._discovered = not discover
        self._lock = threading.RLock()  # a plugin's register() may look the kinds up while discovery runs
        self._origin: str | None = None  # who is registering now, while discovery runs
        self._failure: PluginError | None = None

    def builtins(self) -> Sequence[K]:
        """ptah's own kinds (imported here, so importing a registry loads none)."""
        return ()

    def register(self, kind: K) -> None:
        origin = self._origin or f"the module {type(kind).__module__}"
        name = getattr(kind, "name", None)
        if isinstance(kind, type) or not isinstance(kind, self.protocol) or not isinstance(name, str) \
                or not name.strip():
            raise PluginError(f"{origin} registered {kind!r}, which is not a {self.what}: register an object "
                              f"with {self.shape}")
        if name in self._kinds:
            raise PluginError(f'{origin} registered the {self.what} "{name}", which is registered already; '
                              "uninstall one of them")
        self._kinds.register(name, kind)

    def names(self) -> tuple[str, ...]:
        self._discover()
        return self._kinds.names()

    def get(self, name: str) -> K:
        """The kind ``name``; :class:`InputError` naming the registered kinds when there is none."""
        self._discover()
        return self._kinds.get(name)

    def _discover(self) -> None:
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if self._discovered:
                return
            self._discovered = True
            try:
                self._origin = "ptah"
                for kind in self.builtins():
                    self.register(kind)
                for entry in entry_points(self.group):
                    self._origin = f'the {self.group} entry point "{entry.name} = {entry.value}"'
                    self._load(entry)
            except PluginError as exc:
                self._failure = exc
                raise
            finally:
                self._origin = None

    def _load(self, entry: EntryPoint) -> None:
        load_plugin(entry, self, self._origin or entry.name, self.protocol, f"a {self.what}")
