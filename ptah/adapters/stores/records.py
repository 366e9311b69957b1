"""What both stores return and share: a generation's record, its vectors as a matrix, how records
are written and read."""

from __future__ import annotations

import json
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
