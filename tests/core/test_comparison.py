"""The comparison section built from two hand-written runs: counts, flips, intervals, tests,
findings."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from ptah.core.compared import Interval
from ptah.core.comparison import (
    StatisticsSettings,
    against_baseline,
    case_deltas,
    compare_pair,
    compare_runs,
)
from ptah.core.errors import InputError
from ptah.core.measures import mean_of
from ptah.core.parts import RunGeneration, Search
from ptah.core.report import CaseResult, CaseTies, Run
from ptah.core.side_by_side import Flipped, PairPassed, PairValue
from ptah.core.significance import paired_bootstrap, sign_flip_test


def case(case_id, recall, mrr, ndcg, passed=True):
    return CaseResult(
        id=case_id,
        query="q",
        k=1,
        ranking=(),
        values=MappingProxyType({"recall": recall, "MRR": mrr, "nDCG": ndcg}),
        passed=passed,
        required=(),
        missed=(),
        relevant=(),
        forbidden=(),
        hits=(),
        ties=CaseTies(False, None, 0, ()),
    )


def run(name, cases, channel="vector"):
    return Run(
        generation=RunGeneration.from_dict({"name": name}),
        search=Search.from_dict({"channel": channel}),
        cases=tuple(cases),
        means={m: mean_of(c.values[m] for c in cases) for m in ("recall", "MRR", "nDCG")},
        required={},
        forbidden={},
        ties={},
    )


REFERENCE = run(
    "old",
    [
        case("a", 1.0, 1.0, 1.0),
        case("b", 0.5, 1.0, 0.7),
        case("c", 1.0, 0.5, 0.6),
        case("d", 0.0, 0.0, 0.0, False),
    ],
)
CANDIDATE = run(
    "new",
    [
        case("a", 1.0, 1.0, 1.0),
        case("b", 0.0, 0.0, 0.0, False),
        case("c", 1.0, 1.0, 0.9),
        case("d", 1.0, 1.0, 1.0),
    ],
)


def test_counts_deltas_and_statistics_per_measure():
    settings = StatisticsSettings(resamples=2_000, seed=4)
    result = compare_pair(REFERENCE, CANDIDATE, settings)
    assert result.run == "new" and result.channel == "vector"
    recall = result.measures["recall"]
    assert (
        recall.wins,
        recall.ties,
        recall.losses,
        recall.cases,
        recall.undefined,
    ) == (1, 2, 1, 4, 0)
    assert recall.reference == 2.5 / 4 and recall.candidate == 3 / 4
    assert recall.delta == 3 / 4 - 2.5 / 4
    differences = [0.0, -0.5, 0.0, 1.0]
    interval = paired_bootstrap(differences, 2_000, 4)
    assert recall.interval == Interval(interval.low, interval.high, 0.95)
    assert recall.test == sign_flip_test(differences, 2_000, 4)
    # two non-zero differences (-0.5, +1): patterns +-0.5 +-1 -> |sums| 0.5, 1.5, 1.5, 0.5 >= 0.5: p
    # = 1
    assert recall.test.p_value == 1.0
    assert recall.finding == "no clear difference"
    ndcg = result.measures["ndcg"]
    assert (ndcg.wins, ndcg.ties, ndcg.losses) == (2, 1, 1)


def test_changed_cases_list_flips_first_then_corpus_order():
    result = compare_pair(REFERENCE, CANDIDATE)
    assert [(c.id, c.flipped) for c in result.cases_changed] == [
        ("b", True),
        ("d", True),
        ("c", False),
    ]
    assert result.flipped == Flipped(now_failing=1, now_passing=1)
    b = result.cases_changed[0]
    assert b.passed == PairPassed(reference=True, candidate=False)
    assert b.metrics["ndcg"] == PairValue(reference=0.7, candidate=0.0, delta=-0.7)
    assert b.to_dict() == {
        "id": "b",
        "passed": {"reference": True, "candidate": False},
        "flipped": True,
        "metrics": {
            "recall": {"reference": 0.5, "candidate": 0.0, "delta": -0.5},
            "mrr": {"reference": 1.0, "candidate": 0.0, "delta": -1.0},
            "ndcg": {"reference": 0.7, "candidate": 0.0, "delta": -0.7},
        },
    }


def test_a_consistent_difference_is_called_better_or_worse():
    better = run("better", [case(str(i), 1.0, 1.0, 1.0) for i in range(8)])
    worse = run("worse", [case(str(i), 0.5, 0.5, 0.5) for i in range(8)])
    # 8 non-zero differences of one sign: p = 2 / 256
    result = compare_pair(worse, better)
    assert result.measures["ndcg"].test.p_value == 2 / 256
    assert result.measures["ndcg"].finding == "better"
    assert compare_pair(better, worse).measures["ndcg"].finding == "worse"
    assert compare_pair(better, better).measures["ndcg"].finding == "no clear difference"


def test_undefined_cases_are_left_out_of_the_pairs():
    left = run("l", [case("a", None, None, None), case("b", 1.0, 1.0, 1.0)])
    right = run("r", [case("a", None, None, None), case("b", 0.0, 0.0, 0.0)])
    measure = compare_pair(left, right).measures["mrr"]
    assert (measure.cases, measure.undefined, measure.losses) == (1, 1, 1)
    nothing = compare_pair(
        run("x", [case("a", None, None, None)]), run("y", [case("a", None, None, None)])
    )
    assert nothing.measures["recall"].interval is None and nothing.measures["recall"].test is None
    assert nothing.measures["recall"].delta is None


def test_the_section_names_its_reference_and_records_how_it_was_drawn():
    assert compare_runs([REFERENCE]) is None
    section = compare_runs(
        [REFERENCE, CANDIDATE, REFERENCE], StatisticsSettings(resamples=500, seed=9)
    )
    assert section.reference == "old"
    assert [c.run for c in section.candidates] == ["new", "old"]
    assert section.statistics.seed == 9
    assert section.statistics.bootstrap.resamples == 500
    assert section.statistics.permutation.exact_limit == 20
    assert section.to_dict()["statistics"] == StatisticsSettings(resamples=500, seed=9).as_dict()
    assert case_deltas(REFERENCE, CANDIDATE, "recall") == [
        ("a", 0.0),
        ("b", -0.5),
        ("c", 0.0),
        ("d", 1.0),
    ]


def test_bad_settings_are_usage_errors():
    with pytest.raises(
        InputError, match=r"bootstrap: must be a whole number from 1 to 1,000,000, not 0\."
    ):
        StatisticsSettings(resamples=0)
    with pytest.raises(InputError, match=r"seed: must be a whole number of at least 0, not -1\."):
        StatisticsSettings(seed=-1)


def test_against_a_baseline_report_pairs_by_case_id():
    # a damaged baseline never gets this far: it is refused when read
    # (tests/hostile/test_baselines.py)
    measures = against_baseline(REFERENCE, CANDIDATE, StatisticsSettings(resamples=100))
    assert (
        measures == compare_pair(REFERENCE, CANDIDATE, StatisticsSettings(resamples=100)).measures
    )
    assert list(measures) == ["recall", "mrr", "ndcg"]
