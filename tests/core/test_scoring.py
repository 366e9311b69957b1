"""Scoring: the block plan, the deterministic float64 pair score, the float32 margin, unit rows.

:mod:`ptah.core.ranking` promises that a float32 product, however BLAS
computes it, is within :func:`margins` of the float64 pair score; that the
pair score is the products summed in dimension order and nothing else; and
that the block plan bounds memory. These tests check each promise on random
and near-tie data, with one BLAS thread and two, in blocks of every size --
never against the bits of one BLAS product.
"""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from ptah.core import ranking
from ptah.core.ranking import BLOCK_SCORES, margins, normalize_rows, pair_scores, query_blocks
from tests.core.test_exact import data, every_pair

# --- the plan -------------------------------------------------------------


@pytest.mark.parametrize("queries", [0, 1, 2, 3, 4, 5, 7, 9, 100, 1001, 50_000])
@pytest.mark.parametrize("rows", [0, 1, 3, 10, 1000, 100_000, 10**8])
@pytest.mark.parametrize("budget", [1, 5, 1000, BLOCK_SCORES])
def test_blocks_cover_the_queries_in_order_in_balanced_blocks_within_the_budget(
    queries, rows, budget
):
    blocks = query_blocks(queries, rows, budget)
    assert [index for block in blocks for index in range(*block)] == list(range(queries))
    sizes = [stop - start for start, stop in blocks]
    if queries:
        assert max(sizes) - min(sizes) <= 1
        assert max(sizes) <= max(1, budget // max(rows, 1))
        assert len(blocks) == -(-queries // max(1, budget // max(rows, 1)))


def test_block_plan_examples():
    assert query_blocks(50_000, 100_000) == [
        (i * 50_000 // 150, (i + 1) * 50_000 // 150) for i in range(150)
    ]
    assert query_blocks(1_000, 100_000) == [(0, 333), (333, 666), (666, 1000)]
    assert query_blocks(32, 1_000_000) == [
        (0, 32)
    ]  # a search of 32 queries over a million rows: one product
    assert query_blocks(3, 10**9) == [
        (0, 1),
        (1, 2),
        (2, 3),
    ]  # one query's row alone past the budget


@pytest.mark.parametrize("bad", [(-1, 3, 5), (3, -1, 5), (3, 3, 0), (True, 3, 5), (2.0, 3, 5)])
def test_block_plan_refuses_nonsense(bad):
    with pytest.raises(ValueError):
        query_blocks(*bad)


# --- the pair score -------------------------------------------------------


def test_a_pair_score_is_the_exact_products_added_in_dimension_order():
    rng = np.random.default_rng(2)
    queries, rows = data("random", rng, 5, 40, 37)
    got = every_pair(queries, rows)
    for i in range(5):
        for j in range(40):
            total = 0.0
            for a, b in zip(queries[i].tolist(), rows[j].tolist()):
                total += (
                    a * b
                )  # Python floats are float64; a product of two float32 values is exact in them
            assert got[i, j] == total


def test_a_pair_score_does_not_depend_on_the_other_pairs_or_how_many_are_scored_at_once(
    monkeypatch,
):
    rng = np.random.default_rng(3)
    queries, rows = data("near", rng, 7, 300, 384)
    whole = every_pair(queries, rows)
    monkeypatch.setattr(ranking, "PAIRS_AT_ONCE", 13)
    order = rng.permutation(7 * 300)
    some = pair_scores(queries, rows, order // 300, order % 300)
    assert (some == whole.reshape(-1)[order]).all()


@pytest.mark.parametrize("kind", ["random", "near", "integer"])
@pytest.mark.parametrize("dimension", [1, 7, 64, 384, 1024])
def test_float32_products_stay_within_the_margin_of_the_pair_score(kind, dimension):
    rng = np.random.default_rng(dimension)
    queries, rows = data(kind, rng, 30, 2_000, dimension)
    rows[:3] *= 40  # rows of other lengths than the rest: the margin takes the longest
    exact = every_pair(queries, rows)
    widths = margins(queries, rows)
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            for size in (1, 2, 30):
                for start in range(0, 30, size):
                    for first, last in ((0, 2_000), (0, 8), (5, 517)):
                        product = queries[start : start + size] @ rows[first:last].T
                        error = np.abs(product - exact[start : start + size, first:last])
                        assert (error <= widths[start : start + size, None]).all()


def test_margins_of_an_empty_block_are_zero():
    assert margins(np.ones((2, 3), np.float32), np.ones((0, 3), np.float32)).tolist() == [0.0, 0.0]


# --- unit rows ------------------------------------------------------------


def test_unit_rows_are_the_same_bits_alone_or_among_others_and_zero_rows_stay_zero(monkeypatch):
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((50, 96)).astype(np.float32) * 7
    vectors[3] = 0
    whole = normalize_rows(vectors.copy())
    assert whole[3].tolist() == [0.0] * 96
    lengths = np.sqrt((whole.astype(np.float64) ** 2).sum(axis=1))
    assert np.abs(np.delete(lengths, 3) - 1).max() < 1e-6
    monkeypatch.setattr(ranking, "PAIRS_AT_ONCE", 7)
    for i in (0, 3, 49):
        assert normalize_rows(vectors[i : i + 1].copy()).tobytes() == whole[i : i + 1].tobytes()
