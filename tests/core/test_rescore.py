"""A baseline measured again from its stored rankings (ptah.core.baseline): exact values."""

from __future__ import annotations

import math
from dataclasses import replace
from types import MappingProxyType

import numpy as np

from ptah.core.baseline import required_gate, rescore
from ptah.core.corpus import Case, Corpus
from ptah.core.judged import Judgement, JudgementRecord
from ptah.core.measures import Measure
from ptah.core.parts import RunGeneration, Search
from ptah.core.ranking import rank_many
from ptah.core.report import KnownMiss, Report, make_run, measure_case, ranking_depth
from ptah.core.report_parts import ReportCorpus

KEYS = ["a", "b", "c", "d", "e"]
CASES = (
    Case(id="one", query="q1", k=2, required=("a",), relevant={"a": 1.0}),
    Case(
        id="two", query="q2", k=2, required=("c",), relevant={"c": 2.0, "d": 1.0}, forbidden=("b",)
    ),
    Case(id="three", query="q3", k=3, relevant={"e": 1.0}),
)
SCORES = (
    [0.9, 0.8, 0.1, 0.0, 0.0],  # a, b
    [0.1, 0.9, 0.5, 0.6, 0.0],  # b, d (c 3rd: missed)
    [0.5, 0.4, 0.3, 0.1, 0.0],  # a, b, c (e 5th)
)


def baseline(cases=CASES, measures=(Measure("recall"), Measure("MRR"), Measure("nDCG"))) -> Report:
    """A report ptah would write of ``cases`` ranked by SCORES."""
    results = []
    for case, scores in zip(cases, SCORES):
        [ranking] = rank_many(
            np.array([scores], dtype=np.float32),
            KEYS,
            [case.k],
            [case.expected_keys()],
            [KEYS],
            reach=[ranking_depth(case, measures)],
        )
        results.append(
            measure_case(
                case,
                ranking.ranked,
                measures=measures,
                searched=5,
                rank_of=ranking.ranks.get,
                ties=ranking.ties,
            )
        )
    run = make_run(
        RunGeneration.from_dict({"name": "g", "identity": "sha256:x"}),
        Search.from_dict({"channel": "vector", "mode": "exact"}),
        results,
        measures,
    )
    corpus = Corpus(cases=tuple(cases))
    return Report(
        created_at="now",
        corpus=ReportCorpus.from_dict(
            {"path": "c.yaml", "name": None, "digest": corpus.digest, "cases": len(cases)}
        ),
        runs=(run,),
        gates=(),
        timings={},
        environment={},
    )


def test_an_honest_baseline_rescores_to_itself():
    old = baseline()
    again = rescore(Corpus(cases=CASES), old)
    assert again.report.runs == old.runs
    assert (again.added, again.changed, again.cases_changed, again.judged_since, again.entry()) == (
        0,
        0,
        0,
        False,
        None,
    )


def test_a_grade_added_since_rescores_the_stored_ranking():
    old = baseline()
    judged = Corpus(cases=(*CASES[:2], replace(CASES[2], relevant={"e": 1.0, "a": 1.0})))
    again = rescore(judged, old)
    three = again.report.runs[0].cases[2]
    assert three.keys == ("a", "b", "c")  # the stored ranking, not a new one
    assert dict(three.values) == {"recall": 0.5, "MRR": 1.0, "nDCG": 1 / (1 + 1 / math.log2(3))}
    assert [hole.key for hole in three.holes] == ["b", "c"] and three.judged == 1 / 3
    assert dict(old.runs[0].cases[2].values) == {"recall": 0.0, "MRR": 0.0, "nDCG": 0.0}
    assert again.report.runs[0].means["recall"].value == (1.0 + 0.5 + 0.5) / 3
    assert again.report.corpus.digest == judged.digest and again.measured == old.corpus.digest
    assert again.entry().to_dict() == {
        "judgements_added": 1,
        "judgements_changed": 0,
        "cases_changed": 1,
        "judged_since": True,
    }


