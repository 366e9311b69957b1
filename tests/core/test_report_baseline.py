"""Report building, baseline comparison and gates: exact values."""

from __future__ import annotations

import math
from dataclasses import replace
from types import MappingProxyType

import numpy as np
import pytest

from ptah.cli.words import COMMAND_LINE
from ptah.core.baseline import check_comparable, check_report_format, compare, gates
from ptah.core.compared import BaselinePassed
from ptah.core.corpus import Case, Corpus
from ptah.core.errors import IncomparableBaseline, InputError, ReportError
from ptah.core.parts import RunGeneration, Search
from ptah.core.ranking import rank_many
from ptah.core.report import CaseResult, Report, Run, make_run, measure_case, ordinal
from ptah.core.report_parts import ReportCorpus
from ptah.core.request import check_thresholds
from tests.core.comparisons import against, paired

KEYS = ["a", "b", "c", "d", "e"]


def outcome(case: Case, scores: list[float]) -> CaseResult:
    [ranking] = rank_many(
        np.array([scores], dtype=np.float32), KEYS, [case.k], [case.expected_keys()], [KEYS]
    )
    return measure_case(
        case, ranking.ranked, searched=1000, rank_of=ranking.ranks.get, ties=ranking.ties
    )


def run_of(outcomes) -> Run:
    return make_run(
        RunGeneration.from_dict({"name": "g", "identity": "sha256:x"}),
        Search.from_dict({"channel": "vector", "mode": "exact"}),
        outcomes,
    )


CASES = [
    Case(id="one", query="q1", k=2, required=("a",), relevant={"a": 1.0}),
    Case(
        id="two", query="q2", k=2, required=("c",), relevant={"c": 2.0, "d": 1.0}, forbidden=("b",)
    ),
    Case(id="three", query="q3", k=3, relevant={"e": 1.0}),
]
SCORES = [
    [0.9, 0.8, 0.1, 0.0, 0.0],  # a first: pass
    [0.1, 0.9, 0.5, 0.6, 0.0],  # b (forbidden) first, d second, c third: missed + leaked
    [0.5, 0.5, 0.5, 0.1, 0.5],  # a, b, c, e all tied at 0.5; key order puts e 4th, outside k=3
]


@pytest.fixture
def outcomes():
    return [outcome(c, s) for c, s in zip(CASES, SCORES)]


def test_case_outcomes_exact(outcomes):
    one, two, three = outcomes
    assert [(r.key, r.score) for r in one.ranking] == [
        ("a", pytest.approx(0.9)),
        ("b", pytest.approx(0.8)),
    ]
    assert (one.values["recall"], one.values["MRR"], one.values["nDCG"]) == (1.0, 1.0, 1.0)
    assert one.passed
    # two: top 2 = b, d. recall = 1/2 (d of c,d); rr = 1/2; ndcg = (1/log2(3)) / (2/log2(2) +
    # 1/log2(3))
    assert two.values["recall"] == 0.5
    assert two.values["MRR"] == 0.5
    assert two.values["nDCG"] == pytest.approx(
        (1 / math.log2(3)) / (2 / math.log2(2) + 1 / math.log2(3)), abs=1e-12
    )
    assert [(p.key, p.rank) for p in two.missed] == [("c", 3)]
    assert [(p.key, p.rank) for p in two.hits] == [("b", 1)]
    assert not two.passed
    # three: a, b, c, e all score 0.5; key order fills k=3 with a, b, c and leaves e (the relevant
    # key) outside
    assert list(three.keys) == ["a", "b", "c"]
    assert (
        three.values["recall"] == 0.0 and three.values["MRR"] == 0.0 and three.values["nDCG"] == 0.0
    )
    assert three.ties.straddles_cutoff and three.ties.tied_outside == 1
    assert three.ties.expected_tied == ("e",)


def test_aggregates_carry_denominators(outcomes):
    result = run_of(outcomes).to_dict()["aggregates"]
    # high: one's hole b counts (2/2), two's top 2 is judged (1/2), three's holes a, b, c join e
    # (3/4)
    assert result["recall"] == {
        "value": (1.0 + 0.5 + 0.0) / 3,
        "numerator": 1.5,
        "denominator": 3,
        "undefined": 0,
        "high": (1.0 + 0.5 + 0.75) / 3,
        "high_numerator": 2.25,
    }
    assert result["judged"] == {
        "value": (0.5 + 1.0 + 0.0) / 3,
        "numerator": 1.5,
        "denominator": 3,
        "undefined": 0,
        "holes": 4,
    }
    assert result["mrr"]["value"] == (1.0 + 0.5 + 0.0) / 3
    assert result["required"] == {"cases": 2, "failed": 1, "keys_missed": 1}
    assert result["forbidden"] == {"cases": 1, "leaking": 1, "hits": 1, "rate": 1.0}
    assert result["ties"] == {"cases_flagged": 1}  # only three: its tie at 0.5 straddles the cutoff
    assert result["cases"] == 3


