"""Slices through the evaluate use case on a real SQLite project: per-slice means, comparisons,
Holm, gates, power."""

from __future__ import annotations

import pytest

from ptah.cli.words import COMMAND_LINE
from ptah.core.compared import Family
from ptah.core.errors import IncomparableBaseline
from ptah.core.significance import holm_adjusted
from ptah.core.slicing import cases_needed
from tests.services.test_channels import built, measured  # noqa: F401 (built: the fixture)

CORPUS = """\
version: 1
default_k: 3
cases:
  - id: cancel
    query: cancel subscription at 10
    required: ["1"]
    relevant: {"1": 2, "6": 1}
    tags: [billing]
  - id: plan
    query: change the plan at 58
    required: ["6"]
    tags: [billing, account]
  - id: password
    query: forgot password link at 20
    required: ["2"]
    tags: [account]
  - id: tokens
    query: developer tokens at 75
    required: ["8"]
    relevant: {"8": 2, "4": 1}
    tags: [account, dev]
"""


def run(workspace, corpus=CORPUS, baseline=None, **options):
    return measured(workspace, corpus, baseline, **options)


def test_each_slice_has_the_means_of_its_own_cases_and_a_one_case_slice_is_listed_not_measured(
    built,
):
    report = run(built, channels=["vector", "lexical"])
    assert {tag: list(entry.cases) for tag, entry in report.corpus.slices.items()} == {
        "account": ["plan", "password", "tokens"],
        "billing": ["cancel", "plan"],
        "dev": ["tokens"],
    }
    for each in report.runs:
        values = {case.id: case.values for case in each.cases}
        for tag, ids in (
            ("account", ["plan", "password", "tokens"]),
            ("billing", ["cancel", "plan"]),
        ):
            means = each.slices[tag].means
            for measure in ("recall", "MRR", "nDCG"):
                key = {"recall": "recall", "MRR": "mrr", "nDCG": "ndcg"}[measure]
                assert means[key].value == pytest.approx(
                    sum(values[i][measure] for i in ids) / len(ids)
                )
                assert means[key].denominator == len(ids)
            assert each.slices[tag].cases == len(ids) and each.slices[tag].judged is not None
        assert each.slices["dev"].to_dict() == {
            "digest": report.corpus.slices["dev"].digest,
            "cases": 1,
            "means": None,
            "judged": None,
        }


def test_a_corpus_without_tags_has_no_slices(built):
    plain = "\n".join(line for line in CORPUS.splitlines() if "tags:" not in line) + "\n"
    report = run(built, plain, channels=["vector", "lexical"])
    assert report.corpus.slices is None and report.runs[0].slices is None
    assert "slices" not in report.corpus.to_dict()
    assert report.comparison.family is None and report.comparison.candidates[0].slices is None
    written = report.comparison.to_dict()
    assert "family" not in written and "slices" not in written["candidates"][0]


def test_the_slice_tests_of_a_comparison_are_one_family_under_holm(built):
    report = run(built, channels=["vector", "lexical", "hybrid"])
    comparison = report.comparison
    entries = [
        measure
        for candidate in comparison.candidates
        for tag in ("account", "billing")
        for measure in candidate.slices[tag].measures.values()
    ]
    p_values = [entry.test.p_value for entry in entries]
    assert [entry.adjusted_p for entry in entries] == holm_adjusted(p_values)
    assert comparison.family == Family(
        correction="holm",
        alpha=comparison.statistics.alpha,
        tests=12,
        surviving=0,
    )
    dev = comparison.candidates[0].slices["dev"]
    assert (dev.comparable, dev.why, dev.measures) == (False, "fewer than 2 cases", None)
    uncorrected = run(built, channels=["vector", "lexical", "hybrid"], correction="none").comparison
    again = [
        measure
        for candidate in uncorrected.candidates
        for tag in ("account", "billing")
        for measure in candidate.slices[tag].measures.values()
    ]
    assert [entry.adjusted_p for entry in again] == [entry.test.p_value for entry in again]
    assert uncorrected.family.correction == "none"


def test_a_slice_gate_judges_the_slices_cases_against_the_same_slice_of_the_baseline(built):
    baseline = run(built, channels=["vector"])
    report = run(
        built,
        baseline=baseline,
        names=["docs"],
        channels=["lexical"],
        baseline_path="b.json",
        thresholds={"recall@account": 0.0, "nDCG@*": 0.5},
    )
    account = [gate for gate in report.gates if gate.name == "max-recall-drop@account"]
    (gate,) = account
    before = baseline.runs[0].slices["account"].means["recall"].value
    now = report.runs[0].slices["account"].means["recall"].value
    assert gate.drop == pytest.approx(before - now) and before - now <= 0
    # it passes on its judged values, but the baseline's holes could make it fail: a pass is
    # questioned too
    assert (gate.passed, gate.inconclusive, gate.holes.direction) == (False, True, "fail")
    assert sorted(g.name for g in report.gates if g.name.startswith("max-ndcg-drop@")) == [
        "max-ndcg-drop@account",
        "max-ndcg-drop@billing",
    ]  # dev holds one case: not gated
    assert gate.power is None  # a threshold of 0: no drop to plan for
    (ndcg,) = [g for g in report.gates if g.name == "max-ndcg-drop@account"]
    assert ndcg.power.cases == 3  # the slice's pairs


