"""A Ray worker's error that quotes a database password reaches no message, and none of Ray's logs,
with it.

The workers of a distributed build receive the source's and the store's URLs
whole (they connect with them). What a worker raises travels to the driver
(its message becomes the build's) and may reach Ray's own log files; a library's
error may quote the connection string it was given. The model here refuses
every row with an error quoting the specification, both URLs included.
"""

from __future__ import annotations

import pickle
from dataclasses import fields
from pathlib import Path

import psycopg
import pytest
from distributed import SECRET, assert_nowhere, run_cli, spec_yaml

from ptah.core.errors import EXIT_OPERATIONAL
from ptah.core.spec import GenerationSettings, SourceSpec
from ptah_ray.partition import BuildPlan


@pytest.mark.slow
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


def test_a_ray_build_plan_never_shows_the_passwords_it_carries_to_the_workers():
    """Ray writes an argument's ``repr`` into its own errors ("Could not serialize the argument …"),
    and the plan every Ray actor receives holds both URLs whole (the workers connect with them)."""

    source = SourceSpec(
        f"postgresql://reader:{SECRET}@db.example/src", "articles", ("id",), "{title}"
    )
    store = f"host=db.example dbname=store user=writer password='{SECRET}'"
    plan = BuildPlan.sealing(
        source, GenerationSettings("docs", "ptah/deterministic"), "/project", store, "abc123", 64
    )
    shown = [repr(plan), str(plan), f"{plan}"] + [
        text
        for field in fields(plan)
        for text in (repr(getattr(plan, field.name)), str(getattr(plan, field.name)))
    ]
    assert_nowhere(SECRET, Path("/nonexistent"), *shown)
    assert str(
        plan.source_url
    ) == "postgresql://reader:***@db.example/src" and plan.source.database == str(plan.source_url)
    assert repr(plan.store_url) == "Sealed('host=db.example dbname=store user=writer password=***')"
    received = pickle.loads(pickle.dumps(plan))  # what the workers receive is whole
    assert (
        received == plan
        and received.connected_source() == source
        and received.store_url.reveal() == store
    )
