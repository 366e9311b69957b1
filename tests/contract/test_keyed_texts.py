"""A few rows' texts read by key (``texts_of``) are exactly the texts a full pass over the rows
gives those keys.

On a real SQLite file and a real PostgreSQL server: integer, text and
composite keys, a filter, unknown keys, more keys than one statement takes,
and keys of hostile text; then evidence, counted by each database, that the
keyed read does not read the table.
"""

from __future__ import annotations

import sqlite3

import psycopg
import pytest

from ptah.adapters.sources.base import KeyedTexts, Source, texts_of
from ptah.adapters.sources.postgres import LOOKUP_BATCH, PostgresSource
from ptah.adapters.sources.sqlite import SqliteSource
from ptah.core.errors import SourceUnavailable
from ptah.core.spec import SourceSpec
from tests.contract.test_merge_verify import Plain

IDS = range(-6000, 30000, 3)  # 12,000 rows: more keys than one statement of either source takes
ARTICLES = [
    (i, f"title {i}", None if i % 7 == 0 else f"body {i}", "draft" if i % 5 == 0 else "published")
    for i in IDS
]
CODES = [
    ("0042", "zero-padded"),
    ("42", "plain"),
    ("x", "letter"),
    ("a\x1fb", "separator"),
    ("é✓", "accent"),
    ("it's", "quote"),
    ("%s", "percent"),
    ("line\nbreak", "newline"),
    ("", "empty key"),
]
TENANTS = [
    ("a\x1fb", 1, "first"),
    ("a", 1, "second"),
    ("acme", 12, "third"),
    ("é", 3, "fourth"),
    ("a", 2, "fifth"),
]
TABLES = {
    "sqlite": (
        "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT, status TEXT)",
        "CREATE TABLE codes (code TEXT PRIMARY KEY, label TEXT)",
        "CREATE TABLE tenants (tenant TEXT, id INTEGER, body TEXT, PRIMARY KEY (tenant, id))",
    ),
    "postgres": (
        "CREATE TABLE articles (id bigint PRIMARY KEY, title text, body text, status text)",
        "CREATE TABLE codes (code varchar(20) PRIMARY KEY, label text)",
        "CREATE TABLE tenants (tenant text, id integer, body text, PRIMARY KEY (tenant, id))",
    ),
}
ODD_KEYS = ["0042", "+3", "3.0", "", "nope", "99999999999999999999", "3\x1f6", "-0", " 3"]


class Database:
    """The tables above in one SQLite file or one PostgreSQL database, and its sources."""

    def __init__(self, kind: str, url: str, root):
        self.kind, self.url, self.root = kind, url, str(root)

    def execute(self, statement: str, rows=()) -> None:
        if self.kind == "postgres":
            with psycopg.connect(self.url, autocommit=True) as connection:
                statement = statement.replace("?", "%s")
                connection.cursor().executemany(statement, rows) if rows else connection.execute(
                    statement
                )
        else:
            with sqlite3.connect(f"{self.root}/source.db") as connection:
                connection.executemany(statement, rows) if rows else connection.execute(statement)

    def open(self, table: str = "articles", key_fields=("id",), filter: str | None = None):
        spec = SourceSpec(self.url, table, tuple(key_fields), "{title}", filter)
        return (PostgresSource if self.kind == "postgres" else SqliteSource)(spec, self.root)


def filled(kind: str, url: str, root) -> Database:
    database = Database(kind, url, root)
    for statement in TABLES[kind]:
        database.execute(statement)
    for table, rows in (("articles", ARTICLES), ("codes", CODES), ("tenants", TENANTS)):
        database.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows)
    if kind == "postgres":
        database.execute("ANALYZE")  # the planner knows the table is large
    return database


@pytest.fixture(params=["sqlite", "postgres"])
def database(request, tmp_path) -> Database:
    url = (
        request.getfixturevalue("postgres_url")
        if request.param == "postgres"
        else "sqlite:///source.db"
    )
    return filled(request.param, url, tmp_path)


def scanned(source, template: str, keys) -> dict[str, str]:
    """What a full pass over the rows gives ``keys``: the answer the keyed read must equal."""
    wanted = set(keys)
    return {row.key: row.text for row in source.rows(template) if row.key in wanted}


def test_integer_keys_more_than_one_statement_takes_read_as_a_full_pass_does(database):
    keys = [
        str(i) for i in range(-6100, 30100, 2)
    ] + ODD_KEYS  # every other row, and keys no row has
    assert len(keys) > LOOKUP_BATCH
    template = "{title}|{body}|{id}"
    with database.open() as source:
        keyed = source.texts_of(template, keys)
        assert keyed == scanned(source, template, keys)
    assert len(keyed) == 6000 and keyed["-6000"] == "title -6000|body -6000|-6000"
    assert (
        keyed["42"] == "title 42||42"
        and "0042" not in keyed
        and "+3" not in keyed
        and "-0" not in keyed
    )


def test_a_row_the_filter_excludes_is_left_out_and_a_percent_sign_in_the_filter_is_kept(database):
    keys = ["0", "3", "6", "9", "12", "15", "30", "60", "61"]
    for filter_, expected in (
        (
            "status = 'published'",
            {"3": "title 3", "6": "title 6", "9": "title 9", "12": "title 12"},
        ),
        ("title LIKE '%6%' OR id < 1", {"0": "title 0", "6": "title 6", "60": "title 60"}),
    ):
        with database.open(filter=filter_) as source:
            keyed = source.texts_of("{title}", keys)
            assert keyed == scanned(source, "{title}", keys) == expected


