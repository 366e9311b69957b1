"""A real PostgreSQL with pgvector for the contract tests, started by ``pgserver`` in a temporary
folder.

One server per test session (it starts in about a second); every test that
asks for ``postgres_url`` gets a database of its own, so tests never see each
other's tables. The server listens on a Unix socket only.
"""

from __future__ import annotations

import itertools
import tempfile
import warnings
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.services.conftest import DOCS, Workspace

_DATABASES = itertools.count(1)


class PostgresServer:
    """The running server: URLs for its databases and an administrator connection."""

    def __init__(self, server, folder: Path):
        self.server = server
        self.socket = str(folder)

    def url(
        self, database: str = "postgres", user: str = "postgres", password: str | None = None
    ) -> str:
        secret = f":{quote(password, safe='')}" if password else ""
        return f"postgresql://{user}{secret}@/{database}?host={quote(self.socket)}"

    def admin(self, database: str = "postgres"):
        import psycopg

        return psycopg.connect(self.url(database), autocommit=True)

    def create_database(self) -> str:
        name = f"ptah_test_{next(_DATABASES)}"
        with self.admin() as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return name


@pytest.fixture(scope="session")
def postgres_server() -> PostgresServer:
    """PostgreSQL 16 with the pgvector extension available, for the whole session.

    The data folder is made by ``tempfile`` rather than ``tmp_path_factory``:
    run as root, pgserver runs the server as an unprivileged user that must
    traverse the folder's parents, and a concurrent pytest resets its own
    ``pytest-of-root`` folder to mode 0700.
    """
    folder = Path(tempfile.mkdtemp(prefix="ptah-pg-"))
    with (
        warnings.catch_warnings()
    ):  # platformdirs warns when XDG_RUNTIME_DIR is unset (CI containers)
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


class PostgresWorkspace(Workspace):
    """A :class:`Workspace` whose specification names a store (and optionally the source) in
    PostgreSQL.

    ``store`` is the store line's value (a URL, or None for the default SQLite
    file); with ``source_url`` the DOCS table is also created there and the
    specification reads it instead of ``source.db``.
    """

    def __init__(self, folder: Path, store: str | None, source_url: str | None = None):
        super().__init__(folder)
        self.store = store
        self.source_url = source_url

    def write_spec(self, **fields) -> Path:
        if self.source_url is not None:
            fields.setdefault("database", self.source_url)
        return super().write_spec(store=self.store, **fields)

    def execute(self, sql: str, parameters=()) -> None:
        super().execute(
            sql, parameters
        )  # the SQLite copy is kept in step, so both sources can be compared
        if self.source_url is not None:
            import psycopg

            with psycopg.connect(self.source_url, autocommit=True) as connection:
                statement = sql.replace("?", "%s")
                if isinstance(parameters, list):
                    connection.cursor().executemany(statement, parameters)
                else:
                    connection.execute(statement, parameters or None)

    def store_keys(self, identity: str) -> list[str]:
        """The keys the store holds for a generation, in row identity order."""
        with self.project() as project:
            store = project.store()
            if store is None:
                return []
            with store.snapshot() as snapshot:
                return [key for key, _ in snapshot.digests(identity).values()]


def make_workspace(
    folder: Path, store: str | None, source_url: str | None = None
) -> PostgresWorkspace:
    """The ten DOCS in ``articles`` (and in PostgreSQL too with ``source_url``), a deterministic
    generation ``docs``."""
    folder.mkdir(parents=True, exist_ok=True)
    space = PostgresWorkspace(folder, store, source_url)
    space.execute(
        "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT, status TEXT)"
    )
    space.execute("INSERT INTO articles VALUES (?, ?, ?, ?)", DOCS)
    space.write_spec()
    return space


@pytest.fixture(params=["sqlite", "pgvector"])
def store_kind(request) -> str:
    return request.param


@pytest.fixture
def store_workspace(store_kind, tmp_path, request) -> PostgresWorkspace:
    """The services' workspace over each store: the SQLite file, then pgvector."""
    store = request.getfixturevalue("postgres_url") if store_kind == "pgvector" else None
    return make_workspace(tmp_path, store)
