"""One contract, two sources: the same table in SQLite and in PostgreSQL reads identically.

Rows, their order, keys, row identities, texts, counts, lookups and errors
are compared between :class:`SqliteSource` and :class:`PostgresSource` over
the same data; then what only PostgreSQL can get wrong (types, privileges,
connections, its snapshot).
"""

from __future__ import annotations

import sqlite3

import psycopg
import pytest

from ptah.adapters.sources.postgres import PostgresSource
from ptah.adapters.sources.sqlite import SqliteSource
from ptah.core.errors import EXIT_INPUT, EXIT_OPERATIONAL, SourceUnavailable, SpecError
from ptah.core.spec import SourceRow, SourceSpec

ARTICLES = [
    (1, "Cancel", "Open billing.", "published", 1.5),
    (42, "Answer", None, "published", None),
    (-7, "Négatif ✓", "Body\nwith a newline", "draft", 0.1),
    (2**40, "Big", "big body", "published", 1e20),
    (10, "Ten%", "percent", "published", 3.0),
    (9, "Draft", "not yet", "draft", -2.25),
]
TENANTS = [
    ("a\x1fb", 1, "first"),
    ("a", 1, "second"),
    ("acme", 12, "third"),
    ("B", 2, "fourth"),
    ("é", 3, "fifth"),
    ("Z", 4, "sixth"),
    ("a", 2, "seventh"),
    ("5:x", 1, "eighth"),
]
CODES = [("0042", "zero-padded"), ("42", "plain"), ("x", "letter")]

SQLITE_TABLES = (
    "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT, status TEXT, score REAL)",
    "CREATE TABLE tenants (tenant TEXT, id INTEGER, body TEXT, PRIMARY KEY (tenant, id))",
    "CREATE TABLE codes (code TEXT PRIMARY KEY, label TEXT)",
    "CREATE TABLE loose (id INTEGER, body TEXT, data BLOB)",
)
POSTGRES_TABLES = (
    "CREATE TABLE articles (id bigint PRIMARY KEY, title text, body text, status text, score double precision)",
    "CREATE TABLE tenants (tenant text, id integer, body text, PRIMARY KEY (tenant, id))",
    "CREATE TABLE codes (code varchar(10) PRIMARY KEY, label text)",
    "CREATE TABLE loose (id integer, body text, data bytea)",
)
INSERTS = (("articles", ARTICLES), ("tenants", TENANTS), ("codes", CODES))


@pytest.fixture
def databases(tmp_path, postgres_url):
    """The same tables and rows in ``source.db`` and in a fresh PostgreSQL database: (sqlite URL,
    postgres URL)."""
    with sqlite3.connect(tmp_path / "source.db") as connection:
        for statement in SQLITE_TABLES:
            connection.execute(statement)
        for table, rows in INSERTS:
            connection.executemany(
                f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows
            )
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        for statement in POSTGRES_TABLES:
            connection.execute(statement)
        for table, rows in INSERTS:
            connection.cursor().executemany(
                f"INSERT INTO {table} VALUES ({', '.join(['%s'] * len(rows[0]))})", rows
            )
    return "sqlite:///source.db", postgres_url


class Pair:
    """The SQLite and the PostgreSQL source of one specification (all but the database)."""

    def __init__(
        self,
        databases,
        root,
        table="articles",
        key_fields=("id",),
        text="{title}|{body}|{score}|{id}",
        filter=None,
    ):
        self.specs = [
            SourceSpec(database, table, tuple(key_fields), text, filter) for database in databases
        ]
        self.root = str(root)

    def open(self):
        return SqliteSource(self.specs[0], self.root), PostgresSource(self.specs[1], self.root)

    def both(self, read):
        """``read(source)`` on each source, closed afterwards."""
        results = []
        for source in self.open():
            with source:
                results.append(read(source))
        return results

    def errors(self, read=lambda source: list(source.rows(source.source.text))):
        """The error each source raises, its message with the database URL replaced by DB."""
        found = []
        for spec, kind in zip(self.specs, (SqliteSource, PostgresSource)):
            with pytest.raises((SourceUnavailable, SpecError)) as raised:
                with kind(spec, self.root) as source:
                    read(source)
            found.append(
                (
                    type(raised.value),
                    raised.value.exit_code,
                    str(raised.value).replace(spec.redacted_database, "DB"),
                )
            )
        return found


def test_rows_and_counts_are_identical(databases, tmp_path):
    sqlite_rows, postgres_rows = Pair(databases, tmp_path).both(
        lambda s: (list(s.rows(s.source.text)), s.count())
    )
    assert sqlite_rows == postgres_rows
    rows, count = postgres_rows
    assert count == 6
    assert [row.key for row in rows] == ["-7", "1", "9", "10", "42", "1099511627776"]
    assert rows[0] == SourceRow("-7", "2:-7", "Négatif ✓|Body\nwith a newline|0.1|-7")
    assert rows[4] == SourceRow("42", "2:42", "Answer|||42")
    assert rows[5].text == "Big|big body|1e+20|1099511627776"


