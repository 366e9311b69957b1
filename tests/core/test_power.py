"""Power planning: the paired normal approximation, worked by hand, read from reports, and checked
against a simulation of the sign-flip test and bootstrap interval a comparison uses."""

from __future__ import annotations

import copy
import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest

from ptah.adapters.corpus_yaml import load_corpus
from ptah.core.report import Report
from ptah.core.significance import paired_bootstrap, sign_flip_test
from ptah.core.slicing import (
    INDEPENDENT,
    PAIRED,
    cases_for_spread,
    cases_needed,
    fewest_cases,
    plan,
    report_sample,
)

REPO = Path(__file__).resolve().parents[2]
CORPUS = load_corpus(REPO / "corpora" / "support.yaml")
BASELINE = json.loads((REPO / "examples" / "support" / "baseline.json").read_text())
Z = 1.959964 + 0.841621  # z(0.975) + z(0.8), from a normal table


def test_cases_needed_worked_by_hand():
    # differences 0, 1, 0, -1, 0.5: mean 0.1, squared deviations 0.01 + 0.81 + 0.01 + 1.21 + 0.16 =
    # 2.2, s = sqrt(2.2 / 4) = 0.741620; n = (2.801585 x 0.741620 / 0.1)^2 = 20.7771^2 = 431.69 ->
    # 432
    assert math.ceil((Z * math.sqrt(2.2 / 4) / 0.1) ** 2) == 432
    assert cases_needed([0, 1, 0, -1, 0.5], 0.1, 0.8, 0.05) == 432
    # s = 0.1, a change of 0.03: (2.801585 x 0.1 / 0.03)^2 = 87.21 -> 88; halving the change
    # quadruples it
    assert cases_for_spread(0.1, 0.03, 0.8, 0.05) == 88
    assert cases_for_spread(0.1, 0.015, 0.8, 0.05) == 349  # 348.84
    # a stricter alpha and a higher power need more: (2.575829 + 1.281552) x 0.1 / 0.03 = 12.858^2 =
    # 165.33
    assert cases_for_spread(0.1, 0.03, 0.9, 0.01) == 166


def test_it_cannot_say_without_two_differences_or_any_spread():
    assert cases_needed([], 0.02, 0.8, 0.05) is None
    assert cases_needed([0.3], 0.02, 0.8, 0.05) is None
    assert cases_needed([0.1, 0.1, 0.1], 0.02, 0.8, 0.05) is None


def test_never_fewer_cases_than_the_sign_flip_test_needs_to_reach_alpha():
    # the smallest exact two-sided p over n differences is 2 / 2^n: 2/32 = 0.0625 >= 0.05, 2/64 =
    # 0.03125 < 0.05
    assert (
        fewest_cases(0.05) == 6 and fewest_cases(0.01) == 8
    )  # 2/128 = 0.0156 >= 0.01, 2/256 < 0.01
    assert cases_needed([0.001, -0.001], 0.5, 0.8, 0.05) == 6


@pytest.mark.parametrize(
    "delta, power, alpha",
    [
        (0, 0.8, 0.05),
        (1.5, 0.8, 0.05),
        (-0.1, 0.8, 0.05),
        (0.02, 1, 0.05),
        (0.02, 0, 0.05),
        (0.02, 0.8, 1),
        (0.02, 0.8, 0),
        (True, 0.8, 0.05),
        (math.nan, 0.8, 0.05),
        (1e-300, 0.8, 0.05),
        (0.02, 0.8, 1e-300),
        (0.02, 1 - 1e-17, 0.05),
    ],
)
def test_settings_out_of_range_are_refused(delta, power, alpha):
    with pytest.raises(ValueError):
        cases_needed([0.1, 0.2], delta, power, alpha)


def simulated_power(draw, n: int, corpora: int = 200, resamples: int = 400) -> tuple[float, float]:
    """The share of ``corpora`` simulated corpora of ``n`` paired differences in which the sign-flip
    test finds the candidate better (p < 0.05, positive mean) and in which the 95% bootstrap
    interval lies above 0."""
    rng = np.random.default_rng(2026)
    by_test = by_interval = 0
    for index in range(corpora):
        differences = draw(rng, n).tolist()
        test = sign_flip_test(differences, resamples=resamples, seed=index)
        by_test += test.p_value < 0.05 and math.fsum(differences) > 0
        by_interval += (
            paired_bootstrap(differences, resamples=resamples, seed=index, level=0.95).low > 0
        )
    return by_test / corpora, by_interval / corpora


@pytest.mark.parametrize(
    "draw, spread, delta, n, powers",
    [
        # differences ~ Normal(mean 0.03, sd 0.1): the plan says 88 cases for power 0.8
        pytest.param(
            lambda rng, size: rng.normal(0.03, 0.1, size), 0.1, 0.03, 88, (0.785, 0.82), id="smooth"
        ),
        # recall@k on single-key cases moves by -1, 0 or +1: P(+1) = 0.25, P(-1) = 0.15 -> mean 0.1,
        # variance 0.4 - 0.1^2 = 0.39, sd 0.6245; (2.801585 x 0.6245 / 0.1)^2 = 306.1 -> 307, most
        # differences 0
        pytest.param(
            lambda rng, size: rng.choice([1.0, 0.0, -1.0], size, p=[0.25, 0.6, 0.15]),
            math.sqrt(0.4 - 0.1**2),
            0.1,
            307,
            (0.79, 0.81),
            id="hit-or-miss",
        ),
    ],
)
def test_the_planned_count_gives_the_planned_power_in_a_simulation(draw, spread, delta, n, powers):
    assert cases_for_spread(spread, delta, 0.8, 0.05) == n
    by_test, by_interval = simulated_power(draw, n)
    assert (by_test, by_interval) == powers
    assert abs(by_test - 0.8) <= 0.08 and abs(by_interval - 0.8) <= 0.08


