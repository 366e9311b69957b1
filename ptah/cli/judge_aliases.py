"""The spellings of ``ptah corpus judge`` from before it was split, kept for one release.

``judge --case --key --grade`` (or ``--required``, ``--forbidden``) is now ``grade`` or
``forbid``, ``judge --sample N`` is ``sample``, ``judge --judge NAME`` is ``judge-model``
(:mod:`ptah.cli.grading`). An old spelling behaves exactly as before -- the same output, the same
errors for options that do not go together -- and says first, on stderr, which command replaces it.
The next release deletes this module and the hidden options of ``judge`` that lead here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

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
    from ptah.cli.grading import grade_with_model, judge_sample, record_grade
    from ptah.cli.judge import judge_interactively, runs_channels
    from ptah.services.judging import FORBIDDEN, REQUIRED

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
