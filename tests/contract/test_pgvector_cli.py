"""PostgreSQL end to end through the CLI: source and store in PostgreSQL, an HNSW index, evaluate
--search both.

Also the operational failures a PostgreSQL user meets -- an unreachable
server, a database without pgvector, a user without privileges -- each exit
3 with the URL's password removed.
"""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest

from ptah.adapters.stores.pgvector import PgvectorStore
from ptah.core.errors import EXIT_OPERATIONAL, StoreUnavailable
from ptah.services.evaluate import load_baseline
from tests.contract.conftest import make_workspace
from tests.services.test_baseline_provenance import CORPUS as TWO_CASES

CORPUS = (
    TWO_CASES
    + """\
  - id: invoices
    query: "export invoices as PDF"
    required: ["3"]
  - id: teammate
    query: "invite a teammate"
    required: ["4"]
  - id: webhooks
    query: "webhooks post JSON"
    required: ["10"]
"""
)


@pytest.fixture
def postgres_project(tmp_path, postgres_server, postgres_url, cli):
    """Source table and store in two databases of one PostgreSQL server; generation ``docs`` built;
    a corpus."""
    source_url = postgres_server.url(postgres_server.create_database())
    space = make_workspace(tmp_path / "project", postgres_url, source_url=source_url)
    (space.folder / "corpus.yaml").write_text(CORPUS)
    code, _, err = cli("inference", "build", "--spec", space.spec_path, "--quiet")
    assert code == 0, err
    return space


def evaluate(space, *extra):
    return (
        "inference",
        "evaluate",
        "--spec",
        space.spec_path,
        "--corpus",
        space.folder / "corpus.yaml",
        "--json",
        *extra,
    )


