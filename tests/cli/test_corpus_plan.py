"""``ptah corpus plan`` through the real entry point: exact output, exit codes, and the paired
spread of real runs."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from tests.cli.conftest import BASELINE, CORPUS, evaluate

Z = 1.959964 + 0.841621  # z(0.975) + z(0.8), from a normal table


def plan(*extra):
    return ["corpus", "plan", CORPUS, "--baseline", BASELINE, *extra]


def test_a_single_run_baseline_plans_every_slice_and_says_it_assumed_independent_runs(cli):
    code, out, err = cli(*plan("--detect", "nDCG=0.1"))
    assert (code, err) == (0, "")
    assert (
        out
        == """\
nDCG: to see a change of 0.1 with power 0.8 at alpha 0.05 (two-sided)
  spread: title-body alone has no pairs, so the spread is sqrt(2) x its per-case values', as for two independent runs (paired runs usually spread less, so these counts err high)
  slice                     cases  needed   spread
  (all cases)                  25      27   0.1846  underpowered
  account                       3      54   0.2618  underpowered
  banking                       2       6   0.0640  underpowered
  billing                       4      31   0.1958  underpowered
  data                          2      21   0.1597  underpowered
  estimates                     1       -        -  cannot say: fewer than 2 cases
  expenses                      1       -        -  cannot say: fewer than 2 cases
  integrations                  1       -        -  cannot say: fewer than 2 cases
  invoices                      7      26   0.1795  underpowered
  mobile                        2       -   0.0000  cannot say: no spread
  payments                      7      25   0.1750  underpowered
  recurring                     1       -        -  cannot say: fewer than 2 cases
  reports                       1       -        -  cannot say: fewer than 2 cases
  security                      3      72   0.3013  underpowered
  taxes                         1       -        -  cannot say: fewer than 2 cases
  team                          2      46   0.2398  underpowered
