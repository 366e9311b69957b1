"""The ``ray`` engine never hangs on what the cluster cannot place, and leaves none of Ray's
processes behind.

Each build runs as ``ptah`` in a process of its own, which starts its own local
Ray (the way a user's first ``--engine ray`` does), so what ptah started is
what must be gone once it ends. Every process it started carries a marker in
its environment (Ray's workers inherit the driver's), so they can be found
however Ray renames them (``ray::IDLE``, ``raylet``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from distributed import ROOT, Databases

from ptah.core.errors import EXIT_INPUT

pytestmark = pytest.mark.slow


def _marked(marker: str) -> list[str]:
    """The command lines of the live processes whose environment holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "environ").read_bytes():
                found.append(
                    (entry / "cmdline")
                    .read_bytes()
                    .replace(b"\0", b" ")
                    .decode(errors="replace")
                    .strip()
                )
        except OSError:  # gone meanwhile, or a zombie
            continue
    return found


def _ptah(marker: str, *argv: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "PTAH_TEST_MARKER": marker,
        "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p),
    }
    env.pop("RAY_ADDRESS", None)
    return subprocess.Popen(
        [sys.executable, "-m", "ptah", *argv],
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _nothing_left(marker: str) -> None:
    deadline = time.monotonic() + 30
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _marked(marker) == []


@pytest.fixture
def databases(postgres_server, tmp_path) -> Databases:
    return Databases(postgres_server, tmp_path)


def test_actors_beyond_the_maximum_are_refused_before_ray_starts(databases, cli):
    started = time.monotonic()
    code, out, err = cli(
        "inference", "build", "--spec", databases.spec("ray"), "--engine", "ray", "--actors", 100000
    )
    assert (code, out, err) == (
        EXIT_INPUT,
        "",
        "--actors must be at most 1,024, not 100,000: each actor is a "
        "process holding a model and a store connection\n",
    )
    assert time.monotonic() - started < 5
    assert "ray" not in sys.modules or not sys.modules["ray"].is_initialized()


def test_what_the_cluster_cannot_place_is_refused_and_sigterm_stops_every_ray_process(databases):
    """Two local Ray instances, started by ptah: one asked for a GPU this machine lacks, one stopped
    by SIGTERM."""
    spec = databases.spec("ray", batch_size=1)
    marker = uuid.uuid4().hex
    started = time.monotonic()
    refused = _ptah(
        marker, "inference", "build", "--spec", spec, "--engine", "ray", "--actor-gpus", "1"
    )
    out, err = refused.communicate(timeout=300)
    assert (refused.returncode, out, err) == (
        EXIT_INPUT,
        "",
        "1 Ray actor of 1 GPU each need 1 GPU in all and the "
        "Ray cluster has 0 GPU: lower --actors or --actor-gpus\n",
    )
    assert (
        time.monotonic() - started < 120
    )  # Ray's own start on two busy cores; never the actors' 300 s
    _nothing_left(marker)

    databases.execute(
        "INSERT INTO items SELECT 't9', i, 'title', 'body words', 'published' "
        "FROM generate_series(1000, 20999) AS i"
    )  # long enough to be stopped in the middle
    marker = uuid.uuid4().hex
    driver = _ptah(
        marker, "inference", "build", "--spec", spec, "--engine", "ray", "--actors", "2", "--quiet"
    )
    try:
        deadline = time.monotonic() + 240
        while (
            driver.poll() is None
            and time.monotonic() < deadline
            and not any("PartitionWorker" in line for line in _marked(marker))
        ):
            time.sleep(0.1)
        assert driver.poll() is None, driver.communicate()
        driver.send_signal(signal.SIGTERM)
        out, err = driver.communicate(timeout=120)
    finally:
        driver.kill()
        driver.wait()
    assert (driver.returncode, out, err) == (143, "", "")
    _nothing_left(marker)
