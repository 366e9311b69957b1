"""Fixtures of the server's tests: a module's project and server (:mod:`serving`), and a real
PostgreSQL with pgvector started by ``pgserver`` in a temporary folder (one per session; each test
that asks for ``postgres_url`` gets a database of its own)."""

from __future__ import annotations

import functools
import tempfile
import warnings
from pathlib import Path

import pytest
from serving import PostgresServer, Project, Server, make_project, run_cli


@pytest.fixture
def cli(capsys):
    """``cli(*argv)``: ``ptah ARGV`` in this process, a :class:`serving.Result` (code, out, err)."""
    return functools.partial(run_cli, capsys)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Project:
    return make_project(tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def server(project) -> Server:
    running = Server(project.spec, "--workers", "2").start()
    yield running
    running.stop()


@pytest.fixture(scope="session")
def postgres_server() -> PostgresServer:
    """PostgreSQL 16 with pgvector for the session, in a folder made by ``tempfile`` (run as root,
    pgserver runs the server as a user that must traverse the folder's parents)."""
    folder = Path(tempfile.mkdtemp(prefix="ptah-serve-pg-"))
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pgserver

        server = pgserver.get_server(folder, cleanup_mode="delete")
    try:
        yield PostgresServer(server, folder)
    finally:
        server.cleanup()


@pytest.fixture
def postgres_database(postgres_server) -> str:
    """The name of a fresh, empty database."""
    return postgres_server.create_database()


@pytest.fixture
def postgres_url(postgres_server, postgres_database) -> str:
    """A ``postgresql://`` URL of a fresh, empty database (superuser ``postgres``)."""
    return postgres_server.url(postgres_database)