def test_a_zero_in_the_record_fills_a_hole_without_changing_the_digest():
    record = JudgementRecord(cases={"three": {"b": Judgement(0.0, "sha", "2026-01-01T00:00:00Z")}})
    again = rescore(Corpus(cases=CASES).with_judgements(record), baseline())
    three = again.report.runs[0].cases[2]
    assert [hole.key for hole in three.holes] == ["a", "c"] and three.judged == 1 / 3
    assert again.entry().to_dict() == {
        "judgements_added": 1,
        "judgements_changed": 0,
        "cases_changed": 0,
        "judged_since": True,
    }


def test_forged_values_never_survive():
    old = baseline()
    one = old.runs[0].cases[0]
    forged = replace(
        one, values=MappingProxyType({"recall": 0.0, "MRR": 0.0, "nDCG": 0.0}), passed=False
    )
    run = make_run(
        old.runs[0].generation,
        Search.from_dict({"channel": "vector", "mode": "exact"}),
        [forged, *old.runs[0].cases[1:]],
        old.runs[0].measures,
    )
    lowered = replace(old, runs=(run,))
    assert lowered.runs[0].means["recall"].value == (0.0 + 0.5 + 0.0) / 3
    again = rescore(Corpus(cases=CASES), lowered)
    assert dict(again.report.runs[0].cases[0].values) == {"recall": 1.0, "MRR": 1.0, "nDCG": 1.0}
    assert again.report.runs[0].cases[0].passed is True
    assert again.report.runs[0].means["recall"].value == (1.0 + 0.5 + 0.0) / 3
    assert again.entry().to_dict() == {
        "judgements_added": 0,
        "judgements_changed": 0,
        "cases_changed": 1,
        "judged_since": False,
    }


def test_a_measure_deeper_than_the_kept_ranking_is_never_lowered_below_the_kept_rows():
    measures = (Measure("recall"), Measure("P", 4))
    old = baseline(measures=measures)
    two = old.runs[0].cases[1]
    assert (
        two.keys == ("b", "d") and two.values["P@4"] == 0.5
    )  # measured on b, d, c, a; the file keeps b, d
    assert (
        rescore(Corpus(cases=CASES), old).report.runs[0].cases[1].values["P@4"] == 0.5
    )  # the rows below are lost
    lowered = replace(two, values=MappingProxyType({"recall": 0.5, "P@4": 0.0}))
    run = make_run(
        old.runs[0].generation,
        Search.from_dict({"channel": "vector"}),
        [old.runs[0].cases[0], lowered, old.runs[0].cases[2]],
        measures,
    )
    again = rescore(Corpus(cases=CASES), replace(old, runs=(run,)))
    assert (
        again.report.runs[0].cases[1].values["P@4"] == 0.25
    )  # d relevant in the kept top 2: 1 of 4


def test_a_known_miss_keeps_both_ranks_and_a_new_one_fails():
    required = (replace(CASES[0], required=("a", "c")), *CASES[1:])
    reference = rescore(Corpus(cases=required), baseline()).report.runs[
        0
    ]  # c newly required: not in its top 2
    now = baseline(required).runs[0]
    gate = required_gate(now, reference)
    assert (gate.passed, gate.known_misses) == (
        True,
        (
            KnownMiss("one", "c", None, "not in the top 2", 3, "ranked 3rd"),
            KnownMiss("two", "c", 3, "ranked 3rd", 3, "ranked 3rd"),
        ),
    )
    assert gate.detail == (
        '0 of 2 cases missed a required key the baseline found; 2 known misses, which the baseline missed too: "c" of '
        'case "one" (baseline: not in the top 2; now: ranked 3rd); "c" of case "two" (baseline: ranked 3rd; now: '
        "ranked 3rd)"
    )
    first = rescore(Corpus(cases=CASES), baseline()).report.runs[
        0
    ]  # one did not require c: its miss is new
    assert (required_gate(now, first).passed, len(required_gate(now, first).known_misses)) == (
        False,
        1,
    )
    assert (
        required_gate(now).detail == "2 of 2 cases missed a required key"
    )  # without a baseline, as before
