"""What a newcomer sees first: "loading MODEL …" before a model's load, and what an interrupted
build embedded and kept."""

from __future__ import annotations

import json

import pytest

from ptah.adapters.embedders.deterministic import DeterministicEmbedder
from tests.embedders import TestEmbedderKind
from tests.services.test_build_progress import interrupt_build


@pytest.fixture
def loads_model(monkeypatch, workspace, embedders):
    """Generation ``docs`` of model ``test/org/all-MiniLM-L6-v2``, whose ``test/`` kind loads its
    models into the process, as sentence-transformers does."""
    monkeypatch.setattr(TestEmbedderKind, "loads_model", True, raising=False)
    workspace.write_spec(generations={"docs": "model: test/org/all-MiniLM-L6-v2"})
    embedders["test/org/all-MiniLM-L6-v2"] = DeterministicEmbedder(dimension=8)


def test_build_says_which_model_it_loads_on_stderr_before_embedding(
    workspace, embedders, cli, loads_model
):
    result = cli("inference", "build", "--spec", workspace.spec_path, "--json")
    assert (result.code, result.err) == (0, "loading all-MiniLM-L6-v2 …\n")
    assert json.loads(result.out)["embedded"] == 10  # stdout holds the JSON alone
    embedders["test/org/all-MiniLM-L6-v2"] = DeterministicEmbedder(dimension=8)
    workspace.execute("UPDATE articles SET body = 'changed' WHERE id = 1")
    assert cli("inference", "build", "--spec", workspace.spec_path, "--quiet") == (0, "", "")


def test_nothing_is_said_when_no_model_is_loaded(workspace, cli, loads_model):
    assert cli("inference", "build", "--spec", workspace.spec_path, "--quiet").code == 0
    up_to_date = cli(
        "inference", "build", "--spec", workspace.spec_path
    )  # nothing to embed: no model loaded
    assert (up_to_date.code, up_to_date.err) == (0, "")
    cold = cli("inference", "search", "invoices", "--spec", workspace.spec_path, "--json")
    assert (cold.code, cold.err) == (0, "loading all-MiniLM-L6-v2 …\n")
    warm = cli(
        "inference", "search", "invoices", "--spec", workspace.spec_path, "--json"
    )  # the query cache
    assert (warm.code, warm.err, warm.out) == (0, "", cold.out)


def test_a_kind_that_loads_nothing_says_nothing(workspace, embedders, cli):
    workspace.write_spec(generations={"docs": "model: test/quick"})
    embedders["test/quick"] = DeterministicEmbedder(dimension=8)
    result = cli("inference", "build", "--spec", workspace.spec_path)
    assert (result.code, result.err) == (0, "")


@pytest.mark.parametrize(
    "batches_first, message",
    [
        (
            0,
            "interrupted: 3 of 40 rows embedded, 0 of them committed; run the same command to resume\n",
        ),
        (
            1,
            "interrupted: 19 of 40 rows embedded, 16 of them committed; run the same command to resume\n",
        ),
    ],
)
def test_ctrl_c_says_what_was_embedded_and_what_was_committed(workspace, batches_first, message):
    """40 rows committed 16 at a time; the bar showed the rows the model reported, the commits kept
    fewer."""
    workspace.execute(
        "INSERT INTO articles VALUES (?, ?, ?, ?)",
        [(n, f"A {n}", f"B {n}.", "x") for n in range(11, 41)],
    )
    workspace.write_spec(generations={"docs": "model: test/stops\n    batch_size: 1"})
    assert interrupt_build(workspace.spec_path, batches_first, reported=3) == (130, message)
