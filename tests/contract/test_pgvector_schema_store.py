"""The pgvector store in a schema of the source's own database: ``store: {url: …, schema: ptah}``.

Against a real PostgreSQL (pgserver): ptah's tables go into that schema and
nowhere else; the source's database without a schema, or the schema the
source table lives in, is refused however the URL spells the database (the
servers are asked: ``system_identifier`` and the database's OID); a schema
ptah may not create is one sentence, exit 3, before any model is opened; the
``vector`` extension is found in whatever schema it is installed in.
"""

from __future__ import annotations

import json

import pytest

from ptah.core.errors import EXIT_INPUT, EXIT_OK, EXIT_OPERATIONAL
from tests.conftest import run_cli, spec_yaml
from tests.hostile.test_secrets import write_project
from tests.hostile.test_store_is_source import COMMANDS, REFUSAL
from tests.services.conftest import DOCS

PTAH_TABLES = [
    "ptah_generations",
    "ptah_lexical_indexes",
    "ptah_migrations",
    "ptah_query_cache",
    "ptah_records",
]


def source_database(postgres_server, *setup: str, table: str = "articles") -> str:
    """A fresh database holding the DOCS in ``table``, after the administrator's ``setup``
    statements."""
    database = postgres_server.create_database()
    with postgres_server.admin(database) as db:
        for statement in setup:
            db.execute(statement.format(database=database))
        db.execute(
            f"CREATE TABLE {table} (id integer PRIMARY KEY, title text, body text, status text)"
        )
        db.cursor().executemany(f"INSERT INTO {table} VALUES (%s, %s, %s, %s)", DOCS)
    return database


def tables(postgres_server, database: str) -> dict[str, list[str]]:
    """Every user table of ``database``, by schema (a generation's vectors table as
    ``ptah_vectors_…``)."""
    found: dict[str, list[str]] = {}
    with postgres_server.admin(database) as db:
        for schema, name in db.execute(
            "SELECT schemaname, tablename FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') "
            "ORDER BY 1, 2"
        ):
            found.setdefault(schema, []).append(
                "ptah_vectors_…" if name.startswith("ptah_vectors_") else name
            )
    return found


def in_schema(url: str, schema: str = "ptah") -> dict:
    return {"url": url, "schema": schema}


class Untouched:
    """An embedder that records every use: a store refused before the model leaves it untouched."""

    def __init__(self):
        self.used: list[str] = []

    def __getattr__(self, name):
        self.used.append(name)
        raise AttributeError(name)


def evaluation(capsys, spec) -> dict:
    """The report's one run, as ``evaluate --json`` prints it, without what differs between two
    runs."""
    code, out, err = run_cli(
        capsys,
        "inference",
        "evaluate",
        "--corpus",
        spec.parent / "corpus.yaml",
        "--json",
        "--spec",
        spec,
    )
    assert (code, err) == (EXIT_OK, ""), err
    run = json.loads(out)["runs"][0]
    return {"aggregates": run["aggregates"], "cases": run["cases"]}


@pytest.mark.parametrize("spelling", ["mapping", "options in the URL"])
def test_a_schema_store_in_the_source_database_builds_and_evaluates(
    tmp_path, capsys, postgres_server, spelling
):
    database = source_database(postgres_server)
    source = postgres_server.url(database)
    store = in_schema(source) if spelling == "mapping" else f"{source}&options=-csearch_path%3Dptah"
    spec = write_project(tmp_path / "pg", source, store=store)
    assert run_cli(capsys, "inference", "build", "--quiet", "--spec", spec)[0] == EXIT_OK
    assert run_cli(capsys, "inference", "verify", "--spec", spec)[0] == EXIT_OK
    beside = write_project(
        tmp_path / "sqlite", "sqlite:///source.db"
    )  # the same rows in the default store
    assert run_cli(capsys, "inference", "build", "--quiet", "--spec", beside)[0] == EXIT_OK
    assert evaluation(capsys, spec) == evaluation(capsys, beside)
    assert tables(postgres_server, database) == {
        "ptah": [*PTAH_TABLES, "ptah_vectors_…"],
        "public": ["articles"],
    }


@pytest.mark.parametrize("host", ["{socket}/", "{socket}/./", "{socket}//"])
def test_the_source_database_spelt_another_way_is_recognised_by_the_servers(
    tmp_path, capsys, postgres_server, host
):
    database = source_database(postgres_server)
    source = postgres_server.url(database)
    store = f"postgresql://postgres@/{database}?host={host.format(socket=postgres_server.socket)}"
    spec = write_project(tmp_path, source, store=store)
    for command in COMMANDS:
        assert run_cli(capsys, *command, "--spec", spec) == (
            EXIT_INPUT,
            "",
            f"{spec}: store: {REFUSAL}\n",
        )
    assert tables(postgres_server, database) == {"public": ["articles"]}


