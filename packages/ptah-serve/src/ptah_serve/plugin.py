"""ptah-serve's plugin: ``ptah serve`` and ``ptah token`` added through ptah's door.

Declared in the entry point group ``ptah`` (``pyproject.toml``); the door imports it whenever a
registry looks for installed plugins (an evaluation through the API too), so it imports nothing
itself: typer and the commands' options come when the command line is built, starlette and uvicorn
when the server starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ptah import hookimpl

if TYPE_CHECKING:
    import typer


@hookimpl
def register_commands(cli: typer.Typer) -> None:
    from ptah_serve.cli import serve, token_app

    cli.command("serve")(serve)
    cli.add_typer(token_app, name="token")
