"""The default store: generations and their vectors in one SQLite file.

Layout: the tables :mod:`ptah.adapters.stores.records` creates, each column described there.

Concurrency. The file is in WAL mode: a writer never blocks readers, and a
reader inside :meth:`SqliteStore.snapshot` sees one consistent state of the
store (one read transaction) however many batches a build commits meanwhile.
Every write is one short transaction, so a process killed at any moment
(SIGKILL included) leaves the store as of its last commit. Two builds of the
same generation are kept apart by :meth:`SqliteStore.build_lock`, an
``fcntl.flock`` on a file beside the store that the OS releases when the
holder dies.

Damage. A file SQLite reports as
corrupt, a vector that is not finite, or one that disagrees with its CRC-32
or with the index is a :class:`StoreDamaged` (exit 3), never a result:
:meth:`StoreSnapshot.matrix` checks what it reads, :meth:`StoreSnapshot.check`
(``verify``) checks the whole file and the generation.
"""

from __future__ import annotations

import os
import sqlite3
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ptah.adapters.stores.base import VECTOR_DTYPE, Capabilities
from ptah.adapters.stores.records import (
    GENERATION_COLUMNS,
    GENERATION_REFRESH,
    GenerationRecord,
    LexicalTable,
    SnapshotReads,
    check_dimension,
    generation_values,
    migrate,
)  # GenerationRecord re-exported
from ptah.adapters.stores.records import (
    now as _now,
)
from ptah.adapters.stores.sqlite_lock import build_lock
from ptah.adapters.stores.sqlite_snapshot import StoreSnapshot  # re-exported
from ptah.adapters.stores.sqlite_snapshot import guarded as _guarded
from ptah.core.errors import StoreUnavailable

_BUSY_TIMEOUT_S = 30.0
SQLITE_CAPABILITIES = Capabilities(lexical_index=True, vector_index=False)


class SqliteStore(SnapshotReads, LexicalTable):
    """A SQLite store file, migrated to the current schema when opened."""

    capabilities = SQLITE_CAPABILITIES

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.where = f"store {self.path}"
        if not self.path.exists():
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreUnavailable(
                    f"cannot create the store folder {self.path.parent}: {exc.strerror}."
                ) from exc
        elif self.path.is_dir():
            raise StoreUnavailable(f"store {self.path} is a folder, not a SQLite file.")
        with _guarded(self.path):
            self._connection = self._connect()
            self._connection.execute("PRAGMA journal_mode=WAL")
            migrate(self._connection, str(self.path))

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path, isolation_level=None, timeout=_BUSY_TIMEOUT_S, check_same_thread=False
        )
        # WAL with synchronous=NORMAL: a crash of the process never loses a commit
        # or corrupts the file; only a power cut can lose the last commits.
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute("PRAGMA foreign_keys=ON")
        return connection

    def close(self) -> None:
        self._connection.close()

    def _guarded(self):
        return _guarded(self.path)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with _guarded(self.path):
            self._connection.execute("BEGIN IMMEDIATE")
            try:
                yield self._connection
            except BaseException:
                self._connection.execute("ROLLBACK")
                raise
            self._connection.execute("COMMIT")

    # --- reading --------------------------------------------------------------

    @contextmanager
    def snapshot(self) -> Iterator[StoreSnapshot]:
        """One read transaction on its own connection: every read inside sees the same state."""
        with _guarded(self.path):
            connection = self._connect()
            try:
                connection.execute("BEGIN")
                connection.execute(
                    "SELECT count(*) FROM migrations"
                ).fetchone()  # the snapshot starts here
                yield StoreSnapshot(connection, self.path)
            finally:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                connection.close()

    # --- writing --------------------------------------------------------------

    def register_generation(self, record: GenerationRecord) -> None:
        """Record a generation (or refresh its name, versions and ``updated_at``); ``created_at`` is
        kept."""
        with self._transaction() as connection:
            connection.execute(
                f"INSERT INTO generations ({GENERATION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                f"{GENERATION_REFRESH}",
                generation_values(record),
            )
            stored = connection.execute(
                "SELECT dimension FROM generations WHERE identity = ?", (record.identity,)
            )
            check_dimension(record, stored.fetchone()[0])

    def write_vectors(
        self, identity: str, rows: list[tuple[str, str, str]], vectors: np.ndarray
    ) -> None:
        data_array = np.ascontiguousarray(vectors, dtype=VECTOR_DTYPE)
        if data_array.ndim != 2 or data_array.shape[0] != len(rows):
            raise ValueError(f"{len(rows)} rows for vectors of shape {data_array.shape}")
        data = data_array.tobytes()
        row_bytes = data_array.shape[1] * VECTOR_DTYPE.itemsize
        blobs = [data[i * row_bytes : (i + 1) * row_bytes] for i in range(len(rows))]
        values = [
            (identity, row_identity, key, digest, blob, zlib.crc32(blob))
            for (row_identity, key, digest), blob in zip(rows, blobs)
        ]
        with self._transaction() as connection:
            connection.executemany(
                "INSERT INTO vectors (generation, row_identity, key, text_sha256, vector, vector_crc32) "
                "VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(generation, row_identity) DO UPDATE SET key = excluded.key, "
                "text_sha256 = excluded.text_sha256, vector = excluded.vector, vector_crc32 = excluded.vector_crc32",
                values,
            )
            connection.execute(
                "UPDATE generations SET updated_at = ? WHERE identity = ?", (_now(), identity)
            )

    def delete_vectors(self, identity: str, row_identities: Iterable[str]) -> int:
        doomed = [(identity, row_identity) for row_identity in row_identities]
        if not doomed:
            return 0
        with self._transaction() as connection:
            before = connection.total_changes
            connection.executemany(
                "DELETE FROM vectors WHERE generation = ? AND row_identity = ?", doomed
            )
            deleted = connection.total_changes - before
            connection.execute(
                "UPDATE generations SET updated_at = ? WHERE identity = ?", (_now(), identity)
            )
        return deleted

    def drop_generation(self, identity: str) -> int:
        """The file keeps its size: SQLite reuses the freed pages for later builds."""
        with self._transaction() as connection:
            removed = connection.execute(
                "DELETE FROM vectors WHERE generation = ?", (identity,)
            ).rowcount
            connection.execute("DELETE FROM query_cache WHERE generation = ?", (identity,))
            connection.execute("DELETE FROM generations WHERE identity = ?", (identity,))
        return removed

    # --- query cache ----------------------------------------------------------

    def cache_queries(self, identity: str, vectors: Mapping[str, np.ndarray]) -> None:
        blobs = {
            text: np.ascontiguousarray(v, dtype=VECTOR_DTYPE).reshape(-1).tobytes()
            for text, v in vectors.items()
        }
        if not blobs:
            return
        with self._transaction() as connection:
            connection.executemany(
                "INSERT INTO query_cache (generation, query, vector, vector_crc32) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(generation, query) DO UPDATE SET vector = excluded.vector, "
                "vector_crc32 = excluded.vector_crc32",
                [(identity, text, blob, zlib.crc32(blob)) for text, blob in blobs.items()],
            )

    # --- build lock -----------------------------------------------------------

    def lock_path(self, identity: str) -> Path:
        digest = identity.split(":", 1)[-1][:16]
        return self.path.with_name(f"{self.path.name}.build-{digest}.lock")

    def build_lock(self, identity: str, name: str):
        return build_lock(self.lock_path(identity), name)
