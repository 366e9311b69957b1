"""Flip counts, plausible relevant holes and settling samples, against brute force and exact sums."""

from __future__ import annotations

import itertools
from fractions import Fraction
from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptah.core.corpus import Case
from ptah.core.flips import flip_count, settling_sample, upper_relevant
from ptah.core.judged import high_grades
from ptah.core.measures import Measure, MeasureKind, register, unregister
from ptah.core.outcomes import measure_case

MEASURES = [Measure(name) for name in ("recall", "MRR", "nDCG", "MAP", "P", "success")]


@st.composite
def cases(draw):
    """A few cases over ten keys: each a ranking, some relevant keys (graded 0.5 to 2), some judged not relevant."""
    made = []
    for number in range(draw(st.integers(1, 3))):
        k = draw(st.integers(1, 4))
        ranking = draw(st.permutations([f"d{i}" for i in range(10)]))[:draw(st.integers(0, 6))]
        relevant = draw(st.dictionaries(st.sampled_from([f"d{i}" for i in range(10)]), st.sampled_from([0.5, 1.0, 2.0]),
                                        max_size=3))
        judged = draw(st.sets(st.sampled_from(ranking), max_size=2)) if ranking else set()
        case = Case(id=f"c{number}", query="q", k=k, relevant=relevant)
        case = Case(id=case.id, query="q", k=k, relevant=relevant, judged=frozenset(judged - set(relevant)))
        made.append(measure_case(case, [(key, 1.0 - i / 100) for i, key in enumerate(ranking)], measures=MEASURES,
                                 searched=10))
    return made


def brute_force(results, measure, target):
    """The least number of holes (over every subset) that lifts the mean to ``target``; None when none does."""
    holes = [(index, hole.key) for index, result in enumerate(results) for hole in result.holes]
    defined = [index for index, result in enumerate(results) if result.values[str(measure)] is not None]
    if not defined:
        return None
    for size in range(len(holes) + 1):
        for chosen in itertools.combinations(holes, size):
            total = 0.0
            for index in defined:
                result = results[index]
                taken = [key for i, key in chosen if i == index]
                grades = high_grades(dict(result.relevant), taken) if taken else dict(result.relevant)
                total += measure.score([r.key for r in result.ranking], grades, result.k)
            if total / len(defined) >= target - 1e-12:
                return size
    return None


@settings(max_examples=400, deadline=None)
@given(cases(), st.sampled_from(MEASURES), st.sampled_from([0.0, 0.2, 0.5, 0.7, 0.9, 1.0]))
def test_the_flip_count_is_the_least_number_of_holes_that_lifts_the_mean(results, measure, target):
    counted = flip_count(results, measure, target)
    assert counted.exact
    assert counted.m == brute_force(results, measure, target)


def test_a_measure_without_the_top_holes_property_gets_a_lower_bound():
    # "last": 1 when the LAST key of the top k is relevant -- a hole ranked lower can count more
    register(MeasureKind("last", "last", "last", "-", "1 when the k-th key is relevant",
                         lambda top, relevant, k: 1.0 if len(top) == k and top[-1] in relevant else 0.0))
    try:
        measure = Measure("last")
        case = Case(id="c", query="q", k=2, relevant={"r": 1.0})
        results = [measure_case(case, [("a", 0.9), ("b", 0.8)], measures=[measure], searched=2)]
        counted = flip_count(results, measure, 1.0)
        assert counted == type(counted)(1, False)  # one hole ("b", the second) does it; the bound says at least 1
        assert brute_force(results, measure, 1.0) == 1
    finally:
        unregister("last")


def tail(population, relevant, drawn, found):
    """P(X <= found) of the hypergeometric law, as a fraction."""
    return Fraction(sum(comb(relevant, i) * comb(population - relevant, drawn - i) for i in range(found + 1)),
                    comb(population, drawn))


@pytest.mark.parametrize(("population", "drawn", "found"), [(104, 30, 0), (104, 13, 0), (2735, 30, 0), (50, 10, 3),
                                                            (10, 10, 2), (10, 0, 0), (1, 1, 0), (7, 3, 3)])
def test_the_upper_bound_is_the_largest_total_still_plausible(population, drawn, found):
    bound = upper_relevant(population, drawn, found)
    total = bound + found
    assert tail(population, total, drawn, found) > Fraction(1, 20)
    if total < population - (drawn - found):
        assert tail(population, total + 1, drawn, found) <= Fraction(1, 20)


def test_known_bounds_and_sample_sizes():
    assert upper_relevant(104, 30, 0) == 8   # 30 of 104 holes judged, none relevant: at most 8 of the other 74
    assert upper_relevant(104, 0, 0) == 104  # nothing judged: every hole may be relevant
    assert upper_relevant(10, 10, 2) == 0    # every hole judged: none left to be relevant
    assert settling_sample(104, 20) == 14
    assert upper_relevant(104, 14, 0) == 18 and upper_relevant(104, 13, 0) == 20
    assert settling_sample(104, 105) == 0    # even every hole would not flip it: settled already
    assert settling_sample(104, 1) == 99     # one relevant hole flips it: all but 5 judged bound the rest to 0
    assert settling_sample(2735, 100) == 80
