"""The one exact scoring plan gives the ranking of every pair's float64 score, whatever else
changes.

The oracle is :func:`rank_many` over the float64 score of *every* pair
(:func:`pair_scores`): the definition of the ranking. :class:`ExactRanking`
scores only candidates in float64, so these tests check it on data where
float32 rounding decides orders -- vectors within 1e-7 of one direction, whose
scores differ by less than a float32 step -- as well as on random vectors and
on integer vectors full of exact ties. And they check the invariants of
docs/evaluating.md ("The same ranking on every machine"): rows permuted, cases added,
removed and reordered, blocks of rows and of queries resized, one BLAS thread
or two. Nothing is compared with the bits of a BLAS product.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from ptah.core.exact import ExactRanking, rank_exact
from ptah.core.ranking import Ties, pair_scores, rank_many


def every_pair(queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The float64 score of every (query, row) pair, as a (q, n) matrix."""
    q, n = len(queries), len(rows)
    return pair_scores(queries, rows, np.repeat(np.arange(q), n), np.tile(np.arange(n), q)).reshape(
        q, n
    )


def near(rng: np.random.Generator, count: int, dimension: int, spread: float = 1e-7) -> np.ndarray:
    """Unit-length float32 vectors within about ``spread`` of one direction: float32 scores barely
    differ."""
    direction = rng.standard_normal(dimension)
    vectors = (
        direction / np.linalg.norm(direction) + rng.standard_normal((count, dimension)) * spread
    )
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


def data(
    kind: str, rng: np.random.Generator, q: int, n: int, dimension: int
) -> tuple[np.ndarray, np.ndarray]:
    if kind == "random":
        return (
            rng.standard_normal((q, dimension)).astype(np.float32),
            rng.standard_normal((n, dimension)).astype(np.float32),
        )
    if kind == "near":  # queries near the rows' direction too: every score close to 1
        both = near(rng, q + n, dimension)
        return both[:q], both[q:]
    # integer vectors: every product and sum exact, so ties everywhere; some rows repeated
    queries = rng.integers(-2, 3, size=(q, dimension)).astype(np.float32)
    rows = rng.integers(-1, 2, size=(n, dimension)).astype(np.float32)
    rows[rng.random(n) < 0.2] = rows[0]
    return queries, rows


