"""A baseline measured again from its own rankings (docs/holes.md, "A new baseline after the corpus
changed"; issue 39's forged baseline): ``ptah inference evaluate --baseline`` on a real project with
the deterministic embedder.

The generation ranks (k 2): c1 1, 5; c2 2, 6; c3 1, 5; c4 5, 1 -- so recall is 1, 1, 1, 0 (0.75).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
from pathlib import Path
from types import MappingProxyType

import pytest

from ptah.adapters.corpus_yaml import load_corpus
from ptah.core.parts import RunGeneration, Search
from ptah.core.report import Report, Result, make_run
from tests.conftest import run_cli
from tests.hostile.test_baselines import ROWS, SPEC  # six help-centre rows; generation small

CORPUS = """\
version: 1
default_k: 2
cases:
  - {id: c1, query: "cancel my plan", relevant: {"1": 1}, tags: [billing]}
  - {id: c2, query: "reset password", relevant: {"2": 1}, tags: [billing]}
  - {id: c3, query: "api tokens", relevant: {"5": 1}, tags: [dev]}
  - {id: c4, query: "webhook payloads", relevant: {"6": 1}, tags: [dev]}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("rescored")
    connection = sqlite3.connect(folder / "source.db")
    with connection:
        connection.execute("CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
        connection.executemany("INSERT INTO articles VALUES (?, ?, ?)", ROWS)
    connection.close()
    (folder / "ptah.yaml").write_text(SPEC)
    assert (
        run_cli(None, "inference", "build", "small", "--spec", folder / "ptah.yaml", "--quiet").code
        == 0
    )
    return folder


@pytest.fixture
def project(built, tmp_path) -> Path:
    """The built project with its own corpus and baseline (written by evaluate) in a folder of the
    test's."""
    for name in ("ptah.yaml", "source.db"):
        shutil.copy(built / name, tmp_path / name)
    shutil.copytree(built / ".ptah", tmp_path / ".ptah")
    (tmp_path / "corpus.yaml").write_text(CORPUS)
    assert run_cli(None, *evaluate(tmp_path, "--output", tmp_path / "baseline.json")).code == 0
    return tmp_path


def evaluate(project: Path, *extra) -> list:
    return [
        "inference",
        "evaluate",
        "--spec",
        project / "ptah.yaml",
        "--corpus",
        project / "corpus.yaml",
        *extra,
    ]


def test_a_grade_added_since_rescores_the_baseline_instead_of_breaking_it(project, cli):
    baseline = json.loads((project / "baseline.json").read_text())
    assert [[r["key"] for r in case["results"]] for case in baseline["runs"][0]["cases"]] == [
        ["1", "5"],
        ["2", "6"],
        ["1", "5"],
        ["5", "1"],
    ]
    # a person judges c4's first row relevant: the corpus digest changes, the cases, queries and
    # depths do not
    (project / "corpus.yaml").write_text(
        CORPUS.replace('relevant: {"6": 1}', 'relevant: {"6": 1, "5": 1}')
    )
    code, out, err = cli(
        *evaluate(
            project,
            "--baseline",
            project / "baseline.json",
            "--max-recall-drop",
            "0",
            "--output",
            project / "now.json",
            "--markdown",
            project / "now.md",
        )
    )
    assert code == 0, err
    report = json.loads((project / "now.json").read_text())
    assert (
        report["baseline"]["digest"] == baseline["corpus"]["digest"] != report["corpus"]["digest"]
    )
    assert report["baseline"]["rescored"] == {
        "judgements_added": 1,
        "judgements_changed": 0,
        "cases_changed": 1,
        "judged_since": True,
    }
    # the baseline's c4 re-scored from its stored ranking (5, 1): recall 1/2, so the means agree
    # with the run's
    assert report["baseline"]["comparisons"][0]["aggregates"]["recall"] == {
        "baseline": 0.875,
        "current": 0.875,
        "delta": 0.0,
        "current_high": (3 + 2 / 3) / 4,
    }
    assert (
        "note: baseline re-scored under 1 judgement added since (1 case measured differently)"
        in out
    )
    assert (
        "Baseline re-scored under 1 judgement added since (1 case measured differently)."
        in (project / "now.md").read_text()
    )


def forged(document: dict) -> dict:
    """Issue 39's payload: the baseline's c3 and c4 rank their relevant key first, but say recall
    (and MRR, nDCG) 0, every mean lowered to match (check_consistency passes); the corpus digest
    unchanged."""
    report = Report.from_dict(document)
    run = report.runs[0]
    first = {"c3": ("5", "1"), "c4": ("6", "1")}
    cases = [
        case
        if case.id not in first
        else dataclasses.replace(
            case,
            ranking=(Result(first[case.id][0], 0.9), Result(first[case.id][1], 0.8)),
            values=MappingProxyType({name: 0.0 for name in case.values}),
        )
        for case in run.cases
    ]
    remade = make_run(
        run.generation,
        run.search,
        cases,
        run.measures,
    )
    out = json.loads(json.dumps(document))
    out["runs"][0]["cases"] = remade.to_dict()["cases"]
    out["runs"][0]["aggregates"] = remade.to_dict()["aggregates"] | {
        key: value for key, value in document["runs"][0]["aggregates"].items() if key == "ties"
    }
    return out


def test_a_forged_baseline_cannot_lower_the_bar(project, cli):
    path = project / "forged.json"
    path.write_text(json.dumps(forged(json.loads((project / "baseline.json").read_text()))))
    stored = json.loads(path.read_text())["runs"][0]
    assert [c["metrics"]["recall"] for c in stored["cases"]] == [1.0, 1.0, 0.0, 0.0]
    assert stored["aggregates"]["recall"]["value"] == 0.5
    gated = ("--max-recall-drop", "0", "--max-drop", "recall=0@*", "--holes", "misses")
    # the same run against the honest baseline passes every gate
    assert cli(*evaluate(project, "--baseline", project / "baseline.json", *gated)).code == 0
    # against the forged one: its values come from its rankings (recall 1, 1, 1, 1), so the run's
    # 0.75 is a drop
    code, out, err = cli(
        *evaluate(project, "--baseline", path, *gated, "--output", project / "now.json")
    )
    assert code == 1, err
    report = json.loads((project / "now.json").read_text())
    assert report["baseline"]["rescored"] == {
        "judgements_added": 0,
        "judgements_changed": 0,
        "cases_changed": 2,
        "judged_since": False,
    }
    assert report["baseline"]["comparisons"][0]["aggregates"]["recall"] == {
        "baseline": 1.0,
        "current": 0.75,
        "delta": -0.25,
        "current_high": (3 + 2 / 3) / 4,
    }
    assert [(g["name"], g["passed"], g["drop"]) for g in report["gates"] if "drop" in g] == [
        ("max-recall-drop", False, 0.25),
        ("max-recall-drop@billing", True, 0.0),
        ("max-recall-drop@dev", False, 0.5),
    ]
    assert (
        "note: baseline re-scored from its rankings: the values it stored for 2 cases do not follow from them"
        in out
    )


def test_a_changed_query_stays_incomparable_and_names_the_real_corpus(project, cli):
    digest = json.loads((project / "baseline.json").read_text())["corpus"]["digest"]
    (project / "corpus.yaml").write_text(CORPUS.replace("api tokens", "api keys"))
    code, out, err = cli(*evaluate(project, "--baseline", project / "baseline.json"))
    assert code == 2
    corpus = project / "corpus.yaml"
    assert err.strip() == (
        f"the baseline {project / 'baseline.json'} measured a different corpus (digest {digest}); this corpus is "
        f"{load_corpus(corpus).digest}, "
        f'and they differ in more than judgements: case "c3" asks another query now. Measure its runs again on this '
        f"corpus with `ptah report rebaseline {project / 'baseline.json'} --corpus {corpus} --output NEW.json "
        f"--spec {project / 'ptah.yaml'}`, or "
        "evaluate the corpus it was made with."
    )


def test_a_required_key_the_baseline_missed_too_is_a_known_miss(project, cli):
    # c2 requires 3 and c4 requires 6, which neither the baseline nor the run finds: known misses,
    # not failed on
    (project / "corpus.yaml").write_text(
        CORPUS.replace('relevant: {"6": 1}', 'relevant: {"6": 1}, required: ["6"]').replace(
            'relevant: {"2": 1}', 'relevant: {"2": 1}, required: ["3"]'
        )
    )
    baseline = project / "baseline.json"
    assert (
        cli(*evaluate(project, "--output", baseline)).code == 1
    )  # without a baseline, as before: a miss fails
    code, out, err = cli(
        *evaluate(project, "--baseline", baseline, "--output", project / "now.json")
    )
    assert code == 0, err
    [required] = [
        g
        for g in json.loads((project / "now.json").read_text())["gates"]
        if g["name"] == "required"
    ]
    known = (
        '2 known misses, which the baseline missed too: "3" of case "c2" (baseline: ranked 3rd; now: ranked 3rd); '
        '"6" of case "c4" (baseline: ranked 5th; now: ranked 5th)'
    )
    assert required == {
        "name": "required",
        "generation": "small",
        "passed": True,
        "known_misses": [
            {
                "case": "c2",
                "key": "3",
                "baseline_rank": 3,
                "baseline_where": "ranked 3rd",
                "current_rank": 3,
                "current_where": "ranked 3rd",
            },
            {
                "case": "c4",
                "key": "6",
                "baseline_rank": 5,
                "baseline_where": "ranked 5th",
                "current_rank": 5,
                "current_where": "ranked 5th",
            },
        ],
        "detail": f"0 of 2 cases missed a required key the baseline found; {known}",
    }
    assert (
        f"pass required (small): 0 of 2 cases missed a required key the baseline found; {known}"
        in out
    )
    # a baseline that ranked c4's 6 first: the run's miss of it is new, and fails; c2's 3 stays a
    # known miss
    document = json.loads(baseline.read_text())
    document["runs"][0]["cases"][3]["results"] = [
        {"key": "6", "score": 0.9},
        {"key": "1", "score": 0.8},
    ]
    edited = project / "edited.json"
    edited.write_text(json.dumps(document))
    code, out, err = cli(*evaluate(project, "--baseline", edited, "--output", project / "now.json"))
    assert code == 1, err
    [required] = [
        g
        for g in json.loads((project / "now.json").read_text())["gates"]
        if g["name"] == "required"
    ]
    assert (required["passed"], required["detail"], len(required["known_misses"])) == (
        False,
        "1 of 2 cases missed a required key the baseline found; 1 known miss, which the baseline missed too: "
        '"3" of case "c2" (baseline: ranked 3rd; now: ranked 3rd)',
        1,
    )
