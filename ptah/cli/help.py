"""Help that reads as a command line's: ``--json`` shows no ``<bool>``, ``--generation`` no ``<list[str]>``.

Typer (0.2x and later) labels every option with its Python annotation --
``<bool>`` on each flag, ``<list[str]>`` on a repeatable option, ``{text}`` and
``<str>`` for an argument. :func:`plain_metavars` gives each parameter of the
click command tree a metavar of its own instead: none on a flag, a word
(``TEXT``, ``INTEGER``, ``NUMBER``, ``PATH``) on an option that takes a value,
and its name in capitals on an argument.
A metavar a command declares itself (``--spec PATH``) is kept.
"""

from __future__ import annotations

import copy
import re

WORDS = {"int": "INTEGER", "integer": "INTEGER", "float": "NUMBER", "str": "TEXT", "text": "TEXT", "path": "PATH"}


def plain_metavars(command):
    """``command`` (a click command: Typer's own copy of click, or click) and every command under it, each
    parameter given a plain metavar; returns ``command``."""
    context = command.context_class(command)
    helper = command.get_help_option(context)  # made once per command and kept: --help is a flag too
    for param in [*command.params, *([helper] if helper is not None else [])]:
        if param.param_type_name == "argument":
            if param.metavar is None:
                param.metavar = param.name.upper()
            _unlabelled(param)
        elif param.param_type_name == "option" and param.metavar is None:
            param.metavar = "" if param.is_flag else _word(param, context)
    for sub in getattr(command, "commands", {}).values():
        plain_metavars(sub)
    return command


def _unlabelled(argument) -> None:
    """No type column beside an argument: its name in capitals says what it is (Typer 0.29 asks the argument for
    the column's text, earlier ones its click type; each is answered on this argument alone)."""
    if hasattr(argument, "display_type_rich"):
        argument.display_type_rich = lambda ctx: None
    if getattr(argument, "type", None) is not None:
        argument.type = copy.copy(argument.type)
        argument.type.get_metavar = lambda *args, **kwargs: ""


def _word(param, context) -> str:
    """The word for what an option takes: ``<list[int range]>`` reads ``INTEGER``, ``<str>`` ``TEXT``."""
    if hasattr(param, "display_type"):
        label = param.display_type(context).strip("<>")
    else:  # a Typer that hands click its types
        label = param.type.name
    label = re.sub(r"^list\[(.*)\]$", r"\1", label).removesuffix(" range")
    return WORDS.get(label, label.upper())
