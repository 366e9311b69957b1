"""The vector channel: a generation's vectors, searched exactly (every row scored) or through an
index.

For a generation (its *vector side*, made once per evaluation and shared with
the hybrid channel):

1. read its record, its rows' text digests and its vectors from one store
   snapshot, so a build running meanwhile is seen as of one commit; a
   generation never built with its current settings is :class:`NotBuilt`
   (exit 3);
2. verify it against the source (coverage and freshness); an incomplete or
   stale generation is refused (:class:`StaleGeneration`, exit 3) unless the
   request allows it, and the run records which;
3. check that every key the corpus names is a row (exit 2 otherwise);
4. embed the queries -- from the store's query cache when all are there, so a
   warm evaluate neither loads the model nor imports torch;
5. search every case exactly (:mod:`ptah.services.channels.exact`: the
   vectors held whole, or read in blocks from the snapshot when they are too
   many to hold) and measure each case.

Index search (``mode`` index or both) is a mode of this channel: see
:mod:`ptah.services.channels.index`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ptah.adapters.embedders.base import usage_of
from ptah.adapters.stores.base import block_digests
from ptah.core.errors import NotBuilt, StaleGeneration, Words, capital
from ptah.core.parts import RunGeneration, Search, Verification, VerifyResult, read_only
from ptah.core.ranking import Ranked, normalize_rows
from ptah.core.report import Run, make_run
from ptah.core.request import VECTOR
from ptah.services.channels.base import RunPlan, Sides
from ptah.services.channels.exact import (
    Blocks,
    KeyedRows,
    matrix_blocks,
    matrix_rows,
    search_exact,
    snapshot_blocks,
    snapshot_rows,
    streams,
    top_rows,
)
from ptah.services.channels.index import hold_index
from ptah.services.project import (
    NOT_CHECKED,
    Generation,
    cache_store,
    check,
    external_settings,
    hold_table_index,
    is_external,
    read_external,
    report_settings,
    stored_probe,
    verification_dict,
)
from ptah.services.search import embed_queries
from ptah.services.verify import verify_in

_CACHE_READ = 4096  # distinct queries read from the query cache at a time


@dataclass
class VectorSide:
    """A generation's vectors measured once: its run, and each case's exact top rows on demand (for
    fusion)."""

    run: Run
    keys: list[str]
    top: Callable[
        [int, int, int], list[Ranked]
    ]  # (start, stop, depth): cases start..stop's exact top depth rows


class VectorChannel:
    name = VECTOR
    bare_name = True  # a vector run is named by its generation
    needs_vectors = True

    def measure(self, plan: RunPlan, sides: Sides) -> Run:
        return vector_side(sides, plan.generation).run


def vector_side(sides: Sides, name: str) -> VectorSide:
    """The generation's vector side, measured the first time it is asked for."""
    return sides.once(("vector", name), lambda: _measure(sides, sides.project.generation(name)))


def _measure(sides: Sides, generation: Generation) -> VectorSide:
    """Read the generation's vectors (whole, or as blocks from the store's snapshot), verify,
    search, measure."""
    project, request = sides.project, sides.request
    clock = time.perf_counter()
    identity = generation.identity.identity
    if is_external(
        generation
    ):  # the table's vectors, from the source's snapshot; the store holds the query cache
        matrix, verification, unit = read_external(project, generation)
        index_search = hold_table_index(
            project, generation, request.search, unit
        )  # None for exact search
        store = cache_store(project, generation, int(matrix.vectors.shape[1]))
        sides.charge("load_vectors", clock)
        _refuse_stale(sides, verification, clock)
        return _search(sides, generation, _held(store, None, verification, index_search, matrix))
    store = project.store()
    if store is None:
        raise NotBuilt(generation.name, identity, project.spec_path)
    with store.snapshot() as snapshot:
        record = snapshot.generation(identity)
        if record is None:
            raise NotBuilt(generation.name, identity, project.spec_path)
        rows = snapshot.vector_count(identity)
        if streams(sides.channels, rows, record.dimension):  # too big to hold: read block by block
            return _search_streamed(sides, generation, store, snapshot, record, rows, clock)
        matrix = snapshot.matrix(identity)
        index_search = hold_index(
            project, store, snapshot, generation, request.search
        )  # None for exact search
        sides.charge("load_vectors", clock)
        clock = time.perf_counter()
        verification = verify_in(project, generation, snapshot)
    _refuse_stale(sides, verification, clock)
    return _search(sides, generation, _held(store, record, verification, index_search, matrix))


