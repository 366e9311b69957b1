"""Build engines: what runs a build. ``local`` (the default: this process) and ``ray`` (a Ray
cluster).

An engine is registered in :data:`ENGINES`: its name, the options it takes
and a function ``build(project, name, progress, **options)`` returning a
:class:`~ptah.services.build.BuildSummary`. :func:`run_build` is the one place
that picks the engine by name; an unknown name, or an option the engine does
not take, is an :class:`InputError` (exit 2) naming what there is. Every engine
keeps the build's guarantees: the store's build lock (so two builds of one
generation never run at once, whatever engines run them), vectors committed in
batches, each its own transaction, and a next build that embeds only what is
missing. The ``ray`` engine's module (and Ray) is imported only when it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ptah.core.errors import InputError
from ptah.core.plugins import hookimpl
from ptah.core.registry import Registry

if TYPE_CHECKING:
    from ptah.services.build import BuildSummary, Progress
    from ptah.services.project import Project

DEFAULT = "local"


@dataclass(frozen=True)
class Engine:
    """A build engine: its name, the option names it takes, and how it builds."""

    name: str
    options: frozenset[str]
    build: Callable[..., BuildSummary]  # (project, name, progress, **options)


ENGINES: Registry[Engine] = Registry("build engine", hook="register_engines")


def run_build(
    project: Project,
    name: str | None = None,
    progress: Progress | None = None,
    *,
    engine: str = DEFAULT,
    **options,
) -> BuildSummary:
    """Build generation ``name`` with the engine ``engine``; options the engine does not take are
    refused."""
    if engine not in ENGINES:
        raise InputError(
            f'there is no build engine "{engine}"; the engines are ' + ", ".join(ENGINES.names())
        )
    chosen = ENGINES.get(engine)
    given = {option: value for option, value in options.items() if value is not None}
    unknown = sorted(set(given) - chosen.options)
    if unknown:
        spelled = ", ".join("--" + option.replace("_", "-") for option in unknown)
        raise InputError(
            f"{spelled} {'applies' if len(unknown) == 1 else 'apply'} to another build engine, "
            f'not to "{engine}"; choose the engine with --engine'
        )
    return chosen.build(project, name, progress, **given)


def _local(project: Project, name: str | None, progress: Progress | None) -> BuildSummary:
    from ptah.services.build import build

    return build(project, name, progress)


def _ray(project: Project, name: str | None, progress: Progress | None, **options) -> BuildSummary:
    from ptah.services.engines.ray_engine import build

    return build(project, name, progress, **options)


@hookimpl
def register_engines(register: Callable) -> None:
    register(Engine("local", frozenset(), _local))
    register(
        Engine(
            "ray",
            frozenset({"ray_address", "partitions", "actors", "actor_cpus", "actor_gpus"}),
            _ray,
        )
    )
