"""What a source is, and which source kind reads a ``source.database`` URL.

A :class:`Source` is the rows of ``source.table`` as ptah sees them, read from one snapshot of
the database (``tests/contract/test_source_contract.py`` holds every reader to the same answers).
A source kind is registered through the door (hook ``register_sources``): its name, which URLs it
reads, and how to open one. ptah's own are ``sqlite`` (``sqlite:///FILE``) and ``postgresql``
(``postgresql://``, ``postgres://``; psycopg is imported only when one is opened, and without it
opening says how to install it, :class:`CapabilityUnavailable`, exit 3). :func:`source_kind` is
the one place that decides which kind a URL is.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Protocol,
    runtime_checkable,
)

from ptah.adapters.sources.rows import text_digests
from ptah.core.errors import CapabilityUnavailable
from ptah.core.plugins import hookimpl
from ptah.core.registry import Registry

if TYPE_CHECKING:
    from types import ModuleType

    from ptah.adapters.sources.vectors import TableVectors
    from ptah.core.provenance import RowDigest
    from ptah.core.spec import SourceRow, SourceSpec


POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SQLITE_PREFIX = "sqlite:///"


@runtime_checkable
class Source(Protocol):
    """The rows of one table (or view), filtered, read from one snapshot until :meth:`close`."""

    def count(self) -> int:
        """How many rows pass the filter."""

    def rows(self, template: str) -> Iterator[SourceRow]:
        """Every row passing the filter with its key, row identity and ``template`` rendered, by
        key."""

    def lookup(self, keys: Iterable[str]) -> dict[str, str]:
        """For each key: ``present``, ``filtered`` (in the table, excluded by the filter) or
        ``absent``."""

    def vectors(self, column: str) -> TableVectors:
        """Every row passing the filter with the vector ``column`` holds, in the order of
        :meth:`rows` (:mod:`ptah.adapters.sources.vectors`); for an external generation."""

    def close(self) -> None: ...

    def __enter__(self) -> Source: ...

    def __exit__(self, *exc_info: object) -> None: ...


@runtime_checkable
class RowDigests(Protocol):
    """What verification reads from a source besides its rows; ptah's SQLite and PostgreSQL readers
    are ones, and :func:`row_digests` answers for any other source from :meth:`Source.rows`."""

    def digests(self, template: str) -> Iterator[RowDigest]:
        """Every row of :meth:`Source.rows` as its key, row identity and the
        :func:`~ptah.core.provenance.text_digest` of ``template`` rendered, in the same order (hashed
        where the text lives when the database can)."""

    def identities(self) -> Generator[str, None, None] | None:
        """The row identity of every row passing the filter, ordered by the identity's code points
        (the database sorts them), or None when the database cannot spell an identity to sort on (a
        NUL in a SQLite key)."""

    def lookup_identities(self, identities: Iterable[str]) -> dict[str, str]:
        """:meth:`Source.lookup` for row identities, read back into their key components exactly."""


def row_digests(source: Source) -> RowDigests:
    """``source`` itself when it reads digests and sorted identities, else :class:`RenderedDigests`
    over it."""
    return source if isinstance(source, RowDigests) else RenderedDigests(source)


class RenderedDigests:
    """:class:`RowDigests` from :meth:`Source.rows`: each text hashed here, the identities sorted in
    memory."""

    def __init__(self, source: Source):
        self._source = source

    def digests(self, template: str) -> Iterator[RowDigest]:
        return text_digests(self._source.rows(template))

    def identities(self) -> Generator[str, None, None] | None:
        return (identity for identity in sorted(row.identity for row in self._source.rows("")))

    def lookup_identities(self, identities: Iterable[str]) -> dict[str, str]:
        """``ok`` or ``missing`` (a row the filter excludes reads as missing)."""
        wanted = set(identities)
        present = {row.identity for row in self._source.rows("") if row.identity in wanted}
        return {identity: "ok" if identity in present else "missing" for identity in wanted}


@runtime_checkable
class KeyedTexts(Protocol):
    """Reading a few rows' texts by key; ptah's SQLite and PostgreSQL readers do, and
    :func:`texts_of` answers for any other source from :meth:`Source.rows`."""

    def texts_of(self, template: str, keys: Iterable[str]) -> dict[str, str]:
        """The text ``template`` renders for each of ``keys`` that is a row of :meth:`Source.rows`
        (a key no row has, or that the filter excludes, left out), read by key rather than by
        reading the table."""


def texts_of(source: Source, template: str, keys: Iterable[str]) -> dict[str, str]:
    """The text ``template`` renders for each of ``keys`` that is a row of ``source``: read by key
    where the source can (:class:`KeyedTexts`), else picked from one pass over its rows."""
    wanted = set(keys)
    if not wanted:
        return {}
    if isinstance(source, KeyedTexts):
        return source.texts_of(template, wanted)
    return {row.key: row.text for row in source.rows(template) if row.key in wanted}


@dataclass(frozen=True)
class SourceKind:
    """A kind of source: its name, whether it reads a ``source.database`` URL, and how to open
    one."""

    name: str
    reads: Callable[[str], bool]
    open: Callable[[SourceSpec, str], Source]  # (the source's settings, the specification's folder)


KINDS: Registry[SourceKind] = Registry("source kind", hook="register_sources")


def register(kind: SourceKind) -> None:
    """Add a source kind, asked before those registered earlier; PluginError (exit 3) for a name
    taken."""
    KINDS.register(kind.name, kind)


def source_kind(database: str) -> str | None:
    """The name of the kind that reads ``database`` (a URL), or None when none does."""
    for kind in reversed(tuple(KINDS)):
        if kind.reads(database):
            return kind.name
    return None


def open_source(source: SourceSpec, root: str, where: str) -> Source:
    """The source ``source.database`` names, opened by its kind; ``where`` names the specification
    in messages.

    Raises :class:`CapabilityUnavailable` (exit 3) for a URL no kind reads, or
    when the kind's library is not installed, and whatever the kind raises
    (:class:`SourceUnavailable`, :class:`SpecError`).
    """
    name = source_kind(source.database)
    if name is None:
        raise CapabilityUnavailable(
            f"{where}: source {source.redacted_database} is neither sqlite:/// nor postgresql://."
        )
    return KINDS.get(name).open(source, root)


def postgres_module(module: str) -> ModuleType:
    """Import a PostgreSQL adapter, or say how to install what it needs (exit 3)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise CapabilityUnavailable(
            f"PostgreSQL support is not installed ({exc}); install it with: pip install 'psycopg[binary]>=3.1' (the postgres extra of ptah-eval)"
        ) from None


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
