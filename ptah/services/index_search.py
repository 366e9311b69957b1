"""Building a generation's vector index: ``ptah inference index NAME --hnsw [--m M --ef-construction
E]``.

Builds (or replaces) a generation's HNSW index over cosine distance while
holding its build lock; only a store whose ``capabilities.vector_index`` is
true (pgvector) has one. Searching through it is a mode of the vector channel
(:mod:`ptah.services.channels.index`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from ptah.core.errors import CapabilityUnavailable, InputError, NotBuilt
from ptah.core.visible import abbreviated
from ptah.services.project import refuse_build

DEFAULT_M, M_RANGE = 16, range(2, 101)  # pgvector's defaults and limits for an HNSW index
DEFAULT_EF_CONSTRUCTION, EF_CONSTRUCTION_RANGE = 64, range(4, 1001)


@dataclass(frozen=True)
class IndexSummary:
    """What ``ptah inference index`` built."""

    generation: str
    identity: str
    index: dict
    vectors: int
    seconds: float

    def as_dict(self) -> dict:
        return asdict(self)


def build_index(
    project,
    name: str | None = None,
    *,
    m: int = DEFAULT_M,
    ef_construction: int = DEFAULT_EF_CONSTRUCTION,
) -> IndexSummary:
    """Build (or replace) generation ``name``'s HNSW cosine index, holding its build lock meanwhile.

    Raises :class:`InputError` (exit 2) for parameters pgvector refuses
    (``m`` 2..100, ``ef_construction`` 4..1000 and at least ``2 * m``),
    :class:`CapabilityUnavailable` (exit 3) on the SQLite store,
    :class:`NotBuilt` (exit 3) for a generation never built, and
    :class:`StoreUnavailable` (exit 3) while a build of it runs.
    """
    for option, value, allowed in (
        ("m", m, M_RANGE),
        ("ef_construction", ef_construction, EF_CONSTRUCTION_RANGE),
    ):
        if isinstance(value, bool) or value not in allowed:
            raise _out_of_range(option, value, allowed)
    if ef_construction < 2 * m:
        raise InputError(
            lambda words: (
                f"{words.option('ef_construction')} ({ef_construction}) must be at least twice "
                f"{words.option('m')} ({m}); pgvector requires it."
            )
        )
    generation = project.generation(name)
    refuse_build(
        generation, "ptah uses the table's own index (evaluate --search index) and builds none"
    )
    if not project.store_capabilities.vector_index:
        raise CapabilityUnavailable(
            "the SQLite store has no vector index; keep the generations in PostgreSQL with pgvector "
            "(store: postgresql://…) to build one."
        )
    started = time.perf_counter()
    identity = generation.identity.identity
    store = project.store()
    if store is None or store.generation(identity) is None:
        raise NotBuilt(generation.name, identity, project.spec_path)
    with store.build_lock(identity, generation.name):
        index = store.create_hnsw_index(identity, m, ef_construction)
        with store.snapshot() as snapshot:
            vectors = snapshot.vector_count(identity)
    return IndexSummary(
        generation.name, identity, index, vectors, round(time.perf_counter() - started, 3)
    )


def _out_of_range(option: str, value: object, allowed: range) -> InputError:
    """``option``'s ``value`` outside what pgvector accepts (exit 2)."""
    return InputError(
        lambda words: (
            f"{words.option(option)} must be a whole number from {allowed.start} to "
            f"{allowed.stop - 1}, not {abbreviated(repr(value))}."
        )
    )
