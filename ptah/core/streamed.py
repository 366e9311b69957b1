"""Ranking rows that arrive in blocks: what :func:`ptah.core.ranking.rank_many` gives, without holding every row.

A generation of ten million rows is 2.4 GiB of float32 vectors at 64
dimensions and 15 GiB at 384. Exact search need not hold them: the rows are
read in blocks from one snapshot, each block is scored against the queries,
and :class:`StreamedRanking` keeps, for each query, only what its ranking
needs. When every block has been added, :meth:`StreamedRanking.rankings`
returns for each query exactly the :class:`~ptah.core.ranking.QueryRanking`
that :func:`rank_many` returns for the whole score matrix: the same top
``reach`` (score descending, ties by key), the same :class:`Ties` at depth k,
the same ranks of the asked keys. ``tests/core/test_streamed.py`` checks that
on random blocks of scores full of ties.

What a query keeps
------------------
Its *threshold* T is the ``reach``-th best score seen so far (it only rises).
Every row scoring above T is kept (fewer than ``reach`` of them); of the rows
scoring exactly T it keeps a count and the ``reach`` smallest keys -- all the
top ``reach`` can take from them. A row below T can no longer enter the
ranking and is dropped. So a query holds at most about ``2 x reach`` rows
whatever the block count.

Ties at depth k need the number of rows at the k-th score: that score is
either above T (every such row is kept) or T itself (counted). An expected
key's tie needs its own score, so the score of every *watched* key (the
expected and asked keys, and any others a caller names) is recorded as its
row goes by.

Ranks of missed keys: a second pass over the first blocks
---------------------------------------------------------
The rank of an asked key that is not in the ranking is one plus the rows
scoring above it, plus the rows scoring the same with a smaller key. From
the block its row is in onwards, those rows are counted as they go by; the
rows of the blocks before it were dropped before its score was known. So
when some asked key is missed, :meth:`recount` says how many leading blocks
must be added again (``count`` them, in the same order, with the same
scores: the same snapshot gives the same bits) -- on average half a pass,
and none when nothing is missed.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import AbstractSet, Iterable, Sequence

import numpy as np

from ptah.core.ranking import QueryRanking, Ties, _check_depth, _check_not_nan


@dataclass
class _Query:
    """One query's running state (see the module docs)."""

    k: int
    reach: int
    expected: AbstractSet[str]
    asked: tuple[str, ...]
    watched: frozenset[str]
    threshold: np.generic | None = None  # None until reach rows have been seen: then every row is kept
    scores: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.float32))  # kept rows: above or at T
    keys: list[str] = field(default_factory=list)
    at_threshold: int = 0  # every row seen scoring exactly T, kept or not
    rows: int = 0  # rows seen
    seen: dict[str, np.generic] = field(default_factory=dict)  # watched key -> its score
    found_in: dict[str, int] = field(default_factory=dict)  # asked key -> the block its row was in
    better: dict[str, int] = field(default_factory=dict)  # asked key -> rows counted ranking above it so far


