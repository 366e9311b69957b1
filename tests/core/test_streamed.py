"""Ranking rows added in blocks gives exactly what rank_many gives on the whole score matrix."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ptah.core.ranking import Ties, rank_many
from ptah.core.streamed import StreamedRanking


def cuts(total: int, rng: random.Random) -> list[tuple[int, int]]:
    """``range(total)`` cut into consecutive ranges of random sizes."""
    bounds = sorted({0, total, *(rng.randrange(1, total) for _ in range(rng.randrange(0, 4)) if total > 1)})
    return list(zip(bounds, bounds[1:]))


def stream(scores: np.ndarray, keys: list[str], rng: random.Random, **options) -> StreamedRanking:
    """Add ``scores`` in random blocks of rows, each block in random ranges of queries; count again if asked."""
    q, n = scores.shape
    blocks = cuts(n, rng) if n else []
    ranges = cuts(q, rng) if q else []
    ranking = StreamedRanking(**options)
    for first, last in blocks:
        for number, (start, stop) in enumerate(ranges):
            ranking.add(start, stop, scores[start:stop, first:last], keys[first:last], new_block=number == 0)
    for first, last in blocks[: ranking.recount()]:
        for number, (start, stop) in enumerate(ranges):
            ranking.count(start, stop, scores[start:stop, first:last], keys[first:last], new_block=number == 0)
    return ranking


@pytest.mark.parametrize("seed", range(300))
def test_blocks_rank_exactly_as_the_whole_matrix(seed):
    rng = random.Random(seed)
    q, n = rng.randrange(1, 6), rng.randrange(1, 60)
    levels = rng.choice([2, 3, 5, 40])  # few distinct scores: ties everywhere, at and across every cutoff
    scores = np.array([[rng.randrange(levels) / 7 for _ in range(n)] for _ in range(q)], dtype=np.float32)
    keys = rng.sample([f"k{i}" for i in range(3 * n)], n)
    others = ["absent", "k999x"]
    ks = [rng.randrange(1, n + 3) for _ in range(q)]
    reach = [k + rng.choice([0, 0, 2, 9]) for k in ks]
    expected = [set(rng.sample(keys + others, rng.randrange(0, min(6, n + 2)))) for _ in range(q)]
    asked = [sorted(rng.sample(sorted(chosen), len(chosen) // 2 + 1)) if chosen else [] for chosen in expected]
    whole = rank_many(scores, keys, ks, expected=expected, asked=asked, reach=reach)
    streamed = stream(scores, keys, rng, ks=ks, expected=expected, asked=asked, reach=reach).rankings()
    assert streamed == whole


def test_without_expected_keys_there_are_no_ties_to_report():
    scores = np.array([[0.5, 0.5, 0.2]], dtype=np.float32)
    ranking = stream(scores, ["b", "a", "c"], random.Random(1), ks=[1]).rankings()
    assert ranking == rank_many(scores, ["b", "a", "c"], [1])
    assert ranking[0].ranked == [("a", 0.5)] and ranking[0].ties is None


def test_a_missed_key_is_ranked_across_blocks_it_did_not_see():
    # "x" comes in the last block; the rows above it came in the first: counted again, only as far as needed
    scores = np.array([[0.9, 0.8, 0.7, 0.6, 0.1, 0.6, 0.6]], dtype=np.float32)
    keys = ["a", "b", "c", "d", "e", "w", "x"]
    ranking = StreamedRanking([2], expected=[{"x"}], asked=[["x"]])
    ranking.add(0, 1, scores[:, :4], keys[:4], new_block=True)
    ranking.add(0, 1, scores[:, 4:], keys[4:], new_block=True)
    assert ranking.recount() == 1
    ranking.count(0, 1, scores[:, :4], keys[:4], new_block=True)
    (result,) = ranking.rankings()
    assert result.ranked == [("a", 0.8999999761581421), ("b", 0.800000011920929)]
    assert result.ranks == {"x": 6}  # a b c above; d and w tie with it and have smaller keys
    assert result.ties == Ties(cutoff_score=0.800000011920929, tied_outside=0, expected_tied=())


def test_nothing_to_count_again_when_every_asked_key_is_ranked():
    scores = np.array([[0.1, 0.9, 0.3]], dtype=np.float32)
    ranking = StreamedRanking([2], expected=[{"b"}], asked=[["b", "nope"]])
    ranking.add(0, 1, scores[:, :1], ["a"], new_block=True)
    ranking.add(0, 1, scores[:, 1:], ["b", "c"], new_block=True)
    assert ranking.recount() == 0
    assert ranking.rankings()[0].ranks == {"b": 1}  # a key that is no row has no rank


def test_watched_keys_keep_their_scores():
    scores = np.array([[0.25, 0.5], [0.75, 0.125]], dtype=np.float32)
    ranking = StreamedRanking([1, 1], watched=[["b"], ["a", "gone"]])
    ranking.add(0, 2, scores, ["a", "b"], new_block=True)
    assert (ranking.score_of(0, "b"), ranking.score_of(1, "a"), ranking.score_of(1, "gone")) == (0.5, 0.75, None)


def test_a_query_keeps_no_more_rows_than_its_ranking_needs():
    rng = np.random.default_rng(3)
    ranking = StreamedRanking([10], expected=[set()], asked=[[]])
    keys = [f"r{i:05d}" for i in range(20_000)]
    scores = rng.integers(0, 50, size=(1, 20_000)).astype(np.float32)  # 400 rows per score: ties at every cutoff
    for first in range(0, 20_000, 1_000):
        ranking.add(0, 1, scores[:, first:first + 1_000], keys[first:first + 1_000], new_block=True)
        assert len(ranking._queries[0].keys) <= 10
    assert ranking.rankings() == rank_many(scores, keys, [10], expected=[set()], asked=[[]])


def test_no_rows_rank_as_rank_many_does():
    assert StreamedRanking([3], expected=[{"a"}]).rankings() == rank_many(np.empty((1, 0)), [], [3], expected=[{"a"}])


@pytest.mark.parametrize("bad, message", [
    (dict(ks=[0]), "depth k must be an integer >= 1"),
    (dict(ks=[1, 2], reach=[3]), "got 1 reaches for 2 queries"),
])
def test_bad_arguments_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        StreamedRanking(**bad)


def test_nan_and_shapes_are_refused():
    ranking = StreamedRanking([1])
    with pytest.raises(ValueError, match="scores contain NaN"):
        ranking.add(0, 1, np.array([[np.nan]], dtype=np.float32), ["a"], new_block=True)
    with pytest.raises(ValueError, match=r"scores must have shape \(1, 2\)"):
        ranking.add(0, 1, np.array([[0.5]], dtype=np.float32), ["a", "b"], new_block=True)


@pytest.mark.parametrize("seed", range(12))
def test_many_blocks_with_rising_thresholds(seed):
    rng = random.Random(seed)
    q, n = 6, 3_000
    generator = np.random.default_rng(seed)
    scores = (generator.integers(0, rng.choice([20, 300, 5_000]), size=(q, n)) / 64).astype(np.float32)
    keys = [f"row-{i}" for i in generator.permutation(n)]
    ks = [1, 3, 10, 10, 25, 100]
    reach = [k + rng.choice([0, 7]) for k in ks]
    expected = [set(rng.sample(keys, 5)) | {"absent"} for _ in range(q)]
    asked = [sorted(chosen) for chosen in expected]
    ranking = StreamedRanking(ks, expected=expected, asked=asked, reach=reach)
    for first in range(0, n, 97):
        ranking.add(0, 3, scores[:3, first:first + 97], keys[first:first + 97], new_block=True)
        ranking.add(3, 6, scores[3:, first:first + 97], keys[first:first + 97], new_block=False)
    for block, first in enumerate(range(0, n, 97)):
        if block == ranking.recount():
            break
        ranking.count(0, 6, scores[:, first:first + 97], keys[first:first + 97], new_block=True)
    assert ranking.rankings() == rank_many(scores, keys, ks, expected=expected, asked=asked, reach=reach)
