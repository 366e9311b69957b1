"""A read snapshot of the SQLite store (one read transaction), and how a damaged file is told apart.

Everything an evaluation or ``verify`` reads -- generation records, vectors as one matrix
(checked as they are read), digests, cached queries and the file's integrity -- comes through one
:class:`StoreSnapshot`. SQLite reports a damaged file as SQLITE_CORRUPT or SQLITE_NOTADB (or text
that does not decode), and ``integrity_check`` finds pages and indexes that disagree; neither sees
a vector whose bytes changed in place, which the CRC-32 kept beside each vector does
(:func:`check_vectors`). Every finding is a :class:`StoreDamaged` whose one remedy deletes
nothing.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ptah.adapters.stores.base import (
    VECTOR_DTYPE,
    block_rows,
    misfiled,
    misfiled_text,
    non_finite,
    non_finite_text,
    one_row_each,
    sound_blocks,
    usable_query_vector,
)
from ptah.adapters.stores.records import GENERATION_COLUMNS as _GENERATION_COLUMNS
from ptah.adapters.stores.records import GenerationRecord, Matrix, generation_record
from ptah.core.errors import StoreDamaged, StoreUnavailable

# SQLite's result codes for a damaged file (the low byte of an extended code): SQLITE_CORRUPT,
# SQLITE_NOTADB.
_DAMAGE_CODES = frozenset({11, 26})


def damaged(path: Path, what: str) -> StoreDamaged:
    """The one sentence for a damaged store file: what was found, and a remedy that deletes
    nothing."""
    return StoreDamaged(
        f"store {path} is damaged ({what}); move it aside and run `ptah inference build` again."
    )


def _damage(exc: sqlite3.Error) -> str | None:
    """What SQLite's error says is damaged, or None when it is not damage (locked, disk full)."""
    if str(exc).startswith(
        "Could not decode to UTF-8"
    ):  # ptah writes only UTF-8; the stored bytes are not shown
        return "SQLite: a stored text is not UTF-8"
    code = getattr(exc, "sqlite_errorcode", None) or 0
    return f"SQLite: {exc}" if (code & 0xFF) in _DAMAGE_CODES else None


@contextmanager
def guarded(path: Path) -> Iterator[None]:
    """Turn SQLite's operational failures into StoreDamaged (a corrupt file) or StoreUnavailable
    (locked, disk full)."""
    try:
        yield
    except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
        if isinstance(
            exc, (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError)
        ):
            raise
        damage = _damage(exc)
        if damage:
            raise damaged(path, damage) from exc
        raise StoreUnavailable(f"store {path} cannot be used: {exc}.") from exc


def integrity_problems(connection: sqlite3.Connection) -> str | None:
    """The first problems ``PRAGMA integrity_check`` finds, on one line; None when it says ok.

    ``integrity_check`` rather than ``quick_check``: only the former finds an
    index that disagrees with its table (verify and build read the index),
    and it costs about the same -- one read of the whole file, about 0.3 s
    per 100,000 vectors of dimension 384 when the file is in the page cache.
    """
    problems = [row[0] for row in connection.execute("PRAGMA integrity_check(3)")]
    if problems == ["ok"]:
        return None
    lines = [line.strip() for problem in problems for line in str(problem).splitlines()]
    return "; ".join([line for line in lines if line and not line.startswith("***")][:2])[:200]


def check_vectors(path: Path, name: str, blocks: Iterable[tuple[list[tuple], np.ndarray]]) -> None:
    """StoreDamaged when a vector of generation ``name`` is not finite, does not match its CRC-32 or
    is stored under another key than its row identity spells.

    ``blocks``: ``(rows, vectors)`` pairs, each row ``(key, row identity,
    vector bytes, CRC-32 or None)`` (None: written before ptah kept CRCs).
    """
    total = bad = changed = moved = 0
    first = first_changed = first_moved = None
    for rows, vectors in blocks:
        keys = [row[0] for row in rows]
        found, key = non_finite(vectors, keys)
        total += len(rows)
        bad += found
        first = key if first is None else first
        found, key = misfiled(keys, [row[1] for row in rows])
        moved += found
        first_moved = key if first_moved is None else first_moved
        for row in rows:
            if row[3] is not None and zlib.crc32(row[2]) != row[3]:
                changed += 1
                first_changed = row[0] if first_changed is None else first_changed
    if bad:
        raise damaged(path, non_finite_text(bad, total, name, first))
    if changed:
        raise damaged(
            path,
            f"{changed} of {total} vectors of generation {name} differ from what ptah wrote "
            f"(their CRC-32 does not match), the first for key {first_changed!r}",
        )
    if moved:
        raise damaged(path, misfiled_text(moved, total, name, first_moved))