def _search_streamed(
    sides: Sides, generation: Generation, store, snapshot, record, rows: int, clock: float
) -> VectorSide:
    """:func:`_search` over blocks read from ``snapshot`` (open throughout) of the generation's
    ``rows`` vectors."""
    identity = generation.identity.identity
    index_search = hold_index(sides.project, store, snapshot, generation, sides.request.search)
    sides.charge("load_vectors", clock)
    clock = time.perf_counter()
    verification = verify_in(sides.project, generation, snapshot)
    _refuse_stale(sides, verification, clock)
    expected = set().union(*(case.expected_keys() for case in sides.corpus.cases))
    present = block_digests(snapshot).held_keys(identity, expected)
    normalize = not record.settings.get("normalize", True)
    return _search(
        sides,
        generation,
        _Vectors(
            store,
            record,
            verification,
            index_search,
            snapshot_blocks(snapshot, identity, normalize=normalize),
            rows,
            record.dimension,
            present,
            rows_of=snapshot_rows(snapshot, identity, normalize=normalize),
        ),
    )


@dataclass
class _Vectors:
    """Where a vector side's rows come from, one shape for all: a matrix held whole (a store's or a
    table's own vectors) or blocks read from a snapshot; with its verification and, for index modes,
    the index search."""

    store: Any
    record: Any  # the generation's record; None for a table's own vectors
    verification: VerifyResult
    index_search: Any  # IndexSearch, or None for exact search
    blocks: Blocks
    rows: int
    dimension: int
    present: set[
        str
    ]  # the corpus's expected keys that are rows (all keys, for a matrix held whole)
    keys: list[str] = field(
        default_factory=list
    )  # a matrix held whole: its keys, in order (hybrid fuses them)
    rows_of: KeyedRows | None = None  # rows by key, read before the blocks (None: not readable)


def _held(store, record, verification: VerifyResult, index_search, matrix) -> _Vectors:
    """:class:`_Vectors` over a matrix held whole (scaled to unit length when the record says it was
    not)."""
    keys, vectors = list(matrix.keys), matrix.vectors
    if record is not None and not record.settings.get("normalize", True):
        normalize_rows(vectors)
    return _Vectors(
        store,
        record,
        verification,
        index_search,
        matrix_blocks(keys, vectors),
        len(keys),
        int(vectors.shape[1]),
        set(keys),
        keys,
        matrix_rows(keys, vectors),
    )


def _search(sides: Sides, generation: Generation, source: _Vectors) -> VectorSide:
    """Embed the queries, search every case exactly (and through the index if asked) and measure;
    the side."""
    record, index_search, dimension = source.record, source.index_search, source.dimension
    settings = record.settings if record is not None else {}
    sides.check_keys(source.present)

    clock = time.perf_counter()
    queries, cached, service = _query_vectors(sides, generation, source.store, dimension, settings)
    sides.charge("embed_queries", clock)
    clock = time.perf_counter()
    try:
        results = search_exact(
            source.blocks, sides.corpus.cases, queries, sides.measures, index_search, source.rows_of
        )
    finally:
        if index_search is not None:
            index_search.close()
    sides.charge("search", clock)
    generation_info = _generation_info(
        generation, record, source, sides.request.allow_stale, dimension, cached, service
    )

    def top(start: int, stop: int, depth: int) -> list[Ranked]:
        return top_rows(source.blocks, queries[start:stop], depth)

    if index_search is None:
        search = Search(VECTOR, "exact", "cosine")
        return VectorSide(
            make_run(generation_info, search, results, sides.measures), source.keys, top
        )
    sides.timings["search"] -= index_search.seconds  # the index's seconds are its own step
    sides.timings["index_search"] += index_search.seconds
    return VectorSide(index_search.run(generation_info, results, sides.measures), source.keys, top)


