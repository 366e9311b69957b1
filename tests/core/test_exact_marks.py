"""The packed comparisons exact search counts and finds rows with: the same rows, in the same order,
as NumPy's own comparisons of the float32 scores; and each row's reach-th largest score, as NumPy's
partition gives it."""

from __future__ import annotations

import numpy as np
import pytest

from ptah.core import exact
from ptah.core.exact import (
    _at_once,
    _band,
    _buffer,
    _columns,
    _marks,
    _ones,
    _parts,
    _reach_th,
    _rows_of,
)


@pytest.mark.parametrize("columns", [0, 1, 63, 64, 65, 200])
@pytest.mark.parametrize("strict", [True, False])
def test_marks_find_and_count_the_rows_the_comparison_finds(columns, strict):
    generator = np.random.default_rng(columns)
    scores = generator.integers(-3, 4, size=(70, columns)).astype(np.float32)  # ties at the bounds
    bounds = generator.integers(-3, 4, size=70).astype(np.float32)
    mask = scores > bounds[:, None] if strict else scores >= bounds[:, None]

    words = _marks(scores, bounds, strict=strict)
    rows, found = _columns(words)

    expected_rows, expected_columns = np.nonzero(mask)
    assert rows.tolist() == expected_rows.tolist()
    assert found.tolist() == expected_columns.tolist()
    assert _ones(words).tolist() == mask.sum(axis=1).tolist()


@pytest.mark.parametrize("columns", [0, 1, 63, 64, 65, 200])
def test_a_band_counts_the_rows_above_it_and_finds_those_in_it(columns):
    generator = np.random.default_rng(100 + columns)
    scores = generator.integers(-3, 4, size=(20, columns)).astype(np.float32)  # ties at both bounds
    lows = generator.integers(-3, 3, size=20).astype(np.float32)
    highs = lows + generator.integers(0, 2, size=20).astype(
        np.float32
    )  # a band of one value or two
    buffer = _buffer(32, columns)
    for rows in (slice(0, 20), slice(3, 7), slice(0, 0)):  # one buffer, used again by fewer rows
        part = scores[rows]
        above, within = _band(part, lows[rows], highs[rows], buffer)
        assert above.tolist() == (part > highs[rows, None]).sum(axis=1).tolist()
        band = (part >= lows[rows, None]) & (part <= highs[rows, None])
        found_rows, found_columns = _columns(within)
        expected_rows, expected_columns = np.nonzero(band)
        assert found_rows.tolist() == expected_rows.tolist()
        assert found_columns.tolist() == expected_columns.tolist()


def test_the_count_without_numpy_2s_bit_count_is_the_same(monkeypatch):
    scores = np.arange(130, dtype=np.float32).reshape(2, 65)
    words = _marks(scores, np.array([10, 100], dtype=np.float32), strict=True)
    monkeypatch.delattr(np, "bitwise_count", raising=False)
    assert _ones(words).tolist() == [54, 29]  # 11..64 and 101..129


@pytest.mark.parametrize(
    "columns, reach",
    [(c, r) for c in (1, 9, 64, 100, 5000) for r in (1, 2, 9, 10, 100) if r <= c],
)
@pytest.mark.parametrize("sampled", [1, 8, 64, 1 << 13])
def test_the_reach_th_score_is_the_partitions(monkeypatch, columns, reach, sampled):
    monkeypatch.setattr(exact, "_SAMPLED", sampled)
    generator = np.random.default_rng(columns * reach)
    scores = generator.standard_normal((40, columns)).astype(np.float32)
    scores[:10] = generator.integers(-2, 3, size=(10, columns))  # ties at the reach-th score
    scores[10, :] = 1.5  # one score everywhere
    scores[11, : columns // 2] = -1  # the largest ones all after the sample
    expected = np.partition(scores, columns - reach, axis=1)[:, columns - reach]
    assert _reach_th(scores, reach).tolist() == expected.tolist()


def test_the_reach_th_score_of_no_rows_is_none():
    assert _reach_th(np.empty((0, 5), np.float32), 2).tolist() == []


def test_rows_of_is_a_view_for_a_range_and_a_copy_otherwise():
    scores = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert np.shares_memory(_rows_of(scores, np.array([1, 2, 3])), scores)
    assert _rows_of(scores, np.array([0, 2])).tolist() == [[0, 1, 2], [6, 7, 8]]
    assert not np.shares_memory(_rows_of(scores, np.array([0, 2])), scores)
    assert _rows_of(scores, np.array([], dtype=np.int64)).shape == (0, 3)


def test_parts_cover_the_queries_in_order_each_of_32_or_more():
    assert _parts(0, 100, 2) == [(0, 50), (50, 100)]
    assert _parts(10, 74, 2) == [(10, 42), (42, 74)]
    assert _parts(10, 73, 2) == [(10, 73)]  # 63: two parts would hold fewer than 32
    assert _parts(0, 100, 8) == [(0, 33), (33, 66), (66, 100)]  # at most 100 // 32 parts
    assert _parts(5, 30, 4) == [(5, 30)]  # fewer than 32: one part
    assert _parts(0, 0, 2) == [(0, 0)]
    assert _parts(0, 64, 1) == [(0, 64)]


def test_work_at_once_gives_each_result_in_order_and_raises_what_one_raised():
    def square(value: int) -> int:
        if value < 0:
            raise ValueError(f"negative {value}")
        return value * value

    def work(value):
        return lambda: square(value)

    assert _at_once([work(v) for v in (3, 1, 2)]) == [9, 1, 4]
    assert _at_once([work(5)]) == [25]
    with pytest.raises(ValueError, match="negative -2"):
        _at_once([work(1), work(-2), work(3)])
    with pytest.raises(ValueError, match="negative -1"):
        _at_once([work(-1), work(2)])
