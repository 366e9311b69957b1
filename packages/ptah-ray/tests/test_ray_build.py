"""The ``ray`` build engine against a real PostgreSQL (pgserver) and a local Ray instance of 2 CPUs.

A Ray build equals a local build bit for bit (composite keys, a filter, NULL
texts, a key holding U+001F); it embeds exactly what changed; it reads the
driver's one snapshot; a worker killed mid-partition and a driver killed
mid-build leave work that the next build finishes with exactly the missing rows.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psycopg
import pytest
from distributed import (
    ROOT,
    SEP,
    Databases,
    build,
    check,
    content,
    equals_a_local_build,
    source_rows,
    sqlite_workspace,
    vectors,
)

import ptah
from ptah.core.errors import EXIT_INPUT, EXIT_OPERATIONAL, StoreUnavailable

pytestmark = pytest.mark.slow


def the_next_build_embeds_exactly_the_rest(spec: str, partitions: int) -> None:
    """Some of the 272 rows were kept and not all; the next build embeds exactly the others, and
    verify is ok."""
    kept = len(vectors(spec))
    assert 0 < kept < 272
    summary = build(spec, partitions=partitions)
    assert (summary.rows, summary.embedded, summary.unchanged) == (272, 272 - kept, kept)
    assert check(spec).ok


def until_a_row_is_stored(driver, spec: str) -> None:
    """Wait until the driver's build has stored a row; it must still be running then."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and driver.poll() is None and not _stored(spec):
        time.sleep(0.05)
    assert driver.poll() is None, "the build ended before it could be stopped"


def test_a_ray_build_equals_a_local_build_bit_for_bit(ray_local, databases, cli):
    local, distributed = databases.spec("local"), databases.spec("ray")
    with ptah.open_project(local) as project:
        expected = project.build()
    code, out, err = cli(
        "inference",
        "build",
        "--spec",
        distributed,
        "--engine",
        "ray",
        "--partitions",
        5,
        "--actors",
        2,
        "--json",
    )
    assert code == 0, err
    summary = json.loads(out)
    published = sum(1 for row in source_rows(300) if row[4] == "published")
    assert (summary["rows"], summary["embedded"], summary["unchanged"], summary["deleted"]) == (
        published,
        published,
        0,
        0,
    )
    assert (
        summary["identity"] == expected.identity
        and summary["dimension"] == expected.dimension == 32
    )
    assert content(distributed) == content(local)
    assert (
        any(SEP in key for _, key, _, _ in content(local))
        and len(content(local)) == published == 272
    )
    for spec in (local, distributed):
        result = check(spec)
        assert (result.ok, result.rows, result.covered, result.fresh, result.orphans) == (
            True,
            272,
            272,
            272,
            0,
        )
    corpus = (
        databases.folder / "corpus.yaml"
    )  # evaluating either gives every case the same results (no draft rows)
    corpus.write_text(
        "version: 1\ndefault_k: 5\ncases:\n"
        + "".join(
            f'  - {{id: c{i}, query: "body words {i}", required: ["t{i % 3}\\u001f{i}"]}}\n'
            for i in (1, 4, 10, 13, 16, 19, 25, 28, 31, 34, 37, 40, 43)
        )
    )
    measured = []
    for spec in (local, distributed):
        with ptah.open_project(spec) as project:
            measured.append([case.to_dict() for case in project.evaluate(corpus).runs[0].cases])
    assert measured[0] == measured[1] and len(measured[0]) == 13


def test_only_rows_inserted_updated_or_deleted_between_builds_are_embedded(ray_local, databases):
    spec = databases.spec("ray")
    assert build(spec, partitions=3).embedded == 272
    before = {row[0]: row for row in vectors(spec)}
    databases.execute(
        "UPDATE items SET body = 'rewritten' WHERE (tenant, id) IN (('t1', 1), ('t2', 2))"
    )
    databases.execute(
        "UPDATE items SET title = 'renamed' WHERE tenant = %s AND id = 7", (f"a{SEP}b",)
    )
    databases.execute(
        "INSERT INTO items VALUES ('t9', 1000, 'new', 'new body', 'published'), "
        "('t9', 1001, 'newer', NULL, 'published')"
    )
    databases.execute("DELETE FROM items WHERE (tenant, id) IN (('t0', 3), ('t1', 4))")
    databases.execute(
        "UPDATE items SET status = 'draft' WHERE (tenant, id) = ('t2', 8)"
    )  # leaves the filter
    summary = build(spec, partitions=4)
    assert (summary.rows, summary.embedded, summary.deleted, summary.unchanged) == (271, 5, 3, 266)
    after = {row[0]: row for row in vectors(spec)}
    rewritten = {
        identity
        for identity, row in after.items()
        if before.get(identity, (None,) * 5)[4] != row[4]
    }
    assert rewritten == {"2:t11:1", "2:t21:2", f"3:a{SEP}b1:7", "2:t94:1000", "2:t94:1001"}
    assert set(before) - set(after) == {"2:t01:3", "2:t11:4", "2:t21:8"}
    equals_a_local_build(databases, spec)


