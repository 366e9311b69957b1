"""The server's records: one table of small text records in the project's own store.

``records`` (SQLite, migration ``0004_records``) and ``ptah_records``
(PostgreSQL, ``0003_records``) hold ``(kind, key) -> body`` with the order
each record was first added. ``ptah serve`` keeps its tokens (digests
only), registered corpora and evaluation jobs there, in the project's own
store, so they survive a restart and a backup of the store keeps them.

The store kinds that keep them are those of :data:`TABLES`; the records of
one store have their own connection, a store's opened for them (the server
calls it from several threads: one lock serialises the calls), and each call
is one transaction. :meth:`Records.server_lock` keeps a second server of the
same store from starting (the jobs one server runs are its own to recover).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from pathlib import Path
from typing import Any, NamedTuple

from ptah.adapters.stores.records import now
from ptah.adapters.stores.registry import open_store, store_kind
from ptah.core.errors import CapabilityUnavailable

_UPSERT = "INSERT INTO {table} (kind, key, body, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (kind, key) DO "
_REFUSAL = (
    "another ptah serve is running on this store ({holder}); stop it first: one server per store."
)


def _sqlite_lock(store: Any) -> ContextManager[None]:
    """An ``fcntl.flock`` on ``<store>.serve.lock``, beside the store file."""
    from ptah.adapters.stores.sqlite_lock import exclusive_lock

    path = Path(store.path)
    return exclusive_lock(
        path.with_name(f"{path.name}.serve.lock"),
        "server lock",
        lambda holder: _REFUSAL.format(holder=f"pid {holder}"),
    )


def _pgvector_lock(store: Any) -> ContextManager[None]:
    """A session-level advisory lock of the store's database and schema, on a connection of its
    own."""
    from ptah.adapters.stores.pgvector_lock import advisory_lock
    from ptah.adapters.stores.pgvector_schema import generation_lock_key

    def key(connection) -> int:
        schema = connection.execute("SELECT current_schema()").fetchone()[0]
        return generation_lock_key(f"ptah serve in schema {schema}")

    return advisory_lock(
        store.url, "ptah serve ", key, lambda holder: _REFUSAL.format(holder=holder)
    )


class Table(NamedTuple):
    """Where a store kind keeps the records: its table, its driver's parameter marker, and the
    server's lock of a store of it."""

    name: str
    marker: str
    lock: Callable[[Any], ContextManager[None]]


# the store kinds that keep the server's records (their migrations create the table)
TABLES = {
    "sqlite": Table("records", "?", _sqlite_lock),
    "pgvector": Table("ptah_records", "%s", _pgvector_lock),
}


def open_records(location: str) -> Records:
    """The records of the store at ``location`` (created when absent); CapabilityUnavailable (exit
    3) when its kind keeps none."""
    kind = store_kind(location)
    if kind not in TABLES:
        raise CapabilityUnavailable(
            f'the store kind "{kind}" keeps no records, which the server needs.'
        )
    store = open_store(location, create=True)
    assert store is not None, "a store opened with create=True is there"
    return Records(store, TABLES[kind])


class Records:
    """The records of an open store, whose connection runs one statement per call in autocommit
    mode; its ``_guarded()`` turns its failures into ptah's errors."""

    def __init__(self, store: Any, table: Table):
        self._store, self._table = store, table
        self._lock = threading.Lock()

    def _run(self, statement: str, parameters: tuple) -> tuple[int, list]:
        """``(rows changed, rows returned)`` of one statement (``{table}`` and ``?`` in it), under
        the lock."""
        with self._lock, self._store._guarded():
            statement = statement.format(table=self._table.name).replace("?", self._table.marker)
            cursor = self._store._connection.execute(statement, parameters)
            return cursor.rowcount, (cursor.fetchall() if cursor.description else [])

    def add(self, kind: str, key: str, body: str) -> bool:
        """Add a record; False (and nothing written) when ``(kind, key)`` exists already."""
        return self._run(_UPSERT + "NOTHING", (kind, key, body, now()))[0] == 1

    def put(self, kind: str, key: str, body: str) -> None:
        """Add a record or replace its body (its place in the order kept)."""
        self._run(
            _UPSERT + "UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
            (kind, key, body, now()),
        )

    def get(self, kind: str, key: str) -> str | None:
        rows = self._run("SELECT body FROM {table} WHERE kind = ? AND key = ?", (kind, key))[1]
        return rows[0][0] if rows else None

    def items(self, kind: str) -> list[tuple[str, str]]:
        """Every ``(key, body)`` of a kind, in the order first added."""
        return [
            (key, body)
            for key, body in self._run(
                "SELECT key, body FROM {table} WHERE kind = ? ORDER BY seq", (kind,)
            )[1]
        ]

    def page(self, kind: str, after: str | None, limit: int) -> list[tuple[str, str]]:
        """At most ``limit`` ``(key, body)`` of a kind in that order, those added after the record
        ``after`` (None: from the first; a key that does not exist: none)."""
        since = (
            ""
            if after is None
            else "AND seq > (SELECT seq FROM {table} WHERE kind = ? AND key = ?) "
        )
        rows = self._run(
            "SELECT key, body FROM {table} WHERE kind = ? " + since + "ORDER BY seq LIMIT ?",
            (kind, *(() if after is None else (kind, after)), limit),
        )[1]
        return [(key, body) for key, body in rows]

    def remove(self, kind: str, key: str) -> bool:
        """Remove a record; False when there was none."""
        return self._run("DELETE FROM {table} WHERE kind = ? AND key = ?", (kind, key))[0] == 1

    def server_lock(self) -> ContextManager[None]:
        """Held by the one server of this store for its life; StoreUnavailable at once when another
        holds it."""
        return self._table.lock(self._store)

    def close(self) -> None:
        with self._lock:
            self._store.close()
