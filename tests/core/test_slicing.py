"""Bounds of the slice work (ptah.core.slicing): the tests one comparison corrects."""

from __future__ import annotations

import pytest

from ptah.core.errors import InputError
from ptah.core.slicing import MAX_TESTS, check_tests


def slices(count: int, cases: int = 2) -> dict:
    return {f"t{i}": (f"sha256:{i}", tuple(f"c{j}" for j in range(cases))) for i in range(count)}


def test_a_comparison_of_more_than_10000_slice_tests_is_refused_before_any_work():
    check_tests(slices(200), 5, 10)  # 10,000: at the limit
    check_tests(slices(400, cases=1), 5, 10)  # a one-case slice is not tested
    with pytest.raises(InputError) as raised:
        check_tests(slices(200), 6, 9)
    assert raised.value.exit_code == 2 and MAX_TESTS == 10_000
    assert str(raised.value) == (
        "the slices would make 10,800 tests in one comparison (200 slices x 6 measures x 9 runs "
        "compared), more than the limit of 10,000; compare fewer runs or measures, or use "
        "fewer tags"
    )
