"""``ptah corpus grade``, ``forbid``, ``sample`` and ``judge-model``: judgements made other than by
walking the worklist in the terminal (``ptah corpus judge``, :mod:`ptah.cli.judge`).

* ``grade`` and ``forbid`` record one key of one case, from a script;
* ``sample`` draws a random sample of the runs' holes and judges it, in the
  terminal or from a grades file, so that evaluate can bound the relevant
  holes left;
* ``judge-model`` lets a model judge of the spec grade the holes, into the
  record's ``models:`` only.

Each command has only the options that go with it. Services are imported inside
the commands, so ``ptah corpus --help`` stays light.
"""

from __future__ import annotations

import math
from pathlib import Path

import typer

from ptah.cli.display import SPEC_HELP, json_text, plain
from ptah.cli.judge import (
    CHANNEL_HELP,
    GENERATION_HELP,
    VARIANT_HELP,
    app,
    ask_in_terminal,
    corpus_scale,
    runs_channels,
)
from ptah.core.corpus import MAX_GRADE
from ptah.core.errors import InputError

CORPUS_HELP = "The corpus file (edited in place; its judgement record beside it)."
CASE_HELP = "The id of a case of the corpus."
KEY_HELP = "The row's key (a row of the source)."
NEW_GRADE_HELP = (
    "Allow a grade above 0 the corpus does not use yet; without it, grades above 0 must be on the "
    "corpus's scale."
)


@app.command("grade")
def grade_key(
    corpus: Path = typer.Argument(..., help=CORPUS_HELP),
    case: str = typer.Argument(..., help=CASE_HELP),
    key: str = typer.Argument(..., help=KEY_HELP),
    grade: float = typer.Argument(
        ..., help="The grade: 0 means judged not relevant; above 0, relevant at that grade."
    ),
    required: bool = typer.Option(
        False, "--required", help="The key must also be in the case's top k (GRADE above 0)."
    ),
    new_grade: bool = typer.Option(False, "--new-grade", help=NEW_GRADE_HELP),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
) -> None:
    """Record one judgement from a script: KEY of case CASE graded GRADE.

    A grade above 0 (and a required key) goes into the corpus; the judgement, with the SHA-256 of
    the row's text, into the judgement record. Exit 2 for a case not in the corpus, a key that is
    not a row of the source, a grade off the corpus's scale (without --new-grade) or one the corpus
    contradicts.
    """
    from ptah.core.corpus import REQUIRED

    record_grade(corpus, case, key, grade, REQUIRED if required else None, new_grade, spec)


@app.command("forbid")
def forbid_key(
    corpus: Path = typer.Argument(..., help=CORPUS_HELP),
    case: str = typer.Argument(..., help=CASE_HELP),
    key: str = typer.Argument(..., help=KEY_HELP),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
) -> None:
    """Record from a script that KEY must not be in the top k of case CASE (graded 0).

    Exit 2 for a case not in the corpus, a key that is not a row of the source, or a key the case
    expects (required or relevant).
    """
    from ptah.core.corpus import FORBIDDEN

    record_grade(corpus, case, key, 0.0, FORBIDDEN, False, spec)


def record_grade(
    corpus: Path,
    case: str,
    key: str,
    grade: float,
    mark: str | None,
    new_grade: bool,
    spec: str | None,
    named: str = "GRADE",
) -> None:
    """Check ``grade`` (its range; on the corpus's scale unless ``new_grade`` or ``mark``), record
    it and say what was saved; the errors call the grade ``named``."""
    from ptah.cli.judge_session import say_saved
    from ptah.services.judging import judge_key, off_scale
    from ptah.services.project import open_project

    if not math.isfinite(grade) or not 0 <= grade <= MAX_GRADE:
        raise InputError(
            f"{named} must be a number from 0 (not relevant) to {MAX_GRADE:,}, not {grade:g}"
        )
    if mark is None and (problem := off_scale(grade, corpus_scale(corpus), new_grade)):
        raise InputError(f"{named}: {problem}")
    with open_project(spec) as project:
        saved = judge_key(project, corpus, case, key, grade, mark)
    say_saved(saved, str(corpus))


@app.command("sample")
def sample_holes(
    corpus: Path = typer.Argument(..., help=CORPUS_HELP),
    size: int = typer.Argument(..., min=1, help="How many holes to draw."),
    seed: int | None = typer.Option(
        None, "--seed", min=0, help="The seed of the draw (default: a new one, recorded)."
    ),
    baseline: Path | None = typer.Option(
        None,
        "--baseline",
        help="Draw from the holes of this baseline report's reference run too (both sides of the "
        "gate).",
    ),
    grades: Path | None = typer.Option(
        None,
        "--grades",
        help="Grades from a file, not the terminal: a line KEY<TAB>GRADE (every drawn hole of that "
        "key) or CASE<TAB>KEY<TAB>GRADE.",
    ),
    new_grade: bool = typer.Option(False, "--new-grade", help=NEW_GRADE_HELP),
    generation: list[str] = typer.Option([], "--generation", "-g", help=GENERATION_HELP),
    channel: list[str] = typer.Option([], "--channel", help=CHANNEL_HELP),
    variant: list[str] = typer.Option([], "--variant", help=VARIANT_HELP),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
) -> None:
    """Judge a random sample of SIZE holes of the runs, drawn uniformly and recorded.

    With the sample in the judgement record, evaluate can bound the relevant holes left: the number
    an inconclusive gate names, with this command. The drawn holes are judged in the terminal (the
    keys of judge) or from --grades. Exit 2 for a bad grades file.
    """
    judge_sample(
        corpus,
        size,
        seed,
        grades,
        new_grade,
        generation,
        runs_channels(channel, variant),
        spec,
        variant,
        baseline,
    )


