"""Scoring queries against rows: float32 products choose candidates, one float64 computation per
pair decides.

A row is a candidate when its float32 score (``queries @ rows.T``, a block at a time:
:func:`query_blocks`) is within :func:`margins` of the score that decides; each candidate's score
is then :func:`pair_scores`, which depends on the pair's bits alone, and ranks, ties and the rank of
a missed key are decided, and reported, on those. Why two computations and where the margin comes
from: docs/design.md ("The same ranking on every machine").
"""

from __future__ import annotations

import numpy as np

BLOCK_SCORES = 1 << 25
"""Float32 scores per block, at most (128 MiB), unless one query's row alone needs more."""
PAIRS_AT_ONCE = 1 << 13
"""Pairs :func:`pair_scores` multiplies at a time (a float64 array of 8,192 x d)."""


def query_blocks(queries: int, rows: int, budget: int = BLOCK_SCORES) -> list[tuple[int, int]]:
    """Half-open ranges ``(start, stop)`` of queries, in order, covering ``range(queries)``.

    Each holds at most ``max(1, budget // rows)`` queries (one range when all
    the scores fit in ``budget``), and the ranges differ in size by one at most.
    """
    for name, value, least in (("queries", queries, 0), ("rows", rows, 0), ("budget", budget, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name} must be a whole number >= {least}, got {value!r}")
    if queries == 0:
        return []
    size = max(1, budget // max(rows, 1))
    count = -(-queries // size)
    bounds = [queries * i // count for i in range(count + 1)]
    return list(zip(bounds, bounds[1:]))


def pair_scores(
    queries: np.ndarray, rows: np.ndarray, query_index: np.ndarray, row_index: np.ndarray
) -> np.ndarray:
    """The float64 score ``queries[query_index[p]] . rows[row_index[p]]`` of each pair p.

    ``queries`` (q, d) and ``rows`` (n, d) are float32. Each product of two
    float32 values is exact in float64; the d products of a pair are added in
    dimension order (``np.add.accumulate``, whose every step adds the next
    product to the sum so far), so a pair's score depends only on the two
    vectors' bits -- not on the CPU, the BLAS, the other pairs or how they are
    cut.
    """
    query_index, row_index = (
        np.asarray(query_index, dtype=np.int64),
        np.asarray(row_index, dtype=np.int64),
    )
    scores = np.empty(len(query_index), dtype=np.float64)
    for begin in range(0, len(query_index), PAIRS_AT_ONCE):
        end = begin + PAIRS_AT_ONCE
        scores[begin:end] = _dots(rows[row_index[begin:end]], queries[query_index[begin:end]])
    return scores


def margins(queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each query, how far a float32 score of it against any of ``rows`` can be from its float64
    score.

    ``(d + 2) * 2**-23 * |q| * max|v|``: twice the float32 error bound of a dot product of
    length d plus the float64 one. So a row whose float64 score reaches T has a float32 score of at
    least ``T - margin``, and any row of the top r (by float64 score) of a block whose float32
    scores put r rows at or above t has a float32 score of at least ``t - 2 x margin``. The squared
    lengths are float32 sums, so they are taken larger by their own worst rounding,
    ``(1 + d * 2**-23)``; an empty block of rows has margin 0.
    """
    dimension = queries.shape[1]
    if len(rows) == 0 or dimension == 0:
        return np.zeros(len(queries), dtype=np.float64)
    slack = 1 + (dimension + 2) * 2.0**-23
    largest = np.sqrt(float(np.max(np.einsum("ij,ij->i", rows, rows))) * slack)
    lengths = np.sqrt(np.einsum("ij,ij->i", queries, queries).astype(np.float64) * slack)
    return (dimension + 2) * 2.0**-23 * slack * lengths * largest


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Scale each row of a float32 matrix to unit length, in place; zero rows stay zero.

    The length is the float64 square root of the squares summed in dimension
    order (as :func:`pair_scores` sums), so a row's unit vector is the same
    bits on every machine.
    """
    if vectors.size == 0:
        return vectors
    for first in range(0, len(vectors), PAIRS_AT_ONCE):
        block = vectors[first : first + PAIRS_AT_ONCE]
        lengths = np.sqrt(_dots(block, block))
        lengths[lengths == 0] = 1.0
        block[:] = (block / lengths[:, None]).astype(np.float32)
    return vectors


def _dots(rows: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Each row's float64 dot product with ``other`` (a row of its own each, or one row for all):
    the exact products added in dimension order."""
    products = np.multiply(rows, other, dtype=np.float64)
    if products.shape[1] == 0:
        return np.zeros(len(products))
    np.add.accumulate(products, axis=1, out=products)
    return products[:, -1]