def ndcg_values(document: dict, run: int = 0) -> dict[str, float]:
    return {case["id"]: case["metrics"]["ndcg"] for case in document["runs"][run]["cases"]}


def test_a_single_run_has_no_pairs_and_plans_as_for_two_independent_runs():
    sample = report_sample(Report.from_dict(BASELINE), "nDCG")
    assert (sample.measure, sample.basis) == ("nDCG", INDEPENDENT)
    assert sample.source.startswith(
        "title-body alone has no pairs, so the spread is sqrt(2) x its per-case values'"
    )
    values = ndcg_values(BASELINE)
    found = plan(CORPUS, sample, 0.1, 0.8, 0.05)
    spread = math.sqrt(2) * statistics.stdev(values.values())
    assert (found.overall.tag, found.overall.cases, found.overall.spread) == (None, 25, spread)
    assert (
        found.overall.needed == math.ceil((Z * spread / 0.1) ** 2) == 27
        and found.overall.underpowered
    )
    assert found.overall.digest == CORPUS.digest
    slices = {entry.tag: entry for entry in found.slices}
    billing = [
        values[case] for case in ("pricing", "stop-paying", "plan-refund", "bookkeeper-seat")
    ]
    assert slices["billing"].spread == math.sqrt(2) * statistics.stdev(billing)
    assert (slices["billing"].cases, slices["billing"].needed) == (
        4,
        math.ceil((Z * slices["billing"].spread / 0.1) ** 2),
    )
    assert (slices["taxes"].cases, slices["taxes"].spread, slices["taxes"].needed) == (
        1,
        None,
        None,
    )  # one case
    assert (slices["mobile"].cases, slices["mobile"].spread, slices["mobile"].needed) == (
        2,
        0.0,
        None,
    )  # both 1.0
    assert not slices["taxes"].underpowered


def two_runs() -> dict:
    """The baseline with a second and a third run: each case's nDCG lowered by a tenth of its
    position (second) or a twentieth (third), so the second run's differences spread more."""
    document = copy.deepcopy(BASELINE)
    for name, step in (("lower", 0.1), ("slightly-lower", 0.05)):
        run = copy.deepcopy(BASELINE["runs"][0])
        run["generation"]["name"] = name
        for index, case in enumerate(run["cases"]):
            case["metrics"]["ndcg"] -= step * (index % 3)
        document["runs"].append(run)
    return document


def test_runs_side_by_side_pair_each_later_run_with_the_first_and_plan_for_the_widest_spread():
    sample = report_sample(Report.from_dict(two_runs()), "ndcg")
    assert (sample.basis, sample.source) == (
        PAIRED,
        "paired differences of lower, slightly-lower against title-body",
    )
    values = list(ndcg_values(BASELINE).values())
    widest = statistics.stdev(
        [(value - 0.1 * (index % 3)) - value for index, value in enumerate(values)]
    )
    found = plan(CORPUS, sample, 0.05, 0.8, 0.05)
    assert (found.overall.cases, found.overall.spread) == (25, widest)
    assert (
        found.overall.needed == math.ceil((Z * widest / 0.05) ** 2) == 23
    )  # s = 0.084063: (2.801585 x 0.084063 / 0.05)^2 = 22.19 -> 23
    assert found.as_dict()["corpus"] == {
        "tag": None,
        "digest": CORPUS.digest,
        "cases": 25,
        "spread": widest,
        "needed": 23,
        "underpowered": False,
    }


def test_one_run_against_a_baseline_pairs_with_the_baseline_s_reference_run():
    document = copy.deepcopy(BASELINE)
    before = ndcg_values(BASELINE)
    moved = {"pricing": -0.5, "forgot-password": 0.25}
    document["baseline"] = {
        "path": "old.json",
        "digest": BASELINE["corpus"]["digest"],
        "comparisons": [
            {
                "generation": "shipped",
                "aggregates": {"ndcg": {"baseline": 0.9, "current": 0.9, "delta": 0.0}},
                "cases_changed": [
                    {
                        "id": case,
                        "passed": {"baseline": True, "current": True},
                        "metrics": {
                            "ndcg": {
                                "baseline": before[case] - delta,
                                "current": before[case],
                                "delta": delta,
                            }
                        },
                    }
                    for case, delta in moved.items()
                ],
            }
        ],
    }
    sample = report_sample(Report.from_dict(document), "nDCG")
    assert (sample.basis, sample.source) == (
        PAIRED,
        "paired differences of title-body against shipped",
    )
    assert sample.values == ({case: moved.get(case, 0.0) for case in before},)
    assert sample.spread([case.id for case in CORPUS.cases]) == (
        25,
        statistics.stdev([-0.5, 0.25] + [0.0] * 23),
    )


def test_a_measure_the_report_lacks_is_a_key_error():
    with pytest.raises(KeyError):
        report_sample(Report.from_dict(BASELINE), "MAP@10")