def judge_sample(
    corpus: Path,
    size: int,
    seed: int | None,
    grades: Path | None,
    new_grade: bool,
    generations: list[str],
    channels: list[str],
    spec: str | None,
    variants: list[str],
    baseline: Path | None = None,
) -> None:
    """Draw ``size`` holes of the runs (and of ``baseline``'s reference run) with ``seed`` (default:
    a new one), judge them from ``grades`` or in the terminal, and save them as a sample."""
    import secrets

    from ptah.cli.judge_session import say_saved
    from ptah.services.judging import RunsAsked, draw_sample, save_judgements, verdicts_from_file
    from ptah.services.project import open_project

    seed = secrets.randbelow(2**31) if seed is None else seed
    with open_project(spec) as project:
        runs = RunsAsked(generations, channels, variants, baseline)
        items, drawn = draw_sample(project, corpus, size, seed, runs)
    typer.echo(
        f"corpus {plain(corpus)}: {drawn.drawn} holes drawn at random (seed {seed}) from the holes of "
        f"{len(drawn.generations)} {'run' if len(drawn.generations) == 1 else 'runs'}"
    )
    if not items:
        typer.echo("no holes: nothing to judge")
        return
    if grades is not None:
        verdicts = verdicts_from_file(grades, items, corpus_scale(corpus), new_grade)
    else:
        verdicts = ask_in_terminal(corpus, items)
    if not verdicts:
        typer.echo("nothing judged; nothing written")
        return
    say_saved(save_judgements(corpus, verdicts, sample=drawn), str(corpus))
    typer.echo(
        f"sample: {len(verdicts)} of {drawn.drawn} drawn holes judged, "
        f"{sum(1 for v in verdicts if v.grade > 0)} relevant"
    )


@app.command("judge-model")
def judge_model(
    corpus: Path = typer.Argument(
        ..., help="The corpus file (read only: the grades go into its judgement record)."
    ),
    name: str = typer.Argument(..., help="A model judge of the spec (judges:)."),
    generation: list[str] = typer.Option([], "--generation", "-g", help=GENERATION_HELP),
    channel: list[str] = typer.Option([], "--channel", help=CHANNEL_HELP),
    variant: list[str] = typer.Option([], "--variant", help=VARIANT_HELP),
    json_output: bool = typer.Option(False, "--json", help="Print what was graded as JSON."),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
) -> None:
    """Let the spec's model judge NAME grade the holes of the runs.

    It grades every hole of the runs and every key a person judged from a random sample; its grades
    go into the judgement record under models:, never into the corpus, and never count as judged:
    evaluate calibrates them on the person's sample (see docs/judges.md).
    """
    grade_with_model(
        corpus, name, generation, runs_channels(channel, variant), spec, variant, json_output
    )


def grade_with_model(
    corpus: Path,
    name: str,
    generations: list[str],
    channels: list[str],
    spec: str | None,
    variants: list[str],
    json_output: bool,
) -> None:
    """The model judge ``name`` grades the holes of the runs and the sampled keys; what it did is
    said as text or JSON, its progress on stderr."""
    from dataclasses import asdict

    from ptah.services.model_judging import judge_with_model
    from ptah.services.project import open_project

    def progress(done: int, total: int) -> None:
        typer.echo(f"judge {name}: {done:,} of {total:,} pairs asked", err=True)

    with open_project(spec) as project:
        done = judge_with_model(
            project, corpus, name, generations, channels, variants, progress=progress
        )
    if json_output:
        typer.echo(json_text(asdict(done)))
        return
    refused = sum(done.refused.values())
    typer.echo(
        f"judge {plain(name)} ({done.by}): {done.pairs:,} pairs (holes and sampled keys); {done.graded:,} graded "
        f"now ({done.relevant:,} relevant), {done.kept:,} graded before on the same text, {refused:,} answers "
        "refused"
        + (
            " ("
            + ", ".join(f"{count:,} {why}" for why, count in sorted(done.refused.items()))
            + ")"
            if refused
            else ""
        )
        + (f", {done.left:,} left for another run (max_requests)" if done.left else "")
    )
    if done.usage:
        typer.echo(
            "usage: "
            + ", ".join(f"{key} {value}" for key, value in done.usage.items() if value is not None)
        )
    typer.echo(
        f"grades in {plain(done.record)} under models: (never counted as judged; evaluate calibrates them on a "
        "person's random sample)"
    )
