"""Exact cosine search over one generation.

The generation's vectors are read once per process into one contiguous
float32 matrix of unit-length rows (:meth:`Opened.matrix`). A call embeds all
its queries at once (unit length, as the rows) and ranks every row for each
by the one exact plan of ``evaluate`` (:mod:`ptah.core.exact`: a score is the
cosine similarity computed in float64, the same on every machine; ranked
score descending, ties by key ascending). A query vector of length zero
scores 0 against every row.

Queries are read from the store's query cache (the one ``evaluate`` fills, by
generation identity and exact query text) when it holds them: a repeated
search neither loads the model nor imports its library. The model embeds only
the queries the cache lacks, and the cache keeps them.
"""

from __future__ import annotations

import numpy as np

from ptah.adapters.sources.base import texts_of
from ptah.core.errors import InputError, ModelUnavailable, NotBuilt
from ptah.core.exact import rank_exact
from ptah.core.ranking import Ranked, normalize_rows
from ptah.services.project import Generation, Opened, checked_embedder


def search(project: Opened, name: str | None, queries: list[str], k: int) -> list[Ranked]:
    """The top ``k`` ``(key, score)`` pairs of each query, best first, in generation ``name``.

    ``name`` None means the active generation; its model is opened through
    the embedder registry. Raises :class:`InputError` (exit 2) for
    ``k < 1`` and :class:`NotBuilt` (exit 3) for a generation never
    built with its current settings.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"-k must be a whole number of at least 1, not {k!r}.")
    generation = project.generation(name)
    matrix = project.matrix(generation)
    if not queries:
        return []
    return rank(
        cached_queries(project, generation, queries, matrix.vectors.shape[1]),
        matrix.vectors,
        matrix.keys,
        k,
    )


def cached_queries(
    project: Opened, generation: Generation, queries: list[str], dimension: int
) -> np.ndarray:
    """The queries as unit-length float32 rows: from the query cache where it holds them, else
    embedded (and then kept there)."""
    from ptah.services.project import cache_store, is_external

    store = (
        cache_store(project, generation, dimension) if is_external(generation) else project.store()
    )
    identity = generation.identity.identity
    if store is None:  # the matrix was read from the store, so only a store removed since gets here
        raise NotBuilt(generation.name, identity, project.spec_path)
    found = store.cached_queries(identity, queries)
    missing = [text for text in dict.fromkeys(queries) if text not in found]
    if missing:
        fresh = embed_queries(
            checked_embedder(project, generation, store), generation, missing, dimension
        )
        computed = {text: fresh[i] for i, text in enumerate(missing)}
        store.cache_queries(identity, computed)
        found |= computed
    return np.array([found[text] for text in queries], dtype=np.float32, order="C").reshape(
        len(queries), dimension
    )


def row_texts(project: Opened, generation: Generation, keys: set[str]) -> dict[str, str]:
    """The text the generation's template renders now for each of ``keys`` that is a row, read by
    key."""
    return texts_of(project.source, generation.settings.template(project.spec.source), keys)


def embed_queries(
    embedder, generation: Generation, queries: list[str], dimension: int
) -> np.ndarray:
    """The queries as unit-length float32 rows, checked against the generation's dimension.

    The embedder already normalises when the settings say ``normalize``
    (scaling again would only perturb the last bits); otherwise it is done here.
    """
    vectors = np.array(embedder.embed_queries(list(queries)), dtype=np.float32, order="C")
    if vectors.shape != (len(queries), dimension) and generation.settings.vectors is not None:
        # the specification pairs the column with a model that embeds at another dimension
        raise InputError(
            f'generation "{generation.name}": column {generation.settings.vectors} holds vectors of dimension '
            f"{dimension}, and its model {generation.settings.model} embeds the queries at dimension "
            f"{vectors.shape[-1] if vectors.ndim == 2 else vectors.shape}; name the model that made the column's "
            "vectors"
        )
    if vectors.shape != (len(queries), dimension):
        raise ModelUnavailable(
            f'the model of generation "{generation.name}" returned query vectors of shape {vectors.shape}; '
            f"the stored vectors have dimension {dimension}."
        )
    return vectors if generation.settings.normalize else normalize_rows(vectors)


def rank(query_vectors: np.ndarray, vectors: np.ndarray, keys: list[str], k: int) -> list[Ranked]:
    """Each unit-length query's top k of the unit-length rows
    (:func:`ptah.core.exact.rank_exact`)."""
    return [
        ranking.ranked
        for ranking in rank_exact(query_vectors, keys, vectors, [k] * len(query_vectors)).rankings()
    ]