def test_rows_changed_during_a_ray_build_are_not_seen_and_verify_says_so(ray_local, databases):
    spec = databases.spec("ray")
    changed = []

    def progress(done: int, total: int) -> None:
        if not changed:  # the snapshot is exported and cut, no partition has started
            changed.append(total)
            databases.execute(
                "UPDATE items SET body = 'changed meanwhile' WHERE (tenant, id) = ('t1', 1)"
            )
            databases.execute(
                "INSERT INTO items VALUES ('t9', 2000, 'late', 'late body', 'published')"
            )
            databases.execute("DELETE FROM items WHERE (tenant, id) = ('t2', 2)")
            with ptah.open_project(spec) as project, pytest.raises(StoreUnavailable) as refused:
                project.build()  # the local engine: the Ray build holds the generation's build lock
            assert (
                refused.value.exit_code == EXIT_OPERATIONAL
                and "another build of generation docs" in str(refused.value)
            )

    summary = build(spec, partitions=4, progress=progress)
    assert changed == [272] and (summary.rows, summary.embedded) == (272, 272)
    result = check(spec)
    assert (result.ok, result.rows, result.stale, result.missing, result.orphans) == (
        False,
        272,
        1,
        1,
        1,
    )
    assert (result.stale_keys, result.missing_keys, result.orphan_keys) == (
        (f"t1{SEP}1",),
        (f"t9{SEP}2000",),
        (f"t2{SEP}2",),
    )
    again = build(spec, partitions=4)
    assert (again.embedded, again.deleted) == (2, 1) and check(spec).ok


def test_a_worker_killed_mid_partition_leaves_exactly_the_missing_rows_to_the_next_build(
    ray_local, databases
):
    spec = databases.spec(
        "ray", model="raytest/killer", batch_size=1
    )  # 16 rows a batch: several per partition
    marker = Path(spec).parent / "kill-worker"
    marker.touch()
    with ptah.open_project(spec) as project, pytest.raises(Exception) as failed:
        project.build(engine="ray", actors=2, partitions=6)
    assert failed.value.exit_code == EXIT_OPERATIONAL and not marker.exists()
    assert str(failed.value).startswith(
        "1 of 6 partitions of generation docs did not finish (partition "
    )
    _wait_for_workers_to_go(
        databases, spec
    )  # the driver's exporting transaction among them: closed on failure
    the_next_build_embeds_exactly_the_rest(spec, partitions=6)
    equals_a_local_build(databases, spec)


DRIVER = textwrap.dedent(
    """
    import logging, sys
    import ray
    import ptah
    from distributed import ray_runtime_env
    from raytest_kinds import register
    register()
    ray.init(address=sys.argv[2], log_to_driver=False, logging_level=logging.ERROR, runtime_env=ray_runtime_env())
    with ptah.open_project(sys.argv[1]) as project:
        project.build(engine="ray", actors=2, partitions=4)
    """
)


def test_a_driver_killed_mid_build_leaves_exactly_the_missing_rows_to_the_next_build(
    ray_local, databases
):
    spec = databases.spec(
        "ray", model="raytest/slow", batch_size=1
    )  # 0.25 s a batch of 16: about 2 s a build on 2 actors
    address = ray_local.get_runtime_context().gcs_address
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, spec, address], cwd=ROOT)
    try:
        until_a_row_is_stored(driver, spec)
        driver.send_signal(signal.SIGKILL)
    finally:
        driver.kill()
        driver.wait()
    _wait_for_workers_to_go(databases, spec)
    the_next_build_embeds_exactly_the_rest(spec, partitions=4)


