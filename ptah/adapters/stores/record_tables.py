"""The :class:`~ptah.adapters.stores.base.RecordStore` of each store kind: one table of small text
records.

``records`` (SQLite, migration ``0004_records``) and ``ptah_records``
(PostgreSQL, ``0003_records``) hold ``(kind, key) -> body`` with the order
each record was first added. ``ptah serve`` keeps its tokens (digests
only), registered corpora and evaluation jobs there, in the project's own
store, so they survive a restart and a backup of the store keeps them.

Each record store has its own connection, a store's opened for it (the
server calls it from several threads: one lock serialises the calls), and
each call is one transaction. :meth:`RecordTable.server_lock` keeps a
second server of the same store from starting (the jobs one server runs
are its own to recover).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager

from ptah.adapters.stores.records import now

_UPSERT = "INSERT INTO {table} (kind, key, body, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (kind, key) DO "


class RecordTable:
    """The records in ``table`` of an open store whose connection runs one statement per call in
    autocommit mode; ``marker`` is its driver's parameter marker, ``guarded`` what turns its
    failures into ptah's errors."""

    def __init__(self, store, table: str, marker: str, guarded: Callable[[], ContextManager]):
        self._store, self._table, self._marker, self._guarded = store, table, marker, guarded
        self._lock = threading.Lock()

    def _run(self, statement: str, parameters: tuple) -> tuple[int, list]:
        """``(rows changed, rows returned)`` of one statement (``{table}`` and ``?`` in it), under
        the lock."""
        with self._lock, self._guarded():
            statement = statement.format(table=self._table).replace("?", self._marker)
            cursor = self._store._connection.execute(statement, parameters)
            return cursor.rowcount, (cursor.fetchall() if cursor.description else [])

    def add(self, kind: str, key: str, body: str) -> bool:
        return self._run(_UPSERT + "NOTHING", (kind, key, body, now()))[0] == 1

    def put(self, kind: str, key: str, body: str) -> None:
        self._run(
            _UPSERT + "UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
            (kind, key, body, now()),
        )

    def get(self, kind: str, key: str) -> str | None:
        rows = self._run("SELECT body FROM {table} WHERE kind = ? AND key = ?", (kind, key))[1]
        return rows[0][0] if rows else None

    def items(self, kind: str) -> list[tuple[str, str]]:
        return [
            (key, body)
            for key, body in self._run(
                "SELECT key, body FROM {table} WHERE kind = ? ORDER BY seq", (kind,)
            )[1]
        ]

    def page(self, kind: str, after: str | None, limit: int) -> list[tuple[str, str]]:
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
        return self._run("DELETE FROM {table} WHERE kind = ? AND key = ?", (kind, key))[0] == 1

    def server_lock(self) -> ContextManager[None]:
        raise NotImplementedError

    def close(self) -> None:
        with self._lock:
            self._store.close()


class SqliteRecords(RecordTable):
    """Records in the SQLite store file (created, and migrated, when opened)."""

    def __init__(self, path):
        from ptah.adapters.stores.sqlite import SqliteStore
        from ptah.adapters.stores.sqlite_damage import guarded

        store = SqliteStore(path)
        super().__init__(store, "records", "?", lambda: guarded(store.path))

    def server_lock(self) -> ContextManager[None]:
        """An ``fcntl.flock`` on ``<store>.serve.lock``, beside the store file."""
        from ptah.adapters.stores.sqlite_lock import server_lock

        path = self._store.path
        return server_lock(path.with_name(f"{path.name}.serve.lock"))


class PostgresRecords(RecordTable):
    """Records in the pgvector store's database (``ptah_records``; migrated when opened)."""

    def __init__(self, url: str):
        from ptah.adapters.stores.pgvector import PgvectorStore

        store = PgvectorStore(url)
        super().__init__(store, "ptah_records", "%s", store._guarded)
        self._url = url

    def server_lock(self) -> ContextManager[None]:
        """A session-level advisory lock, on a connection of its own
        (:mod:`~ptah.adapters.stores.pgvector_lock`)."""
        from ptah.adapters.stores.pgvector_lock import server_lock

        return server_lock(self._url)
