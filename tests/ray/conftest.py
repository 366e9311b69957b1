"""Ray for the distributed-build tests: one local instance (2 CPUs) per module, beside a real
PostgreSQL.

Ray workers import ``tests.ray.kinds`` at start (``worker_process_setup_hook``)
so the ``raytest/…`` embedders open there as in this process. The instance is
started here, before ptah's engine runs, so the engine joins it rather than
starting its own.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from tests.contract.conftest import postgres_database, postgres_server, postgres_url  # noqa: F401 (fixtures)
from tests.ray.kinds import register

ROOT = str(Path(__file__).resolve().parents[2])
register()


def ray_runtime_env() -> dict:
    """What every Ray worker of these tests needs: the repository on its path, the test kinds
    registered."""
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    return {
        "env_vars": {"PYTHONPATH": path},
        "worker_process_setup_hook": "tests.ray.kinds.register",
    }


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
