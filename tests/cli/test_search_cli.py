"""``ptah inference search``: the query cache (a repeated query loads no model), and each row's text
beside it."""

from __future__ import annotations

import json

import pytest

from ptah.adapters.embedders.deterministic import DeterministicEmbedder
from tests.cli.conftest import ptah_process
from tests.cli.test_inference_cli import TEXT, spec, update  # noqa: F401 (spec: the fixture, a table of three rows)
from tests.conftest import spec_yaml
from tests.embedders import TestEmbedderKind

SPEC = spec_yaml(text=TEXT, generations={"docs": {"model": "test/count"}})
LONG = "export as pdf " + "and then some more words about invoices " * 5


@pytest.fixture
def counted(spec, embedders, monkeypatch, cli):  # noqa: F811 (the fixture imported above)
    """A built project whose model ``test/count`` records each load (``opens``) and each text it
    embeds; row 3's body is long and row 1's holds a newline."""
    spec.write_text(SPEC)
    update(spec, f"UPDATE articles SET body = '{LONG}' WHERE id = 3")
    update(
        spec, "UPDATE articles SET body = 'open billing and' || char(10) || 'cancel' WHERE id = 1"
    )
    embedder = embedders["test/count"] = DeterministicEmbedder(dimension=16)
    opens = []
    monkeypatch.setattr(
        TestEmbedderKind, "open", lambda self, settings, root: opens.append(1) or embedder
    )
    assert cli("inference", "build", "--spec", spec, "--quiet").code == 0
    opens.clear()
    return spec, embedder, opens


def test_a_repeated_query_loads_no_model_and_embeds_nothing(counted, cli):
    spec, embedder, opens = counted
    first = cli(
        "inference", "search", "export invoices as pdf", "-k", "2", "--spec", spec, "--json"
    )
    assert (first[0], first[2], len(opens), embedder.embedded_texts("queries")) == (
        0,
        "",
        1,
        ["export invoices as pdf"],
    )
    second = cli(
        "inference", "search", "export invoices as pdf", "-k", "2", "--spec", spec, "--json"
    )
    assert second == first
    assert (len(opens), embedder.embedded_texts("queries")) == (
        1,
        ["export invoices as pdf"],
    )  # the cache answered
    cli("inference", "search", "reset link", "--spec", spec)
    assert (len(opens), embedder.embedded_texts("queries")) == (
        2,
        ["export invoices as pdf", "reset link"],
    )


def test_json_holds_each_row_whole_text(counted, cli):
    spec, _, _ = counted
    code, out, err = cli(
        "inference", "search", "export invoices as pdf", "-k", "3", "--spec", spec, "--json"
    )
    assert (code, err) == (0, "")
    results = json.loads(out)["results"]
    assert {r["key"]: r["text"] for r in results} == {
        "3": f"Invoices: {LONG}",
        "2": "Password: use the reset link",
        "1": "Cancel: open billing and\ncancel",
    }


def test_each_row_is_one_line_with_its_text_cut_to_the_width(counted, cli, monkeypatch):
    spec, _, _ = counted
    _, out, _ = cli(
        "inference", "search", "export invoices as pdf", "-k", "3", "--spec", spec, "--json"
    )
    ranked = json.loads(out)["results"]
    monkeypatch.setenv("COLUMNS", "60")
    code, out, err = cli("inference", "search", "export invoices as pdf", "-k", "3", "--spec", spec)
    assert (code, err) == (0, "")
    room = 60 - len("  1  0.0000  3") - 2
    shown = {
        "3": f"Invoices: {' '.join(LONG.split())}"[: room - 1].rstrip() + "…",
        "2": "Password: use the reset link",
        "1": "Cancel: open billing and cancel",  # its newline is a space: one line a row
    }
    assert out.splitlines() == [
        f"{r['rank']:>3}  {r['score']:.4f}  {r['key']}  {shown[r['key']]}" for r in ranked
    ]
    assert max(len(line) for line in out.splitlines()) <= 60


def test_a_warm_search_never_imports_the_model_library(example_project):
    """The bundled example with the real MiniLM: after one search, the same search in a fresh
    process imports no torch, sentence-transformers or transformers."""
    argv = [
        "inference",
        "search",
        "how do I get my money back",
        "-k",
        "3",
        "--spec",
        str(example_project / "ptah.yaml"),
    ]
    cold = ptah_process(*argv)
    assert (
        cold.stderr.strip().splitlines()[-1]
        == "exit 0 heavy ['sentence_transformers', 'torch', 'transformers']"
    )
    warm = ptah_process(*argv)
    assert warm.stderr.strip().splitlines()[-1] == "exit 0 heavy []"
    assert warm.stdout == cold.stdout and len(warm.stdout.splitlines()) == 3
