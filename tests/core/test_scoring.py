"""Scoring: the block plan, the deterministic float64 pair score, the float32 margin, unit rows.

:mod:`ptah.core.ranking` promises that a float32 product, however BLAS
computes it, is within :func:`margins` of the float64 pair score; that the
pair score is the products summed in dimension order and nothing else; and
that the block plan bounds memory. These tests check each promise on random
and near-tie data, with one BLAS thread and two, in blocks of every size --
never against the bits of one BLAS product.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from ptah.core import ranking
from ptah.core.exact import ExactRanking
from ptah.core.ranking import (
    BLOCK_SCORES,
    finite_scores,
    margins,
    normalize_rows,
    pair_scores,
    query_blocks,
)
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


def test_many_pair_scores_at_once_are_the_products_added_in_dimension_order_too():
    rng = np.random.default_rng(5)
    queries, rows = data("near", rng, 3, 1_100, 37)  # 3,300 pairs: summed across, in 4 parts
    got = every_pair(queries, rows)
    for i in range(3):
        for j in range(1_100):
            total = 0.0
            for a, b in zip(queries[i].tolist(), rows[j].tolist()):
                total += a * b
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


def gamma(dimension: int, unit: Fraction) -> Fraction:
    """Higham's gamma_d for unit roundoff ``unit``, exactly."""
    return dimension * unit / (1 - dimension * unit)


@pytest.mark.parametrize("dimension", [1, 4, 384, 4096])
def test_the_margin_is_the_float32_and_float64_bounds_and_no_more(dimension):
    # |q| = 2 sqrt(d) and max|v| = sqrt(d): both squared lengths are exact in float32
    queries = np.full((2, dimension), 2, np.float32)
    queries[1] = 0  # a zero query
    rows = np.ones((3, dimension), np.float32)
    bound = (gamma(dimension, Fraction(1, 2**24)) + gamma(dimension, Fraction(1, 2**53))) * 2
    bound *= dimension
    underflow = Fraction(dimension, 2**149)
    widths = margins(queries, rows)
    # no less than the bound; more only by the lengths' slack (float32 squared lengths) and the
    # float64 roundings of the margin's own arithmetic
    slack = Fraction(1 + (dimension + 2) * 2.0**-23)
    assert bound + underflow <= Fraction(widths[0])
    assert Fraction(widths[0]) <= (bound + underflow) * slack**2 * (1 + Fraction(1, 2**44))
    assert underflow < Fraction(widths[1]) < Fraction(1, 10**20)  # a zero query: little but that
    # against (d + 2) 2**-23 |q| max|v| before: d / (2 (d + 2)) of it, about half
    before = (dimension + 2) * 2.0**-23 * 2 * dimension
    assert widths[0] / before == pytest.approx(dimension / (2 * (dimension + 2)), rel=2e-3)


def test_the_margin_holds_for_rows_whose_squared_lengths_underflow_float32():
    # rows of 1e-24 a component: their squares, 1e-48, are below float32's smallest; the queries'
    # 1e17 make the scores about 1e-7, rounded as any float32 sum is
    rng = np.random.default_rng(8)
    queries = (rng.choice([-1.0, 1.0], size=(4, 384)) * 1e17).astype(np.float32)
    rows = (rng.standard_normal((50, 384)) * 1e-24).astype(np.float32)
    assert float(np.max(np.einsum("ij,ij->i", rows, rows))) < 1e-40
    error = np.abs(queries @ rows.T - every_pair(queries, rows))
    assert error.max() > 0
    assert (error <= margins(queries, rows)[:, None]).all()


def test_the_margin_holds_where_one_rounding_of_a_float32_sum_is_half_a_step():
    # 1 + (2**-24 + 2**-47) rounds up to 1 + 2**-23 in float32: an error of almost 2**-24, in any
    # order, against a margin of about 2 x 2**-24
    queries = np.array([[1, 1]], np.float32)
    rows = np.array([[1, 2.0**-24 + 2.0**-47]], np.float32)
    product = queries @ rows.T
    exact = every_pair(queries, rows)
    assert float(product[0, 0]) == 1 + 2.0**-23
    assert float(exact[0, 0]) == 1 + 2.0**-24 + 2.0**-47
    assert 0.3 < (product[0, 0] - exact[0, 0]) / margins(queries, rows)[0] < 0.4


@pytest.mark.parametrize(
    "query, row, finite",
    [
        ([1, 1], [1, -1], True),
        ([2.0**63, 0], [1, 0], True),  # |q| max|v| = 2**63
        ([2.0**63, 0], [2.0**63, 0], False),  # 2**126 (times the lengths' slack): just over
        ([2.0**62, 0], [2.0**63, 0], True),  # 2**125
        ([2.0**64, 2.0**64], [2.0**64, -(2.0**64)], False),  # products overflow: inf - inf
        ([np.nan, 1], [1, 1], False),
        ([1, 1], [np.inf, 1], False),
        ([0, 0], [0, 0], True),
    ],
)
def test_scores_are_finite_unless_a_vector_is_not_or_too_long(query, row, finite):
    queries, rows = np.array([query, [1, 0]], np.float32), np.array([row, [0, 1]], np.float32)
    assert finite_scores(margins(queries, rows), 2) is finite
    if finite:  # what it promises: every float32 score is a number
        assert np.isfinite(queries @ rows.T).all()


def test_exact_search_still_refuses_the_nan_of_finite_vectors_whose_products_overflow():
    queries = np.array([[2.0**64, 2.0**64]], np.float32)  # finite; q . v is inf - inf
    ranking = ExactRanking(queries, [1])
    ranking.add(["a"], np.array([[1, 1]], np.float32))  # 2**65: |q| |v| far below 2**126
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(ValueError, match="scores contain NaN"):
            ranking.add(["b"], np.array([[2.0**64, -(2.0**64)]], np.float32))


def test_scores_are_finite_up_to_the_bound_exactly():
    limit = ranking._gamma(3) * 2.0**126
    assert finite_scores(np.array([0.0, limit]), 3)
    assert not finite_scores(np.array([0.0, np.nextafter(limit, np.inf)]), 3)
    assert finite_scores(np.zeros(0), 3)
    assert finite_scores(np.zeros(2), 0)
    assert ranking._gamma(2**24) == np.inf
    assert ranking._gamma(1) == 2.0**-24 / (1 - 2.0**-24) + 2.0**-53 / (1 - 2.0**-53)


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
