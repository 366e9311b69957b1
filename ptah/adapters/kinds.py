"""A registry of kinds (embedders, rerankers, model judges) that installed packages extend by entry
point.

ptah registers its own kinds first, then every entry point of the kind's group,
at the first lookup. An entry point names a kind object or a function
``register(registry)`` calling ``registry.register(kind)``. An unknown kind is
an :class:`InputError` (exit 2) naming the registered ones; a plugin that cannot
be loaded, registers something that is not a kind, or reuses a kind's name is a
:class:`PluginError` (exit 3) naming its entry point and distribution, and
fails every later lookup too.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

from ptah.core.errors import PluginError, PtahError
from ptah.core.registry import Registry

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

K = TypeVar("K")


class KindRegistry(Generic[K]):
    """Kinds by name, ptah's (``builtins``) and the installed plugins' (entry point ``group``)
    registered at the first lookup; ``discover=False`` gives an empty registry holding only what is
    registered on it (tests).

    ``protocol`` is the runtime-checkable protocol a kind satisfies, ``what`` its name in messages
    ("reranker kind") and ``shape`` what a kind must have ("a name and open(settings, context)").
    """

    group: str
    what: str
    shape: str
    protocol: type[K]

    def __init__(self, *, discover: bool = True):
        self._kinds: Registry[K] = Registry(self.what, use="the registered kinds are")
        self._origins: dict[str, str] = {}
        self._discovered = not discover
        self._complete = not discover  # every kind registered: lookups need not wait
        self._lock = (
            threading.RLock()
        )  # a plugin's register() may look the kinds up while discovery runs
        self._origin: str | None = None  # who is registering now, while discovery runs
        self._failure: PluginError | None = (
            None  # a broken plugin fails every lookup, not just the first
        )

    @property
    def a_what(self) -> str:
        return ("an " if self.what[0] in "aeiou" else "a ") + self.what

    def builtins(self) -> Sequence[K]:
        """ptah's own kinds (imported here, so importing a registry loads none)."""
        return ()

    def register(self, kind: K) -> None:
        origin = self._origin or f"the module {type(kind).__module__}"
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

    def get(self, name: str) -> K:
        """The kind ``name``; :class:`InputError` naming the registered kinds when there is none."""
        self._discover()
        return self._kinds.get(name)

    def _register_builtins(self) -> None:
        for kind in self.builtins():
            self.register(kind)

    def _entry_points(self) -> list[EntryPoint]:
        """The installed entry points of the group, in a fixed order (name, then value)."""
        from importlib import metadata

        return sorted(
            metadata.entry_points(group=self.group), key=lambda entry: (entry.name, entry.value)
        )

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
                self._origin = "ptah"
                self._register_builtins()
                for entry in self._entry_points():
                    self._load(entry)
            except PluginError as exc:
                self._failure = exc
                raise
            finally:
                self._origin = None
            self._complete = True

    def _load(self, entry: EntryPoint) -> None:
        """Register what one entry point names: a kind, or a function called with this registry;
        :class:`PluginError` (exit 3) naming the entry point and the distribution to reinstall or
        uninstall."""
        dist = getattr(entry, "dist", None)
        origin = self._origin = f'the {self.group} entry point "{entry.name} = {entry.value}"' + (
            f" of the distribution {dist.name} {dist.version}" if dist is not None else ""
        )
        remedy = "; reinstall or uninstall " + (
            f"the distribution {dist.name}" if dist is not None else "the package that declares it"
        )
        try:
            target = entry.load()
        except (
            Exception
        ) as exc:  # ImportError, SyntaxError, AttributeError, whatever its module raises
            raise PluginError(
                f"{origin} cannot be loaded: {describe_exception(exc)}{remedy}"
            ) from None
        if isinstance(target, self.protocol) and not isinstance(target, type):
            self.register(target)
            return
        if not callable(target):
            raise PluginError(
                f"{origin} names {target!r}; name {self.a_what} or a function register(registry)"
            )
        try:
            target(self)
        except PtahError:
            raise
        except Exception as exc:
            raise PluginError(
                f"{origin} failed while registering: {describe_exception(exc)}{remedy}"
            ) from None


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` on one line, at most 300 characters."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= 300 else text[:297] + "..."