class StreamedRanking:
    """Rank q queries over rows added a block at a time; the same values as :func:`rank_many` on all of them.

    ``ks``, ``expected``, ``asked`` and ``reach`` mean what they mean to
    :func:`rank_many`; ``watched[i]`` are further keys whose scores query i
    wants to know (:meth:`score_of`). Add every block with :meth:`add` (its
    scores for a range of queries at a time, the blocks in one order), then,
    when :meth:`recount` is non-zero, :meth:`count` that many leading blocks
    again; then :meth:`rankings`.
    """

    def __init__(self, ks: Sequence[int], expected: Sequence[AbstractSet[str]] | None = None,
                 asked: Sequence[Iterable[str]] | None = None, reach: Sequence[int] | None = None,
                 watched: Sequence[Iterable[str]] | None = None):
        q = len(ks)
        for name, values in (("expected key sets", expected), ("asked key lists", asked), ("reaches", reach),
                             ("watched key lists", watched)):
            if values is not None and len(values) != q:
                raise ValueError(f"got {len(values)} {name} for {q} queries; give one per query")
        for k in ks:
            _check_depth(k)
        self._expected = expected is not None
        self._queries = []
        for i, k in enumerate(ks):
            wanted = frozenset(expected[i]) if expected is not None else frozenset()
            asking = tuple(dict.fromkeys(asked[i])) if asked is not None else ()
            extra = frozenset(watched[i]) if watched is not None else frozenset()
            self._queries.append(_Query(k=k, reach=max(k, reach[i] if reach is not None else k), expected=wanted,
                                        asked=asking, watched=wanted | frozenset(asking) | extra))
        self._watched = frozenset().union(*(query.watched for query in self._queries))
        self.rows = 0  # rows added so far (counted once per block, on its first range of queries)
        self._block = -1
        self._counting = -1

    # --- the first pass --------------------------------------------------------------

    def add(self, start: int, stop: int, scores: np.ndarray, keys: Sequence[str], *, new_block: bool) -> None:
        """Add one block's scores for queries ``start..stop`` (shape ``(stop - start, len(keys))``).

        ``new_block`` is true on a block's first range of queries: the ranges
        of one block follow each other, and every query gets every block.
        """
        scores = _checked(scores, stop - start, keys)
        if new_block:
            self._block += 1
            self.rows += len(keys)
        positions = self._positions(keys)
        thresholds = np.array([_floor(query, row, len(keys)) for query, row in zip(self._queries[start:stop], scores)],
                              dtype=np.float64)
        kept = scores >= thresholds.astype(scores.dtype)[:, None]
        for i, query in enumerate(self._queries[start:stop]):
            row = scores[i]
            query.rows += len(keys)
            for key, column in positions.items():
                if key in query.watched:
                    query.seen[key] = row[column]
                    if key in query.asked:
                        query.found_in[key] = self._block
                        query.better[key] = 0
            self._count_better(query, row, keys)
            columns = np.flatnonzero(kept[i])
            if len(columns):
                _merge(query, row[columns], [keys[c] for c in columns.tolist()])

    def _positions(self, keys: Sequence[str]) -> dict[str, int]:
        """Each watched key of this block with its column (blocks are large; watched keys few)."""
        present = self._watched.intersection(keys)
        return {key: column for column, key in enumerate(keys) if key in present} if present else {}

    def _count_better(self, query: _Query, row: np.ndarray, keys: Sequence[str]) -> None:
        """Count this block's rows ranking above each asked key whose score is known (module docs)."""
        for key in query.asked:
            if key in query.better:
                query.better[key] += _better(row, keys, query.seen[key], key)

    # --- the second pass ----------------------------------------------------------------

    def recount(self) -> int:
        """How many leading blocks :meth:`count` must be given again (0: none)."""
        needed = [query.found_in[key] for query in self._queries for key in self._missed(query)]
        return max(needed, default=0)

    def count(self, start: int, stop: int, scores: np.ndarray, keys: Sequence[str], *, new_block: bool) -> None:
        """Give again one of the first :meth:`recount` blocks, as :meth:`add` was given it."""
        scores = _checked(scores, stop - start, keys)
        if new_block:
            self._counting += 1
        for i, query in enumerate(self._queries[start:stop]):
            for key in self._missed(query):
                if self._counting < query.found_in[key]:  # from its own block on, counted by the first pass
                    query.better[key] += _better(scores[i], keys, query.seen[key], key)

    def _missed(self, query: _Query) -> list[str]:
        ranked = {key for key, _ in _ranking(query, self.rows)}
        return [key for key in query.asked if key in query.found_in and key not in ranked]

    # --- the result -----------------------------------------------------------------------

    def score_of(self, query: int, key: str) -> float | None:
        """The score of a watched ``key`` for query ``query`` (None when its row never came)."""
        score = self._queries[query].seen.get(key)
        return None if score is None else float(score)

    def rankings(self) -> list[QueryRanking]:
        """Each query's ranking: what :func:`rank_many` returns for all the rows added."""
        n = self.rows
        result = []
        for query in self._queries:
            if n == 0:
                none = Ties(cutoff_score=None, tied_outside=0, expected_tied=())
                result.append(QueryRanking([], none if self._expected else None, {}))
                continue
            ranked = _ranking(query, n)
            ties = _ties(query, ranked, n) if self._expected else None
            places = {key: place for place, (key, _) in enumerate(ranked, start=1)}
            ranks = {}
            for key in query.asked:
                if key in query.found_in:
                    ranks[key] = places.get(key) or 1 + query.better[key]
            result.append(QueryRanking(ranked, ties, ranks))
        return result


