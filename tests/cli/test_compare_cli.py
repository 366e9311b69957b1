"""Comparing generations and channels end to end through the CLI, on the example built with the real
model."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema

from ptah.core.compared import Interval
from ptah.render.sentences import interval_text
from tests.cli.conftest import BASELINE, REPO, evaluate

SCHEMA = json.loads(resources.files("ptah").joinpath("schemas/report.schema.json").read_text())


def test_two_generations_side_by_side_say_which_is_better_by_how_much_and_on_which_cases(
    example_project, cli, tmp_path
):
    output = tmp_path / "report.json"
    code, out, err = cli(
        *evaluate(
            example_project,
            "-g",
            "title-body",
            "-g",
            "body-only",
            "--baseline",
            BASELINE,
            "--output",
            output,
        )
    )
    assert code == 1, err  # body-only misses required keys: its gate fails
    report = json.loads(output.read_text())
    jsonschema.validate(report, SCHEMA)
    comparison = report["comparison"]
    assert comparison["reference"] == "title-body"
    assert (
        comparison["statistics"]["seed"] == 0
        and comparison["statistics"]["bootstrap"]["resamples"] == 10_000
    )
    (candidate,) = comparison["candidates"]
    assert candidate["run"] == "body-only"
    ndcg = candidate["measures"]["ndcg"]
    runs = {r["generation"]["name"]: r for r in report["runs"]}
    assert (
        ndcg["delta"]
        == runs["body-only"]["aggregates"]["ndcg"]["value"]
        - runs["title-body"]["aggregates"]["ndcg"]["value"]
    )
    assert ndcg["wins"] + ndcg["ties"] + ndcg["losses"] == 25
    assert ndcg["interval"]["low"] <= ndcg["delta"] <= ndcg["interval"]["high"]
    # worse on the judged keys (p < 0.05), but the example corpus leaves most of each top k
    # unjudged: 4 of the 118 holes in either run's top 5s (a row both return counted once, lifting
    # both), taken relevant, change the finding; the judged result comes first and a sample of both
    # runs' holes settles it
    assert (ndcg["finding"], ndcg["judged"], ndcg["holes"]) == ("inconclusive", "worse", 118)
    assert ndcg["test"]["p_value"] < 0.05
    spec = example_project / "ptah.yaml"
    command = (
        f"ptah corpus sample {report['corpus']['path']} 62 -g title-body -g body-only --spec {spec}"
    )
    assert ndcg["settle"] == {"flip_count": 4, "plausible": 118, "sample": 62, "command": command}
    changed = candidate["cases_changed"]
    flips = [c["id"] for c in changed if c["flipped"]]
    assert flips and [c["id"] for c in changed[: len(flips)]] == flips  # flips listed first
    assert (
        candidate["flipped"]["now_failing"] == runs["body-only"]["aggregates"]["required"]["failed"]
    )
    # the terminal says it in words, with the interval and the p-value
    assert "side by side against title-body (the reference)" in out
    words = " ".join(out.split())  # rich wraps long lines at the terminal's width
    assert (
        f"body-only vs title-body: nDCG {ndcg['delta']:+.4f} on the judged rows is worse: p = 0.0038, 11 of 15 "
        f"changed cases worse (95% CI {interval_text(Interval.from_dict(ndcg['interval']))}); inconclusive: 4 of 118 plausible holes, "
        f"taken relevant, would change it; judge a random sample of both runs' holes to settle it: `{command}`"
        in words
    )
    assert (
        "worse on judged rows; inconclusive (4 of 118 plausible holes)" in words
    )  # the table's cell
    assert f"{flips[0]}: " in out and "now failing" in out
    # the baseline comparison still covers each run, now with its significance
    same, worse = report["baseline"]["comparisons"]
    assert (same["against"], worse["against"]) == ("title-body", "body-only")
    assert (
        same["significance"]["ndcg"]["test"]["p_value"] == 1.0
    )  # the baseline's rankings, reproduced
    # the checked-in baseline is re-scored from its rankings, so its holes are known and can decide
    # a finding the same rankings: a hole lifts both alike, so nothing can change the finding
    assert (same["significance"]["ndcg"]["finding"], same["significance"]["ndcg"]["judged"]) == (
        "no clear difference",
        "no clear difference",
    )
    assert (worse["significance"]["ndcg"]["finding"], worse["significance"]["ndcg"]["judged"]) == (
        "inconclusive",
        "worse",
    )
    assert (
        f"--baseline {BASELINE} -g body-only --spec {spec}"
        in worse["significance"]["ndcg"]["settle"]["command"]
    )
    against = worse["significance"]["ndcg"]
    assert f"CI {against['interval']['low']:+.4f}..{against['interval']['high']:+.4f}" in words
    assert f"p = {against['test']['p_value']:.4f} worse" in words


def test_the_lexical_channel_end_to_end_with_a_seed(example_project, cli, tmp_path):
    output = tmp_path / "report.json"
    code, out, err = cli(
        *evaluate(
            example_project,
            "--channel",
            "vector",
            "--channel",
            "lexical",
            "--bootstrap",
            "2000",
            "--seed",
            "7",
            "--output",
            output,
        )
    )
    assert code == 1, err  # BM25 without stemming misses paraphrased questions' required keys
    report = json.loads(output.read_text())
    assert [(r["generation"]["name"], r["search"]["channel"]) for r in report["runs"]] == [
        ("title-body", "vector"),
        ("lexical:title-body", "lexical"),
    ]
    lexical = report["runs"][1]
    assert lexical["generation"]["rows"] == 187 and lexical["search"]["similarity"] == "bm25"
    assert report["comparison"]["statistics"]["seed"] == 7
    assert report["comparison"]["statistics"]["bootstrap"]["resamples"] == 2000
    assert "lexical:title-body" in out


def test_asking_for_what_does_not_exist_exits_2(example_project, cli):
    code, out, err = cli(*evaluate(example_project, "--channel", "semantic"))
    assert (
        code == 2 and err == "unknown channel 'semantic'; use vector, lexical, hybrid, retriever\n"
    )
    code, out, err = cli(*evaluate(example_project, "--channel", "hybrid", "-g", "nope"))
    assert code == 2 and 'no generation named "nope"' in err
    code, out, err = cli(*evaluate(example_project, "--bootstrap", "0", "-g", "title-body"))
    assert code == 2 and "--bootstrap" in err


def test_the_readmes_slice_sentences_are_what_its_commands_show(example_project, cli, tmp_path):
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    # against the checked-in baseline (no tags then): the slice means, and no slice compared
    code, out, err = cli(
        *evaluate(
            example_project,
            "--generation",
            "body-only",
            "--baseline",
            BASELINE,
            "--max-recall-drop",
            "0.02",
            "--output",
            tmp_path / "gated.json",
        )
    )
    assert code == 1, err
    gated = json.loads((tmp_path / "gated.json").read_text())
    (run,) = gated["runs"]
    billing = run["slices"]["billing"]["means"]["ndcg"]
    assert (billing["value"], billing["denominator"]) == (0.5, 4)
    assert not gated["baseline"]["comparisons"][0]["slices"]["billing"]["comparable"]
    assert "the baseline has no slice of this tag" in " ".join(out.split())
    assert (
        f"body-only's nDCG is {billing['value']:.4f} on `billing`'s 4 cases, "
        f"{run['aggregates']['ndcg']['value']:.4f} over all 25" in readme
    )
    # side by side: where it broke
    code, out, err = cli(
        *evaluate(
            example_project,
            "-g",
            "title-body",
            "-g",
            "body-only",
            "--output",
            tmp_path / "side.json",
        )
    )
    assert code == 1, err
    (candidate,) = json.loads((tmp_path / "side.json").read_text())["comparison"]["candidates"]
    slices = candidate["slices"]
    assert [
        round(slices[tag]["measures"]["ndcg"]["delta"], 4) for tag in ("billing", "mobile", "data")
    ] == [-0.3801, 0.0, 0.0]
    assert (
        f"Its nDCG falls {-candidate['measures']['ndcg']['delta']:.4f} over all 25 cases, but 0.3801 on "
        "`billing` and not at all on `mobile` or `data`" in readme
    )