def test_index_search_is_refused_until_an_index_exists_then_measured_against_exact(
    postgres_project, cli
):
    space = postgres_project
    code, _, err = cli(*evaluate(space, "--search", "index"))
    assert code == EXIT_OPERATIONAL
    assert err.startswith('generation "docs" has no HNSW index in store postgresql://postgres@/')
    assert err.rstrip().endswith(
        "build one with `ptah inference index docs --hnsw`, or evaluate with --search exact."
    )

    code, _, err = cli("inference", "index", "docs", "--spec", space.spec_path)
    assert (code, err.strip()) == (
        2,
        "name the kind of index to build: --hnsw (an HNSW index over cosine distance).",
    )
    code, out, err = cli(
        "inference",
        "index",
        "docs",
        "--hnsw",
        "--m",
        "8",
        "--ef-construction",
        "32",
        "--spec",
        space.spec_path,
        "--json",
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["vectors"] == 10
    assert summary["index"] == {
        "name": summary["index"]["name"],
        "kind": "hnsw",
        "m": 8,
        "ef_construction": 32,
        "operator_class": "vector_cosine_ops",
    }
    assert summary["index"]["name"].startswith("ptah_vectors_") and summary["index"][
        "name"
    ].endswith("_hnsw")

    code, out, err = cli(*evaluate(space))
    assert code == 0, err
    exact = json.loads(out)["runs"][0]
    assert exact["search"] == {
        "channel": "vector",
        "mode": "exact",
        "similarity": "cosine",
        "ranking": "score descending, ties broken by key ascending",
    }

    code, out, err = cli(*evaluate(space, "--search", "both"))
    assert code == 0, err
    report = json.loads(out)
    jsonschema.validate(
        report,
        json.loads(resources.files("ptah").joinpath("schemas/report.schema.json").read_text()),
    )
    both = report["runs"][0]
    assert both["search"] == exact["search"] | {
        "mode": "both",
        "index": summary["index"],
        "ef_search": 40,
    }
    for index_case, exact_case in zip(both["cases"], exact["cases"]):
        assert [r["key"] for r in index_case["results"]] == [
            r["key"] for r in exact_case["results"]
        ]
        for ours, theirs in zip(index_case["results"], exact_case["results"]):
            assert ours["score"] == pytest.approx(theirs["score"], abs=1e-6)
        assert index_case["ann"] == {
            "recall": 1.0,
            "exact": exact_case["metrics"],
            "delta": {"recall": 0.0, "mrr": 0.0, "ndcg": 0.0},
            "missed": [],
        }
    ann = both["aggregates"]["ann"]
    assert ann["recall"] == {"value": 1.0, "numerator": 5.0, "denominator": 5, "undefined": 0}
    assert ann["delta"] == {"recall": 0.0, "mrr": 0.0, "ndcg": 0.0}
    # what the index costs is measured on the values (the judged rows); the exact run's high bound
    # is its own
    plain = {
        name: value
        for name, value in exact["aggregates"]["recall"].items()
        if not name.startswith("high")
    }
    assert ann["exact"]["recall"] == plain


def test_ef_search_1_returns_one_row_per_query_so_ann_recall_is_a_third(postgres_project, cli):
    space = postgres_project
    assert cli("inference", "index", "--hnsw", "--spec", space.spec_path)[0] == 0
    code, out, err = cli(*evaluate(space, "--search", "both", "--ef-search", "1"))
    both = json.loads(out)["runs"][0]
    assert both["search"]["ef_search"] == 1
    assert [len(case["results"]) for case in both["cases"]] == [
        1,
        1,
        1,
        1,
        1,
    ]  # the index answered, not a scan
    assert [case["ann"]["recall"] for case in both["cases"]] == [1 / 3] * 5
    assert [len(case["ann"]["missed"]) for case in both["cases"]] == [2] * 5
    assert both["aggregates"]["ann"]["recall"]["denominator"] == 5
    assert both["aggregates"]["ann"]["recall"]["value"] == pytest.approx(1 / 3, abs=1e-15)
    assert code == (0 if both["aggregates"]["required"]["failed"] == 0 else 1), err
    (space.folder / "both.json").write_text(
        out
    )  # a --search both report (ANN means of thirds) is a valid baseline
    assert (
        load_baseline(space.folder / "both.json").to_dict()["runs"][0]["aggregates"]["ann"]
        == both["aggregates"]["ann"]
    )

    code, out, err = cli(
        "inference",
        "evaluate",
        "--spec",
        space.spec_path,
        "--corpus",
        space.folder / "corpus.yaml",
        "--search",
        "both",
        "--ef-search",
        "1",
    )
    assert "mean ANN recall 0.3333  (1.6667 / 5 cases)" in out
    assert "at ef_search 1" in out


def test_search_options_are_checked(postgres_project, cli):
    space = postgres_project
    code, _, err = cli(*evaluate(space, "--ef-search", "40"))
    assert (code, err.strip()) == (
        2,
        "--ef-search: applies to index search; search in mode index or both.",
    )
    code, _, err = cli(*evaluate(space, "--search", "nearest"))
    assert (code, err.strip()) == (2, "--search: must be one of exact, index, both, not 'nearest'.")
    code, _, err = cli(*evaluate(space, "--search", "index", "--ef-search", "0"))
    assert (code, err.strip()) == (2, "--ef-search: must be a whole number from 1 to 1,000, not 0.")
    code, _, err = cli(
        "inference",
        "index",
        "--hnsw",
        "--m",
        "16",
        "--ef-construction",
        "20",
        "--spec",
        space.spec_path,
    )
    assert (code, err.strip()) == (
        2,
        "--ef-construction (20) must be at least twice --m (16); pgvector requires it.",
    )


def test_verify_and_list_read_the_pgvector_store(postgres_project, cli):
    space = postgres_project
    code, out, _ = cli("inference", "verify", "--spec", space.spec_path, "--json")
    assert code == 0 and json.loads(out)["ok"] is True
    space.execute("UPDATE articles SET body = 'changed' WHERE id = 3")
    code, out, _ = cli("inference", "verify", "--spec", space.spec_path, "--json")
    assert (code, json.loads(out)["stale_keys"]) == (1, ["3"])
    code, out, _ = cli("inference", "list", "--spec", space.spec_path, "--json")
    assert [
        (item["name"], item["status"], item["vectors"], item["rows"]) for item in json.loads(out)
    ] == [("docs", "current", 10, 10)]


# --- operational failures -------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, secrets",
    [
        ("postgresql://builder:pa55-w0rd@127.0.0.1:1/vectors?connect_timeout=2", ["pa55-w0rd"]),
        (
            "postgresql://builder:pa/55@127.0.0.1:1/vectors?connect_timeout=2",
            ["pa/55"],
        ),  # an unencoded /
        (
            "postgresql://builder@127.0.0.1:1/vectors?connect_timeout=2&password=x y",
            ["x y", "x+y"],
        ),  # libpq rejects it
    ],
)
def test_an_unreachable_store_is_exit_3_and_never_shows_the_password(tmp_path, cli, url, secrets):
    space = make_workspace(tmp_path, url)
    code, _, err = cli("inference", "build", "--spec", space.spec_path, "--quiet")
    assert code == EXIT_OPERATIONAL
    assert "postgresql://builder" in err and "***" in err
    assert not any(secret in err for secret in secrets), err
    if secrets == ["pa55-w0rd"]:
        assert err.startswith(
            "cannot connect to the store postgresql://builder:***@127.0.0.1:1/vectors?"
            "connect_timeout=2: "
        )


def test_a_database_without_pgvector_that_the_user_may_not_add_it_to(
    postgres_server, postgres_database
):
    with postgres_server.admin(postgres_database) as connection:
        connection.execute("CREATE ROLE plain_user LOGIN")
        connection.execute(f"GRANT CREATE ON DATABASE {postgres_database} TO plain_user")
        connection.execute("GRANT CREATE ON SCHEMA public TO plain_user")
    url = postgres_server.url(postgres_database, user="plain_user", password="hunter2")
    with pytest.raises(StoreUnavailable) as raised:
        PgvectorStore(url)
    message = str(raised.value)
    assert message.startswith(f"store postgresql://plain_user:***@/{postgres_database}?host=")
    assert message.endswith(
        ": the pgvector extension is not enabled in this database and this user may not enable it "
        '(permission denied to create extension "vector"); ask an administrator to run CREATE EXTENSION vector there.'
    )
    assert "hunter2" not in message and raised.value.exit_code == EXIT_OPERATIONAL


def test_a_user_who_may_not_create_tables_is_told_so(postgres_server, postgres_database):
    with postgres_server.admin(postgres_database) as connection:
        connection.execute("CREATE EXTENSION vector")
        connection.execute("CREATE ROLE reader_only LOGIN")
    url = postgres_server.url(postgres_database, user="reader_only")
    with pytest.raises(StoreUnavailable) as raised:
        PgvectorStore(url)
    assert str(raised.value) == (
        f"store {url}: permission denied (permission denied for schema public); "
        "grant the user the privilege, or use a role that has it."
    )
    assert raised.value.exit_code == EXIT_OPERATIONAL
