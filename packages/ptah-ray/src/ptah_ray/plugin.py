"""ptah-ray's plugin: the build engine ``ray`` (``ptah inference build --engine ray``) added through
ptah's door.

Declared in the entry point group ``ptah`` (``pyproject.toml``); importing
it imports neither Ray nor psycopg: :mod:`ptah_ray.engine` is imported when a
build runs.
"""

from __future__ import annotations

from collections.abc import Callable

from ptah import hookimpl
from ptah.services.engines import Engine, EngineOption

OPTIONS = (
    EngineOption(
        "ray_address",
        str,
        "ADDRESS",
        "ray: the cluster to join (default: start a local Ray instance).",
    ),
    EngineOption(
        "partitions", int, "N", "ray: key ranges to cut the source into (default: 4 per actor)."
    ),
    EngineOption(
        "actors", int, "N", "ray: embedding actors (default: as many as the cluster's CPUs hold)."
    ),
    EngineOption("actor_cpus", float, "C", "ray: CPUs per actor (default 1)."),
    EngineOption("actor_gpus", float, "G", "ray: GPUs per actor (default 0)."),
)


def _build(project, name, progress, **options):
    from ptah_ray.engine import build

    return build(project, name, progress, **options)


@hookimpl
def register_engines(register: Callable) -> None:
    register(Engine("ray", OPTIONS, _build))
