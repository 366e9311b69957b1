"""``ptah import ...``: making a ptah project out of a public collection (BEIR)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from ptah.cli.display import json_text, markup, plain

app = typer.Typer(help="Make a ptah project from a public collection.", no_args_is_help=True)


@app.command()
def beir(
    directory: Path = typer.Argument(
        ..., help="A BEIR dataset directory: corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv."
    ),
    split: str = typer.Option(
        "test", "--split", help="The qrels split to make corpora of (qrels/SPLIT.tsv)."
    ),
    into: Path | None = typer.Option(
        None,
        "--into",
        metavar="PROJECT_DIR",
        help="Where to write the project (default: ./DATASET_NAME).",
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace the import's files in a non-empty PROJECT_DIR."
    ),
    json_output: bool = typer.Option(False, "--json", help="Print a JSON summary of the import."),
) -> None:
    """Import a BEIR dataset: source.db, ptah.yaml (generation minilm) and corpora at depths 10 and
    100.

    Documents embed as (title + " " + text).strip(), as MTEB did for the
    published numbers; one case per query of the split judged above 0. Exit 2
    on a malformed file, qrels naming unknown documents or queries, or a
    non-empty PROJECT_DIR without --force.
    """
    from ptah.services.beir_import import import_beir

    if json_output or not sys.stderr.isatty():
        summary = import_beir(directory, split, into, force=force)
    else:
        with _progress_bar() as progress:
            summary = import_beir(directory, split, into, progress, force=force)
    if json_output:
        typer.echo(json_text(summary.as_dict()))
        return
    typer.echo(
        f"imported {plain(summary.dataset)} (split {plain(summary.split)}) into {plain(summary.project)} "
        f"in {summary.seconds:.1f}s"
    )
    typer.echo(
        f"  documents  {summary.documents}"
        + (f" ({summary.missing_titles} without a title)" if summary.missing_titles else "")
    )
    typer.echo(
        f"  queries    {summary.queries} read, {summary.cases} made into cases, "
        f"{summary.skipped_unjudged} without judgements in this split skipped"
        + (
            f", {summary.skipped_not_relevant} judged but graded 0 or below skipped"
            if summary.skipped_not_relevant
            else ""
        )
    )
    typer.echo(
        f"  qrels      {summary.judgements} judgements, {summary.relevant_judgements} graded above 0"
        + (
            f", {summary.duplicate_judgements} repeated lines"
            if summary.duplicate_judgements
            else ""
        )
    )
    for path, digest in summary.corpora.items():
        typer.echo(f"  corpus     {plain(path)} ({digest})")
    first = Path(next(iter(summary.corpora))).relative_to(summary.project)
    typer.echo(
        f"next: cd {plain(summary.project)} && ptah inference build && ptah inference evaluate --corpus {plain(first)}"
    )


@contextmanager
def _progress_bar() -> Iterator:
    """A transient rich progress bar on stderr, one task per file read."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("reading {task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        tasks: dict[str, TaskID] = {}

        def update(name: str, done: int, total: int) -> None:
            if name not in tasks:
                tasks[name] = progress.add_task(markup(name), total=total)
            progress.update(tasks[name], completed=done, total=total)

        yield update
