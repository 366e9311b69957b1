"""Comparing generations and channels end to end through the CLI, on the example built with the real model."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema

from tests.cli.conftest import BASELINE, evaluate

SCHEMA = json.loads(resources.files("ptah").joinpath("schemas/report.schema.json").read_text())


def test_two_generations_side_by_side_say_which_is_better_by_how_much_and_on_which_cases(example_project, cli, tmp_path):
    output = tmp_path / "report.json"
    code, out, err = cli(*evaluate(example_project, "-g", "title-body", "-g", "body-only", "--baseline", BASELINE,
                              "--output", output))
    assert code == 1, err  # body-only misses required keys: its gate fails
    report = json.loads(output.read_text())
    jsonschema.validate(report, SCHEMA)
    comparison = report["comparison"]
    assert comparison["reference"] == "title-body"
    assert comparison["statistics"]["seed"] == 0 and comparison["statistics"]["bootstrap"]["resamples"] == 10_000
    (candidate,) = comparison["candidates"]
    assert candidate["run"] == "body-only"
    ndcg = candidate["measures"]["ndcg"]
    runs = {r["generation"]["name"]: r for r in report["runs"]}
    assert ndcg["delta"] == runs["body-only"]["aggregates"]["ndcg"]["value"] - runs["title-body"]["aggregates"]["ndcg"]["value"]
    assert ndcg["wins"] + ndcg["ties"] + ndcg["losses"] == 25
    assert ndcg["interval"]["low"] <= ndcg["delta"] <= ndcg["interval"]["high"]
    # worse on the judged keys (p < 0.05), but the example corpus leaves most of each top k unjudged: 4 of the 118
    # holes in either run's top 5s (a row both return counted once), each lifting both runs that return it,
    # change the finding
    assert ndcg["finding"] == "inconclusive (4 of 118 plausible holes)" and ndcg["test"]["p_value"] < 0.05
    assert ndcg["holes"] == 118
    changed = candidate["cases_changed"]
    flips = [c["id"] for c in changed if c["flipped"]]
    assert flips and [c["id"] for c in changed[: len(flips)]] == flips  # flips listed first
    assert candidate["flipped"]["now_failing"] == runs["body-only"]["aggregates"]["required"]["failed"]
    # the terminal says it in words, with the interval and the p-value
    assert "side by side against title-body (the reference)" in out
    words = " ".join(out.split())  # rich wraps long lines at the terminal's width
    assert f"body-only vs title-body: nDCG {ndcg['delta']:+.4f} is inconclusive (4 of 118 plausible holes): unjudged rows, taken relevant, would change it" in words
    assert f"{flips[0]}: " in out and "now failing" in out
    # the baseline comparison still covers each run, now with its significance
    same, worse = report["baseline"]["comparisons"]
    assert (same["against"], worse["against"]) == ("title-body", "body-only")
    assert same["significance"]["ndcg"]["test"]["p_value"] == 1.0  # the baseline's rankings, reproduced
    assert same["significance"]["ndcg"]["finding"] == "no clear difference"
    # the checked-in baseline is a ptah-report@1, re-scored from its rankings under the corpus now: its holes are
    # known, so the finding against it weighs them as the side-by-side one does
    assert worse["significance"]["ndcg"]["finding"] == "inconclusive (4 of 118 plausible holes)"
    against = worse["significance"]["ndcg"]
    assert f"CI {against['interval']['low']:+.4f}..{against['interval']['high']:+.4f}" in words
    assert f"p = {against['test']['p_value']:.4f} {against['finding']}" in words


def test_the_lexical_channel_end_to_end_with_a_seed(example_project, cli, tmp_path):
    output = tmp_path / "report.json"
    code, out, err = cli(*evaluate(example_project, "--channel", "vector", "--channel", "lexical",
                                   "--bootstrap", "2000", "--seed", "7", "--output", output))
    assert code == 1, err  # BM25 without stemming misses paraphrased questions' required keys
    report = json.loads(output.read_text())
    assert [(r["generation"]["name"], r["search"]["channel"]) for r in report["runs"]] == [
        ("title-body", "vector"), ("lexical:title-body", "lexical")]
    lexical = report["runs"][1]
    assert lexical["generation"]["rows"] == 187 and lexical["search"]["similarity"] == "bm25"
    assert report["comparison"]["statistics"]["seed"] == 7
    assert report["comparison"]["statistics"]["bootstrap"]["resamples"] == 2000
    assert "lexical:title-body" in out


def test_asking_for_what_does_not_exist_exits_2(example_project, cli):
    code, out, err = cli(*evaluate(example_project, "--channel", "semantic"))
    assert code == 2 and err == "unknown channel 'semantic'; use vector, lexical, hybrid\n"
    code, out, err = cli(*evaluate(example_project, "--channel", "hybrid", "-g", "nope"))
    assert code == 2 and 'no generation named "nope"' in err
    code, out, err = cli(*evaluate(example_project, "--bootstrap", "0", "-g", "title-body"))
    assert code == 2 and "--bootstrap" in err
