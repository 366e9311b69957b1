"""The holes end to end, through the CLI: a drop the holes decide is inconclusive (exit 4) until
they are judged in the record beside the corpus; a judged row whose text changed is stale (listed;
exit 1 on request)."""

from __future__ import annotations

import json

import pytest

from ptah.adapters.judgements_yaml import write_record
from ptah.core.judged import Judgement, JudgementRecord
from ptah.core.provenance import text_digest
from ptah.services.build import build
from tests.conftest import run_cli
from tests.embedders import EMBEDDERS
from tests.services.conftest import DOCS, Workspace
from tests.services.test_evaluate import TableEmbedder

# one case at depth 1: "at 30" finds row 3 (at 30 degrees), judged relevant
CORPUS = """\
version: 1
default_k: 1
cases:
  - id: c1
    query: at 30
    relevant: {"3": 1}
"""


@pytest.fixture
def project(workspace):
    """Generations ``old`` and ``new``: the same rows; ``new``'s queries turn 20 degrees (row 5
    comes first)."""
    workspace.write_spec(
        generations={"old": "model: test/old", "new": "model: test/new"}, active="old"
    )
    EMBEDDERS["test/old"], EMBEDDERS["test/new"] = TableEmbedder(), TableEmbedder(turn=20.0)
    with workspace.project() as opened:
        build(opened, "old")
        build(opened, "new")
    (workspace.folder / "c.yaml").write_text(CORPUS)
    return workspace


def evaluate(capsys, workspace, *options) -> tuple[int, str, str]:
    return run_cli(
        capsys,
        "inference",
        "evaluate",
        "--spec",
        workspace.spec_path,
        "--corpus",
        workspace.folder / "c.yaml",
        *options,
    )


def judged(
    key: str, grade: float, text: str, when: str = "2026-11-30T12:00:00Z"
) -> JudgementRecord:
    return JudgementRecord(cases={"c1": {key: Judgement(grade, text_digest(text), when)}})


def test_a_drop_the_holes_decide_is_inconclusive_until_they_are_judged(project, capsys):
    baseline = project.folder / "baseline.json"
    code, _, err = evaluate(capsys, project, "-g", "old", "--output", baseline)
    assert code == 0, err
    corpus = project.folder / "c.yaml"

    # new ranks row 5 (unjudged) first: MRR 0 on the judged rows, 1 if row 5 is relevant
    output = project.folder / "new.json"
    page = project.folder / "new.html"
    code, out, err = evaluate(
        capsys,
        project,
        "-g",
        "new",
        "--baseline",
        baseline,
        "--max-mrr-drop",
        "0.1",
        "--output",
        output,
        "--html",
        page,
    )
    assert code == 4, err
    html = page.read_text()
    assert 'data-verdict="inconclusive"' in html and "verdict: INCONCLUSIVE" in html
    assert '<td class="k-hole"><span class="mono">5</span>' in html and "MRR 0.0000..1.0000" in html
    report = json.loads(output.read_text())
    assert report["format"] == "ptah-report@2" and report["verdict"] == "inconclusive"
    (case,) = report["runs"][0]["cases"]
    assert (case["judged"], case["holes"]) == (0.0, [{"key": "5", "rank": 1}])
    assert case["metrics"]["mrr"] == 0.0 and case["high"]["mrr"] == 1.0
    assert (
        case["metrics"]["recall"] == 0.0 and case["high"]["recall"] == 0.5
    )  # row 5 joins recall's denominator
    assert report["runs"][0]["aggregates"]["judged"] == {
        "value": 0.0,
        "numerator": 0.0,
        "denominator": 1,
        "undefined": 0,
        "holes": 1,
    }
    gate = report["gates"][2]
    assert (
        gate["name"],
        gate["passed"],
        gate["inconclusive"],
        gate["drop"],
        gate["drop_high"],
    ) == ("max-mrr-drop", False, True, 1.0, 0.0)
    assert gate["detail"].startswith(
        "MRR 1.0000 -> 0.0000 (dropped 1.0000; a drop of 0.1000 is allowed); inconclusive: the only unjudged row of "
        "either run would make it pass if relevant, and it may be (no random sample of them judged)"
    )
    holes = gate["holes"]
    assert (
        holes["holes"],
        holes["flip_count"],
        holes["direction"],
        holes["plausible_relevant"],
    ) == (1, 1, "pass", 1)
    assert (holes["settling_sample"], holes["inconclusive"], holes["sample"]) == (1, True, None)
    assert (
        holes["command"]
        == f"ptah corpus sample {corpus} 1 --baseline {baseline} -g new --spec {project.spec_path}"
    )
    assert gate["detail"].endswith(f"`{holes['command']}`")

    # --holes misses: the trec_eval convention -- the hole is a miss, the gate fails (exit 1, never
    # 4)
    code, _, err = evaluate(
        capsys,
        project,
        "-g",
        "new",
        "--baseline",
        baseline,
        "--max-mrr-drop",
        "0.1",
        "--holes",
        "misses",
        "--output",
        project.folder / "misses.json",
    )
    assert code == 1, err
    missed = json.loads((project.folder / "misses.json").read_text())["gates"][2]
    assert (missed["passed"], missed["inconclusive"], missed["holes"]["policy"]) == (
        False,
        False,
        "misses",
    )
    assert missed["detail"].endswith(
        "; 1 unjudged row of either run counted as not relevant (--holes misses); the gate decides: a drop of 1.0000 "
        "is more than the 0.1000 allowed; the paired test alone finds no clear difference (p = 1.0000)"
    )
    words = " ".join(out.split())
    assert "INCONCLUSIVE max-mrr-drop (new)" in words
    assert "verdict: INCONCLUSIVE" in words
    assert report["corpus"]["judgements"] is None

    # recall too: row 5 relevant would grow the baseline's denominator as well as lift new (1/2 on
    # both sides), so the one hole decides that gate as well (the one-sided rule called it a
    # failure)
    code, _, err = evaluate(
        capsys,
        project,
        "-g",
        "new",
        "--baseline",
        baseline,
        "--max-mrr-drop",
        "0.1",
        "--max-recall-drop",
        "0.1",
        "--output",
        project.folder / "both.json",
    )
    assert code == 4, err
    both = json.loads((project.folder / "both.json").read_text())["gates"][2:]
    assert sorted((g["name"], g["inconclusive"]) for g in both) == [
        ("max-mrr-drop", True),
        ("max-recall-drop", True),
    ]

    # row 5 judged not relevant, in the record beside the corpus (the corpus and its digest
    # unchanged): a plain fail
    record = judged("5", 0, Workspace.text(DOCS[4]))
    write_record(corpus, record)
    code, _, err = evaluate(
        capsys,
        project,
        "-g",
        "new",
        "--baseline",
        baseline,
        "--max-mrr-drop",
        "0.1",
        "--output",
        output,
    )
    assert code == 1, err
    report = json.loads(output.read_text())
    (case,) = report["runs"][0]["cases"]
    assert (case["judged"], case["holes"], case["high"]["mrr"]) == (1.0, [], 0.0)
    assert report["verdict"] == "fail" and report["gates"][2]["inconclusive"] is False
    assert report["corpus"]["judgements"] == record.digest()
    assert report["stale_judgements"] == []

    # and a drop the judged rows allow passes: exit 0
    code, _, err = evaluate(
        capsys, project, "-g", "new", "--baseline", baseline, "--max-mrr-drop", "1"
    )
    assert code == 0, err


