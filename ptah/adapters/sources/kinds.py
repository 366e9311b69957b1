"""ptah's own source kinds, registered through the door (:mod:`ptah.core.plugins`): ``sqlite``
(``sqlite:///FILE``) and ``postgresql`` (``postgresql://`` and ``postgres://``; psycopg is
imported only when one is opened)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ptah.adapters.sources.base import (
    POSTGRES_SCHEMES,
    SQLITE_PREFIX,
    Source,
    SourceKind,
    postgres_module,
)
from ptah.core.plugins import hookimpl

if TYPE_CHECKING:
    from ptah.core.spec import SourceSpec


def _open_sqlite(source: SourceSpec, root: str) -> Source:
    from ptah.adapters.sources.sqlite import SqliteSource

    return SqliteSource(source, root)


def _open_postgres(source: SourceSpec, root: str) -> Source:
    return postgres_module("ptah.adapters.sources.postgres").PostgresSource(source, root)


def _sqlite_url(database: str) -> bool:
    return database.startswith(SQLITE_PREFIX)


def _postgres_url(database: str) -> bool:
    return database.startswith(POSTGRES_SCHEMES)


@hookimpl
def register_sources(register: Callable) -> None:
    register(SourceKind("sqlite", _sqlite_url, _open_sqlite))
    register(SourceKind("postgresql", _postgres_url, _open_postgres))
