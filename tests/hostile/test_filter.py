"""A ``source.filter`` is one boolean expression in one read-only snapshot, or it is refused with
exit 2.

Each hostile filter is tried on every command that opens the source --
build, verify, list, search, evaluate (vector channel: key lookup) and
evaluate --channel lexical (every row's text) -- against a real PostgreSQL
and a real SQLite file; every table's row count and content digest (and the
SQLite file's bytes) must be the same afterwards. A ``;`` or comment marker
is refused wherever it stands; parentheses and quotes that merely look
dangerous still work.
"""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

from ptah.adapters.sources.rows import filter_problem
from ptah.core.errors import EXIT_INPUT, EXIT_OK, SpecError
from tests.conftest import run_cli, spec_yaml
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
SUFFIX = (
    "is not allowed in a filter, even inside quotes: it could end ptah's statement or comment out the rest of "
    "it; a filter is one boolean expression, such as status = 'published'"
)

# (filter, where the refused ; -- /* or NUL is): refused before any database sees it
REFUSED = [
    ("1=1) LIMIT 0; COMMIT; DELETE FROM articles WHERE id > 5; --", "the ; at character 13"),
    ("1=1; DELETE FROM articles", "the ; at character 4"),
    ("true) --", "the -- at character 7"),
    ("id > 0 -- and the rest", "the -- at character 8"),
    ("id > 0 /* ) */", "the /* at character 8"),
    ("id > 0\x00) OR (true", "the NUL character at character 7"),
    ("title = [no) --", "the -- at character 14"),
    (
        "title <> 'a); DELETE FROM articles; --'",
        "the ; at character 13",
    ),  # inside quotes too: one check for all
]
# (filter, PostgreSQL's reason, SQLite's reason): one statement the database cannot run, whatever
# the command
REJECTED = [
    (
        "1=1) UNION SELECT id, secret FROM secrets WHERE (1=1",
        "each UNION query must have the same number of columns",
        "SELECTs to the left and right of UNION do not have the same number of result columns",
    ),
    ("1=1) ORDER BY (1", 'syntax error at or near "ORDER"', 'near "ORDER": syntax error'),
    ("1=1) LIMIT 0", 'syntax error at or near ")"', 'near ")": syntax error'),
    ("(id > 0", 'syntax error at or near "LIMIT"', 'near "LIMIT": syntax error'),
    (
        "title = 'open",
        'unterminated quoted string at or near "\'open) LIMIT 0"',
        'unrecognized token: "\'open) LIMIT 0"',
    ),
    (
        "status = $1",
        'bind message supplies 0 parameters, but prepared statement "_pg3_0" requires 1',
        "Incorrect number of bindings supplied. The current statement uses 1, and there are 0 supplied.",
    ),
]
REJECTED_POSTGRES = [
    (
        "title = $q$ never closed",
        'unterminated dollar-quoted string at or near "$q$ never closed) LIMIT 0"',
        None,
    ),
    (
        "id IN (SELECT nextval('counter'))",
        "cannot execute nextval() in a read-only transaction",
        None,
    ),
    (
        "1 / (id - 1) > 0",
        "division by zero",
        None,
    ),  # on row 1, which search shows: it reads only those rows
]
REJECTED_SQLITE = [
    ("load_extension('/tmp/ptah-no-such-extension') IS NULL", None, "not authorized")
]
# One boolean expression, though ) or quotes look dangerous: every command succeeds and nothing
# changes.
HARMLESS = [
    "title <> 'a) OR (true'",
    "\"title\" <> 'it''s )'",
    "id >= 1 AND (body <> ')')",
    "id > 0) OR (id < 0",
]
HARMLESS_POSTGRES = [
    "title <> $q$) OR (true$q$",
    "title = E'\\'') OR (1=1",
    "title = $q$ x $q$) OR (true",
]
HARMLESS_SQLITE = ["[title] <> 'x' AND `body` <> ')'"]


# --- the project ----------------------------------------------------------------------------------


class Project:
    """A folder with ptah.yaml over ``articles`` (and a ``secrets`` table, a sequence in
    PostgreSQL), built once."""

    def __init__(self, folder, database: str, fingerprint):
        self.folder = folder
        self.database = database
        self.fingerprint = fingerprint
        (folder / "corpus.yaml").write_text(CORPUS)

    def write_spec(self, filter_: str | None = None) -> None:
        (self.folder / "ptah.yaml").write_text(
            spec_yaml(
                database=self.database,
                filter=filter_,
                generations={"docs": {"model": "ptah/deterministic", "dimension": 32}},
            )
        )

    def run(self, capsys, command: str) -> tuple[int, str, str]:
        argv = [a if a != "corpus.yaml" else self.folder / a for a in COMMANDS[command]]
        return run_cli(capsys, *argv, "--spec", self.folder / "ptah.yaml")


def _built(project: Project) -> Project:
    project.write_spec()
    assert (
        run_cli(None, "inference", "build", "--quiet", "--spec", project.folder / "ptah.yaml").code
        == EXIT_OK
    )
    return project