def test_a_slice_the_baseline_lacks_or_that_changed_is_refused_by_name(built):
    baseline = run(built, channels=["vector"])
    with pytest.raises(IncomparableBaseline) as missing:
        run(built, baseline=baseline, baseline_path="b.json", thresholds={"recall@security": 0.1})
    assert str(missing.value) == (
        "max_drop=recall@security: no case of the corpus is tagged security (the baseline b.json)"
    )
    assert missing.value.said(COMMAND_LINE) == (
        "--max-drop recall@security: no case of the corpus is tagged security (the baseline b.json)"
    )
    moved = CORPUS.replace(
        "    tags: [account]\n", "    tags: [billing]\n"
    )  # password moves from account to billing
    with pytest.raises(IncomparableBaseline) as changed:
        run(
            built,
            moved,
            baseline=baseline,
            baseline_path="b.json",
            thresholds={"recall@account": 0.1},
        )
    assert changed.value.said(COMMAND_LINE) == (
        "--max-drop recall@account: the baseline's slice account holds other cases (or other "
        "expectations); make a new baseline (the baseline b.json)"
    )
    assert changed.value.exit_code == 2
    report = run(
        built, moved, baseline=baseline, baseline_path="b.json", thresholds={"recall@*": 0.1}
    )
    # both slices of the baseline changed: each fails its gate (dev held 1 case, never gated)
    assert [(gate.name, gate.passed) for gate in report.gates if "@" in gate.name] == [
        ("max-recall-drop@account", False),
        ("max-recall-drop@billing", False),
    ]
    for tag in ("account", "billing"):
        entry = report.comparisons[0].slices[tag]
        assert (entry.comparable, entry.why) == (
            False,
            "the baseline's slice holds other cases (or other expectations)",
        )


def test_renaming_every_tag_never_switches_a_slice_gate_off(built):
    baseline = run(built, channels=["vector"])
    renamed = CORPUS.replace("billing", "payments").replace("account", "profile")
    report = run(
        built, renamed, baseline=baseline, baseline_path="b.json", thresholds={"recall@*": 0.0}
    )
    failed = [gate for gate in report.gates if not gate.passed]
    assert [gate.name for gate in failed] == ["max-recall-drop@account", "max-recall-drop@billing"]
    assert failed[0].detail == (
        "the baseline's slice account held 3 cases: plan, password, tokens; no case of the corpus is tagged account "
        "now, and a slice the baseline holds stays gated: tag those cases as they were, or make a new baseline "
        "(ptah report rebaseline)"
    )
    assert (failed[0].threshold, failed[0].drop, failed[0].power) == (0.0, None, None)
    assert (
        report.passed is False and report.verdict == "fail"
    )  # exit 1, as before the tags were renamed
    again = run(
        built, renamed, baseline=baseline, baseline_path="b.json", thresholds={"recall@*": 0.5}
    )
    assert [gate.name for gate in again.gates if not gate.passed] == [
        "max-recall-drop@account",
        "max-recall-drop@billing",
    ]


def test_a_drop_gate_notes_the_cases_its_threshold_needs(built):
    baseline = run(built, channels=["vector"])
    report = run(
        built,
        baseline=baseline,
        baseline_path="b.json",
        names=["docs"],
        channels=["lexical"],
        thresholds={"nDCG": 0.05},
    )
    (gate,) = [gate for gate in report.gates if gate.name == "max-ndcg-drop"]
    theirs = {case.id: case.values["nDCG"] for case in baseline.runs[0].cases}
    differences = [case.values["nDCG"] - theirs[case.id] for case in report.runs[0].cases]
    needed = cases_needed(differences, 0.05, 0.8, 1 - 0.95)
    assert gate.power.to_dict() == {
        "power": 0.8,
        "alpha": pytest.approx(0.05),
        "cases": 4,
        "needed": needed,
        "underpowered": needed is not None and needed > 4,
    }
    assert gate.to_dict()["power"]["needed"] == needed


def test_the_power_note_reads_a_measure_with_a_depth_in_whole_and_slice_gates(built):
    baseline = run(built, channels=["vector"], measures=["MAP@5"])
    report = run(
        built,
        baseline=baseline,
        baseline_path="b.json",
        names=["docs"],
        channels=["lexical"],
        thresholds={"MAP@5": 0.1, "MAP@5@account": 0.1},
    )
    noted = {gate.name: gate.power.cases for gate in report.gates if gate.power is not None}
    assert noted == {"max-MAP@5-drop": 4, "max-MAP@5-drop@account": 3}
