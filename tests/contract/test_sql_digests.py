"""Digests where the text lives: PostgreSQL hashes each row's rendered text exactly as ptah renders
and hashes it.

A PostgreSQL source renders a template of text, varchar and integer columns
in SQL and reads 32 bytes of SHA-256 a row instead of the text; anything it
cannot render exactly (another column type, a literal holding NUL) is read as
text and hashed here. The property: over hostile text -- NULLs, U+001F, CRLF,
every Unicode plane, braces in literals -- the database's digest of every row
equals ``text_digest`` of ptah's own rendering. Then verification gives the
same answers either way after rows are edited, deleted and inserted.
"""

from __future__ import annotations

import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ptah.adapters.sources.postgres import PostgresSource
from ptah.core.provenance import RowDigest, row_identity, text_digest
from ptah.core.spec import SourceSpec, render
from ptah.services.build import build
from ptah.services.verify import verify
from tests.contract.conftest import make_workspace

COLUMNS = ("t", "v", "n", "i", "s")
TABLE = "CREATE TABLE hostile (id bigint PRIMARY KEY, t text, v varchar, n bigint, i integer, s smallint)"
EVERY_PLANE = "".join(chr((plane << 16) | 0x41) for plane in range(17)) + "\U0010ffff\ufffd\uffff"
HOSTILE = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30
)
ROW = st.tuples(
    st.none() | HOSTILE,
    st.none() | HOSTILE,
    st.none() | st.integers(-(2**63), 2**63 - 1),
    st.none() | st.integers(-(2**31), 2**31 - 1),
    st.none() | st.integers(-(2**15), 2**15 - 1),
)
PIECE = st.sampled_from(COLUMNS).map(lambda column: "{" + column + "}") | HOSTILE.map(
    lambda literal: literal.replace("{", "{{").replace("}", "}}")
)


@pytest.fixture
def hostile_url(postgres_url) -> str:
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(TABLE)
    return postgres_url


def digests_both_ways(
    url: str, template: str, rows: list[tuple]
) -> tuple[list[RowDigest], list[RowDigest]]:
    """(the database's digests, ptah's: ``text_digest`` of ``render`` over the values as written),
    after replacing the table's rows with ``rows``."""
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("DELETE FROM hostile")
        connection.cursor().executemany(
            "INSERT INTO hostile VALUES (%s, %s, %s, %s, %s, %s)",
            [(number, *row) for number, row in enumerate(rows)],
        )
    with PostgresSource(SourceSpec(url, "hostile", ("id",), template, None)) as source:
        assert source._rendered(template) is not None  # the database's path, not the fallback
        in_database = list(source.digests(template))
    ours = [
        RowDigest(
            str(number),
            row_identity((str(number),)),
            text_digest(render(template, dict(zip(COLUMNS, row)))),
        )
        for number, row in enumerate(rows)
    ]
    return in_database, ours


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(pieces=st.lists(PIECE, max_size=8), rows=st.lists(ROW, max_size=6))
@example(
    pieces=["{t}", "\r\n", "{v}", "\x1f", "{n}", "{{}}"],
    rows=[(None, None, None, None, None), (EVERY_PLANE, "a\r\nb\x1fc", -(2**63), 0, -1)],
)
@example(pieces=[], rows=[("x", "y", 1, 2, 3)])
def test_the_database_digests_every_row_as_ptah_renders_and_hashes_it(hostile_url, pieces, rows):
    in_database, ours = digests_both_ways(hostile_url, "".join(pieces), rows)
    assert in_database == ours


def test_postgresql_text_refuses_nul_so_no_row_holds_one(hostile_url):
    with (
        psycopg.connect(hostile_url, autocommit=True) as connection,
        pytest.raises(psycopg.DataError),
    ):
        connection.execute("INSERT INTO hostile (id, t) VALUES (1, %s)", ("a\x00b",))


@pytest.mark.parametrize(
    "template", ["{t}\x00{v}", "{score}", "{code}", "{flag}", "{amount}", "{t}|{score}"]
)
def test_what_sql_cannot_render_exactly_is_read_as_text(postgres_url, template):
    """A NUL in a literal; a float, char(n) (psycopg reads its padding, a cast drops it), boolean
    and numeric."""
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE mixed (id integer, t text, v text, score double precision, code char(4), "
            "flag boolean, amount numeric)"
        )
        connection.execute(
            "INSERT INTO mixed VALUES (1, 'a', 'b', 0.1, 'ab', true, 0.0000001), "
            "(2, NULL, NULL, 1e20, NULL, NULL, NULL)"
        )
    with PostgresSource(SourceSpec(postgres_url, "mixed", ("id",), template, None)) as source:
        assert source._rendered(template) is None
        assert list(source.digests(template)) == [
            RowDigest(row.key, row.identity, text_digest(row.text)) for row in source.rows(template)
        ]
        texts = [row.text for row in source.rows(template)]
    expected = {
        "{t}\x00{v}": ["a\x00b", "\x00"],
        "{score}": ["0.1", "1e+20"],
        "{code}": ["ab  ", ""],
        "{flag}": ["True", ""],
        "{amount}": ["1E-7", ""],
        "{t}|{score}": ["a|0.1", "|1e+20"],
    }
    assert texts == expected[template]


def test_the_database_path_and_the_text_path_verify_alike_after_edits(
    store_kind, tmp_path, request
):
    """Rows edited, deleted and inserted between builds: the same counts, offenders and fingerprint
    either way."""
    store = request.getfixturevalue("postgres_url") if store_kind == "pgvector" else None
    space = make_workspace(
        tmp_path,
        store,
        source_url=request.getfixturevalue("postgres_server").url(
            request.getfixturevalue("postgres_server").create_database()
        ),
    )
    with space.project() as project:
        build(project)
    space.execute(
        "UPDATE articles SET body = ? WHERE id IN (2, 7)", ("rewritten\r\n\x1f" + EVERY_PLANE,)
    )
    space.execute("UPDATE articles SET title = NULL WHERE id = 9")
    space.execute("DELETE FROM articles WHERE id IN (4, 10)")
    space.execute(
        "INSERT INTO articles VALUES (?, ?, ?, ?)",
        [(11, "new", None, "published"), (12, "n", "b", "x")],
    )
    results = []
    for in_database in (True, False):
        with space.project() as project:
            assert (
                project.source._rendered(project.spec.source.text) is not None
            )  # the database's path exists
            project.source.digests_in_database = in_database
            results.append(verify(project))
    assert results[0] == results[1]
    result = results[0]
    assert (result.rows, result.vectors, result.covered, result.fresh) == (10, 10, 8, 5)
    assert (result.stale_keys, result.missing_keys, result.orphan_keys) == (
        ("2", "7", "9"),
        ("11", "12"),
        ("10", "4"),
    )