@pytest.fixture(scope="module")
def postgres_project(postgres_server, tmp_path_factory) -> Project:
    import psycopg

    name = postgres_server.create_database()
    with postgres_server.admin(name) as db:
        db.execute(
            "CREATE TABLE articles (id integer PRIMARY KEY, title text, body text, status text)"
        )
        db.cursor().executemany("INSERT INTO articles VALUES (%s, %s, %s, %s)", DOCS)
        db.execute("CREATE TABLE secrets (id integer, secret text)")
        db.execute("INSERT INTO secrets VALUES (1, 'the launch codes')")
        db.execute("CREATE SEQUENCE counter")

    def fingerprint() -> dict:
        with psycopg.connect(postgres_server.url(name), autocommit=True) as db:
            found = {
                "large objects": db.execute(
                    "SELECT count(*) FROM pg_largeobject_metadata"
                ).fetchone()[0]
            }
            for relation, kind in db.execute(
                "SELECT c.oid::regclass::text, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind IN ('r', 'S') AND n.nspname = 'public' ORDER BY 1"
            ).fetchall():
                row = "format('%s %s', last_value, is_called)" if kind == "S" else "t::text"
                found[relation] = db.execute(
                    f"SELECT count(*), md5(coalesce(string_agg({row}, E'\\n' ORDER BY {row}), '')) FROM {relation} t"
                ).fetchone()
            return found

    return _built(
        Project(tmp_path_factory.mktemp("pg-filter"), postgres_server.url(name), fingerprint)
    )


@pytest.fixture(scope="module")
def sqlite_project(tmp_path_factory) -> Project:
    folder = tmp_path_factory.mktemp("sqlite-filter")
    path = folder / "source.db"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT, status TEXT)"
        )
        db.executemany("INSERT INTO articles VALUES (?, ?, ?, ?)", DOCS)
        db.execute("CREATE TABLE secrets (id INTEGER, secret TEXT)")
        db.execute("INSERT INTO secrets VALUES (1, 'the launch codes')")
    db.close()

    def fingerprint() -> dict:
        found = {"file": hashlib.sha256(path.read_bytes()).hexdigest()}
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            for (table,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            ).fetchall():
                rows = sorted(repr(row) for row in db.execute(f'SELECT * FROM "{table}"'))
                found[table] = (len(rows), hashlib.md5("\n".join(rows).encode()).hexdigest())
        db.close()
        return found

    return _built(Project(folder, "sqlite:///source.db", fingerprint))


# --- ; and comments: refused before any database sees them, on every command
# -----------------------------


def _everywhere(project: Project, capsys, filter_: str) -> list[tuple[str, int, str, str]]:
    """Every command run with ``filter_``: (command, exit code, stdout, stderr); the source
    unchanged."""
    project.write_spec(filter_)
    before = project.fingerprint()
    results = [(command, *project.run(capsys, command)) for command in COMMANDS]
    assert project.fingerprint() == before
    return [(command, code, out, err.strip()) for command, code, out, err in results]


@pytest.mark.parametrize("project", ["postgres_project", "sqlite_project"])
@pytest.mark.parametrize("filter_, found", REFUSED)
def test_a_filter_with_a_semicolon_or_a_comment_is_refused_and_writes_nothing(
    request, capsys, project, filter_, found
):
    project = request.getfixturevalue(project)
    located = f"{project.folder / 'ptah.yaml'}:{FILTER_LINE}: source.filter: {found} {SUFFIX}"
    assert _everywhere(project, capsys, filter_) == [
        (command, EXIT_INPUT, "", located) for command in COMMANDS
    ]


# --- one statement the database cannot run: exit 2 naming the filter, on every command
# ---------------------


def cannot_run(database: str, reason: str) -> str:
    tail = " (a filter is one read-only boolean expression)" if database == "PostgreSQL" else ""
    return f"source.filter: {database} cannot run the filter on table articles: {reason}; fix the SQL expression{tail}"


@pytest.mark.parametrize(
    "project, filter_, reason",
    [("postgres_project", text, postgres) for text, postgres, _ in REJECTED + REJECTED_POSTGRES]
    + [("sqlite_project", text, sqlite) for text, _, sqlite in REJECTED + REJECTED_SQLITE],
)
def test_a_filter_the_database_rejects_is_exit_2_naming_the_filter(
    request, capsys, project, filter_, reason
):
    expected = cannot_run("PostgreSQL" if project == "postgres_project" else "SQLite", reason)
    results = _everywhere(request.getfixturevalue(project), capsys, filter_)
    assert results == [(command, EXIT_INPUT, "", expected) for command in COMMANDS]


# --- one expression that tries to write: the read-only snapshot refuses it, exit 2
# -----------------------

# (filter, the server's reason); every command that reads the source's rows meets it (search too: it
# shows each result's text, read from the source)
WRITING = [
    (
        "set_config('transaction_read_only', 'off', true) = 'off'",
        "transaction read-write mode must be set before any query",
    ),
    ("(SELECT nextval('counter')) > 0", "cannot execute nextval() in a read-only transaction"),
    ("lo_import('/etc/hostname') > 0", "cannot execute lo_import() in a read-only transaction"),
    (
        "query_to_xml('DELETE FROM articles RETURNING 1', true, false, '') IS NOT NULL",
        "DELETE is not allowed in a non-volatile function",
    ),
]


