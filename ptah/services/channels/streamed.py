"""Exact search over a generation too big to hold: its vectors streamed in blocks from one store snapshot.

Below :data:`STREAM_BYTES` of vectors the vector channel reads a generation
into one matrix (:mod:`ptah.services.channels.vector`); above it, the vectors
come a block of :data:`STREAM_ROWS` rows at a time from the snapshot the
evaluation reads (:meth:`Snapshot.vector_blocks`), each block is scored
against every query and folded into a running ranking per case
(:class:`ptah.core.streamed.StreamedRanking`), then dropped. The memory the
vectors take is one block, whatever the generation's size.

The numbers are the matrix's, bit for bit: the rankings are exactly
:func:`rank_many`'s, and the scores are the same float32 bits because a block
of rows is a multiple of 4,096 rows (cutting the rows of a product at such
multiples leaves every score's bits as the whole product computes them:
``tests/core/test_scoring.py`` checks it on the machine that runs the tests;
the queries are cut as :func:`query_blocks` plans). When a required key was
missed, the blocks before its row are read a second time, from the same
snapshot, to count the rows that ranked above it.

A generation a hybrid run also fuses is not streamed (fusion reads each
case's whole exact ranking). With ``--search index`` a streamed generation is
not scored exactly at all: the index's answers are the run; with ``both``
the exact scores of the keys the index returned are watched as they go by.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ptah.core.corpus import Case
from ptah.core.measures import Measure
from ptah.core.outcomes import ranking_depth
from ptah.core.report import CaseResult
from ptah.core.request import HYBRID
from ptah.core.scoring import query_blocks
from ptah.core.streamed import StreamedRanking
from ptah.services.channels.base import measure_rankings
from ptah.services.project import normalize_rows

STREAM_ROWS = 1 << 16
"""Rows per block (65,536: a multiple of 4,096, see the module docs; 16 MiB at 64 dimensions, 96 MiB at 384)."""
STREAM_BYTES = 1 << 28
"""A generation whose vectors take more than this (256 MiB of float32; 1,048,576 rows at 64 dimensions) is streamed."""


def streams(channels: Sequence[str], rows: int, dimension: int) -> bool:
    """Whether a generation of ``rows`` x ``dimension`` is searched block by block (module docs)."""
    return HYBRID not in channels and rows * dimension * 4 > STREAM_BYTES


def search_streamed(snapshot, identity: str, cases: Sequence[Case], queries: np.ndarray,
                    measures: Sequence[Measure], *, normalize: bool, index_search=None) -> list[CaseResult]:
    """Each case measured on its exact ranking over the generation's vectors, read block by block.

    With ``index_search`` (:class:`~ptah.services.channels.index.IndexSearch`)
    the index is searched first; mode ``index`` then reads no vector and
    returns no exact results; mode ``both`` watches the exact scores of the
    keys each case's index ranking holds and hands them to it.
    """
    plan = query_blocks(len(cases), STREAM_ROWS)
    watched = None
    if index_search is not None:
        found = [result for start, stop in plan for result in index_search.search(cases[start:stop], queries[start:stop],
                                                                                   measures)]
        if index_search.options.mode != "both":
            return []
        watched = [[entry.key for entry in result.ranking] for result in found]
    ranking = StreamedRanking([case.k for case in cases], expected=[case.expected_keys() for case in cases],
                              asked=[case.required for case in cases],
                              reach=[ranking_depth(case, measures) for case in cases], watched=watched)
    for block in snapshot.vector_blocks(identity, STREAM_ROWS):
        _score(ranking.add, block, queries, plan, normalize)
    blocks_again = ranking.recount()
    if blocks_again:  # a missed key's rank counts the rows of the blocks before its own
        for number, block in enumerate(snapshot.vector_blocks(identity, STREAM_ROWS)):
            _score(ranking.count, block, queries, plan, normalize)
            if number + 1 == blocks_again:
                break
    if watched is not None:
        index_search.exact_scores = [
            {key: score for key in keys if (score := ranking.score_of(i, key)) is not None} for i, keys in enumerate(watched)
        ]
    return measure_rankings(cases, ranking.rankings(), ranking.rows, measures)


def _score(fold, block, queries: np.ndarray, plan: list[tuple[int, int]], normalize: bool) -> None:
    """Score one block of rows against every query, a planned range of queries at a time, and fold it in."""
    vectors = block.vectors
    if normalize:
        normalize_rows(vectors)
    for number, (start, stop) in enumerate(plan):
        fold(start, stop, queries[start:stop] @ vectors.T, block.keys, new_block=number == 0)
