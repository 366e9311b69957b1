"""What the distributed-build tests share: a PostgreSQL source of 300 rows (composite keys, a
filter, NULL texts, a key holding U+001F) with a store of its own for each specification, the CLI
run in this process, and what every Ray worker of these tests needs.

Nothing here imports ptah's own tests: these run against an installed core.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

import psycopg
import pytest

import ptah

ROOT = str(Path(__file__).resolve().parent)  # this folder: raytest_kinds is imported from it
SECRET = "S3cr3t-pa55"


def ray_runtime_env() -> dict:
    """What every Ray worker of these tests needs: this folder on its path, the test kinds
    registered."""
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    return {
        "env_vars": {"PYTHONPATH": path},
        "worker_process_setup_hook": "raytest_kinds.register",
    }


class Result(NamedTuple):
    """What ``ptah ARGV`` did: its exit code, its stdout and its stderr."""

    code: int
    out: str
    err: str


def run_cli(capsys, *argv) -> Result:
    """``ptah ARGV`` in this process."""
    from ptah.cli import main

    with pytest.raises(SystemExit) as info:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return Result(info.value.code, out, err)


def spec_yaml(
    *,
    database: str,
    table: str,
    generations: dict,
    key_fields=("id",),
    text: str = "{title}\n\n{body}",
    filter: str | None = None,
    store: str | None = None,
) -> str:
    """A ptah.yaml (values written as JSON, which YAML reads as they are); the first generation is
    the active one."""
    lines = [
        "version: 1",
        "source:",
        f"  database: {json.dumps(database)}",
        f"  table: {table}",
        f"  key_fields: {json.dumps(list(key_fields))}",
        f"  text: {json.dumps(text)}",
    ]
    if filter is not None:
        lines.append(f"  filter: {json.dumps(filter)}")
    if store is not None:
        lines.append(f"store: {json.dumps(store)}")
    lines += [f"active: {next(iter(generations))}", "generations:"]
    for name, fields in generations.items():
        lines.append(f"  {name}:")
        lines += [f"    {field}: {json.dumps(value)}" for field, value in fields.items()]
    return "\n".join(lines) + "\n"


class PostgresServer:
    """A running PostgreSQL with pgvector (pgserver): URLs of its databases, fresh ones made, an
    administrator's connection."""

    def __init__(self, server, folder: Path):
        self.server = server
        self.socket = str(folder)
        self.made = 0

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        secret = f":{quote(password, safe='')}" if password else ""
        return f"postgresql://postgres{secret}@/{database}?host={quote(self.socket)}"

    def admin(self, database: str = "postgres"):
        return psycopg.connect(self.url(database), autocommit=True)

    def create_database(self) -> str:
        self.made += 1
        name = f"ptah_test_{self.made}"
        with self.admin() as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return name


def sqlite_workspace(folder: Path, source_url: str | None = None) -> Path:
    """A specification over a table ``articles`` of two rows: in ``source.db``, else in the
    PostgreSQL database ``source_url``; the store is the default SQLite file."""
    folder.mkdir(parents=True)
    create = "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT)"
    rows = [(1, "Cancel a subscription"), (2, "Reset a password")]
    if source_url is None:
        with sqlite3.connect(folder / "source.db") as connection:
            connection.execute(create)
            connection.executemany("INSERT INTO articles VALUES (?, ?)", rows)
        connection.close()
    else:
        with psycopg.connect(source_url, autocommit=True) as connection:
            connection.execute(create)
            connection.cursor().executemany("INSERT INTO articles VALUES (%s, %s)", rows)
    spec = folder / "ptah.yaml"
    spec.write_text(
        spec_yaml(
            database=source_url or "sqlite:///source.db",
            table="articles",
            text="{title}",
            generations={"docs": {"model": "ptah/deterministic", "dimension": 8}},
        )
    )
    return spec


def assert_nowhere(secret: str, folder: Path, *texts: str) -> None:
    """``secret`` is in none of ``texts`` and in no file or folder name under ``folder``."""
    for text in texts:
        assert secret not in text, text
    names = [name for _, folders, files in os.walk(folder) for name in (*folders, *files)]
    assert not [name for name in names if secret in name]


SEP = "\x1f"


def source_rows(count: int) -> list[tuple]:
    """Composite keys (text tenant, integer id); every 5th body NULL; every 11th row a draft
    (filtered out); one tenant holding U+001F, the composite key separator."""
    return [
        (
            f"a{SEP}b" if i == 7 else f"t{i % 3}",
            i,
            f"title {i}",
            None if i % 5 == 0 else f"body words {i}",
            "draft" if i % 11 == 0 else "published",
        )
        for i in range(count)
    ]


class Databases:
    def __init__(self, server, folder: Path):
        self.server, self.folder = server, folder
        self.source = server.url(server.create_database())
        with psycopg.connect(self.source, autocommit=True) as connection:
            connection.execute(
                "CREATE TABLE items (tenant text, id integer, title text, body text, status text, "
                "PRIMARY KEY (tenant, id))"
            )
            connection.cursor().executemany(
                "INSERT INTO items VALUES (%s, %s, %s, %s, %s)", source_rows(300)
            )

    def spec(
        self,
        name: str,
        *,
        model: str = "ptah/deterministic",
        batch_size: int = 4,
        store: str | None = None,
    ) -> str:
        """A specification in its own folder whose store is a database of its own (or ``store``)."""
        folder = self.folder / name
        if (folder / "ptah.yaml").exists():
            return str(folder / "ptah.yaml")
        folder.mkdir()
        store = store or self.server.url(self.server.create_database())
        dimension = {"dimension": 32} if model.startswith("ptah/") else {}
        generation = {"model": model, **dimension, "batch_size": batch_size}
        (folder / "ptah.yaml").write_text(
            spec_yaml(
                database=self.source,
                table="items",
                key_fields=("tenant", "id"),
                filter="status = 'published'",
                store=store,
                generations={"docs": generation},
            )
        )
        return str(folder / "ptah.yaml")

    def execute(self, statement: str, parameters=None) -> None:
        with psycopg.connect(self.source, autocommit=True) as connection:
            connection.execute(statement, parameters)


def vectors(spec: str) -> list[tuple]:
    """Every stored row of the spec's active generation: (row identity, key, text SHA-256, vector
    text, xmin)."""
    with ptah.open_project(spec) as project:
        url = project.spec.store
    with psycopg.connect(url) as connection:
        (table,) = connection.execute("SELECT vectors_table FROM ptah_generations").fetchone()
        return connection.execute(
            f"SELECT row_identity, key, text_sha256, embedding::text, xmin::text::bigint "
            f"FROM {table} ORDER BY row_identity"
        ).fetchall()


def content(spec: str) -> list[tuple]:
    return [row[:4] for row in vectors(spec)]


def build(spec: str, **options):
    with ptah.open_project(spec) as project:
        return project.build(engine="ray", actors=2, **options)


def check(spec: str):
    with ptah.open_project(spec) as project:
        return project.verify()


def equals_a_local_build(databases, spec: str) -> None:
    with ptah.open_project(databases.spec("local")) as project:
        project.build()
    assert content(spec) == content(databases.spec("local"))
