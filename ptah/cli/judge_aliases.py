"""``ptah corpus judge``: the holes judged in the terminal; and its spellings from before it was
split, kept for one release.

``judge --case --key --grade`` (or ``--required``, ``--forbidden``) is now ``grade`` or
``forbid``, ``judge --sample N`` is ``sample``, ``judge --judge NAME`` is ``judge-model``
(:mod:`ptah.cli.grading`). An old spelling behaves exactly as before -- the same output, the same
errors for options that do not go together -- and says first, on stderr, which command replaces it.
The next release deletes the hidden options of ``judge`` and what they lead to here.

The corpus group's commands come in here (``ptah.cli``): this module imports
:mod:`ptah.cli.grading`, which imports :mod:`ptah.cli.judge`, each adding its commands.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from ptah.cli.display import SPEC_HELP
from ptah.cli.grading import grade_with_model, judge_sample, record_grade
from ptah.cli.judge import (
    CHANNEL_HELP,
    GENERATION_HELP,
    VARIANT_HELP,
    app,
    judge_interactively,
    runs_channels,
)
from ptah.core.errors import InputError


@dataclass(frozen=True)
class OldSpelling:
    """The hidden options of ``ptah corpus judge``, as given."""

    case: str | None
    key: str | None
    grade: float | None
    required: bool
    forbidden: bool
    sample: int | None
    seed: int | None
    baseline: Path | None
    grades: Path | None
    model_judge: str | None
    json_output: bool
    new_grade: bool

    def flags(self) -> list[str]:
        """The old options given, as spelt on the command line; none for a terminal session."""
        given = {
            "--case": self.case is not None,
            "--key": self.key is not None,
            "--grade": self.grade is not None,
            "--required": self.required,
            "--forbidden": self.forbidden,
            "--sample": self.sample is not None,
            "--seed": self.seed is not None,
            "--baseline": self.baseline is not None,
            "--grades": self.grades is not None,
            "--judge": self.model_judge is not None,
            "--json": self.json_output,
            "--new-grade": self.new_grade,
        }
        return [flag for flag, present in given.items() if present]

    @property
    def scripted(self) -> bool:
        return (
            self.case is not None
            or self.key is not None
            or self.grade is not None
            or self.required
            or self.forbidden
        )

    def instead(self) -> str:
        """The command that replaces this spelling."""
        if self.model_judge is not None or self.json_output:
            return "ptah corpus judge-model CORPUS NAME"
        if any(value is not None for value in (self.sample, self.seed, self.baseline, self.grades)):
            return "ptah corpus sample CORPUS SIZE"
        if self.forbidden and not self.required:
            return "ptah corpus forbid CORPUS CASE KEY"
        return "ptah corpus grade CORPUS CASE KEY GRADE"


def deprecation(old: OldSpelling) -> str:
    """The one line an old spelling prints on stderr."""
    return (
        f"deprecated: ptah corpus judge {' '.join(old.flags())} goes in the next release; "
        f"use {old.instead()}"
    )


def run_old_spelling(
    old: OldSpelling,
    corpus: Path,
    worklist: Path | None,
    generation: list[str],
    channel: list[str],
    variant: list[str],
    spec: str | None,
) -> None:
    """Say :func:`deprecation` on stderr, then do what ``ptah corpus judge`` did with these
    options."""
    from ptah.core.corpus import FORBIDDEN, REQUIRED

    typer.echo(deprecation(old), err=True)
    channels = runs_channels(channel, variant)
    if old.model_judge is not None:
        if old.scripted or worklist is not None or old.sample is not None or old.grades is not None:
            raise InputError(
                "--judge grades the holes with a model: leave out --worklist, --sample, --grades, "
                "--case, --key and --grade"
            )
        grade_with_model(
            corpus, old.model_judge, generation, channels, spec, variant, old.json_output
        )
        return
    if old.json_output:
        raise InputError("--json goes with --judge NAME")
    if old.sample is not None:
        if old.scripted or worklist is not None:
            raise InputError(
                "--sample draws the rows to judge itself: leave out --worklist, --case, --key and "
                "--grade"
            )
        judge_sample(
            corpus,
            old.sample,
            old.seed,
            old.grades,
            old.new_grade,
            generation,
            channels,
            spec,
            variant,
            old.baseline,
        )
        return
    if old.seed is not None or old.grades is not None or old.baseline is not None:
        raise InputError("--seed, --grades and --baseline go with --sample N")
    if not old.scripted:
        judge_interactively(corpus, worklist, generation, channels, spec, variant)
        return
    if old.case is None or old.key is None:
        raise InputError(
            "--case and --key go together: give both (and --grade, --required or --forbidden)"
        )
    if old.required and old.forbidden:
        raise InputError("--required and --forbidden exclude each other: a key is one or the other")
    if worklist is not None:
        raise InputError(
            "--worklist is for the terminal session; a scripted judgement names --case and --key"
        )
    mark = REQUIRED if old.required else FORBIDDEN if old.forbidden else None
    grade = old.grade
    if grade is None:
        if mark is None:
            raise InputError(
                "--grade: give the grade (0 for not relevant), or --required or --forbidden"
            )
        grade = 1.0 if mark == REQUIRED else 0.0
    record_grade(corpus, old.case, old.key, grade, mark, old.new_grade, spec, "--grade")


@app.command()
def judge(
    corpus: Path = typer.Argument(
        ..., help="The corpus file (edited in place; its judgement record beside it)."
    ),
    worklist: Path | None = typer.Option(
        None, "--worklist", help="A worklist from holes --output (default: list the holes now)."
    ),
    generation: list[str] = typer.Option([], "--generation", "-g", help=GENERATION_HELP),
    channel: list[str] = typer.Option([], "--channel", help=CHANNEL_HELP),
    variant: list[str] = typer.Option([], "--variant", help=VARIANT_HELP),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
    # The spellings from before grade, forbid, sample and judge-model, kept for one release
    # (ptah.cli.judge_aliases): hidden, so that help offers only what goes with a session.
    case: str | None = typer.Option(None, "--case", hidden=True),
    key: str | None = typer.Option(None, "--key", hidden=True),
    grade: float | None = typer.Option(None, "--grade", hidden=True),
    required: bool = typer.Option(False, "--required", hidden=True),
    forbidden: bool = typer.Option(False, "--forbidden", hidden=True),
    sample: int | None = typer.Option(None, "--sample", min=1, hidden=True),
    seed: int | None = typer.Option(None, "--seed", min=0, hidden=True),
    baseline: Path | None = typer.Option(None, "--baseline", hidden=True),
    grades: Path | None = typer.Option(None, "--grades", hidden=True),
    model_judge: str | None = typer.Option(None, "--judge", hidden=True),
    json_output: bool = typer.Option(False, "--json", hidden=True),
    new_grade: bool = typer.Option(False, "--new-grade", hidden=True),
) -> None:
    """Judge the holes in the terminal, one row at a time.

    Keys: 0 not relevant, 1... the grades the corpus uses (ascending), r required, f forbidden, s
    skip, u undo, q save and quit (resumable: the next session asks only what is still unjudged).
    Grades above 0, required and forbidden keys go into the corpus; every judgement, with the
    SHA-256 of the row's text, into the judgement record. One key from a script: grade and forbid;
    a random sample: sample; a model judge: judge-model.
    """
    old = OldSpelling(
        case,
        key,
        grade,
        required,
        forbidden,
        sample,
        seed,
        baseline,
        grades,
        model_judge,
        json_output,
        new_grade,
    )
    if old.flags():
        run_old_spelling(old, corpus, worklist, generation, channel, variant, spec)
        return
    judge_interactively(
        corpus, worklist, generation, runs_channels(channel, variant), spec, variant
    )
