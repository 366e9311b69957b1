"""Ray for the distributed-build tests: one local instance (2 CPUs) per module, beside a real
PostgreSQL with pgvector started by ``pgserver`` in a temporary folder (one per session; each test
that asks for ``postgres_url`` gets a database of its own).

Ray workers import ``raytest_kinds`` at start (``worker_process_setup_hook``)
so the ``raytest/…`` embedders open there as in this process. The instance is
started here, before the engine runs, so the engine joins it rather than
starting its own.
"""

from __future__ import annotations

import functools
import logging
import tempfile
import warnings
from pathlib import Path

import pytest
from distributed import Databases, PostgresServer, ray_runtime_env, run_cli
from raytest_kinds import register

register()


@pytest.fixture
def cli(capsys):
    """``cli(*argv)``: ``ptah ARGV`` in this process, a :class:`distributed.Result`."""
    return functools.partial(run_cli, capsys)


@pytest.fixture(scope="session")
def postgres_server() -> PostgresServer:
    """PostgreSQL 16 with pgvector for the session, in a folder made by ``tempfile`` (run as root,
    pgserver runs the server as a user that must traverse the folder's parents)."""
    folder = Path(tempfile.mkdtemp(prefix="ptah-ray-pg-"))
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


@pytest.fixture
def databases(postgres_server, tmp_path) -> Databases:
    return Databases(postgres_server, tmp_path)


@pytest.fixture(scope="module")
# shut down after the module: the rest of the suite runs without Ray's threads and processes
def ray_local():
    import ray

    ray.init(
        num_cpus=2,
        object_store_memory=200 * 2**20,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
        runtime_env=ray_runtime_env(),
    )
    try:
        yield ray
    finally:
        ray.shutdown()
