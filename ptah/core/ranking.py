"""Ranking rows by score: the one ordering every number in ptah is measured on, and the scoring that
decides it.

Rows are ordered by score descending, equal scores by key ascending in Python's ``str`` order, so
every ranking is total and deterministic (docs/evaluating.md, "The numbers"). Scores compare in
their dtype (two float32 scores equal in float32 tie); a NaN is refused with ``ValueError``. Rank
r is 1-based, the top k is ranks 1..k, and the score of rank k is the *cutoff score*.

* :func:`top_k` -- partial selection (never a sort of all n rows), the places at the cutoff filled
  by the smallest keys scoring it;
* :func:`find_ties` -- whether a tie straddles the cutoff, and which expected keys at or above it
  share their score with another row (their place was decided by key order);
* :func:`rank_many` -- both for every query of a score matrix, and the rank of each asked key;
* scoring: float32 products (:func:`query_blocks`) select candidates within :func:`margins` of the
  deciding score, which is :func:`pair_scores`, a float64 value of the pair's bits alone
  (docs/design.md, "The same ranking on every machine").
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np

Ranked = list[tuple[str, float]]
"""A ranking: ``(key, score)`` pairs, best first. Scores are Python floats."""


def top_k(scores: np.ndarray, keys: Sequence[str], k: int) -> Ranked:
    """The best ``k`` rows as ``(key, score)`` pairs, best first.

    ``scores`` is a 1-D array of n real scores (float32 or float64) and
    ``keys[i]`` is the distinct key of row i. Ordering: score descending, then
    key ascending. ``k >= n`` returns all n rows. ``k < 1`` raises
    ``ValueError`` (callers validate depths; a depth of 0 has no meaning).
    Runs in O(n + m log m) where m <= k is the number of rows scoring above
    the cutoff, plus O(t log k) for the t rows tied at the cutoff.
    """
    [ranking] = rank_many(_checked_scores(scores, keys)[None], keys, [k])
    return ranking.ranked


@dataclass(frozen=True)
class Ties:
    """What ties did to one ranking's top k (see the module docs).

    ``cutoff_score`` is the score at rank ``min(k, n)`` (None when there are
    no rows). ``tied_outside`` counts rows outside the top k whose score
    equals the cutoff score; when it is non-zero the tie straddles the cutoff
    and key order alone decided which of those rows made the top k.
    ``expected_tied`` lists, sorted, the expected keys that share their score
    with at least one other row and score at or above the cutoff -- their
    rank (and, at the cutoff, their membership) was decided by key order.
    Expected keys scoring below the cutoff are not listed: ties there change
    no number measured at depth k.
    """

    cutoff_score: float | None
    tied_outside: int
    expected_tied: tuple[str, ...]

    @property
    def straddles_cutoff(self) -> bool:
        return self.tied_outside > 0

    @property
    def any(self) -> bool:
        """Whether there is anything to flag in a report."""
        return self.straddles_cutoff or bool(self.expected_tied)


NO_TIES = Ties(cutoff_score=None, tied_outside=0, expected_tied=())
"""The ties of a ranking of no rows."""


def find_ties(scores: np.ndarray, keys: Sequence[str], k: int, expected: AbstractSet[str]) -> Ties:
    """The ties that affect the top ``k`` of this ranking (see :class:`Ties`).

    ``expected`` is the set of keys a case names (required, relevant,
    forbidden); keys in it that are not among ``keys`` are ignored, since a
    row that does not exist ties with nothing. ``k < 1`` raises ``ValueError``.
    """
    [ranking] = rank_many(_checked_scores(scores, keys)[None], keys, [k], [expected])
    assert ranking.ties is not None  # expected keys were given
    return ranking.ties


@dataclass(frozen=True)
class QueryRanking:
    """One query ranked by :func:`rank_many`.

    ``ranked`` is its top k (as :func:`top_k`), ``ties`` its :class:`Ties` at
    depth k (as :func:`find_ties`; None when no expected keys were given) and
    ``ranks`` the 1-based rank of each asked key that is a row (1 + the rows
    with a greater score, or an equal one and a smaller key).
    """

    ranked: Ranked
    ties: Ties | None
    ranks: dict[str, int]


def key_columns(keys: Sequence[str]) -> dict[str, int]:
    """Each key's column in ``keys`` (the first, as ``list.index`` finds it)."""
    columns: dict[str, int] = {}
    for column, key in enumerate(keys):
        columns.setdefault(key, column)
    return columns


