"""Ranking order, partial selection, ranks of single keys and tie flags."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptah.core.ranking import QueryRanking, Ties, find_ties, key_columns, rank_many, top_k


def full_sort(scores, keys):
    """The reference ordering: every row sorted by (-score, key)."""
    return sorted(
        ((key, float(score)) for key, score in zip(keys, scores)), key=lambda e: (-e[1], e[0])
    )


def full_ranks(scores, keys):
    """Each key's 1-based place in :func:`full_sort`."""
    return {key: rank for rank, (key, _) in enumerate(full_sort(scores, keys), start=1)}


def brute_ties(scores, keys, k, expected):
    """The reference :class:`Ties`, from :func:`full_sort` by their definition."""
    ranked = full_sort(scores, keys)
    cutoff = ranked[min(k, len(ranked)) - 1][1]
    outside = sum(1 for _, score in ranked[k:] if score == cutoff)
    tied = sorted(
        key
        for key, score in ranked
        if key in expected and score >= cutoff and sum(1 for _, s in ranked if s == score) > 1
    )
    return Ties(cutoff, outside, tuple(tied))


# --- top_k ----------------------------------------------------------------


@pytest.mark.parametrize(
    "scores, keys, k, expected",
    [
        pytest.param(
            [0.1, 0.9, 0.5, 0.7],
            ["a", "b", "c", "d"],
            3,
            [("b", 0.9), ("d", 0.7), ("c", 0.5)],
            id="score-descending",
        ),
        pytest.param(
            [0.5, 0.5, 0.5, 0.9],
            ["c", "a", "b", "z"],
            4,
            [("z", 0.9), ("a", 0.5), ("b", 0.5), ("c", 0.5)],
            id="ties-by-key-ascending",
        ),
        # three rows share the cutoff score; only two places remain after "top": the smallest keys
        # keep them
        pytest.param(
            [2.0, 3.0, 2.0, 2.0, 1.0],
            ["m", "top", "b", "x", "a"],
            3,
            [("top", 3.0), ("b", 2.0), ("m", 2.0)],
            id="tie-at-the-cutoff",
        ),
        pytest.param(
            [0.0] * 4,
            ["10", "9", "B", "a"],
            4,
            [("10", 0.0), ("9", 0.0), ("B", 0.0), ("a", 0.0)],
            id="code-point-order-not-numeric-or-case-folded",
        ),
        pytest.param(
            [0.2, 0.4], ["a", "b"], 10, [("b", 0.4), ("a", 0.2)], id="k-beyond-n-returns-all"
        ),
        pytest.param([], [], 5, [], id="no-rows"),
    ],
)
def test_top_k_orders_by_score_descending_then_key_ascending(scores, keys, k, expected):
    assert top_k(np.array(scores, dtype=np.float64), keys, k) == expected


@pytest.mark.parametrize("k", [0, -1, 2.0, True])
def test_k_below_one_or_not_an_integer_is_refused(k):
    with pytest.raises(ValueError, match="depth k must be an integer >= 1"):
        top_k(np.array([1.0]), ["a"], k)


@pytest.mark.parametrize(
    "scores, keys, refused",
    [([1.0, 2.0, 3.0], ["a", "b"], "2 keys for 3 scores"), ([1.0, np.nan], ["a", "b"], "NaN")],
)
def test_mismatched_keys_and_nan_scores_are_refused(scores, keys, refused):
    with pytest.raises(ValueError, match=refused):
        top_k(np.array(scores), keys, 1)


def test_float32_ties_are_ties_in_float32():
    # Distinct as float64, equal once rounded to float32.
    scores = np.array([0.1 + 1e-12, 0.1], dtype=np.float64).astype(np.float32)
    assert scores[0] == scores[1]
    ranked = top_k(scores, ["b", "a"], 1)
    assert ranked == [("a", float(np.float32(0.1)))]
    assert type(ranked[0][1]) is float


def test_float32_scores_come_back_exactly():
    scores = np.array([0.3, 0.7], dtype=np.float32)
    assert top_k(scores, ["a", "b"], 2) == [
        ("b", float(np.float32(0.7))),
        ("a", float(np.float32(0.3))),
    ]


