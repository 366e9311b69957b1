"""External generations: vectors the table already holds (``vectors: {column: …}``), read instead of
built.

Their vectors, keys and filter come from the source's one read-only snapshot
(:meth:`Source.vectors`), never from the store; the store keeps only their
query cache, under the generation's identity (``ptah-external@1``, see
:mod:`ptah.adapters.embedders.registry`). Verification is coverage only:
rows whose vector is NULL are *missing*; freshness cannot be verified (ptah
never saw the text the vectors were made from) and the verification says so
in :data:`FRESHNESS_NOTE`, with ``freshness``, ``fresh``, ``stale`` and
``fresh_ok`` left null rather than claimed.

Rows are scored by cosine: a vector whose length already is 1 (to float32
rounding, :data:`UNIT_TOLERANCE`) is used exactly as the table holds it -- so
vectors the same model made score bit for bit as ptah's own generation's --
and any other nonzero vector is scaled to unit length.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

import numpy as np

from ptah.adapters.stores.records import GenerationRecord, Matrix
from ptah.core.errors import InputError, StaleGeneration
from ptah.core.run_parts import MAX_OFFENDERS, VerifyResult

if (
    TYPE_CHECKING
):  # only named in annotations: the project reads external generations through this module
    from ptah.services.project import Generation, Project

FRESHNESS_NOTE = "cannot be verified: the vectors are the table's"
UNIT_TOLERANCE = 1e-5


def is_external(generation: Generation) -> bool:
    return generation.settings.vectors is not None


def refuse_build(generation: Generation, instead: str = "nothing to build") -> None:
    """InputError (exit 2) for building an external generation, or (``instead`` saying what is used
    then) an index on one."""
    if is_external(generation):
        raise InputError(
            f'generation "{generation.name}" reads its vectors from column '
            f"{generation.settings.vectors} of the source table: its vectors are the table's; {instead}"
        )


def read_external(
    project: Project, generation: Generation, *, measure: bool = True
) -> tuple[Matrix, VerifyResult, bool]:
    """The rows' vectors (rows with one, unit length), the coverage of the rows passing the filter,
    and whether the table's vectors all were unit length already (inner product then ranks as
    cosine).

    With ``measure``, a column without a single vector is :class:`StaleGeneration` (exit 3, even
    with --allow-stale): there is nothing to score and no dimension to embed the queries at.
    """
    column = generation.settings.vectors
    if column is None:
        raise InputError(
            f'generation "{generation.name}" names no column of vectors; it is built, not read'
        )
    read = project.source.vectors(column)
    covered = len(read.keys)
    if measure and not covered:
        raise StaleGeneration(
            f'generation "{generation.name}" has no vector to measure: none of the {read.rows} '
            f"rows passing the filter holds one in column {generation.settings.vectors}"
        )
    verification = VerifyResult(
        generation=generation.name,
        identity=generation.identity.identity,
        built=True,
        rows=read.rows,
        vectors=covered,
        covered=covered,
        fresh=covered,
        stale=0,
        missing=read.missing,
        orphans=0,
        stale_keys=(),
        missing_keys=tuple(read.missing_keys[:MAX_OFFENDERS]),
        orphan_keys=(),
        freshness_note=FRESHNESS_NOTE,
    )
    scaled = unit_rows(read.vectors)
    return Matrix(read.keys, read.identities, read.vectors), verification, not scaled


def verification_dict(result: VerifyResult) -> dict:
    """``result`` as a report holds it, freshness written in words instead of counts."""
    return result.as_dict() | {"fresh": None, "stale": None, "fresh_ok": None}


def unit_rows(vectors: np.ndarray) -> int:
    """Scale, in place, the rows whose length is not 1 to within float32 rounding; how many were not
    (a zero vector counts: it stays zero, and no measure ranks it as cosine would)."""
    if vectors.size == 0:
        return 0
    norms = np.linalg.norm(vectors.astype(np.float64), axis=1)
    off = np.abs(norms - 1.0) > UNIT_TOLERANCE
    scale = (norms > 0) & off
    if scale.any():
        vectors[scale] /= norms[scale, None].astype(np.float32)
    return int(off.sum())


def external_settings(generation: Generation) -> dict:
    """The settings a report shows for an external generation: how its queries are embedded, and its
    column."""
    settings = generation.settings
    return {
        "model": settings.model,
        "normalize": settings.normalize,
        "max_seq_length": settings.max_seq_length,
        "query_prefix": settings.query_prefix,
        "batch_size": settings.batch_size,
        "dimension": settings.dimension,
        "vectors": {"column": settings.vectors},
    }


def hold_table_index(project: Project, generation: Generation, options, unit_vectors: bool):
    """For index modes: the table's own index on the column, searched in the source's snapshot; None
    for exact.

    InputError (exit 2) when the source has no index to offer (SQLite), or the
    column none whose operator class ranks by cosine (:mod:`ptah.adapters.sources.postgres_index`).
    """
    if not options.uses_index:
        return None
    column = generation.settings.vectors
    search_table = getattr(project.source, "index_search", None)
    if search_table is None:
        raise InputError(
            lambda words: (
                f'generation "{generation.name}" reads column {column} of table '
                f"{project.spec.source.table} in {project.spec.source.redacted_database}, where no "
                f"vector index exists to search; evaluate it with {words.option('search', 'exact')}"
            )
        )
    table_index = search_table(column, unit_vectors=unit_vectors)
    if table_index.index.kind != "hnsw" and options.ef_search is not None:
        raise InputError(
            lambda words: (
                f"{words.option('ef_search')} applies to HNSW; the index {table_index.index.name} on "
                f"table {project.spec.source.table}, column {column} is IVFFlat (it searches the "
                "server's ivfflat.probes lists)"
            )
        )
    from ptah.services.channels.index import IndexSearch

    described = table_index.describe(project.spec.source.table)
    if table_index.index.kind == "ivfflat":
        described["probes"] = table_index.probes()
    return IndexSearch(generation.identity.identity, described, options, table_index, ExitStack())


def cache_store(project: Project, generation: Generation, dimension: int):
    """The store (created if needed) with the generation registered, so its query cache can hold the
    queries.

    The record holds no vectors: it is there for the cache's sake, with the
    dimension the table's vectors have now.
    """
    store = project.store(create=True)
    identity = generation.identity.identity
    with store.snapshot() as snapshot:
        record = snapshot.generation(identity)
    if record is None or record.dimension != dimension:
        store.register_generation(
            GenerationRecord(
                identity=identity,
                name=generation.name,
                model=generation.settings.model,
                settings=external_settings(generation),
                dimension=dimension,
                model_digest=generation.identity.model_digest,
                identity_parts=dict(generation.identity.parts),
                library_versions={},
            )
        )
    return store
