"""Judging text: a judgement pins the row (every column any template uses), not one generation's
rendering."""

from __future__ import annotations

from ptah.adapters.corpus_yaml import parse_corpus
from ptah.adapters.judgements_yaml import read_record, write_record
from ptah.core.judged import Judgement, JudgementRecord
from ptah.core.provenance import text_digest
from ptah.services.build import build
from ptah.services.evaluate import evaluate
from ptah.services.judging import judge_key, make_worklist
from tests.services.conftest import DOCS, Workspace
from tests.services.conftest import request as asked

GENERATIONS = {
    "title-only": 'model: ptah/deterministic\n    dimension: 16\n    text: "{title}"',
    "title-body": "model: ptah/deterministic\n    dimension: 16",
}
CORPUS = """\
version: 1
default_k: 3
cases:
  - {id: c1, query: cancel my subscription, required: ["1"]}
  - {id: c2, query: forgot password, required: ["2"]}
"""


def stale_of(workspace, generation: str) -> list[dict]:
    corpus = parse_corpus(
        (workspace.folder / "c.yaml").read_bytes(), name=str(workspace.folder / "c.yaml")
    )
    corpus = corpus.with_judgements(read_record(workspace.folder / "c.yaml"))
    with workspace.project() as project:
        return evaluate(project, corpus, asked(names=[generation], allow_stale=True)).to_dict()[
            "stale_judgements"
        ]


def test_judging_one_generations_holes_and_evaluating_another_reports_nothing_stale(workspace):
    workspace.write_spec(active="title-only", generations=GENERATIONS)
    (workspace.folder / "c.yaml").write_text(CORPUS)
    with workspace.project() as project:
        for name in GENERATIONS:
            build(project, name)
        worklist = make_worklist(project, workspace.folder / "c.yaml", ["title-only"])
        hole = worklist.cases[0].holes[0]
        row = DOCS[int(hole.key) - 1]
        # the worklist shows the row's judging text -- title and body, labelled -- not title-only's
        # rendering
        assert (worklist.text_of, hole.text) == (
            "columns title, body",
            f"title: {row[1]}\nbody: {row[2]}",
        )
        judge_key(project, workspace.folder / "c.yaml", "c1", hole.key, 0.0)
        judge_key(project, workspace.folder / "c.yaml", "c2", "5", 0.0)
    assert read_record(workspace.folder / "c.yaml").cases["c1"][
        hole.key
    ].text_sha256 == text_digest(Workspace.judging_text(row))
    assert stale_of(workspace, "title-body") == [] and stale_of(workspace, "title-only") == []

    # the body is a column only title-body's template uses: exactly that row's judgement goes stale,
    # whichever generation is evaluated
    workspace.execute("UPDATE articles SET body = 'Rewritten.' WHERE id = 5")
    expected = [
        {
            "case": "c2",
            "key": "5",
            "judged_at": read_record(workspace.folder / "c.yaml").cases["c2"]["5"].judged_at,
            "why": f"judged {read_record(workspace.folder / 'c.yaml').cases['c2']['5'].judged_at[:10]}, "
            "row text changed since",
        }
    ]
    assert stale_of(workspace, "title-only") == expected
    assert stale_of(workspace, "title-body") == expected


def test_a_record_that_pinned_one_generations_rendering_still_reads_fresh(workspace):
    # written before the judging text: the digest of what title-only rendered (the title alone)
    workspace.write_spec(active="title-only", generations=GENERATIONS)
    (workspace.folder / "c.yaml").write_text(CORPUS)
    write_record(
        workspace.folder / "c.yaml",
        JudgementRecord(
            cases={"c1": {"4": Judgement(0.0, text_digest(DOCS[3][1]), "2026-11-30T12:00:00Z")}}
        ),
    )
    with workspace.project() as project:
        for name in GENERATIONS:
            build(project, name)
    assert (
        stale_of(workspace, "title-body") == []
    )  # was "row text changed since": no row had changed
    workspace.execute("UPDATE articles SET title = 'Invite a colleague' WHERE id = 4")
    assert [entry["key"] for entry in stale_of(workspace, "title-body")] == ["4"]