# Rows fetched per step when reading a matrix: bounds the temporary bytes
# beside the preallocated matrix (8192 x 384 x 4 = 12 MiB).
_READ_CHUNK = 8192
# Bound parameters per IN (...) list, well under SQLite's limit.
_IN_CHUNK = 500
# Row identities per statement of digests_of, at most (a verification's block).
_PROBE_CHUNK = 4096


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class StoreSnapshot:
    """Reads from one consistent state of the store (a single read transaction)."""

    def __init__(self, connection: sqlite3.Connection, path: Path):
        self._connection = connection
        self._path = path

    def _all(self, statement: str, parameters: tuple = ()) -> list[tuple]:
        """Every row ``statement`` reads, fetched at once inside this read transaction."""
        with guarded(self._path):
            return self._connection.execute(statement, parameters).fetchall()

    def generation(self, identity: str) -> GenerationRecord | None:
        rows = self._all(
            f"SELECT {_GENERATION_COLUMNS} FROM generations WHERE identity = ?", (identity,)
        )
        return generation_record(rows[0], self._damaged, json.loads) if rows else None

    def generations(self) -> list[GenerationRecord]:
        return [
            generation_record(row, self._damaged, json.loads)
            for row in self._all(
                f"SELECT {_GENERATION_COLUMNS} FROM generations ORDER BY created_at, identity"
            )
        ]

    def vector_count(self, identity: str) -> int:
        """How many vectors the generation has, counted in the index :meth:`digests` reads."""
        rows = self._all(
            "SELECT count(*) FROM vectors INDEXED BY vectors_digests WHERE generation = ?",
            (identity,),
        )
        return rows[0][0]

    def digests(self, identity: str) -> dict[str, tuple[str, str]]:
        """Read from a covering index: no vector bytes are touched."""
        return {
            row_identity: (key, digest)
            for row_identity, key, digest in self._all(
                "SELECT row_identity, key, text_sha256 FROM vectors INDEXED BY vectors_digests WHERE generation = ?",
                (identity,),
            )
        }

    def digests_of(self, identity: str, row_identities: list[str]) -> dict[str, tuple[str, str]]:
        """One probe of the covering index per row (bound parameters: an identity may hold a
        NUL)."""
        found: dict[str, tuple[str, str]] = {}
        # As many as this SQLite binds (32,766 since 3.32; 999 before): fewer statements, each
        # probing in order.
        size = min(
            _PROBE_CHUNK, self._connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) - 1
        )
        with guarded(self._path):
            for chunk in _chunks(row_identities, size):
                cursor = self._connection.execute(
                    "SELECT row_identity, key, text_sha256 FROM vectors INDEXED BY vectors_digests WHERE generation = ? "
                    f"AND row_identity IN ({', '.join('?' * len(chunk))})",
                    (identity, *chunk),
                )
                found.update((row_identity, (key, digest)) for row_identity, key, digest in cursor)
        return found

    def stored_in_order(self, identity: str) -> Generator[tuple[str, str], None, None]:
        """In the covering index's order (``BINARY``: UTF-8 bytes, which is code point order)."""
        with guarded(self._path):
            cursor = self._connection.execute(
                "SELECT row_identity, key FROM vectors INDEXED BY vectors_digests WHERE generation = ? "
                "ORDER BY row_identity",
                (identity,),
            )
            while rows := cursor.fetchmany(_READ_CHUNK):
                yield from rows

    def held_keys(self, identity: str, keys: Iterable[str]) -> set[str]:
        """One pass over the covering index, the keys bound as one JSON array (a corpus key holds no
        NUL)."""
        return {
            key
            for (key,) in self._all(
                "SELECT key FROM vectors INDEXED BY vectors_digests WHERE generation = ? "
                "AND key IN (SELECT value FROM json_each(?))",
                (identity, json.dumps(list(keys))),
            )
        }

    def vectors_of(self, identity: str, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """The keys' rows found in one pass over the covering index (as :meth:`held_keys`), then
        each row's vector by a probe of the primary key; one failing its CRC-32 is left out too."""
        record = self.generation(identity)
        if record is None:
            return {}
        rows = one_row_each(
            self._all(
                "SELECT key, row_identity FROM vectors INDEXED BY vectors_digests "
                "WHERE generation = ? AND key IN (SELECT value FROM json_each(?))",
                (identity, json.dumps(list(keys))),
            )
        )
        keys_of = {row_identity: key for key, row_identity in rows.items()}
        found: dict[str, np.ndarray] = {}
        with guarded(self._path):
            for chunk in _chunks(list(keys_of), _IN_CHUNK):
                cursor = self._connection.execute(
                    "SELECT row_identity, vector, vector_crc32 FROM vectors WHERE generation = ? "
                    f"AND row_identity IN ({', '.join('?' * len(chunk))})",
                    (identity, *chunk),
                )
                for row_identity, blob, crc32 in cursor:
                    vector = usable_query_vector(blob, record.dimension, crc32)
                    if vector is not None:
                        found[keys_of[row_identity]] = vector
        return found

    def matrix(self, identity: str) -> Matrix:
        """Allocated once at its final size and filled chunk by chunk (the peak memory is the matrix
        plus one chunk); StoreDamaged also when the table and the index :meth:`digests` reads
        disagree on the count."""
        record = self.generation(identity)
        if record is None:
            return Matrix([], [], np.empty((0, 0), dtype=np.float32))
        count = self.vector_count(identity)
        whole = Matrix([], [], np.empty((0, record.dimension), dtype=np.float32))
        for block in self._filled(
            record, max(count, 1)
        ):  # one block, unless the table holds more rows
            if (
                whole.keys or len(block.keys) != count
            ):  # one read transaction: only damage makes them differ
                raise damaged(
                    self._path,
                    f"its index and its table disagree on how many vectors generation "
                    f"{record.name} has",
                )
            whole = block
        return next(sound_blocks([whole], record.name, self._damaged))

    def vector_blocks(self, identity: str, rows: int) -> Iterator[Matrix]:
        """One query in this read transaction, copied into each block as :meth:`matrix` is
        filled."""
        return self._stream(identity, block_rows(rows))

    def _stream(self, identity: str, rows: int) -> Iterator[Matrix]:
        record = self.generation(identity)
        if record is not None:
            yield from sound_blocks(self._filled(record, rows), record.name, self._damaged)

    def _damaged(self, what: str) -> Exception:
        """What :func:`sound_blocks` raises for what it found."""
        return damaged(self._path, what)

    def _filled(self, record: GenerationRecord, size: int) -> Iterator[Matrix]:
        """The generation's vectors in blocks of ``size`` rows (the last fewer, none empty), each
        allocated once and filled from :meth:`_blocks` read at most ``size`` rows at a time."""
        block, filled = None, 0
        keys: list[str] = []
        row_identities: list[str] = []
        for rows, vectors in self._blocks(record, min(size, _READ_CHUNK)):
            start = 0
            while start < len(rows):
                if block is None:
                    block, filled, keys, row_identities = (
                        np.empty((size, record.dimension), np.float32),
                        0,
                        [],
                        [],
                    )
                step = min(size - filled, len(rows) - start)
                block[filled : filled + step] = vectors[start : start + step]
                keys.extend(row[0] for row in rows[start : start + step])
                row_identities.extend(row[1] for row in rows[start : start + step])
                filled, start = filled + step, start + step
                if filled == size:
                    yield Matrix(keys, row_identities, block)
                    block = None
        if block is not None:
            yield Matrix(keys, row_identities, block[:filled])

    def check(self, identity: str) -> None:
        """StoreDamaged unless SQLite's ``integrity_check`` passes and the generation's vectors are
        finite, match their CRC-32s and are stored under their own rows' keys
        (:func:`check_vectors`): one read of the whole file."""
        with guarded(self._path):
            found = integrity_problems(self._connection)
        if found:
            raise damaged(self._path, f"SQLite's integrity check: {found}")
        record = self.generation(identity)
        if record is not None:
            check_vectors(self._path, record.name, self._blocks(record))

    def _blocks(
        self, record: GenerationRecord, chunk: int = _READ_CHUNK
    ) -> Iterator[tuple[list[tuple], np.ndarray]]:
        """The generation's ``(key, row identity, vector, CRC-32)`` rows by row identity, ``chunk``
        at a time, each with its vectors as a read-only array; StoreDamaged for a vector of another
        size."""
        size = record.dimension
        row_bytes = size * VECTOR_DTYPE.itemsize
        with guarded(self._path):
            cursor = self._connection.execute(
                "SELECT key, row_identity, vector, vector_crc32 FROM vectors WHERE generation = ? "
                "ORDER BY row_identity",
                (record.identity,),
            )
            while rows := cursor.fetchmany(chunk):
                try:
                    data = b"".join(row[2] for row in rows)
                except TypeError:  # a TEXT value where a BLOB was written
                    data = b""
                if len(data) != len(rows) * row_bytes:
                    raise damaged(
                        self._path,
                        f"a vector of generation {record.name} is not {size} float32 values",
                    )
                yield rows, np.frombuffer(data, dtype=VECTOR_DTYPE).reshape(len(rows), size)

    def cached_queries(self, identity: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """A cached vector that is not ``dimension`` finite values, or fails its CRC-32, is left out
        (embedded again, and replaced)."""
        wanted = list(dict.fromkeys(texts))
        record = self.generation(identity)
        dimension = record.dimension if record is not None else None
        found: dict[str, np.ndarray] = {}
        with guarded(self._path):
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
