"""The intervals however the holes are judged, and the extremes of a comparison, measured with the
rankings and grades checked once: the same floats, bit for bit, as measuring every set of holes
through ``Measure.score`` (the scoring as it was before, kept below as the oracle), and the
true least and greatest over every subset."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptah.core.corpus import Case

# which sets of holes bound the value (_sum_extremes, _best_first, _enumerated) is shared with the
# code: the oracle differs in how each set is scored
from ptah.core.estimate import (
    PairedCase,
    _best_first,
    _enumerated,
    _sum_extremes,
    completions,
    extremes,
    flip_count,
)
from ptah.core.judged import high_grades
from ptah.core.measures import Measure
from ptah.core.report import measure_case

MEASURES = [
    *(Measure(name) for name in ("recall", "MRR", "nDCG", "MAP", "P", "success")),
    Measure("nDCG", 3),  # shallower than the case: still a "sum"
    Measure("P", 20),  # deeper than the case: every subset
    Measure("MRR", 12),
]
KEYS = [f"d{i}" for i in range(14)]
GRADES = [0.5, 1.0, 2.0, 3.0]


# -- the oracle: every value through Measure.score, as before ---------------------------------


def scored(measure, ranking, grades, k, chosen=()):
    return measure.score(ranking, high_grades(grades, list(chosen)), k)


def oracle_extremes(case, measure, alone=False):
    """The extremes with every set measured by ``Measure.score``; ``alone``: the candidate's value,
    not a difference (an interval's)."""

    def delta(chosen):
        after = scored(measure, case.candidate, case.grades, case.k, chosen)
        if alone:
            return after
        before = scored(measure, case.reference, case.grades, case.k, chosen)
        return None if after is None or before is None else after - before

    base = delta(())
    if base is None:
        return None
    holes = case.holes
    structure = measure.kind.holes if measure.depth(case.k) <= case.k else None
    if not holes:
        return [base], [base], True
    if structure == "sum":
        return _sum_extremes(holes, delta, base)
    if structure == "first":
        after = [scored(measure, case.candidate, case.grades, case.k, [key]) for key in holes]
        before = [scored(measure, case.reference, case.grades, case.k, [key]) for key in holes]
        after0 = scored(measure, case.candidate, case.grades, case.k)
        before0 = scored(measure, case.reference, case.grades, case.k)
        highest = [base] + _best_first(after, before, after0, before0)
        lowest = [base] + [-value for value in _best_first(before, after, before0, after0)]
        return lowest, highest, True
    if len(holes) <= 10:
        return _enumerated(holes, delta)
    return [base, -1.0], [base, 1.0], False


def oracle_completions(result, measure):
    holes = tuple(dict.fromkeys(hole.key for hole in result.holes or ()))
    case = PairedCase(result.id, result.k, (), result.keys, dict(result.relevant), holes)
    found = oracle_extremes(case, measure, alone=True)
    if found is None:
        return None
    lowest, highest, exact = found
    return (min(lowest), max(highest)) if exact else (0.0, 1.0)


def bits(value):
    """A value as its exact text: -0.0 and 0.0 differ, as do two floats one ulp apart."""
    return repr(value)


# -- random cases -----------------------------------------------------------------------------


@st.composite
def measured_cases(draw):
    """A case measured on a random ranking (shorter than k at times): graded relevant keys, keys
    judged not relevant (forbidden), the rest of the top k holes; at times no relevant key."""
    k = draw(st.integers(1, 10))
    ranking = draw(st.permutations(KEYS))[: draw(st.integers(0, 13))]
    relevant = draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(GRADES), max_size=4))
    shown = [key for key in ranking[:k] if key not in relevant]
    forbidden = draw(st.sets(st.sampled_from(shown), max_size=2)) if shown else set()
    case = Case(id="c", query="q", k=k, relevant=relevant, forbidden=tuple(sorted(forbidden)))
    ranked = [(key, float(len(ranking) - rank)) for rank, key in enumerate(ranking)]
    return measure_case(case, ranked, measures=MEASURES, searched=len(ranking))