def test_the_filter_selects_the_same_rows_even_with_a_percent_sign(databases, tmp_path):
    for filter_, keys in (
        ("status = 'published'", ["1", "10", "42", "1099511627776"]),
        ("title LIKE 'Ten%' OR score < 0", ["9", "10"]),
    ):
        pair = Pair(databases, tmp_path, filter=filter_)
        sqlite_rows, postgres_rows = pair.both(
            lambda s: (list(s.rows("{title}")), s.count(), s.lookup(["9", "10", "1"]))
        )
        assert sqlite_rows == postgres_rows
        assert [row.key for row in postgres_rows[0]] == keys
        assert postgres_rows[1] == len(keys)


def test_composite_keys_read_identically_in_code_point_order(databases, tmp_path):
    pair = Pair(databases, tmp_path, table="tenants", key_fields=("tenant", "id"), text="{body}")
    sqlite_rows, postgres_rows = pair.both(lambda s: list(s.rows(s.source.text)))
    assert sqlite_rows == postgres_rows
    assert [(row.key, row.identity) for row in postgres_rows] == [
        ("5:x\x1f1", "3:5:x1:1"),
        ("B\x1f2", "1:B1:2"),
        ("Z\x1f4", "1:Z1:4"),
        ("a\x1f1", "1:a1:1"),
        ("a\x1f2", "1:a1:2"),
        ("a\x1fb\x1f1", "3:a\x1fb1:1"),
        ("acme\x1f12", "4:acme2:12"),
        ("é\x1f3", "1:é1:3"),
    ]


def test_lookups_answer_identically(databases, tmp_path):
    keys = [
        "1",
        "42",
        "0042",
        "-7",
        "1099511627776",
        "nope",
        "9",
        "1\x1f2",
        "",
        "10",
        "+1",
        "1.0",
        "99999999999999999999",
    ]
    pair = Pair(databases, tmp_path, filter="status = 'published'")
    sqlite_status, postgres_status = pair.both(lambda s: s.lookup(keys))
    assert sqlite_status == postgres_status
    assert postgres_status == {
        "1": "ok",
        "42": "ok",
        "0042": "missing",
        "-7": "filtered",
        "1099511627776": "ok",
        "nope": "missing",
        "9": "filtered",
        "1\x1f2": "missing",
        "": "missing",
        "10": "ok",
        "+1": "missing",
        "1.0": "missing",
        "99999999999999999999": "missing",
    }
    composite = [
        "a\x1f1",
        "a\x1fb\x1f1",
        "acme\x1f12",
        "acme\x1f012",
        "B\x1f2",
        "b\x1f2",
        "é\x1f3",
        "a",
    ]
    pair = Pair(
        databases,
        tmp_path,
        table="tenants",
        key_fields=("tenant", "id"),
        text="{body}",
        filter="body <> 'third'",
    )
    sqlite_status, postgres_status = pair.both(lambda s: s.lookup(composite))
    assert sqlite_status == postgres_status
    assert postgres_status == {
        "a\x1f1": "ok",
        "a\x1fb\x1f1": "missing",
        "acme\x1f12": "filtered",
        "acme\x1f012": "missing",
        "B\x1f2": "ok",
        "b\x1f2": "missing",
        "é\x1f3": "ok",
        "a": "missing",
    }
    codes = Pair(databases, tmp_path, table="codes", key_fields=("code",), text="{label}")
    sqlite_status, postgres_status = codes.both(lambda s: s.lookup(["0042", "42", "x", "0043"]))
    assert (
        sqlite_status == postgres_status == {"0042": "ok", "42": "ok", "x": "ok", "0043": "missing"}
    )


def test_a_column_named_in_another_case_reads_the_same(databases, tmp_path):
    sqlite_rows, postgres_rows = Pair(databases, tmp_path, text="{Title}").both(
        lambda s: list(s.rows(s.source.text))
    )
    assert sqlite_rows == postgres_rows and postgres_rows[1].text == "Cancel"


def test_unreadable_tables_fail_identically(databases, tmp_path):
    missing_table = Pair(databases, tmp_path, table="nowhere").errors()
    assert (
        missing_table[0]
        == missing_table[1]
        == (SourceUnavailable, EXIT_OPERATIONAL, "DB: no table or view named nowhere")
    )
    missing_column = Pair(databases, tmp_path, text="{titel}").errors()
    assert (
        missing_column[0]
        == missing_column[1]
        == (
            SourceUnavailable,
            EXIT_OPERATIONAL,
            'DB table articles: has no column titel (named in the text template); did you mean "title"?',
        )
    )
    bad_key = Pair(databases, tmp_path, key_fields=("ident",)).errors()
    assert bad_key[0] == bad_key[1]
    bad_filter = Pair(databases, tmp_path, filter="no_such_column = 1").errors()
    assert [error[:2] for error in bad_filter] == [(SpecError, EXIT_INPUT)] * 2
    assert all(
        error[2].startswith("source.filter: ")
        and "cannot run the filter on table articles" in error[2]
        for error in bad_filter
    )


