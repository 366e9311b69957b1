"""An empty generation: a table with no rows, or a filter that matches none of them.

An empty generation is a valid generation whose rankings are empty. ``build``
makes it, ``search`` prints nothing and exits 0, and ``evaluate`` either
refuses a corpus naming keys that are not rows (exit 2, naming each key and
why) or -- once rows exist that the generation has no vector for, measured
with ``--allow-stale`` -- measures every channel on what there is: the vector
channel on empty rankings (recall 0; a missed required key is "not in the top
0"), the lexical and hybrid channels on the rows the source has now. Never an
internal error. Both stores: SQLite, and PostgreSQL source with a pgvector
store (each in a database of its own).
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.contract.conftest import make_workspace

CORPUS = """\
version: 1
default_k: 3
cases:
  - id: cancel
    query: "cancel a subscription"
    relevant: {"1": 1}
  - id: export
    query: "export invoices"
    required: ["3"]
"""
CHANNELS = ("vector", "lexical", "hybrid")
HOW = ("empty table", "filter matching nothing")


@pytest.fixture(params=["sqlite", "pgvector"])
def space(request, tmp_path):
    """The DOCS workspace over one store kind, with the corpus; the source in PostgreSQL beside a
    pgvector store."""
    if request.param == "pgvector":
        server = request.getfixturevalue("postgres_server")
        store, source = server.url(server.create_database()), server.url(server.create_database())
    else:
        store = source = None
    workspace = make_workspace(tmp_path / "project", store, source_url=source)
    (workspace.folder / "corpus.yaml").write_text(CORPUS)
    return workspace


def empty_generation(space, how: str, capsys) -> None:
    """Empty the table, or filter out every row; then build the (empty) generation."""
    if how == "empty table":
        space.execute("DELETE FROM articles")
    else:
        space.write_spec(filter="status = 'archived'")
    code, out, err = run_cli(capsys, "inference", "build", "--spec", space.spec_path, "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["rows"] == 0


def evaluate(space, capsys, channel: str, *extra):
    return run_cli(
        capsys,
        "inference",
        "evaluate",
        "--spec",
        space.spec_path,
        "--corpus",
        space.folder / "corpus.yaml",
        "--channel",
        channel,
        "--json",
        *extra,
    )


@pytest.mark.parametrize("how", HOW)
def test_search_of_an_empty_generation_prints_nothing(space, how, capsys):
    empty_generation(space, how, capsys)
    assert run_cli(
        capsys, "inference", "search", "cancel", "-k", "3", "--spec", space.spec_path
    ) == (0, "", "")
    code, out, err = run_cli(
        capsys, "inference", "search", "cancel", "-k", "3", "--spec", space.spec_path, "--json"
    )
    assert (code, err, json.loads(out)["results"]) == (0, "", [])


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("how", HOW)
def test_a_corpus_naming_keys_an_empty_generation_lacks_is_refused_by_key(
    space, how, channel, capsys
):
    empty_generation(space, how, capsys)
    code, out, err = evaluate(space, capsys, channel)
    why = (
        "is not in table articles"
        if how == "empty table"
        else (
            "is a row the filter excludes; a query whose answer is a row your filter excludes measures the filter, "
            "not the model"
        )
    )
    corpus = space.folder / "corpus.yaml"
    assert (code, out) == (2, "")
    assert (
        err
        == f"{corpus}: key '1' (case \"cancel\") {why}\n{corpus}: key '3' (case \"export\") {why}\n"
    )


@pytest.mark.parametrize("how", HOW)
def test_every_channel_measures_an_empty_generation_once_rows_exist(space, how, capsys):
    empty_generation(space, how, capsys)
    if how == "empty table":
        space.execute(
            "INSERT INTO articles VALUES (?, ?, ?, ?)",
            [
                (1, "Cancel a subscription", "Open billing and press cancel.", "published"),
                (3, "Export invoices", "Invoices export as PDF from billing.", "published"),
            ],
        )
    else:
        space.execute("UPDATE articles SET status = 'archived' WHERE id IN (1, 3)")
    runs = {}
    for channel, verdict in zip(
        CHANNELS, (1, 0, 0)
    ):  # the vector channel misses required key 3: exit 1
        code, out, err = evaluate(space, capsys, channel, "--allow-stale")
        assert (code, err) == (verdict, ""), channel
        [runs[channel]] = json.loads(out)["runs"]

    vector = runs["vector"]
    assert vector["generation"]["rows"] == 0
    assert [case["results"] for case in vector["cases"]] == [[], []]
    assert [case["metrics"] for case in vector["cases"]] == [
        {"recall": 0.0, "mrr": 0.0, "ndcg": 0.0}
    ] * 2
    assert vector["cases"][1]["required"] == {
        "keys": ["3"],
        "missed": [{"key": "3", "rank": None, "where": "not in the top 0"}],
    }
    assert [case["ties"]["cutoff_score"] for case in vector["cases"]] == [None, None]

    for channel in (
        "lexical",
        "hybrid",
    ):  # the lexical side reads the source as it is now: both rows
        run = runs[channel]
        assert run["generation"]["rows"] == 2, channel
        assert [[result["key"] for result in case["results"]] for case in run["cases"]] == [
            ["1"],
            ["3"],
        ], channel
        assert [case["metrics"]["recall"] for case in run["cases"]] == [1.0, 1.0], channel


def test_texts_without_a_word_the_lexical_channel_indexes_give_it_an_empty_vocabulary(
    space, capsys
):
    """Every row's text is stop words and single letters: BM25 has no token to index, yet every row
    is a row."""
    space.execute("DELETE FROM articles")
    space.execute(
        "INSERT INTO articles VALUES (?, ?, ?, ?)",
        [(1, "a", "the", "published"), (3, "of", "an", "published")],
    )
    code, _, err = run_cli(capsys, "inference", "build", "--spec", space.spec_path, "--quiet")
    assert (code, err) == (0, "")
    for channel, verdict in zip(
        CHANNELS, (0, 1, 0)
    ):  # with 2 rows and k 3 each vector ranking holds both
        code, out, err = evaluate(space, capsys, channel)
        assert (code, err) == (verdict, ""), channel
        [run] = json.loads(out)["runs"]
        assert run["generation"]["rows"] == 2, channel
        if channel == "lexical":  # no query term matches a row: nothing is a result
            assert run["generation"]["dimension"] == 0
            assert [case["results"] for case in run["cases"]] == [[], []]
            assert run["cases"][1]["required"]["missed"] == [
                {"key": "3", "rank": None, "where": "not among the 0 rows the query matched"}
            ]