@settings(max_examples=1000, deadline=None)
@given(measured_cases(), st.sampled_from(MEASURES))
def test_an_interval_is_the_same_float_as_measuring_every_set(result, measure):
    found = completions(result, measure)
    expected = oracle_completions(result, measure)
    assert (found is None) == (expected is None)
    if found is not None:
        assert tuple(map(bits, found)) == tuple(map(bits, expected))


@settings(max_examples=300, deadline=None)
@given(measured_cases(), st.sampled_from(MEASURES))
def test_an_interval_is_the_least_and_the_greatest_over_every_subset(result, measure):
    holes = [hole.key for hole in result.holes or ()]
    found = completions(result, measure)
    values = [
        scored(measure, result.keys, dict(result.relevant), result.k, chosen)
        for size in range(len(holes) + 1)
        for chosen in itertools.combinations(holes, size)
    ]
    if values[0] is None:
        assert found is None
    elif measure.kind.holes is None and len(holes) > 10:
        assert found == (0.0, 1.0)
    else:
        assert found == (
            pytest.approx(min(values), abs=1e-12),
            pytest.approx(max(values), abs=1e-12),
        )


@st.composite
def paired(draw):
    """A case of a comparison: two rankings, grades with zeros among them, and holes -- at times a
    graded key among them, which keeps its place among the grades when taken relevant."""
    k = draw(st.integers(1, 6))
    reference = tuple(draw(st.permutations(KEYS))[: draw(st.integers(0, 8))])
    candidate = tuple(draw(st.permutations(KEYS))[: draw(st.integers(0, 8))])
    grades = draw(
        st.dictionaries(st.sampled_from(KEYS), st.sampled_from([0.0, *GRADES]), max_size=4)
    )
    shown = list(dict.fromkeys((*reference[:k], *candidate[:k])))
    holes = [key for key in shown if key not in grades]
    if draw(st.booleans()) and grades:
        holes.append(draw(st.sampled_from(sorted(grades))))
    return PairedCase("c", k, reference, candidate, grades, tuple(dict.fromkeys(holes)))


@settings(max_examples=1000, deadline=None)
@given(paired(), st.sampled_from(MEASURES))
def test_the_extremes_of_a_comparison_are_the_same_floats_as_measuring_every_set(case, measure):
    found = extremes(case, measure)
    expected = oracle_extremes(case, measure)
    assert (found is None) == (expected is None)
    if found is not None:
        assert [list(map(bits, part)) for part in found[:2]] == [
            list(map(bits, part)) for part in expected[:2]
        ]
        assert found[2] == expected[2]


def test_holes_beyond_enumeration_give_the_whole_range_and_a_shallow_case_its_own_depth():
    # MAP has no holes structure: eleven holes are not enumerated
    ranking = [f"h{i}" for i in range(11)] + ["r"]
    case = Case(id="c", query="q", k=12, relevant={"r": 1.0})
    result = measure_case(
        case,
        [(key, 12.0 - rank) for rank, key in enumerate(ranking)],
        measures=MEASURES,
        searched=12,
    )
    assert completions(result, Measure("MAP")) == (0.0, 1.0)
    assert completions(result, Measure("recall")) == (1.0, 1.0)
    assert completions(result, Measure("MRR")) == (1 / 12, 1.0)
    # a case with no relevant key is N/A however its holes are judged
    empty = measure_case(
        Case(id="e", query="q", k=3), [("a", 3.0), ("b", 2.0)], measures=MEASURES, searched=2
    )
    assert completions(empty, Measure("nDCG")) is None
    assert extremes(PairedCase("e", 3, ("a",), ("b",), {}, ("a", "b")), Measure("nDCG")) is None


def test_a_bad_grade_or_a_repeated_key_is_refused_as_measuring_refuses_it():
    bad = PairedCase("c", 2, ("a", "b"), ("b", "a"), {"a": -1.0}, ("b",))
    with pytest.raises(ValueError, match="grade of 'a' must be a finite number >= 0"):
        extremes(bad, Measure("nDCG"))
    repeated = PairedCase("c", 2, ("a", "a"), ("b", "a"), {"a": 1.0}, ("b",))
    with pytest.raises(ValueError, match="distinct keys"):
        flip_count([repeated], Measure("recall"), 0.0, up=True)
