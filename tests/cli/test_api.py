"""The public Python API on the bundled example: what the README shows, and that the CLI is its
client."""

from __future__ import annotations

import ast
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

import ptah
from ptah.core import measures
from ptah.core.measures import MeasureKind
from tests.cli.conftest import BASELINE, CORPUS, evaluate

PACKAGE = Path(ptah.__file__).resolve().parent


def test_the_readme_example(example_project, tmp_path):
    with ptah.open_project(example_project / "ptah.yaml") as project:
        corpus = ptah.load_corpus(CORPUS)
        report = project.evaluate(
            corpus,
            generations=["title-body"],
            baseline=BASELINE,
            max_drop={"recall": 0.02},
            measures=["MAP@10"],
        )
        assert type(report) is ptah.Report
        assert report.verdict == "pass"
        baseline = json.loads(BASELINE.read_text())["runs"][0]["aggregates"]
        assert (
            report.runs[0].means["nDCG"].value == baseline["ndcg"]["value"]
        )  # the checked-in baseline, reproduced
        assert report.runs[0].means["recall"] == ptah.Mean(
            numerator=22.0, denominator=25, high_numerator=23.65909090909091
        )
        assert 0 < report.runs[0].means["MAP@10"].value <= 1
        assert report.runs[0].cases[0].ranking[0].key == "8"
        assert [g.name for g in report.gates] == ["required", "forbidden", "max-recall-drop"]
        report.save(tmp_path / "r.json")
        report.save(tmp_path / "r.html", "html")
        assert json.loads((tmp_path / "r.json").read_text()) == report.to_dict()
        loaded = ptah.load_report(tmp_path / "r.json")
        assert type(loaded) is ptah.Report and loaded.to_dict() == report.to_dict()
        assert (tmp_path / "r.json").read_text(encoding="utf-8") == report.to_json()
        assert project.verify("title-body").ok
        assert project.generations == ("title-body", "body-only")
        top = project.search("refund", k=5)
        assert len(top) == 5 and top == sorted(top, key=lambda pair: (-pair[1], pair[0]))


def test_to_dict_is_exactly_what_the_cli_writes(example_project, tmp_path, cli):
    output = tmp_path / "cli.json"
    code, _, err = cli(
        *evaluate(
            example_project,
            "-g",
            "title-body",
            "-g",
            "body-only",
            "--baseline",
            BASELINE,
            "--max-recall-drop",
            "0.02",
            "--measure",
            "P@3",
            "--bootstrap",
            "500",
            "--output",
            output,
        )
    )
    assert code == 1, err  # body-only fails its gates
    written = json.loads(output.read_text())
    with ptah.open_project(example_project / "ptah.yaml") as project:
        report = project.evaluate(
            CORPUS,
            generations=["title-body", "body-only"],
            baseline=BASELINE,
            max_drop={"recall": 0.02},
            measures=["P@3"],
            bootstrap=500,
        )
    mine = report.to_dict()
    for document in (written, mine):
        document.pop("created_at"), document.pop("timings")
        for run in document["runs"]:
            run["generation"]["queries_from_cache"] = None
            run.pop("cost")  # seconds: never the same twice
        for candidate in [
            *document["comparison"]["candidates"],
            *document["baseline"]["comparisons"],
        ]:
            candidate.pop("cost", None)
    assert mine == written


def test_evaluate_takes_a_request_or_its_options_never_both(example_project):
    request = ptah.EvaluationRequest(generations=("title-body",))
    with ptah.open_project(example_project / "ptah.yaml") as project:
        with pytest.raises(TypeError) as both:
            project.evaluate(CORPUS, request, channels=["lexical"], bootstrap=500)
        with pytest.raises(TypeError) as unknown:
            project.evaluate(CORPUS, statistics=ptah.StatisticsSettings(resamples=500))
        with pytest.raises(ptah.InputError) as bad:
            project.evaluate(CORPUS, search="index", ef_search=1001)
        by_request = project.evaluate(CORPUS, request)
        by_options = project.evaluate(CORPUS, generations=["title-body"])
    assert str(both.value) == (
        "evaluate() takes a request or its options as keywords, not both; "
        "put channels, bootstrap in the request"
    )
    assert str(unknown.value) == (
        "'statistics' is not an option of EvaluationRequest; its options are generations, "
        "channels, variants, measures, max_drop, baseline, allow_stale, holes, min_kappa, excerpts, max_p95_ms, correction, "
        "record_run, "
        "search, "
        "ef_search, rrf_k, rrf_depth, bootstrap, seed, fail_on_stale_judgements"
    )
    assert (str(bad.value), bad.value.exit_code) == (
        "ef_search: must be a whole number from 1 to 1,000, not 1001.",
        2,
    )
    assert (
        [run.name for run in by_request.runs]
        == [run.name for run in by_options.runs]
        == ["title-body"]
    )
    assert by_request.runs[0].means == by_options.runs[0].means


