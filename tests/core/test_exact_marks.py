"""The packed comparisons exact search counts and finds rows with: the same rows, in the same order,
as NumPy's own comparisons of the float32 scores."""

from __future__ import annotations

import numpy as np
import pytest

from ptah.core.exact import _columns, _marks, _ones


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


def test_the_count_without_numpy_2s_bit_count_is_the_same(monkeypatch):
    scores = np.arange(130, dtype=np.float32).reshape(2, 65)
    words = _marks(scores, np.array([10, 100], dtype=np.float32), strict=True)
    monkeypatch.delattr(np, "bitwise_count", raising=False)
    assert _ones(words).tolist() == [54, 29]  # 11..64 and 101..129