"""
    )


def test_json_gives_each_measure_s_plan_with_the_slice_digests(cli):
    code, out, _ = cli(
        *plan(
            "--detect",
            "recall=0.2",
            "--detect",
            "nDCG=0.1",
            "--power",
            "0.9",
            "--alpha",
            "0.01",
            "--json",
        )
    )
    assert code == 0
    document = json.loads(out)
    assert (document["corpus"], document["baseline"], document["method"]) == (
        str(CORPUS),
        str(BASELINE),
        "paired normal approximation",
    )
    recall, ndcg = document["plans"]
    assert [
        recall["measure"],
        recall["delta"],
        recall["power"],
        recall["alpha"],
        recall["basis"],
    ] == ["recall", 0.2, 0.9, 0.01, "independent"]
    values = [
        case["metrics"]["recall"] for case in json.loads(BASELINE.read_text())["runs"][0]["cases"]
    ]
    spread = math.sqrt(2) * statistics.stdev(values)
    # z(0.995) + z(0.9) = 2.575829 + 1.281552 = 3.857381; (3.857381 x 0.284816 / 0.2)^2 = 30.18 ->
    # 31
    assert recall["corpus"] == {
        "tag": None,
        "digest": document["digest"],
        "cases": 25,
        "spread": spread,
        "needed": 31,
        "underpowered": True,
    }
    assert [entry["tag"] for entry in ndcg["slices"]][:4] == [
        "account",
        "banking",
        "billing",
        "data",
    ]
    assert all(
        entry["digest"].startswith("sha256:") and len(entry["digest"]) == 71
        for entry in ndcg["slices"]
    )
    assert len({entry["digest"] for entry in ndcg["slices"]}) == 15


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ("--detect", "nDCG=0"),
            "--detect nDCG=0: the change to detect must be from 1e-06 to 1, not 0.0",
        ),
        (
            ("--detect", "nDCG=1.5"),
            "--detect nDCG=1.5: the change to detect must be from 1e-06 to 1, not 1.5",
        ),
        (
            ("--detect", "nDCG=1e-300"),
            "--detect nDCG=1e-300: the change to detect must be from 1e-06 to 1, not 1e-300",
        ),
        (
            ("--detect", "nDCG=abc"),
            "--detect nDCG=abc: the change to detect must be a number such as 0.02, not 'abc'",
        ),
        (("--detect", "nDCG"), "--detect nDCG: write NAME=X, e.g. --detect nDCG=0.02"),
        (
            ("--detect", "foo=0.1"),
            "--detect foo=0.1: unknown measure 'foo'; use one of recall, MRR, nDCG, MAP, P, success",
        ),
        (
            ("--detect", "nDCG=0.1", "--detect", "ndcg=0.2"),
            "--detect ndcg=0.2: nDCG is already planned",
        ),
        (
            ("--detect", "MAP@10=0.1"),
            f"--detect MAP@10: the report {BASELINE} does not measure MAP@10; measure it there first (--measure)",
        ),
        (
            ("--detect", "nDCG=0.1", "--power", "1"),
            "--power must be from 1e-06 to 0.999999, not 1.0",
        ),
        (
            ("--detect", "nDCG=0.1", "--alpha", "0"),
            "--alpha must be from 1e-06 to 0.999999, not 0.0",
        ),
        (
            ("--detect", "nDCG=0.1", "--alpha", "1e-300"),
            "--alpha must be from 1e-06 to 0.999999, not 1e-300",
        ),
    ],
)
def test_bad_input_exits_2_with_a_sentence(cli, extra, message):
    assert cli(*plan(*extra)) == (2, "", message + "\n")


def test_a_report_of_another_corpus_exits_2(cli, tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text(
        'version: 1\ndefault_k: 5\ncases:\n  - {id: a, query: "How do I cancel?", required: ["11"]}\n'
    )
    code, out, err = cli("corpus", "plan", other, "--baseline", BASELINE, "--detect", "nDCG=0.1")
    assert (code, out) == (2, "")
    assert err.startswith(
        f"the baseline {BASELINE} measured a different corpus (digest sha256:24143bd7"
    )


def test_runs_side_by_side_and_a_run_against_its_baseline_plan_on_the_same_paired_differences(
    example_project, cli, tmp_path
):
    both, alone = tmp_path / "both.json", tmp_path / "alone.json"
    assert (
        cli(
            *evaluate(
                example_project,
                "--baseline",
                BASELINE,
                "-g",
                "title-body",
                "-g",
                "body-only",
                "--output",
                both,
            )
        ).code
        == 1
    )  # body-only's gate fails
    assert (
        cli(
            *evaluate(example_project, "--baseline", BASELINE, "-g", "body-only", "--output", alone)
        ).code
        == 1
    )
    runs = {run["generation"]["name"]: run for run in json.loads(both.read_text())["runs"]}
    before = {case["id"]: case["metrics"]["ndcg"] for case in runs["title-body"]["cases"]}
    differences = [
        case["metrics"]["ndcg"] - before[case["id"]] for case in runs["body-only"]["cases"]
    ]
    spread = statistics.stdev(differences)
    plans = []
    for report in (both, alone):
        code, out, err = cli(
            "corpus", "plan", CORPUS, "--baseline", report, "--detect", "nDCG=0.05", "--json"
        )
        assert (code, err) == (0, "")
        plans.append(json.loads(out)["plans"][0])
    assert plans[0]["source"] == "paired differences of body-only against title-body"
    assert plans[1]["source"] == "paired differences of body-only against title-body"
    assert plans[0]["basis"] == plans[1]["basis"] == "paired"
    assert plans[0]["corpus"]["spread"] == spread
    assert plans[0]["corpus"]["needed"] == math.ceil((Z * spread / 0.05) ** 2)
    assert plans[0]["corpus"] == plans[1]["corpus"] and plans[0]["slices"] == plans[1]["slices"]