def test_a_baseline_report_in_hand_of_another_corpus_is_refused_as_the_baseline_report(
    example_project,
):
    # another digest and another query (another digest alone would differ in judgements: re-scored,
    # not refused)
    with ptah.open_project(example_project / "ptah.yaml") as project:
        report = project.evaluate(CORPUS, generations=["title-body"])
        first = report.runs[0].cases[0]
        asked = tuple(
            replace(run, cases=(replace(run.cases[0], query="another question"), *run.cases[1:]))
            for run in report.runs
        )
        other = replace(report, corpus=replace(report.corpus, digest="sha256:0"), runs=asked)
        with pytest.raises(ptah.IncomparableBaseline) as refused:
            project.evaluate(CORPUS, generations=["title-body"], baseline_report=other)
    # the API's words name no command line
    assert (str(refused.value), refused.value.exit_code) == (
        f"the baseline report measured a different corpus (digest sha256:0); this corpus is "
        f'{report.corpus.digest}, and they differ in more than judgements: case "{first.id}" '
        "asks another query now. Measure its runs again on this corpus, or evaluate the corpus it "
        "was made with.",
        2,
    )


def search_did_not_get_worse(spec: Path, generation: str) -> None:
    """The README's pytest example, verbatim but for the paths and the generation."""
    with ptah.open_project(spec) as project:
        report = project.evaluate(
            CORPUS,
            generations=[generation],
            baseline=BASELINE,
            max_drop={"nDCG": 0.02, "recall": 0.02},
        )
    failed = [
        f"{gate.name} ({gate.generation}): {gate.detail}"
        for gate in report.gates
        if not gate.passed
    ]
    assert report.verdict == "pass", "\n".join(failed)


def test_the_readme_pytest_gate_passes_and_fails_when_search_got_worse(example_project):
    search_did_not_get_worse(example_project / "ptah.yaml", "title-body")
    with pytest.raises(AssertionError, match="max-ndcg-drop \\(body-only\\): nDCG 0.8904 -> "):
        search_did_not_get_worse(example_project / "ptah.yaml", "body-only")


def test_a_measure_added_by_one_registration_reaches_the_cli_report_and_gates(
    example_project, tmp_path, cli
):
    def dcg(top, relevant, k):
        return (
            math.fsum(
                relevant.get(key, 0.0) / math.log2(rank + 1)
                for rank, key in enumerate(top, start=1)
            )
            / 10
        )

    measures.register(
        MeasureKind(
            "DCG", "dcg", "DCG", "-", "sum of grade / log2(rank + 1) over the top k, / 10", dcg
        )
    )
    try:
        first = tmp_path / "first.json"
        code, out, err = cli(*evaluate(example_project, "--measure", "DCG@5", "--output", first))
        assert code == 0, err
        report = json.loads(first.read_text())
        values = [case["metrics"]["DCG@5"] for case in report["runs"][0]["cases"]]
        assert report["runs"][0]["aggregates"]["DCG@5"]["value"] == pytest.approx(
            math.fsum(values) / len(values), abs=1e-15
        )
        assert "DCG@5" in out  # a column and a mean line, from the registry
        code, out, err = cli(
            *evaluate(example_project, "--baseline", first, "--max-drop", "DCG@5=0")
        )
        assert code == 0, err
        assert "pass max-DCG@5-drop (title-body)" in " ".join(out.split())
    finally:
        measures.unregister("DCG")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-drop", "MAP@10"], "--max-drop MAP@10: write NAME=X, e.g. --max-drop nDCG=0.02\n"),
        (
            ["--max-drop", "BM25=0.1"],
            "--max-drop BM25=0.1: unknown measure 'BM25'; use one of recall, MRR, nDCG, MAP, P, success\n",
        ),
        (
            ["--max-drop", "recall=0.1", "--max-recall-drop", "0.2"],
            "--max-drop recall=0.1: a drop of recall is already gated\n",
        ),
        (
            ["--max-drop", "MAP@10=0.02"],
            "--max-drop: a max drop of MAP@10 needs a baseline report to measure the drop against.\n",
        ),
        (
            ["--measure", "MAP@0"],
            "--measure: cannot read measure 'MAP@0'; write NAME or NAME@K with NAME one of recall, MRR, nDCG, MAP, P, success and K a positive integer, e.g. nDCG@10.\n",
        ),
        (
            ["--baseline", BASELINE, "--max-drop", "MAP@10=0.02"],
            f"the baseline {BASELINE} has no MAP@10 to measure a drop against; write a new baseline with the measure MAP@10 requested\n",
        ),
    ],
)
def test_measures_and_drops_that_cannot_be_are_exit_2(example_project, cli, argv, message):
    code, out, err = cli(*evaluate(example_project, *argv))
    assert (code, out, err) == (2, "", message)


def test_the_api_has_one_report_class_and_one_project_class(example_project, tmp_path):
    """``ptah.Report`` is the core's report, whatever path returned it, and ``ptah.Project`` the one
    project class: no other module of ptah defines a class of either name."""
    from ptah.core.report import Report

    assert ptah.Report is Report
    defined = sorted(
        (node.name, str(path.relative_to(PACKAGE.parent)))
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name in ("Project", "Report")
    )
    assert defined == [("Project", "ptah/_api.py"), ("Report", "ptah/core/report.py")]
    with ptah.open_project(example_project / "ptah.yaml") as project:
        assert type(project) is ptah.Project
        report = project.evaluate(CORPUS, generations=["title-body"])
    report.save(tmp_path / "r.json")
    assert type(ptah.load_report(tmp_path / "r.json")) is Report
