"""What both stores return and share: a generation's record, its vectors as a matrix, how records
are written and read, and the SQLite store's migrations.

:data:`MIGRATIONS` are named and applied in order (:func:`migrate`), each in one transaction with
its row in ``migrations(name, applied_at)``, so a store is never half-way. A store recording a
migration this ptah does not know was written by a newer one and is refused. Append new migrations
at the end; never edit or reorder an applied one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager as ContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ptah.core.errors import StoreUnavailable


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
        return {
            name: dict(value) if isinstance(value, Mapping) else value
            for name, value in vars(self).items()
        }


@dataclass(frozen=True)
class Matrix:
    """A generation's vectors as one contiguous float32 matrix, rows ordered by row identity."""

    keys: list[str]
    row_identities: list[str]
    vectors: np.ndarray

    def __iter__(self):  # unpacks as (keys, row_identities, vectors)
        return iter((self.keys, self.row_identities, self.vectors))


GENERATION_COLUMNS = "identity, name, model, settings, dimension, model_digest, identity_parts, library_versions, created_at, updated_at"


def now() -> str:
    """The time a record is written: UTC, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def to_json(value: Mapping) -> str:
    """A mapping as the stores keep it: JSON with sorted keys."""
    return json.dumps(dict(value), sort_keys=True, ensure_ascii=False, default=str)


def generation_record(
    row: tuple, damaged: Callable[[str], Exception], decode: Callable = lambda value: value
) -> GenerationRecord:
    """A row of :data:`GENERATION_COLUMNS` as a record; ``decode`` reads its JSON columns.
    ``damaged(what was found)`` is raised for a record ptah cannot have written: JSON that does not
    read as an object, a dimension no model gives (:func:`stored_dimension`)."""
    identity, name, model, settings, dimension, digest, parts, versions, created, updated = row
    mappings = []
    for column, value in (
        ("settings", settings),
        ("identity_parts", parts),
        ("library_versions", versions),
    ):
        try:
            value = decode(value)
        except (ValueError, TypeError):  # JSONDecodeError, a number where text was written
            value = None
        if not isinstance(value, dict):
            raise damaged(f"the {column} of generation {name!r} do not read as a JSON object")
        mappings.append(value)
    return GenerationRecord(
        identity,
        name,
        model,
        mappings[0],
        stored_dimension(dimension, name, damaged),
        digest,
        mappings[1],
        mappings[2],
        created,
        updated,
    )


def stored_dimension(value: object, name: str, damaged: Callable[[str], Exception]) -> int:
    """A generation's stored dimension, when it is one a model can give (1 to the specification's
    maximum): a larger one would allocate terabytes before a vector is read, so ``damaged(what was
    found)`` is raised."""
    from ptah.adapters.spec_generations import MAX_DIMENSION

    if type(value) is not int or not 0 < value <= MAX_DIMENSION:
        raise damaged(
            f"generation {name!r} is recorded with dimension {value!r}, which no model gives "
            f"(1 to {MAX_DIMENSION:,})"
        )
    return value


# Registering a generation again refreshes all but its identity, dimension and created_at.
GENERATION_REFRESH = (
    "ON CONFLICT (identity) DO UPDATE SET name = excluded.name, model = excluded.model, settings = excluded.settings, "
    "model_digest = excluded.model_digest, identity_parts = excluded.identity_parts, "
    "library_versions = excluded.library_versions, updated_at = excluded.updated_at"
)


def generation_values(record: GenerationRecord) -> tuple:
    """The record's :data:`GENERATION_COLUMNS` values as the stores write them, registered now."""
    at = now()
    return (
        record.identity,
        record.name,
        record.model,
        to_json(record.settings),
        int(record.dimension),
        record.model_digest,
        to_json(record.identity_parts),
        to_json(record.library_versions),
        at,
        at,
    )


def check_dimension(record: GenerationRecord, stored: int) -> None:
    """StoreUnavailable when the generation is stored with another dimension than the record's."""
    if stored != int(record.dimension):
        raise StoreUnavailable(
            f"generation {record.identity} is stored with dimension {stored}, "
            f"but its model now gives {record.dimension}."
        )


class SnapshotReads:
    """What a store reads through a snapshot of its own, and closing it as a context manager."""

    snapshot: Callable[..., ContextManager[Any]]
    close: Callable[[], None]

    def generation(self, identity: str) -> GenerationRecord | None:
        with self.snapshot() as snapshot:
            return snapshot.generation(identity)

    def generations(self) -> list[GenerationRecord]:
        with self.snapshot() as snapshot:
            return snapshot.generations()

    def cached_queries(self, identity: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached float32 vectors of those ``texts`` that have a usable one under this
        generation."""
        with self.snapshot() as snapshot:
            return snapshot.cached_queries(identity, texts)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class LexicalTable:
    """The lexical channel's indexes (:mod:`ptah.adapters.lexical`) in a store's ``lexical_indexes``
    table (named with its ``_prefix``; ``_marker``: its driver's parameter marker): the store's
    ``_guarded()`` turns a failed read into ptah's error, its ``_transaction()`` yields its
    connection inside one write transaction."""

    _prefix, _marker = "", "?"
    _connection: Any
    _guarded: Callable[[], ContextManager[Any]]
    _transaction: Callable[[], ContextManager[Any]]

    def _sql(self, statement: str) -> str:
        return statement.replace("lexical_indexes", self._prefix + "lexical_indexes").replace(
            "?", self._marker
        )

    def lexical_index(self, fingerprint: str, settings: str) -> bytes | None:
        with self._guarded():
            row = self._connection.execute(
                self._sql(
                    "SELECT serialized FROM lexical_indexes WHERE fingerprint = ? AND settings = ?"
                ),
                (fingerprint, settings),
            ).fetchone()
        return None if row is None else bytes(row[0])

    def save_lexical_index(
        self,
        fingerprint: str,
        settings: str,
        template_sha256: str,
        rows: int,
        vocabulary: int,
        serialized: bytes,
    ) -> None:
        """Replaces the index of the same template and settings (and the one of the same text and
        settings)."""
        with self._transaction() as connection:
            connection.execute(
                self._sql(
                    "DELETE FROM lexical_indexes WHERE settings = ? AND (template_sha256 = ? "
                    "OR fingerprint = ?)"
                ),
                (settings, template_sha256, fingerprint),
            )
            connection.execute(
                self._sql(
                    "INSERT INTO lexical_indexes (fingerprint, settings, template_sha256, rows, "
                    "vocabulary, serialized, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                ),
                (fingerprint, settings, template_sha256, rows, vocabulary, serialized, now()),
            )


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
