"""The pgvector store's schema: named migrations, per-generation tables, the binary COPY codec.

Tables (in the connection's current schema; in a schema of their own with
``store: {url: …, schema: ptah}``, :func:`enter_schema`):

* ``ptah_migrations(name, position, applied_at)`` -- one row per applied migration;
* ``ptah_generations`` -- one row per generation identity, as in the SQLite
  store, plus ``vectors_table``: the name of that generation's table;
* ``ptah_query_cache(generation, query, vector)`` -- query vectors, float32
  little-endian bytes as in the SQLite store;
* ``ptah_lexical_indexes`` -- the lexical channel's serialised BM25 indexes,
  as in the SQLite store;
* ``ptah_vectors_<32 hex>`` -- one per generation identity (the hex is the
  identity's digest, so a DBA can tell which is which):
  ``row_identity text COLLATE "C"`` (the primary key, covering ``key`` and
  ``text_sha256``, so build and verify never read a vector),
  ``key text``, ``text_sha256 text``, ``embedding vector(dimension)``.

Each migration runs in one transaction together with the row that records
it, under a transaction-level advisory lock, so two processes opening a fresh
store at once apply nothing twice. A store that records a migration this ptah
does not know is refused. Append new migrations at the end; never edit or
reorder an applied one.
"""

from __future__ import annotations

import hashlib
import re
import struct

import numpy as np
from psycopg import sql

from ptah.adapters.postgres import guarded, pg_errors, reason
from ptah.adapters.stores.records import check_migrations, now
from ptah.core.errors import StoreDamaged, StoreUnavailable
from ptah.core.spec import redact_url

LOCK_NAMESPACE = 0x70746168  # "ptah": the first key of every advisory lock ptah takes
MIGRATION_LOCK = 0  # the second key while migrating (generation locks hash to 1 .. 2**31 - 1)

MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "0001_generations_query_cache",
        (
            """
            CREATE TABLE ptah_generations (
                identity         text PRIMARY KEY,   -- sha256:... over everything vectors depend on
                name             text NOT NULL,      -- display name, outside the identity
                model            text NOT NULL,
                settings         jsonb NOT NULL,
                dimension        integer NOT NULL CHECK (dimension > 0),
                model_digest     text,
                identity_parts   jsonb NOT NULL,
                library_versions jsonb NOT NULL,
                vectors_table    text NOT NULL UNIQUE,
                created_at       text NOT NULL,
                updated_at       text NOT NULL
            )
            """,
            """
            CREATE TABLE ptah_query_cache (
                generation text NOT NULL REFERENCES ptah_generations(identity),
                query      text NOT NULL,
                vector     bytea NOT NULL,           -- float32, little-endian
                PRIMARY KEY (generation, query)
            )
            """,
        ),
    ),
    (
        "0002_lexical_indexes",
        (
            # The lexical channel's BM25 indexes (ptah.adapters.lexical), as in the SQLite store.
            """
            CREATE TABLE ptah_lexical_indexes (
                fingerprint     text NOT NULL,       -- sha256 over sorted (row identity, text SHA-256)
                settings        text NOT NULL,       -- JSON: tokenizer, BM25 parameters, bm25s version
                template_sha256 text NOT NULL,       -- the text template indexed; a newer index replaces its older one
                rows            integer NOT NULL,
                vocabulary      integer NOT NULL,
                serialized      bytea NOT NULL,      -- ptah-bm25@1
                created_at      text NOT NULL,
                PRIMARY KEY (fingerprint, settings)
            )
            """,
        ),
    ),
    (
        "0003_records",
        (
            # Small text records by (kind, key) for `ptah serve`, as in the SQLite store.
            """
            CREATE TABLE ptah_records (
                seq        bigserial PRIMARY KEY,   -- the order first added
                kind       text COLLATE "C" NOT NULL,
                key        text COLLATE "C" NOT NULL,
                body       text NOT NULL,
                updated_at text NOT NULL,
                UNIQUE (kind, key)
            )
            """,
        ),
    ),
)

_HEX_IDENTITY = re.compile(r"sha256:([0-9a-f]{64})\Z")


def vectors_table(identity: str) -> str:
    """``ptah_vectors_`` + the first 32 hex digits of the identity's digest (of a hash of it
    otherwise)."""
    match = _HEX_IDENTITY.match(identity)
    digest = match.group(1) if match else hashlib.sha256(identity.encode("utf-8")).hexdigest()
    return f"ptah_vectors_{digest[:32]}"


def create_vectors_table(name: str, dimension: int) -> sql.Composed:
    return sql.SQL(
        """
        CREATE TABLE IF NOT EXISTS {table} (
            row_identity text COLLATE "C" NOT NULL,
            key          text NOT NULL,
            text_sha256  text NOT NULL,
            embedding    vector({dimension}) NOT NULL,
            CONSTRAINT {pkey} PRIMARY KEY (row_identity) INCLUDE (key, text_sha256)
        )
        """
    ).format(
        table=sql.Identifier(name),
        dimension=sql.Literal(int(dimension)),
        pkey=sql.Identifier(f"{name}_pkey"),
    )


