"""Exact search: each query's ranking of every row, the rows added a block at a time.

:class:`ExactRanking` is the one scoring plan of exact search, for a whole matrix and for blocks
streamed from a store alike. For each query it gives what :func:`ptah.core.ranking.rank_many` gives
on the float64 :func:`ptah.core.ranking.pair_scores` of every row (the same top ``reach``, ties at
depth k and ranks of the asked keys) while scoring in float64 only the candidates float32 products
choose; ``tests/core/test_exact.py`` holds it to ``rank_many``. How a query keeps about ``reach``
rows, and why a missed key's rank takes a second pass: docs/design.md ("Exact search").
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

import numpy as np

from ptah.core.ranking import (
    BLOCK_SCORES,
    NO_TIES,
    PAIRS_AT_ONCE,
    QueryRanking,
    Ties,
    _check_depth,
    _check_not_nan,
    _order,
    finite_scores,
    margins,
    pair_scores,
    query_blocks,
    ties_of,
)

_PARTITIONED = 32  # queries whose float32 scores are partitioned, or masked, at once
_T = TypeVar("_T")
_SAMPLED = 1 << 13  # columns whose reach-th largest score bounds a row's from below (_reach_th)


@dataclass
class _Query:
    """One query's running state; every score float64. Its threshold T is the ``reach``-th best
    score seen so far: it keeps every row above T and, of the rows at T, their count and the
    ``reach`` smallest keys."""

    k: int
    reach: int
    expected: AbstractSet[str]
    asked: tuple[str, ...]
    watched: frozenset[str]
    threshold: float | None = None  # None until reach rows have been seen: then every row is kept
    scores: np.ndarray = field(
        default_factory=lambda: np.empty(0, dtype=np.float64)
    )  # kept rows: above or at T
    keys: list[str] = field(default_factory=list)
    at_threshold: int = 0  # every row seen scoring exactly T, kept or not
    rows: int = 0  # rows seen
    seen: dict[str, float] = field(default_factory=dict)  # watched key -> its score
    found_in: dict[str, int] = field(default_factory=dict)  # asked key -> the block its row was in
    better: dict[str, int] = field(
        default_factory=dict
    )  # asked key -> rows counted ranking above it so far
    missed: frozenset[str] = (
        frozenset()
    )  # asked keys outside the ranking, once the first pass is over
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # asked key -> its row's vector
    known: dict[str, float] = field(
        default_factory=dict
    )  # asked key -> its score, for keys whose vector was given: counted from the first block


@dataclass(frozen=True)
class _Candidates:
    """A block's candidates for a range of queries: ``floor[i]``, the float64 score below which the
    i-th query's candidates were not taken (its float32 ones at least ``floor`` rounded down), and
    each candidate's query (``number``, from 0, ascending), ``column`` and float64 score."""

    floor: np.ndarray
    number: np.ndarray
    column: np.ndarray
    scores: np.ndarray


