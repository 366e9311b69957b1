"""Holm's step-down method on a family worked by hand."""

from __future__ import annotations

import math

import pytest

from ptah.core.significance import holm, holm_adjusted

# A family of five tests and one that could not be made (None). Sorted ascending, m = 5:
#   rank 1: p = 0.005 (index 3)  5 x 0.005 = 0.025                     -> q = 0.025   0.005 < 0.05/5 = 0.0100: reject
#   rank 2: p = 0.01  (index 0)  4 x 0.01  = 0.04                      -> q = 0.04    0.01  < 0.05/4 = 0.0125: reject
#   rank 3: p = 0.03  (index 2)  3 x 0.03  = 0.09                      -> q = 0.09    0.03 >= 0.05/3 = 0.0167: stop
#   rank 4: p = 0.04  (index 1)  2 x 0.04  = 0.08, below 0.09 before   -> q = 0.09 (monotone)
#   rank 5: p = 0.20  (index 5)  1 x 0.20  = 0.20                      -> q = 0.20
FAMILY = [0.01, 0.04, 0.03, 0.005, None, 0.20]


def test_a_hand_worked_family():
    assert holm_adjusted(FAMILY) == [4 * 0.01, 3 * 0.03, 3 * 0.03, 5 * 0.005, None, 0.20]
    assert holm(FAMILY, 0.05) == [True, False, False, True, None, False]
    # at alpha 0.1 the step-down goes on: 0.03 < 0.1/3 and 0.04 < 0.1/2, then 0.20 >= 0.1/1 stops it
    assert holm(FAMILY, 0.1) == [True, True, True, True, None, False]


def test_unadjusted_the_same_family_would_claim_four_findings():
    assert [p is not None and p < 0.05 for p in FAMILY] == [True, True, True, True, False, False]


def test_adjusted_values_are_capped_at_1_and_equal_p_values_get_equal_ones():
    assert holm_adjusted([0.3, 0.6, 0.9]) == [
        3 * 0.3,
        1.0,
        1.0,
    ]  # 3 x 0.3; 2 x 0.6 = 1.2 capped; 0.9 below 1
    assert holm_adjusted([0.02, 0.02]) == [0.04, 0.04]


def test_a_rejection_needs_the_adjusted_p_strictly_below_alpha_as_a_single_finding_does():
    assert holm_adjusted([0.025, 0.5]) == [0.05, 0.5]
    assert holm([0.025, 0.5], 0.05) == [False, False]
    assert holm([0.0249, 0.5], 0.05) == [True, False]


def test_a_family_of_one_is_the_test_itself_and_no_tests_is_no_family():
    assert holm_adjusted([0.04]) == [0.04] and holm([0.04], 0.05) == [True]
    assert holm_adjusted([]) == [] and holm([None, None], 0.05) == [None, None]


@pytest.mark.parametrize(
    "p_values, alpha",
    [([0.01], 0.0), ([0.01], 1.0), ([1.5], 0.05), ([math.nan], 0.05), ([-0.1], 0.05)],
)
def test_out_of_range_inputs_are_refused(p_values, alpha):
    with pytest.raises(ValueError):
        holm(p_values, alpha)
