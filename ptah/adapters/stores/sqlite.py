"""The default store: generations and their vectors in one SQLite file.

Layout (see :mod:`ptah.adapters.stores.migrations` for the schema):

* ``generations`` -- one row per generation identity: display name, model,
  settings, dimension, model digest, what the identity covers and the library
  versions that computed the vectors;
* ``vectors`` -- one row per (generation identity, row identity): the key as a
  corpus spells it, the SHA-256 of the exact text embedded, the vector as
  ``dimension`` float32 values, little-endian, and its CRC-32;
* ``query_cache`` -- query vectors per (generation identity, query text);
* ``lexical_indexes`` -- the lexical channel's serialised BM25 indexes, keyed
  by (text fingerprint, settings) (see :mod:`ptah.adapters.lexical`).

Concurrency. The file is in WAL mode: a writer never blocks readers, and a
reader inside :meth:`SqliteStore.snapshot` sees one consistent state of the
store (one read transaction) however many batches a build commits meanwhile.
Every write is one short transaction, so a process killed at any moment
(SIGKILL included) leaves the store as of its last commit. Two builds of the
same generation are kept apart by :meth:`SqliteStore.build_lock`, an
``fcntl.flock`` on a file beside the store that the OS releases when the
holder dies.

Damage (:mod:`ptah.adapters.stores.sqlite_damage`). A file SQLite reports as
corrupt, a vector that is not finite, or one that disagrees with its CRC-32
or with the index is a :class:`StoreDamaged` (exit 3), never a result:
:meth:`StoreSnapshot.matrix` checks what it reads, :meth:`StoreSnapshot.check`
(``verify``) checks the whole file and the generation.
"""

from __future__ import annotations

import json
import os
import sqlite3
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Mapping

import numpy as np

from ptah.adapters.stores.migrations import migrate
from ptah.adapters.stores.records import GENERATION_COLUMNS as _GENERATION_COLUMNS
from ptah.adapters.stores.records import GenerationRecord, Matrix, now as _now, to_json as _json  # re-exported
from ptah.adapters.stores.registry import SQLITE_CAPABILITIES
from ptah.adapters.stores.sqlite_damage import check_vectors, damaged, integrity_problems, refuse_non_finite
from ptah.adapters.stores.sqlite_damage import guarded as _guarded
from ptah.adapters.stores.sqlite_lock import build_lock
from ptah.adapters.stores.vector_checks import VECTOR_DTYPE, usable_query_vector
from ptah.core.errors import StoreUnavailable

# Rows fetched per step when reading a matrix: bounds the temporary bytes
# beside the preallocated matrix (8192 x 384 x 4 = 12 MiB).
_READ_CHUNK = 8192
# Bound parameters per IN (...) list, well under SQLite's limit.
_IN_CHUNK = 500
_BUSY_TIMEOUT_S = 30.0


