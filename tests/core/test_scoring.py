"""Scoring in blocks: the block plan, blocked products equal to the whole product, and ranking a block at once.

The ranking of a block (:func:`rank_many`) must give exactly what the
full-matrix functions give -- :func:`top_k_many`, :func:`find_ties`,
:func:`rank_of` -- however the queries are cut into blocks, on scores with many
ties (quantised, so equal scores and ties at the cutoff are common).
"""

from __future__ import annotations

import numpy as np
import pytest

from ptah.core.ranking import QueryRanking, Ties, find_ties, key_columns, rank_many, rank_of, top_k_many
from ptah.core.scoring import BLOCK_SCORES, MIN_BLOCK_QUERIES, query_blocks, score_blocks

# --- the plan -------------------------------------------------------------


@pytest.mark.parametrize("queries", [0, 1, 2, 3, 4, 5, 7, 9, 100, 1001, 50_000])
@pytest.mark.parametrize("rows", [0, 1, 3, 10, 1000, 100_000, 10**8])
@pytest.mark.parametrize("budget", [1, 5, 1000, BLOCK_SCORES])
def test_blocks_cover_the_queries_in_order_in_balanced_blocks_never_of_one(queries, rows, budget):
    blocks = query_blocks(queries, rows, budget)
    assert [index for block in blocks for index in range(*block)] == list(range(queries))
    sizes = [stop - start for start, stop in blocks]
    largest = max(MIN_BLOCK_QUERIES, budget // max(rows, 1))
    if queries * rows <= budget or queries <= MIN_BLOCK_QUERIES:
        assert len(blocks) == (1 if queries else 0)  # the whole product, as before blocks existed
    else:
        assert max(sizes) - min(sizes) <= 1
        assert max(sizes) <= largest
        assert min(sizes) >= largest // 2 >= 2


def test_block_plan_examples():
    assert query_blocks(50_000, 100_000) == [(i * 50_000 // 150, (i + 1) * 50_000 // 150) for i in range(150)]
    assert query_blocks(1_000, 100_000) == [(0, 333), (333, 666), (666, 1000)]
    assert query_blocks(32, 1_000_000) == [(0, 32)]  # a search of 32 queries over a million rows: one product
    assert query_blocks(5, 10**9) == [(0, 2), (2, 5)]  # rows alone past the budget: still never one query
    assert query_blocks(1, 10**9) == [(0, 1)]


@pytest.mark.parametrize("bad", [(-1, 3, 5), (3, -1, 5), (3, 3, 0), (True, 3, 5), (2.0, 3, 5)])
def test_block_plan_refuses_nonsense(bad):
    with pytest.raises(ValueError):
        query_blocks(*bad)


# --- products -------------------------------------------------------------


@pytest.mark.parametrize(("queries", "rows", "dimension", "budget"), [
    (600, 5_000, 384, 1_000_000),  # blocks of 200 queries
    (899, 7_003, 32, 700_000),  # blocks of 99 or 100, rows not a round number
    (800, 50_000, 32, BLOCK_SCORES),  # the real budget: two blocks of 400
])
def test_blocked_products_are_the_bits_of_the_whole_product(queries, rows, dimension, budget):
    rng = np.random.default_rng(queries)
    q = rng.standard_normal((queries, dimension), dtype=np.float32)
    v = rng.standard_normal((rows, dimension), dtype=np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    whole = q @ v.T
    blocks = list(score_blocks(q, v, budget))
    assert len(blocks) > 1
    for start, stop, scores in blocks:
        assert scores.dtype == np.float32
        assert scores.tobytes() == whole[start:stop].tobytes()


@pytest.mark.parametrize(("queries", "rows", "dimension", "block"), [
    (300, 150_001, 64, 1 << 16),  # the streamed search's blocks (ptah.services.channels.streamed.STREAM_ROWS)
    (7, 50_003, 384, 1 << 12),
    (2, 20_001, 64, 1 << 13),
])
def test_rows_cut_at_multiples_of_4096_keep_the_bits_of_the_whole_product(queries, rows, dimension, block):
    rng = np.random.default_rng(rows)
    q = rng.standard_normal((queries, dimension), dtype=np.float32)
    v = rng.standard_normal((rows, dimension), dtype=np.float32)
    whole = q @ v.T
    for first in range(0, rows, block):
        assert (q @ v[first:first + block].T).tobytes() == whole[:, first:first + block].tobytes()


def test_score_blocks_of_no_rows_and_no_queries():
    assert [(a, b, s.shape) for a, b, s in score_blocks(np.ones((3, 4), np.float32), np.ones((0, 4), np.float32))] == [
        (0, 3, (3, 0))]
    assert list(score_blocks(np.ones((0, 4), np.float32), np.ones((5, 4), np.float32))) == []


# --- ranking a block at once ----------------------------------------------


def _tied_scores(rng, q: int, n: int, dtype) -> np.ndarray:
    """Scores on a coarse grid (ties everywhere), some rows all zero, some whole rows equal."""
    scores = (np.round(rng.standard_normal((q, n)) * 3) / 3).astype(dtype)
    scores[rng.random((q, n)) < 0.2] = 0
    if q > 2:
        scores[1] = 0.5
    # -0.0 equals 0.0, so which of the two a partition leaves at a zero cutoff is its own affair; none of
    # ptah's scorers makes -0.0 (BLAS adds products onto +0, BM25 and RRF sum non-negative terms).
    return scores + dtype(0)


def _expected(case: int, rng, keys: list[str], n: int) -> tuple[set[str], list[str]]:
    picked = [keys[i] for i in rng.choice(n, size=min(n, 4), replace=False)] if n else []
    expected = set(picked[:3]) | ({"no-such-row"} if case % 3 == 0 else set())
    asked = picked[1:] + (["missing"] if case % 4 == 0 else [])
    return expected, asked


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("q", "n"), [(23, 1), (23, 2), (17, 31), (40, 200), (9, 1000)])
def test_rank_many_in_blocks_equals_the_full_matrix_functions(dtype, q, n):
    rng = np.random.default_rng(q * 1000 + n)
    scores = _tied_scores(rng, q, n, dtype)
    keys = [f"k{i:04d}" for i in rng.permutation(n)]  # key order is not column order
    ks = [int(k) for k in rng.integers(1, n + 4, size=q)]
    wanted = [_expected(i, rng, keys, n) for i in range(q)]
    expected = [e for e, _ in wanted]
    asked = [a for _, a in wanted]

    full = top_k_many(scores, keys, ks)
    ties = [find_ties(scores[i], keys, ks[i], expected[i]) for i in range(q)]
    ranks = [{key: rank_of(scores[i], keys, key) for key in asked[i] if key in keys} for i in range(q)]
    assert any(t.straddles_cutoff for t in ties) and any(t.expected_tied for t in ties) or n < 3

    columns = key_columns(keys)
    for size in (1, 2, 3, 7, q):
        got: list[QueryRanking] = []
        for start in range(0, q, size):
            stop = min(q, start + size)
            got.extend(rank_many(scores[start:stop], keys, ks[start:stop], expected[start:stop], asked[start:stop],
                                 columns=columns if size % 2 else None))
        assert [r.ranked for r in got] == full
        assert [r.ties for r in got] == ties
        assert [r.ranks for r in got] == ranks
        for mine, theirs in zip(got, full):  # the scores are the very floats, not merely equal ones
            assert [repr(score) for _, score in mine.ranked] == [repr(score) for _, score in theirs]


def test_rank_many_without_expected_or_asked_keys_is_top_k_many():
    scores = np.array([[0.5, 0.5, 0.1], [0.0, 0.2, 0.2]], dtype=np.float32)
    got = rank_many(scores, ["b", "a", "c"], [2, 1])
    assert got == [
        QueryRanking([("a", 0.5), ("b", 0.5)], None, {}),
        QueryRanking([("a", np.float32(0.2).item())], None, {}),
    ]


def test_rank_many_hand_example_with_ties_and_ranks():
    scores = np.array([[0.9, 0.5, 0.5, 0.5, 0.1]], dtype=np.float64)
    keys = ["top", "d", "b", "c", "low"]
    [got] = rank_many(scores, keys, [2], [{"c", "top", "low", "gone"}], [["c", "low", "top", "gone"]])
    assert got.ranked == [("top", 0.9), ("b", 0.5)]
    assert got.ties == Ties(cutoff_score=0.5, tied_outside=2, expected_tied=("c",))
    assert got.ranks == {"c": 3, "low": 5, "top": 1}


def test_rank_many_of_no_rows_and_no_queries():
    empty = Ties(cutoff_score=None, tied_outside=0, expected_tied=())
    assert rank_many(np.zeros((2, 0)), [], [1, 5], [{"a"}, set()], [["a"], []]) == [
        QueryRanking([], empty, {}), QueryRanking([], empty, {})]
    assert rank_many(np.zeros((2, 0)), [], [1, 5]) == [QueryRanking([], None, {}), QueryRanking([], None, {})]
    assert rank_many(np.zeros((0, 3)), ["a", "b", "c"], []) == []


def test_rank_many_refuses_what_top_k_many_refuses():
    with pytest.raises(ValueError, match="2-D"):
        rank_many(np.zeros(3), ["a", "b", "c"], [1])
    with pytest.raises(ValueError, match="depths"):
        rank_many(np.zeros((1, 2)), ["a", "b"], [1, 1])
    with pytest.raises(ValueError, match="expected key sets"):
        rank_many(np.zeros((1, 2)), ["a", "b"], [1], [set(), set()])
    with pytest.raises(ValueError, match="keys"):
        rank_many(np.zeros((1, 2)), ["a"], [1])
    with pytest.raises(ValueError, match="depth k"):
        rank_many(np.zeros((1, 2)), ["a", "b"], [0])
    with pytest.raises(ValueError, match="NaN"):
        rank_many(np.array([[np.nan, 1.0]]), ["a", "b"], [1])