def test_top_k_does_not_sort_all_rows(monkeypatch):
    # Partial selection: the only sort is over rows above the cutoff.
    calls = []
    original = sorted

    def counting_sorted(iterable, *args, **kwargs):
        items = list(iterable)
        calls.append(len(items))
        return original(items, *args, **kwargs)

    def refuse(*args, **kwargs):
        raise AssertionError("top_k must not sort all rows")

    monkeypatch.setattr("builtins.sorted", counting_sorted)
    monkeypatch.setattr(np, "sort", refuse)
    monkeypatch.setattr(np, "argsort", refuse)
    monkeypatch.setattr(np, "lexsort", refuse)
    scores = np.arange(10_000, dtype=np.float64)
    keys = [f"k{i}" for i in range(10_000)]
    assert [key for key, _ in top_k(scores, keys, 3)] == ["k9999", "k9998", "k9997"]
    assert calls and max(calls) <= 3


@given(
    rows=st.lists(
        st.tuples(st.text(max_size=4), st.sampled_from([-1.0, 0.0, 0.25, 0.5, 1e300])),
        unique_by=lambda row: row[0],
        max_size=40,
    ),
    k=st.integers(min_value=1, max_value=50),
)
def test_top_k_property_equals_full_sort(rows, k):
    keys = [key for key, _ in rows]
    scores = np.array([score for _, score in rows], dtype=np.float64)
    assert top_k(scores, keys, k) == full_sort(scores, keys)[:k]


# --- find_ties ------------------------------------------------------------


@pytest.mark.parametrize(
    "scores, keys, k, expected, found, straddles, tied",
    [
        pytest.param(
            [0.9, 0.8, 0.7],
            ["a", "b", "c"],
            2,
            {"a", "c"},
            Ties(0.8, 0, ()),
            False,
            False,
            id="no-ties",
        ),
        # top 2: "top", then "a" wins the 0.5 tie over "b" and "c" by key
        pytest.param(
            [1.0, 0.5, 0.5, 0.5, 0.1],
            ["top", "c", "a", "b", "low"],
            2,
            {"b", "low"},
            Ties(0.5, 2, ("b",)),
            True,
            True,
            id="straddling-the-cutoff",
        ),
        pytest.param(
            [0.9, 0.9, 0.5, 0.1],
            ["b", "a", "c", "d"],
            3,
            {"b", "c"},
            Ties(0.5, 0, ("b",)),
            False,
            True,
            id="inside-the-top-k-flags-expected-keys",
        ),
        pytest.param(
            [0.9, 0.5, 0.1, 0.1],
            ["a", "b", "c", "d"],
            2,
            {"c", "d"},
            Ties(0.5, 0, ()),
            False,
            False,
            id="below-the-cutoff-not-flagged",
        ),
        pytest.param(
            [0.5, 0.5],
            ["a", "b"],
            10,
            {"a", "missing"},
            Ties(0.5, 0, ("a",)),
            False,
            True,
            id="k-beyond-n-never-straddles",
        ),
        pytest.param([], [], 3, {"a"}, Ties(None, 0, ()), False, False, id="no-rows"),
    ],
)
def test_ties_at_and_inside_the_cutoff(scores, keys, k, expected, found, straddles, tied):
    ties = find_ties(np.array(scores), keys, k, expected)
    assert ties == found
    assert (ties.straddles_cutoff, ties.any) == (straddles, tied)


# --- ranking a block at once ----------------------------------------------


def _tied_scores(rng, q: int, n: int, dtype) -> np.ndarray:
    """Scores on a coarse grid (ties everywhere), some rows all zero, some whole rows equal."""
    scores = (np.round(rng.standard_normal((q, n)) * 3) / 3).astype(dtype)
    scores[rng.random((q, n)) < 0.2] = 0
    if q > 2:
        scores[1] = 0.5
    # -0.0 equals 0.0, so which of the two a partition leaves at a zero cutoff is its own affair;
    # none of ptah's scorers makes -0.0 (BLAS adds products onto +0, BM25 and RRF sum non-negative
    # terms).
    return scores + dtype(0)


