"""``ptah report rebaseline``: a new baseline from an old report, after the corpus changed (no hand
work)."""

from __future__ import annotations

from pathlib import Path

import typer

from ptah.cli.display import SPEC_HELP, plain


def rebaseline(
    old: Path = typer.Argument(
        ..., help="The old report (evaluate --output) whose runs to measure again."
    ),
    corpus: Path = typer.Option(..., "--corpus", help="The new corpus to measure them on."),
    output: str | None = typer.Option(
        None, "--output", help="Write the new report (the new baseline) here."
    ),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
) -> None:
    """Measure an old report's generations again, by identity, on a new corpus: the new baseline.

    The same runs, channels, search mode, fusion, extra measures and
    statistics. Exit 0 when measured; 2 for a report or corpus that cannot
    be read; 3 when a generation is no longer declared with the same
    identity, not in the store, incomplete or stale, or measures differently
    now (its text changed).
    """
    import ptah
    from ptah.cli.display import check_outputs
    from ptah.services.evidence import run_inputs
    from ptah.services.project import project_of, read_spec
    from ptah.services.rebaseline import rebaseline as measure_again

    found = read_spec(spec)
    check_outputs(
        ("--output", output), inputs=run_inputs(found, corpus, (("the old report", old),))
    )
    loaded = ptah.load_corpus(corpus)
    with project_of(found) as project:
        report = measure_again(project, old, loaded)
    if output is not None:
        report.save(output)
    typer.echo(f"{plain(old)} measured again on {plain(corpus)} ({report.corpus.digest}):")
    for run in report.runs:
        means = ", ".join(
            f"{name} {'N/A' if mean.value is None else f'{mean.value:.4f}'}"
            for name, mean in run.means.items()
        )
        typer.echo(f"  {plain(run.name)}: {means}")
    typer.echo(
        f"wrote {plain(output)}"
        if output is not None
        else "not written: give --output NEW.json to keep it"
    )
