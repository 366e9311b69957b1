"""Verification as one pass: the store's digests asked a block of rows at a time, the rows gone
found in key order.

The store methods verification reads (``digests_of``, ``stored_in_order``,
``held_keys``) on both stores; verify's counts and offender lists when rows
are edited, deleted and inserted after a build, with more rows gone than it
lists and with composite keys holding U+001F; and the sources' neighbour check
for two rows with one key, now that no source keeps every identity it read.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import psycopg
import pytest

from ptah.adapters.sources.base import RowDigests, Source
from ptah.adapters.sources.postgres import PostgresSource
from ptah.adapters.sources.sqlite import SqliteSource
from ptah.adapters.stores.base import BlockDigests, Snapshot
from ptah.core.corpus import join_key
from ptah.core.errors import SourceUnavailable
from ptah.core.parts import MAX_OFFENDERS
from ptah.core.provenance import row_identity
from ptah.core.spec import SourceSpec
from ptah.services.build import build
from ptah.services.verify import list_generations, verify, verify_in
from tests.contract.test_store_contract import IDENTITY, location, record, store  # noqa: F401 (fixtures)
from tests.services.conftest import Workspace


def write(store, keys: list[tuple[str, ...]]) -> None:
    rows = [
        (row_identity(components), join_key(components), f"digest of {join_key(components)}")
        for components in keys
    ]
    store.write_vectors(IDENTITY, rows, np.ones((len(rows), 3), dtype=np.float32))


# --- the store's side -------------------------------------------------------------------


def test_digests_of_reads_the_rows_asked_that_have_a_vector(store):
    write(store, [("a",), ("b",), ("c",)])
    with store.snapshot() as snapshot:
        assert snapshot.digests_of(IDENTITY, ["1:b", "1:z", "1:a"]) == {
            "1:a": ("a", "digest of a"),
            "1:b": ("b", "digest of b"),
        }
        assert snapshot.digests_of(IDENTITY, []) == {}
        assert snapshot.digests_of("sha256:other", ["1:a"]) == {}


def test_stored_rows_come_by_row_identity_in_code_point_order_whatever_the_collation(store):
    keys = [
        ("b",),
        ("a",),
        ("é",),
        ("Z",),
        ("10",),
        ("9",),
        ("a", "x\x1fy"),
        ("😀",),
        ("ß",),
        ("a", "b"),
    ]
    write(store, keys)
    with store.snapshot() as snapshot:
        pairs = list(snapshot.stored_in_order(IDENTITY))
        assert list(snapshot.stored_in_order("sha256:other")) == []
    expected = sorted((row_identity(components), join_key(components)) for components in keys)
    assert pairs == expected
    assert [key for _, key in pairs] == [
        "9",
        "Z",
        "a",
        "a\x1fb",
        "a\x1fx\x1fy",
        "b",
        "ß",
        "é",
        "😀",
        "10",
    ]


def test_held_keys_are_those_with_a_vector(store):
    write(store, [("a",), ("b",)])
    with store.snapshot() as snapshot:
        assert snapshot.held_keys(IDENTITY, {"a", "zz", "b"}) == {"a", "b"}
        assert snapshot.held_keys(IDENTITY, []) == set()
        assert snapshot.held_keys("sha256:other", {"a"}) == set()


# --- verify through the store's side ------------------------------------------------------


def rows_of(count: int) -> list[tuple]:
    return [(i, f"title {i}", f"body {i}", "published") for i in range(1, count + 1)]


def test_more_rows_gone_than_listed_are_counted_and_the_first_by_key_named(store_workspace):
    space = store_workspace
    space.execute("INSERT INTO articles VALUES (?, ?, ?, ?)", rows_of(40)[10:])
    with space.project() as project:
        build(project)
    gone = [3, 5, 11, 12, 19, 20, 21, 25, 28, 30, 33, 36, 39, 40]
    space.execute("DELETE FROM articles WHERE id IN (" + ", ".join(map(str, gone)) + ")")
    space.execute("UPDATE articles SET body = 'edited' WHERE id IN (2, 22)")
    space.execute(
        "INSERT INTO articles VALUES (?, ?, ?, ?)",
        [(41, "new", "new", "published"), (7000, "n", "n", "x")],
    )
    with space.project() as project:
        result = verify(project)
        listing = [line for line in list_generations(project) if line.name == "docs"]
    assert (result.rows, result.vectors, result.covered, result.fresh) == (28, 40, 26, 24)
    assert (result.stale, result.missing, result.orphans) == (2, 2, 14)
    assert result.stale_keys == ("2", "22")
    assert result.missing_keys == ("41", "7000")
    assert result.orphan_keys == tuple(sorted(map(str, gone))[:MAX_OFFENDERS])
    assert result.orphan_keys == ("11", "12", "19", "20", "21", "25", "28", "3", "30", "33")
    assert [(line.vectors, line.rows, line.covered, line.status) for line in listing] == [
        (40, 28, 26, "partial 92%")
    ]


def test_composite_keys_holding_u001f_are_found_exactly(tmp_path):
    space = Workspace(tmp_path)
    space.execute(
        "CREATE TABLE tenants (tenant TEXT, id TEXT, body TEXT, PRIMARY KEY (tenant, id))"
    )
    rows = [("a", "b\x1fc", "one"), ("a\x1fb", "d", "two"), ("z", "1", "three"), ("a", "b", "four")]
    space.execute("INSERT INTO tenants VALUES (?, ?, ?)", rows)
    space.write_spec(table="tenants", key_fields=("tenant", "id"), text="{body}")
    with space.project() as project:
        build(project)
    space.execute("DELETE FROM tenants WHERE tenant = 'a' AND id = ?", ("b\x1fc",))
    with space.project() as project:
        result = verify(project)
    assert (result.rows, result.vectors, result.covered, result.orphans) == (3, 4, 3, 1)
    assert result.orphan_keys == ("a\x1fb\x1fc",)


# --- the source's side: two rows with one key, without keeping every key -------------------


def sqlite_source(tmp_path, table: str, key_fields=("id",), filter=None) -> SqliteSource:
    return SqliteSource(
        SourceSpec("sqlite:///source.db", table, key_fields, "{body}", filter), str(tmp_path)
    )


def in_both(tmp_path, postgres_url, columns: str, rows: list[tuple]) -> None:
    """Table ``t`` of ``columns`` (SQLite's spelling; PostgreSQL's is lower-cased) holding ``rows``
    in the SQLite file ``source.db`` and in the PostgreSQL database."""
    with sqlite3.connect(tmp_path / "source.db") as connection:
        connection.execute(f"CREATE TABLE t ({columns})")
        connection.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(rows[0]))})", rows)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"CREATE TABLE t ({columns.lower()})")
        connection.cursor().executemany(
            f"INSERT INTO t VALUES ({', '.join(['%s'] * len(rows[0]))})", rows
        )


def test_an_integer_and_its_text_in_a_composite_key_are_two_rows_with_one_key(tmp_path):
    with sqlite3.connect(tmp_path / "source.db") as connection:
        connection.execute(
            "CREATE TABLE t (tenant, id, body TEXT)"
        )  # no types: 1 and '1' stay apart
        connection.executemany(
            "INSERT INTO t VALUES (?, ?, ?)",
            [("x", 1, "a"), ("x", 2, "b"), ("y", 5, "c"), ("x", "1", "d"), ("x", "01", "e")],
        )
    with (
        sqlite_source(tmp_path, "t", ("tenant", "id")) as source,
        pytest.raises(SourceUnavailable) as raised,
    ):
        list(source.digests("{body}"))
    assert str(raised.value) == (
        "sqlite:///source.db table t: two rows have the key 'x\\x1f1' (tenant, id); "
        "key_fields must identify exactly one row"
    )


def test_text_spelled_like_an_integer_is_one_row_when_the_filter_excludes_its_twin(tmp_path):
    with sqlite3.connect(tmp_path / "source.db") as connection:
        connection.execute("CREATE TABLE t (id, body TEXT)")
        connection.executemany(
            "INSERT INTO t VALUES (?, ?)", [(1, "int"), (2, "int"), ("1", "text"), ("7", "t")]
        )
    with sqlite_source(tmp_path, "t", filter="body <> 'int' OR id = 2") as source:
        assert [(row.key, row.text) for row in source.rows("{body}")] == [
            ("2", "int"),
            ("1", "text"),
            ("7", "t"),
        ]


def test_a_nocase_key_column_lists_rows_by_code_point_as_postgresql_does(tmp_path, postgres_url):
    rows = [("a", "one"), ("B", "two"), ("A", "three"), ("b", "four")]
    with sqlite3.connect(tmp_path / "source.db") as connection:
        connection.execute("CREATE TABLE t (id TEXT COLLATE NOCASE, body TEXT)")
        connection.executemany("INSERT INTO t VALUES (?, ?)", rows)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("CREATE TABLE t (id text, body text)")
        connection.cursor().executemany("INSERT INTO t VALUES (%s, %s)", rows)
    spec = SourceSpec(postgres_url, "t", ("id",), "{body}", None)
    with sqlite_source(tmp_path, "t") as lite, PostgresSource(spec) as postgres:
        assert (
            [row.key for row in lite.rows("{body}")]
            == [row.key for row in postgres.rows("{body}")]
            == ["A", "B", "a", "b"]
        )
    with sqlite3.connect(tmp_path / "source.db") as connection:
        connection.execute("INSERT INTO t VALUES ('a', 'again')")
    with (
        sqlite_source(tmp_path, "t") as lite,
        pytest.raises(SourceUnavailable, match="two rows have the key 'a'"),
    ):
        list(lite.rows("{body}"))


def test_lookup_identities_reads_components_exactly(tmp_path, postgres_url):
    rows = [("a\x1fb", "c", "one"), ("a", "b\x1fc", "two"), ("x", "1", "three")]
    in_both(tmp_path, postgres_url, "tenant TEXT, id TEXT, body TEXT", rows)
    asked = [
        row_identity(("a", "b\x1fc")),
        row_identity(("a\x1fb", "c")),
        row_identity(("a", "b", "c")),
        row_identity(("x", "1")),
        "1:x1:2",
        "not an identity",
        "9:short",
    ]
    expected = {
        asked[0]: "ok",
        asked[1]: "filtered",
        asked[2]: "missing",
        asked[3]: "ok",
        "1:x1:2": "missing",
        "not an identity": "missing",
        "9:short": "missing",
    }
    lite = SqliteSource(
        SourceSpec("sqlite:///source.db", "t", ("tenant", "id"), "{body}", "body <> 'one'"),
        str(tmp_path),
    )
    postgres = PostgresSource(
        SourceSpec(postgres_url, "t", ("tenant", "id"), "{body}", "body <> 'one'")
    )
    with lite, postgres:
        assert lite.lookup_identities(asked) == postgres.lookup_identities(asked) == expected


def test_both_sources_list_identities_in_code_point_order(tmp_path, postgres_url):
    rows = [
        ("a\x1fb", "c", "one"),
        ("a", "b\x1fc", "two"),
        ("x", "10", "three"),
        ("x", "9", "four"),
        ("é", "1", "five"),
        ("Z", "😀", "six"),
        ("ab", "", "seven"),
        ("x", "2", "excluded"),
    ]
    in_both(tmp_path, postgres_url, "tenant TEXT, id TEXT, body TEXT", rows)
    specs = [
        SourceSpec(url, "t", ("tenant", "id"), "{body}", "body <> 'excluded'")
        for url in ("sqlite:///source.db", postgres_url)
    ]
    with SqliteSource(specs[0], str(tmp_path)) as lite, PostgresSource(specs[1]) as postgres:
        listed = [list(lite.identities()), list(postgres.identities())]
    expected = sorted(row_identity(row[:2]) for row in rows[:-1])
    assert listed == [expected, expected]
    assert expected[:2] == ["1:Z1:😀", "1:a3:b\x1fc"]


def test_integer_keys_of_every_length_come_in_identity_order(tmp_path):
    with sqlite3.connect(tmp_path / "source.db") as connection:
        connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
        connection.executemany(
            "INSERT INTO t VALUES (?, ?)", [(i, "b") for i in (-5, 0, 7, 10, 99, 100, 2**40)]
        )
    with sqlite_source(tmp_path, "t") as source:
        listed = list(source.identities())
    assert listed == sorted(f"{len(str(i))}:{i}" for i in (-5, 0, 7, 10, 99, 100, 2**40))
    assert listed == [
        "13:1099511627776",
        "1:0",
        "1:7",
        "2:-5",
        "2:10",
        "2:99",
        "3:100",
    ]  # "13:" sorts before "1:"


def test_a_nul_in_a_sqlite_key_is_looked_up_instead_of_merged(tmp_path):
    space = Workspace(tmp_path)
    space.execute("CREATE TABLE articles (id TEXT PRIMARY KEY, title TEXT, body TEXT)")
    space.execute(
        "INSERT INTO articles VALUES (?, ?, ?)",
        [
            ("a\x00bc", "t", "b"),
            ("b", "t", "b"),
            ("zz", "t", "b"),
            ("é\x00", "t", "b"),
            ("q", "t", "b"),
        ],
    )
    space.write_spec()
    with space.project() as project:
        build(project)
        assert project.source.identities() is None  # SQLite's length() stops at the NUL
    space.execute("DELETE FROM articles WHERE id IN ('zz', 'b')")
    with space.project() as project:
        result = verify(project)
    assert (result.rows, result.vectors, result.covered, result.orphans) == (3, 5, 3, 2)
    assert result.orphan_keys == ("b", "zz")


# --- a store or source kind that reads no blocks (a plug-in's) ------------------------------


class Plain:
    """A snapshot or source seen only through the protocol a plug-in implements: ``hidden`` are not
    there."""

    def __init__(self, inner, hidden: tuple[str, ...]):
        self._inner, self._hidden = inner, hidden

    def __getattr__(self, name: str):
        if name in self._hidden:
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_a_plug_ins_store_and_source_verify_as_ptahs_own(tmp_path):
    space = Workspace(tmp_path)
    space.execute(
        "CREATE TABLE tenants (tenant TEXT, id TEXT, body TEXT, PRIMARY KEY (tenant, id))"
    )
    rows = [(f"t{i % 3}", f"{i}\x1f{i}" if i % 4 == 0 else str(i), f"body {i}") for i in range(30)]
    space.execute("INSERT INTO tenants VALUES (?, ?, ?)", rows)
    space.write_spec(table="tenants", key_fields=("tenant", "id"), text="{body}")
    with space.project() as project:
        build(project)
    space.execute("DELETE FROM tenants WHERE body IN ('body 4', 'body 7', 'body 12', 'body 29')")
    space.execute("UPDATE tenants SET body = 'edited' WHERE body IN ('body 3', 'body 8')")
    space.execute("INSERT INTO tenants VALUES ('t9', '1', 'new')")
    with space.project() as project, project.store().snapshot() as snapshot:
        generation = project.generation()
        ours = verify_in(project, generation, snapshot)
        project.source = Plain(project.source, ("digests", "identities", "lookup_identities"))
        plain = Plain(snapshot, ("digests_of", "stored_in_order", "held_keys"))
        assert isinstance(plain, Snapshot) and not isinstance(plain, BlockDigests)
        assert isinstance(project.source, Source) and not isinstance(project.source, RowDigests)
        theirs = verify_in(project, generation, plain)
    assert ours == theirs
    assert (ours.stale_keys, ours.missing_keys) == (("t0\x1f3", "t2\x1f8\x1f8"), ("t9\x1f1",))
    assert ours.orphan_keys == ("t0\x1f12\x1f12", "t1\x1f4\x1f4", "t1\x1f7", "t2\x1f29")