def test_empty_forbidden_rate_is_na():
    result = run_of([outcome(CASES[0], SCORES[0])]).to_dict()["aggregates"]
    assert result["forbidden"] == {"cases": 0, "leaking": 0, "hits": 0, "rate": None}


def test_ordinals():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111, 112)] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "11th",
        "12th",
        "13th",
        "21st",
        "22nd",
        "23rd",
        "101st",
        "111th",
        "112th",
    ]


def make_report(outcomes, *, digest_corpus=None) -> Report:
    corpus = digest_corpus or Corpus(cases=tuple(CASES), name="t", path="c.yaml")
    run = run_of(outcomes)
    return Report(
        created_at="now",
        corpus=ReportCorpus.from_dict(
            {
                "path": corpus.path,
                "name": corpus.name,
                "digest": corpus.digest,
                "cases": len(corpus.cases),
            }
        ),
        runs=(run,),
        gates=tuple(gates(run, None, {})),
        timings={},
        environment={},
    )


def test_report_case_entries(outcomes):
    report = make_report(outcomes).to_dict()
    two = report["runs"][0]["cases"][1]
    assert two["required"]["missed"] == [{"key": "c", "rank": 3, "where": "ranked 3rd"}]
    assert two["forbidden"]["hits"] == [{"key": "b", "rank": 1}]
    assert two["passed"] is False
    assert report["verdict"] == "fail"
    assert [g["passed"] for g in report["gates"]] == [False, False]


def test_comparison_and_drop_gates(outcomes):
    baseline = make_report(outcomes)
    better = [
        outcome(CASES[0], SCORES[0]),
        outcome(CASES[1], [0.1, 0.0, 0.9, 0.8, 0.0]),
        outcome(CASES[2], SCORES[2]),
    ]
    current = make_report(better)
    comparison = compare(current.runs[0], baseline.runs[0])
    # current_high: one's hole b relevant (1), two's top 2 judged (1), three's holes a, b, c
    # relevant (3/4)
    assert comparison.aggregates["recall"].to_dict() == {
        "baseline": 0.5,
        "current": 2 / 3,
        "delta": 2 / 3 - 0.5,
        "current_high": (1 + 1 + 0.75) / 3,
    }
    assert [c.id for c in comparison.cases_changed] == ["two"]
    assert comparison.cases_changed[0].passed == BaselinePassed(baseline=False, current=True)
    # worse: current is the old one compared against the better baseline
    worse = compare(baseline.runs[0], current.runs[0])
    verdicts = gates(
        baseline.runs[0], worse, {"recall": 0.0, "nDCG": 1.0}, baseline_run=current.runs[0]
    )
    assert [(g.name, g.passed, g.inconclusive) for g in verdicts] == [
        ("required", False, False),
        ("forbidden", False, False),
        ("max-recall-drop", False, False),
        ("max-ndcg-drop", True, False),
    ]
    assert verdicts[2].drop == pytest.approx(2 / 3 - 0.5, abs=1e-15)
    # the old run's recall is 0.5 on its judged keys and 0.75 if its holes are relevant: 2/3 - 0.75
    # < 0
    assert verdicts[2].drop_high == pytest.approx(2 / 3 - 0.75, abs=1e-15)
    # but both runs rank one's and three's holes alike, and two is judged: whatever the holes hold,
    # both runs move together, so no set of them makes the gate pass (the one-sided rule called it
    # inconclusive)
    assert verdicts[2].detail.startswith(
        "recall 0.6667 -> 0.5000 (dropped 0.1667; a drop of 0.0000 is allowed); none of the 4 unjudged rows of "
        "either run could make it pass"
    )
    holes = verdicts[2].holes
    assert (holes.holes, holes.flip_count, holes.direction, holes.inconclusive) == (
        4,
        None,
        "pass",
        False,
    )
    assert holes.estimate.interval == (pytest.approx(1 / 6, abs=1e-12),) * 2


def test_a_drop_of_exactly_the_threshold_passes_and_na_fails():
    run = run_of([outcome(CASES[0], SCORES[0])])
    comparison = against({"recall": (0.8, 0.78), "mrr": (None, 0.5)})
    result = gates(run, comparison, {"recall": 0.02, "MRR": 0.5})
    assert [(g.name, g.passed) for g in result] == [
        ("required", True),
        ("forbidden", True),
        ("max-recall-drop", True),
        ("max-mrr-drop", False),
    ]