def wanted(rng: random.Random, keys: list[str], q: int, n: int):
    ks = [rng.randrange(1, n + 3) for _ in range(q)]
    reach = [k + rng.choice([0, 0, 3, 20]) for k in ks]
    expected = [
        set(rng.sample(keys, min(n, rng.randrange(0, 5))))
        | ({"absent"} if rng.random() < 0.3 else set())
        for _ in range(q)
    ]
    asked = [sorted(chosen)[: len(chosen) // 2 + 1] for chosen in expected]
    return dict(ks=ks, expected=expected, asked=asked, reach=reach)


def in_blocks(queries, keys, rows, rng: random.Random, **options) -> list:
    """:class:`ExactRanking` over random blocks of rows, with a random query budget; its
    rankings."""
    n = len(keys)
    bounds = sorted({0, n, *(rng.randrange(1, n) for _ in range(rng.randrange(0, 5)) if n > 1)})
    blocks = list(zip(bounds, bounds[1:]))
    ranking = ExactRanking(queries, **options)
    ranking.budget = rng.choice([1, 7, 100, 1 << 25])
    for first, last in blocks:
        ranking.add(keys[first:last], rows[first:last])
    for first, last in blocks[: ranking.recount()]:
        ranking.count(keys[first:last], rows[first:last])
    return ranking.rankings()


@pytest.mark.parametrize("kind", ["random", "near", "integer"])
@pytest.mark.parametrize("seed", range(60))
def test_blocks_rank_as_every_pairs_float64_score_ranks(kind, seed):
    rng, generator = random.Random(seed), np.random.default_rng(seed)
    q, n, dimension = rng.randrange(1, 7), rng.randrange(1, 80), rng.choice([3, 16, 64])
    queries, rows = data(kind, generator, q, n, dimension)
    keys = rng.sample([f"k{i}" for i in range(3 * n)], n)
    options = wanted(rng, keys, q, n)
    assert in_blocks(queries, keys, rows, rng, **options) == rank_many(
        every_pair(queries, rows), keys, **options
    )


@pytest.mark.parametrize("kind", ["random", "near", "integer"])
def test_a_ranking_does_not_depend_on_row_order_other_cases_blocks_or_threads(kind):
    generator = np.random.default_rng(11)
    queries, rows = data(kind, generator, 40, 3_000, 64)
    keys = [f"row-{i:05d}" for i in range(len(rows))]
    rng = random.Random(4)
    options = wanted(rng, keys, len(queries), len(rows))
    options["ks"] = [min(k, 50) for k in options["ks"]]
    options["reach"] = [k + 5 for k in options["ks"]]
    reference = rank_exact(queries, keys, rows, **options).rankings()
    assert reference == rank_many(every_pair(queries, rows), keys, **options)

    order = generator.permutation(
        len(rows)
    )  # the same rows in another order, in blocks of another size
    permuted = rank_exact(
        queries, [keys[i] for i in order], rows[order], block_rows=777, **options
    ).rankings()
    assert permuted == reference

    picked = rng.sample(range(len(queries)), 25)  # cases removed and reordered, others added
    extra = data(kind, generator, 30, 1, 64)[0]
    mixed = np.concatenate([queries[picked], extra])
    subset = {
        name: [values[i] for i in picked] + [values[0]] * len(extra)
        for name, values in options.items()
    }
    again = rank_exact(mixed, keys, rows, block_rows=1_000, **subset).rankings()
    assert again[: len(picked)] == [reference[i] for i in picked]

    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            assert (
                rank_exact(queries, keys, rows, block_rows=512, **options).rankings() == reference
            )


def test_near_ties_are_decided_by_the_float64_scores_not_float32_rounding():
    generator = np.random.default_rng(5)
    queries, rows = data("near", generator, 8, 400, 384)
    keys = [f"r{i:03d}" for i in range(400)]
    exact = every_pair(queries, rows)
    rounded = queries @ rows.T
    # float32 cannot order these rows: many distinct float64 scores round to one float32 value
    assert len(np.unique(rounded[0])) < len(np.unique(exact[0])) / 4
    rankings = rank_exact(queries, keys, rows, [10] * 8).rankings()
    for i, ranking in enumerate(rankings):
        best = np.argsort(-exact[i], kind="stable")[:10]
        assert ranking.ranked == [(keys[j], float(exact[i, j])) for j in best]


def test_a_missed_key_is_ranked_across_blocks_it_did_not_see():
    # "x" comes in the last block; the rows above it came in the first: counted again, only as far
    # as needed
    rows = np.array([[0.9], [0.8], [0.7], [0.6], [0.1], [0.6], [0.6]], dtype=np.float32)
    keys = ["a", "b", "c", "d", "e", "w", "x"]
    ranking = ExactRanking(np.ones((1, 1), np.float32), [2], expected=[{"x"}], asked=[["x"]])
    ranking.add(keys[:4], rows[:4])
    ranking.add(keys[4:], rows[4:])
    assert ranking.recount() == 1
    ranking.count(keys[:4], rows[:4])
    (result,) = ranking.rankings()
    assert result.ranked == [("a", float(np.float32(0.9))), ("b", float(np.float32(0.8)))]
    assert result.ranks == {"x": 6}  # a b c above; d and w tie with it and have smaller keys
    assert result.ties == Ties(
        cutoff_score=float(np.float32(0.8)), tied_outside=0, expected_tied=()
    )


@pytest.mark.parametrize("kind", ["random", "near", "integer"])
@pytest.mark.parametrize("seed", range(40))
def test_asked_keys_given_their_vectors_rank_in_one_pass_as_in_two(kind, seed):
    rng, generator = random.Random(seed), np.random.default_rng(seed)
    q, n, dimension = rng.randrange(1, 7), rng.randrange(1, 80), rng.choice([3, 16, 64])
    queries, rows = data(kind, generator, q, n, dimension)
    keys = rng.sample([f"k{i}" for i in range(3 * n)], n)
    options = wanted(rng, keys, q, n)
    options["ks"] = [rng.randrange(1, 4) for _ in range(q)]  # most asked keys missed
    options["reach"] = list(options["ks"])
    columns = {key: column for column, key in enumerate(keys)}
    given = {
        key: rows[columns[key]] for chosen in options["asked"] for key in chosen if key in columns
    }
    bounds = sorted({0, n, *(rng.randrange(1, n) for _ in range(rng.randrange(0, 5)) if n > 1)})
    budget = rng.choice([1, 7, 100, 1 << 25])
    one = ExactRanking(queries, asked_vectors=given, **options)
    two = ExactRanking(queries, **options)
    one.budget = two.budget = budget
    for first, last in zip(bounds, bounds[1:]):
        one.add(keys[first:last], rows[first:last])
        two.add(keys[first:last], rows[first:last])
    assert one.recount() == 0
    for first, last in list(zip(bounds, bounds[1:]))[: two.recount()]:
        two.count(keys[first:last], rows[first:last])
    assert one.rankings() == two.rankings() == rank_many(every_pair(queries, rows), keys, **options)


def test_an_asked_key_whose_row_brings_another_vector_is_refused():
    ranking = ExactRanking(
        np.ones((1, 2), np.float32),
        [1],
        asked=[["a"]],
        asked_vectors={"a": np.array([0.5, 0.5], np.float32)},
    )
    ranking.add(["b"], np.array([[1, 0]], np.float32))
    with pytest.raises(ValueError, match="asked key 'a' came with another vector"):
        ranking.add(["a"], np.array([[0.5, 0.25]], np.float32))
    with pytest.raises(ValueError, match="must be float32 of shape \\(2,\\)"):
        ExactRanking(
            np.ones((1, 2), np.float32), [1], asked=[["a"]], asked_vectors={"a": np.ones(3)}
        )


def test_nothing_to_count_again_when_every_asked_key_is_ranked():
    ranking = ExactRanking(
        np.ones((1, 1), np.float32), [2], expected=[{"b"}], asked=[["b", "nope"]]
    )
    ranking.add(["a"], np.array([[0.1]], np.float32))
    ranking.add(["b", "c"], np.array([[0.9], [0.3]], np.float32))
    assert ranking.recount() == 0
    assert ranking.rankings()[0].ranks == {"b": 1}  # a key that is no row has no rank


def test_watched_keys_keep_their_float64_scores():
    queries = np.array([[1, 0], [0.5, 0.25]], dtype=np.float32)
    rows = np.array([[0.25, 3], [0.5, 0.125]], dtype=np.float32)
    ranking = ExactRanking(queries, [1, 1], watched=[["b"], ["a", "gone"]])
    ranking.add(["a", "b"], rows)
    assert (ranking.score_of(0, "b"), ranking.score_of(1, "a"), ranking.score_of(1, "gone")) == (
        0.5,
        0.875,
        None,
    )


def test_a_query_keeps_no_more_rows_than_its_ranking_needs():
    generator = np.random.default_rng(3)
    rows = generator.integers(0, 50, size=(20_000, 1)).astype(
        np.float32
    )  # 400 rows per score: ties at every cutoff
    keys = [f"r{i:05d}" for i in range(20_000)]
    ranking = ExactRanking(np.ones((1, 1), np.float32), [10], expected=[set()], asked=[[]])
    for first in range(0, 20_000, 1_000):
        ranking.add(keys[first : first + 1_000], rows[first : first + 1_000])
        assert len(ranking._queries[0].keys) <= 10
    assert ranking.rankings() == rank_many(
        rows.T.astype(np.float64), keys, [10], expected=[set()], asked=[[]]
    )


def test_no_rows_rank_as_rank_many_does():
    ranking = ExactRanking(np.ones((1, 4), np.float32), [3], expected=[{"a"}])
    assert ranking.rankings() == rank_many(np.empty((1, 0)), [], [3], expected=[{"a"}])


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(ks=[0]), "depth k must be an integer >= 1"),
        (dict(ks=[1, 2], reach=[3]), "got 1 query vectors for 2 queries"),
        (dict(ks=[1], reach=[3, 4]), "got 2 reaches for 1 queries"),
    ],
)
def test_bad_arguments_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        ExactRanking(np.ones((1, 2), np.float32), **bad)


