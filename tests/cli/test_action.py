"""The composite GitHub Action (``action.yml``): installs ptah from its own checkout, and its
evaluate step, run by bash as a runner runs it, gates, annotates, summarises and sets the verdict
output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.cli.ci_project import make_ci_project

REPO = Path(__file__).resolve().parents[2]
ACTION = YAML(typ="safe").load((REPO / "action.yml").read_text())


def step(name: str) -> dict:
    (found,) = [s for s in ACTION["runs"]["steps"] if s.get("name") == name]
    return found


def test_the_action_installs_ptah_from_its_checkout_with_the_cpu_torch():
    assert ACTION["runs"]["using"] == "composite"
    install = step("install ptah from the action's checkout")
    script = install["run"]
    assert 'target="$GITHUB_ACTION_PATH"' in script
    assert (
        "pip install ptah" not in script and "ptah-eval" not in script
    )  # never the other project's name
    assert ACTION["inputs"]["torch-index"]["default"] == "https://download.pytorch.org/whl/cpu"
    for current in ACTION["runs"][
        "steps"
    ]:  # inputs reach scripts through env, never spliced into the script
        assert "${{" not in current.get("run", "")


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    """A folder that plays the runner: a ``ptah`` and a ``python`` on PATH that run this
    checkout."""
    folder = tmp_path_factory.mktemp("runner")
    bin_ = folder / "bin"
    bin_.mkdir()
    for name, argv in (("ptah", f'"{sys.executable}" -m ptah'), ("python", f'"{sys.executable}"')):
        (bin_ / name).write_text(f'#!/bin/sh\nexec {argv} "$@"\n')
        (bin_ / name).chmod(0o755)
    return folder


def test_the_evaluate_step_fails_the_job_and_reports_like_a_ci_expects(runner, tmp_path):
    (tmp_path / "repo").mkdir()
    project = make_ci_project(tmp_path / "repo")
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs.txt"
    summary.write_text("")
    inputs = {
        "SPEC": "ptah.yaml",
        "CORPUS": "corpus.yaml",
        "BASELINE": "base.json",
        "MAX_DROP": "recall=0.1 nDCG=0.3",
        "GENERATIONS": "small",
        "HOLES": "misses",
        "ARGS": "--correction none",
        "OUTPUT": "report.json",
        "JUNIT": "junit.xml",
        "MARKDOWN": "",
        "HTML": "page.html",
    }
    env = {
        **os.environ,
        **inputs,
        "PATH": f"{runner / 'bin'}:{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(project),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(outputs),
        "RUNNER_TEMP": str(tmp_path),
    }
    result = subprocess.run(
        ["bash", "-c", step("evaluate")["run"]],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert outputs.read_text() == "verdict=fail\n"
    report = json.loads((project / "report.json").read_text())
    drops = [gate for gate in report["gates"] if gate["name"].startswith("max-")]
    assert {gate["holes"]["policy"] for gate in drops} == {
        "misses"
    }  # the holes input reached evaluate
    assert sorted(
        p.name for p in project.iterdir() if p.suffix in (".json", ".xml", ".html", ".md")
    ) == ["base.json", "junit.xml", "page.html", "report.json"]
    assert summary.read_text().startswith("## ptah evaluate: FAIL: 4 of 4 gates failed\n")
    annotations = [line for line in result.stderr.splitlines() if line.startswith("::error ")]
    assert [line.split("::")[1] for line in annotations] == [
        "error file=corpus.yaml,line=4,title=ptah%3A case c1 failed (small%2C vector)",
        "error file=corpus.yaml,line=5,title=ptah%3A case c2 failed (small%2C vector)",
        "error file=corpus.yaml,title=ptah%3A gate max-recall-drop failed (small)",
        "error file=corpus.yaml,title=ptah%3A gate max-ndcg-drop failed (small)",
    ]