def test_text_keys_are_matched_exactly_whatever_they_hold(database):
    keys = [code for code, _ in CODES] + ["042", "X", "a", "b", "é", "%", "it''s"]
    rows = list(CODES) + (
        [("nul\x00key", "nul")] if database.kind == "sqlite" else []
    )  # no PostgreSQL text holds NUL
    if database.kind == "sqlite":
        database.execute("INSERT INTO codes VALUES (?, ?)", [rows[-1]])
    with database.open(table="codes", key_fields=("code",)) as source:
        keyed = source.texts_of("{label}", [*keys, "nul\x00key", "nul"])
        assert keyed == scanned(source, "{label}", [*keys, "nul\x00key", "nul"]) == dict(rows)


def test_composite_keys_read_as_a_full_pass_does_even_with_the_separator_inside_a_component(
    database,
):
    keys = [
        "a\x1fb\x1f1",
        "a\x1f1",
        "acme\x1f12",
        "acme\x1f012",
        "é\x1f3",
        "a",
        "a\x1f2\x1f",
        "\x1fa\x1f1",
        "a\x1f2",
    ]
    with database.open(
        table="tenants", key_fields=("tenant", "id"), filter="body <> 'fifth'"
    ) as source:
        keyed = source.texts_of("{body}", keys)
        assert keyed == scanned(source, "{body}", keys)
    assert keyed == {
        "a\x1fb\x1f1": "first",
        "a\x1f1": "second",
        "acme\x1f12": "third",
        "é\x1f3": "fourth",
    }


def test_two_rows_whose_composite_keys_read_alike_are_refused_as_the_full_pass_refuses_them(
    database,
):
    database.execute("CREATE TABLE pairs (tenant text, id text, body text)")
    database.execute(
        "INSERT INTO pairs VALUES (?, ?, ?)", [("a", "b\x1fc", "one"), ("a\x1fb", "c", "two")]
    )
    with database.open(table="pairs", key_fields=("tenant", "id")) as source:
        with pytest.raises(SourceUnavailable) as raised:
            source.texts_of("{body}", ["a\x1fb\x1fc"])
        assert str(raised.value).startswith(
            f"{source.where}: two rows have the key 'a\\x1fb\\x1fc' (tenant, id): "
        )
        assert str(raised.value).endswith(
            "because a key column holds U+001F, the separator of composite keys; "
            "key_fields must identify exactly one row"
        )
        assert source.texts_of("{body}", ["x"]) == {}


def test_one_value_stored_as_an_integer_and_as_text_is_refused_as_the_full_pass_refuses_it(
    tmp_path,
):
    with sqlite3.connect(tmp_path / "loose.db") as connection:
        connection.execute("CREATE TABLE loose (id, body)")  # no type: SQLite keeps 1 and '1' apart
        connection.executemany(
            "INSERT INTO loose VALUES (?, ?)", [(1, "integer"), ("1", "text"), (2, b"\x00")]
        )
    spec = SourceSpec("sqlite:///loose.db", "loose", ("id",), "{body}")
    with SqliteSource(spec, str(tmp_path)) as source:
        for key, message in (
            ("1", "two rows have the key '1' (id); key_fields must identify exactly one row"),
            (
                "2",
                "in the row with key '2', column \"body\" holds binary data (a BLOB), not text; "
                "cast it to text in a view",
            ),
        ):
            with pytest.raises(SourceUnavailable) as raised:
                source.texts_of("{body}", [key])
            assert str(raised.value) == f"sqlite:///loose.db table loose: {message}"


def test_a_plug_in_source_without_a_keyed_read_is_answered_from_its_rows(database):
    keys = ["a\x1fb\x1f1", "a\x1f1", "acme\x1f012", "a\x1f2", "é\x1f3"]
    with database.open(
        table="tenants", key_fields=("tenant", "id"), filter="body <> 'fifth'"
    ) as source:
        plain = Plain(source, ("texts_of",))
        assert (
            isinstance(plain, Source)
            and not isinstance(plain, KeyedTexts)
            and isinstance(source, KeyedTexts)
        )
        assert (
            texts_of(plain, "{body}", keys)
            == texts_of(source, "{body}", keys)
            == {"a\x1fb\x1f1": "first", "a\x1f1": "second", "é\x1f3": "fourth"}
        )
        assert texts_of(plain, "{body}", []) == {}


# --- the table is not read ------------------------------------------------------------------


def test_sqlite_reads_a_few_rows_by_key_in_far_fewer_steps_than_the_table_has_rows(tmp_path):
    with filled("sqlite", "sqlite:///source.db", tmp_path).open() as source:
        steps = [0]

        def counted() -> int:
            steps[0] += 1
            return 0

        source._db.set_progress_handler(
            counted, 1
        )  # called at every instruction of SQLite's machine
        assert source.texts_of("{title}", ["3", "6", "9"]) == {
            "3": "title 3",
            "6": "title 6",
            "9": "title 9",
        }
        keyed, steps[0] = steps[0], 0
        assert len(scanned(source, "{title}", ["3"])) == 1
        scan = steps[0]
    assert keyed < 300 < len(ARTICLES) < scan


def test_postgres_reads_a_few_rows_by_key_through_the_index_not_by_a_sequential_scan(
    postgres_url, tmp_path
):
    counters = "SELECT seq_scan, seq_tup_read, idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'articles'"
    with filled("postgres", postgres_url, tmp_path).open() as source:
        before = source._db.execute(
            counters
        ).fetchone()  # this transaction's own counts, read in it
        assert source.texts_of("{title}", ["3", "6", "9"]) == {
            "3": "title 3",
            "6": "title 6",
            "9": "title 9",
        }
        after = source._db.execute(counters).fetchone()
    assert (after[0] - before[0], after[1] - before[1]) == (
        0,
        0,
    )  # no sequential scan, no row read by one
    assert after[2] > before[2]
