"""The store may not be the source database: refused with exit 2 and a sentence, before anything is
written.

Otherwise ptah would write its tables into the database it promises only to
read (and, later, blame "a newer ptah" for tables it does not recognise).
Tried with every spelling of "the same": the same SQLite file by another
relative path, a symbolic link, a hard link; the same PostgreSQL host, port
and database named by another user, scheme or query.
"""

from __future__ import annotations

import hashlib
import os

import pytest

from ptah.core.errors import EXIT_INPUT, EXIT_OK
from tests.conftest import run_cli
from tests.hostile.test_secrets import write_project
from tests.services.conftest import DOCS

REFUSAL = (
    "names the source database itself; ptah writes its own tables into the store and only ever reads the "
    "source, so give the store a database of its own (the default file .ptah/ptah.db, or another PostgreSQL "
    "database)"
)
COMMANDS = [
    ("inference", "build"),
    ("inference", "verify"),
    ("inference", "list"),
    ("inference", "search", "x"),
]


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "store",
    ["source.db", "./sub/../source.db", "sqlite:///source.db", "link.db", "hard.db", "{absolute}"],
)
def test_the_source_sqlite_file_as_the_store_is_refused(tmp_path, capsys, store):
    spec = write_project(
        tmp_path, "sqlite:///source.db", store=store.format(absolute=tmp_path / "source.db")
    )
    (tmp_path / "link.db").symlink_to(tmp_path / "source.db")
    os.link(tmp_path / "source.db", tmp_path / "hard.db")
    before = digest(tmp_path / "source.db")
    for command in COMMANDS:
        code, out, err = run_cli(capsys, *command, "--spec", spec)
        assert (code, out, err.strip()) == (EXIT_INPUT, "", f"{spec}:7: store: {REFUSAL}")
    assert digest(tmp_path / "source.db") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "corpus.yaml",
        "hard.db",
        "link.db",
        "ptah.yaml",
        "source.db",
    ]


def test_the_default_store_as_the_source_is_refused_at_the_source(tmp_path, capsys):
    spec = write_project(tmp_path, "sqlite:///.ptah/ptah.db")
    code, _, err = run_cli(capsys, "inference", "build", "--spec", spec)
    assert (code, err.strip()) == (EXIT_INPUT, f"{spec}:2: store: {REFUSAL}")


def test_another_file_beside_the_source_is_a_store(tmp_path, capsys):
    spec = write_project(tmp_path, "sqlite:///source.db", store="vectors.db")
    assert run_cli(capsys, "inference", "build", "--quiet", "--spec", spec)[0] == EXIT_OK
    assert (tmp_path / "vectors.db").is_file()


def _ptah_tables(postgres_server, database: str) -> list[str]:
    with postgres_server.admin(database) as db:
        return [
            row[0]
            for row in db.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"
            ).fetchall()
        ]


@pytest.mark.parametrize(
    "spelling", ["same", "another user", "postgres scheme", "dbname in the query", "port"]
)
def test_the_source_postgres_database_as_the_store_is_refused(
    tmp_path, capsys, postgres_server, spelling
):
    database = postgres_server.create_database()
    with postgres_server.admin(database) as db:
        db.execute(
            "CREATE TABLE articles (id integer PRIMARY KEY, title text, body text, status text)"
        )
        db.cursor().executemany("INSERT INTO articles VALUES (%s, %s, %s, %s)", DOCS)
    source = postgres_server.url(database)
    socket = source.partition("?")[2]
    store = {
        "same": source,
        "another user": postgres_server.url(database, user="builder", password="x"),
        "postgres scheme": source.replace("postgresql://", "postgres://"),
        "dbname in the query": f"postgresql://postgres@/?{socket}&dbname={database}",
        "port": f"{source}&port=5432",
    }[spelling]
    spec = write_project(tmp_path, source, store=store)
    for command in COMMANDS:
        code, out, err = run_cli(capsys, *command, "--spec", spec)
        assert (code, out, err.strip()) == (EXIT_INPUT, "", f"{spec}:7: store: {REFUSAL}")
    assert _ptah_tables(postgres_server, database) == ["articles"]


def test_another_postgres_database_on_the_same_server_is_a_store(tmp_path, capsys, postgres_server):
    source, store = postgres_server.create_database(), postgres_server.create_database()
    with postgres_server.admin(source) as db:
        db.execute(
            "CREATE TABLE articles (id integer PRIMARY KEY, title text, body text, status text)"
        )
        db.cursor().executemany("INSERT INTO articles VALUES (%s, %s, %s, %s)", DOCS)
    spec = write_project(tmp_path, postgres_server.url(source), store=postgres_server.url(store))
    code, _, err = run_cli(capsys, "inference", "build", "--quiet", "--spec", spec)
    assert code == EXIT_OK, err
    assert _ptah_tables(postgres_server, source) == ["articles"]
