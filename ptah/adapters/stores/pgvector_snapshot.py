"""A read snapshot of the pgvector store: one ``REPEATABLE READ READ ONLY`` transaction (see
:mod:`.pgvector`).

Everything an evaluation reads -- generation records, vectors as one matrix,
digests, cached queries, the HNSW index and index search -- comes through one
:class:`PgvectorSnapshot`, so it sees one state of the store however many
batches a build commits meanwhile.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np
from psycopg import sql

from ptah.adapters.stores.base import (
    VECTOR_DTYPE,
    block_rows,
    one_row_each,
    sound_blocks,
    usable_query_vector,
)
from ptah.adapters.stores.pgvector_index import describe_index, nearest
from ptah.adapters.stores.pgvector_schema import VectorDecoder
from ptah.adapters.stores.records import GENERATION_COLUMNS as _GENERATION_COLUMNS
from ptah.adapters.stores.records import (
    GenerationRecord,
    Matrix,
    generation_record,
    stored_dimension,
)
from ptah.core.errors import StoreDamaged, StoreUnavailable

if TYPE_CHECKING:
    from ptah.adapters.stores.pgvector import PgvectorStore

_KEYS_PER_FETCH = 8192  # rows per round trip of stored_in_order's server-side cursor
_CURSORS = itertools.count(1)
_CHECK_ROWS = 16384  # vectors per block read by check (24 MiB at dimension 384)
_END = object()  # what _read_ahead's reader puts after the last block


class PgvectorSnapshot:
    """Reads from one consistent state of the store (one REPEATABLE READ, read-only transaction)."""

    def __init__(self, connection, store: PgvectorStore):
        self._connection = connection
        self._store = store

    def _table(self, identity: str) -> tuple[sql.Identifier, int, str] | None:
        """The generation's vectors table (as an identifier), its dimension and its name; None if
        unregistered."""
        row = self._connection.execute(
            "SELECT vectors_table, dimension, name FROM ptah_generations WHERE identity = %s",
            (identity,),
        ).fetchone()
        return (
            None
            if row is None
            else (
                sql.Identifier(row[0]),
                stored_dimension(row[1], row[2], self._record_damaged),
                row[0],
            )
        )

    def generation(self, identity: str) -> GenerationRecord | None:
        with self._store._guarded():
            row = self._connection.execute(
                f"SELECT {_GENERATION_COLUMNS} FROM ptah_generations WHERE identity = %s",
                (identity,),
            ).fetchone()
        return None if row is None else generation_record(row, self._record_damaged)

    def generations(self) -> list[GenerationRecord]:
        with self._store._guarded():
            rows = self._connection.execute(
                f"SELECT {_GENERATION_COLUMNS} FROM ptah_generations ORDER BY created_at, identity"
            ).fetchall()
        return [generation_record(row, self._record_damaged) for row in rows]

    def _select(self, identity: str, statement: str, parameters: tuple = ()) -> list[tuple]:
        """The rows ``statement`` reads from the generation's vectors table (``{}`` in it), fetched
        at once (faster than row by row); none when it is unregistered."""
        with self._store._guarded():
            table = self._table(identity)
            if table is None:
                return []
            return self._connection.execute(
                sql.SQL(statement).format(table[0]), parameters
            ).fetchall()

    def vector_count(self, identity: str) -> int:
        return (self._select(identity, "SELECT count(*) FROM {}") or [(0,)])[0][0]

    def digests(self, identity: str) -> dict[str, tuple[str, str]]:
        rows = self._select(
            identity, "SELECT row_identity, key, text_sha256 FROM {} ORDER BY row_identity"
        )
        return {row_identity: (key, digest) for row_identity, key, digest in rows}

    def digests_of(self, identity: str, row_identities: list[str]) -> dict[str, tuple[str, str]]:
        """One probe of the primary key (which includes the key and digest) per row."""
        rows = self._select(
            identity,
            "SELECT row_identity, key, text_sha256 FROM {} WHERE row_identity = ANY(%s::text[])",
            (row_identities,),
        )
        return {row_identity: (key, digest) for row_identity, key, digest in rows}

    def stored_in_order(self, identity: str) -> Generator[tuple[str, str], None, None]:
        """Through a server-side cursor of this snapshot, sorted ``COLLATE "C"`` (code point
        order)."""
        with self._store._guarded():
            table = self._table(identity)
        if table is None:
            return
        cursor = self._connection.cursor(name=f"ptah_stored_in_order_{next(_CURSORS)}")
        cursor.itersize = _KEYS_PER_FETCH
        try:
            with self._store._guarded():
                cursor.execute(
                    sql.SQL(
                        'SELECT row_identity, key FROM {} ORDER BY row_identity COLLATE "C"'
                    ).format(table[0])
                )
                yield from cursor
        finally:
            with self._store._guarded():
                cursor.close()

    def held_keys(self, identity: str, keys: Iterable[str]) -> set[str]:
        return {
            key
            for (key,) in self._select(
                identity, "SELECT key FROM {} WHERE key = ANY(%s::text[])", (list(keys),)
            )
        }

    def vectors_of(self, identity: str, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """The keys' rows by one query, then the vectors of those at the generation's dimension as
        :meth:`matrix` reads vectors (a binary ``COPY``), in this snapshot."""
        with self._store._guarded():
            table = self._table(identity)
        if table is None:
            return {}
        found = self._select(
            identity,
            "SELECT key, row_identity, vector_dims(embedding) = %s FROM {} "
            "WHERE key = ANY(%s::text[])",
            (table[1], list(keys)),
        )
        whole = {row_identity for _, row_identity, sound in found if sound}
        rows = one_row_each((key, row_identity) for key, row_identity, _ in found)
        among = [row_identity for row_identity in rows.values() if row_identity in whole]
        if not among:
            return {}
        block = self._range(identity, table, None, None, among=among)
        finite = np.isfinite(block.vectors).all(axis=1).tolist()
        return {key: block.vectors[i] for i, key in enumerate(block.keys) if finite[i]}

    def matrix(self, identity: str) -> Matrix:
        """Keys by one query, vectors by a binary ``COPY`` into the preallocated matrix, in this
        snapshot."""
        with self._store._guarded():
            table = self._table(identity)
        if table is None:
            return Matrix([], [], np.empty((0, 0), dtype=np.float32))
        return next(
            sound_blocks(
                [self._range(identity, table, None, None)], *self._damaged(identity, table[2])
            )
        )

    def vector_blocks(self, identity: str, rows: int) -> Iterator[Matrix]:
        """Each block is one range of the primary key (the ``rows`` row identities after the
        previous block's last), read as :meth:`matrix` reads the whole."""
        return self._blocks(identity, block_rows(rows))

    def _blocks(self, identity: str, rows: int) -> Iterator[Matrix]:
        """The blocks of :meth:`vector_blocks`, the next one read (:func:`_read_ahead`) while the
        caller works on the one it holds."""
        with self._store._guarded():
            table = self._table(identity)
        if table is None:
            return

        def ranges() -> Iterator[Matrix]:
            after = None
            while True:
                block = self._range(identity, table, after, rows)
                if block.keys:
                    yield block
                if len(block.keys) < rows:
                    return
                after = block.row_identities[-1]

        yield from sound_blocks(_read_ahead(ranges()), *self._damaged(identity, table[2]))

    def _range(
        self,
        identity: str,
        table: tuple[sql.Identifier, int, str],
        after: str | None,
        limit: int | None,
        *,
        among: list[str] | None = None,
    ) -> Matrix:
        """The generation's rows after row identity ``after`` (from the first when None), at most
        ``limit`` (all when None) -- or those whose row identity is ``among`` -- by row identity:
        keys by one query, vectors by a binary COPY of the same rows, decoded by numpy straight into
        the preallocated matrix."""
        name, dimension, _ = table
        where = sql.SQL(
            " WHERE row_identity = ANY(%(among)s::text[])"
            if among is not None
            else ("" if after is None else " WHERE row_identity > %(after)s")
        )
        bound = sql.SQL("" if limit is None else " LIMIT %(limit)s")
        parameters = {"after": after, "limit": limit, "among": among}
        with self._store._guarded():
            pairs = self._connection.execute(
                sql.SQL("SELECT key, row_identity FROM {}{} ORDER BY row_identity{}").format(
                    name, where, bound
                ),
                parameters,
            ).fetchall()
            vectors = np.empty((len(pairs), dimension), dtype=VECTOR_DTYPE)
            if pairs:
                decoder = VectorDecoder(vectors, f"{self._store.where}: generation {identity}")
                query = sql.SQL(
                    "COPY (SELECT embedding FROM {}{} ORDER BY row_identity{}) TO STDOUT (FORMAT BINARY)"
                ).format(name, where, bound)
                with self._connection.cursor().copy(query, parameters) as copy:
                    for block in copy:
                        decoder.feed(block)
                decoder.finish()
        return Matrix(
            [key for key, _ in pairs], [row_identity for _, row_identity in pairs], vectors
        )

    def _record_damaged(self, what: str) -> Exception:
        """What a generation's record that ptah cannot have written raises."""
        return StoreDamaged(
            f"{self._store.where} is damaged: {what}; it was changed outside ptah: restore "
            "ptah_generations from a backup, or build into a new store."
        )

    def _damaged(self, identity: str, table: str) -> tuple[str, Callable[[str], Exception]]:
        """The generation's name, and what :func:`sound_blocks` raises for what it found in
        ``table``."""
        record = self.generation(identity)
        # pgvector refuses NaN and infinities on every input path: only damage on disk, or a key
        # changed, gets here
        return (identity if record is None else record.name), lambda what: StoreDamaged(
            f"{self._store.where} is damaged: {what}; "
            f"delete those rows from table {table} and run `ptah inference build` to embed them again."
        )

    def check(self, identity: str) -> None:
        """StoreDamaged unless every vector of the generation decodes at its dimension, is finite
        and is stored under its own row's key.

        Reads them as :meth:`vector_blocks` does, :data:`_CHECK_ROWS` at a
        time, so the memory is a block whatever the generation's size; the
        sentence for damage is :meth:`matrix`'s. PostgreSQL has no integrity
        check every user may run (``amcheck`` is optional), and pgvector
        refuses NaN and infinities on every input path.
        """
        for _ in self.vector_blocks(identity, _CHECK_ROWS):
            pass

    def cached_queries(self, identity: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(texts))
        with self._store._guarded():
            table = self._table(identity)
            cursor = self._connection.execute(
                "SELECT query, vector FROM ptah_query_cache WHERE generation = %s AND query = ANY(%s::text[])",
                (identity, wanted),
            )
            found = {
                query: usable_query_vector(blob, table[1] if table else None)
                for query, blob in cursor
            }
        return {
            query: vector for query, vector in found.items() if vector is not None
        }  # unusable: embedded again

    # --- the index (ptah.adapters.stores.pgvector_index) ---------------------------

    def export(self) -> str:
        with self._store._guarded():
            return self._connection.execute("SELECT pg_export_snapshot()").fetchone()[0]

    def index(self, identity: str) -> dict | None:
        with self._store._guarded():
            table = self._table(identity)
            return None if table is None else describe_index(self._connection, table[2])

    def nearest(
        self, identity: str, vectors: np.ndarray, limits: list[int], ef_search: int
    ) -> list[list[tuple[str, float]]]:
        """Each query's nearest rows through the HNSW index (see :func:`pgvector_index.nearest`)."""
        with self._store._guarded():
            table = self._table(identity)
            if table is None:
                raise StoreUnavailable(
                    f"{self._store.where}: generation {identity} is not registered."
                )
            return nearest(self._connection, table[2], vectors, limits, ef_search)


def _read_ahead(blocks: Iterator[Matrix]) -> Iterator[Matrix]:
    """``blocks`` in order, each read by a thread of its own while the caller works on the one
    before.

    Reading a block is mostly the server's work (each vector's binary send)
    and the socket's, neither holding the GIL, so an exact search scores one
    block while the next is on its way. At most one block waits read; the
    connection is the snapshot's own (psycopg serialises its use), and only
    the reader uses it until the caller is done with the blocks: when the
    caller stops early, the reader finishes the block it is reading and ends
    before this returns. What the reader raises is raised here.
    """
    ready: queue.Queue = queue.Queue(maxsize=1)
    stopped = threading.Event()

    def read() -> None:
        try:
            for block in blocks:
                ready.put(block)
                if stopped.is_set():
                    return
            ready.put(_END)
        except BaseException as error:  # noqa: BLE001 -- handed to the caller, which raises it
            ready.put(error)

    reader = threading.Thread(target=read, name="ptah-read-ahead", daemon=True)
    reader.start()
    try:
        while (item := ready.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stopped.set()
        while reader.is_alive():  # take what it puts, so a reader waiting on a full queue can end
            with contextlib.suppress(queue.Empty):
                ready.get(timeout=0.05)
