"""ptah-serve's plugin: ``ptah serve`` and ``ptah token`` added through ptah's door.

Declared in the entry point group ``ptah`` (``pyproject.toml``); importing
it imports typer and the commands' options, never starlette or uvicorn.
"""

from __future__ import annotations

import typer

from ptah import hookimpl
from ptah_serve.cli import serve, token_app


@hookimpl
def register_commands(cli: typer.Typer) -> None:
    cli.command("serve")(serve)
    cli.add_typer(token_app, name="token")
