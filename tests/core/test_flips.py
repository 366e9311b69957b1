"""Plausible relevant holes and settling samples, against exact sums (flip counts:
test_flips_both_sides)."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest

from ptah.core.estimate import settling_sample, upper_relevant
from ptah.core.measures import Measure

MEASURES = [Measure(name) for name in ("recall", "MRR", "nDCG", "MAP", "P", "success")]


def tail(population, relevant, drawn, found):
    """P(X <= found) of the hypergeometric law, as a fraction."""
    return Fraction(
        sum(comb(relevant, i) * comb(population - relevant, drawn - i) for i in range(found + 1)),
        comb(population, drawn),
    )


@pytest.mark.parametrize(
    ("population", "drawn", "found"),
    [
        (104, 30, 0),
        (104, 13, 0),
        (2735, 30, 0),
        (50, 10, 3),
        (10, 10, 2),
        (10, 0, 0),
        (1, 1, 0),
        (7, 3, 3),
    ],
)
def test_the_upper_bound_is_the_largest_total_still_plausible(population, drawn, found):
    bound = upper_relevant(population, drawn, found)
    total = bound + found
    assert tail(population, total, drawn, found) > Fraction(1, 20)
    if total < population - (drawn - found):
        assert tail(population, total + 1, drawn, found) <= Fraction(1, 20)


def test_known_bounds_and_sample_sizes():
    assert (
        upper_relevant(104, 30, 0) == 8
    )  # 30 of 104 holes judged, none relevant: at most 8 of the other 74
    assert upper_relevant(104, 0, 0) == 104  # nothing judged: every hole may be relevant
    assert upper_relevant(10, 10, 2) == 0  # every hole judged: none left to be relevant
    assert settling_sample(104, 20) == 14
    assert upper_relevant(104, 14, 0) == 18 and upper_relevant(104, 13, 0) == 20
    assert settling_sample(104, 105) == 0  # even every hole would not flip it: settled already
    assert (
        settling_sample(104, 1) == 99
    )  # one relevant hole flips it: all but 5 judged bound the rest to 0
    assert settling_sample(2735, 100) == 80
