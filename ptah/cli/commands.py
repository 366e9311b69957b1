"""ptah's own commands, registered through the door (:mod:`ptah.core.plugins`)."""

from __future__ import annotations

import importlib
from collections.abc import Iterable

import typer

from ptah.core.plugins import hookimpl

# Each name under ``ptah``, in the order the app adds them: the module holding its group (``app``)
# or command, imported only when a command line needs it. (``ptah.cli.judge`` adds holes, judge, add
# and pin to the corpus group's app; ``inference`` and ``report`` add evaluate and rebaseline
# themselves.)
PARTS = {
    "corpus": ("ptah.cli.judge", "app"),
    "inference": ("ptah.cli.inference", "app"),
    "import": ("ptah.cli.imports", "app"),
    "report": ("ptah.cli.report", "app"),
}

# The commands of the add-ons in ptah's repository (packages/), by name: the distribution that
# brings each, told to a user who asks for one that is not installed.
ADD_ONS = {"serve": "ptah-serve", "token": "ptah-serve"}


def add_parts(cli: typer.Typer, names: Iterable[str]) -> None:
    """Add the groups and commands ``names`` to ``cli``, in the order of :data:`PARTS`, each
    module imported only now."""
    names = set(names)
    for name, (module, attribute) in PARTS.items():
        if name in names:
            part = getattr(importlib.import_module(module), attribute)
            if isinstance(part, typer.Typer):
                cli.add_typer(part, name=name)
            else:
                cli.command(name)(part)


@hookimpl
def register_commands(cli: typer.Typer) -> None:
    add_parts(cli, PARTS)
