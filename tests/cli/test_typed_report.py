"""The typed report reads back every report the CLI writes, exactly: ``Report.from_dict(d).to_dict()
== d``."""

from __future__ import annotations

import json
from pathlib import Path

from ptah.core.measures import Measure
from ptah.core.report import Report
from tests.cli.conftest import BASELINE, evaluate
from tests.conftest import run_cli


def written(project: Path, tmp_path: Path, *extra) -> dict:
    output = tmp_path / "report.json"
    run_cli(None, *evaluate(project, "--output", output, "--bootstrap", "200", *extra))
    return json.loads(output.read_text())


def test_the_checked_in_baseline_reads_back_exactly():
    document = json.loads(BASELINE.read_text())
    report = Report.from_dict(document)
    assert report.to_dict() == document | {
        "comparison": None
    }  # written before reports carried the member
    assert report.verdict == "pass"
    assert report.runs[0].means["nDCG"].value == document["runs"][0]["aggregates"]["ndcg"]["value"]
    assert (
        report.runs[0].cases[0].ranking[0].key
        == document["runs"][0]["cases"][0]["results"][0]["key"]
    )
    assert report.runs[0].measures == (Measure("recall"), Measure("MRR"), Measure("nDCG"))


def test_a_report_with_channels_comparison_and_baseline_reads_back_exactly(
    example_project, tmp_path
):
    document = written(
        example_project,
        tmp_path,
        "-g",
        "title-body",
        "-g",
        "body-only",
        "--channel",
        "vector",
        "--channel",
        "hybrid",
        "--baseline",
        BASELINE,
        "--max-recall-drop",
        "0.02",
    )
    report = Report.from_dict(document)
    assert report.to_dict() == document
    assert [run.name for run in report.runs] == [
        "title-body",
        "body-only",
        "hybrid:title-body",
        "hybrid:body-only",
    ]
    assert report.verdict == document["verdict"] == "fail"
    assert report.comparison.reference == "title-body"
    assert (
        report.comparisons[1].delta("recall")
        == document["baseline"]["comparisons"][1]["aggregates"]["recall"]["delta"]
    )
    assert [gate.name for gate in report.gates][:3] == ["required", "forbidden", "max-recall-drop"]
