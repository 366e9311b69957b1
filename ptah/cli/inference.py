"""``ptah inference ...``: build, verify, list, search and evaluate generations."""

from __future__ import annotations

import typer

app = typer.Typer(help="Build, verify, search and evaluate generations.", no_args_is_help=True)