def rank_many(
    score_matrix: np.ndarray,
    keys: Sequence[str],
    ks: Sequence[int],
    expected: Sequence[AbstractSet[str]] | None = None,
    asked: Sequence[Iterable[str]] | None = None,
    columns: Mapping[str, int] | None = None,
    reach: Sequence[int] | None = None,
) -> list[QueryRanking]:
    """Rank q queries at once: query i's top ``ks[i]``, its ties and the ranks of the keys it asks
    about.

    ``reach[i]`` (at least ``ks[i]``; default ``ks[i]``) is how deep query i's
    ranking goes -- deeper than its k when a measure looks further -- while
    its ties are still those at depth ``ks[i]``.

    ``score_matrix`` (q, n) holds query i's score of each row named by
    ``keys``. ``expected[i]`` are the keys whose ties query i reports (see
    :func:`find_ties`); ``asked[i]`` the keys whose full rank it needs (a key
    that is not a row gets none). ``columns`` is :func:`key_columns` of
    ``keys``, given when the same keys are ranked block after block. Every
    value equals what :func:`top_k` and :func:`find_ties` return for the same
    row, and a key's rank its place in the row fully sorted.
    """
    matrix = np.asarray(score_matrix)
    if matrix.ndim != 2:
        raise ValueError(f"score_matrix must be 2-D (queries, rows), got shape {matrix.shape}")
    q, n = matrix.shape
    for name, values in (
        ("depths", ks),
        ("expected key sets", expected),
        ("asked key lists", asked),
        ("reaches", reach),
    ):
        if values is not None and len(values) != q:
            raise ValueError(f"got {len(values)} {name} for {q} queries; give one per query")
    for k in ks:
        _check_depth(k)
    if len(keys) != n:
        raise ValueError(f"got {len(keys)} keys for {n} score columns; give one key per row")
    _check_not_nan(matrix)
    if n == 0:
        return [QueryRanking([], NO_TIES if expected is not None else None, {}) for _ in range(q)]
    if columns is None:  # only expected and asked keys are looked up by column
        columns = key_columns(keys) if expected is not None or asked is not None else {}
    depths = [min(k, n) for k in ks]
    reaches = depths if reach is None else [min(max(r, k), n) for r, k in zip(reach, ks)]
    partitioned = (
        np.partition(matrix, sorted({n - d for d in (*depths, *reaches)}), axis=1) if q else matrix
    )
    result = []
    for i, depth in enumerate(depths):
        row, cutoff = matrix[i], partitioned[i, n - depth]
        above, at_cutoff = np.flatnonzero(row > cutoff), np.flatnonzero(row == cutoff)
        ties = (
            None
            if expected is None
            else _ties(row, columns, cutoff, depth, above, at_cutoff, expected[i])
        )
        if reaches[i] != depth:  # the ranking goes deeper than k: select it at its own cutoff
            depth, cutoff = reaches[i], partitioned[i, n - reaches[i]]
            above, at_cutoff = np.flatnonzero(row > cutoff), np.flatnonzero(row == cutoff)
        ranked = _ordered(row, keys, cutoff, depth, above, at_cutoff)
        ranks: dict[str, int] = {}
        if asked is not None:
            places = {key: place for place, (key, _) in enumerate(ranked, start=1)}
            for key in asked[i]:
                if key in columns:
                    ranks[key] = places.get(key) or _rank_at(row, keys, columns[key])
        result.append(QueryRanking(ranked, ties, ranks))
    return result


def _ties(
    row: np.ndarray,
    columns: Mapping[str, int],
    cutoff: np.generic,
    depth: int,
    above: np.ndarray,
    at_cutoff: np.ndarray,
    expected: AbstractSet[str],
) -> Ties:
    """:func:`find_ties` of ``row``, given its cutoff and the rows above and at it."""
    scores = {key: row[columns[key]] for key in expected if key in columns}
    return ties_of(
        float(cutoff),
        depth,
        len(above),
        len(at_cutoff),
        scores,
        lambda score: (
            len(at_cutoff) if score == cutoff else int(np.count_nonzero(row[above] == score))
        ),
    )


def ties_of(
    cutoff: float,
    depth: int,
    above: int,
    at_cutoff: int,
    scores: Mapping[str, float],
    group: Callable[[float], int],
) -> Ties:
    """The :class:`Ties` at depth ``depth`` of a ranking with ``above`` rows above the ``cutoff``
    score and ``at_cutoff`` at it, given the expected keys' ``scores`` and how many rows share a
    score at or above the cutoff (``group``)."""
    tied = sorted(key for key, score in scores.items() if score >= cutoff and group(score) > 1)
    return Ties(
        cutoff_score=cutoff, tied_outside=at_cutoff - (depth - above), expected_tied=tuple(tied)
    )


def _rank_at(scores: np.ndarray, keys: Sequence[str], index: int) -> int:
    """The 1-based rank of row ``index``: 1 + the rows with a greater score, or an equal one and a
    smaller key."""
    score, key = scores[index], keys[index]
    above = int(np.count_nonzero(scores > score))
    tied_before = sum(1 for j in np.flatnonzero(scores == score).tolist() if keys[j] < key)
    return 1 + above + tied_before


def _ordered(
    scores: np.ndarray,
    keys: Sequence[str],
    cutoff: np.generic,
    depth: int,
    above: np.ndarray,
    at_cutoff: np.ndarray,
) -> Ranked:
    """The top ``depth`` rows from the rows ``above`` the cutoff score and those ``at_cutoff``."""
    ranked = sorted(((keys[i], float(scores[i])) for i in above.tolist()), key=_order)
    chosen = heapq.nsmallest(depth - len(above), (keys[i] for i in at_cutoff.tolist()))
    ranked.extend((key, float(cutoff)) for key in chosen)
    return ranked