def _expected(case: int, rng, keys: list[str], n: int) -> tuple[set[str], list[str]]:
    picked = [keys[i] for i in rng.choice(n, size=min(n, 4), replace=False)] if n else []
    expected = set(picked[:3]) | ({"no-such-row"} if case % 3 == 0 else set())
    asked = picked[1:] + (["missing"] if case % 4 == 0 else [])
    return expected, asked


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("q", "n"), [(23, 1), (23, 2), (17, 31), (40, 200), (9, 1000)])
def test_rank_many_in_blocks_equals_the_full_sort(dtype, q, n):
    rng = np.random.default_rng(q * 1000 + n)
    scores = _tied_scores(rng, q, n, dtype)
    keys = [f"k{i:04d}" for i in rng.permutation(n)]  # key order is not column order
    ks = [int(k) for k in rng.integers(1, n + 4, size=q)]
    wanted = [_expected(i, rng, keys, n) for i in range(q)]
    expected = [e for e, _ in wanted]
    asked = [a for _, a in wanted]

    full = [full_sort(scores[i], keys)[: ks[i]] for i in range(q)]
    ties = [brute_ties(scores[i], keys, ks[i], expected[i]) for i in range(q)]
    ranks = [
        {key: rank for key, rank in full_ranks(scores[i], keys).items() if key in asked[i]}
        for i in range(q)
    ]
    assert any(t.straddles_cutoff for t in ties) and any(t.expected_tied for t in ties) or n < 3

    columns = key_columns(keys)
    for size in (1, 2, 3, 7, q):
        got: list[QueryRanking] = []
        for start in range(0, q, size):
            stop = min(q, start + size)
            got.extend(
                rank_many(
                    scores[start:stop],
                    keys,
                    ks[start:stop],
                    expected[start:stop],
                    asked[start:stop],
                    columns=columns if size % 2 else None,
                )
            )
        assert [r.ranked for r in got] == full
        assert [r.ties for r in got] == ties
        assert [r.ranks for r in got] == ranks
        for mine, theirs in zip(got, full):  # the scores are the very floats, not merely equal ones
            assert [repr(score) for _, score in mine.ranked] == [repr(score) for _, score in theirs]


def test_rank_many_without_expected_or_asked_keys_is_the_top_k():
    scores = np.array([[0.5, 0.5, 0.1], [0.0, 0.2, 0.2]], dtype=np.float32)
    got = rank_many(scores, ["b", "a", "c"], [2, 1])
    assert got == [
        QueryRanking([("a", 0.5), ("b", 0.5)], None, {}),
        QueryRanking([("a", np.float32(0.2).item())], None, {}),
    ]


def test_rank_many_hand_example_with_ties_and_ranks():
    scores = np.array([[0.9, 0.5, 0.5, 0.5, 0.1]], dtype=np.float64)
    keys = ["top", "d", "b", "c", "low"]
    [got] = rank_many(
        scores, keys, [2], [{"c", "top", "low", "gone"}], [["c", "low", "top", "gone"]]
    )
    assert got.ranked == [("top", 0.9), ("b", 0.5)]
    assert got.ties == Ties(cutoff_score=0.5, tied_outside=2, expected_tied=("c",))
    assert got.ranks == {"c": 3, "low": 5, "top": 1}


def test_rank_many_of_no_rows_and_no_queries():
    empty = Ties(cutoff_score=None, tied_outside=0, expected_tied=())
    assert rank_many(np.zeros((2, 0)), [], [1, 5], [{"a"}, set()], [["a"], []]) == [
        QueryRanking([], empty, {}),
        QueryRanking([], empty, {}),
    ]
    assert rank_many(np.zeros((2, 0)), [], [1, 5]) == [
        QueryRanking([], None, {}),
        QueryRanking([], None, {}),
    ]
    assert rank_many(np.zeros((0, 3)), ["a", "b", "c"], []) == []


@pytest.mark.parametrize(
    "scores, keys, arguments, refused",
    [
        (np.zeros(3), ["a", "b", "c"], ([1],), "2-D"),
        (np.zeros((1, 2)), ["a", "b"], ([1, 1],), "depths"),
        (np.zeros((1, 2)), ["a", "b"], ([1], [set(), set()]), "expected key sets"),
        (np.zeros((1, 2)), ["a"], ([1],), "keys"),
        (np.zeros((1, 2)), ["a", "b"], ([0],), "depth k"),
        (np.array([[np.nan, 1.0]]), ["a", "b"], ([1],), "NaN"),
    ],
)
def test_rank_many_refuses_bad_shapes_depths_and_nan(scores, keys, arguments, refused):
    with pytest.raises(ValueError, match=refused):
        rank_many(scores, keys, *arguments)
