"""A ``source.filter`` is one boolean expression in one read-only snapshot, or it is refused with exit 2.

Each hostile filter is tried on every command that opens the source --
build, verify, list, search, evaluate (vector channel: key lookup) and
evaluate --channel lexical (every row's text) -- against a real PostgreSQL
and a real SQLite file; every table's row count and content digest (and the
SQLite file's bytes) must be the same afterwards. Filters that merely look
dangerous inside quotes must still work.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptah.adapters.sources.filter_sql import POSTGRES, SQLITE, filter_problem
from ptah.core.errors import EXIT_INPUT, EXIT_OK, SpecError
from tests.hostile.conftest import run_cli
from tests.services.conftest import DOCS

CORPUS = """\
version: 1
default_k: 3
cases:
  - {id: cancel, query: "cancel a subscription", required: ["1"]}
  - {id: password, query: "reset my password", required: ["2"]}
"""
COMMANDS = {
    "build": ("inference", "build", "--quiet"),
    "verify": ("inference", "verify"),
    "list": ("inference", "list"),
    "search": ("inference", "search", "cancel a subscription", "-k", "3"),
    "evaluate": ("inference", "evaluate", "--corpus", "corpus.yaml"),
    "lexical": ("inference", "evaluate", "--corpus", "corpus.yaml", "--channel", "lexical"),
}
FILTER_LINE = 7
ESCAPES = "; a filter is one boolean expression, such as status = 'published'"
CLOSES = "closes a parenthesis the filter did not open, which would end ptah's WHERE (…)" + ESCAPES


def comment(pair: str, at: int) -> str:
    return f"the {pair} at character {at} starts a comment, which could hide the rest of ptah's statement; " \
           f"remove the comment{ESCAPES}"


# (filter, the message: refused before any database sees it)
LEXICAL = [
    ("1=1) LIMIT 0; COMMIT; DELETE FROM articles WHERE id > 5; --", f"the ) at character 4 {CLOSES}"),
    ("1=1; DELETE FROM articles", f"the ; at character 4 would end the statement (outside quotes, ; is not allowed){ESCAPES}"),
    ("1=1) UNION SELECT id, secret FROM secrets WHERE (1=1", f"the ) at character 4 {CLOSES}"),
    ("true) --", f"the ) at character 5 {CLOSES}"),
    ("id > 0 -- and the rest", comment("--", 8)),
    ("id > 0 /* ) */", comment("/*", 8)),
    ("1=1) ORDER BY (1", f"the ) at character 4 {CLOSES}"),
    ("1=1) LIMIT 0", f"the ) at character 4 {CLOSES}"),
    ("(id > 0", f"the ( at character 1 is never closed{ESCAPES}"),
    ("title = 'open", f"the quote ' at character 9 is never closed{ESCAPES}"),
    ("id > 0\x00) OR (true", "the NUL character at character 7 cannot be part of an SQL expression; remove it"),
]
POSTGRES_ONLY = [
    # E'…': \' is a quote inside the string, so the ) after the string is code
    ("title = E'\\'') OR (1=1", f"the ) at character 14 {CLOSES}"),
    ("title = $q$ x $q$) OR (true", f"the ) at character 18 {CLOSES}"),
    ("title = $q$ never closed", f"the quote $q$ at character 9 is never closed{ESCAPES}"),
]
SQLITE_ONLY = [
    ("title = [no) --", f"the quote [ at character 9 is never closed{ESCAPES}"),
]
# Dangerous only in looks: ; ) -- inside quotes. Every command succeeds and nothing changes.
HARMLESS = ["title <> 'a); DELETE FROM articles; --'", "\"title\" <> 'it''s ); /* x'", "id >= 1 AND (body <> '--')"]
HARMLESS_POSTGRES = ["title <> $q$); DELETE FROM articles; --$q$", "title <> E'\\'); DELETE FROM articles; --'"]
HARMLESS_SQLITE = ["[title] <> 'x' AND `body` <> ')'"]


# --- the project ----------------------------------------------------------------------------------


class Project:
    """A folder with ptah.yaml over ``articles`` (and a ``secrets`` table, a sequence in PostgreSQL), built once."""

    def __init__(self, folder, database: str, fingerprint):
        self.folder = folder
        self.database = database
        self.fingerprint = fingerprint
        (folder / "corpus.yaml").write_text(CORPUS)

    def write_spec(self, filter_: str | None = None) -> None:
        lines = ["version: 1", "source:", f"  database: {json.dumps(self.database)}", "  table: articles",
                 "  key_fields: [id]", '  text: "{title}\\n\\n{body}"']
        if filter_ is not None:
            lines.append(f"  filter: {json.dumps(filter_)}")  # JSON's string syntax is YAML's double-quoted one
        lines += ["active: docs", "generations:", "  docs: {model: ptah/deterministic, dimension: 32}"]
        (self.folder / "ptah.yaml").write_text("\n".join(lines) + "\n")

    def run(self, capsys, command: str) -> tuple[int, str, str]:
        argv = [a if a != "corpus.yaml" else self.folder / a for a in COMMANDS[command]]
        return run_cli(capsys, *argv, "--spec", self.folder / "ptah.yaml")


def _built(project: Project) -> Project:
    project.write_spec()
    with pytest.raises(SystemExit) as info:
        from ptah.cli import main

        main(["inference", "build", "--quiet", "--spec", str(project.folder / "ptah.yaml")])
    assert info.value.code == EXIT_OK
    return project


@pytest.fixture(scope="module")
def postgres_project(postgres_server, tmp_path_factory) -> Project:
    import psycopg

    name = postgres_server.create_database()
    with postgres_server.admin(name) as db:
        db.execute("CREATE TABLE articles (id integer PRIMARY KEY, title text, body text, status text)")
        db.cursor().executemany("INSERT INTO articles VALUES (%s, %s, %s, %s)", DOCS)
        db.execute("CREATE TABLE secrets (id integer, secret text)")
        db.execute("INSERT INTO secrets VALUES (1, 'the launch codes')")
        db.execute("CREATE SEQUENCE counter")

    def fingerprint() -> dict:
        with psycopg.connect(postgres_server.url(name), autocommit=True) as db:
            found = {"large objects": db.execute("SELECT count(*) FROM pg_largeobject_metadata").fetchone()[0]}
            for relation, kind in db.execute(
                "SELECT c.oid::regclass::text, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind IN ('r', 'S') AND n.nspname = 'public' ORDER BY 1"
            ).fetchall():
                row = "format('%s %s', last_value, is_called)" if kind == "S" else "t::text"
                found[relation] = db.execute(
                    f"SELECT count(*), md5(coalesce(string_agg({row}, E'\\n' ORDER BY {row}), '')) FROM {relation} t"
                ).fetchone()
            return found

    return _built(Project(tmp_path_factory.mktemp("pg-filter"), postgres_server.url(name), fingerprint))


@pytest.fixture(scope="module")
def sqlite_project(tmp_path_factory) -> Project:
    folder = tmp_path_factory.mktemp("sqlite-filter")
    path = folder / "source.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT, status TEXT)")
        db.executemany("INSERT INTO articles VALUES (?, ?, ?, ?)", DOCS)
        db.execute("CREATE TABLE secrets (id INTEGER, secret TEXT)")
        db.execute("INSERT INTO secrets VALUES (1, 'the launch codes')")
    db.close()

    def fingerprint() -> dict:
        found = {"file": hashlib.sha256(path.read_bytes()).hexdigest()}
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall():
                rows = sorted(repr(row) for row in db.execute(f'SELECT * FROM "{table}"'))
                found[table] = (len(rows), hashlib.md5("\n".join(rows).encode()).hexdigest())
        db.close()
        return found

    return _built(Project(folder, "sqlite:///source.db", fingerprint))


# --- hostile filters: refused before any database sees them, on every command -----------------------------


def _refused_everywhere(project: Project, capsys, filter_: str, message: str) -> None:
    project.write_spec(filter_)
    before = project.fingerprint()
    located = f"{project.folder / 'ptah.yaml'}:{FILTER_LINE}: source.filter: {message}"
    results = [(command, *project.run(capsys, command)) for command in COMMANDS]
    assert project.fingerprint() == before
    assert [(command, code, out, err.strip()) for command, code, out, err in results] == [
        (command, EXIT_INPUT, "", located) for command in COMMANDS
    ]


@pytest.mark.parametrize("filter_, message", LEXICAL + POSTGRES_ONLY)
def test_a_postgres_filter_that_is_not_one_expression_is_refused_and_writes_nothing(
        postgres_project, capsys, filter_, message):
    _refused_everywhere(postgres_project, capsys, filter_, message)


@pytest.mark.parametrize("filter_, message", LEXICAL + SQLITE_ONLY)
def test_a_sqlite_filter_that_is_not_one_expression_is_refused_and_writes_nothing(
        sqlite_project, capsys, filter_, message):
    _refused_everywhere(sqlite_project, capsys, filter_, message)


# --- one expression that tries to write: the read-only snapshot refuses it, exit 2 -----------------------

# (filter, the server's reason); every command that reads the source's rows meets it (search too: it shows
# each result's text, read from the source)
WRITING = [
    ("set_config('transaction_read_only', 'off', true) = 'off'",
     "transaction read-write mode must be set before any query"),
    ("(SELECT nextval('counter')) > 0", "cannot execute nextval() in a read-only transaction"),
    ("lo_import('/etc/hostname') > 0", "cannot execute lo_import() in a read-only transaction"),
    ("query_to_xml('DELETE FROM articles RETURNING 1', true, false, '') IS NOT NULL",
     "DELETE is not allowed in a non-volatile function"),
]
EVALUATING = {"build": EXIT_INPUT, "verify": EXIT_INPUT, "list": EXIT_INPUT, "search": EXIT_INPUT,
              "evaluate": EXIT_INPUT, "lexical": EXIT_INPUT}


@pytest.mark.parametrize("filter_, reason", WRITING)
def test_a_postgres_filter_that_writes_is_stopped_by_the_read_only_snapshot(postgres_project, capsys, filter_, reason):
    postgres_project.write_spec(filter_)
    before = postgres_project.fingerprint()
    expected = (f"source.filter: PostgreSQL cannot run the filter on table articles: {reason}; fix the SQL "
                "expression (a filter is one read-only boolean expression)")
    results = {command: postgres_project.run(capsys, command) for command in EVALUATING}
    assert postgres_project.fingerprint() == before
    for command, exit_code in EVALUATING.items():
        code, _, err = results[command]
        assert (command, code) == (command, exit_code), err
        if exit_code == EXIT_INPUT:
            assert err.strip() == expected


def test_a_sqlite_filter_cannot_load_an_extension(sqlite_project, capsys):
    sqlite_project.write_spec("load_extension('/tmp/ptah-no-such-extension') IS NULL")
    before = sqlite_project.fingerprint()
    code, _, err = sqlite_project.run(capsys, "build")
    assert (code, err.strip()) == (EXIT_INPUT, "source.filter: SQLite cannot run the filter on table articles: "
                                               "not authorized; fix the SQL expression")
    assert sqlite_project.fingerprint() == before


# --- quotes that only look dangerous: every command works ---------------------------------------------------


@pytest.mark.parametrize("project, filter_", [("postgres_project", f) for f in HARMLESS + HARMLESS_POSTGRES]
                         + [("sqlite_project", f) for f in HARMLESS + HARMLESS_SQLITE])
def test_a_filter_with_dangerous_looking_quotes_works(request, capsys, project, filter_):
    project = request.getfixturevalue(project)
    project.write_spec(filter_)
    before = project.fingerprint()
    for command in COMMANDS:
        code, _, err = project.run(capsys, command)
        assert (command, code) == (command, EXIT_OK), err
    assert project.fingerprint() == before


# --- the readers hold the line without the specification loader ------------------------------------------


def test_the_readers_refuse_a_filter_given_to_them_directly(postgres_project, sqlite_project):
    from ptah.adapters.sources.postgres import PostgresSource
    from ptah.adapters.sources.sqlite import SqliteSource
    from ptah.core.spec import SourceSpec

    hostile = "1=1) LIMIT 0; COMMIT; DELETE FROM articles WHERE id > 5; --"
    for reader, project in ((PostgresSource, postgres_project), (SqliteSource, sqlite_project)):
        before = project.fingerprint()
        with pytest.raises(SpecError) as raised:
            reader(SourceSpec(project.database, "articles", ("id",), "{title}", hostile), str(project.folder))
        assert raised.value.exit_code == EXIT_INPUT
        assert str(raised.value) == f"source.filter: the ) at character 4 {CLOSES}"
        assert project.fingerprint() == before


def test_the_postgres_reader_sends_the_filter_as_one_statement_even_past_the_check(postgres_project, monkeypatch):
    """With the lexical check switched off, the server itself refuses a second statement."""
    import ptah.adapters.sources.postgres as module
    from ptah.core.spec import SourceSpec

    monkeypatch.setattr(module, "filter_problem", lambda text, dialect: None)
    before = postgres_project.fingerprint()
    spec = SourceSpec(postgres_project.database, "articles", ("id",), "{title}",
                      "1=1) LIMIT 0; COMMIT; DELETE FROM articles WHERE id > 5; --")
    with pytest.raises(SpecError) as raised:
        module.PostgresSource(spec)
    assert str(raised.value) == (
        "source.filter: PostgreSQL cannot run the filter on table articles: cannot insert multiple commands into a "
        "prepared statement; fix the SQL expression (a filter is one read-only boolean expression)"
    )
    assert postgres_project.fingerprint() == before


# --- the check itself --------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, dialect, accepted", [
    ("a$b$ = 1) OR (true", POSTGRES, False),  # $ continues an identifier: no dollar quote starts there
    ("x = $1", POSTGRES, True),
    ("[a;b] = 1", SQLITE, True),  # a bracketed name in SQLite
    ("[a;b] = 1", POSTGRES, False),  # an array subscript in PostgreSQL
    ("title <> $$)$$", SQLITE, False),  # no dollar quotes in SQLite
    ("U&'d\\0061t\\+000061' = 'x'", POSTGRES, True),
    ("1E'\\'' = 'x'", POSTGRES, True),  # 1 then E'\'' (PostgreSQL before 15) or an error: never a bare quote
    ("id IN (SELECT id FROM secrets WHERE (secret <> ')'))", SQLITE, True),
])
def test_the_lexical_check_reads_quotes_as_the_database_does(text, dialect, accepted):
    assert (filter_problem(text, dialect) is None) == accepted


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="a1 ()'\"`[];-/*$\\E\n", max_size=24))
def test_what_the_check_accepts_sqlite_reads_as_ending_outside_quotes_and_comments(text):
    """SQLite's own lexer (``complete_statement``) agrees: an accepted filter leaves no quote or comment open."""
    if filter_problem(text, SQLITE) is None:
        assert sqlite3.complete_statement(f"SELECT 1 WHERE ({text});")
        assert not sqlite3.complete_statement(f"SELECT 1 WHERE ({text})")
