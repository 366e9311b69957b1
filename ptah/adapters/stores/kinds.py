"""ptah's own store kinds, registered through the door (:mod:`ptah.core.plugins`).

``sqlite`` -- the default: every value no other kind claims is a file path; ``pgvector`` --
``postgresql://`` and ``postgres://`` URLs (psycopg is imported only when one is opened; without
it, opening says how to install it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ptah.adapters.sources.base import POSTGRES_SCHEMES, postgres_module
from ptah.adapters.stores.base import StoreKind
from ptah.core.plugins import hookimpl

if TYPE_CHECKING:
    from ptah.adapters.stores.base import Store


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
