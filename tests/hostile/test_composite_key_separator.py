"""Keys that read alike: U+001F inside a composite key's components, and one value stored as two
types.

A corpus names a row by its key, the components joined with U+001F, so
tenant ``a`` with id ``b␟c`` and tenant ``a␟b`` with id ``c`` would both be
``a␟b␟c``. Every source reader refuses such a pair (exit 3, naming the table,
the key fields and both rows) on build, verify and evaluate, on SQLite and on
the real PostgreSQL server. A single key field may hold U+001F: its key is
the value itself, and a corpus can name it.
"""

from __future__ import annotations

import json
import sqlite3

import psycopg
import pytest

from ptah.core.spec import redact_url
from tests.conftest import run_cli, spec_yaml

CLEAN = [("a", "b\x1fc", "first body"), ("acme", "12", "second body"), ("x", "y", "third body")]
COLLIDING = ("a\x1fb", "c", "the colliding body")


class Source:
    """Table ``tenants (tenant, id, body)`` in SQLite or PostgreSQL, and a spec reading it from
    ``folder``."""

    def __init__(self, kind: str, folder, url: str | None):
        self.kind, self.folder, self.url = kind, folder, url
        self.database = url if kind == "postgres" else "sqlite:///source.db"
        self.where = (
            f"{redact_url(url) if kind == 'postgres' else 'sqlite:///source.db'} table tenants"
        )

    def execute(self, statement: str, rows=()) -> None:
        if self.kind == "postgres":
            with psycopg.connect(self.url, autocommit=True) as connection:
                connection.cursor().executemany(
                    statement.replace("?", "%s"), rows
                ) if rows else connection.execute(statement)
        else:
            with sqlite3.connect(self.folder / "source.db") as connection:
                connection.executemany(statement, rows) if rows else connection.execute(statement)

    def create(self, rows, key_fields=("tenant", "id"), filter: str | None = None) -> None:
        self.execute("CREATE TABLE tenants (tenant text, id text, body text)")
        self.execute("INSERT INTO tenants VALUES (?, ?, ?)", rows)
        (self.folder / "ptah.yaml").write_text(
            spec_yaml(
                database=self.database,
                table="tenants",
                key_fields=key_fields,
                text="{body}",
                filter=filter,
            )
        )


@pytest.fixture(params=["sqlite", "postgres"])
def source(request, tmp_path, monkeypatch) -> Source:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    monkeypatch.chdir(tmp_path)
    return Source(request.param, tmp_path, url)


def collision(source: Source) -> str:
    return (
        f"{source.where}: two rows have the key 'a\\x1fb\\x1fc' (tenant, id): the row where tenant = 'a', "
        "id = 'b\\x1fc' and the row where tenant = 'a\\x1fb', id = 'c', because a key column holds U+001F, "
        "the separator of composite keys; key_fields must identify exactly one row\n"
    )


def corpus(folder, key: str) -> str:
    (folder / "corpus.yaml").write_text(
        f"version: 1\ndefault_k: 3\ncases:\n  - id: c1\n    query: first body\n    relevant: {{{json.dumps(key)}: 1}}\n"
    )
    return "corpus.yaml"


def test_two_rows_whose_composite_keys_read_alike_are_refused_by_build(source, capsys):
    source.create([*CLEAN, COLLIDING])
    assert run_cli(capsys, "inference", "build", "--quiet") == (3, "", collision(source))


def test_a_colliding_row_added_after_the_build_is_refused_by_verify_and_evaluate(source, capsys):
    source.create(CLEAN)
    assert run_cli(capsys, "inference", "build", "--quiet")[0] == 0
    source.execute("INSERT INTO tenants VALUES (?, ?, ?)", [COLLIDING])
    assert run_cli(capsys, "inference", "verify") == (3, "", collision(source))
    name = corpus(source.folder, "x\x1fy")
    assert run_cli(capsys, "inference", "evaluate", "--corpus", name) == (3, "", collision(source))


def test_u001f_inside_a_composite_key_without_a_twin_is_still_read(source, capsys):
    source.create(CLEAN)
    assert run_cli(capsys, "inference", "build", "--quiet")[0] == 0
    code, out, err = run_cli(capsys, "inference", "verify")
    assert (code, err) == (0, "") and out.endswith("ok: complete and fresh\n")


def test_a_single_key_field_may_hold_u001f_and_a_corpus_can_name_it(source, capsys):
    source.create(CLEAN, key_fields=("id",))
    assert run_cli(capsys, "inference", "build", "--quiet")[0] == 0
    name = corpus(source.folder, "b\x1fc")
    code, out, err = run_cli(capsys, "inference", "evaluate", "--corpus", name, "--json")
    assert (code, err) == (0, "")
    case = json.loads(out)["runs"][0]["cases"][0]
    assert case["relevant"] == [{"key": "b\x1fc", "grade": 1.0}]
    assert sorted(result["key"] for result in case["results"]) == [
        "12",
        "b\x1fc",
        "y",
    ]  # k = 3: every row


def test_a_single_key_holding_u001f_that_the_filter_excludes_is_named_as_filtered(source, capsys):
    source.create(CLEAN, key_fields=("id",), filter="body <> 'first body'")
    assert run_cli(capsys, "inference", "build", "--quiet")[0] == 0
    name = corpus(source.folder, "b\x1fc")
    assert run_cli(capsys, "inference", "evaluate", "--corpus", name) == (
        2,
        "",
        "corpus.yaml: key 'b\\x1fc' (case \"c1\") is a row the filter excludes; a query whose answer is a "
        "row your filter excludes measures the filter, not the model\n",
    )


def test_one_value_stored_as_an_integer_and_as_text_is_two_rows_with_one_key(
    tmp_path, monkeypatch, capsys
):
    source = Source("sqlite", tmp_path, None)
    monkeypatch.chdir(tmp_path)
    source.execute("CREATE TABLE tenants (id, body text)")  # no type: SQLite keeps 1 and '1' apart
    source.execute("INSERT INTO tenants VALUES (?, ?)", [(1, "integer one"), ("1", "text one")])
    (tmp_path / "ptah.yaml").write_text(
        spec_yaml(database=source.database, table="tenants", text="{body}")
    )
    assert run_cli(capsys, "inference", "build", "--quiet") == (
        3,
        "",
        "sqlite:///source.db table tenants: two rows have the key '1' (id); "
        "key_fields must identify exactly one row\n",
    )