def test_a_gate_the_paired_test_disagrees_with_says_the_threshold_decides():
    run = run_of([outcome(CASES[0], SCORES[0])])
    unclear = paired("no clear difference", 0.3125)
    worse = paired("worse", 0.0039)
    dropped = against({"recall": (0.88, 0.76)}, {"recall": unclear})
    (failed,) = gates(run, dropped, {"recall": 0.02})[2:]
    assert failed.detail == (
        "recall 0.8800 -> 0.7600 (dropped 0.1200; a drop of 0.0200 is allowed); the gate decides: a drop of 0.1200 "
        "is more than the 0.0200 allowed; the paired test alone finds no clear difference (p = 0.3125)"
    )
    within = against({"recall": (0.88, 0.87)}, {"recall": worse})
    (passed,) = gates(run, within, {"recall": 0.02})[2:]
    assert passed.detail == (
        "recall 0.8800 -> 0.8700 (dropped 0.0100; a drop of 0.0200 is allowed); the gate decides: a drop of 0.0100 "
        "is within the 0.0200 allowed, though the paired test finds the run worse (p = 0.0039): a real drop no "
        "larger than the allowance"
    )
    agreeing = replace(dropped, significance={"recall": worse})
    assert gates(run, agreeing, {"recall": 0.02})[2].detail == (
        "recall 0.8800 -> 0.7600 (dropped 0.1200; a drop of 0.0200 is allowed)"
    )


def test_comparability_names_both_digests_and_the_real_corpus(outcomes):
    # a changed query is more than judgements: refused, naming both digests and the corpus's own
    # path
    baseline = make_report(outcomes)
    asked = Corpus(
        cases=(replace(CASES[0], query="q1 again"), *CASES[1:]), name="t", path="corpora/c.yaml"
    )
    with pytest.raises(IncomparableBaseline) as info:
        check_comparable(asked, baseline, "base.json")
    assert info.value.said(COMMAND_LINE) == (
        f"the baseline base.json measured a different corpus (digest {baseline.corpus.digest}); this corpus is "
        f'{asked.digest}, and they differ in more than judgements: case "one" asks another query now. Measure its runs '
        "again on this corpus with `ptah report rebaseline base.json --corpus corpora/c.yaml --output NEW.json`, or "
        "evaluate the corpus it was made with."
    )
    assert str(info.value) == (
        f"the baseline base.json measured a different corpus (digest {baseline.corpus.digest}); "
        f'this corpus is {asked.digest}, and they differ in more than judgements: case "one" asks '
        "another query now. Measure its runs again on this corpus, or evaluate the corpus it was "
        "made with."
    )
    deeper = Corpus(cases=(*CASES[:2], replace(CASES[2], k=4)), path="c.yaml")
    with pytest.raises(
        IncomparableBaseline, match='case "three" looked 3 deep and looks 4 deep now'
    ):
        check_comparable(deeper, baseline, "base.json")
    fewer = Corpus(cases=tuple(CASES[:2]), path="c.yaml")
    with pytest.raises(IncomparableBaseline, match='its case "three" is not in the corpus'):
        check_comparable(fewer, baseline, "base.json")
    # the same digest, or the same cases with other judgements (a grade added): comparable
    check_comparable(Corpus(cases=tuple(CASES)), baseline, "base.json")
    judged = Corpus(cases=(*CASES[:2], replace(CASES[2], relevant={"e": 1.0, "a": 1.0})))
    assert judged.digest != baseline.corpus.digest
    check_comparable(judged, baseline, "base.json")


def test_thresholds_are_checked():
    assert check_thresholds({"recall": 0.02, "mrr": None, "map@10": 0.1}, True) == {
        "recall": 0.02,
        "MAP@10": 0.1,
    }
    with pytest.raises(InputError, match="between 0 and 1"):
        check_thresholds({"recall": 1.5}, True)
    with pytest.raises(InputError, match="needs a baseline report"):
        check_thresholds({"recall": 0.0}, False)
    with pytest.raises(InputError, match="unknown measure 'BM25'"):
        check_thresholds({"BM25": 0.0}, True)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "b.json: not a ptah report (the top level is not a JSON object)"),
        (
            {"format": "other"},
            "b.json: format is 'other', not 'ptah-report@1' or 'ptah-report@2'; pass a report that ptah wrote",
        ),
    ],
)
def test_what_is_not_a_ptah_report_is_refused_before_its_schema(document, message):
    """The shape of a report ptah can read is the schema's (tests/hostile/test_baselines.py names
    each field)."""
    with pytest.raises(ReportError) as info:
        check_report_format(document, "b.json")
    assert str(info.value) == message
