"""The gate says when its baseline came from another generation identity or another snapshot of the
source."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

CORPUS = """\
version: 1
default_k: 3
cases:
  - id: cancel
    query: "cancel a subscription"
    required: ["1"]
  - id: password
    query: "reset my password"
    required: ["2"]
"""
SNAPSHOT_NOTE = (
    "note: the baseline measured generation docs on another snapshot of the source (10 rows then, 11 now; "
    "rows were added, removed or edited since)"
)


@pytest.fixture
def baseline(workspace, cli):
    """``docs`` built and evaluated: the baseline at ``baseline.json``."""
    (workspace.folder / "corpus.yaml").write_text(CORPUS)
    assert cli("inference", "build", "--spec", workspace.spec_path, "--quiet")[0] == 0
    code, out, err = cli(
        "inference",
        "evaluate",
        "--spec",
        workspace.spec_path,
        "--corpus",
        workspace.folder / "corpus.yaml",
        "--output",
        workspace.folder / "baseline.json",
    )
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == f"wrote {workspace.folder / 'baseline.json'}"
    return workspace


def evaluate(space, capsys):
    code, out, err = run_cli(
        capsys,
        "inference",
        "evaluate",
        "--spec",
        space.spec_path,
        "--corpus",
        space.folder / "corpus.yaml",
        "--baseline",
        space.folder / "baseline.json",
        "--output",
        space.folder / "now.json",
    )
    words = " ".join(out.split())  # rich wraps long lines at the console's width
    return (
        code,
        words,
        json.loads((space.folder / "now.json").read_text())["baseline"]["comparisons"][0],
    )


def test_the_report_records_the_source_snapshot_and_an_unchanged_one_says_nothing(baseline, capsys):
    document = json.loads((baseline.folder / "baseline.json").read_text())
    assert document["runs"][0]["generation"]["verification"]["fingerprint"].startswith("sha256:")
    code, words, comparison = evaluate(baseline, capsys)
    assert code == 0
    assert comparison["provenance"] == {"same_identity": True, "same_source": True, "notes": []}
    assert "note:" not in words


def test_a_source_changed_since_the_baseline_is_a_note_and_a_field(baseline, capsys, cli):
    baseline.execute(
        "INSERT INTO articles VALUES (11, 'Refunds', 'Refunds go back to the card.', 'published')"
    )
    assert cli("inference", "build", "--spec", baseline.spec_path, "--quiet")[0] == 0
    code, words, comparison = evaluate(baseline, capsys)
    assert code == 0  # a note, not a gate
    assert comparison["provenance"] == {
        "same_identity": True,
        "same_source": False,
        "notes": [SNAPSHOT_NOTE.removeprefix("note: ")],
    }
    assert SNAPSHOT_NOTE in words


def test_a_baseline_of_another_identity_is_a_note_and_a_field(baseline, capsys, cli):
    with baseline.project() as project:
        old = project.generation("docs").identity.identity
    baseline.write_spec(generations={"docs": "model: ptah/deterministic\n    dimension: 16"})
    assert cli("inference", "build", "--spec", baseline.spec_path, "--quiet")[0] == 0
    with baseline.project() as project:
        new = project.generation("docs").identity.identity
    code, words, comparison = evaluate(baseline, capsys)
    note = (
        f"the baseline measured generation docs ({old[:19]}…), another generation identity than docs "
        f"({new[:19]}…): its deltas compare other vectors (another model, settings or text)"
    )
    assert comparison["provenance"] == {
        "same_identity": False,
        "same_source": None,
        "notes": [note],
    }
    assert f"note: {note}" in words
