"""External generations: vectors the table already holds (``vectors: {column: …}``), read instead of built.

Their vectors, keys and filter come from the source's one read-only snapshot
(:meth:`Source.vectors`), never from the store; the store keeps only their
query cache, under the generation's identity (``ptah-external@1``, see
:mod:`ptah.adapters.embedders.identity`). Verification is coverage only:
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

import numpy as np

from ptah.adapters.stores.records import GenerationRecord, Matrix
from ptah.core.errors import CapabilityUnavailable, InputError, StaleGeneration
from ptah.services.project import Generation, Project
from ptah.services.verify import MAX_OFFENDERS, VerifyResult

FRESHNESS_NOTE = "cannot be verified: the vectors are the table's"
UNIT_TOLERANCE = 1e-5


def is_external(generation: Generation) -> bool:
    return generation.settings.vectors is not None


def refuse_build(generation: Generation) -> None:
    """InputError (exit 2) for building an external generation."""
    if is_external(generation):
        raise InputError(f'generation "{generation.name}" reads its vectors from column '
                         f"{generation.settings.vectors} of the source table: its vectors are the table's; "
                         "nothing to build")


def read_external(project: Project, generation: Generation, *, measure: bool = True) -> tuple[Matrix, VerifyResult]:
    """The rows' vectors (rows with one, unit length) and the coverage of the rows passing the filter.

    With ``measure``, a column without a single vector is :class:`StaleGeneration` (exit 3, even with
    --allow-stale): there is nothing to score and no dimension to embed the queries at.
    """
    read = project.source.vectors(generation.settings.vectors)
    covered = len(read.keys)
    if measure and not covered:
        raise StaleGeneration(f'generation "{generation.name}" has no vector to measure: none of the {read.rows} '
                              f"rows passing the filter holds one in column {generation.settings.vectors}")
    verification = VerifyResult(
        generation=generation.name, identity=generation.identity.identity, built=True, rows=read.rows,
        vectors=covered, covered=covered, fresh=covered, stale=0, missing=read.missing, orphans=0,
        stale_keys=(), missing_keys=tuple(read.missing_keys[:MAX_OFFENDERS]), orphan_keys=(),
        freshness_note=FRESHNESS_NOTE,
    )
    return Matrix(read.keys, read.identities, unit_rows(read.vectors)), verification


def verification_dict(result: VerifyResult) -> dict:
    """``result`` as a report holds it, freshness written in words instead of counts."""
    return result.as_dict() | {"fresh": None, "stale": None, "fresh_ok": None}


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Scale, in place, the nonzero rows whose length is not 1 to within float32 rounding."""
    if vectors.size == 0:
        return vectors
    norms = np.linalg.norm(vectors.astype(np.float64), axis=1)
    scale = (norms > 0) & (np.abs(norms - 1.0) > UNIT_TOLERANCE)
    if scale.any():
        vectors[scale] /= norms[scale, None].astype(np.float32)
    return vectors


def external_settings(generation: Generation) -> dict:
    """The settings a report shows for an external generation: how its queries are embedded, and its column."""
    settings = generation.settings
    return {"model": settings.model, "normalize": settings.normalize, "max_seq_length": settings.max_seq_length,
            "query_prefix": settings.query_prefix, "batch_size": settings.batch_size,
            "dimension": settings.dimension, "vectors": {"column": settings.vectors}}


def refuse_index(generation: Generation, options) -> None:
    """CapabilityUnavailable (exit 3) for index search of an external generation: not supported yet."""
    if options.uses_index:
        raise CapabilityUnavailable(
            f'generation "{generation.name}" holds the table\'s own vectors; searching them through an index '
            "is not supported yet; evaluate it with --search exact"
        )


def cache_store(project: Project, generation: Generation, dimension: int):
    """The store (created if needed) with the generation registered, so its query cache can hold the queries.

    The record holds no vectors: it is there for the cache's sake, with the
    dimension the table's vectors have now.
    """
    store = project.store(create=True)
    identity = generation.identity.identity
    with store.snapshot() as snapshot:
        record = snapshot.generation(identity)
    if record is None or record.dimension != dimension:
        store.register_generation(GenerationRecord(
            identity=identity, name=generation.name, model=generation.settings.model,
            settings=external_settings(generation), dimension=dimension,
            model_digest=generation.identity.model_digest, identity_parts=dict(generation.identity.parts),
            library_versions={},
        ))
    return store