def test_nan_shapes_and_dtypes_are_refused():
    ranking = ExactRanking(np.ones((1, 1), np.float32), [1])
    with pytest.raises(ValueError, match="scores contain NaN"):
        ranking.add(["a"], np.array([[np.nan]], dtype=np.float32))
    with pytest.raises(ValueError, match=r"rows must be float32 of shape \(2, 1\)"):
        ranking.add(["a", "b"], np.array([[0.5]], dtype=np.float32))
    with pytest.raises(ValueError, match="rows must be float32"):
        ranking.add(["a"], np.array([[0.5]], dtype=np.float64))
    with pytest.raises(ValueError, match="queries must be a 2-D float32 array"):
        ExactRanking(np.ones(3, np.float32), [1])


@pytest.mark.parametrize("kind", ["random", "near", "integer"])
def test_parts_of_a_block_of_queries_settled_on_threads_rank_as_one(kind):
    generator, rng = np.random.default_rng(21), random.Random(21)
    queries, rows = data(kind, generator, 100, 1_500, 16)
    keys = [f"row-{i:05d}" for i in range(len(rows))]
    options = wanted(rng, keys, len(queries), len(rows))
    options["ks"] = [rng.randrange(1, 6) for _ in range(len(queries))]  # most asked keys missed
    options["reach"] = list(options["ks"])
    columns = {key: column for column, key in enumerate(keys)}
    given = {
        key: rows[columns[key]]
        for chosen in options["asked"][::2]
        for key in chosen
        if key in columns
    }
    expected = rank_many(every_pair(queries, rows), keys, **options)
    for threads in (1, 2, 3, 8):  # 100 queries: at most 3 parts of 32 or more
        ranking = ExactRanking(queries, asked_vectors=given, **options)
        ranking.threads = threads
        for first in range(0, len(rows), 400):
            ranking.add(keys[first : first + 400], rows[first : first + 400])
        for first in range(0, 400 * ranking.recount(), 400):
            ranking.count(keys[first : first + 400], rows[first : first + 400])
        assert ranking.rankings() == expected
