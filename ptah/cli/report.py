"""``ptah report show``, ``diff`` and ``trend``: saved reports (``--output``) re-read, with no store
and no model.

Each report is read as a baseline is (bounded, checked against the report
schema and against itself; exit 2 otherwise).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer

from ptah.cli.display import check_outputs, outputs, save_help, show_report
from ptah.cli.rebaseline import rebaseline

app = typer.Typer(
    help="Re-render, compare and chart saved reports (--output files); no store, no model.",
    no_args_is_help=True,
)


def _load(path: Path):
    import ptah

    return ptah.load_report(path)


@app.command()
def show(
    report: Path = typer.Argument(..., help="A report written by evaluate --output."),
    html: str | None = typer.Option(
        None, "--html", help="Write the self-contained HTML page here."
    ),
    markdown: str | None = typer.Option(
        None, "--markdown", help="Write the Markdown summary here."
    ),
    junit: str | None = typer.Option(
        None, "--junit", help="Write JUnit XML here (cases carry no corpus line)."
    ),
    save: list[str] | None = typer.Option(None, "--save", help=save_help()),
    json_output: bool = typer.Option(
        False, "--json", help="Print the JSON report instead of tables."
    ),
) -> None:
    """Print a saved report as evaluate did, and write its page, summary or JUnit XML.

    Exit 0 when it was read and rendered, whatever its verdict (the verdict
    was evaluate's exit code); 2 when it is not a ptah report.
    """
    from ptah.services.evidence import run_inputs

    saved = outputs(
        {"--html": html, "--markdown": markdown, "--junit": junit},
        save,
        run_inputs(reports=(("the report", report),)),
    )
    loaded = _load(report)
    for format, path in saved:
        loaded.save(path, format)
    show_report(loaded, json_output=json_output, written=tuple(path for _, path in saved))


def _pick(report, path: Path, name: str | None):
    from ptah.core.errors import InputError
    from ptah.core.visible import abbreviated

    if name is None:
        return report.runs[0]
    for run in report.runs:
        if run.name == name:
            return run
    raise InputError(
        f"{path}: has no run of the generation {abbreviated(name)}; it has "
        + ", ".join(sorted({run.name for run in report.runs}))
    )


def _labelled(run, label: str):
    return replace(run, generation=replace(run.generation, name=label))


@app.command()
def diff(
    a: Path = typer.Argument(..., help="The earlier report (the reference)."),
    b: Path = typer.Argument(..., help="The later report, compared with A case by case."),
    run: str | None = typer.Option(
        None,
        "--run",
        help="Compare the runs of this generation (default: each report's first run).",
    ),
    bootstrap: int = typer.Option(
        10_000,
        "--bootstrap",
        help="Resamples for the paired bootstrap intervals and Monte Carlo sign-flip tests.",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap and Monte Carlo draws."),
    json_output: bool = typer.Option(
        False, "--json", help="Print the comparison as JSON (a report's comparison section)."
    ),
) -> None:
    """Compare two saved reports of the same corpus, case by case.

    Mean deltas, wins/ties/losses, the paired bootstrap interval and sign-flip
    p-value per measure, and the cases that changed, as evaluate compares runs.

    Exit 0 when compared; 2 when the reports measured different corpora (their digests differ, or
    their runs hold other case ids) or a run is missing.
    """
    from ptah.core.baseline import Evidence, check_cases
    from ptah.core.comparison import StatisticsSettings, compare_runs
    from ptah.core.errors import IncomparableBaseline

    settings = StatisticsSettings(resamples=bootstrap, seed=seed)
    first, second = _load(a), _load(b)
    if first.corpus.digest != second.corpus.digest:
        raise IncomparableBaseline(
            f"{a} and {b} measured different corpora (digests {first.corpus.digest} and {second.corpus.digest}); "
            "only reports of the same corpus can be compared case by case"
        )
    reference, candidate = _pick(first, a, run), _pick(second, b, run)
    check_cases(
        [case.id for case in reference.cases], [candidate], str(b), f"{a} (run {reference.name})"
    )
    runs = [
        _labelled(reference, f"A {reference.name}"),
        _labelled(candidate, f"B {candidate.name}"),
    ]
    paths = Evidence(corpus_path=first.corpus.path)  # the settling command's corpus
    comparison = compare_runs(runs, settings, paths)
    assert comparison is not None, "two runs make a comparison"
    if json_output:
        from ptah.cli.display import json_text

        typer.echo(
            json_text(
                {
                    "a": {"path": str(a), "created_at": first.created_at, "run": reference.name},
                    "b": {"path": str(b), "created_at": second.created_at, "run": candidate.name},
                    "comparison": comparison.to_dict(),
                }
            )
        )
        return
    from ptah.render.layout import markup, output_console
    from ptah.render.table import render_comparison

    console = output_console()
    console.print(
        f"A {markup(a)} ({markup(first.created_at)}), B {markup(b)} ({markup(second.created_at)}); "
        f"corpus {markup(first.corpus.digest)}"
    )
    render_comparison(comparison, console)


@app.command()
def trend(
    reports: list[Path] = typer.Argument(
        ..., help="Saved reports, in any order (sorted by created_at)."
    ),
    html: str = typer.Option(..., "--html", help="Write the trend page here."),
) -> None:
    """Draw each mean over time (created_at) on a self-contained HTML page.

    One line per generation and channel, each mean with its interval.
    Exit 0 when written; 2 when a report is not a ptah report.
    """
    from ptah.adapters.files import write_text_atomically
    from ptah.core.errors import ReportError
    from ptah.render.trend import created, render_trend
    from ptah.services.evidence import run_inputs

    check_outputs(
        ("--html", html), inputs=run_inputs(reports=tuple(("a report", path) for path in reports))
    )
    loaded = []
    for path in reports:
        report = _load(path)
        try:
            created(report)
        except ValueError:
            raise ReportError(
                f"{path}: created_at is not an ISO 8601 time; the report is damaged"
            ) from None
        loaded.append(report)
    write_text_atomically(html, render_trend(loaded))
    from ptah.cli.display import plain

    typer.echo(f"wrote {plain(html)}: {len(loaded)} reports")


app.command("rebaseline")(rebaseline)
