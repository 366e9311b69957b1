"""``ptah corpus holes``, ``judge``, ``add`` and ``pin``: fill the holes of a corpus from the source
table.

* ``holes`` lists, per case, the rows the runs asked for rank in the top k that
  nobody judged (the pooled worklist, :mod:`ptah.core.worklist`);
* ``judge`` walks a worklist in the terminal (:mod:`ptah.cli.judge_session`),
  or records one judgement from a script;
* ``add`` authors a new case against the table: the pooled top rows of the
  vector and lexical channels, judged in the same session, then appended;
* ``pin`` records the current text digest of every key the corpus names.

Grades above 0 (and required, forbidden keys) are written into the corpus,
edited in place with its comments and layout kept; every judgement goes into
the judgement record beside it (``NAME.judged.yaml``). Services are imported
inside the commands, so ``ptah corpus --help`` stays light.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer

from ptah.cli.corpus import app
from ptah.cli.display import SPEC_HELP, check_outputs, json_text, plain, wrote
from ptah.core.corpus import MAX_GRADE, shown_key
from ptah.core.errors import InputError
from ptah.core.verdicts import counted

GENERATION_HELP = "A generation to search (repeat for several; default: the active one)."
CHANNEL_HELP = (
    "vector, lexical or hybrid (repeat for several; default: vector, unless --variant is given)."
)
VARIANT_HELP = "A variant of the specification (variants:), as a run of its own (repeatable)."
LINE_CHARS = 160


@app.command()
def holes(
    corpus: Path = typer.Argument(..., help="The corpus file."),
    generation: list[str] = typer.Option([], "--generation", "-g", help=GENERATION_HELP),
    channel: list[str] = typer.Option([], "--channel", help=CHANNEL_HELP),
    variant: list[str] = typer.Option([], "--variant", help=VARIANT_HELP),
    baseline: Path | None = typer.Option(
        None,
        "--baseline",
        help="A report of this corpus: also list the rows in "
        "its reference run's top k that nobody judged (those the runs no longer "
        "return are the report's baseline holes lost).",
    ),
    output: str | None = typer.Option(
        None, "--output", help="Write the worklist here as JSON (for judge --worklist)."
    ),
    json_output: bool = typer.Option(False, "--json", help="Print the worklist as JSON."),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
) -> None:
    """List the holes: rows in a case's top k that neither the corpus nor its judgement record
    judges.

    For each case, the union over every run asked for, with the rank each run
    gave the row and its text; best rank first. Exit 0 (holes or none).
    """
    from ptah.adapters.files import write_text_atomically
    from ptah.core.baseline import spec_flag
    from ptah.services.inputs import run_inputs
    from ptah.services.judging import make_worklist
    from ptah.services.project import project_of, read_spec

    found = read_spec(spec)
    check_outputs(
        ("--output", output), inputs=run_inputs(found, corpus, (("the baseline report", baseline),))
    )
    with project_of(found) as project:
        worklist = make_worklist(
            project, corpus, generation, _channels(channel, variant), baseline, variant
        )
    if output is not None:
        write_text_atomically(
            output, json.dumps(worklist.to_dict(), indent=2, ensure_ascii=False) + "\n"
        )
    if json_output:
        typer.echo(json_text(worklist.to_dict()))
        if output is not None:
            wrote(output, err=True)
        return
    typer.echo(
        f"corpus {plain(corpus)} ({worklist.corpus['digest']}); runs: {plain(', '.join(worklist.runs))}; "
        f"text of {plain(worklist.text_of)}"
    )
    for case in worklist.cases:
        typer.echo(f'case "{plain(case.id)}" (k {case.k}): {plain(case.query)}')
        for hole in case.holes:
            where = ", ".join(f"{plain(run)} #{rank}" for run, rank in hole.ranks.items())
            typer.echo(f'  "{plain(shown_key(hole.key))}": {where}')
            typer.echo(f"      {plain(_line(hole.text))}")
    count = worklist.count
    typer.echo(
        f"{counted(count, 'hole')} in {counted(len(worklist.cases), 'case')}"
        + (
            f"; judge them with: ptah corpus judge {plain(corpus)}"
            + (f" --worklist {plain(output)}" if output else "")
            + plain(spec_flag(spec))
            if count
            else ""
        )
    )
    if output is not None:
        wrote(output)


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= LINE_CHARS else flat[: LINE_CHARS - 1] + "…"


@app.command()
def judge(
    corpus: Path = typer.Argument(
        ..., help="The corpus file (edited in place; its judgement record beside it)."
    ),
    worklist: Path | None = typer.Option(
        None, "--worklist", help="A worklist from holes --output (default: list the holes now)."
    ),
    case: str | None = typer.Option(None, "--case", help="Script: the case id to judge a key for."),
    key: str | None = typer.Option(
        None, "--key", help="Script: the row's key (a row of the source)."
    ),
    grade: float | None = typer.Option(
        None, "--grade", help="Script: the grade; 0 means judged not relevant."
    ),
    required: bool = typer.Option(
        False, "--required", help="Script: the key is required (grade 1 unless given)."
    ),
    forbidden: bool = typer.Option(
        False, "--forbidden", help="Script: the key is forbidden (grade 0)."
    ),
    sample: int | None = typer.Option(
        None,
        "--sample",
        min=1,
        help="Judge a random sample of N holes of the runs "
        "(-g, --channel), drawn uniformly and recorded, so evaluate can bound the "
        "relevant holes left (the number an inconclusive gate names).",
    ),
    seed: int | None = typer.Option(
        None,
        "--seed",
        min=0,
        help="With --sample: the seed of the draw (default: a new one, recorded).",
    ),
    baseline: Path | None = typer.Option(
        None,
        "--baseline",
        help="With --sample: draw from the holes of this "
        "baseline report's reference run too (both sides of the gate).",
    ),
    grades: Path | None = typer.Option(
        None,
        "--grades",
        help="With --sample: grades from a file, not the terminal: "
        "a line KEY<TAB>GRADE (every drawn hole of that key) or CASE<TAB>KEY<TAB>GRADE.",
    ),
    model_judge: str | None = typer.Option(
        None,
        "--judge",
        metavar="NAME",
        help="Let the spec's model judge NAME "
        "(judges:) grade every hole of the runs and every key a person judged "
        "from a random sample; its grades go into the record under models:, "
        "never into the corpus (see docs/judges.md).",
    ),
    json_output: bool = typer.Option(
        False, "--json", help="With --judge: print what was graded as JSON."
    ),
    new_grade: bool = typer.Option(
        False,
        "--new-grade",
        help="Allow a --grade (or a grade of --grades) the corpus does "
        "not use yet; without it, grades above 0 must be on the corpus's scale.",
    ),
    generation: list[str] = typer.Option([], "--generation", "-g", help=GENERATION_HELP),
    channel: list[str] = typer.Option([], "--channel", help=CHANNEL_HELP),
    variant: list[str] = typer.Option([], "--variant", help=VARIANT_HELP),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
) -> None:
    """Judge the holes in the terminal, one row at a time, or one key from a script (--case --key
    --grade).

    Keys: 0 not relevant, 1... the grades the corpus uses (ascending), r required, f forbidden, s
    skip, u undo, q save and quit (resumable: the next session asks only what is still unjudged).
    Grades above 0, required and forbidden keys go into the corpus; every judgement, with the
    SHA-256 of the row's text, into the judgement record. Exit 2 for a case not in the corpus or a
    key that is not a row of the source.
    """
    from ptah.cli.judge_session import say_saved
    from ptah.core.corpus import FORBIDDEN, REQUIRED
    from ptah.services.judging import judge_key, off_scale
    from ptah.services.project import open_project

    scripted = case is not None or key is not None or grade is not None or required or forbidden
    if model_judge is not None:
        if scripted or worklist is not None or sample is not None or grades is not None:
            raise InputError(
                "--judge grades the holes with a model: leave out --worklist, --sample, --grades, --case, "
                "--key and --grade"
            )
        _judge_with_model(
            corpus, model_judge, generation, _channels(channel, variant), spec, variant, json_output
        )
        return
    if json_output:
        raise InputError("--json goes with --judge NAME")
    if sample is not None:
        if scripted or worklist is not None:
            raise InputError(
                "--sample draws the rows to judge itself: leave out --worklist, --case, --key and --grade"
            )
        _judge_sample(
            corpus,
            sample,
            seed,
            grades,
            new_grade,
            generation,
            _channels(channel, variant),
            spec,
            variant,
            baseline,
        )
        return
    if seed is not None or grades is not None or baseline is not None:
        raise InputError("--seed, --grades and --baseline go with --sample N")
    if not scripted:
        _judge_interactively(
            corpus, worklist, generation, _channels(channel, variant), spec, variant
        )
        return
    if case is None or key is None:
        raise InputError(
            "--case and --key go together: give both (and --grade, --required or --forbidden)"
        )
    if required and forbidden:
        raise InputError("--required and --forbidden exclude each other: a key is one or the other")
    if worklist is not None:
        raise InputError(
            "--worklist is for the terminal session; a scripted judgement names --case and --key"
        )
    mark = REQUIRED if required else FORBIDDEN if forbidden else None
    if grade is None:
        if mark is None:
            raise InputError(
                "--grade: give the grade (0 for not relevant), or --required or --forbidden"
            )
        grade = 1.0 if mark == REQUIRED else 0.0
    if not math.isfinite(grade) or not 0 <= grade <= MAX_GRADE:
        raise InputError(
            f"--grade must be a number from 0 (not relevant) to {MAX_GRADE:,}, not {grade:g}"
        )
    if mark is None and (problem := off_scale(grade, _scale(corpus), new_grade)):
        raise InputError(f"--grade: {problem}")
    with open_project(spec) as project:
        saved = judge_key(project, corpus, case, key, grade, mark)
    say_saved(saved, str(corpus))


def _judge_with_model(
    corpus: Path,
    name: str,
    generations: list[str],
    channels: list[str],
    spec: str | None,
    variants: list[str],
    json_output: bool,
) -> None:
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


def _scale(corpus: Path) -> tuple[float, ...]:
    from ptah import load_corpus

    return load_corpus(corpus).grade_scale()


def _ask_in_terminal(corpus: Path, items: list) -> list:
    """The judgements of ``items`` made in the terminal session, offering the corpus's grades (said
    first) and showing with each row the grades its case already gives."""
    from ptah import load_corpus
    from ptah.cli.judge_session import key_reader, run_session

    loaded = load_corpus(corpus)
    scale = loaded.grade_scale()
    typer.echo(
        f"grades on the corpus's scale: {', '.join(f'{g:g}' for g in scale)}"
        + (" (it grades nothing yet: 1 is relevant)" if scale == (1.0,) else "")
    )
    grades = {case.id: tuple(case.relevant.values()) for case in loaded.cases}
    with key_reader() as read:
        return run_session(items, read, scale, grades)


def _judge_interactively(
    corpus: Path,
    worklist: Path | None,
    generations: list[str],
    channels: list[str],
    spec: str | None,
    variants: list[str],
) -> None:
    from ptah.cli.judge_session import say_saved
    from ptah.services.judging import make_worklist, read_worklist, save_judgements, still_unjudged

    if worklist is not None:
        listed = read_worklist(worklist)
    else:
        from ptah.services.project import open_project

        with open_project(spec) as project:
            listed = make_worklist(project, corpus, generations, channels, variants=variants)
    items = still_unjudged(corpus, listed)
    typer.echo(
        f"corpus {plain(corpus)}: {len(items)} rows to judge"
        + (
            f" ({listed.count - len(items)} of the worklist judged already)"
            if listed.count > len(items)
            else ""
        )
    )
    if not items:
        return
    verdicts = _ask_in_terminal(corpus, items)
    if not verdicts:
        typer.echo("nothing judged; nothing written")
        return
    say_saved(save_judgements(corpus, verdicts), str(corpus))


def _channels(channels: list[str], variants: list[str]) -> list[str]:
    """The channels asked for; with none, vector -- unless variants are the runs."""
    return channels or ([] if variants else ["vector"])


def _judge_sample(
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
    import secrets

    from ptah.cli.judge_session import say_saved
    from ptah.services.judging import draw_sample, save_judgements, verdicts_from_file
    from ptah.services.project import open_project

    seed = secrets.randbelow(2**31) if seed is None else seed
    with open_project(spec) as project:
        items, drawn = draw_sample(
            project, corpus, size, seed, generations, channels, variants, baseline
        )
    typer.echo(
        f"corpus {plain(corpus)}: {drawn.drawn} holes drawn at random (seed {seed}) from the holes of "
        f"{len(drawn.generations)} {'run' if len(drawn.generations) == 1 else 'runs'}"
    )
    if not items:
        typer.echo("no holes: nothing to judge")
        return
    if grades is not None:
        verdicts = verdicts_from_file(grades, items, _scale(corpus), new_grade)
    else:
        verdicts = _ask_in_terminal(corpus, items)
    if not verdicts:
        typer.echo("nothing judged; nothing written")
        return
    say_saved(save_judgements(corpus, verdicts, sample=drawn), str(corpus))
    typer.echo(
        f"sample: {len(verdicts)} of {drawn.drawn} drawn holes judged, "
        f"{sum(1 for v in verdicts if v.grade > 0)} relevant"
    )


@app.command()
def add(
    corpus: Path = typer.Argument(
        ..., help="The corpus file (the case is appended; its layout kept)."
    ),
    case_id: str = typer.Option(..., "--id", help="The new case's id (unique in the corpus)."),
    query: str = typer.Option(..., "--query", help="The text to search with."),
    k: int | None = typer.Option(
        None,
        "--k",
        min=1,
        max=1000,
        help="The case's depth (default: the corpus's default_k, else 10).",
    ),
    generation: str | None = typer.Option(
        None, "--generation", "-g", help="The generation to search (default: the active one)."
    ),
    channel: list[str] = typer.Option(
        [], "--channel", help="Channels to pool (default: vector and lexical)."
    ),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
) -> None:
    """Author a case against the table: judge the pooled top rows of the query, then append the
    case.

    The same keys as judge; at least one row must be graded relevant or
    required. Exit 2 for an id the corpus has already.
    """
    from ptah import load_corpus
    from ptah.cli.judge_session import say_saved
    from ptah.services.judging import candidates, save_judgements
    from ptah.services.project import open_project

    with open_project(spec) as project:
        found = candidates(
            project, corpus, case_id, query, k, generation, channel or ["vector", "lexical"]
        )
    typer.echo(
        f'case "{plain(case_id)}": {len(found.holes)} rows in the top {found.k} of '
        f"{plain(', '.join(dict.fromkeys(run for hole in found.holes for run in hole.ranks)))}"
    )
    verdicts = _ask_in_terminal(corpus, [(found, hole) for hole in found.holes])
    if not any(v.grade > 0 for v in verdicts):
        raise InputError(
            f'no row was judged relevant (a grade) or required (r): case "{case_id}" was not added'
        )
    written_k = k if k is not None or load_corpus(corpus).default_k is not None else found.k
    say_saved(save_judgements(corpus, verdicts, new_case=(case_id, query, written_k)), str(corpus))


@app.command()
def pin(
    corpus: Path = typer.Argument(..., help="The corpus file."),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
) -> None:
    """Record the current text digest of every key the corpus names in its judgement record.

    Each becomes a judgement with its corpus grade (forbidden: 0), so that
    evaluate can list the judged rows whose text changed since. Exit 2 for a
    key that is not a row of the source.
    """
    from ptah.services.judging import pin as pin_keys
    from ptah.services.project import open_project

    with open_project(spec) as project:
        pinned, path = pin_keys(project, corpus)
    typer.echo(f"judgement record {plain(path)}: {pinned} keys pinned")
