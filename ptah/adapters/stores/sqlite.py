"""The default store: generations and their vectors in one SQLite file.

Layout (see :mod:`ptah.adapters.stores.migrations` for the schema):

* ``generations`` -- one row per generation identity: display name, model,
  settings, dimension, model digest, what the identity covers and the library
  versions that computed the vectors;
* ``vectors`` -- one row per (generation identity, row identity): the key as a
  corpus spells it, the SHA-256 of the exact text embedded and the vector as
  ``dimension`` float32 values, little-endian;
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
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator, Mapping

import numpy as np

from ptah.adapters.stores.migrations import migrate
from ptah.core.errors import StoreUnavailable

VECTOR_DTYPE = np.dtype("<f4")
# Rows fetched per step when reading a matrix: bounds the temporary bytes
# beside the preallocated matrix (8192 x 384 x 4 = 12 MiB).
_READ_CHUNK = 8192
# Bound parameters per IN (...) list, well under SQLite's limit.
_IN_CHUNK = 500
_BUSY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class GenerationRecord:
    """What the store knows of one generation identity."""

    identity: str
    name: str
    model: str
    settings: Mapping = field(default_factory=dict)
    dimension: int = 0
    model_digest: str | None = None
    identity_parts: Mapping = field(default_factory=dict)
    library_versions: Mapping = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""

    def as_dict(self) -> dict:
        return {name: dict(value) if isinstance(value, Mapping) else value for name, value in vars(self).items()}


@dataclass(frozen=True)
class Matrix:
    """A generation's vectors as one contiguous float32 matrix, rows ordered by row identity."""

    keys: list[str]
    row_identities: list[str]
    vectors: np.ndarray

    def __iter__(self):  # unpacks as (keys, row_identities, vectors)
        return iter((self.keys, self.row_identities, self.vectors))


_GENERATION_COLUMNS = (
    "identity, name, model, settings, dimension, model_digest, identity_parts, library_versions, created_at, updated_at"
)


def _record(row: tuple) -> GenerationRecord:
    identity, name, model, settings, dimension, digest, parts, versions, created, updated = row
    return GenerationRecord(
        identity=identity,
        name=name,
        model=model,
        settings=json.loads(settings),
        dimension=int(dimension),
        model_digest=digest,
        identity_parts=json.loads(parts),
        library_versions=json.loads(versions),
        created_at=created,
        updated_at=updated,
    )


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _json(value: Mapping) -> str:
    return json.dumps(dict(value), sort_keys=True, ensure_ascii=False, default=str)


@contextmanager
def _guarded(path: Path) -> Iterator[None]:
    """Turn SQLite's operational failures (locked, corrupt, disk full) into StoreUnavailable."""
    try:
        yield
    except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
        if isinstance(exc, (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError)):
            raise
        raise StoreUnavailable(f"store {path} cannot be used: {exc}.") from exc


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
        with _guarded(self._path):
            return self._connection.execute("SELECT count(*) FROM vectors WHERE generation = ?", (identity,)).fetchone()[0]

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
        """
        record = self.generation(identity)
        if record is None:
            return Matrix([], [], np.empty((0, 0), dtype=np.float32))
        dimension = record.dimension
        count = self.vector_count(identity)
        vectors = np.empty((count, dimension), dtype=VECTOR_DTYPE)
        target = memoryview(vectors).cast("B")
        row_bytes = dimension * VECTOR_DTYPE.itemsize
        keys: list[str] = []
        row_identities: list[str] = []
        offset = 0
        with _guarded(self._path):
            cursor = self._connection.execute(
                "SELECT key, row_identity, vector FROM vectors WHERE generation = ? ORDER BY row_identity", (identity,)
            )
            while rows := cursor.fetchmany(_READ_CHUNK):
                keys.extend(row[0] for row in rows)
                row_identities.extend(row[1] for row in rows)
                data = b"".join(row[2] for row in rows)
                if len(data) != len(rows) * row_bytes:
                    raise StoreUnavailable(
                        f"store {self._path} is damaged: a vector of generation {identity} "
                        f"does not hold {dimension} float32 values."
                    )
                target[offset : offset + len(data)] = data
                offset += len(data)
        if offset != count * row_bytes:  # cannot happen inside one read transaction
            raise StoreUnavailable(f"store {self._path} changed while generation {identity} was read.")
        if VECTOR_DTYPE != np.dtype(np.float32):  # a big-endian machine
            vectors = vectors.astype(np.float32)
        return Matrix(keys, row_identities, vectors)


    def cached_queries(self, identity: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached float32 vectors of those ``texts`` that have one under this generation."""
        wanted = list(dict.fromkeys(texts))
        found: dict[str, np.ndarray] = {}
        with _guarded(self._path):
            for chunk in _chunks(wanted, _IN_CHUNK):
                marks = ", ".join("?" * len(chunk))
                cursor = self._connection.execute(
                    f"SELECT query, vector FROM query_cache WHERE generation = ? AND query IN ({marks})",
                    (identity, *chunk),
                )
                for query, blob in cursor:
                    found[query] = np.frombuffer(blob, dtype=VECTOR_DTYPE).astype(np.float32)
        return found


class SqliteStore:
    """A SQLite store file, migrated to the current schema when opened."""

    def __init__(self, path: str | os.PathLike, *, create: bool = True):
        self.path = Path(path)
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
        values = [
            (identity, row_identity, key, digest, data[i * row_bytes : (i + 1) * row_bytes])
            for i, (row_identity, key, digest) in enumerate(rows)
        ]
        with self._transaction() as connection:
            connection.executemany(
                "INSERT INTO vectors (generation, row_identity, key, text_sha256, vector) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(generation, row_identity) DO UPDATE SET key = excluded.key, "
                "text_sha256 = excluded.text_sha256, vector = excluded.vector",
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

    # --- query cache ----------------------------------------------------------

    def cached_queries(self, identity: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached float32 vectors of those ``texts`` that have one under this generation."""
        with self.snapshot() as snapshot:
            return snapshot.cached_queries(identity, texts)

    def cache_queries(self, identity: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Store query vectors (text -> 1-D float32 vector) under a registered generation, in one transaction."""
        values = [
            (identity, text, np.ascontiguousarray(vector, dtype=VECTOR_DTYPE).reshape(-1).tobytes())
            for text, vector in vectors.items()
        ]
        if not values:
            return
        with self._transaction() as connection:
            connection.executemany(
                "INSERT INTO query_cache (generation, query, vector) VALUES (?, ?, ?) "
                "ON CONFLICT(generation, query) DO UPDATE SET vector = excluded.vector",
                values,
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

    @contextmanager
    def build_lock(self, identity: str, name: str) -> Iterator[None]:
        """Hold the exclusive build lock of a generation, or refuse at once.

        An ``fcntl.flock`` on ``<store>.build-<identity prefix>.lock``: the OS
        drops it when the holder exits, however it exits, so a killed build
        never leaves a stale lock. The holder writes its pid into the file
        for the refusal message. The file itself is never removed (removing
        a locked file would let a third build lock a different inode).
        """
        path = self.lock_path(identity)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreUnavailable(f"cannot open the build lock {path}: {exc.strerror}.") from exc
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
                raise StoreUnavailable(
                    f"another build of generation {name} is running (pid {holder}); "
                    "wait for it to finish, then run the build again."
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            try:
                yield
            finally:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