def _floor(query: _Query, row: np.ndarray, n: int):
    """The lowest score of ``row`` that can still enter the query's top ``reach``: its threshold once it has one;
    before that, the block's own ``reach``-th best score (the threshold can only be higher), when it has that many."""
    if query.threshold is not None:
        return query.threshold
    if n < query.reach:
        return -np.inf
    return np.partition(row, n - query.reach)[n - query.reach]


def _checked(scores: np.ndarray, queries: int, keys: Sequence[str]) -> np.ndarray:
    scores = np.asarray(scores)
    if scores.ndim != 2 or scores.shape != (queries, len(keys)):
        raise ValueError(f"scores must have shape ({queries}, {len(keys)}), got {scores.shape}")
    _check_not_nan(scores)
    return scores


def _better(row: np.ndarray, keys: Sequence[str], score: np.generic, key: str) -> int:
    """Rows of ``row`` ranking above a row scoring ``score`` with ``key``: a greater score, or the same and a smaller key."""
    tied = np.flatnonzero(row == score).tolist()
    return int(np.count_nonzero(row > score)) + sum(1 for j in tied if keys[j] < key)


def _merge(query: _Query, scores: np.ndarray, keys: list[str]) -> None:
    """Fold a block's candidate rows (those at or above the threshold) into the query's kept rows."""
    merged = np.concatenate([query.scores, scores]) if query.keys else scores.copy()
    merged_keys = query.keys + keys
    old = query.threshold
    if old is None and query.rows < query.reach:  # not yet reach rows: keep them all
        query.scores, query.keys = merged, merged_keys
        return
    above_old = merged > old if old is not None else np.ones(len(merged), dtype=bool)
    if int(np.count_nonzero(above_old)) >= query.reach:  # the threshold rises: every row at the new one is kept
        candidates = merged[above_old]
        threshold = np.partition(candidates, len(candidates) - query.reach)[len(candidates) - query.reach]
        at_threshold = int(np.count_nonzero(merged == threshold))
    else:  # it stays: add this block's rows at it to the count
        threshold = old
        at_threshold = query.at_threshold + int(np.count_nonzero(scores == old))
    above = np.flatnonzero(merged > threshold)
    at = np.flatnonzero(merged == threshold).tolist()
    chosen = set(heapq.nsmallest(query.reach - len(above), at, key=lambda j: merged_keys[j]))
    keep = np.sort(np.concatenate([above, np.array(sorted(chosen), dtype=np.int64)])).astype(np.int64)
    query.scores = merged[keep]
    query.keys = [merged_keys[j] for j in keep.tolist()]
    query.threshold, query.at_threshold = threshold, at_threshold


def _count(scores: np.ndarray, value) -> int:
    return int(np.count_nonzero(scores == value))


def _ordered(query: _Query) -> list[tuple[str, float]]:
    """The kept rows, best first (score descending, key ascending)."""
    return sorted(((key, float(score)) for key, score in zip(query.keys, query.scores.tolist())),
                  key=lambda entry: (-entry[1], entry[0]))


def _ranking(query: _Query, n: int) -> list[tuple[str, float]]:
    return _ordered(query)[: min(query.reach, n)]


def _ties(query: _Query, ranked: list[tuple[str, float]], n: int) -> Ties:
    """:func:`ptah.core.ranking.find_ties` at depth k, from the kept rows and the count at the threshold."""
    depth = min(query.k, n)
    cutoff = query.scores.dtype.type(ranked[depth - 1][1])
    threshold = query.threshold
    above = int(np.count_nonzero(query.scores > cutoff))
    at_cutoff = query.at_threshold if threshold is not None and cutoff == threshold else _count(query.scores, cutoff)
    tied = []
    for key in query.expected:
        score = query.seen.get(key)
        if score is None or score < cutoff:
            continue
        group = query.at_threshold if threshold is not None and score == threshold else _count(query.scores, score)
        if group > 1:
            tied.append(key)
    return Ties(cutoff_score=float(cutoff), tied_outside=at_cutoff - (depth - above), expected_tied=tuple(sorted(tied)))
