"""Ranking rows by score: the one ordering every number in ptah is measured on.

Ordering (pinned in DESIGN.md, "Numbers")
-----------------------------------------
Rows are ordered by score descending; rows with equal scores are ordered by
key ascending in Python's ``str`` order (Unicode code points). The ordering is
total because keys are distinct, so every ranking is deterministic. Scores
are compared in the dtype they arrive in: two float32 scores that are equal
in float32 are a tie even if the float64 values they were rounded from
differed. A NaN score cannot be ordered and is refused with ``ValueError``.

Under this ordering, "rank r" is 1-based, the top k is ranks 1..k, and the
score of rank k is the *cutoff score*.

Selection
---------
:func:`top_k` never sorts all n rows. It finds the cutoff score with a
partial selection (``np.partition``, linear time), keeps the rows scoring
strictly above it (fewer than k of them) and sorts only those, then fills the
remaining places with the smallest keys among the rows *at* the cutoff score.
Ties at the cutoff are why this is more than ``argpartition`` alone: which of
several equally scored rows make the top k is decided by key, not by where
the partition happened to put them.

Ties in a report
----------------
An evaluation is only as stable as its ties. :func:`find_ties` says whether a
tie straddles the cutoff (a row outside the top k has the cutoff score, so the
top k's membership was decided by key order alone) and which expected keys
share their score with another row while scoring at or above the cutoff (their
rank, and perhaps their membership, was decided by key order).
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass
from typing import AbstractSet, Sequence

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
    scores = _checked_scores(scores, keys)
    _check_depth(k)
    n = len(scores)
    if n == 0:
        return []
    depth = min(k, n)
    return _select(scores, keys, _cutoff(scores, depth), depth)


def top_k_many(score_matrix: np.ndarray, keys: Sequence[str], ks: Sequence[int]) -> list[Ranked]:
    """:func:`top_k` for q queries at once, query i to depth ``ks[i]``.

    ``score_matrix`` has shape (q, n): row i holds query i's score for each of
    the n rows named by ``keys``. The cutoff scores of all queries come from a
    single batched partition; each query's result is exactly what
    :func:`top_k` returns for its row.
    """
    matrix = np.asarray(score_matrix)
    if matrix.ndim != 2:
        raise ValueError(f"score_matrix must be 2-D (queries, rows), got shape {matrix.shape}")
    if len(ks) != matrix.shape[0]:
        raise ValueError(f"got {len(ks)} depths for {matrix.shape[0]} queries; give one depth per query")
    for k in ks:
        _check_depth(k)
    q, n = matrix.shape
    if len(keys) != n:
        raise ValueError(f"got {len(keys)} keys for {n} score columns; give one key per row")
    _check_not_nan(matrix)
    if n == 0:
        return [[] for _ in range(q)]
    depths = [min(k, n) for k in ks]
    positions = sorted({n - depth for depth in depths})
    partitioned = np.partition(matrix, positions, axis=1) if q else matrix
    return [
        _select(matrix[i], keys, partitioned[i, n - depth], depth) for i, depth in enumerate(depths)
    ]


def rank_of(scores: np.ndarray, keys: Sequence[str], key: str) -> int:
    """The 1-based rank of ``key`` under the ranking order, without sorting.

    rank = 1 + the number of rows strictly better: a greater score, or an
    equal score and a smaller key. Raises ``KeyError`` when ``key`` is not
    among ``keys``. Used to say where a missed required key actually ranked.
    """
    scores = _checked_scores(scores, keys)
    try:
        index = keys.index(key)
    except ValueError:
        raise KeyError(key) from None
    score = scores[index]
    above = int(np.count_nonzero(scores > score))
    tied_before = sum(1 for j in np.flatnonzero(scores == score).tolist() if keys[j] < key)
    return 1 + above + tied_before


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


def find_ties(scores: np.ndarray, keys: Sequence[str], k: int, expected: AbstractSet[str]) -> Ties:
    """The ties that affect the top ``k`` of this ranking (see :class:`Ties`).

    ``expected`` is the set of keys a case names (required, relevant,
    forbidden); keys in it that are not among ``keys`` are ignored, since a
    row that does not exist ties with nothing. ``k < 1`` raises ``ValueError``.
    """
    scores = _checked_scores(scores, keys)
    _check_depth(k)
    n = len(scores)
    if n == 0:
        return Ties(cutoff_score=None, tied_outside=0, expected_tied=())
    depth = min(k, n)
    cutoff = _cutoff(scores, depth)
    # The top k holds every row above the cutoff and fills the rest of its
    # places from the rows at the cutoff; the others at the cutoff are outside.
    above = int(np.count_nonzero(scores > cutoff))
    at_cutoff = int(np.count_nonzero(scores == cutoff))
    tied_outside = at_cutoff - (depth - above)

    # A row at or above the cutoff can only tie with rows that are too, so
    # tie groups are counted among those few rows, not among all n.
    contenders = np.flatnonzero(scores >= cutoff).tolist()
    group_sizes = Counter(scores[contenders].tolist())
    tied = [
        keys[i] for i in contenders if keys[i] in expected and group_sizes[float(scores[i])] > 1
    ]
    return Ties(cutoff_score=float(cutoff), tied_outside=tied_outside, expected_tied=tuple(sorted(tied)))


def _cutoff(scores: np.ndarray, depth: int) -> np.generic:
    """The score at rank ``depth`` (the depth-th largest), by partial selection."""
    n = len(scores)
    return np.partition(scores, n - depth)[n - depth]


def _select(scores: np.ndarray, keys: Sequence[str], cutoff: np.generic, depth: int) -> Ranked:
    """The top ``depth`` rows, given that ``cutoff`` is the score at rank ``depth``."""
    above = np.flatnonzero(scores > cutoff).tolist()
    ranked = sorted(((keys[i], float(scores[i])) for i in above), key=_order)
    at_cutoff = np.flatnonzero(scores == cutoff).tolist()
    chosen = heapq.nsmallest(depth - len(above), (keys[i] for i in at_cutoff))
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
    _check_not_nan(scores)
    return scores


def _check_not_nan(scores: np.ndarray) -> None:
    if np.issubdtype(scores.dtype, np.floating) and np.isnan(scores).any():
        raise ValueError("scores contain NaN, which has no rank; check the vectors for NaN")


def _check_depth(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"depth k must be an integer >= 1, got {k!r}")
