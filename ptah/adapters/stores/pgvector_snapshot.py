"""A read snapshot of the pgvector store: one ``REPEATABLE READ READ ONLY`` transaction (see :mod:`.pgvector`).

Everything an evaluation reads -- generation records, vectors as one matrix,
digests, cached queries, the HNSW index and index search -- comes through one
:class:`PgvectorSnapshot`, so it sees one state of the store however many
batches a build commits meanwhile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator

import numpy as np
from psycopg import sql

from ptah.adapters.stores.pgvector_index import describe_index, nearest
from ptah.adapters.stores.pgvector_schema import VectorDecoder
from ptah.adapters.stores.records import GENERATION_COLUMNS as _GENERATION_COLUMNS
from ptah.adapters.stores.records import GenerationRecord, Matrix
from ptah.adapters.stores.vector_checks import (
    VECTOR_DTYPE, block_rows, finite_blocks, non_finite_text, usable_query_vector,
)
from ptah.core.errors import StoreDamaged, StoreUnavailable

if TYPE_CHECKING:
    from ptah.adapters.stores.pgvector import PgvectorStore


def generation_record(row: tuple) -> GenerationRecord:
    identity, name, model, settings, dimension, digest, parts, versions, created, updated = row
    return GenerationRecord(
        identity=identity, name=name, model=model, settings=settings, dimension=int(dimension), model_digest=digest,
        identity_parts=parts, library_versions=versions, created_at=created, updated_at=updated,
    )


class PgvectorSnapshot:
    """Reads from one consistent state of the store (one REPEATABLE READ, read-only transaction)."""

    def __init__(self, connection, store: "PgvectorStore"):
        self._connection = connection
        self._store = store

    def _table(self, identity: str) -> tuple[sql.Identifier, int, str] | None:
        """The generation's vectors table (as an identifier), its dimension and its name; None if unregistered."""
        row = self._connection.execute(
            "SELECT vectors_table, dimension FROM ptah_generations WHERE identity = %s", (identity,)
        ).fetchone()
        return None if row is None else (sql.Identifier(row[0]), int(row[1]), row[0])

    def generation(self, identity: str) -> GenerationRecord | None:
        """The generation with this identity, or None when it was never registered."""
        with self._store._guarded():
            row = self._connection.execute(
                f"SELECT {_GENERATION_COLUMNS} FROM ptah_generations WHERE identity = %s", (identity,)
            ).fetchone()
        return None if row is None else generation_record(row)

    def generations(self) -> list[GenerationRecord]:
        """Every registered generation, oldest first."""
        with self._store._guarded():
            rows = self._connection.execute(
                f"SELECT {_GENERATION_COLUMNS} FROM ptah_generations ORDER BY created_at, identity"
            ).fetchall()
        return [generation_record(row) for row in rows]

    def vector_count(self, identity: str) -> int:
        with self._store._guarded():
            table = self._table(identity)
            if table is None:
                return 0
            return self._connection.execute(sql.SQL("SELECT count(*) FROM {}").format(table[0])).fetchone()[0]

    def digests(self, identity: str) -> dict[str, tuple[str, str]]:
        """``row identity -> (key, text SHA-256)`` for every vector of the generation (no vector is read)."""
        with self._store._guarded():
            table = self._table(identity)
            if table is None:
                return {}
            cursor = self._connection.execute(
                sql.SQL("SELECT row_identity, key, text_sha256 FROM {} ORDER BY row_identity").format(table[0])
            )
            return {row_identity: (key, digest) for row_identity, key, digest in cursor}

    def matrix(self, identity: str) -> Matrix:
        """The generation's vectors as one C-contiguous float32 ``(n, dimension)`` matrix, rows by row identity.

        Keys come from one query, vectors from a binary ``COPY`` decoded by
        numpy straight into the preallocated matrix; both in this snapshot,
        so they agree. An unregistered generation is an empty ``(0, 0)`` matrix.
        """
        with self._store._guarded():
            table = self._table(identity)
        if table is None:
            return Matrix([], [], np.empty((0, 0), dtype=np.float32))
        return next(finite_blocks([self._range(identity, table, None, None)], self._non_finite(identity, table[2])))

    def vector_blocks(self, identity: str, rows: int) -> Iterator[Matrix]:
        """The generation's vectors as consecutive :class:`Matrix` blocks of ``rows`` rows (the last fewer, none
        empty), in :meth:`matrix`'s order: joined, they are :meth:`matrix`. Nothing for an unregistered or empty
        generation; ValueError unless ``rows`` >= 1; read them while this snapshot is open.

        Each block is one range of the primary key -- the ``rows`` row
        identities after the previous block's last, an index range scan --
        read as :meth:`matrix` reads the whole: keys by one query, vectors by a
        binary ``COPY`` of the same range into the block; so the memory is one
        block. A vector that is not finite is StoreDamaged in :meth:`matrix`'s
        sentence, raised before its block is yielded.
        """
        return self._blocks(identity, block_rows(rows))

    def _blocks(self, identity: str, rows: int) -> Iterator[Matrix]:
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

        yield from finite_blocks(ranges(), self._non_finite(identity, table[2]))

    def _range(self, identity: str, table: tuple[sql.Identifier, int, str], after: str | None, limit: int | None) -> Matrix:
        """The generation's rows after row identity ``after`` (from the first when None), at most ``limit`` (all
        when None), by row identity: keys by one query, vectors by a binary COPY of the same rows, decoded by numpy
        straight into the preallocated matrix."""
        name, dimension, _ = table
        where = sql.SQL("" if after is None else " WHERE row_identity > %(after)s")
        bound = sql.SQL("" if limit is None else " LIMIT %(limit)s")
        parameters = {"after": after, "limit": limit}
        with self._store._guarded():
            pairs = self._connection.execute(
                sql.SQL("SELECT key, row_identity FROM {}{} ORDER BY row_identity{}").format(name, where, bound),
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
        return Matrix([key for key, _ in pairs], [row_identity for _, row_identity in pairs], vectors)

    def _non_finite(self, identity: str, table: str):
        """What :func:`finite_blocks` raises for the generation's vectors that are not finite."""

        def damaged(bad: int, total: int, first: str | None) -> StoreDamaged:
            # pgvector refuses NaN and infinities on every input path: only damage on disk gets here
            found = non_finite_text(bad, total, self.generation(identity).name, first)
            return StoreDamaged(f"{self._store.where} is damaged: {found}; delete those rows from table {table} "
                                "and run `ptah inference build` to embed them again.")

        return damaged

    def check(self, identity: str) -> None:
        """StoreDamaged unless every vector of the generation decodes at its dimension and is finite.

        Reads them as :meth:`matrix` does (a search's memory). PostgreSQL has
        no integrity check every user may run (``amcheck`` is optional), and
        pgvector refuses NaN and infinities on every input path.
        """
        self.matrix(identity)

    def cached_queries(self, identity: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached float32 vectors of those ``texts`` that have one under this generation."""
        wanted = list(dict.fromkeys(texts))
        with self._store._guarded():
            table = self._table(identity)
            cursor = self._connection.execute(
                "SELECT query, vector FROM ptah_query_cache WHERE generation = %s AND query = ANY(%s::text[])",
                (identity, wanted),
            )
            found = {query: usable_query_vector(blob, table[1] if table else None) for query, blob in cursor}
        return {query: vector for query, vector in found.items() if vector is not None}  # unusable: embedded again

    # --- the index (ptah.adapters.stores.pgvector_index) ---------------------------

    def export(self) -> str:
        """This snapshot's id, for :meth:`PgvectorStore.snapshot` ``like=`` while this one is open."""
        with self._store._guarded():
            return self._connection.execute("SELECT pg_export_snapshot()").fetchone()[0]

    def index(self, identity: str) -> dict | None:
        """The generation's HNSW cosine index as ``{name, kind, m, ef_construction, operator_class}``, or None."""
        with self._store._guarded():
            table = self._table(identity)
            return None if table is None else describe_index(self._connection, table[2])

    def nearest(self, identity: str, vectors: np.ndarray, limits: list[int], ef_search: int) -> list[list[tuple[str, float]]]:
        """Each query's nearest rows through the HNSW index (see :func:`pgvector_index.nearest`)."""
        with self._store._guarded():
            table = self._table(identity)
            if table is None:
                raise StoreUnavailable(f"{self._store.where}: generation {identity} is not registered.")
            return nearest(self._connection, table[2], vectors, limits, ef_search)
