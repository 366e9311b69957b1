"""``ptah inference build|verify|list|search`` through the real entry point: exact output and exit
codes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing

import pytest

from ptah.adapters.embedders.deterministic import DeterministicEmbedder
from tests.conftest import spec_yaml
from tests.contract.conftest import make_workspace
from tests.services.test_build import SLOW_MODEL, slow_build_of

TEXT = "{title}: {body}"
SPEC = spec_yaml(text=TEXT)
ROWS = [
    (1, "Cancel", "open billing and cancel"),
    (2, "Password", "use the reset link"),
    (3, "Invoices", "export as pdf"),
]


@pytest.fixture
def spec(tmp_path):
    path = tmp_path / "ptah.yaml"
    path.write_text(SPEC)
    update(path, "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
    update(path, "INSERT INTO articles VALUES (?, ?, ?)", ROWS)
    return path


def update(spec, sql: str, rows: list | None = None) -> None:
    """Run ``sql`` (once, or once for each of ``rows``) on the source beside ``spec``, committed."""
    with closing(sqlite3.connect(spec.parent / "source.db")) as connection, connection:
        connection.execute(sql) if rows is None else connection.executemany(sql, rows)


def identity_of(spec) -> str:
    from ptah.services.project import open_project

    with open_project(str(spec)) as project:
        return project.generation().identity.identity


def test_python_dash_m_ptah_runs_the_cli():
    done = subprocess.run(
        [sys.executable, "-m", "ptah", "inference", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert "build" in done.stdout and "verify" in done.stdout and "search" in done.stdout


def test_build_json_summary_then_verify_is_ok(spec, cli):
    code, out, err = cli("inference", "build", "--spec", str(spec), "--json")
    assert (code, err) == (0, "")
    summary = json.loads(out)
    assert summary.pop("seconds") >= 0
    assert summary == {
        "generation": "docs",
        "identity": identity_of(spec),
        "rows": 3,
        "embedded": 3,
        "deleted": 0,
        "unchanged": 0,
        "dimension": 16,
    }
    code, out, err = cli("inference", "verify", "--spec", str(spec))
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "ok: complete and fresh"


def test_build_is_quiet_off_a_terminal_and_silent_with_quiet(spec, cli):
    code, out, err = cli("inference", "build", "--spec", str(spec))
    assert (code, err) == (0, "")
    assert out.startswith(
        f"generation docs ({identity_of(spec)}): 3 rows, 3 embedded, 0 unchanged, 0 deleted in "
    )
    update(spec, "UPDATE articles SET body = 'changed' WHERE id = 2")
    assert cli("inference", "build", "--spec", str(spec), "--quiet") == (0, "", "")


def test_build_on_a_terminal_draws_progress_on_stderr(spec, cli, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, out, _ = cli("inference", "build", "--spec", str(spec))
    assert code == 0
    assert ": 3 rows, 3 embedded" in out


def test_verify_after_an_update_lists_the_stale_row_and_exits_1(spec, cli):
    cli("inference", "build", "--spec", str(spec))
    update(spec, "UPDATE articles SET body = 'rewritten' WHERE id = 3")
    update(spec, "INSERT INTO articles VALUES (4, 'New', 'not embedded yet')")
    code, out, err = cli("inference", "verify", "--spec", str(spec))
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        f"generation docs ({identity_of(spec)})",
        "  rows       4",
        "  vectors    3",
        "  coverage   75.00% (3 of 4 rows have a vector)",
        "  freshness  66.67% (2 of 3 vectors match their row's text)",
        "  orphans    0",
        "  missing: 4",
        "  stale: 3",
        "not ok: 1 rows without a vector, 1 stale vectors; run `ptah inference build docs`",
    ]
    code, out, _ = cli("inference", "verify", "--spec", str(spec), "--json")
    result = json.loads(out)
    assert code == 1
    assert (result["stale"], result["missing"], result["stale_keys"], result["missing_keys"]) == (
        1,
        1,
        ["3"],
        ["4"],
    )


def test_verify_exits_3_when_the_source_database_is_missing(spec, cli):
    cli("inference", "build", "--spec", str(spec))
    (spec.parent / "source.db").unlink()
    code, out, err = cli("inference", "verify", "--spec", str(spec))
    assert (code, out) == (3, "")
    assert err == f"sqlite:///source.db: no such database file {spec.parent / 'source.db'}\n"


def test_ptah_spec_is_honoured(spec, cli, monkeypatch, tmp_path):
    monkeypatch.setenv("PTAH_SPEC", str(spec))
    monkeypatch.chdir(tmp_path.parent)
    code, out, _ = cli("inference", "build", "--json")
    assert (code, json.loads(out)["rows"]) == (0, 3)


def test_an_unknown_generation_exits_2(spec, cli):
    code, out, err = cli("inference", "build", "nope", "--spec", str(spec))
    assert (code, out) == (2, "")
    assert err == f'{spec}: no generation named "nope"; the specification declares docs\n'


def test_list_shows_identity_rows_and_coverage(spec, cli):
    cli("inference", "build", "--spec", str(spec))
    update(spec, "INSERT INTO articles VALUES (4, 'New', 'not embedded yet')")
    code, out, _ = cli("inference", "list", "--spec", str(spec))
    identity = identity_of(spec)
    assert code == 0
    assert out.splitlines() == [
        "NAME  STATUS       IDENTITY             MODEL               VECTORS  ROWS  COVERAGE",
        # a row added: not current
        f"docs  partial 75%  {identity[:19]}  ptah/deterministic  3        4     75.00%",
    ]
    code, out, _ = cli("inference", "list", "--spec", str(spec), "--json")
    (listing,) = json.loads(out)
    assert (
        listing["identity"],
        listing["vectors"],
        listing["rows"],
        listing["covered"],
        listing["coverage"],
    ) == (identity, 3, 4, 3, 0.75)


def test_search_prints_ranked_keys_and_scores(spec, cli):
    cli("inference", "build", "--spec", str(spec))
    code, out, err = cli(
        "inference", "search", "export invoices as pdf", "-k", "2", "--spec", str(spec), "--json"
    )
    assert (code, err) == (0, "")
    result = json.loads(out)
    assert (result["generation"], result["query"], result["k"]) == (
        "docs",
        "export invoices as pdf",
        2,
    )
    # Deterministic 16-d vectors: cosines 0.9999999 (row 3), 0.3086067 (row 2), -0.1543034 (row 1).
    assert [(r["rank"], r["key"], round(r["score"], 6)) for r in result["results"]] == [
        (1, "3", 1.0),
        (2, "2", 0.308607),
    ]
    code, out, _ = cli(
        "inference", "search", "export invoices as pdf", "-k", "1", "--spec", str(spec)
    )
    score = result["results"][0]["score"]
    assert (code, out) == (0, f"  1  {score:.4f}  3  Invoices: export as pdf\n")


def test_search_refuses_k_0_and_a_generation_never_built(spec, cli):
    code, _, err = cli("inference", "search", "x", "-k", "0", "--spec", str(spec))
    assert code == 2 and "-k" in err
    code, out, err = cli("inference", "search", "x", "--spec", str(spec))
    assert (code, out) == (3, "")  # not built: one typed error, exit 3 everywhere
    assert err.startswith('generation "docs" has not been built with its current settings')


def test_a_second_concurrent_build_exits_3_naming_the_running_one(tmp_path, cli, embedders):
    space = make_workspace(tmp_path, None)
    with slow_build_of(space) as process:
        embedders[SLOW_MODEL] = DeterministicEmbedder(dimension=32)
        code, out, err = cli("inference", "build", "--spec", space.spec_path)
    assert (code, out) == (3, "")
    assert err == (
        f"another build of generation docs is running (pid {process.pid}); "
        "wait for it to finish, then run the build again.\n"
    )
