"""The SQLite store's schema, as named migrations applied in order.

Each migration runs in one transaction together with the row that records it
in ``migrations(name, applied_at)``: a store is either before or after a
migration, never half-way. A store that records a migration this ptah does not
know was written by a newer ptah and is refused, never guessed at.

Append new migrations at the end; never edit or reorder an applied one.
"""

from __future__ import annotations

import sqlite3

from ptah.adapters.stores.records import now
from ptah.core.errors import StoreUnavailable

# (name, statements). Names sort nowhere: the order of this list is the order applied.
MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "0001_generations_vectors_query_cache",
        (
            """
            CREATE TABLE generations (
                identity         TEXT PRIMARY KEY,   -- sha256:... over everything vectors depend on
                name             TEXT NOT NULL,      -- display name, outside the identity
                model            TEXT NOT NULL,
                settings         TEXT NOT NULL,      -- JSON: every setting of the generation
                dimension        INTEGER NOT NULL,
                model_digest     TEXT,               -- the model's weights/config digest, when known
                identity_parts   TEXT NOT NULL,      -- JSON: what the identity digest covers
                library_versions TEXT NOT NULL,      -- JSON: ptah, sentence-transformers, torch, transformers
                created_at       TEXT NOT NULL,
                updated_at       TEXT NOT NULL
            )
            """,
            """
            CREATE TABLE vectors (
                generation   TEXT NOT NULL REFERENCES generations(identity),
                row_identity TEXT NOT NULL,          -- length-prefixed key components
                key          TEXT NOT NULL,          -- the key as a corpus spells it
                text_sha256  TEXT NOT NULL,          -- SHA-256 (hex) of the exact embedded text
                vector       BLOB NOT NULL,          -- float32, little-endian, `dimension` values
                PRIMARY KEY (generation, row_identity)
            )
            """,
            # Covers what build and verify compare, so they never read vector bytes.
            "CREATE INDEX vectors_digests ON vectors (generation, row_identity, key, text_sha256)",
            """
            CREATE TABLE query_cache (
                generation TEXT NOT NULL REFERENCES generations(identity),
                query      TEXT NOT NULL,
                vector     BLOB NOT NULL,            -- float32, little-endian
                PRIMARY KEY (generation, query)
            )
            """,
        ),
    ),
    (
        "0002_lexical_indexes",
        (
            # The lexical channel's BM25 indexes (ptah.adapters.lexical), one per text template and
            # settings.
            """
            CREATE TABLE lexical_indexes (
                fingerprint     TEXT NOT NULL,       -- sha256 over sorted (row identity, text SHA-256)
                settings        TEXT NOT NULL,       -- JSON: tokenizer, BM25 parameters, bm25s version
                template_sha256 TEXT NOT NULL,       -- the text template indexed; a newer index replaces its older one
                rows            INTEGER NOT NULL,
                vocabulary      INTEGER NOT NULL,
                serialized      BLOB NOT NULL,       -- ptah-bm25@1: a ZIP of bm25s's saved index and the keys
                created_at      TEXT NOT NULL,
                PRIMARY KEY (fingerprint, settings)
            )
            """,
        ),
    ),
    (
        "0003_vector_checksums",
        (
            # zlib.crc32 of `vector`, so a vector damaged on disk is told from the one ptah wrote
            # (SQLite checks its pages' structure, not their contents): verify checks the
            # generation's, and a cached query vector that fails is embedded again. NULL: written
            # before ptah kept it.
            "ALTER TABLE vectors ADD COLUMN vector_crc32 INTEGER",
            "ALTER TABLE query_cache ADD COLUMN vector_crc32 INTEGER",
        ),
    ),
    (
        "0004_records",
        (
            # Small text records by (kind, key) for `ptah serve`: tokens (digests), corpora,
            # evaluations.
            """
            CREATE TABLE records (
                seq        INTEGER PRIMARY KEY AUTOINCREMENT,   -- the order first added
                kind       TEXT NOT NULL,
                key        TEXT NOT NULL,
                body       TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                UNIQUE (kind, key)
            )
            """,
        ),
    ),
)


def _applied(connection: sqlite3.Connection) -> list[str]:
    return [row[0] for row in connection.execute("SELECT name FROM migrations ORDER BY rowid")]


def migrate(connection: sqlite3.Connection, path: str) -> None:
    """Bring the store at ``path`` up to date, or refuse a store from a newer schema.

    ``connection`` must be in autocommit mode (``isolation_level=None``): the
    transactions here are explicit. ``BEGIN IMMEDIATE`` takes the write lock
    before looking, so two processes opening a fresh store at once do not
    apply a migration twice.
    """
    connection.execute(
        "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    if check_migrations(MIGRATIONS, _applied(connection), f"store {path}"):
        return
    for name, statements in MIGRATIONS:
        connection.execute("BEGIN IMMEDIATE")
        try:
            applied = _applied(connection)
            check_migrations(MIGRATIONS, applied, f"store {path}")
            if name not in applied:
                for statement in statements:
                    connection.execute(statement)
                connection.execute(
                    "INSERT INTO migrations (name, applied_at) VALUES (?, ?)",
                    (name, now()),
                )
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise


def check_migrations(migrations: tuple, applied: list[str], where: str) -> bool:
    """True when every one of ``migrations`` is applied; StoreUnavailable for an applied one ptah
    does not know."""
    known = [name for name, _ in migrations]
    unknown = [name for name in applied if name not in known]
    if unknown:
        raise StoreUnavailable(
            f"{where} has schema migration {unknown[0]!r}, which this ptah does not know; "
            "it was written by a newer ptah, so upgrade ptah to read it."
        )
    return len(applied) == len(known)
