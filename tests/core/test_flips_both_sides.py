"""Flip counts of a comparison, both ways, against brute force over every subset of the holes of
both runs."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from ptah.core.estimate import PairedCase, extremes, flip_count
from ptah.core.measures import Measure

MEASURES = [Measure(name) for name in ("recall", "MRR", "nDCG", "MAP", "P", "success")]
KEYS = [f"d{i}" for i in range(8)]


@st.composite
def paired(draw):
    """A few cases: two rankings over eight keys, some relevant (graded 0.5 to 2), some judged not
    relevant; the holes are the unjudged keys of either top k, shared or one-sided."""
    made = []
    for number in range(draw(st.integers(1, 3))):
        k = draw(st.integers(1, 4))
        reference = tuple(draw(st.permutations(KEYS))[: draw(st.integers(0, 5))])
        candidate = tuple(draw(st.permutations(KEYS))[: draw(st.integers(0, 5))])
        grades = draw(
            st.dictionaries(st.sampled_from(KEYS), st.sampled_from([0.5, 1.0, 2.0]), max_size=3)
        )
        shown = dict.fromkeys((*reference[:k], *candidate[:k]))
        judged = draw(st.sets(st.sampled_from(sorted(shown)), max_size=2)) if shown else set()
        holes = tuple(key for key in shown if key not in grades and key not in judged)
        made.append(PairedCase(f"c{number}", k, reference, candidate, grades, holes))
    return made


def brute_force(cases, measure, target, up):
    """The least number of holes (every subset of every case's holes) that puts the mean difference
    at or above ``target`` (``up``) or below it; None when none does."""
    holes = [(index, key) for index, case in enumerate(cases) for key in case.holes]
    defined = [index for index, case in enumerate(cases) if case.delta(measure) is not None]
    if not defined:
        return None
    for size in range(len(holes) + 1):
        for chosen in itertools.combinations(holes, size):
            total = sum(
                cases[index].delta(measure, [key for i, key in chosen if i == index])
                for index in defined
            )
            mean = total / len(defined)
            if (mean >= target - 1e-12) if up else (mean < target - 1e-12):
                return size
    return None


@settings(max_examples=500, deadline=None)
@given(
    paired(),
    st.sampled_from(MEASURES),
    st.sampled_from([-1.0, -0.5, -0.2, -0.02, 0.0, 0.02, 0.3, 1.0]),
    st.booleans(),
)
def test_the_flip_count_is_the_least_number_of_holes_either_way(cases, measure, target, up):
    counted = flip_count(cases, measure, target, up)
    assert counted.exact
    assert counted.m == brute_force(cases, measure, target, up)


def test_a_shared_hole_lifts_both_runs_and_grows_both_denominators():
    # "x" is in both top 2 (first in the candidate, second in the reference); "r" is judged relevant
    case = PairedCase("c", 2, ("r", "x"), ("x", "r"), {"r": 1.0}, ("x",))
    assert case.delta(Measure("recall")) == 0.0
    assert case.delta(Measure("recall"), ["x"]) == 0.0  # 2 of 2 on both sides
    assert extremes(case, Measure("MRR")) == (
        [-0.5, 0.0],
        [-0.5, 0.0],
        True,
    )  # 1/2 - 1 before; both first after
    discounted = 1 / math.log2(3)
    assert extremes(case, Measure("nDCG")) == ([discounted - 1, 0.0], [discounted - 1, 0.0], True)


def test_a_hole_only_the_reference_returns_can_fail_a_passing_gate():
    # the candidate keeps the one judged relevant key; the reference also ranks an unjudged "y"
    # first
    case = PairedCase("c", 2, ("y", "r"), ("r", "z"), {"r": 1.0}, ("y", "z"))
    recall = Measure("recall")
    assert case.delta(recall) == 0.0
    # "y" relevant: the reference finds 2 of 2, the candidate 1 of 2 -> a drop of 0.5 with one hole
    assert flip_count([case], recall, -0.02, up=False).m == 1
    assert flip_count([case], recall, -0.6, up=False).m is None