def generation_lock_key(identity: str) -> int:
    """The second advisory-lock key of a generation's build lock: 31 bits of a hash of its identity,
    never 0."""
    value = (
        int.from_bytes(hashlib.sha256(identity.encode("utf-8")).digest()[:4], "big") & 0x7FFFFFFF
    )
    return value or 1


# --- migrations -------------------------------------------------------------------


def migrate(connection, url: str) -> None:
    """Bring the store up to date, or refuse one from a newer schema.

    ``connection`` must be in autocommit mode: each step is its own explicit
    transaction. The pgvector extension is created first when absent; a
    server without it, or a user who may not create it, is a
    :class:`StoreUnavailable` saying what to ask an administrator for.
    """
    where = f"store {redact_url(url)}"
    with guarded(url, StoreUnavailable, "store"), connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_NAMESPACE, MIGRATION_LOCK))
        _ensure_extension(connection, url)
        connection.execute(
            "CREATE TABLE IF NOT EXISTS ptah_migrations "
            "(name text PRIMARY KEY, position integer NOT NULL, applied_at text NOT NULL)"
        )
    applied = "SELECT name FROM ptah_migrations ORDER BY position"
    with guarded(url, StoreUnavailable, "store"):
        if check_migrations(MIGRATIONS, [row[0] for row in connection.execute(applied)], where):
            return
    for position, (name, statements) in enumerate(MIGRATIONS, start=1):
        with guarded(url, StoreUnavailable, "store"), connection.transaction():
            connection.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_NAMESPACE, MIGRATION_LOCK)
            )
            done = [row[0] for row in connection.execute(applied)]
            check_migrations(MIGRATIONS, done, where)
            if name not in done:
                for statement in statements:
                    connection.execute(statement)
                connection.execute(
                    "INSERT INTO ptah_migrations (name, position, applied_at) VALUES (%s, %s, %s)",
                    (name, position, now()),
                )


def _ensure_extension(connection, url: str) -> None:
    if connection.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    available = connection.execute(
        "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
    ).fetchone()
    shown = redact_url(url)
    if not available:
        raise StoreUnavailable(
            f"store {shown}: the pgvector extension is not installed on this PostgreSQL server; "
            "install pgvector there (https://github.com/pgvector/pgvector), then run ptah again."
        )
    try:
        with (
            connection.transaction()
        ):  # a savepoint: a refusal must not abort the caller's transaction
            connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except pg_errors.InsufficientPrivilege as exc:
        raise StoreUnavailable(
            f"store {shown}: the pgvector extension is not enabled in this database and this user may not "
            f"enable it ({reason(exc, url)}); ask an administrator to run CREATE EXTENSION vector there."
        ) from None


# --- a schema of its own -----------------------------------------------------------


def enter_schema(connection, url: str, schema: str, *, create: bool) -> bool:
    """Make sure the store's ``schema`` exists (created when missing and ``create``) and this user
    may create tables in it (``create``); False when it does not exist and ``create`` is False.

    ``connection`` is in autocommit mode and its search_path is already ``schema`` (the URL's
    options). The schema is created under the migration lock, so two first runs do not race; a user
    who may not create it, or tables in it, is :class:`StoreUnavailable` saying what to ask for.
    """
    shown = redact_url(url)
    with guarded(url, StoreUnavailable, "store"), connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_NAMESPACE, MIGRATION_LOCK))
        user, exists = connection.execute(
            "SELECT current_user, to_regnamespace(%s) IS NOT NULL", (schema,)
        ).fetchone()
        if not exists and not create:
            return False
        if not exists:
            try:
                with connection.transaction():
                    connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
            except pg_errors.InsufficientPrivilege as exc:
                raise StoreUnavailable(
                    f'store {shown}: this user may not create the schema "{schema}" ({reason(exc, url)}); '
                    f"ask an administrator to run CREATE SCHEMA {schema} AUTHORIZATION {user}, or name a schema "
                    "that exists."
                ) from None
        elif (
            create
            and not connection.execute(
                "SELECT has_schema_privilege(%s, 'CREATE')", (schema,)
            ).fetchone()[0]
        ):
            raise StoreUnavailable(
                f'store {shown}: this user may not create tables in the schema "{schema}"; ask its owner to run '
                f"GRANT USAGE, CREATE ON SCHEMA {schema} TO {user}, or name another schema."
            )
    return True


def search_path(connection, url: str, schema: str) -> sql.Composed:
    """``SET search_path`` to ``schema`` and then the schema the ``vector`` extension is installed
    in (when another), so its type, operators and operator classes resolve wherever it lives."""
    with guarded(url, StoreUnavailable, "store"):
        row = connection.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'vector'"
        ).fetchone()
    path = [schema] + ([row[0]] if row and row[0] not in (schema, "pg_catalog") else [])
    return sql.SQL("SET search_path TO {}").format(sql.SQL(", ").join(map(sql.Identifier, path)))