INTERRUPTED = textwrap.dedent(
    """
    import logging, sys, time
    import psycopg, ray, ptah
    from distributed import ray_runtime_env
    from raytest_kinds import register
    register()
    ray.init(address=sys.argv[2], log_to_driver=False, logging_level=logging.ERROR, runtime_env=ray_runtime_env())
    print("building", flush=True)
    with ptah.open_project(sys.argv[1]) as project:
        try:
            project.build(engine="ray", actors=2, partitions=4)
        except KeyboardInterrupt:
            held = sys.exc_info()  # its traceback keeps the build's frames, and what they hold, alive
    with psycopg.connect(sys.argv[3], autocommit=True) as connection:  # the source: until its other sessions end
        deadline = time.monotonic() + 60
        while (time.monotonic() < deadline and connection.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()").fetchone()[0]):
            time.sleep(0.1)
        print("interrupted" if held[0] is KeyboardInterrupt else "not interrupted",
              "source sessions left:", connection.execute(
                  "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                  "AND pid <> pg_backend_pid()").fetchone()[0], flush=True)
    """
)


def test_a_ctrl_c_mid_build_closes_the_drivers_snapshot_and_the_next_build_finishes(
    ray_local, databases
):
    spec = databases.spec("ray", model="raytest/slow", batch_size=1)
    address = ray_local.get_runtime_context().gcs_address
    driver = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, spec, address, databases.source],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert driver.stdout.readline() == "building\n"
        until_a_row_is_stored(driver, spec)
        driver.send_signal(signal.SIGINT)
        out, _ = driver.communicate(timeout=120)
    finally:
        driver.kill()
        driver.wait()
    assert (driver.returncode, out) == (0, "interrupted source sessions left: 0\n")
    the_next_build_embeds_exactly_the_rest(spec, partitions=4)


def _stored(spec: str) -> int:
    try:
        return len(vectors(spec))
    except (psycopg.Error, TypeError):  # no store or no generation yet
        return 0


def _wait_for_workers_to_go(databases: Databases, spec: str) -> None:
    """Until no session uses the source or the store: the killed driver's actors have ended."""
    with ptah.open_project(spec) as project:
        names = [
            psycopg.conninfo.conninfo_to_dict(url)["dbname"]
            for url in (databases.source, project.spec.store)
        ]
    deadline = time.monotonic() + 60
    with databases.server.admin() as connection:
        while time.monotonic() < deadline:
            others = connection.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = ANY(%s)", (names,)
            ).fetchone()[0]
            if others == 0:
                return
            time.sleep(0.1)
    raise AssertionError("the killed driver's workers still read the source")


def test_sqlite_with_the_ray_engine_is_refused_in_one_sentence(tmp_path, cli, postgres_url):
    spec = sqlite_workspace(tmp_path / "sqlite")
    code, out, err = cli("inference", "build", "--spec", spec, "--engine", "ray")
    assert (code, out) == (EXIT_INPUT, "")
    assert err == (
        "--engine ray reads a PostgreSQL source: this source is a SQLite file, which one machine "
        "reads; build it with the local engine\n"
    )
    spec = sqlite_workspace(tmp_path / "store", source_url=postgres_url)
    code, out, err = cli("inference", "build", "--spec", spec, "--engine", "ray")
    assert (code, out) == (EXIT_INPUT, "")
    assert err.startswith(
        "--engine ray writes to a pgvector store (store: postgresql://…): this store is a "
        "SQLite file"
    )
    code, out, err = cli("inference", "build", "--spec", spec, "--partitions", 3)
    assert (code, out, err) == (
        EXIT_INPUT,
        "",
        '--partitions applies to another build engine, not to "local"; '
        "choose the engine with --engine\n",
    )
    code, out, err = cli("inference", "build", "--spec", spec, "--engine", "spark")
    assert (code, err) == (
        EXIT_INPUT,
        'there is no build engine "spark"; the engines are local, ray\n',
    )


def test_nothing_but_the_ray_engine_imports_ray():
    probe = (
        "import sys, ptah, ptah.cli, ptah.services.engines, ptah_ray.partition, "
        "ptah_ray.partitions; print('ray' in sys.modules)"
    )
    assert (
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
        ).stdout
        == "False\n"
    )


def test_the_cli_joins_a_running_cluster_with_ray_address(ray_local, databases):
    spec = databases.spec("ray")
    address = ray_local.get_runtime_context().gcs_address
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ptah",
            "inference",
            "build",
            "--spec",
            spec,
            "--engine",
            "ray",
            "--ray-address",
            address,
            "--actors",
            "2",
            "--partitions",
            "3",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["rows"], summary["embedded"], summary["deleted"]) == (272, 272, 0)
    assert check(spec).ok
