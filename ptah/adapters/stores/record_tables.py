"""The :class:`~ptah.adapters.stores.base.RecordStore` of each store kind: one table of small text records.

``records`` (SQLite, migration ``0004_records``) and ``ptah_records``
(PostgreSQL, ``0003_records``) hold ``(kind, key) -> body`` with the order
each record was first added. ``ptah serve`` keeps its tokens (digests
only), registered corpora and evaluation jobs there, in the project's own
store, so they survive a restart and a backup of the store keeps them.

Each record store has its own connection (the server calls it from several
threads: one lock serialises the calls) and each call is one transaction.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from ptah.adapters.stores.migrations import migrate as migrate_sqlite
from ptah.adapters.stores.records import now
from ptah.adapters.stores.sqlite_damage import guarded as sqlite_guarded
from ptah.core.errors import StoreUnavailable

_BUSY_TIMEOUT_S = 30.0


class SqliteRecords:
    """Records in the SQLite store file (created, and migrated, when opened)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(f"cannot create the store folder {self.path.parent}: {exc.strerror}.") from exc
        if self.path.is_dir():
            raise StoreUnavailable(f"store {self.path} is a folder, not a SQLite file.")
        self._lock = threading.Lock()
        with sqlite_guarded(self.path):
            self._connection = sqlite3.connect(self.path, isolation_level=None, timeout=_BUSY_TIMEOUT_S,
                                               check_same_thread=False)
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute("PRAGMA synchronous=NORMAL")
            migrate_sqlite(self._connection, str(self.path))

    def _run(self, statement: str, parameters: tuple = ()) -> sqlite3.Cursor:
        with self._lock, sqlite_guarded(self.path):
            return self._connection.execute(statement, parameters)

    def add(self, kind: str, key: str, body: str) -> bool:
        cursor = self._run("INSERT INTO records (kind, key, body, updated_at) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT (kind, key) DO NOTHING", (kind, key, body, now()))
        return cursor.rowcount == 1

    def put(self, kind: str, key: str, body: str) -> None:
        self._run("INSERT INTO records (kind, key, body, updated_at) VALUES (?, ?, ?, ?) "
                  "ON CONFLICT (kind, key) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
                  (kind, key, body, now()))

    def get(self, kind: str, key: str) -> str | None:
        with self._lock, sqlite_guarded(self.path):
            row = self._connection.execute("SELECT body FROM records WHERE kind = ? AND key = ?", (kind, key)).fetchone()
        return None if row is None else row[0]

    def items(self, kind: str) -> list[tuple[str, str]]:
        with self._lock, sqlite_guarded(self.path):
            return self._connection.execute("SELECT key, body FROM records WHERE kind = ? ORDER BY seq", (kind,)).fetchall()

    def remove(self, kind: str, key: str) -> bool:
        return self._run("DELETE FROM records WHERE kind = ? AND key = ?", (kind, key)).rowcount == 1

    def close(self) -> None:
        with self._lock:
            self._connection.close()


class PostgresRecords:
    """Records in the pgvector store's database (``ptah_records``; migrated when opened)."""

    def __init__(self, url: str):
        from ptah.adapters.postgres import connect
        from ptah.adapters.stores.pgvector_schema import migrate
        from ptah.core.spec import redact_url

        self.url = url
        self.where = f"store {redact_url(url)}"
        self._lock = threading.Lock()
        self._connection = connect(url, StoreUnavailable, "store", autocommit=True)
        try:
            migrate(self._connection, url)
        except BaseException:
            self._connection.close()
            raise

    def _run(self, statement: str, parameters: tuple = ()):
        from ptah.adapters.postgres import guarded

        with self._lock, guarded(self.url, StoreUnavailable, "store"):
            cursor = self._connection.execute(statement, parameters)
            return cursor.rowcount, (cursor.fetchall() if cursor.description else [])

    def add(self, kind: str, key: str, body: str) -> bool:
        count, _ = self._run("INSERT INTO ptah_records (kind, key, body, updated_at) VALUES (%s, %s, %s, %s) "
                             "ON CONFLICT (kind, key) DO NOTHING", (kind, key, body, now()))
        return count == 1

    def put(self, kind: str, key: str, body: str) -> None:
        self._run("INSERT INTO ptah_records (kind, key, body, updated_at) VALUES (%s, %s, %s, %s) "
                  "ON CONFLICT (kind, key) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
                  (kind, key, body, now()))

    def get(self, kind: str, key: str) -> str | None:
        _, rows = self._run("SELECT body FROM ptah_records WHERE kind = %s AND key = %s", (kind, key))
        return rows[0][0] if rows else None

    def items(self, kind: str) -> list[tuple[str, str]]:
        _, rows = self._run("SELECT key, body FROM ptah_records WHERE kind = %s ORDER BY seq", (kind,))
        return [(key, body) for key, body in rows]

    def remove(self, kind: str, key: str) -> bool:
        count, _ = self._run("DELETE FROM ptah_records WHERE kind = %s AND key = %s", (kind, key))
        return count == 1

    def close(self) -> None:
        with self._lock:
            self._connection.close()
