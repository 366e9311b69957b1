"""Scoring queries against rows: float32 products choose candidates, one float64 computation per
pair decides.

Why two computations
--------------------
A float32 matrix product computed by BLAS is fast, and its last bits depend
on the kernel the CPU gets (AVX2 or AVX-512), the thread count and how the
matrices are cut into blocks. A ranking decided on those bits moves when a
case is added to the corpus or BLAS takes another thread (DESIGN.md, "The same
ranking on every machine"). So ptah never ranks on a BLAS product:

1. the product ``queries @ rows.T`` in float32 only *selects candidates*: a
   row is a candidate when its float32 score is within a proven margin of the
   score that decides (the running cutoff of a ranking, or a missed key's
   score);
2. each candidate's score is recomputed by :func:`pair_scores` -- the float64
   dot product of the two float32 vectors, the products (exact in float64)
   summed one after the other in dimension order -- which depends on the two
   vectors' bits alone, on every machine;
3. ranks, ties and the counted rank of a missed key are decided on those
   float64 scores, and those are the scores reported.

The margin
----------
Any float32 dot product of length d, in any order, with or without fused
multiply-adds, is within ``gamma_d * sum_j |q_j v_j|`` of the exact value,
where ``gamma_d = d u / (1 - d u)`` and ``u = 2**-24``; by Cauchy-Schwarz that
sum is at most ``|q| |v|``. The float64 score is within the same expression
with ``u = 2**-53``. :func:`margins` takes twice the float32 bound plus the
float64 one (``(d + 2) * 2**-23 * |q| * max|v|``), so a float32 score and the
float64 score of the same pair never differ by more than the margin, and:

* a row whose float64 score reaches a threshold T has a float32 score of at
  least ``T - margin`` (it is a candidate against T);
* when a block's float32 scores put ``r`` rows at or above t, those rows'
  float64 scores are at least ``t - margin``, so any row of the top ``r``
  (by float64 score) has a float32 score of at least ``t - 2 x margin``.

Blocks
------
Scores are computed a block at a time so memory never grows with queries x
rows: :func:`query_blocks` cuts the queries so one block of float32 scores
holds at most :data:`BLOCK_SCORES` (128 MiB), or one query's row when the rows
alone need more. How the work is cut changes float32 bits only, never a
candidate's fate (the margin holds for any bits) nor a float64 score.
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
    scores = np.zeros(len(query_index), dtype=np.float64)
    order = None
    if len(query_index) > 1 and (np.diff(query_index) < 0).any():  # pairs of one query together
        order = np.argsort(query_index, kind="stable")
        query_index, row_index = query_index[order], row_index[order]
    starts = np.flatnonzero(np.diff(query_index, prepend=-1))
    for first, last in zip(starts.tolist(), [*starts[1:].tolist(), len(query_index)]):
        query = queries[query_index[first]]
        for begin in range(first, last, PAIRS_AT_ONCE):
            end = min(last, begin + PAIRS_AT_ONCE)
            scores[begin:end] = _dots(rows[row_index[begin:end]], query)
    if order is not None:
        scores[order] = scores.copy()
    return scores


def margins(queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each query, how far a float32 score of it against any of ``rows`` can be from its float64
    score.

    ``(d + 2) * 2**-23 * |q| * max|v|`` (module docs). The squared lengths
    are float32 sums, so they are taken larger by their own worst rounding,
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
    """Each row's float64 dot product with ``other`` (a row of its own, or one row for all): the
    exact products added in dimension order."""
    products = np.multiply(rows, other, dtype=np.float64)
    if products.shape[1] == 0:
        return np.zeros(len(products))
    np.add.accumulate(products, axis=1, out=products)
    return products[:, -1]
