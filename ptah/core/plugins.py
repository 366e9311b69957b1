"""The one door: every kind ptah knows -- its own and an installed package's -- comes in by a hook.

A plugin is a module whose functions, marked ``@ptah.hookimpl``, are named after the hooks of
:class:`Hooks`. ptah's own plugins are the modules of :data:`DEFAULT_PLUGINS`, each imported when
a registry first asks for a hook it implements; an installed package declares its module in the
entry point group ``ptah``::

    [project.entry-points.ptah]
    toy = "toy_plugin"

Each registry asks the door for its hook's implementations at its first lookup: ptah's own
first, then the installed plugins' (found once per process, the first time a lookup needs
them). A plugin that cannot be loaded, or that raises while registering, is a
:class:`PluginError` (exit 3) naming its entry point and distribution, and fails every later
lookup too. The groups ``ptah.embedders``, ``ptah.rerankers`` and ``ptah.judges`` of earlier
releases still load, through the same door, for one release.
"""

from __future__ import annotations

import contextvars
import importlib
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pluggy

from ptah.core.errors import PluginError, PtahError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

GROUP = "ptah"
hookspec = pluggy.HookspecMarker(GROUP)
hookimpl = pluggy.HookimplMarker(GROUP)

# ptah's own plugins, in the order they register: each module and the hooks it implements,
# imported only when a registry first asks for one of them (tests/test_plugin_door.py holds this
# table to the modules' @hookimpl functions), so that filling one registry does not import every
# other's kinds
DEFAULT_PLUGINS = {
    "ptah.core.measures": ("register_measures",),
    "ptah.adapters.sources.base": ("register_sources",),
    "ptah.adapters.stores.registry": ("register_stores",),
    "ptah.adapters.embedders.kinds": ("register_embedders",),
    "ptah.adapters.rerankers.kinds": ("register_rerankers",),
    "ptah.adapters.judges.kinds": ("register_judges",),
    "ptah.services.channels": ("register_channels",),
    "ptah.retriever": ("register_channels", "register_sections"),
    "ptah.services.sections": ("register_sections",),
    "ptah.services.engines": ("register_engines",),
    "ptah.render.formats": ("register_formats",),
    "ptah.adapters.files": ("register_writers",),
    "ptah.cli": ("register_commands",),
}

# the entry point groups of earlier releases: each names a kind, or a function register(registry)
LEGACY_GROUPS = {
    "register_embedders": "ptah.embedders",
    "register_rerankers": "ptah.rerankers",
    "register_judges": "ptah.judges",
}


class Hooks:
    """The hooks: one per kind. ``register`` adds one kind to ptah's registry of that kind."""

    @hookspec
    def register_commands(self, cli: Any) -> None:
        """Add commands (typer) to the ``ptah`` command line ``cli``."""

    @hookspec
    def register_stores(self, register: Callable) -> None:
        """Register store kinds (:class:`ptah.adapters.stores.registry.StoreKind`)."""

    @hookspec
    def register_sources(self, register: Callable) -> None:
        """Register source kinds (:class:`ptah.adapters.sources.base.SourceKind`)."""

    @hookspec
    def register_channels(self, register: Callable) -> None:
        """Register search channels (:class:`ptah.services.channels.registry.Channel`)."""

    @hookspec
    def register_embedders(self, register: Callable) -> None:
        """Register embedder kinds (``register(kind, default=False)``)."""

    @hookspec
    def register_rerankers(self, register: Callable) -> None:
        """Register reranker kinds."""

    @hookspec
    def register_judges(self, register: Callable) -> None:
        """Register model-judge kinds."""

    @hookspec
    def register_measures(self, register: Callable) -> None:
        """Register measures (:class:`ptah.core.measures.MeasureKind`)."""

    @hookspec
    def register_formats(self, register: Callable) -> None:
        """Register report output formats (:class:`ptah.core.formats.Format`)."""

    @hookspec
    def register_writers(self, register: Callable) -> None:
        """Register what writes a report's file (:class:`ptah.core.formats.Writer`)."""

    @hookspec
    def register_engines(self, register: Callable) -> None:
        """Register build engines (:class:`ptah.services.engines.Engine`)."""

    @hookspec
    def register_sections(self, register: Callable) -> None:
        """Register report sections (:class:`ptah.core.parts.Section`)."""


@dataclass(frozen=True)
class Plugin:
    """One plugin as the door knows it: who it is in messages, and its hooks by name."""

    origin: str
    hooks: dict[str, Callable[..., Any]]
    remedy: str = ""


_lock = threading.RLock()
_builtin: dict[str, Plugin] = {}  # ptah's own plugins imported so far, by module
# by entry point group: the sys.path it was found on, and its plugins or the error loading them
_installed: dict[str, tuple[tuple[str, ...], list[Plugin] | PluginError]] = {}
_origin: contextvars.ContextVar[str | None] = contextvars.ContextVar("ptah_origin", default=None)


def origin() -> str | None:
    """Who is registering now (``ptah``, or a plugin's entry point and distribution); None
    outside a hook."""
    return _origin.get()


def fill(hook: str, *, installed: bool, **arguments: Any) -> None:
    """Call every implementation of ``hook`` with ``arguments`` (each takes those it names): ptah's
    own plugins', or (``installed``) the installed plugins'. A legacy entry point gets
    ``arguments["owner"]``, the registry it registers on."""
    for plugin in _installed_plugins(hook) if installed else _builtin_plugins(hook):
        function = plugin.hooks.get(hook)
        if function is None:
            continue
        with _registering(plugin):
            function(**arguments)