def test_duplicate_null_and_binary_values_fail_identically(databases, tmp_path):
    sqlite_url, postgres_url = databases
    with sqlite3.connect(tmp_path / "source.db") as connection:
        connection.executemany(
            "INSERT INTO loose VALUES (?, ?, ?)", [(1, "a", b"\x00"), (1, "b", None)]
        )
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.cursor().executemany(
            "INSERT INTO loose VALUES (%s, %s, %s)", [(1, "a", b"\x00"), (1, "b", None)]
        )
    duplicate = Pair(databases, tmp_path, table="loose", text="{body}").errors()
    assert (
        duplicate[0]
        == duplicate[1]
        == (
            SourceUnavailable,
            EXIT_OPERATIONAL,
            "DB table loose: two rows have the key '1' (id); key_fields must identify exactly one row",
        )
    )
    binary = Pair(databases, tmp_path, table="loose", text="{data}").errors()
    assert (
        binary[0]
        == binary[1]
        == (
            SourceUnavailable,
            EXIT_OPERATIONAL,
            "DB table loose: in the row with key '1', column \"data\" holds binary data (a BLOB), not text; "
            "cast it to text in a view",
        )
    )
    for connect, marker in (
        (lambda: sqlite3.connect(tmp_path / "source.db"), "?"),
        (lambda: psycopg.connect(postgres_url, autocommit=True), "%s"),
    ):
        with connect() as connection:
            connection.execute(f"DELETE FROM loose WHERE body = {marker}", ("b",))
            connection.execute(f"INSERT INTO loose VALUES (NULL, {marker}, NULL)", ("c",))
    null_key = Pair(databases, tmp_path, table="loose", text="{body}").errors()
    assert (
        null_key[0]
        == null_key[1]
        == (
            SourceUnavailable,
            EXIT_OPERATIONAL,
            'DB table loose: in the row where id = None, key column "id" holds NULL; key columns must hold integers or text',
        )
    )


# --- what only PostgreSQL can get wrong ------------------------------------------------------


def spec(url: str, **fields) -> SourceSpec:
    values = {
        "table": "articles",
        "key_fields": ("id",),
        "text": "{title}",
        "filter": None,
    } | fields
    return SourceSpec(url, values["table"], values["key_fields"], values["text"], values["filter"])


def test_a_key_column_that_is_neither_integer_nor_text_is_refused(postgres_url):
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("CREATE TABLE priced (price numeric PRIMARY KEY, title text)")
    with pytest.raises(SourceUnavailable) as raised:
        PostgresSource(spec(postgres_url, table="priced", key_fields=("price",)))
    assert str(raised.value) == (
        f'{spec(postgres_url).redacted_database} table priced: key column "price" is of type numeric; '
        "key columns must hold integers or text"
    )


def test_the_source_reads_one_snapshot_while_others_write(databases):
    postgres_url = databases[1]
    with PostgresSource(spec(postgres_url)) as source:
        before = [row.key for row in source.rows("{title}")]
        with psycopg.connect(postgres_url, autocommit=True) as writer:
            writer.execute("INSERT INTO articles VALUES (77, 'New', 'new', 'published', 0)")
            writer.execute("DELETE FROM articles WHERE id = 1")
        assert [row.key for row in source.rows("{title}")] == before
        assert source.count() == 6
        assert source.lookup(["77", "1"]) == {"77": "missing", "1": "ok"}
    with PostgresSource(spec(postgres_url)) as later:
        assert later.lookup(["77", "1"]) == {"77": "ok", "1": "missing"}


def test_an_unreachable_server_is_exit_3_without_the_password():
    url = "postgresql://reader:s3cr3t-pw@127.0.0.1:1/support?connect_timeout=2"
    with pytest.raises(SourceUnavailable) as raised:
        PostgresSource(spec(url))
    message = str(raised.value)
    assert raised.value.exit_code == EXIT_OPERATIONAL
    assert message.startswith(
        "cannot connect to the source database postgresql://reader:***@127.0.0.1:1/support"
    )
    assert "s3cr3t-pw" not in message


def test_a_table_the_user_may_not_read_is_exit_3(databases, postgres_server, postgres_database):
    with postgres_server.admin(postgres_database) as connection:
        connection.execute("CREATE ROLE reader_without_grant LOGIN")
    url = postgres_server.url(postgres_database, user="reader_without_grant", password="pw")
    with pytest.raises(SourceUnavailable) as raised:
        PostgresSource(spec(url))
    assert str(raised.value) == (
        f"postgresql://reader_without_grant:***@/{postgres_database}?host={postgres_server.url().split('host=')[1]} "
        "table articles: permission denied (permission denied for table articles); grant SELECT on it"
    )
