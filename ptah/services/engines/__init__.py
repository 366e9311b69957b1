"""Build engines: what runs a build. ``local`` (the default: this process) is ptah's own; an add-on
registers others through the door (hook ``register_engines``; ``ray``: the add-on ptah-ray).

An engine is registered in :data:`ENGINES`: its name, the options it takes
(:class:`EngineOption`: ``ptah inference build --NAME VALUE``, the keyword
``name`` of ``Project.build``) and a function ``build(project, name,
progress, **options)`` returning a :class:`~ptah.services.build.BuildSummary`.
:func:`run_build` is the one place that picks the engine by name; an unknown
name, or an option the engine does not take, is an :class:`InputError` (exit
2) naming what there is. Every engine keeps the build's guarantees: the
store's build lock (so two builds of one generation never run at once,
whatever engines run them), vectors committed in batches, each its own
transaction, and a next build that embeds only what is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ptah.core.errors import InputError
from ptah.core.plugins import hookimpl, not_installed
from ptah.core.registry import Registry

if TYPE_CHECKING:
    from ptah.services.build import BuildSummary, Progress
    from ptah.services.project import Opened

DEFAULT = "local"

# The engines of the add-ons in ptah's repository (packages/), by name: the distribution that
# brings each, told to a user who asks for one that is not installed.
ADD_ONS = {"ray": "ptah-ray"}


@dataclass(frozen=True)
class EngineOption:
    """An option an engine takes: the keyword ``name`` (``--name-with-dashes`` on the command
    line), what its value reads as (``kind``: str, int or float), and its help."""

    name: str
    kind: type = str
    metavar: str = "VALUE"
    help: str = ""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Engine:
    """A build engine: its name, the options it takes, and how it builds."""

    name: str
    options: tuple[EngineOption, ...]
    build: Callable[..., BuildSummary]  # (project, name, progress, **options)


ENGINES: Registry[Engine] = Registry("build engine", hook="register_engines")


def run_build(
    project: Opened,
    name: str | None = None,
    progress: Progress | None = None,
    *,
    engine: str = DEFAULT,
    **options,
) -> BuildSummary:
    """Build generation ``name`` with the engine ``engine``; options the engine does not take are
    refused."""
    chosen = engine_named(engine)
    given = {option: value for option, value in options.items() if value is not None}
    unknown = sorted(set(given) - {option.name for option in chosen.options})
    if unknown:
        spelled = ", ".join("--" + option.replace("_", "-") for option in unknown)
        raise InputError(
            f"{spelled} {'applies' if len(unknown) == 1 else 'apply'} to another build engine, "
            f'not to "{engine}"; choose the engine with --engine'
        )
    return chosen.build(project, name, progress, **given)


def engine_named(engine: str) -> Engine:
    """The engine ``engine``; InputError (exit 2) naming the engines there are, or the add-on that
    brings it."""
    if engine in ENGINES:
        return ENGINES.get(engine)
    if engine in ADD_ONS:
        raise InputError(not_installed(f"--engine {engine}", ADD_ONS[engine]))
    raise InputError(
        f'there is no build engine "{engine}"; the engines are ' + ", ".join(ENGINES.names())
    )


def _local(project: Opened, name: str | None, progress: Progress | None) -> BuildSummary:
    from ptah.services.build import build

    return build(project, name, progress)


@hookimpl
def register_engines(register: Callable) -> None:
    register(Engine("local", (), _local))