def _order(entry: tuple[str, float]) -> tuple[float, str]:
    key, score = entry
    return (-score, key)


def _checked_scores(scores: np.ndarray, keys: Sequence[str]) -> np.ndarray:
    scores = np.asarray(scores)
    if scores.ndim != 1:
        raise ValueError(f"scores must be 1-D, got shape {scores.shape}")
    if len(keys) != len(scores):
        raise ValueError(f"got {len(keys)} keys for {len(scores)} scores; give one key per row")
    return scores


def _check_not_nan(scores: np.ndarray) -> None:
    # the minimum is NaN when any score is: one pass, no mask
    if np.issubdtype(scores.dtype, np.floating) and scores.size and np.isnan(scores.min()):
        raise ValueError("scores contain NaN, which has no rank; check the vectors for NaN")


def _check_depth(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"depth k must be an integer >= 1, got {k!r}")


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
    score (:func:`pair_scores`).

    A float32 dot product of length d, summed in any order (recursive,
    pairwise, blocked, with or without fused multiply-adds: whatever the BLAS
    kernel does), is within ``gamma_d * sum |q_i v_i|`` of the exact value,
    ``gamma_d = d u / (1 - d u)`` with the unit roundoff ``u = 2**-24``
    (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., section
    3.1, (3.4)-(3.5): each product goes through at most d roundings, one
    multiplication and at most d - 1 additions, in any summation tree); and
    ``sum |q_i v_i| <= |q| |v|`` (Cauchy-Schwarz). The float64 score's products
    are exact and its sum is within the same bound with ``u = 2**-53``. So
    ``(gamma_d(2**-24) + gamma_d(2**-53)) * |q| * max|v|``, about
    ``d * 2**-24 * |q| * max|v|``, bounds the distance between the two, plus
    ``d * 2**-149`` for products that fall below float32's normal range
    (gradual underflow: each such product is off by at most 2**-150, and an
    addition whose result is subnormal is exact).

    So a row whose float64 score reaches T has a float32 score of at least
    ``T - margin``, and any row of the top r (by float64 score) of a block
    whose float32 scores put r rows at or above t has a float32 score of at
    least ``t - 2 x margin``. The squared lengths are float32 sums, so they
    are taken larger by ``d * 2**-149`` (squares that underflow) and then by
    ``(1 + (d + 2) * 2**-23)``, more than their own worst rounding
    ``1 / (1 - gamma_d)`` and the float64 roundings of the margin itself; an
    empty block of rows has margin 0. A margin that is not finite means some
    vector is not (or its squared length overflows float32).
    """
    dimension = queries.shape[1]
    if len(rows) == 0 or dimension == 0:
        return np.zeros(len(queries), dtype=np.float64)
    slack, underflow = 1 + (dimension + 2) * 2.0**-23, dimension * 2.0**-149
    largest = np.sqrt((float(np.max(np.einsum("ij,ij->i", rows, rows))) + underflow) * slack)
    squares = np.einsum("ij,ij->i", queries, queries).astype(np.float64)
    return _gamma(dimension) * slack * np.sqrt((squares + underflow) * slack) * largest + underflow


def _gamma(dimension: int) -> float:
    """``gamma_d(2**-24) + gamma_d(2**-53)``, the relative bound of :func:`margins` (infinite
    from d = 2**24 on, where the bound says nothing)."""
    float32, float64 = dimension * 2.0**-24, dimension * 2.0**-53
    return float32 / (1 - float32) + float64 / (1 - float64) if float32 < 1 else np.inf


def finite_scores(margin: np.ndarray, dimension: int) -> bool:
    """Whether no float32 score within ``margin`` (:func:`margins`) can be NaN or infinite: every
    vector is finite and ``|q| * max|v|`` is at most 2**126, so no product or partial sum of a
    float32 dot product (at most ``(1 + gamma_d) * |q| * max|v|``) reaches float32's largest
    value, 2**128 less a step."""
    return bool(np.isfinite(margin).all()) and (
        not len(margin) or float(margin.max()) <= _gamma(dimension) * 2.0**126
    )


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
    the exact products added in dimension order.

    Few rows: ``np.add.accumulate`` along each (every step adds the next
    product to the sum so far, one row after another). Many: the same
    additions a dimension at a time across ``_ACROSS`` rows, so the CPU adds
    many independent sums at once instead of waiting on each one's last
    addition (the same operations in the same order: the same bits).
    """
    products = np.multiply(rows, other, dtype=np.float64)
    count, dimension = products.shape
    if dimension == 0:
        return np.zeros(count)
    if count < _FEW:
        np.add.accumulate(products, axis=1, out=products)
        return products[:, -1]
    sums = products[:, 0].copy()
    for first in range(0, count, _ACROSS):
        part, block = sums[first : first + _ACROSS], products[first : first + _ACROSS]
        for column in range(1, dimension):
            np.add(part, block[:, column], out=part)
    return sums


_FEW = 1 << 8  # rows below which each row's sum is accumulated along it
_ACROSS = 1 << 10  # rows summed a dimension at a time together (their products stay in cache)