@pytest.mark.parametrize(
    ("table", "schema", "lives"),
    [
        ("articles", "public", "public.articles"),
        ("app.articles", "app", "app.articles"),
        ("articles", "app", "app.articles"),
    ],
)
def test_the_schema_the_source_table_lives_in_is_refused(
    tmp_path, capsys, postgres_server, table, schema, lives
):
    database = (
        source_database(
            postgres_server,
            "CREATE SCHEMA app",
            "ALTER DATABASE {database} SET search_path = app",
            table=lives,
        )
        if schema == "app"
        else source_database(postgres_server)
    )
    source = postgres_server.url(database)
    spelt = (
        source.replace("?host=", "?host=/.") if table == "articles" else source
    )  # the servers decide, not the URL
    spec = write_project(tmp_path, source, store=in_schema(spelt, schema))
    spec.write_text(spec.read_text().replace("table: articles", f"table: {table}"))
    refusal = (
        f'{spec}: store: the store\'s schema "{schema}" is the one the source table {table} lives in ({lives}), '
        "and ptah writes only into a schema of its own; name another schema, such as ptah\n"
    )
    for command in COMMANDS:
        assert run_cli(capsys, *command, "--spec", spec) == (EXIT_INPUT, "", refusal)
    assert tables(postgres_server, database) == {schema: ["articles"]}


def test_a_schema_the_user_may_not_create_is_one_sentence_before_the_model(
    tmp_path, capsys, postgres_server, embedders
):
    database = source_database(
        postgres_server,
        "CREATE EXTENSION vector",
        "CREATE ROLE builder LOGIN",
        "CREATE SCHEMA locked",
    )
    with postgres_server.admin(database) as db:
        db.execute("GRANT SELECT ON articles TO builder")
        db.execute("GRANT USAGE ON SCHEMA locked TO builder")
    source = postgres_server.url(database)
    embedders["test/untouched"] = model = Untouched()
    refused = {
        "ptah": f'this user may not create the schema "ptah" (permission denied for database {database}); ask an '
        "administrator to run CREATE SCHEMA ptah AUTHORIZATION builder, or name a schema that exists.",
        "locked": 'this user may not create tables in the schema "locked"; ask its owner to run GRANT USAGE, CREATE '
        "ON SCHEMA locked TO builder, or name another schema.",
    }
    for schema, sentence in refused.items():
        store = postgres_server.url(database, user="builder")
        spec = write_project(tmp_path, source)
        spec.write_text(
            spec_yaml(
                database=source,
                text="{title}",
                store=in_schema(store, schema),
                generations={"docs": {"model": "test/untouched"}},
            )
        )
        code, out, err = run_cli(capsys, "inference", "build", "--spec", spec)
        shown = f"{store}&options=-csearch_path%3D{schema}"
        assert (code, out, err) == (EXIT_OPERATIONAL, "", f"store {shown}: {sentence}\n")
        code, out, err = run_cli(
            capsys, "inference", "evaluate", "--corpus", tmp_path / "corpus.yaml", "--spec", spec
        )
        assert (code, out) == (EXIT_OPERATIONAL, "") and err.startswith(
            'generation "docs" has not been built'
        ), err
    assert model.used == []
    assert tables(postgres_server, database) == {"public": ["articles"]}


def test_the_vector_extension_in_another_schema_is_found(tmp_path, capsys, postgres_server):
    database = source_database(
        postgres_server, "CREATE SCHEMA extensions", "CREATE EXTENSION vector SCHEMA extensions"
    )
    source = postgres_server.url(database)
    spec = write_project(tmp_path, source, store=in_schema(source))
    assert run_cli(capsys, "inference", "build", "--quiet", "--spec", spec)[0] == EXIT_OK
    assert run_cli(capsys, "inference", "index", "docs", "--hnsw", "--spec", spec)[0] == EXIT_OK
    code, out, err = run_cli(
        capsys,
        "inference",
        "evaluate",
        "--corpus",
        tmp_path / "corpus.yaml",
        "--search",
        "both",
        "--json",
        "--spec",
        spec,
    )
    assert (code, err) == (EXIT_OK, ""), err
    assert json.loads(out)["runs"][0]["aggregates"]["ann"]["recall"]["value"] == 1.0
    assert tables(postgres_server, database) == {
        "ptah": [*PTAH_TABLES, "ptah_vectors_…"],
        "public": ["articles"],
    }


def test_a_search_path_without_the_extension_is_one_sentence(tmp_path, capsys, postgres_server):
    database = source_database(
        postgres_server, "CREATE SCHEMA extensions", "CREATE EXTENSION vector SCHEMA extensions"
    )
    store_database = postgres_server.create_database()
    with postgres_server.admin(store_database) as db:
        db.execute("CREATE SCHEMA extensions")
        db.execute("CREATE EXTENSION vector SCHEMA extensions")
    store = postgres_server.url(store_database) + "&options=-csearch_path%3Dpublic,public"
    spec = write_project(tmp_path, postgres_server.url(database), store=store)
    code, out, err = run_cli(capsys, "inference", "build", "--spec", spec)
    assert (code, out, err) == (
        EXIT_OPERATIONAL,
        "",
        (
            f'store {store}: the pgvector type "vector" (installed in the schema "extensions") is not usable here: the '
            "search_path leaves that schema out, or this user lacks USAGE on it; name the store's schema in store: "
            "{url: …, schema: …} (ptah adds extensions to the path), or ask for GRANT USAGE ON SCHEMA extensions.\n"
        ),
    )
