"""A Ray worker's error that quotes a database password reaches no message, and none of Ray's logs,
with it.

The workers of a distributed build receive the source's and the store's URLs
whole (they connect with them). What a worker raises travels to the driver
(its message becomes the build's) and may reach Ray's own log files; a library's
error may quote the connection string it was given. The model here refuses
every row with an error quoting the specification, both URLs included.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from ptah.core.errors import EXIT_OPERATIONAL
from tests.conftest import run_cli, spec_yaml
from tests.hostile.test_secrets import SECRET, assert_nowhere
from tests.ray.conftest import ray_local  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow


def test_a_worker_error_quoting_the_password_is_said_without_it(
    ray_local,
    postgres_server,
    tmp_path,
    capsys,  # noqa: F811
    monkeypatch,
):
    source = postgres_server.url(postgres_server.create_database())
    with psycopg.connect(source, autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE items AS SELECT i AS id, 'title ' || i AS title FROM generate_series(1, 40) i"
        )
        connection.execute("ALTER TABLE items ADD PRIMARY KEY (id)")
    store = postgres_server.url(postgres_server.create_database(), password="${PTAH_TEST_PASSWORD}")
    monkeypatch.setenv(
        "PTAH_TEST_PASSWORD", SECRET
    )  # the server trusts its socket: any password is accepted
    spec = tmp_path / "ptah.yaml"
    store = store.replace("%24%7B", "${").replace(
        "%7D", "}"
    )  # the placeholder as written, not URL-quoted
    spec.write_text(
        spec_yaml(
            database=source,
            table="items",
            text="{title}",
            store=store,
            generations={"docs": {"model": "raytest/leaky"}},
        )
    )
    code, out, err = run_cli(
        capsys,
        "inference",
        "build",
        "--spec",
        spec,
        "--engine",
        "ray",
        "--actors",
        1,
        "--partitions",
        2,
    )
    assert (code, out) == (EXIT_OPERATIONAL, ""), err
    assert err.startswith(
        "2 of 2 partitions of generation docs did not finish (partition 1: RuntimeError: cannot "
        "embed with the store at postgresql://postgres:***@/ptah_test_"
    )
    logs = Path(ray_local._private.worker._global_node.get_session_dir_path()) / "logs"
    written = [
        path.read_bytes().decode("utf-8", "replace") for path in logs.rglob("*") if path.is_file()
    ]
    assert_nowhere(SECRET, tmp_path, out, err, *written)
