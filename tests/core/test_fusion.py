"""Reciprocal rank fusion by hand on a tiny example."""

from __future__ import annotations

import numpy as np
import pytest

from ptah.core.fusion import check_fusion, rrf_scores
from ptah.core.ranking import top_k

KEYS = ["a", "b", "c", "d", "e"]


def test_rrf_by_hand():
    lexical = [2, 0, 3]  # c, a, d
    vector = [0, 1, 2, 4]  # a, b, c, e
    fused = rrf_scores([lexical, vector], len(KEYS), k=60)
    expected = {
        "a": 1 / (60 + 2) + 1 / (60 + 1),
        "b": 1 / (60 + 2),
        "c": 1 / (60 + 1) + 1 / (60 + 3),
        "d": 1 / (60 + 3),
        "e": 1 / (60 + 4),
    }
    assert fused.tolist() == [expected[key] for key in KEYS]
    # a (1/62 + 1/61) and c (1/61 + 1/63): a first; then b (1/62) before d (1/63) before e (1/64)
    assert [key for key, _ in top_k(fused, KEYS, 5)] == ["a", "c", "b", "d", "e"]


def test_equal_fused_scores_are_broken_by_key_ascending():
    fused = rrf_scores(
        [[3, 1], [1, 3]], 4, k=60
    )  # d and b: 1/61 + 1/62 each, summed in another order
    assert fused[1] == fused[3]
    assert [key for key, _ in top_k(fused, ["a", "b", "c", "d"], 2)] == ["b", "d"]


def test_the_constant_changes_the_balance():
    # a: rank 1 in one channel only; b: rank 3 in both. Small k favours a lone top rank, large k
    # agreement.
    small = rrf_scores([[0, 2, 1], [2, 3, 1]], 4, k=0)
    assert small[0] > small[1]  # 1/1 > 1/3 + 1/3
    large = rrf_scores([[0, 2, 1], [2, 3, 1]], 4, k=60)
    assert large[1] > large[0]  # 2/63 > 1/61


def test_rows_no_channel_ranked_score_zero_and_bad_rankings_are_refused():
    assert rrf_scores([[], [1]], 3).tolist() == [0.0, 1 / 61, 0.0]
    with pytest.raises(ValueError, match="at most once"):
        rrf_scores([[1, 1]], 3)
    with pytest.raises(ValueError, match="outside"):
        rrf_scores([[3]], 3)
    with pytest.raises(ValueError, match="constant"):
        check_fusion(-1, 10)
    with pytest.raises(ValueError, match="depth"):
        check_fusion(60, 0)
    assert rrf_scores([], 2).dtype == np.float64
