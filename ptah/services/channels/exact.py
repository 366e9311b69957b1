"""Exact search over a generation's vectors, held whole or streamed in blocks: one path for both.

A generation's vectors reach the search as a sequence of blocks of rows
(:data:`Blocks`): a matrix read whole is cut into views of
:data:`STREAM_ROWS` rows; above :data:`STREAM_BYTES` of vectors the blocks
come one at a time from the snapshot the evaluation reads
(:meth:`Snapshot.vector_blocks`) and each is dropped once folded in. Either
way every block goes through :class:`ptah.core.exact.ExactRanking`, so a
case's ranking, scores and the rank of a missed key are the same whichever
way the vectors came (and on every machine: see :mod:`ptah.core.ranking`).
A required key's rank is counted as the blocks go by when its vector can be
read before them (:data:`KeyedRows`: a matrix held whole, or a snapshot that
reads vectors by key, as both of ptah's stores' do); otherwise, when it was
missed, the blocks before its row are given a second time (from the same
snapshot) to count the rows that ranked above it.

A generation a hybrid run also fuses is not streamed (fusion reads each
case's whole exact ranking). With ``--search index`` the index's answers are
the run and no vector is scored; with ``both`` the exact scores of the keys
the index returned are watched as they go by.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import islice

import numpy as np

from ptah.adapters.stores.base import KeyedVectors
from ptah.core.corpus import Case
from ptah.core.exact import ExactRanking
from ptah.core.measures import Measure
from ptah.core.ranking import Ranked, normalize_rows, query_blocks
from ptah.core.report import CaseResult, ranking_depth
from ptah.services.channels.base import measure_rankings
from ptah.services.channels.registry import CHANNELS

STREAM_ROWS = 1 << 16
"""Rows per block (65,536: 16 MiB at 64 dimensions, 96 MiB at 384)."""
STREAM_BYTES = 1 << 28
"""A generation whose vectors take more than this (256 MiB of float32; 1,048,576 rows at 64
dimensions) is streamed."""

Blocks = Callable[[], Iterator[tuple[Sequence[str], np.ndarray]]]
"""Gives, each time it is called, the generation's rows as ``(keys, unit float32 vectors)`` blocks,
in one order."""


KeyedRows = Callable[[AbstractSet[str]], Mapping[str, np.ndarray]]
"""Gives, before the blocks are read, the vectors of those of the keys that are the key of exactly
one row (the vector that row's block will bring)."""


def streams(channels: Sequence[str], rows: int, dimension: int) -> bool:
    """Whether a generation of ``rows`` x ``dimension`` is read block by block (module docs)."""
    whole = any(getattr(CHANNELS.get(name), "whole_ranking", False) for name in channels)
    return not whole and rows * dimension * 4 > STREAM_BYTES


def matrix_blocks(keys: Sequence[str], vectors: np.ndarray) -> Blocks:
    """The :data:`Blocks` of a matrix held whole: views of :data:`STREAM_ROWS` rows."""
    return lambda: (
        (keys[first : first + STREAM_ROWS], vectors[first : first + STREAM_ROWS])
        for first in range(0, len(keys), STREAM_ROWS)
    )


def matrix_rows(keys: Sequence[str], vectors: np.ndarray) -> KeyedRows:
    """The :data:`KeyedRows` of a matrix held whole: rows of it, by key."""

    def rows_of(wanted: AbstractSet[str]) -> dict[str, np.ndarray]:
        columns: dict[str, int] = {}
        repeated = set()
        for column, key in enumerate(keys):
            if key in wanted:
                if key in columns:
                    repeated.add(key)
                columns[key] = column
        return {key: vectors[column] for key, column in columns.items() if key not in repeated}

    return rows_of


def snapshot_blocks(snapshot, identity: str, *, normalize: bool) -> Blocks:
    """The :data:`Blocks` of a generation read from ``snapshot``, scaled to unit length when
    ``normalize``."""

    def blocks() -> Iterator[tuple[Sequence[str], np.ndarray]]:
        for block in snapshot.vector_blocks(identity, STREAM_ROWS):
            yield block.keys, normalize_rows(block.vectors) if normalize else block.vectors

    return blocks


def snapshot_rows(snapshot, identity: str, *, normalize: bool) -> KeyedRows | None:
    """The :data:`KeyedRows` of a generation read from ``snapshot`` by key, scaled as
    :func:`snapshot_blocks` scales its blocks; None when the snapshot reads no vectors by key."""
    if not isinstance(snapshot, KeyedVectors):
        return None

    def rows_of(wanted: AbstractSet[str]) -> Mapping[str, np.ndarray]:
        found = snapshot.vectors_of(identity, wanted) if wanted else {}
        if not normalize or not found:
            return found
        return dict(zip(found, normalize_rows(np.stack(list(found.values())))))

    return rows_of


def search_exact(
    blocks: Blocks,
    cases: Sequence[Case],
    queries: np.ndarray,
    measures: Sequence[Measure],
    index_search=None,
    rows_of: KeyedRows | None = None,
) -> list[CaseResult]:
    """Each case measured on its exact ranking over every row of ``blocks``.

    ``rows_of`` gives the required keys' vectors before the blocks when it
    can, so their ranks are counted in one pass.

    With ``index_search`` (:class:`~ptah.services.channels.index.IndexSearch`)
    the index is searched first; mode ``index`` then scores no vector and
    returns no exact results; mode ``both`` watches the exact scores of the
    keys each case's index ranking holds and hands them to it.
    """
    watched = None
    if index_search is not None:
        found = [
            result
            for start, stop in query_blocks(len(cases), STREAM_ROWS)
            for result in index_search.search(cases[start:stop], queries[start:stop], measures)
        ]
        if index_search.options.mode != "both":
            return []
        watched = [[entry.key for entry in result.ranking] for result in found]
    ranking = _ranked(
        blocks,
        ExactRanking(
            queries,
            [case.k for case in cases],
            expected=[case.expected_keys() for case in cases],
            asked=[case.required for case in cases],
            reach=[ranking_depth(case, measures) for case in cases],
            watched=watched,
            asked_vectors=(
                rows_of(set().union(*(case.required for case in cases))) if rows_of else None
            ),
        ),
    )
    if watched is not None:
        index_search.exact_scores = [
            {key: score for key in keys if (score := ranking.score_of(i, key)) is not None}
            for i, keys in enumerate(watched)
        ]
    return measure_rankings(cases, ranking.rankings(), ranking.rows, measures)


def top_rows(blocks: Blocks, queries: np.ndarray, depth: int) -> list[Ranked]:
    """Each query's exact top ``depth`` rows (what the hybrid channel fuses)."""
    return [
        ranking.ranked
        for ranking in _ranked(blocks, ExactRanking(queries, [depth] * len(queries))).rankings()
    ]


def _ranked(blocks: Blocks, ranking: ExactRanking) -> ExactRanking:
    """``ranking`` with every block added, and the blocks it must count again counted."""
    for keys, vectors in blocks():
        ranking.add(keys, vectors)
    again = ranking.recount()
    if again:  # a missed key's rank counts the rows of the blocks before its own
        for keys, vectors in islice(blocks(), again):
            ranking.count(keys, vectors)
    return ranking
