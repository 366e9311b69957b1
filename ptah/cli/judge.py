"""``ptah corpus holes``, ``judge``, ``add`` and ``pin``: fill the holes of a corpus from the source
table.

* ``holes`` lists, per case, the rows the runs asked for rank in the top k that
  nobody judged (the pooled worklist, :mod:`ptah.core.worklist`);
* ``judge`` walks a worklist in the terminal (:mod:`ptah.cli.judge_session`; the command
  itself is in :mod:`ptah.cli.judge_aliases`, with its old spellings); one key from a script, a
  random sample and a model judge are ``grade``, ``forbid``, ``sample`` and ``judge-model``
  (:mod:`ptah.cli.grading`);
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
from pathlib import Path

import typer

from ptah.cli.corpus import app
from ptah.cli.display import SPEC_HELP, check_outputs, json_text, plain, wrote
from ptah.core.corpus import shown_key
from ptah.core.errors import InputError

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
    from ptah.core.report import counted
    from ptah.services.evidence import run_inputs
    from ptah.services.judging import make_worklist
    from ptah.services.project import project_of, read_spec

    found = read_spec(spec)
    check_outputs(
        ("--output", output), inputs=run_inputs(found, corpus, (("the baseline report", baseline),))
    )
    with project_of(found) as project:
        worklist = make_worklist(
            project, corpus, generation, runs_channels(channel, variant), baseline, variant
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


def corpus_scale(corpus: Path) -> tuple[float, ...]:
    """The grades above 0 the corpus uses, ascending (``(1.0,)`` when it grades nothing yet)."""
    from ptah import load_corpus

    return load_corpus(corpus).grade_scale()


def ask_in_terminal(corpus: Path, items: list) -> list:
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


def judge_interactively(
    corpus: Path,
    worklist: Path | None,
    generations: list[str],
    channels: list[str],
    spec: str | None,
    variants: list[str],
) -> None:
    """The terminal session over ``worklist`` (default: the holes of the runs listed now)."""
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
    verdicts = ask_in_terminal(corpus, items)
    if not verdicts:
        typer.echo("nothing judged; nothing written")
        return
    say_saved(save_judgements(corpus, verdicts), str(corpus))


def runs_channels(channels: list[str], variants: list[str]) -> list[str]:
    """The channels asked for; with none, vector -- unless variants are the runs."""
    return channels or ([] if variants else ["vector"])


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
    verdicts = ask_in_terminal(corpus, [(found, hole) for hole in found.holes])
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
