"""Scoring many queries against many rows in blocks of bounded size.

One product of every query with every row holds cases x rows scores: 50,000
cases over 100,000 rows is 20 GB of float32, before ranking copies any of it.
So queries are scored a block at a time (:func:`score_blocks`); each block is
ranked and measured, and dropped before the next is computed.

Blocks of queries, every row in each
------------------------------------
A block holds some of the queries and *all* of the rows, because every number
ptah reports is measured on scores that must be the same bits however the
work is split: ties are exact float32 equalities, and a tie decided the other
way moves a row across the cutoff. A float32 product computed by BLAS is not
always the same bits when the matrices are cut differently. Measured with
OpenBLAS 0.3.31 (numpy 2.4, x86-64): cutting the rows into blocks changed the
last bits of some scores (blocks of 8 rows, and with two queries blocks of up
to 512 rows: the library takes other kernels for small and for edge-sized
products); cutting the queries never did when each block held two queries or
more and at least a few thousand scores; a block of one query takes the
matrix-vector path and differs again. Hence the plan of :func:`query_blocks`:

* one block -- the whole product, as computed before blocks existed -- when
  all the scores fit in :data:`BLOCK_SCORES`;
* otherwise blocks of nearly equal size (they differ by one query at most),
  each at least half the largest block that fits, so never one query and
  never a small product.

A block then holds at most ``max(BLOCK_SCORES, MIN_BLOCK_QUERIES x rows)``
scores: the memory scoring needs is bounded by the rows, never by cases x rows
(the rows' vectors themselves take ``dimension`` floats per row, more than the
4 scores per row of the smallest block). ``tests/core/test_scoring.py`` checks
that blocked products equal the whole product on the machine that runs it.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

BLOCK_SCORES = 1 << 25
"""Scores per block, at most (128 MiB of float32), unless the rows alone need more (see the module docs)."""
MIN_BLOCK_QUERIES = 4
"""The fewest queries a block is planned for; balanced blocks are never below half of it, so never one query."""


def query_blocks(queries: int, rows: int, budget: int = BLOCK_SCORES) -> list[tuple[int, int]]:
    """Half-open ranges ``(start, stop)`` of queries, in order, covering ``range(queries)``.

    One range when ``queries x rows <= budget`` (or there are at most
    :data:`MIN_BLOCK_QUERIES` queries); otherwise ranges of nearly equal size,
    each of at most ``max(budget // rows, MIN_BLOCK_QUERIES)`` queries and at
    least half that (see the module docs for why).
    """
    if isinstance(queries, bool) or not isinstance(queries, int) or queries < 0:
        raise ValueError(f"queries must be a whole number >= 0, got {queries!r}")
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
        raise ValueError(f"rows must be a whole number >= 0, got {rows!r}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget must be a whole number >= 1, got {budget!r}")
    if queries == 0:
        return []
    if queries * rows <= budget:
        return [(0, queries)]
    size = max(MIN_BLOCK_QUERIES, budget // rows)
    count = -(-queries // size)
    bounds = [queries * i // count for i in range(count + 1)]
    return list(zip(bounds, bounds[1:]))


def score_blocks(queries: np.ndarray, vectors: np.ndarray, budget: int = BLOCK_SCORES) -> Iterator[tuple[int, int, np.ndarray]]:
    """``(start, stop, queries[start:stop] @ vectors.T)`` for each block of :func:`query_blocks`.

    ``queries`` (q, d) and ``vectors`` (n, d) are float32; with unit-length
    rows a score is the cosine similarity. Each block's scores are the bits
    the whole product ``queries @ vectors.T`` holds for those queries.
    """
    if queries.ndim != 2 or vectors.ndim != 2:
        raise ValueError(f"queries and vectors must be 2-D, got shapes {queries.shape} and {vectors.shape}")
    for start, stop in query_blocks(len(queries), len(vectors), budget):
        yield start, stop, queries[start:stop] @ vectors.T