def test_a_judged_row_edited_in_the_source_is_stale(project, capsys):
    corpus = project.folder / "c.yaml"
    write_record(corpus, judged("5", 0, Workspace.text(DOCS[4]), "2026-11-30T09:15:00Z"))
    output = project.folder / "r.json"
    code, out, err = evaluate(capsys, project, "-g", "new", "--output", output)
    assert code == 0, err
    assert json.loads(output.read_text())["stale_judgements"] == []
    assert "stale judgement" not in out

    project.execute("UPDATE articles SET body = 'Contact support, then wait a week.' WHERE id = 5")
    code, out, err = evaluate(capsys, project, "-g", "old", "--allow-stale", "--output", output)
    assert code == 0, err  # listed, not failed, unless asked
    stale = [
        {
            "case": "c1",
            "key": "5",
            "judged_at": "2026-11-30T09:15:00Z",
            "why": "judged 2026-11-30, row text changed since",
        }
    ]
    assert json.loads(output.read_text())["stale_judgements"] == stale
    assert "stale judgement case c1 key '5': judged 2026-11-30, row text changed since" in " ".join(
        out.split()
    )

    code, out, err = evaluate(
        capsys,
        project,
        "-g",
        "old",
        "--allow-stale",
        "--fail-on-stale-judgements",
        "--output",
        output,
    )
    assert code == 1, err
    report = json.loads(output.read_text())
    assert report["gates"][-1] == {
        "name": "stale-judgements",
        "generation": None,
        "passed": False,
        "detail": "1 of 1 judgements were made on a row whose text changed since",
    }

    project.execute("DELETE FROM articles WHERE id = 5")
    code, out, err = evaluate(capsys, project, "-g", "old", "--allow-stale", "--output", output)
    assert (
        json.loads(output.read_text())["stale_judgements"][0]["why"]
        == "judged 2026-11-30, row no longer in the table"
    )


def test_the_baseline_holes_the_new_run_lost_are_counted_and_listed(project, capsys):
    # depth 2: old (at 28 degrees) ranks 3, then 2 (a hole); new turns to 48 degrees: 5, then 4 --
    # the baseline's hole 2 is gone from its top 2
    (project.folder / "c.yaml").write_text(
        CORPUS.replace("default_k: 1", "default_k: 2").replace("at 30", "at 28")
    )
    baseline = project.folder / "baseline.json"
    assert evaluate(capsys, project, "-g", "old", "--output", baseline)[0] == 0
    output = project.folder / "new.json"
    evaluate(capsys, project, "-g", "new", "--baseline", baseline, "--output", output)
    assert json.loads(output.read_text())["baseline"]["comparisons"][0]["baseline_holes_lost"] == 1
    code, out, err = run_cli(
        capsys,
        "corpus",
        "holes",
        project.folder / "c.yaml",
        "--spec",
        project.spec_path,
        "-g",
        "new",
        "--baseline",
        baseline,
        "--json",
    )
    assert code == 0, err
    listed = json.loads(out)
    assert listed["runs"] == ["new", "baseline old"]
    assert [(hole["key"], hole["ranks"]) for hole in listed["cases"][0]["holes"]] == [
        ("5", {"new": 1}),
        ("4", {"new": 2}),
        ("2", {"baseline old": 2}),
    ]
