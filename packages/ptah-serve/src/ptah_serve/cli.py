"""``ptah serve`` and ``ptah token create|list|revoke``: the evaluation server and its tokens.

Starlette and uvicorn are imported only when the server starts; the token
commands reach the store through :mod:`ptah_serve.tokens`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from ptah.cli.display import SPEC_HELP

token_app = typer.Typer(
    help="Bearer tokens of `ptah serve` (only a digest is kept, in the store).",
    no_args_is_help=True,
)


def serve(
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to bind (loopback unless told otherwise)."
    ),
    port: int = typer.Option(8470, "--port", min=1, max=65535, help="TCP port."),
    workers: int = typer.Option(2, "--workers", min=1, max=64, help="Evaluations run at once."),
    max_searches: int = typer.Option(
        1024, "--max-searches", min=1, help="Refuse an evaluation of more case x run searches."
    ),
    max_report_bytes: int = typer.Option(
        64 * 1024 * 1024, "--max-report-bytes", min=1, help="Refuse a report larger than this."
    ),
    max_corpus_bytes: int = typer.Option(
        16 * 1024 * 1024,
        "--max-corpus-bytes",
        min=1,
        help="Refuse a corpus body larger than this (413).",
    ),
    max_queued: int = typer.Option(
        64,
        "--max-queued",
        min=1,
        help="Evaluations one manage token may have waiting (429 past it).",
    ),
) -> None:
    """Serve the project's registered corpora and evaluations over HTTP (see docs/server.md)."""
    from ptah_serve import serve as run
    from ptah_serve.limits import Limits

    limits = Limits(
        max_searches=max_searches,
        max_report_bytes=max_report_bytes,
        max_corpus_bytes=max_corpus_bytes,
        max_queued=max_queued,
    )
    run(
        spec,
        host=host,
        port=port,
        workers=workers,
        limits=limits,
        announce=lambda line: typer.echo(line, err=True),
    )


@contextmanager
def _records(spec: str | None) -> Iterator[object]:
    import ptah
    from ptah_serve.corpora import open_records

    with ptah.open_project(spec) as project:
        records = open_records(project.spec)
    try:
        yield records
    finally:
        records.close()


@token_app.command("create")
def create(
    scope: str = typer.Option(
        ..., "--scope", help="read (list and fetch) or manage (also register and evaluate)."
    ),
    name: str | None = typer.Option(
        None, "--name", help="A name to list and revoke it by (default: token-ID)."
    ),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
) -> None:
    """Create a token and print it once: the last line of the output is the token."""
    from ptah_serve.tokens import create_token

    with _records(spec) as records:
        made, token = create_token(records, scope, name)
    typer.echo(f"token {made} (scope {scope}); keep it now, it is not shown again:")
    typer.echo(token)


@token_app.command("list")
def list_(
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
    json_output: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The tokens: name, scope, created, revoked (never a secret)."""
    from ptah.core.visible import visible
    from ptah_serve.tokens import list_tokens

    with _records(spec) as records:
        tokens = list_tokens(records)
    if json_output:
        typer.echo(json.dumps(tokens, indent=2))
        return
    for token in tokens:
        revoked = f"revoked {token['revoked_at']}" if token["revoked_at"] else "active"
        typer.echo(
            visible(f"{token['name']}  {token['scope']}  created {token['created_at']}  {revoked}")
        )


@token_app.command("revoke")
def revoke(
    name: str = typer.Argument(..., help="The token's name."),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
) -> None:
    """Revoke a token: refused from the server's next request on."""
    from ptah.core.visible import visible
    from ptah_serve.tokens import revoke_token

    with _records(spec) as records:
        revoke_token(records, name)
    typer.echo(visible(f"token {name} revoked"))
