"""Reading source rows from real SQLite files: keys, identities, filter, lookups, errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ptah.adapters.sources.sqlite import SqliteSource
from ptah.core.errors import EXIT_INPUT, EXIT_OPERATIONAL, SourceUnavailable, SpecError
from ptah.core.spec import SourceRow, SourceSpec, render, template_columns

US = "\x1f"


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


def source(folder: Path, *, table="articles", keys=("id",), text="{title}: {body}", filter=None) -> SqliteSource:
    return SqliteSource(SourceSpec("sqlite:///support.db", table, keys, text, filter), str(folder))


def test_rows_in_key_order_with_keys_identities_and_rendered_text(tmp_path):
    articles(tmp_path)
    with source(tmp_path) as rows:
        assert list(rows.rows("{title}: {body}")) == [
            SourceRow("1", "1:1", "Billing: Invoices are monthly"),
            SourceRow("2", "1:2", "Refunds: Refunds take 5 days"),
            SourceRow("3", "1:3", "Reset: How to reset a password"),
            SourceRow("42", "2:42", "Draft: "),
        ]
        assert rows.count() == 4
        assert [r.text for r in rows.rows("{{{body}}}")] == [
            "{Invoices are monthly}", "{Refunds take 5 days}", "{How to reset a password}", "{}",
        ]


def test_filter_excludes_rows_and_count_follows_it(tmp_path):
    articles(tmp_path)
    with source(tmp_path, filter="status = 'published'") as rows:
        assert [r.key for r in rows.rows("{body}")] == ["1", "2", "3"]
        assert rows.count() == 3


def test_lookup_ok_filtered_missing_matching_keys_exactly_as_spelled(tmp_path):
    articles(tmp_path)
    with source(tmp_path, filter="status = 'published'") as rows:
        assert rows.lookup(["1", "42", "0042", "7", "+1", "1.0", "", "1" + US + "2", "1"]) == {
            "1": "ok",
            "42": "filtered",
            "0042": "missing",
            "7": "missing",
            "+1": "missing",
            "1.0": "missing",
            "": "missing",
            "1" + US + "2": "missing",
        }


def test_text_keys_match_only_their_own_spelling(tmp_path):
    make_db(
        tmp_path,
        "CREATE TABLE docs (code TEXT PRIMARY KEY, body TEXT)",
        rows=[("0042", "leading zeros"), ("42", "plain"), ("x", "letter")],
        insert="INSERT INTO docs VALUES (?, ?)",
    )
    with source(tmp_path, table="docs", keys=("code",), text="{body}") as rows:
        assert [(r.key, r.identity) for r in rows.rows("{body}")] == [("0042", "4:0042"), ("42", "2:42"), ("x", "1:x")]
        assert rows.lookup(["0042", "42", "042", "x", "X"]) == {
            "0042": "ok", "42": "ok", "042": "missing", "x": "ok", "X": "missing",
        }


def test_an_untyped_column_holding_integer_and_text_keys(tmp_path):
    make_db(
        tmp_path,
        "CREATE TABLE mixed (k, body TEXT)",
        rows=[(42, "integer"), ("0042", "text")],
        insert="INSERT INTO mixed VALUES (?, ?)",
    )
    with source(tmp_path, table="mixed", keys=("k",), text="{body}") as rows:
        assert [(r.key, r.text) for r in rows.rows("{body}")] == [("42", "integer"), ("0042", "text")]
        assert rows.lookup(["42", "0042", "00042"]) == {"42": "ok", "0042": "ok", "00042": "missing"}


def test_composite_keys_with_separators_and_digits_inside_values_stay_distinct(tmp_path):
    make_db(
        tmp_path,
        "CREATE TABLE items (tenant TEXT, id, body TEXT, PRIMARY KEY (tenant, id))",
        rows=[
            ("acme1", 2, "first"),
            ("acme", 12, "second"),
            ("a:b", "c", "colon in tenant"),
            ("a", "b:c", "colon in id"),
            ("a" + US + "b", "c", "separator in tenant"),
            ("a", "b" + US + "d", "separator in id"),  # with tenant a␟b and id c it would read alike: refused
        ],
        insert="INSERT INTO items VALUES (?, ?, ?)",
    )
    with source(tmp_path, table="items", keys=("tenant", "id"), text="{body}") as rows:
        found = list(rows.rows("{body}"))
        assert [(r.key, r.identity, r.text) for r in found] == [
            ("a" + US + "b" + US + "d", "1:a3:b\x1fd", "separator in id"),
            ("a" + US + "b:c", "1:a3:b:c", "colon in id"),
            ("a" + US + "b" + US + "c", "3:a\x1fb1:c", "separator in tenant"),
            ("a:b" + US + "c", "3:a:b1:c", "colon in tenant"),
            ("acme" + US + "12", "4:acme2:12", "second"),
            ("acme1" + US + "2", "5:acme11:2", "first"),
        ]
        assert len({r.identity for r in found}) == 6
        assert rows.lookup(["acme1" + US + "2", "acme" + US + "12", "acme1" + US + "02", "a:b" + US + "c",
                            "a" + US + "b" + US + "c", "acme12"]) == {
            "acme1" + US + "2": "ok",
            "acme" + US + "12": "ok",
            "acme1" + US + "02": "missing",
            "a:b" + US + "c": "ok",
            "a" + US + "b" + US + "c": "missing",  # three components for two key fields
            "acme12": "missing",
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
    assert [found[str(i)] for i in (-5, 0, 1, 2998, 2999, 3000)] == ["missing", "ok", "filtered", "ok", "filtered",
                                                                    "missing"]
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
        f"sqlite:///support.db table t: in the row where k = {value!r}, key column \"k\" holds {described}; "
        "key columns must hold integers or text"
    )


def test_two_rows_with_one_key_are_refused(tmp_path):
    make_db(tmp_path, "CREATE TABLE t (k, body TEXT)", rows=[(7, "a"), ("7", "b")],
            insert="INSERT INTO t VALUES (?, ?)")
    with source(tmp_path, table="t", keys=("k",), text="{body}") as rows:
        with pytest.raises(SourceUnavailable, match="two rows have the key '7'"):
            list(rows.rows("{body}"))


def test_a_blob_in_a_text_column_is_refused(tmp_path):
    make_db(tmp_path, "CREATE TABLE t (k INTEGER, body)", rows=[(1, b"\xff")], insert="INSERT INTO t VALUES (?, ?)")
    with source(tmp_path, table="t", keys=("k",), text="{body}") as rows:
        with pytest.raises(SourceUnavailable) as caught:
            list(rows.rows("{body}"))
    assert str(caught.value) == (
        "sqlite:///support.db table t: in the row with key '1', column \"body\" holds binary data (a BLOB), not text; "
        "cast it to text in a view"
    )


def test_missing_file_table_and_columns_are_source_unavailable(tmp_path):
    with pytest.raises(SourceUnavailable) as caught:
        source(tmp_path)
    assert caught.value.exit_code == EXIT_OPERATIONAL
    assert str(caught.value) == f"sqlite:///support.db: no such database file {tmp_path / 'support.db'}"
    articles(tmp_path)
    with pytest.raises(SourceUnavailable) as caught:
        source(tmp_path, table="article")
    assert str(caught.value) == "sqlite:///support.db: no table or view named article"
    with pytest.raises(SourceUnavailable) as caught:
        source(tmp_path, keys=("ident",))
    assert str(caught.value) == (
        "sqlite:///support.db table articles: has no column ident (named in source.key_fields); "
        "its columns are id, title, body, status"
    )
    with source(tmp_path) as rows, pytest.raises(SourceUnavailable) as caught:
        rows.rows("{titel}")
    assert str(caught.value) == (
        'sqlite:///support.db table articles: has no column titel (named in the text template); did you mean "title"?'
    )


def test_a_filter_sqlite_cannot_run_is_a_spec_error(tmp_path):
    articles(tmp_path)
    with pytest.raises(SpecError) as caught:
        source(tmp_path, filter="status = = 'x'")
    assert caught.value.exit_code == EXIT_INPUT
    assert str(caught.value).startswith('source.filter: SQLite cannot run the filter on table articles: near "=": ')


def test_nothing_from_a_key_or_a_row_reaches_the_sql(tmp_path):
    make_db(tmp_path, 'CREATE TABLE "odd ""name""" ("key ""col""" TEXT, body TEXT)',
            rows=[("x'); DROP TABLE t; --", "payload")], insert='INSERT INTO "odd ""name""" VALUES (?, ?)')
    with source(tmp_path, table='odd "name"', keys=('key "col"',), text="{body}") as rows:
        assert [r.key for r in rows.rows("{body}")] == ["x'); DROP TABLE t; --"]
        assert rows.lookup(["x'); DROP TABLE t; --", "' OR 1=1 --"]) == {
            "x'); DROP TABLE t; --": "ok", "' OR 1=1 --": "missing",
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
    assert render("{a}|{b}|{c}|{d}|{{a}}", {"a": None, "b": 42, "c": 1.5, "d": "text"}) == "|42|1.5|text|{a}"
    with pytest.raises(TypeError, match='column "a" holds binary data'):
        render("{a}", {"a": b"x"})
