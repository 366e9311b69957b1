"""Generations in PostgreSQL with pgvector: the SQLite store's interface and guarantees, at scale.

Layout (:mod:`ptah.adapters.stores.pgvector_schema`): a generations table, a query cache and one
``vector(dimension)`` table per generation identity, in the connection's schema or one of the
store's own (``store: {url: …, schema: ptah}``, :mod:`.pgvector_location`), created when missing;
each connection's search_path is that schema, then the ``vector`` extension's.

The guarantees are :class:`ptah.adapters.stores.sqlite.SqliteStore`'s (one contract suite runs
over both):

* every write is one short transaction (a batch is a ``DELETE`` of the rows it replaces and a
  binary ``COPY``, committed together), so a killed process leaves the last commit;
* :meth:`PgvectorStore.snapshot` is one ``REPEATABLE READ READ ONLY`` transaction on its own
  connection;
* :meth:`PgvectorStore.build_lock` is a session-level ``pg_advisory_lock`` keyed on the identity,
  on its own connection: released when the session ends however it ends, and exclusive across
  machines.

Beyond it: an HNSW index per generation (:meth:`PgvectorStore.create_hnsw_index`), index search
in a snapshot (:meth:`PgvectorSnapshot.nearest`), and ``snapshot(like=…)``, sharing another's
state so an evaluation's index search sees exactly the vectors its exact search read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

import numpy as np
from psycopg import IsolationLevel, sql

from ptah.adapters.postgres import connect, guarded
from ptah.adapters.stores.base import VECTOR_DTYPE
from ptah.adapters.stores.pgvector_index import create_hnsw_index, describe_index
from ptah.adapters.stores.pgvector_location import PGVECTOR_CAPABILITIES, schema_of
from ptah.adapters.stores.pgvector_lock import build_lock
from ptah.adapters.stores.pgvector_schema import (
    check_vector_type,
    create_vectors_table,
    encode_rows,
    enter_schema,
    migrate,
    search_path,
    vectors_table,
)
from ptah.adapters.stores.pgvector_snapshot import PgvectorSnapshot
from ptah.adapters.stores.records import (
    GENERATION_COLUMNS,
    GENERATION_REFRESH,
    GenerationRecord,
    LexicalTable,
    SnapshotReads,
    check_dimension,
    generation_values,
)
from ptah.adapters.stores.records import now as _now
from ptah.core.errors import StoreUnavailable
from ptah.core.spec import redact_url


class PgvectorStore(SnapshotReads, LexicalTable):
    """A pgvector store in the database a ``postgresql://`` URL names, migrated when opened.

    ``create=False`` (a reader) never creates ptah's tables: :attr:`initialised`
    is then False on a database where nothing was ever built.
    """

    capabilities = PGVECTOR_CAPABILITIES

    def __init__(self, url: str, *, create: bool = True):
        self.url = url
        self.where = f"store {redact_url(url)}"
        self.schema = schema_of(
            url
        )  # store: {url, schema}; None: the connection's own current schema
        self._search_path: sql.Composed | None = None
        self._connection = connect(url, StoreUnavailable, "store", autocommit=True)
        self._tables: dict[str, tuple[str, int]] = {}
        try:
            self.initialised = self.schema is None or enter_schema(
                self._connection, url, self.schema, create=create
            )
            with (
                self._guarded()
            ):  # whether ptah's tables exist here at all (a reader must not create them)
                self.initialised = self.initialised and (
                    create
                    or self._connection.execute(
                        "SELECT to_regclass(%s) IS NOT NULL", (self._qualified("ptah_migrations"),)
                    ).fetchone()[0]
                )
            if self.initialised:
                migrate(self._connection, url)
                if self.schema is not None:
                    self._search_path = search_path(self._connection, url, self.schema)
                    with self._guarded():
                        self._connection.execute(self._search_path)
                check_vector_type(self._connection, url)
        except BaseException:
            self._connection.close()
            raise

    def _qualified(self, table: str) -> str:
        return table if self.schema is None else f"{self.schema}.{table}"

    def _connect(self):
        """Another connection to the store, on the store's search_path, outside any transaction."""
        connection = connect(self.url, StoreUnavailable, "store", autocommit=True)
        try:
            if self._search_path is not None:
                with self._guarded():
                    connection.execute(self._search_path)
            connection.autocommit = False
        except BaseException:
            connection.close()
            raise
        return connection

    _prefix, _marker = "ptah_", "%s"

    def _guarded(self):
        return guarded(self.url, StoreUnavailable, "store")

    @contextmanager
    def _transaction(self):
        with self._guarded(), self._connection.transaction():
            yield self._connection

    def close(self) -> None:
        self._connection.close()

    # --- reading ------------------------------------------------------------------

    @contextmanager
    def snapshot(self, like: PgvectorSnapshot | None = None) -> Iterator[PgvectorSnapshot]:
        """One read-only REPEATABLE READ transaction on its own connection: every read inside sees
        one state.

        ``like``: an open snapshot whose state this one shares
        (``SET TRANSACTION SNAPSHOT``); this one stays valid after ``like`` ends.
        """
        connection = self._connect()
        try:
            with self._guarded():
                connection.isolation_level = IsolationLevel.REPEATABLE_READ
                connection.read_only = True
                if like is not None:
                    connection.execute(
                        sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(like.export()))
                    )
                connection.execute(
                    "SELECT count(*) FROM ptah_migrations"
                ).fetchone()  # the snapshot starts here
            yield PgvectorSnapshot(connection, self)
        finally:
            connection.close()  # ends (rolls back) the read transaction

    # --- writing ------------------------------------------------------------------

    def register_generation(self, record: GenerationRecord) -> None:
        """Record a generation and create its vectors table (or refresh its name, versions and
        ``updated_at``)."""
        with self._guarded(), self._connection.transaction():
            self._connection.execute(
                f"INSERT INTO ptah_generations ({GENERATION_COLUMNS}, vectors_table) "
                f"VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s) {GENERATION_REFRESH}",
                (*generation_values(record), vectors_table(record.identity)),
            )
            stored, table = self._connection.execute(
                "SELECT dimension, vectors_table FROM ptah_generations WHERE identity = %s",
                (record.identity,),
            ).fetchone()
            check_dimension(record, stored)
            self._connection.execute(create_vectors_table(table, stored))
        self._tables[record.identity] = (table, stored)

    def _table(self, identity: str) -> tuple[str, int] | None:
        if identity not in self._tables:
            row = self._connection.execute(
                "SELECT vectors_table, dimension FROM ptah_generations WHERE identity = %s",
                (identity,),
            ).fetchone()
            if row is None:
                return None
            self._tables[identity] = (row[0], int(row[1]))
        return self._tables[identity]

    def write_vectors(
        self, identity: str, rows: list[tuple[str, str, str]], vectors: np.ndarray
    ) -> None:
        """A DELETE of the rows replaced, then a binary COPY, in one transaction."""
        data = np.ascontiguousarray(vectors, dtype=np.float32)
        if data.ndim != 2 or data.shape[0] != len(rows):
            raise ValueError(f"{len(rows)} rows for vectors of shape {data.shape}")
        with self._guarded():
            found = self._table(identity)
            if found is None:
                raise StoreUnavailable(
                    f"{self.where}: generation {identity} is not registered; register it first."
                )
            name, dimension = found
            if data.shape[1] != dimension:
                raise ValueError(
                    f"vectors of dimension {data.shape[1]} for generation {identity} of dimension {dimension}"
                )
            table = sql.Identifier(name)
            with self._connection.transaction():
                self._connection.execute(
                    sql.SQL("DELETE FROM {} WHERE row_identity = ANY(%s::text[])").format(table),
                    ([r[0] for r in rows],),
                )
                copy_sql = sql.SQL(
                    "COPY {} (row_identity, key, text_sha256, embedding) FROM STDIN (FORMAT BINARY)"
                )
                with self._connection.cursor().copy(copy_sql.format(table)) as copy:
                    copy.write(encode_rows(rows, data))
                self._connection.execute(
                    "UPDATE ptah_generations SET updated_at = %s WHERE identity = %s",
                    (_now(), identity),
                )

    def delete_vectors(self, identity: str, row_identities: Iterable[str]) -> int:
        doomed = list(row_identities)
        if not doomed:
            return 0
        with self._guarded():
            found = self._table(identity)
            if found is None:
                return 0
            with self._connection.transaction():
                deleted = self._connection.execute(
                    sql.SQL("DELETE FROM {} WHERE row_identity = ANY(%s::text[])").format(
                        sql.Identifier(found[0])
                    ),
                    (doomed,),
                ).rowcount
                self._connection.execute(
                    "UPDATE ptah_generations SET updated_at = %s WHERE identity = %s",
                    (_now(), identity),
                )
        return deleted

    def drop_generation(self, identity: str) -> int:
        """Drops its vectors table (its index with it); a reader holding a snapshot of the table is
        waited for."""
        with self._guarded():
            found = self._table(identity)
            if found is None:
                return 0
            table = sql.Identifier(found[0])
            with self._connection.transaction():
                removed = self._connection.execute(
                    sql.SQL("SELECT count(*) FROM {}").format(table)
                ).fetchone()[0]
                self._connection.execute(sql.SQL("DROP TABLE {}").format(table))
                self._connection.execute(
                    "DELETE FROM ptah_query_cache WHERE generation = %s", (identity,)
                )
                self._connection.execute(
                    "DELETE FROM ptah_generations WHERE identity = %s", (identity,)
                )
            self._tables.pop(identity, None)
        return int(removed)

    # --- query cache --------------------------------------------------------------

    def cache_queries(self, identity: str, vectors: Mapping[str, np.ndarray]) -> None:
        texts = list(vectors)
        if not texts:
            return
        blobs = [
            np.ascontiguousarray(vectors[text], dtype=VECTOR_DTYPE).reshape(-1).tobytes()
            for text in texts
        ]
        with self._guarded(), self._connection.transaction():
            self._connection.execute(
                "INSERT INTO ptah_query_cache (generation, query, vector) "
                "SELECT %s, q, v FROM unnest(%s::text[], %s::bytea[]) AS c(q, v) "
                "ON CONFLICT (generation, query) DO UPDATE SET vector = excluded.vector",
                (identity, texts, blobs),
            )

    # --- the index ----------------------------------------------------------------

    def create_hnsw_index(self, identity: str, m: int, ef_construction: int) -> dict:
        with self._guarded():
            found = self._table(identity)
            if found is None:
                raise StoreUnavailable(f"{self.where}: generation {identity} is not registered.")
            with self._connection.transaction():
                create_hnsw_index(self._connection, found[0], m, ef_construction)
            described = describe_index(self._connection, found[0])
            assert described is not None, "the index was created just now"
            return described

    # --- build lock ---------------------------------------------------------------

    def build_lock(self, identity: str, name: str):
        return build_lock(self.url, identity, name)