@contextmanager
def _registering(plugin: Plugin) -> Iterator[None]:
    token = _origin.set(plugin.origin)
    try:
        yield
    except PtahError:
        raise
    except Exception as exc:  # a plugin's bug, told as the plugin's
        raise PluginError(
            f"{plugin.origin} failed while registering: {describe_exception(exc)}{plugin.remedy}"
        ) from None
    finally:
        _origin.reset(token)


def _builtin_plugins(hook: str) -> list[Plugin]:
    """ptah's own plugins that implement ``hook``, in the order of :data:`DEFAULT_PLUGINS`."""
    names = [name for name, hooks in DEFAULT_PLUGINS.items() if hook in hooks]
    with _lock:
        for name in names:
            if name not in _builtin:
                _builtin[name] = _of(importlib.import_module(name), "ptah")
        return [_builtin[name] for name in names]


def _installed_plugins(hook: str) -> list[Plugin]:
    """The installed plugins of the group ``ptah``, and those of the legacy group of ``hook``: each
    group found once for each ``sys.path`` (a test puts a package on it)."""
    groups = [GROUP] + ([LEGACY_GROUPS[hook]] if hook in LEGACY_GROUPS else [])
    where = tuple(sys.path)
    found: list[Plugin] = []
    with _lock:
        for group in groups:
            known = _installed.get(group)
            if known is None or known[0] != where:
                try:
                    known = (where, list(_entry_point_plugins(group)))
                except PluginError as exc:
                    known = (where, exc)
                _installed[group] = known
            if isinstance(known[1], PluginError):
                raise known[1]
            found += known[1]
    return found


def _of(module: Any, who: str, remedy: str = "") -> Plugin:
    """The hooks ``module`` implements (its functions marked ``@hookimpl``), checked by pluggy
    against :class:`Hooks`."""
    manager = pluggy.PluginManager(GROUP)
    manager.add_hookspecs(Hooks)
    try:
        manager.register(module)
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"{who} does not fit ptah's hooks: {exc}{remedy}") from None
    hooks = {}
    for name in vars(Hooks):
        if not name.startswith("register_"):
            continue
        caller = getattr(manager.hook, name, None)
        for implementation in caller.get_hookimpls() if caller is not None else ():
            hooks[name] = _taking(implementation.function, implementation.argnames)
    return Plugin(who, hooks, remedy)


def _taking(function: Callable[..., Any], names: tuple[str, ...]) -> Callable[..., Any]:
    """``function`` called with the arguments it names, of those a hook is given (pluggy's
    rule: an implementation may take fewer arguments than its hook)."""

    def call(**arguments: Any) -> Any:
        return function(**{name: arguments[name] for name in names})

    return call


def _entry_point_plugins(group: str) -> Iterator[Plugin]:
    """The plugins of one entry point group, in a fixed order (name, then value): modules with
    hooks (``ptah``), or a legacy group's kinds and register functions."""
    from importlib import metadata

    found = metadata.entry_points(group=group)
    hooks = {group: hook for hook, group in LEGACY_GROUPS.items()}
    for entry in sorted(found, key=lambda e: (e.name, e.value)):
        who, remedy = _described(entry)
        target = _loaded(entry, who, remedy)
        if group == GROUP:
            yield _of(target, who, remedy)
        else:
            yield Plugin(who, {hooks[group]: _legacy(target, who)}, remedy)


def _described(entry: EntryPoint) -> tuple[str, str]:
    dist = getattr(entry, "dist", None)
    who = f'the {entry.group} entry point "{entry.name} = {entry.value}"' + (
        f" of the distribution {dist.name} {dist.version}" if dist is not None else ""
    )
    remedy = "; reinstall or uninstall " + (
        f"the distribution {dist.name}" if dist is not None else "the package that declares it"
    )
    return who, remedy


def _loaded(entry: EntryPoint, who: str, remedy: str) -> Any:
    try:
        return entry.load()
    except Exception as exc:  # ImportError, SyntaxError, AttributeError, whatever its module raises
        raise PluginError(f"{who} cannot be loaded: {describe_exception(exc)}{remedy}") from None


def _legacy(target: Any, who: str) -> Callable[..., None]:
    """A legacy entry point as a hook: a kind is registered, a function is called with the
    registry."""

    def hook(register: Callable, owner: Any = None) -> None:
        if getattr(owner, "protocol", None) is not None and isinstance(target, owner.protocol):
            if not isinstance(target, type):
                register(target)
                return
        if not callable(target):
            raise PluginError(
                f"{who} names {target!r}; name {owner.a_what} or a function register(registry)"
            )
        target(owner)

    return hook


def not_installed(asked: str, distribution: str) -> str:
    """The sentence for ``asked`` (``ptah serve``, ``--engine ray``) when the add-on that brings it,
    ``distribution`` (one of ptah's repository, under ``packages/``), is not installed."""
    return (
        f"{asked} comes with the add-on {distribution}, which is not installed; install it from a "
        f"checkout of ptah with: pip install ./packages/{distribution}"
    )


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` on one line, at most 300 characters."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= 300 else text[:297] + "..."
