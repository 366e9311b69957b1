"""Which store kind keeps a specification's ``store:``, and how it is opened.

A store kind is registered through the door (hook ``register_stores``): its name, its
:class:`~ptah.adapters.stores.base.Capabilities`, which values it claims and how to open one.
ptah's own are ``pgvector`` (``postgresql://`` and ``postgres://``; psycopg is imported only when
one is opened, and without it opening says how to install it, :class:`CapabilityUnavailable`,
exit 3) and ``sqlite``, the default: every value no other kind claims is a file path
(``sqlite:///FILE`` too), checked by the specification reader. :func:`store_kind` is the one
place that decides which kind a value is; kinds registered later are asked first.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ptah.adapters.sources.base import POSTGRES_SCHEMES, postgres_module
from ptah.adapters.stores.base import Capabilities, StoreKind, conformance_problem
from ptah.core.errors import PluginError
from ptah.core.plugins import hookimpl
from ptah.core.registry import Registry

if TYPE_CHECKING:
    from ptah.adapters.stores.base import Store


DEFAULT = "sqlite"


KINDS: Registry[StoreKind] = Registry("store kind", hook="register_stores")


def register(kind: StoreKind) -> None:
    """Add a store kind, asked before those registered earlier; PluginError (exit 3) for a name
    taken."""
    KINDS.register(kind.name, kind)


def unregister(name: str) -> None:
    """Remove the store kind ``name`` (a test's toy kind) if it is registered; the default stays."""
    if name != DEFAULT:
        KINDS.unregister(name)


def store_kind(value: str) -> str:
    """The name of the kind that keeps the store ``value`` names: the last registered that claims
    it, else sqlite."""
    for kind in reversed(tuple(KINDS)):
        if kind.name != DEFAULT and kind.claims(value):
            return kind.name
    return DEFAULT


def capabilities_of(value: str) -> Capabilities:
    """What the store ``value`` names can do, known without opening it."""
    return KINDS.get(store_kind(value)).capabilities


def open_store(location: str, *, create: bool) -> Store | None:
    """The store at ``location``, opened by its kind (None: ``create=False`` and nothing there).

    Raises :class:`PluginError` (exit 3) when the kind opens something that is
    not a store with the capabilities the kind declared.
    """
    kind = KINDS.get(store_kind(location))
    store = kind.open(location, create)
    if store is None:
        return None
    problem = conformance_problem(store)
    if problem is None and store.capabilities != kind.capabilities:
        problem = f"its capabilities {store.capabilities} are not the kind's {kind.capabilities}"
    if problem is not None:
        store.close()
        raise PluginError(
            f'the store kind "{kind.name}" opened {type(store).__name__}, but {problem}'
        )
    return store


KINDS.adding(register)


def _open_sqlite(location: str, create: bool) -> Store | None:
    from ptah.adapters.stores.sqlite import SqliteStore

    path = Path(location)
    if not create and not path.exists():
        return None
    return SqliteStore(path)


def _open_pgvector(location: str, create: bool) -> Store | None:
    store = postgres_module("ptah.adapters.stores.pgvector").PgvectorStore(location, create=create)
    if not store.initialised:
        store.close()
        return None
    return store


@hookimpl
def register_stores(register: Callable) -> None:
    from ptah.adapters.stores.pgvector_location import PGVECTOR_CAPABILITIES
    from ptah.adapters.stores.sqlite import SQLITE_CAPABILITIES

    register(StoreKind("sqlite", SQLITE_CAPABILITIES, _anything, _open_sqlite))
    register(StoreKind("pgvector", PGVECTOR_CAPABILITIES, _postgres_url, _open_pgvector))


def _anything(value: str) -> bool:
    return True


def _postgres_url(value: str) -> bool:
    return value.startswith(POSTGRES_SCHEMES)