def _generation_info(
    generation: Generation,
    record,
    source,
    allow_stale: bool,
    dimension: int,
    cached: int,
    service: dict,
) -> RunGeneration:
    """The report's ``generation`` member of a vector run (``record`` None for a table's own
    vectors; ``source``, what the vectors were read from: its rows and their verification)."""
    verification, rows = source.verification, source.rows
    checks = verification_dict(verification) if record is None else verification.as_dict()
    return RunGeneration(
        name=generation.name,
        identity=generation.identity.identity,
        model=record.model if record else generation.settings.model,
        settings=read_only(
            report_settings(record.settings) if record else external_settings(generation)
        ),
        dimension=dimension,
        rows=rows,
        model_digest=record.model_digest if record else generation.identity.model_digest,
        versions=read_only(dict(record.library_versions) if record else {}),
        verification=Verification(
            read_only({name: value for name, value in checks.items() if name != "ok"}),
            checks["ok"],
            allow_stale,
            verification.fingerprint,
        ),
        queries_from_cache=cached,
        # a service's probe check and usage (ptah.services.project); nothing for a local model
        probe=read_only(service.get("probe")),
        usage=read_only(service.get("usage")),
    )


def _refuse_stale(sides: Sides, verification: VerifyResult, clock: float) -> None:
    """Charge the verification's time; refuse a generation not complete and fresh unless the request
    allows it."""
    sides.charge("verify", clock)
    if not verification.ok and not sides.request.allow_stale:
        raise _stale(verification, sides.project.spec_path)


def _stale(result: VerifyResult, spec_path: str | None) -> StaleGeneration:
    parts = []
    if result.missing:
        parts.append(
            f"{result.missing} of {result.rows} rows have no vector (e.g. {', '.join(result.missing_keys[:3])})"
        )
    if result.stale:
        parts.append(f"{result.stale} vectors are stale (e.g. {', '.join(result.stale_keys[:3])})")
    if result.orphans:
        parts.append(
            f"{result.orphans} vectors belong to rows gone from the source (e.g. {', '.join(result.orphan_keys[:3])})"
        )
    what = f'generation "{result.generation}" is not complete and fresh: {"; ".join(parts)}.'

    def remedy(words: Words) -> str:
        if result.freshness_note:
            return "Fill the table's missing vectors"
        return capital(words.build(result.generation, spec_path))

    return StaleGeneration(
        lambda words: (
            f"{what} {remedy(words)}, or pass {words.option('allow_stale', True)} to measure it "
            "as it is."
        ),
        what=what,
        remedy=remedy,
    )


def _query_vectors(
    sides: Sides, generation: Generation, store, dimension: int, kept: Mapping
) -> tuple[np.ndarray, int, dict]:
    """Unit-length query vectors in case order, from the cache where possible.

    Returns (vectors, cached count, the report's members for a service: its
    probe check and usage, :mod:`ptah.services.project`; ``kept`` is the record's
    settings, holding the probe).

    The model is asked only for the queries the cache lacks, through the same
    step as ``ptah inference search`` (so both score a query alike), and the
    cache keeps those unit-length vectors.
    """
    identity = generation.identity.identity
    rows: dict[
        str, list[int]
    ] = {}  # each distinct query -> the cases (rows of the matrix) that ask it
    for row, case in enumerate(sides.corpus.cases):
        rows.setdefault(case.query, []).append(row)
    vectors = np.zeros((len(sides.corpus.cases), dimension), dtype=np.float32)
    texts = list(rows)
    missing = []
    for start in range(
        0, len(texts), _CACHE_READ
    ):  # a slice of the cache at a time: one copy of the vectors held
        chunk = texts[start : start + _CACHE_READ]
        found = store.cached_queries(identity, chunk)
        for text in chunk:
            if text in found:
                vectors[rows[text]] = found[text]
            else:
                missing.append(text)
    service: dict = {"probe": NOT_CHECKED} if stored_probe(kept) is not None else {}
    if missing:
        embedder = sides.project.embedder(generation.settings)
        probe = check(generation.name, kept, embedder, allow_stale=sides.request.allow_stale)
        fresh = embed_queries(embedder, generation, missing, dimension)
        usage = usage_of(embedder)
        service = ({"probe": probe} if probe else {}) | ({"usage": usage} if usage else {})
        computed = {text: fresh[i] for i, text in enumerate(missing)}
        store.cache_queries(identity, computed)
        for text, vector in computed.items():
            vectors[rows[text]] = vector
    return vectors, len(texts) - len(missing), service