class ExactRanking:
    """Rank q queries over rows added a block at a time.

    ``queries`` (q, d) are float32 query vectors; ``ks``, ``expected``,
    ``asked`` and ``reach`` mean what they mean to :func:`rank_many`;
    ``watched[i]`` are further keys whose scores query i wants to know
    (:meth:`score_of`). ``asked_vectors`` maps asked keys to their rows'
    vectors when they are known before their blocks come: those keys' ranks
    are counted in the one pass (a key whose row then brings another vector
    is refused). Add every block of rows with :meth:`add`; then, when
    :meth:`recount` is non-zero, :meth:`count` that many leading blocks again,
    in the same order; then :meth:`rankings`.
    """

    def __init__(
        self,
        queries: np.ndarray,
        ks: Sequence[int],
        expected: Sequence[AbstractSet[str]] | None = None,
        asked: Sequence[Iterable[str]] | None = None,
        reach: Sequence[int] | None = None,
        watched: Sequence[Iterable[str]] | None = None,
        *,
        asked_vectors: Mapping[str, np.ndarray] | None = None,
    ):
        queries = np.asarray(queries)
        if queries.ndim != 2 or queries.dtype != np.float32:
            raise ValueError(
                f"queries must be a 2-D float32 array, got {queries.dtype} of shape {queries.shape}"
            )
        q = len(ks)
        for name, values in (
            ("query vectors", queries),
            ("expected key sets", expected),
            ("asked key lists", asked),
            ("reaches", reach),
            ("watched key lists", watched),
        ):
            if values is not None and len(values) != q:
                raise ValueError(f"got {len(values)} {name} for {q} queries; give one per query")
        for k in ks:
            _check_depth(k)
        self._vectors = np.ascontiguousarray(queries)
        # the scores one block of queries may hold at once; a test sets it to exercise the blocks
        self.budget = BLOCK_SCORES
        # parts of a block of queries whose candidates and counts are settled at once, on threads
        # of their own (the cores BLAS used for the product); a test sets it
        self.threads = usable_cpus()
        self._expected = expected is not None
        self._queries = []
        for i, k in enumerate(ks):
            wanted = frozenset(expected[i]) if expected is not None else frozenset()
            asking = tuple(dict.fromkeys(asked[i])) if asked is not None else ()
            extra = frozenset(watched[i]) if watched is not None else frozenset()
            self._queries.append(
                _Query(
                    k=k,
                    reach=max(k, reach[i] if reach is not None else k),
                    expected=wanted,
                    asked=asking,
                    watched=wanted | frozenset(asking) | extra,
                )
            )
        self._watchers: dict[str, list[int]] = {}  # watched key -> the queries watching it
        for number, query in enumerate(self._queries):
            for key in query.watched:
                self._watchers.setdefault(key, []).append(number)
        self._watched = frozenset(self._watchers)
        if asked_vectors:
            self._know(asked_vectors)
        self.rows = 0  # rows added so far
        self._block = -1
        self._counting = -1

    def _know(self, asked_vectors: Mapping[str, np.ndarray]) -> None:
        """Score each query's asked keys whose vectors are given: they are counted from the first
        block on."""
        given = {key: np.asarray(vector) for key, vector in asked_vectors.items()}
        dimension = self._vectors.shape[1]
        for key, vector in given.items():
            if vector.dtype != np.float32 or vector.shape != (dimension,):
                raise ValueError(
                    f"the vector given for asked key {key!r} must be float32 of shape "
                    f"({dimension},), got {vector.dtype} of shape {vector.shape}"
                )
        pairs = [
            (number, key)
            for number, query in enumerate(self._queries)
            for key in query.asked
            if key in given
        ]
        if not pairs:
            return
        columns = {key: column for column, key in enumerate(dict.fromkeys(key for _, key in pairs))}
        rows = np.stack([given[key] for key in columns])
        scores = pair_scores(
            self._vectors,
            rows,
            np.array([number for number, _ in pairs]),
            np.array([columns[key] for _, key in pairs]),
        )
        for (number, key), score in zip(pairs, scores.tolist()):
            query = self._queries[number]
            query.known[key] = score
            query.better[key] = 0
            query.vectors[key] = rows[columns[key]]

    # --- the first pass --------------------------------------------------------------

    def add(self, keys: Sequence[str], rows: np.ndarray) -> None:
        """Add a block of rows: ``rows[j]`` (float32, the queries' dimension) is the vector of
        ``keys[j]``."""
        rows = self._checked(keys, rows)
        self._block += 1
        self.rows += len(keys)
        margin = margins(self._vectors, rows)
        finite = finite_scores(margin, rows.shape[1])  # no score NaN: no pass looking for one
        positions = self._positions(keys)
        for start, stop in query_blocks(len(self._queries), len(keys), self.budget):
            approximate = self._vectors[start:stop] @ rows.T
            if not finite:
                _check_not_nan(approximate)
            self._watch(start, stop, rows, positions)
            parts = _parts(start, stop, self.threads)
            settled = _at_once(
                [
                    partial(self._settle, first, last, approximate[first - start : last - start])
                    for first, last in parts
                ],
                margin,
                rows,
                keys,
            )
            for (first, last), chosen in zip(parts, settled):
                self._fold(first, last, keys, chosen)
            del approximate, settled  # before the next product: one set of float32 scores at a time

    def _settle(
        self,
        start: int,
        stop: int,
        approximate: np.ndarray,
        margin: np.ndarray,
        rows: np.ndarray,
        keys: Sequence[str],
    ) -> _Candidates:
        """The candidates of queries ``start..stop`` (their float32 scores ``approximate``) and
        the rows above their asked keys, counted: all a query's work on a block but the fold,
        touching no other query's state, so parts of a block of queries run at once."""
        chosen = self._candidates(start, stop, approximate, margin, rows)
        self._count_better(
            range(start, stop),
            approximate,
            margin,
            rows,
            keys,
            lambda query, key: key in query.better,
            chosen,
        )
        return chosen

    def _positions(self, keys: Sequence[str]) -> dict[str, int]:
        """Each watched key of this block with its column (blocks are large; watched keys few)."""
        present = self._watched.intersection(keys)
        return {key: column for column, key in enumerate(keys) if key in present} if present else {}

    def _watch(self, start: int, stop: int, rows: np.ndarray, positions: dict[str, int]) -> None:
        """Score the watched keys of this block for queries ``start..stop``."""
        pairs = [
            (number, key)
            for key in positions
            for number in self._watchers[key]
            if start <= number < stop
        ]
        if not pairs:
            return
        scores = pair_scores(
            self._vectors,
            rows,
            np.array([number for number, _ in pairs]),
            np.array([positions[key] for _, key in pairs]),
        )
        for (number, key), score in zip(pairs, scores.tolist()):
            query = self._queries[number]
            query.seen[key] = score
            if key in query.known:  # counted from the first block: its row must be the one given
                if not np.array_equal(rows[positions[key]], query.vectors[key]):
                    raise ValueError(
                        f"asked key {key!r} came with another vector than the one given for it"
                    )
                query.found_in[key] = self._block
            elif key in query.asked:
                query.found_in[key] = self._block
                query.better[key] = 0
                query.vectors[key] = rows[positions[key]].copy()

    def _candidates(
        self, start: int, stop: int, approximate: np.ndarray, margin: np.ndarray, rows: np.ndarray
    ) -> _Candidates:
        """This block's candidates for queries ``start..stop``, scored in float64."""
        n = len(rows)
        queries = self._queries[start:stop]
        # a row reaching T scores at least T - margin in float32
        thresholds = np.array(
            [np.nan if query.threshold is None else query.threshold for query in queries]
        )
        floor = thresholds - margin[start:stop]
        unset = np.flatnonzero(np.isnan(thresholds))
        if len(unset):
            reaches = np.array([queries[i].reach for i in unset.tolist()])
            floor[unset[reaches > n]] = -np.inf
            # sorted(set()), not np.unique: that one imports numpy.ma, a hundredth of a second
            for reach in sorted(set(reaches[reaches <= n].tolist())):
                # the block's own reach-th score: the threshold can only be higher
                for first in range(0, len(unset), _PARTITIONED):
                    part = unset[first : first + _PARTITIONED]
                    chosen = part[reaches[first : first + _PARTITIONED] == reach]
                    own = _reach_th(_rows_of(approximate, chosen), reach)
                    floor[chosen] = own.astype(np.float64) - 2 * margin[start + chosen]
        number, column = _columns(_marks(approximate, _rounded(floor, -np.inf), strict=False))
        return _Candidates(
            floor, number, column, pair_scores(self._vectors, rows, number + start, column)
        )

    def _fold(self, start: int, stop: int, keys: Sequence[str], chosen: _Candidates) -> None:
        """Fold this block's candidates for queries ``start..stop`` into the rankings."""
        bounds = np.searchsorted(chosen.number, np.arange(stop - start + 1)).tolist()
        for i, query in enumerate(self._queries[start:stop]):
            query.rows += len(keys)
            first, last = bounds[i], bounds[i + 1]
            if last > first:
                columns = chosen.column[first:last].tolist()
                _merge(query, chosen.scores[first:last], [keys[c] for c in columns])

    def _count_better(
        self,
        span: range,
        approximate: np.ndarray,
        margin: np.ndarray,
        rows: np.ndarray,
        keys: Sequence[str],
        counts,
        chosen: _Candidates | None = None,
    ) -> None:
        """Add this block's rows ranking above each asked key that ``counts(query, key)`` names:
        those scoring above it, and those scoring the same with a smaller key.

        When the key's score less the margin is at least the floor of the
        block's ``chosen`` candidates, every row at or above it is one of them,
        scored already. Otherwise a row whose float32 score is above the key's
        score plus the margin ranks above it, and the rows within the margin
        (few, unless the scores are near-ties) are decided on their float64
        scores, or, when equal to the key's own vector, by key alone.
        """
        start, stop = span.start, span.stop  # the block's queries
        asked = [
            (number, key)
            for number in range(start, stop)
            for key in self._queries[number].asked
            if counts(self._queries[number], key)
        ]
        if not asked:
            return
        numbers = np.array([number for number, _ in asked])
        scores = np.array([self._score(number, key) for number, key in asked])
        over = np.zeros(len(asked), dtype=np.int64)
        scanned = np.ones(len(asked), dtype=bool)
        if chosen is not None:
            scanned = scores - margin[numbers] < chosen.floor[numbers - start]
            owner = np.full(stop - start, -1)
            for pairs in _one_per_query(numbers):
                pairs = pairs[~scanned[pairs]]
                if not len(pairs):
                    continue
                owner[:] = -1
                owner[numbers[pairs] - start] = pairs
                pair = owner[chosen.number]
                mine = pair >= 0
                pair, column, values = pair[mine], chosen.column[mine], chosen.scores[mine]
                over += np.bincount(pair[values > scores[pair]], minlength=len(asked))
                same = values == scores[pair]
                _smaller(keys, asked, pair[same], column[same], over)
        if scanned.any():
            over += self._scan(start, approximate, margin, rows, keys, asked, scanned)
        for (number, key), count in zip(asked, over.tolist()):
            self._queries[number].better[key] += count

    def _scan(
        self,
        start: int,
        approximate: np.ndarray,
        margin: np.ndarray,
        rows: np.ndarray,
        keys: Sequence[str],
        asked: list[tuple[int, str]],
        scanned: np.ndarray,
    ) -> np.ndarray:
        """:meth:`_count_better` over the whole block (its first query ``start``) for the
        ``scanned`` pairs of ``asked``: the rows ranking above each, a few queries at a time (their
        rows within the margin decided before the next few are looked at). The rows above the
        margin are counted from packed bits of the float32 scores; those within it by a float64
        score summed in any order, and by :func:`pair_scores` only when that is too close to
        decide."""
        over = np.zeros(len(asked), dtype=np.int64)
        numbers = np.array([number for number, _ in asked])
        scores = np.array([self._score(number, key) for number, key in asked])
        lows = _rounded(scores - margin[numbers], -np.inf)
        highs = _rounded(scores + margin[numbers], np.inf)
        # two float64 sums of the same exact products, each within gamma_d(2**-53) |q| max|v| of
        # the exact value, differ by at most 2 d 2**-53 (1 + d 2**-53) |q| max|v|; the margin is at
        # least d 2**-24 |q| max|v|, so 2**-27 of it, 4 d 2**-53 |q| max|v|, covers that and the
        # rounding of the key's score plus or less it (within a margin of the float32 score of a
        # row looked at here, the key's score is at most |q| max|v| (1 + 2 d 2**-24): rounded by
        # at most 2**-53 of about that)
        close = margin[numbers] * 2.0**-27
        own = np.stack([self._queries[number].vectors[key] for number, key in asked])
        buffer = _buffer(min(len(asked), _PARTITIONED), len(rows))
        for every in _one_per_query(numbers):
            every = every[scanned[every]]
            for first in range(0, len(every), _PARTITIONED):  # a few queries' masks at a time
                chosen = every[first : first + _PARTITIONED]
                block = _rows_of(approximate, numbers[chosen] - start)
                above, within = _band(block, lows[chosen], highs[chosen], buffer)
                over[chosen] += above
                which, column = _columns(within)
                pair = chosen[which]
                # a float64 score summed in any order is within close of pair_scores': only the
                # rows that close to the key's score need its order
                rough = np.concatenate(
                    [
                        np.einsum(
                            "ij,ij->i",
                            rows[column[low:high]],
                            self._vectors[numbers[pair[low:high]]],
                            dtype=np.float64,
                        )
                        for low, high in _chunks(len(pair), PAIRS_AT_ONCE)
                    ]
                )
                higher = rough > scores[pair] + close[pair]
                over += np.bincount(pair[higher], minlength=len(asked))
                tight = ~higher & (rough >= scores[pair] - close[pair])
                pair, column = pair[tight], column[tight]
                # rows equal to the key's own vector score exactly its score: no need to compute
                # it (one text many times)
                equal = np.concatenate(
                    [
                        (rows[column[low:high]] == own[pair[low:high]]).all(axis=1)
                        for low, high in _chunks(len(pair), PAIRS_AT_ONCE)
                    ]
                )
                near, near_column = pair[~equal], column[~equal]
                values = pair_scores(self._vectors, rows, numbers[near], near_column)
                over += np.bincount(near[values > scores[near]], minlength=len(asked))
                same = values == scores[near]
                _smaller(keys, asked, pair[equal], column[equal], over)
                _smaller(keys, asked, near[same], near_column[same], over)
        return over

    def _score(self, number: int, key: str) -> float:
        """Query ``number``'s score of asked ``key``: given before its row came, or seen since."""
        query = self._queries[number]
        return query.known[key] if key in query.known else query.seen[key]

    # --- the second pass ----------------------------------------------------------------

    def recount(self) -> int:
        """How many leading blocks :meth:`count` must be given again (0: none); call it once the
        blocks are added."""
        for query in self._queries:
            query.missed = frozenset(self._missed(query))
        return max(
            (query.found_in[key] for query in self._queries for key in query.missed), default=0
        )

    def count(self, keys: Sequence[str], rows: np.ndarray) -> None:
        """Give again one of the first :meth:`recount` blocks, as :meth:`add` was given it."""
        rows = self._checked(keys, rows)
        self._counting += 1
        missed = [query.missed for query in self._queries]
        margin = margins(self._vectors, rows)

        def counts(
            query: _Query, key: str
        ) -> bool:  # from its own block on, the first pass counted
            return key in query.missed and self._counting < query.found_in[key]

        for start, stop in query_blocks(len(self._queries), len(keys), self.budget):
            if any(missed[start:stop]):
                approximate = self._vectors[start:stop] @ rows.T
                self._count_better(range(start, stop), approximate, margin, rows, keys, counts)
                del approximate

    def _missed(self, query: _Query) -> list[str]:
        ranked = {key for key, _ in _ranking(query, self.rows)}
        return [
            key
            for key in query.asked
            if key in query.found_in and key not in ranked and key not in query.known
        ]

    # --- the result -----------------------------------------------------------------------

    def score_of(self, query: int, key: str) -> float | None:
        """The score of a watched ``key`` for query ``query`` (None when its row never came)."""
        return self._queries[query].seen.get(key)

    def rankings(self) -> list[QueryRanking]:
        """Each query's ranking: what :func:`rank_many` returns for every row's float64 score."""
        n = self.rows
        if n == 0:
            return [
                QueryRanking([], NO_TIES if self._expected else None, {}) for _ in self._queries
            ]
        result = []
        for query in self._queries:
            ranked = _ranking(query, n)
            ties = _ties(query, ranked, n) if self._expected else None
            places = {key: place for place, (key, _) in enumerate(ranked, start=1)}
            ranks = {
                key: places.get(key) or 1 + query.better[key]
                for key in query.asked
                if key in query.found_in
            }
            result.append(QueryRanking(ranked, ties, ranks))
        return result

    def _checked(self, keys: Sequence[str], rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows)
        if (
            rows.ndim != 2
            or rows.dtype != np.float32
            or rows.shape != (len(keys), self._vectors.shape[1])
        ):
            raise ValueError(
                f"rows must be float32 of shape ({len(keys)}, {self._vectors.shape[1]}), "
                f"got {rows.dtype} of shape {rows.shape}"
            )
        return rows