def _record(row: tuple) -> GenerationRecord:
    identity, name, model, settings, dimension, digest, parts, versions, created, updated = row
    return GenerationRecord(
        identity=identity, name=name, model=model, settings=json.loads(settings), dimension=int(dimension),
        model_digest=digest, identity_parts=json.loads(parts), library_versions=json.loads(versions),
        created_at=created, updated_at=updated,
    )


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class StoreSnapshot:
    """Reads from one consistent state of the store (a single read transaction)."""

    def __init__(self, connection: sqlite3.Connection, path: Path):
        self._connection = connection
        self._path = path

    def generation(self, identity: str) -> GenerationRecord | None:
        """The generation with this identity, or None when it was never registered."""
        with _guarded(self._path):
            row = self._connection.execute(
                f"SELECT {_GENERATION_COLUMNS} FROM generations WHERE identity = ?", (identity,)
            ).fetchone()
        return None if row is None else _record(row)

    def generations(self) -> list[GenerationRecord]:
        """Every registered generation, oldest first."""
        with _guarded(self._path):
            rows = self._connection.execute(
                f"SELECT {_GENERATION_COLUMNS} FROM generations ORDER BY created_at, identity"
            ).fetchall()
        return [_record(row) for row in rows]

    def vector_count(self, identity: str) -> int:
        """How many vectors the generation has, counted in the index :meth:`digests` reads."""
        with _guarded(self._path):
            return self._connection.execute(
                "SELECT count(*) FROM vectors INDEXED BY vectors_digests WHERE generation = ?", (identity,)
            ).fetchone()[0]

    def digests(self, identity: str) -> dict[str, tuple[str, str]]:
        """``row identity -> (key, text SHA-256)`` for every vector of the generation.

        Read from a covering index: no vector bytes are touched.
        """
        with _guarded(self._path):
            cursor = self._connection.execute(
                "SELECT row_identity, key, text_sha256 FROM vectors INDEXED BY vectors_digests WHERE generation = ?",
                (identity,),
            )
            return {row_identity: (key, digest) for row_identity, key, digest in cursor}

    def matrix(self, identity: str) -> Matrix:
        """The generation's vectors as one C-contiguous float32 ``(n, dimension)`` matrix.

        The matrix is allocated once at its final size and the stored bytes are
        copied into it chunk by chunk, so the peak memory is the matrix plus
        one chunk plus the key lists -- no per-row arrays. Rows are ordered by
        row identity. An unregistered generation is an empty ``(0, 0)`` matrix.
        Raises :class:`StoreDamaged` when a vector is not ``dimension`` finite
        float32 values, or when the table and the index :meth:`digests` reads
        disagree on how many vectors there are: nothing non-finite is measured.
        """
        record = self.generation(identity)
        if record is None:
            return Matrix([], [], np.empty((0, 0), dtype=np.float32))
        count = self.vector_count(identity)
        vectors = np.empty((count, record.dimension), dtype=VECTOR_DTYPE)
        keys: list[str] = []
        row_identities: list[str] = []
        disagree = f"its index and its table disagree on how many vectors generation {record.name} has"
        for rows, block in self._blocks(record):
            if len(keys) + len(rows) > count:
                raise damaged(self._path, disagree)
            vectors[len(keys) : len(keys) + len(rows)] = block
            keys.extend(row[0] for row in rows)
            row_identities.extend(row[1] for row in rows)
        if len(keys) != count:  # one read transaction: only damage makes them differ
            raise damaged(self._path, disagree)
        refuse_non_finite(self._path, record.name, vectors, keys)
        if VECTOR_DTYPE != np.dtype(np.float32):  # a big-endian machine
            vectors = vectors.astype(np.float32)
        return Matrix(keys, row_identities, vectors)

    def check(self, identity: str) -> None:
        """StoreDamaged unless SQLite's ``integrity_check`` passes and the generation's vectors are finite and
        match their CRC-32s (:mod:`ptah.adapters.stores.sqlite_damage`): one read of the whole file."""
        with _guarded(self._path):
            found = integrity_problems(self._connection)
        if found:
            raise damaged(self._path, f"SQLite's integrity check: {found}")
        record = self.generation(identity)
        if record is not None:
            check_vectors(self._path, record.name, self._blocks(record))

    def _blocks(self, record: GenerationRecord) -> Iterator[tuple[list[tuple], np.ndarray]]:
        """The generation's ``(key, row identity, vector, CRC-32)`` rows by row identity, :data:`_READ_CHUNK` at
        a time, each with its vectors as a read-only array; StoreDamaged for a vector of another size."""
        size = record.dimension
        row_bytes = size * VECTOR_DTYPE.itemsize
        with _guarded(self._path):
            cursor = self._connection.execute(
                "SELECT key, row_identity, vector, vector_crc32 FROM vectors WHERE generation = ? "
                "ORDER BY row_identity", (record.identity,),
            )
            while rows := cursor.fetchmany(_READ_CHUNK):
                try:
                    data = b"".join(row[2] for row in rows)
                except TypeError:  # a TEXT value where a BLOB was written
                    data = b""
                if len(data) != len(rows) * row_bytes:
                    raise damaged(self._path, f"a vector of generation {record.name} is not {size} float32 values")
                yield rows, np.frombuffer(data, dtype=VECTOR_DTYPE).reshape(len(rows), size)

    def cached_queries(self, identity: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached float32 vectors of those ``texts`` that have a usable one under this generation.

        A cached vector that is not ``dimension`` finite values is left out, so
        the caller embeds that query again (and the cache entry is replaced).
        """
        wanted = list(dict.fromkeys(texts))
        record = self.generation(identity)
        dimension = record.dimension if record is not None else None
        found: dict[str, np.ndarray] = {}
        with _guarded(self._path):
            for chunk in _chunks(wanted, _IN_CHUNK):
                marks = ", ".join("?" * len(chunk))
                cursor = self._connection.execute(
                    f"SELECT query, vector, vector_crc32 FROM query_cache WHERE generation = ? AND query IN ({marks})",
                    (identity, *chunk),
                )
                for query, blob, crc32 in cursor:
                    vector = usable_query_vector(blob, dimension, crc32)
                    if vector is not None:
                        found[query] = vector
        return found


class SqliteStore:
    """A SQLite store file, migrated to the current schema when opened."""

    capabilities = SQLITE_CAPABILITIES

    def __init__(self, path: str | os.PathLike, *, create: bool = True):
        self.path = Path(path)
        self.where = f"store {self.path}"
        if not self.path.exists():
            if not create:
                raise StoreUnavailable(f"there is no store at {self.path}: nothing has been built yet (run `ptah inference build`).")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreUnavailable(f"cannot create the store folder {self.path.parent}: {exc.strerror}.") from exc
        elif self.path.is_dir():
            raise StoreUnavailable(f"store {self.path} is a folder, not a SQLite file.")
        with _guarded(self.path):
            self._connection = self._connect()
            self._connection.execute("PRAGMA journal_mode=WAL")
            migrate(self._connection, str(self.path))

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, isolation_level=None, timeout=_BUSY_TIMEOUT_S, check_same_thread=False)
        # WAL with synchronous=NORMAL: a crash of the process never loses a commit
        # or corrupts the file; only a power cut can lose the last commits.
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute("PRAGMA foreign_keys=ON")
        return connection

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "SqliteStore":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

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
                connection.execute("SELECT count(*) FROM migrations").fetchone()  # the snapshot starts here
                yield StoreSnapshot(connection, self.path)
            finally:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                connection.close()

    def generation(self, identity: str) -> GenerationRecord | None:
        with self.snapshot() as snapshot:
            return snapshot.generation(identity)

    def generations(self) -> list[GenerationRecord]:
        with self.snapshot() as snapshot:
            return snapshot.generations()

    # --- writing --------------------------------------------------------------

    def register_generation(self, record: GenerationRecord) -> None:
        """Record a generation (or refresh its name, versions and ``updated_at``); ``created_at`` is kept."""
        now = _now()
        with self._transaction() as connection:
            connection.execute(
                f"INSERT INTO generations ({_GENERATION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(identity) DO UPDATE SET name = excluded.name, model = excluded.model, "
                "settings = excluded.settings, model_digest = excluded.model_digest, "
                "identity_parts = excluded.identity_parts, library_versions = excluded.library_versions, "
                "updated_at = excluded.updated_at",
                (
                    record.identity,
                    record.name,
                    record.model,
                    _json(record.settings),
                    int(record.dimension),
                    record.model_digest,
                    _json(record.identity_parts),
                    _json(record.library_versions),
                    now,
                    now,
                ),
            )
            stored = connection.execute("SELECT dimension FROM generations WHERE identity = ?", (record.identity,)).fetchone()
            if stored[0] != int(record.dimension):
                raise StoreUnavailable(
                    f"generation {record.identity} is stored with dimension {stored[0]}, "
                    f"but its model now gives {record.dimension}."
                )

    def write_vectors(self, identity: str, rows: list[tuple[str, str, str]], vectors: np.ndarray) -> None:
        """Insert or replace vectors, all in one transaction.

        ``rows`` are ``(row identity, key, text SHA-256)``, one per row of
        ``vectors`` (shape ``(len(rows), dimension)``).
        """
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
            connection.execute("UPDATE generations SET updated_at = ? WHERE identity = ?", (_now(), identity))

    def delete_vectors(self, identity: str, row_identities: Iterable[str]) -> int:
        """Delete the vectors of these rows, in one transaction; returns how many were deleted."""
        doomed = [(identity, row_identity) for row_identity in row_identities]
        if not doomed:
            return 0
        with self._transaction() as connection:
            before = connection.total_changes
            connection.executemany("DELETE FROM vectors WHERE generation = ? AND row_identity = ?", doomed)
            deleted = connection.total_changes - before
            connection.execute("UPDATE generations SET updated_at = ? WHERE identity = ?", (_now(), identity))
        return deleted

    def drop_generation(self, identity: str) -> int:
        """Remove a generation: its vectors, cached queries and record, in one transaction; how many vectors went.

        The file keeps its size: SQLite reuses the freed pages for later builds."""
        with self._transaction() as connection:
            removed = connection.execute("DELETE FROM vectors WHERE generation = ?", (identity,)).rowcount
            connection.execute("DELETE FROM query_cache WHERE generation = ?", (identity,))
            connection.execute("DELETE FROM generations WHERE identity = ?", (identity,))
        return removed

    # --- query cache ----------------------------------------------------------

    def cached_queries(self, identity: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached float32 vectors of those ``texts`` that have one under this generation."""
        with self.snapshot() as snapshot:
            return snapshot.cached_queries(identity, texts)

    def cache_queries(self, identity: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Store query vectors (text -> 1-D float32 vector) under a registered generation, in one transaction."""
        blobs = {text: np.ascontiguousarray(v, dtype=VECTOR_DTYPE).reshape(-1).tobytes() for text, v in vectors.items()}
        if not blobs:
            return
        with self._transaction() as connection:
            connection.executemany(
                "INSERT INTO query_cache (generation, query, vector, vector_crc32) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(generation, query) DO UPDATE SET vector = excluded.vector, "
                "vector_crc32 = excluded.vector_crc32",
                [(identity, text, blob, zlib.crc32(blob)) for text, blob in blobs.items()],
            )

    # --- lexical indexes (ptah.adapters.lexical) --------------------------------

    def lexical_index(self, fingerprint: str, settings: str) -> bytes | None:
        """The serialised lexical index of this text fingerprint and settings, or None."""
        with _guarded(self.path):
            row = self._connection.execute(
                "SELECT serialized FROM lexical_indexes WHERE fingerprint = ? AND settings = ?", (fingerprint, settings)
            ).fetchone()
        return None if row is None else bytes(row[0])

    def save_lexical_index(
        self, fingerprint: str, settings: str, template_sha256: str, rows: int, vocabulary: int, serialized: bytes
    ) -> None:
        """Keep a lexical index, replacing the one of the same template and settings, in one transaction."""
        with self._transaction() as connection:
            connection.execute(
                "DELETE FROM lexical_indexes WHERE template_sha256 = ? AND settings = ?", (template_sha256, settings)
            )
            connection.execute(
                "INSERT OR REPLACE INTO lexical_indexes (fingerprint, settings, template_sha256, rows, vocabulary, "
                "serialized, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (fingerprint, settings, template_sha256, rows, vocabulary, serialized, _now()),
            )

    # --- build lock -----------------------------------------------------------

    def lock_path(self, identity: str) -> Path:
        digest = identity.split(":", 1)[-1][:16]
        return self.path.with_name(f"{self.path.name}.build-{digest}.lock")

    def build_lock(self, identity: str, name: str):
        """Hold the exclusive build lock of a generation, or refuse at once (:func:`sqlite_lock.build_lock`)."""
        return build_lock(self.lock_path(identity), name)
