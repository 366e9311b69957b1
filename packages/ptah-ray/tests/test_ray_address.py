"""A ``--ray-address`` where nothing answers is refused at once (exit 3, one sentence), not after
Ray's retries.

No Ray instance is needed: the address is tried before the build takes the
store's lock or reads the source (nothing listens on 127.0.0.1 port 1, so the
connection is refused at once).
"""

from __future__ import annotations

import time

import psycopg
import pytest
from distributed import spec_yaml

from ptah.core.errors import EXIT_INPUT, EXIT_OPERATIONAL


@pytest.fixture
def spec(postgres_server, tmp_path):  # noqa: F811
    source = postgres_server.url(postgres_server.create_database())
    with psycopg.connect(source, autocommit=True) as connection:
        connection.execute("CREATE TABLE items (id integer PRIMARY KEY, title text)")
    store = postgres_server.url(postgres_server.create_database())
    generations = {"docs": {"model": "ptah/deterministic", "dimension": 8}}
    (tmp_path / "ptah.yaml").write_text(
        spec_yaml(
            database=source, table="items", text="{title}", store=store, generations=generations
        )
    )
    return tmp_path / "ptah.yaml"


@pytest.mark.parametrize("address", ["127.0.0.1:1", "ray://127.0.0.1:1"])
def test_an_address_where_nothing_listens_is_refused_in_a_few_seconds(spec, cli, address):
    started = time.monotonic()
    code, out, err = cli(
        "inference", "build", "--spec", spec, "--engine", "ray", "--ray-address", address
    )
    assert time.monotonic() - started < 15  # Ray's own retries take minutes
    assert (code, out) == (EXIT_OPERATIONAL, "")
    assert err == (
        f"cannot reach the Ray cluster at {address} (Connection refused): start Ray there "
        "(ray start --head) or give the address it printed\n"
    )


def test_an_address_whose_port_cannot_be_is_a_usage_error(spec, cli):
    code, out, err = cli(
        "inference", "build", "--spec", spec, "--engine", "ray", "--ray-address", "10.0.0.1:70000"
    )
    assert (code, out, err) == (
        EXIT_INPUT,
        "",
        "--ray-address 10.0.0.1:70000: the port must be 1 to 65535\n",
    )