def rank_exact(
    queries: np.ndarray,
    keys: Sequence[str],
    rows: np.ndarray,
    ks: Sequence[int],
    *,
    block_rows: int = 1 << 16,
    **options,
) -> ExactRanking:
    """:class:`ExactRanking` of ``queries`` over every row of a matrix held whole, ``block_rows``
    rows at a time.

    ``options`` are :class:`ExactRanking`'s; its rankings (and the scores of
    its watched keys) are ready to read.
    """
    ranking = ExactRanking(queries, ks, **options)
    blocks = range(0, len(keys), block_rows)
    for first in blocks:
        ranking.add(keys[first : first + block_rows], rows[first : first + block_rows])
    for first in blocks[: ranking.recount()]:
        ranking.count(keys[first : first + block_rows], rows[first : first + block_rows])
    return ranking


def _rounded(bounds: np.ndarray, side: float) -> np.ndarray:
    """``bounds`` (float64) rounded to float32 toward ``side``: -inf, the largest float32 values at
    most them (a float32 score at or above one may reach the bound); +inf, the smallest at least
    them (a float32 score above one is above the bound)."""
    rounded = bounds.astype(np.float32)
    return np.where(
        rounded > bounds if side < 0 else rounded < bounds,
        np.nextafter(rounded, np.float32(side)),
        rounded,
    )


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, where the system says), else all of them."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def _parts(start: int, stop: int, count: int) -> list[tuple[int, int]]:
    """``range(start, stop)`` in at most ``count`` ranges of about equal size, in order, each of
    at least ``_PARTITIONED`` queries when there are that many."""
    count = max(1, min(count, (stop - start) // _PARTITIONED))
    bounds = [start + (stop - start) * i // count for i in range(count + 1)]
    return list(zip(bounds, bounds[1:]))


def _at_once(work: list[Callable[..., _T]], *arguments) -> list[_T]:
    """Each of ``work`` called with ``arguments``, all at once: the first on this thread, the
    others on threads of their own; their results, in order (an exception of any is raised
    here, once all are done). NumPy lets go of the GIL in its loops, so they share the cores."""
    if len(work) == 1:
        return [work[0](*arguments)]
    with ThreadPoolExecutor(max_workers=len(work) - 1) as pool:
        others = [pool.submit(each, *arguments) for each in work[1:]]
        first = work[0](*arguments)
        return [first, *(other.result() for other in others)]


def _rows_of(scores: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``scores[rows]`` (``rows`` ascending): a view when they are a range, as they mostly are."""
    if len(rows) and rows[-1] - rows[0] + 1 == len(rows):
        return scores[rows[0] : rows[-1] + 1]
    return scores[rows]


def _reach_th(scores: np.ndarray, reach: int) -> np.ndarray:
    """Each row's ``reach``-th largest float32 score (``reach`` at most the row's length): what
    ``np.partition(scores, n - reach, axis=1)[:, n - reach]`` gives, for about an eighth of its
    work.

    The ``reach``-th largest of the first ``max(reach, _SAMPLED)`` columns is
    at most the row's own, so the row's ``reach`` largest scores are among
    those at or above it (about ``reach`` times the share the sample is of
    the row), and the ``reach``-th largest of those is the row's.
    """
    q, n = scores.shape
    if q == 0:
        return np.empty(0, dtype=scores.dtype)
    sample = min(n, max(reach, _SAMPLED))
    low = np.partition(scores[:, :sample], sample - reach, axis=1)[:, sample - reach]
    row, column = _columns(_marks(scores, low, strict=False))  # row ascending
    values = scores[row, column]
    # each row's scores together (where they were), largest first
    order = np.lexsort((-values, row))
    return values[order][np.searchsorted(row, np.arange(q)) + reach - 1]


def _marks(scores: np.ndarray, bounds: np.ndarray, *, strict: bool) -> np.ndarray:
    """Which float32 ``scores`` (q, n) are above (``strict``) or at least their row's ``bounds``, as
    bits: row i's columns packed 64 to a word (uint64, (q, ceil(n / 64)), the bits past n clear).

    The comparisons are made a few rows at a time into one buffer, so the mask of a whole block of
    queries is never held; the words are an eighth of it and found set in a pass over them.
    """
    q, n = scores.shape
    words = np.empty((q, -(-n // 64)), dtype=np.uint64)
    buffer = _buffer(min(q, _PARTITIONED), n)
    compare = np.greater if strict else np.greater_equal
    for first in range(0, q, _PARTITIONED):
        last = min(q, first + _PARTITIONED)
        mask = buffer[: last - first]
        compare(scores[first:last], bounds[first:last, None], out=mask[:, :n])
        words[first:last] = np.packbits(mask, axis=1).view(np.uint64)
    return words


def _buffer(rows: int, columns: int) -> np.ndarray:
    """A mask for :func:`_marks` and :func:`_band`: ``rows`` of ``columns`` rounded up to 64, the
    columns past ``columns`` clear (and left so)."""
    return np.zeros((rows, -(-columns // 64) * 64), dtype=bool)


def _band(
    scores: np.ndarray, lows: np.ndarray, highs: np.ndarray, buffer: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each row of float32 ``scores`` (q, n): how many are above its ``highs`` bound, and, as
    :func:`_marks`'s words, which are at least its ``lows`` and not above ``highs``. One comparison
    of each kind, made into ``buffer`` (:func:`_buffer` of at least q rows and n columns)."""
    q, n = scores.shape
    mask = buffer[:q]
    np.greater(scores, highs[:, None], out=mask[:, :n])
    above = np.packbits(mask, axis=1).view(np.uint64)
    counts = _ones(above)
    np.greater_equal(scores, lows[:, None], out=mask[:, :n])
    within = np.packbits(mask, axis=1).view(np.uint64)
    within &= np.invert(above, out=above)
    return counts, within


def _columns(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The set bits of :func:`_marks`'s ``words``: their rows and columns, in row then column order
    (as ``np.nonzero`` of the mask gives them)."""
    per_row = words.shape[1]
    set_words = np.flatnonzero(words)
    bits = np.unpackbits(words.ravel()[set_words].view(np.uint8)).reshape(-1, 64)
    word, bit = np.nonzero(bits)
    row, place = np.divmod(set_words[word], per_row)
    return row, place * 64 + bit


def _ones(words: np.ndarray) -> np.ndarray:
    """The set bits of each row of :func:`_marks`'s ``words``, counted."""
    if hasattr(np, "bitwise_count"):  # numpy 2
        return np.bitwise_count(words).sum(axis=1, dtype=np.int64)
    return _BITS_SET[words.view(np.uint8)].sum(axis=1, dtype=np.int64)


_BITS_SET = np.array([bin(byte).count("1") for byte in range(256)], dtype=np.uint8)


def _chunks(count: int, size: int) -> list[tuple[int, int]]:
    """``(first, last)`` ranges of at most ``size`` covering ``range(count)``; one empty when
    ``count`` is 0."""
    return [(first, first + size) for first in range(0, count, size)] or [(0, 0)]


def _smaller(
    keys: Sequence[str],
    asked: list[tuple[int, str]],
    pair: np.ndarray,
    column: np.ndarray,
    over: np.ndarray,
) -> None:
    """Add to ``over`` each row (``column``) scoring the same as its ``pair``'s asked key with a
    smaller key: it ranks above."""
    for index, c in zip(pair.tolist(), column.tolist()):
        if keys[c] < asked[index][1]:
            over[index] += 1


def _one_per_query(numbers: np.ndarray) -> list[np.ndarray]:
    """Positions into ``numbers`` (query numbers, ascending, a query's pairs together) in rounds
    that hold each query at most once: the first pair of every query, then the second..."""
    place = np.arange(len(numbers)) - np.searchsorted(numbers, numbers)
    return [np.flatnonzero(place == round_) for round_ in range(int(place.max()) + 1)]


def _merge(query: _Query, scores: np.ndarray, keys: list[str]) -> None:
    """Fold a block's candidate rows (every row at or above the threshold, perhaps more) into the
    kept rows."""
    merged = np.concatenate([query.scores, scores]) if query.keys else scores.copy()
    merged_keys = query.keys + keys
    old = query.threshold
    if old is None and query.rows < query.reach:  # not yet reach rows: keep them all
        query.scores, query.keys = merged, merged_keys
        return
    above_old = merged > old if old is not None else np.ones(len(merged), dtype=bool)
    if (
        int(np.count_nonzero(above_old)) >= query.reach
    ):  # the threshold rises: every row at the new one is kept
        candidates = merged[above_old]
        threshold = float(
            np.partition(candidates, len(candidates) - query.reach)[len(candidates) - query.reach]
        )
        at_threshold = int(np.count_nonzero(merged == threshold))
    else:  # it stays: add this block's rows at it to the count
        assert (
            old is not None
        )  # with none yet every row so far is kept, reach or more: the branch above ran
        threshold = old
        at_threshold = query.at_threshold + int(np.count_nonzero(scores == old))
    above = np.flatnonzero(merged > threshold)
    at = np.flatnonzero(merged == threshold).tolist()
    chosen = heapq.nsmallest(query.reach - len(above), at, key=lambda j: merged_keys[j])
    keep = np.sort(np.concatenate([above, np.array(chosen, dtype=np.int64)]))
    query.scores = merged[keep]
    query.keys = [merged_keys[j] for j in keep.tolist()]
    query.threshold, query.at_threshold = threshold, at_threshold


def _ranking(query: _Query, n: int) -> list[tuple[str, float]]:
    """The kept rows, best first (score descending, key ascending), as deep as the query reaches."""
    return sorted(zip(query.keys, query.scores.tolist()), key=_order)[: min(query.reach, n)]


def _ties(query: _Query, ranked: list[tuple[str, float]], n: int) -> Ties:
    """:func:`ptah.core.ranking.find_ties` at depth k, from the kept rows and the count at the
    threshold."""
    cutoff = ranked[min(query.k, n) - 1][1]

    def group(score: float) -> int:
        return (
            query.at_threshold
            if score == query.threshold
            else int(np.count_nonzero(query.scores == score))
        )

    scores = {key: query.seen[key] for key in query.expected if key in query.seen}
    return ties_of(
        cutoff,
        min(query.k, n),
        int(np.count_nonzero(query.scores > cutoff)),
        group(cutoff),
        scores,
        group,
    )
