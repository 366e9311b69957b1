"""A password the user writes -- in a URL, a libpq key=value string, or through ${VAR} -- is never
shown or stored.

Every form is tried where it can surface: a specification error (exit 2),
a connection that fails (exit 3: an unreachable host, a wrong password
against the real server), and a run that succeeds (its stdout, its report).
The password must appear in none of them, nor in any file name under the
project. A ``store:`` or ``source.database`` that is neither a URL nor a
path ptah accepts is refused: a key=value string never becomes a file name.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from ptah.core.errors import EXIT_INPUT, EXIT_OK, EXIT_OPERATIONAL
from tests.conftest import run_cli, spec_yaml
from tests.services.conftest import DOCS

SECRET = "S3cr3t-pa55"
HINT = "write postgresql://USER@HOST:PORT/DBNAME, the password in PGPASSWORD, ~/.pgpass or ${VAR}"
CORPUS = 'version: 1\ndefault_k: 3\ncases:\n  - {id: cancel, query: "cancel a subscription", required: ["1"]}\n'
UNREACHABLE = "127.0.0.1:1"  # nothing listens on port 1: the connection is refused at once


def write_project(folder: Path, database: str, store: str | None = None) -> Path:
    """ptah.yaml over ``articles`` (and source.db holding it), ``database`` and ``store`` as given,
    and a corpus."""
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "source.db").exists():
        with sqlite3.connect(folder / "source.db") as db:
            db.execute(
                "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT, status TEXT)"
            )
            db.executemany("INSERT INTO articles VALUES (?, ?, ?, ?)", DOCS)
        db.close()
    (folder / "ptah.yaml").write_text(spec_yaml(database=database, text="{title}", store=store))
    (folder / "corpus.yaml").write_text(CORPUS)
    return folder / "ptah.yaml"


def assert_nowhere(secret: str, folder: Path, *texts: str) -> None:
    """``secret`` is in none of ``texts`` and in no file or folder name under ``folder``."""
    for text in texts:
        assert secret not in text, text
    names = [name for _, folders, files in os.walk(folder) for name in (*folders, *files)]
    assert not [name for name in names if secret in name]


def every_command(capsys, spec: Path) -> list[tuple[int, str, str]]:
    corpus = spec.parent / "corpus.yaml"
    commands = [
        ("inference", "build", "--quiet"),
        ("inference", "verify"),
        ("inference", "list"),
        ("inference", "search", "cancel"),
        ("inference", "evaluate", "--corpus", corpus),
    ]
    return [run_cli(capsys, *command, "--spec", spec) for command in commands]


# --- values that are refused, exit 2, at the line that holds them
# ---------------------------------------------

KEY_VALUE = [
    f"host=db.internal password={SECRET} dbname=src",
    f"host=db.internal password = '{SECRET} with spaces' dbname=src",
    f"host=db.internal password='{SECRET}\\' still quoted' dbname=src",
    f"dbname=src password={SECRET}",
]


@pytest.mark.parametrize(
    "field, where, says",
    [
        ("database", "3: source.database", f"and ptah reads URLs: {HINT}"),
        ("store", "7: store", f"not a file path; {HINT}"),
    ],
)
@pytest.mark.parametrize("value", KEY_VALUE)
def test_a_key_value_connection_string_is_refused_without_its_password_and_never_becomes_a_file(
    tmp_path, capsys, value, field, where, says
):
    spec = write_project(
        tmp_path,
        value if field == "database" else "sqlite:///source.db",
        store=value if field == "store" else None,
    )
    for code, out, err in every_command(capsys, spec):
        assert (code, out) == (EXIT_INPUT, "")
        assert err.startswith(f'{spec}:{where}: "')
        assert err.strip().endswith(f" is a libpq key=value connection string, {says}")
        assert "password" in err and "***" in err
        assert_nowhere(SECRET, tmp_path, out, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.yaml", "ptah.yaml", "source.db"]


def test_the_issue_example_is_shown_redacted(tmp_path, capsys):
    spec = write_project(tmp_path, f"host=db.internal password={SECRET} dbname=src")
    code, _, err = run_cli(capsys, "inference", "build", "--spec", spec)
    assert (code, err.strip()) == (
        EXIT_INPUT,
        f'{spec}:3: source.database: "host=db.internal password=*** dbname=src" is a libpq key=value connection '
        f"string, and ptah reads URLs: {HINT}",
    )


@pytest.mark.parametrize(
    "field, value, line, message",
    [
        (
            "store",
            f"vectors password={SECRET}.db",
            7,
            f'"vectors password=***" is a libpq key=value connection string, not a file path; {HINT}',
        ),
        (
            "store",
            f"./reports/password:{SECRET}@x.db",
            7,
            f'"./reports/password:***@x.db" has a user:password@ part, which a file path cannot have; {HINT}',
        ),
        (
            "store",
            f"builder:{SECRET}@db.internal/vectors",
            7,
            f'"builder:***@db.internal/vectors" has a user:password@ part, which a file path cannot have; {HINT}',
        ),
        (
            "store",
            f"mysql://builder:{SECRET}@db.internal/vectors",
            7,
            '"mysql://builder:***@db.internal/vectors" is not a store ptah opens; write a file path or postgresql://…',
        ),
        (
            "database",
            f"mysql://reader:{SECRET}@db.internal/src",
            3,
            '"mysql://reader:***@db.internal/src" is not a database URL ptah reads; write sqlite:///FILE (relative to this '
            "file) or postgresql://USER@HOST/DATABASE",
        ),
        (
            "database",
            f"reader:{SECRET}@db.internal/src",
            3,
            '"reader:***@db.internal/src" is not a database URL ptah reads; write sqlite:///FILE (relative to this '
            "file) or postgresql://USER@HOST/DATABASE",
        ),
        (
            "database",
            f"sqlite:///host=db password={SECRET}",
            3,
            f'"sqlite:///host=db password=***" is a libpq key=value connection string, not a file path; {HINT}',
        ),
        (
            "database",
            f"sqlite:///data/{SECRET[:3]}:{SECRET}@x.db",
            3,
            f'"sqlite:///data/{SECRET[:3]}:***@x.db" has a user:password@ part, which a file path cannot have; {HINT}',
        ),
    ],
)
def test_every_other_form_is_refused_with_its_password_hidden(
    tmp_path, capsys, field, value, line, message
):
    spec = write_project(
        tmp_path,
        value if field == "database" else "sqlite:///source.db",
        store=value if field == "store" else None,
    )
    code, out, err = run_cli(capsys, "inference", "build", "--spec", spec)
    name = "source.database" if field == "database" else "store"
    assert (code, err.strip()) == (EXIT_INPUT, f"{spec}:{line}: {name}: {message}")
    assert_nowhere(SECRET, tmp_path, out, err)


def test_a_value_from_the_environment_is_quoted_as_written_never_expanded(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("PTAH_TEST_STORE", f"host=db.internal user=builder password={SECRET}")
    monkeypatch.setenv("PTAH_TEST_SOURCE", f"reader:{SECRET}@db.internal/src")
    spec = write_project(tmp_path, "${PTAH_TEST_SOURCE}", store="${PTAH_TEST_STORE}")
    code, out, err = run_cli(capsys, "inference", "build", "--spec", spec)
    assert (code, err.strip().splitlines()) == (
        EXIT_INPUT,
        [
            f'{spec}:3: source.database: "${{PTAH_TEST_SOURCE}}" is not a database URL ptah reads; write sqlite:///FILE '
            "(relative to this file) or postgresql://USER@HOST/DATABASE",
            f'{spec}:7: store: "${{PTAH_TEST_STORE}}" is a libpq key=value connection string, not a file path; {HINT}',
        ],
    )
    assert_nowhere(SECRET, tmp_path, out, err)


# --- connections that fail: exit 3, the URL shown with ***
# ---------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://reader:{SECRET}@{UNREACHABLE}/src?connect_timeout=2",
        f"postgresql://reader@{UNREACHABLE}/src?connect_timeout=2&password={SECRET}",
        "postgresql://reader:${PTAH_TEST_PASSWORD}@" + UNREACHABLE + "/src?connect_timeout=2",
    ],
)
@pytest.mark.parametrize("field", ["database", "store"])
def test_an_unreachable_server_never_shows_the_password(tmp_path, capsys, monkeypatch, url, field):
    monkeypatch.setenv("PTAH_TEST_PASSWORD", SECRET)
    spec = write_project(
        tmp_path,
        url if field == "database" else "sqlite:///source.db",
        store=url if field == "store" else None,
    )
    what = "source database" if field == "database" else "store"
    code, out, err = run_cli(capsys, "inference", "build", "--quiet", "--spec", spec)
    assert code == EXIT_OPERATIONAL
    assert err.startswith(f"cannot connect to the {what} postgresql://reader")
    assert "***" in err and "refused" in err
    assert_nowhere(SECRET, tmp_path, out, err)


def test_a_store_path_with_an_equals_sign_is_refused(tmp_path, capsys):
    spec = write_project(tmp_path, "sqlite:///source.db", store="./runs/a=b/vectors.db")
    code, _, err = run_cli(capsys, "inference", "build", "--spec", spec)
    assert (code, err.strip()) == (
        EXIT_INPUT,
        f'{spec}:7: store: "./runs/a=b/vectors.db" holds =, which a store '
        f"path may not (a key=value connection string is no file name); {HINT}",
    )
    assert not (tmp_path / "runs").exists()


@pytest.fixture(scope="module")
def password_role(postgres_server):
    """A role that must give its password (scram-sha-256) on the server's socket; every other role
    stays trusted.

    Yields (role, two databases: the source's, holding ``articles``, and the store's, with
    pgvector).
    """
    role = "ptah_secret_reader"
    hba = Path(postgres_server.socket) / "pg_hba.conf"
    original = hba.read_text()
    hba.write_text(f"local all {role} scram-sha-256\n" + original)
    source, store = postgres_server.create_database(), postgres_server.create_database()
    with postgres_server.admin() as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{SECRET}'")
        admin.execute("SELECT pg_reload_conf()")
    with postgres_server.admin(source) as db:
        db.execute(
            "CREATE TABLE articles (id integer PRIMARY KEY, title text, body text, status text)"
        )
        db.cursor().executemany("INSERT INTO articles VALUES (%s, %s, %s, %s)", DOCS)
        db.execute(f"GRANT SELECT ON articles TO {role}")
    with postgres_server.admin(store) as db:
        db.execute("CREATE EXTENSION vector")
        db.execute(f"GRANT CREATE ON SCHEMA public TO {role}")
    yield role, source, store
    hba.write_text(original)
    with postgres_server.admin() as admin:
        admin.execute("SELECT pg_reload_conf()")


@pytest.mark.parametrize("field", ["database", "store"])
def test_a_wrong_password_is_refused_by_the_server_and_never_shown(
    tmp_path, capsys, postgres_server, password_role, field
):
    role, source, store = password_role
    wrong = f"{SECRET}-wrong"
    url = postgres_server.url(source if field == "database" else store, user=role, password=wrong)
    spec = write_project(
        tmp_path,
        url if field == "database" else "sqlite:///source.db",
        store=url if field == "store" else None,
    )
    code, out, err = run_cli(capsys, "inference", "build", "--quiet", "--spec", spec)
    what = "source database" if field == "database" else "store"
    assert code == EXIT_OPERATIONAL
    assert err.startswith(f"cannot connect to the {what} postgresql://{role}:***@/")
    assert f'password authentication failed for user "{role}"' in err
    assert_nowhere(SECRET, tmp_path, out, err)


def test_a_run_that_succeeds_keeps_the_password_out_of_output_report_and_file_names(
    tmp_path, capsys, monkeypatch, postgres_server, password_role
):
    role, source, store = password_role
    spec = write_project(
        tmp_path,
        "postgresql://"
        + role
        + ":${PTAH_TEST_PASSWORD}@/"
        + source
        + f"?host={postgres_server.socket}",
        store=postgres_server.url(store, user=role, password=SECRET),
    )
    monkeypatch.setenv("PTAH_TEST_PASSWORD", SECRET)
    outputs = []
    for command in (
        ("inference", "build"),
        ("inference", "list", "--json"),
        ("inference", "verify", "--json"),
        ("inference", "search", "cancel", "--json"),
        (
            "inference",
            "evaluate",
            "--corpus",
            tmp_path / "corpus.yaml",
            "--output",
            tmp_path / "report.json",
            "--html",
            tmp_path / "report.html",
        ),
    ):
        code, out, err = run_cli(capsys, *command, "--spec", spec)
        assert code == EXIT_OK, err
        outputs += [out, err]
    report = (tmp_path / "report.json").read_text()
    assert json.loads(report)["runs"][0]["generation"]["name"] == "docs"
    assert_nowhere(SECRET, tmp_path, *outputs, report, (tmp_path / "report.html").read_text())