def check_vector_type(connection, url: str) -> None:
    """:class:`StoreUnavailable` unless the ``vector`` type resolves on this connection's
    search_path."""
    with guarded(url, StoreUnavailable, "store"):
        found, where = connection.execute(
            "SELECT to_regtype('vector') IS NOT NULL, (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
            "ON n.oid = e.extnamespace WHERE e.extname = 'vector')"
        ).fetchone()
    if not found:
        raise StoreUnavailable(
            f'store {redact_url(url)}: the pgvector type "vector" (installed in the schema "{where}") is not '
            f"usable here: the search_path leaves that schema out, or this user lacks USAGE on it; name the "
            f"store's schema in store: {{url: …, schema: …}} (ptah adds {where} to the path), or ask for "
            f"GRANT USAGE ON SCHEMA {where}."
        )


# --- binary COPY ------------------------------------------------------------------

COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_COPY_HEADER = COPY_SIGNATURE + struct.pack(">ii", 0, 0)
_COPY_TRAILER = struct.pack(">h", -1)
_TEXT_FIELD = struct.Struct(">i")


def encode_rows(rows: list[tuple[str, str, str]], vectors: np.ndarray) -> bytes:
    """``(row identity, key, text SHA-256)`` rows with their float32 vectors as one binary COPY
    stream.

    A vector's binary form is pgvector's ``vector_recv`` input: int16
    dimension, int16 0, then the values as big-endian float4.
    """
    dimension = vectors.shape[1]
    big = np.ascontiguousarray(vectors, dtype=">f4").tobytes()
    step = 4 * dimension
    vector_head = struct.pack(">ihh", 4 + step, dimension, 0)
    field_count = struct.pack(">h", 4)
    parts = [_COPY_HEADER]
    pack = _TEXT_FIELD.pack
    for i, (row_identity, key, digest) in enumerate(rows):
        a, b, c = row_identity.encode("utf-8"), key.encode("utf-8"), digest.encode("utf-8")
        parts += (
            field_count,
            pack(len(a)),
            a,
            pack(len(b)),
            b,
            pack(len(c)),
            c,
            vector_head,
            big[i * step : (i + 1) * step],
        )
    parts.append(_COPY_TRAILER)
    return b"".join(parts)


class VectorDecoder:
    """Reads a binary ``COPY (SELECT embedding …) TO STDOUT`` stream into a preallocated float32
    matrix.

    Every record has the same size (one field of ``4 + 4 + 4 * dimension``
    bytes), so runs of records are converted by numpy at once. The server
    sends one message per row; they are gathered until about
    :data:`DECODE_BYTES` have arrived, so the per-row work is one list append.
    """

    DECODE_BYTES = 4 << 20

    def __init__(self, target: np.ndarray, where: str):
        self.target = target
        self.where = where
        self.rows = 0
        dimension = target.shape[1]
        self._record = 2 + 4 + 4 + 4 * dimension
        self._prefix = np.frombuffer(
            struct.pack(">hihh", 1, 4 + 4 * dimension, dimension, 0), dtype=np.uint8
        )
        self._blocks: list = []
        self._size = 0
        self._rest = b""
        self._header = False

    def feed(self, block) -> None:
        self._blocks.append(block)
        self._size += len(block)
        if self._size >= self.DECODE_BYTES:
            self._decode()

    def _decode(self) -> None:
        data = self._rest + b"".join(self._blocks)
        self._blocks, self._size = [], 0
        start = 0
        if not self._header:
            if len(data) < len(_COPY_HEADER):
                self._rest = data
                return
            if data[: len(COPY_SIGNATURE)] != COPY_SIGNATURE:
                raise StoreUnavailable(
                    f"{self.where}: the server sent something other than binary COPY data."
                )
            start = 19 + struct.unpack(">i", data[15:19])[0]
            self._header = True
        whole = (len(data) - start) // self._record
        if whole:
            if self.rows + whole > self.target.shape[0]:
                raise StoreUnavailable(f"{self.where}: changed while it was read.")
            records = np.frombuffer(data, dtype=np.uint8, count=whole * self._record, offset=start)
            records = records.reshape(whole, self._record)
            if not (records[:, : self._prefix.size] == self._prefix).all():
                raise StoreDamaged(
                    f"{self.where}: a stored vector does not have the generation's dimension, so the table was "
                    "changed outside ptah; delete the rows whose vector_dims(embedding) differs and run "
                    "`ptah inference build` to embed them again."
                )
            self.target[self.rows : self.rows + whole] = records[:, self._prefix.size :].view(">f4")
            self.rows += whole
        self._rest = data[start + whole * self._record :]

    def finish(self) -> None:
        self._decode()
        if self._rest != _COPY_TRAILER or self.rows != self.target.shape[0]:
            raise StoreUnavailable(f"{self.where}: changed or ended early while it was read.")
