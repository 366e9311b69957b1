"""``ptah inference ...``: build, verify, list, search and evaluate generations.

Services (and through them numpy, the store and the model) are imported inside
each command, so ``ptah --help`` and ``ptah inference --help`` stay light and
never import torch. Errors are ptah's typed errors, raised to the one boundary
in :func:`ptah.cli.main`.

Keys are printed as written, a composite key as its components (``acme · 2``);
a key holding another control character is printed as a JSON string so it
stays unambiguous. ``--json`` output holds the exact keys. Every name and
key printed passes through :mod:`ptah.cli.display`, so no control character
from the spec or the source reaches the terminal raw.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import typer
from typer.core import TyperCommand, TyperOption

from ptah.cli.display import SPEC_HELP, json_text, plain
from ptah.cli.evaluate import evaluate
from ptah.core.corpus import shown_key
from ptah.core.errors import EXIT_NEGATIVE
from ptah.core.visible import visible_json

app = typer.Typer(help="Build, verify, search and evaluate generations.", no_args_is_help=True)

NAME_HELP = "The generation's name in the specification (default: the active one)."


def _shown(key: str) -> str:
    key = shown_key(key)  # a composite key's components: 1 · pruning
    return key if key.isprintable() else visible_json(json.dumps(key, ensure_ascii=False))


def _percent(value: float | None) -> str:
    return "N/A" if value is None else f"{100 * value:.2f}%"


ENGINE_OPTIONS = "ptah_engine_options"  # where the build command keeps its engines' options


class BuildCommand(TyperCommand):
    """``build``, taking the options of every registered build engine too (the engines are asked
    only when a build parses its command line or shows its help)."""

    def get_params(self, ctx: Any) -> list[Any]:
        from ptah.services.engines import ENGINES

        own = super().get_params(ctx)
        taken = {param.name for param in own}
        added: list[Any] = []
        for engine in ENGINES:
            for option in engine.options:
                if option.name not in taken:
                    taken.add(option.name)
                    added.append(
                        TyperOption(
                            param_decls=[option.flag, option.name],
                            type=option.kind,
                            metavar=option.metavar,
                            help=option.help,
                        )
                    )
        helps = [param for param in own if param.name == "help"]  # --help stays last
        return [*(param for param in own if param.name != "help"), *added, *helps]

    def invoke(self, ctx: Any) -> Any:
        own = {param.name for param in super().get_params(ctx)}
        ctx.meta[ENGINE_OPTIONS] = {
            name: ctx.params.pop(name) for name in list(ctx.params) if name not in own
        }
        return super().invoke(ctx)


@app.command(cls=BuildCommand)
def build(
    ctx: typer.Context,
    name: str | None = typer.Argument(None, help=NAME_HELP),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing but errors."),
    json_output: bool = typer.Option(False, "--json", help="Print a JSON summary of the build."),
    engine: str = typer.Option(
        "local",
        "--engine",
        help="What runs the build: local (this process), or an engine an add-on brings.",
    ),
) -> None:
    """Embed rows that are new or whose text changed; delete vectors of rows gone.

    Incremental and resumable: an interrupted build keeps every committed batch,
    and the next one embeds only what is still missing. Shows a progress bar
    on a terminal. Exit 3 when another build of the generation is running.
    An engine an add-on brings takes its own options, listed here once it is
    installed.
    """
    import ptah
    from ptah.adapters.embedders import LOADING
    from ptah.services.engines import engine_named

    engine_named(engine)  # an engine that is not installed is refused before the project is read
    if quiet:
        LOADING.set(None)  # main() resets it
    options: dict[str, Any] = {"engine": engine, **ctx.meta[ENGINE_OPTIONS]}
    try:
        bar = not (quiet or json_output) and sys.stderr.isatty()
        with (
            ptah.open_project(spec) as project,
            _progress_bar() if bar else nullcontext() as progress,
        ):
            summary = project.build(name, progress=progress, **options)
    except (
        KeyboardInterrupt
    ) as exc:  # the sentence of what the build's commits kept (BuildInterrupted), exit 130
        typer.echo(str(exc) or "interrupted", err=True)
        raise typer.Exit(130) from None
    if json_output:
        typer.echo(json_text(summary.as_dict()))
    elif not quiet:
        typer.echo(
            f"generation {plain(summary.generation)} ({summary.identity}): {summary.rows} rows, "
            f"{summary.embedded} embedded, {summary.unchanged} unchanged, {summary.deleted} deleted "
            f"in {summary.seconds:.1f}s" + _usage_text(summary.usage)
        )


def _usage_text(usage: dict | None) -> str:
    """What a service was asked, for the build's line ("" for a local model): ptah's count of texts
    and characters, the server's own token count under its name, and the waits (summed over
    concurrent requests, said so)."""
    if usage is None:
        return ""
    tokens = usage.get("server_prompt_tokens")
    counted = (
        "the server reported no token count"
        if tokens is None
        else f"the server counted {tokens:,} prompt tokens"
    )
    concurrency = usage.get("max_concurrency", 1)
    waits = (
        f"{usage['server_seconds']:.1f} s waiting, summed over up to {concurrency} concurrent requests"
        if concurrency > 1
        else f"{usage['server_seconds']:.1f} s waiting on the server"
    )
    return (
        f"; service: {usage['requests']} requests ({usage['retries']} retries), {usage['texts']:,} texts of "
        f"{usage['characters']:,} characters ({counted}), {waits}"
    )


@contextmanager
def _progress_bar() -> Iterator:
    """A rich progress bar on stderr with rows/s and ETA, driven by the build's progress
    callback."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class RowsPerSecond(ProgressColumn):
        def render(self, task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("-- rows/s" if speed is None else f"{speed:,.0f} rows/s")

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RowsPerSecond(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("embedding", total=None)

        class Update:
            def __call__(self, done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            # rows as the model embeds them, between commits: a rate and an ETA from the first
            rows = __call__

            def partitions(
                self, done: int, total: int
            ) -> None:  # an engine's partitions, as they finish
                progress.update(task, description=f"embedding, partitions {done}/{total}")

        yield Update()


@app.command()
def verify(
    name: str | None = typer.Argument(None, help=NAME_HELP),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
    json_output: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Check coverage (every row has a vector) and freshness (each vector matches its row's text
    now).

    Exit 0 when complete and fresh with no orphans, 1 when not (the first
    offenders are listed by key), 3 when the store or source is unavailable.
    """
    import ptah

    with ptah.open_project(spec) as project:
        result = project.verify(name)
    if json_output:
        typer.echo(json_text(result.as_dict()))
    else:
        typer.echo(
            f"generation {plain(result.generation)} ({result.identity})"
            + ("" if result.built else ": never built")
        )
        typer.echo(f"  rows       {result.rows}")
        typer.echo(f"  vectors    {result.vectors}")
        typer.echo(
            f"  coverage   {_percent(result.coverage)} ({result.covered} of {result.rows} rows have a vector)"
        )
        typer.echo(
            f"  freshness  {result.freshness_note}"
            if result.freshness_note
            else f"  freshness  {_percent(result.freshness)} ({result.fresh} of {result.covered} vectors match their row's text)"
        )
        typer.echo(f"  orphans    {result.orphans}")
        for label, count, keys in (
            ("missing", result.missing, result.missing_keys),
            ("stale", result.stale, result.stale_keys),
            ("orphan", result.orphans, result.orphan_keys),
        ):
            if count:
                more = f" and {count - len(keys)} more" if count > len(keys) else ""
                typer.echo(f"  {label}: " + ", ".join(_shown(key) for key in keys) + more)
        typer.echo("ok: complete and fresh" if result.ok else "not ok: " + _verdict(result))
    if not result.ok:
        raise typer.Exit(EXIT_NEGATIVE)


def _verdict(result) -> str:
    problems = []
    if not result.complete:
        problems.append(f"{result.missing} rows without a vector")
    if not result.fresh_ok:
        problems.append(f"{result.stale} stale vectors")
    if result.orphans:
        problems.append(f"{result.orphans} orphan vectors")
    if (
        result.freshness_note
    ):  # an external generation: the table's pipeline fills its vectors, not ptah
        return ", ".join(problems) + "; fill them in the table"
    return ", ".join(problems) + "; run `ptah inference build " + plain(result.generation) + "`"


@app.command("list")
def list_command(
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
    json_output: bool = typer.Option(False, "--json", help="Print the generations as JSON."),
) -> None:
    """List the generations in the store and the declared ones: identity, rows, coverage."""
    import ptah

    with ptah.open_project(spec) as project:
        listings = project.list_generations()
    if json_output:
        typer.echo(json_text([listing.as_dict() for listing in listings]))
        return
    header = ("NAME", "STATUS", "IDENTITY", "MODEL", "VECTORS", "ROWS", "COVERAGE")
    lines = [header] + [
        (
            plain(listing.name),
            listing.status,
            plain(listing.identity[:19]),
            plain(listing.model),
            str(listing.vectors),
            str(listing.rows),
            _percent(listing.coverage),
        )
        for listing in listings
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    room = shutil.get_terminal_size((0, 0)).columns if sys.stdout.isatty() else 0
    if (
        room and sum(widths) + 2 * (len(widths) - 1) > room
    ):  # too wide for the terminal: stacked, never wrapped
        from ptah.render.layout import stacked_text

        typer.echo(
            "\n".join(stacked_text([heading.lower() for heading in header], lines[1:], room))
        )
        return
    for line in lines:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())


@app.command()
def search(
    text: str = typer.Argument(..., help="The query text."),
    k: int = typer.Option(10, "-k", "--k", min=1, help="How many results."),
    generation: str | None = typer.Option(None, "--generation", "-g", help=NAME_HELP),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
    json_output: bool = typer.Option(False, "--json", help="Print the results as JSON."),
) -> None:
    """The top k rows for a query by exact cosine similarity: score descending, ties by key
    ascending.

    Each row is printed with its score, key and text (on one line, cut to the
    terminal's width; --json holds the whole text). A query searched before
    (or asked by an evaluate) comes from the query cache: no model is loaded.
    """
    from ptah.services.project import open_project
    from ptah.services.search import row_texts
    from ptah.services.search import search as search_rows

    with open_project(spec) as project:
        chosen = project.generation(generation)
        (results,) = search_rows(project, generation, [text], k)
        texts = row_texts(project, chosen, {key for key, _ in results})
    if json_output:
        typer.echo(
            json_text(
                {
                    "generation": chosen.name,
                    "identity": chosen.identity.identity,
                    "query": text,
                    "k": k,
                    "results": [
                        {"rank": rank, "key": key, "score": score, "text": texts.get(key)}
                        for rank, (key, score) in enumerate(results, 1)
                    ],
                }
            )
        )
        return
    width = shutil.get_terminal_size((120, 24)).columns  # a pipe: $COLUMNS, else 120
    for rank, (key, score) in enumerate(results, 1):
        line = f"{rank:>3}  {score:.4f}  {_shown(key)}"
        typer.echo(f"{line}  {_one_line(texts.get(key, ''), width - len(line) - 2)}".rstrip())


def _one_line(text: str, room: int) -> str:
    """``text`` on one line (runs of white space, newlines included, as one space; controls made
    visible), cut with an ellipsis to ``room`` characters (at least 20)."""
    flat = plain(" ".join(text.split()))
    room = max(room, 20)
    return flat if len(flat) <= room else flat[: room - 1].rstrip() + "…"


@app.command()
def index(
    name: str | None = typer.Argument(None, help=NAME_HELP),
    hnsw: bool = typer.Option(
        False, "--hnsw", help="Build an HNSW index over cosine distance (the one kind there is)."
    ),
    m: int = typer.Option(16, "--m", help="HNSW: links per node (2..100; pgvector's default 16)."),
    ef_construction: int = typer.Option(
        64,
        "--ef-construction",
        help="HNSW: candidate list while building (4..1000, at least 2 x m; default 64).",
    ),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
    json_output: bool = typer.Option(False, "--json", help="Print a JSON summary."),
) -> None:
    """Build (or replace) a generation's vector index in the pgvector store, for `evaluate --search
    index|both`.

    Exit 2 without --hnsw or for a generation never built, 3 on the SQLite
    store (it has no index) or while a build of the generation runs.
    """
    import ptah
    from ptah.core.errors import InputError

    if not hnsw:
        raise InputError(
            "name the kind of index to build: --hnsw (an HNSW index over cosine distance)."
        )
    with ptah.open_project(spec) as project:
        summary = project.index(name, m=m, ef_construction=ef_construction)
    if json_output:
        typer.echo(json_text(summary.as_dict()))
        return
    built = summary.index
    typer.echo(
        f"generation {plain(summary.generation)} ({summary.identity}): HNSW index {plain(built['name'])} "
        f"(m {built['m']}, ef_construction {built['ef_construction']}, cosine) over {summary.vectors} vectors "
        f"in {summary.seconds:.1f}s"
    )


@app.command()
def prune(
    keep: list[str] | None = typer.Option(
        None,
        "--keep",
        metavar="NAME",
        help="Also keep this stored generation: its name or identity as `inference list` shows it (repeatable).",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Say what would be removed; remove nothing."
    ),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
    json_output: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Remove superseded generations (vectors, cached queries, record) from the store.

    Keeps every generation the specification declares and each --keep. Exit 0
    when done (or nothing to remove), 2 for a --keep that names nothing, 3
    when the store is unavailable or a generation to remove is being built.
    """
    import ptah

    with ptah.open_project(spec) as project:
        result = project.prune(keep or (), dry_run=dry_run)
    if json_output:
        typer.echo(json_text(result.as_dict()))
        return
    verb = "would remove" if dry_run else "removed"
    for generation in result.removed:
        typer.echo(
            f"{verb} {plain(generation.name)} ({generation.identity[:19]}, {plain(generation.model)}): "
            f"{generation.vectors:,} vectors, last built {generation.updated_at}"
        )
    for generation in result.kept:
        typer.echo(
            f"kept {plain(generation.name)} ({generation.identity[:19]}): {plain(generation.kept_because)}"
        )
    if not result.removed:
        typer.echo("nothing to prune: every stored generation is declared or kept")
    else:
        count = len(result.removed)
        typer.echo(
            f"{verb} {count} superseded generation{'s' if count != 1 else ''} "
            f"({result.vectors_removed:,} vectors)"
            + ("; run without --dry-run to remove them" if dry_run else "")
        )


app.command("evaluate")(evaluate)
