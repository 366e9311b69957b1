"""What only the SQLite reader meets, on real files: untyped columns, REAL and BLOB keys, batched
lookups, its read-only snapshot. What both readers share is held by
``tests/contract/test_source_contract.py``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ptah.adapters.sources.sqlite import SqliteSource
from ptah.core.errors import EXIT_OPERATIONAL, SourceUnavailable
from ptah.core.spec import SourceSpec, render, template_columns


def make_db(folder: Path, *statements: str, rows: list[tuple] = (), insert: str = "") -> Path:
    path = folder / "support.db"
    with sqlite3.connect(path) as db:
        for statement in statements:
            db.execute(statement)
        if rows:
            db.executemany(insert, rows)
    db.close()
    return path


def articles(folder: Path) -> Path:
    return make_db(
        folder,
        "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT, status TEXT)",
        rows=[
            (3, "Reset", "How to reset a password", "published"),
            (1, "Billing", "Invoices are monthly", "published"),
            (42, "Draft", None, "draft"),
            (2, "Refunds", "Refunds take 5 days", "published"),
        ],
        insert="INSERT INTO articles VALUES (?, ?, ?, ?)",
    )


def source(
    folder: Path, *, table="articles", keys=("id",), text="{title}: {body}", filter=None
) -> SqliteSource:
    return SqliteSource(SourceSpec("sqlite:///support.db", table, keys, text, filter), str(folder))


def test_an_untyped_column_holding_integer_and_text_keys(tmp_path):
    make_db(
        tmp_path,
        "CREATE TABLE mixed (k, body TEXT)",
        rows=[(42, "integer"), ("0042", "text")],
        insert="INSERT INTO mixed VALUES (?, ?)",
    )
    with source(tmp_path, table="mixed", keys=("k",), text="{body}") as rows:
        assert [(r.key, r.text) for r in rows.rows("{body}")] == [
            ("42", "integer"),
            ("0042", "text"),
        ]
        assert rows.lookup(["42", "0042", "00042"]) == {
            "42": "ok",
            "0042": "ok",
            "00042": "missing",
        }


def test_lookup_batches_many_keys(tmp_path):
    make_db(
        tmp_path,
        "CREATE TABLE n (id INTEGER PRIMARY KEY, body TEXT)",
        rows=[(i, f"row {i}") for i in range(3000)],
        insert="INSERT INTO n VALUES (?, ?)",
    )
    with source(tmp_path, table="n", text="{body}", filter="id % 2 = 0") as rows:
        found = rows.lookup([str(i) for i in range(-5, 3005)])
    assert len(found) == 3010
    assert [found[str(i)] for i in (-5, 0, 1, 2998, 2999, 3000)] == [
        "missing",
        "ok",
        "filtered",
        "ok",
        "filtered",
        "missing",
    ]
    assert sum(1 for status in found.values() if status == "ok") == 1500


@pytest.mark.parametrize(
    "value, described",
    [(1.5, "the real number 1.5"), (None, "NULL"), (b"\x00", "binary data (a BLOB)")],
)
def test_a_key_that_is_not_integer_or_text_is_refused(tmp_path, value, described):
    make_db(
        tmp_path,
        "CREATE TABLE t (k, body TEXT)",
        rows=[(1, "fine"), (value, "bad")],
        insert="INSERT INTO t VALUES (?, ?)",
    )
    with source(tmp_path, table="t", keys=("k",), text="{body}") as rows:
        with pytest.raises(SourceUnavailable) as caught:
            list(rows.rows("{body}"))
    assert caught.value.exit_code == EXIT_OPERATIONAL
    assert str(caught.value) == (
        f'sqlite:///support.db table t: in the row where k = {value!r}, key column "k" holds {described}; '
        "key columns must hold integers or text"
    )


def test_two_rows_with_one_key_are_refused(tmp_path):
    make_db(
        tmp_path,
        "CREATE TABLE t (k, body TEXT)",
        rows=[(7, "a"), ("7", "b")],
        insert="INSERT INTO t VALUES (?, ?)",
    )
    with source(tmp_path, table="t", keys=("k",), text="{body}") as rows:
        with pytest.raises(SourceUnavailable, match="two rows have the key '7'"):
            list(rows.rows("{body}"))


def test_a_missing_file_or_key_column_is_source_unavailable(tmp_path):
    with pytest.raises(SourceUnavailable) as caught:
        source(tmp_path)
    assert caught.value.exit_code == EXIT_OPERATIONAL
    assert (
        str(caught.value)
        == f"sqlite:///support.db: no such database file {tmp_path / 'support.db'}"
    )
    articles(tmp_path)
    with pytest.raises(SourceUnavailable) as caught:
        source(tmp_path, keys=("ident",))
    assert str(caught.value) == (
        "sqlite:///support.db table articles: has no column ident (named in source.key_fields); "
        "its columns are id, title, body, status"
    )


def test_nothing_from_a_key_or_a_row_reaches_the_sql(tmp_path):
    make_db(
        tmp_path,
        'CREATE TABLE "odd ""name""" ("key ""col""" TEXT, body TEXT)',
        rows=[("x'); DROP TABLE t; --", "payload")],
        insert='INSERT INTO "odd ""name""" VALUES (?, ?)',
    )
    with source(tmp_path, table='odd "name"', keys=('key "col"',), text="{body}") as rows:
        assert [r.key for r in rows.rows("{body}")] == ["x'); DROP TABLE t; --"]
        assert rows.lookup(["x'); DROP TABLE t; --", "' OR 1=1 --"]) == {
            "x'); DROP TABLE t; --": "ok",
            "' OR 1=1 --": "missing",
        }


def test_read_only_and_one_snapshot_while_another_connection_writes(tmp_path):
    path = articles(tmp_path)
    with sqlite3.connect(path) as writer:
        writer.execute("PRAGMA journal_mode=WAL")
    with source(tmp_path) as rows:
        writer = sqlite3.connect(path, isolation_level=None)
        writer.execute("INSERT INTO articles VALUES (99, 'New', 'new row', 'published')")
        writer.execute("UPDATE articles SET body = 'changed' WHERE id = 1")
        assert rows.count() == 4
        assert next(iter(rows.rows("{body}"))).text == "Invoices are monthly"
        assert rows.lookup(["99"]) == {"99": "missing"}
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            rows._db.execute("DELETE FROM articles")
        writer.close()
    with source(tmp_path) as fresh:
        assert fresh.count() == 5


def test_template_rendering_reads_null_as_empty_and_numbers_as_str():
    assert template_columns("{title}\n\n{body} {title} {{x}}") == ("title", "body")
    assert (
        render("{a}|{b}|{c}|{d}|{{a}}", {"a": None, "b": 42, "c": 1.5, "d": "text"})
        == "|42|1.5|text|{a}"
    )
    with pytest.raises(TypeError, match='column "a" holds binary data'):
        render("{a}", {"a": b"x"})