@pytest.mark.parametrize("filter_, reason", WRITING)
def test_a_postgres_filter_that_writes_is_stopped_by_the_read_only_snapshot(
    postgres_project, capsys, filter_, reason
):
    expected = cannot_run("PostgreSQL", reason)
    assert _everywhere(postgres_project, capsys, filter_) == [
        (command, EXIT_INPUT, "", expected) for command in COMMANDS
    ]


# --- quotes and parentheses that only look dangerous: every command works
# -----------------------------------


@pytest.mark.parametrize(
    "project, filter_",
    [("postgres_project", f) for f in HARMLESS + HARMLESS_POSTGRES]
    + [("sqlite_project", f) for f in HARMLESS + HARMLESS_SQLITE],
)
def test_a_filter_with_dangerous_looking_quotes_works(request, capsys, project, filter_):
    project = request.getfixturevalue(project)
    results = _everywhere(project, capsys, filter_)
    assert [(command, code) for command, code, _, _ in results] == [
        (command, EXIT_OK) for command in COMMANDS
    ]


# --- the readers hold the line without the specification loader
# ------------------------------------------


def test_the_readers_refuse_a_filter_given_to_them_directly(postgres_project, sqlite_project):
    from ptah.adapters.sources.postgres import PostgresSource
    from ptah.adapters.sources.sqlite import SqliteSource
    from ptah.core.spec import SourceSpec

    hostile = "1=1) LIMIT 0; COMMIT; DELETE FROM articles WHERE id > 5; --"
    for reader, project in ((PostgresSource, postgres_project), (SqliteSource, sqlite_project)):
        before = project.fingerprint()
        with pytest.raises(SpecError) as raised:
            reader(
                SourceSpec(project.database, "articles", ("id",), "{title}", hostile),
                str(project.folder),
            )
        assert raised.value.exit_code == EXIT_INPUT
        assert str(raised.value) == f"source.filter: the ; at character 13 {SUFFIX}"
        assert project.fingerprint() == before


@pytest.mark.parametrize(
    "reader, project, reason",
    [
        (
            "postgres",
            "postgres_project",
            "PostgreSQL cannot run the filter on table articles: cannot insert multiple "
            "commands into a prepared statement; fix the SQL expression (a filter is one "
            "read-only boolean expression)",
        ),
        (
            "sqlite",
            "sqlite_project",
            "SQLite cannot run the filter on table articles: You can only execute one "
            "statement at a time.; fix the SQL expression",
        ),
    ],
)
def test_the_reader_sends_the_filter_as_one_statement_even_past_the_check(
    request, monkeypatch, reader, project, reason
):
    """With the check switched off, the database driver itself refuses a second statement."""
    import importlib

    from ptah.core.spec import SourceSpec

    module, project = (
        importlib.import_module(f"ptah.adapters.sources.{reader}"),
        request.getfixturevalue(project),
    )
    monkeypatch.setattr(module, "filter_problem", lambda text: None)
    before = project.fingerprint()
    spec = SourceSpec(
        project.database,
        "articles",
        ("id",),
        "{title}",
        "1=1) LIMIT 0; COMMIT; DELETE FROM articles WHERE id > 5; --",
    )
    source = module.PostgresSource if reader == "postgres" else module.SqliteSource
    with pytest.raises(SpecError) as raised:
        source(spec, str(project.folder))
    assert str(raised.value) == f"source.filter: {reason}"
    assert project.fingerprint() == before


@pytest.mark.parametrize(
    "text, refused",
    [
        ("body <> '--'", True),
        ("body <> 'a;b'", True),
        ("body <> '/*'", True),
        ("body <> '*/'", False),
        ("title <> ')'", False),
        ("a - -1 > 0", False),
        ("a / 2 > 0", False),
    ],
)
def test_the_check_refuses_semicolons_and_comment_markers_wherever_they_are(text, refused):
    assert (filter_problem(text) is not None) == refused


# --- a statement that runs too long: stopped, exit 3 naming the setting
# -------------------------------------


def test_a_postgres_statement_past_the_timeout_is_stopped_with_exit_3(postgres_project, capsys):
    spec = postgres_project.folder / "ptah.yaml"
    postgres_project.write_spec("pg_sleep(1.5) IS NOT NULL")
    spec.write_text(spec.read_text().replace("  filter:", "  statement_timeout_s: 1\n  filter:"))
    before = postgres_project.fingerprint()
    code, out, err = postgres_project.run(capsys, "build")
    assert postgres_project.fingerprint() == before
    assert (code, out, err) == (
        3,
        "",
        f"{postgres_project.database} table articles: a statement ran longer than "
        "source.statement_timeout_s (1 s) and was stopped; raise the setting, or make "
        "source.filter cheaper\n",
    )
