"""The high bounds and judged@k, term by term on hand-built cases, and against pytrec_eval on qrels
augmented with the holes; a finding the holes decide reads inconclusive."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from ptah.core.baseline import Evidence
from ptah.core.compared import Settle
from ptah.core.comparison import against_baseline, compare_pair
from ptah.core.corpus import Case
from ptah.core.estimate import completions, mean_completions
from ptah.core.measures import DEFAULT_MEASURES, Measure
from ptah.core.parts import RunGeneration, Search
from ptah.core.report import make_run, measure_case
from tests.core.test_measures import trec_eval

MEASURES = (*DEFAULT_MEASURES, Measure("MAP", 10), Measure("P", 10), Measure("success", 1))


def measured(case: Case, keys: list[str], measures=MEASURES):
    ranked = [
        (key, float(len(keys) - rank)) for rank, key in enumerate(keys)
    ]  # strictly decreasing scores
    return measure_case(case, ranked, measures=measures, searched=len(keys))


def log2(rank: int) -> float:
    return math.log2(rank + 1)


def test_bounds_term_by_term_with_grades_half_and_two_and_a_forbidden_key_in_the_top_k():
    case = Case(
        id="c", query="q", k=4, required=("a",), relevant={"a": 2.0, "c": 0.5}, forbidden=("f",)
    )
    result = measured(case, ["x", "a", "f", "y", "c", "z"])
    # top 4: x (hole), a (2), f (forbidden: judged, not relevant), y (hole); c ranks 5th
    assert [(h.key, h.rank) for h in result.holes] == [("x", 1), ("y", 4)]
    assert result.judged == 2 / 4
    # low: the holes gain 0
    assert result.values["recall"] == 1 / 2
    assert result.values["MRR"] == 1 / 2
    assert result.values["nDCG"] == pytest.approx(
        (2 / log2(2)) / (2 / log2(1) + 0.5 / log2(2)), abs=1e-15
    )
    # high: x and y relevant at the case's highest grade, 2 -- in recall's denominator and nDCG's
    # ideal too
    assert result.highs["recall"] == 3 / 4
    assert result.highs["MRR"] == 1.0
    dcg = 2 / log2(1) + 2 / log2(2) + 0 / log2(3) + 2 / log2(4)
    ideal = 2 / log2(1) + 2 / log2(2) + 2 / log2(3) + 0.5 / log2(4)
    assert result.highs["nDCG"] == pytest.approx(dcg / ideal, abs=1e-15)
    # a fixed depth looks at its own top: z (rank 6) is a hole of MAP@10 and P@10, not of the case's
    # top 4
    assert (
        result.values["P@10"] == 2 / 10 and result.highs["P@10"] == 5 / 10
    )  # x, a, y, c, z; P divides by 10
    assert result.highs["MAP@10"] == pytest.approx(
        (1 / 1 + 2 / 2 + 3 / 4 + 4 / 5 + 5 / 6) / 5, abs=1e-15
    )
    assert result.values["success@1"] == 0.0 and result.highs["success@1"] == 1.0
    assert not result.passed and [(h.key, h.rank) for h in result.hits] == [("f", 3)]


def test_k_beyond_the_ranking_counts_the_ranked_rows():
    case = Case(id="c", query="q", k=10, relevant={"a": 1.0})
    result = measured(case, ["a", "h"], DEFAULT_MEASURES)
    assert [(h.key, h.rank) for h in result.holes] == [("h", 2)]
    assert result.judged == 1 / 2  # judged among min(k, n) = 2
    assert (result.values["recall"], result.highs["recall"]) == (1.0, 1.0)
    assert (result.values["nDCG"], result.highs["nDCG"]) == (
        1.0,
        1.0,
    )  # a, h both relevant: ideal as ranked


def test_a_hole_below_a_perfect_ranking_lowers_its_high_ndcg():
    case = Case(id="c", query="q", k=4, relevant={"a": 1.0}, forbidden=("b", "c"))
    result = measured(case, ["a", "b", "c", "h"], DEFAULT_MEASURES)
    assert result.values["nDCG"] == 1.0
    assert result.highs["nDCG"] == pytest.approx((1 + 1 / log2(4)) / (1 + 1 / log2(2)), abs=1e-15)


def test_an_empty_ranking_has_no_holes_and_judged_at_k_is_na():
    case = Case(id="c", query="q", k=3, relevant={"a": 1.0})
    result = measured(case, [], DEFAULT_MEASURES)
    assert result.holes == () and result.judged is None
    assert dict(result.highs) == dict(result.values) == {"recall": 0.0, "MRR": 0.0, "nDCG": 0.0}


def test_a_case_without_a_relevant_key_stays_na_on_both_bounds():
    case = Case(id="c", query="q", k=2, forbidden=("f",))
    result = measured(case, ["f", "h"], DEFAULT_MEASURES)
    assert [(h.key, h.rank) for h in result.holes] == [("h", 2)] and result.judged == 1 / 2
    assert set(result.values.values()) == set(result.highs.values()) == {None}


def test_keys_the_judgement_record_holds_are_judged_not_relevant():
    case = Case(id="c", query="q", k=3, relevant={"a": 1.0}, judged=frozenset({"x"}))
    result = measured(case, ["x", "a", "y"], DEFAULT_MEASURES)
    assert [(h.key, h.rank) for h in result.holes] == [("y", 3)] and result.judged == 2 / 3
    assert (result.values["MRR"], result.highs["MRR"]) == (1 / 2, 1 / 2)
    assert result.highs["recall"] == 2 / 2


def test_high_bounds_equal_pytrec_eval_on_qrels_augmented_with_the_holes():
    rng = random.Random("bounds")
    checked = 0
    for number in range(300):
        ranking = [f"d{i}" for i in rng.sample(range(40), rng.randint(0, 25))]
        k = rng.choice([1, 2, 3, 5, 10, 20])
        named = rng.sample(range(50), rng.randint(1, 10))  # d40.. are never ranked
        grades = {f"d{i}": rng.choice([0, 1, 2, 3]) for i in named}
        relevant = {key: float(g) for key, g in grades.items() if g > 0}
        forbidden = tuple(key for key, g in grades.items() if g == 0)
        case = Case(id=f"c{number}", query="q", k=k, relevant=relevant, forbidden=forbidden)
        result = measured(case, ranking)
        if not relevant:
            assert all(value is None for value in result.highs.values())
            continue
        top = max(grades.values())
        for measure in MEASURES:
            depth = measure.depth(k)
            augmented = dict(grades) | {key: top for key in ranking[:depth] if key not in grades}
            expected = trec_eval(measure.name, augmented, ranking, depth)
            assert result.highs[str(measure)] == pytest.approx(expected, abs=1e-9), (
                measure,
                ranking,
                grades,
                k,
            )
        assert result.judged == (
            None
            if not ranking
            else sum(1 for key in ranking[:k] if key in grades) / len(ranking[:k])
        )
        checked += 1
    assert checked >= 250


def test_run_means_carry_the_high_bounds_and_judged_at_k():
    cases = [
        Case(id="a", query="q", k=2, relevant={"r": 1.0}),
        Case(id="b", query="q", k=2, relevant={"r": 1.0}),
    ]
    run = make_run(
        RunGeneration.from_dict({"name": "g"}),
        Search.from_dict({"channel": "vector"}),
        [measured(cases[0], ["r", "h"]), measured(cases[1], [])],
    )
    assert run.means["recall"].value == 1 / 2 and run.means["recall"].high == 1 / 2
    assert run.means["MRR"].high_numerator == 1.0
    assert (run.judged.numerator, run.judged.denominator, run.judged.undefined, run.holes) == (
        0.5,
        1,
        1,
        1,
    )


def test_a_finding_the_holes_decide_is_inconclusive():
    cases = [Case(id=f"c{i}", query="q", k=1, relevant={"r": 1.0}) for i in range(8)]
    reference = make_run(
        RunGeneration.from_dict({"name": "ref"}),
        Search.from_dict({"channel": "vector"}),
        [measured(case, ["r"]) for case in cases],
    )
    candidate = make_run(
        RunGeneration.from_dict({"name": "new"}),
        Search.from_dict({"channel": "vector"}),
        [measured(case, [f"h{case.id}"]) for case in cases],
    )
    mrr = compare_pair(reference, candidate).measures["mrr"]
    # worse on the judged rows (8 losses: exact p = 2/256); with 3 of the candidate's holes
    # relevant, 5 losses and 3 ties give p = 2/32 >= 0.05 (2 give 2/64 < 0.05, still worse): 3 of
    # the 8 holes flip it
    assert mrr.test.p_value == 2 / 256
    assert (mrr.finding, mrr.judged, mrr.holes) == ("inconclusive", "worse", 8)
    # a sample of 5 of the 8 holes, none relevant, bounds the relevant ones left at 2 < 3 (95%): it
    # settles it
    assert mrr.settle == Settle(
        flip_count=3,
        plausible=8,
        sample=5,
        command="ptah corpus sample CORPUS 5 -g ref -g new",
    )
    paths = Evidence(corpus_path="c.yaml", spec_path="p/ptah.yaml")
    assert compare_pair(reference, candidate, paths=paths).measures["mrr"].settle.command == (
        "ptah corpus sample c.yaml 5 -g ref -g new --spec p/ptah.yaml"
    )
    against = against_baseline(
        reference, candidate, paths=replace(paths, baseline_path="base.json")
    )["mrr"]
    assert against.settle.command == (
        "ptah corpus sample c.yaml 5 --baseline base.json -g new --spec p/ptah.yaml"
    )
    judged = [
        Case(id=c.id, query="q", k=1, relevant={"r": 1.0}, forbidden=(f"h{c.id}",)) for c in cases
    ]
    settled = make_run(
        RunGeneration.from_dict({"name": "new"}),
        Search.from_dict({"channel": "vector"}),
        [measured(case, [f"h{case.id}"]) for case in judged],
    )
    settled_mrr = compare_pair(reference, settled).measures["mrr"]
    assert (settled_mrr.finding, settled_mrr.judged, settled_mrr.settle) == (
        "worse",
        "worse",
        None,
    )


def low_holes():
    """A relevant key first and two holes at ranks 4 and 5 of a top 5 (x and y judged:
    forbidden)."""
    case = Case(id="c", query="q", k=5, relevant={"a": 1.0}, forbidden=("x", "y"))
    return measured(case, ["a", "x", "y", "h4", "h5"])


def test_the_interval_over_completions_is_min_first_and_need_not_end_at_every_hole_relevant():
    # each hole taken relevant lowers nDCG, the deepest alone the most
    result = low_holes()
    ndcg = Measure.parse("nDCG")
    every = (1 + 1 / math.log2(5) + 1 / math.log2(6)) / (1 + 1 / math.log2(3) + 1 / math.log2(4))
    deepest = (1 + 1 / math.log2(6)) / (1 + 1 / math.log2(3))  # h5 alone: below every hole relevant
    assert deepest < every < 1.0
    low, high = completions(result, ndcg)
    assert (low, high) == (pytest.approx(deepest, abs=1e-12), 1.0)
    assert mean_completions([result, result], ndcg) == (pytest.approx(deepest, abs=1e-12), 1.0)
