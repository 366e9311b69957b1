"""A model judge in a drop gate's holes rule: trusted on the person's sample it replaces the
sample's U with its own; below the kappa threshold, or on too small a sample, it is reported and
never changes a verdict."""

from __future__ import annotations

from ptah.core.baseline import Evidence, compare, gates
from ptah.core.calibration import Agreement, ModelJudge
from ptah.core.corpus import Case
from ptah.core.estimate import upper_relevant
from ptah.core.parts import RunGeneration, Search
from ptah.core.report import make_run, measure_case

BY = "model:encoder@sha256:" + "e" * 64
CASES = [Case(id=f"c{i:02}", query="q", k=1, relevant={"r": 1.0}) for i in range(30)]
BEFORE = make_run(
    RunGeneration.from_dict({"name": "old"}),
    Search.from_dict({"channel": "vector"}),
    [measure_case(case, [("r", 0.9)], searched=2) for case in CASES],
)
# now every case ranks an unjudged row first: MRR 1 -> 0, 30 holes; 15 of them taken relevant bring
# MRR back to 0.5
NOW = make_run(
    RunGeneration.from_dict({"name": "new"}),
    Search.from_dict({"channel": "vector"}),
    [measure_case(case, [(f"h{case.id}", 0.9), ("r", 0.8)], searched=2) for case in CASES],
)
HOLES = {(case.id, f"h{case.id}") for case in CASES}
# a person judged 20 of the 50 holes there were when the sample was drawn: 5 relevant
LATEST = {"candidate/1": (50, 20, 5)}  # one stratum: the holes only the new run ranks, first
ALPHA = (1, 40)  # 97.5%, all of it on the one stratum


def mrr_gate(judges=()):
    evidence = Evidence(latest=LATEST, seed=7, index=0, judges=tuple(judges), corpus_path="c.yaml")
    (gate,) = [
        gate
        for gate in gates(NOW, compare(NOW, BEFORE), {"MRR": 0.5}, evidence, BEFORE)
        if gate.name == "max-mrr-drop"
    ]
    return gate


def test_without_a_model_the_sample_leaves_the_gate_inconclusive():
    gate = mrr_gate()
    assert upper_relevant(50, 20, 5, ALPHA) == 17
    assert (gate.passed, gate.inconclusive) == (False, True)
    assert (gate.holes.flip_count, gate.holes.plausible_relevant) == (15, 17)
    assert gate.holes.judges is None
    assert "judges" not in gate.holes.to_dict()


def test_a_trusted_model_that_rejects_every_hole_settles_it():
    # on the sample the model agreed with the person on all 20 (5 relevant, 15 not): kappa 1
    judge = ModelJudge(
        BY,
        Agreement(both=5, model_only=0, person_only=0, neither=15),
        {pair: 0.0 for pair in HOLES},
        None,
        {"requests": 50.0, "server_prompt_tokens": 1234.0},
    )
    gate = mrr_gate([judge])
    # U = the relevant among 30 + 15 rejections of which the 15 sampled held none: at most 6
    assert upper_relevant(45, 15, 0) == 6
    assert (gate.passed, gate.inconclusive) == (False, False)
    assert gate.holes.plausible_relevant == 6
    (entry,) = gate.holes.judges
    assert (entry.name, entry.graded, entry.sampled, entry.kappa, entry.used) == (
        "encoder",
        30,
        20,
        1.0,
        True,
    )
    assert (entry.plausible_relevant, entry.moved, entry.why_not) == (6, -11, None)
    assert entry.cost == {"requests": 50, "server_prompt_tokens": 1234}
    assert (
        "at most 6 plausibly are (bound from a random sample of 20 of 50 holes with 5 relevant; "
        "model judge encoder (kappa 1.00 on 20 sampled holes, TPR 1.00 [0.48, 1.00], TNR 1.00 [0.78, 1.00], 50 "
        "requests and 1,234 prompt tokens) graded 30 "
        "of them and puts it at 6 (-11 from the sample alone))"
    ) in gate.detail


def test_a_trusted_model_that_calls_holes_relevant_counts_them():
    judge = ModelJudge(
        BY,
        Agreement(both=5, model_only=0, person_only=0, neither=15),
        {pair: (1.0 if pair[0] < "c20" else 0.0) for pair in HOLES},
        None,
    )
    gate = mrr_gate([judge])
    assert gate.holes.plausible_relevant == 20 + upper_relevant(25, 15, 0)
    assert (gate.passed, gate.inconclusive) == (False, True)


def test_a_model_below_the_kappa_threshold_never_changes_the_verdict():
    table = Agreement(both=2, model_only=3, person_only=3, neither=12)
    assert round(table.kappa, 12) == 0.2
    judge = ModelJudge(BY, table, {pair: 0.0 for pair in HOLES}, table.trusted())
    gate = mrr_gate([judge])
    assert (gate.passed, gate.inconclusive, gate.holes.plausible_relevant) == (False, True, 17)
    (entry,) = gate.holes.judges
    assert (entry.used, entry.plausible_relevant, entry.moved) == (False, None, None)
    assert entry.why_not == "kappa 0.200 is below 0.6"
    assert "graded 30 of them but may not move it: kappa 0.200 is below 0.6" in gate.detail


def test_a_model_checked_on_19_sampled_holes_never_changes_the_verdict():
    table = Agreement(both=5, model_only=0, person_only=0, neither=14)
    judge = ModelJudge(BY, table, {pair: 0.0 for pair in HOLES}, table.trusted())
    gate = mrr_gate([judge])
    assert (gate.inconclusive, gate.holes.plausible_relevant) == (True, 17)
    assert (
        gate.holes.judges[0].why_not
        == "only 19 sampled holes judged by both (at least 20 are needed)"
    )


def test_with_two_trusted_models_the_larger_u_is_used():
    agreeing = Agreement(both=5, model_only=0, person_only=0, neither=15)
    strict = ModelJudge(BY, agreeing, {pair: 0.0 for pair in HOLES}, None)
    generous = ModelJudge(
        "model:chat@sha256:" + "c" * 64, agreeing, {pair: 1.0 for pair in HOLES}, None
    )
    gate = mrr_gate([strict, generous])
    assert gate.holes.plausible_relevant == 30 and gate.inconclusive
