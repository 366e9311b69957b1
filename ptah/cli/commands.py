"""ptah's own commands, registered through the door (:mod:`ptah.core.plugins`)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable

import typer

from ptah.core.plugins import hookimpl

# Each name under ``ptah``, in the order the app adds them: the module holding its group (``app``)
# or command, imported only when a command line needs it. (``ptah.cli.judge`` adds holes, add and
# pin to the corpus group's app, ``ptah.cli.grading``, which imports it, grade, forbid, sample and
# judge-model, and ``ptah.cli.judge_aliases``, which imports both, judge; ``inference`` and
# ``report`` add evaluate and rebaseline themselves.)
PARTS = {
    "corpus": ("ptah.cli.judge_aliases", "app"),
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
            flatten_help(part)
            if isinstance(part, typer.Typer):
                cli.add_typer(part, name=name)
            else:
                cli.command(name)(part)


def flatten_help(part: typer.Typer | Callable) -> None:
    """Give each command of ``part`` (a group, recursively, or a command's function) its
    docstring as help with each paragraph's lines joined: the terminal wraps the text to its
    width, where the source wraps it at 100 columns. Indented lines (an example) stay as written.
    """
    if not isinstance(part, typer.Typer):
        part.__doc__ = joined(part.__doc__)
        return
    for info in part.registered_commands:
        if info.help is None and info.callback is not None:
            info.help = joined(info.callback.__doc__)
    for group in part.registered_groups:
        if group.typer_instance is not None:
            flatten_help(group.typer_instance)
    if isinstance(part.info.help, str):
        part.info.help = joined(part.info.help)


def joined(text: str | None) -> str | None:
    """``text`` (a docstring) with the lines of each paragraph joined by a space, but for a
    paragraph with an indented line or click's ``\\b`` (kept as written)."""
    if text is None:
        return None
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        paragraph
        if paragraph.startswith("\b") or any(line[:1].isspace() for line in paragraph.splitlines())
        else " ".join(line.strip() for line in paragraph.splitlines())
        for paragraph in paragraphs
    )


@hookimpl
def register_commands(cli: typer.Typer) -> None:
    add_parts(cli, PARTS)
