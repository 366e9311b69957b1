"""``ptah corpus validate``, ``digest``, ``export-qrels`` and ``plan``: corpora without a model."""

from __future__ import annotations

from pathlib import Path

import typer

from ptah.adapters.files import write_text_atomically
from ptah.cli.display import error_text, json_text, measure_values, plain
from ptah.core.errors import EXIT_INPUT, CorpusError, InputError

app = typer.Typer(
    help="Check evaluation corpora, print their digests, export their judgements, plan their size; "
    "list their holes and judge them (in the terminal, one key from a script, a random sample, a "
    "model judge).",
    no_args_is_help=True,
)


@app.command()
def validate(
    files: list[Path] = typer.Argument(
        ..., help="Corpus files to check; every problem in every file is reported."
    ),
    json_output: bool = typer.Option(
        False, "--json", help="Print one JSON object per run instead of text."
    ),
) -> None:
    """Check corpus files. Exit 0 when all are valid, 2 when any is not."""
    from ptah import load_corpus

    results = []
    for path in files:
        try:
            corpus = load_corpus(path)
        except CorpusError as exc:
            results.append(
                {"path": str(path), "valid": False, "problems": [p.as_dict() for p in exc.problems]}
            )
            if not json_output:
                typer.echo(error_text(exc), err=True)
            continue
        results.append(
            {
                "path": str(path),
                "valid": True,
                "digest": corpus.digest,
                "cases": len(corpus.cases),
                "problems": [],
            }
        )
        if not json_output:
            typer.echo(f"{plain(path)}: valid, {len(corpus.cases)} cases, {corpus.digest}")
    invalid = sum(not r["valid"] for r in results)
    if json_output:
        typer.echo(json_text({"valid": invalid == 0, "files": results}))
    elif invalid:
        typer.echo(f"{invalid} of {len(results)} corpus files invalid", err=True)
    if invalid:
        raise typer.Exit(EXIT_INPUT)


@app.command()
def digest(
    file: Path = typer.Argument(..., help="The corpus file."),
    json_output: bool = typer.Option(
        False, "--json", help='Print {"path", "digest", "cases"} as JSON.'
    ),
) -> None:
    """Print the corpus digest (sha256:...): what --baseline comparability rests on."""
    from ptah import load_corpus

    corpus = load_corpus(file)
    if json_output:
        typer.echo(
            json_text({"path": str(file), "digest": corpus.digest, "cases": len(corpus.cases)})
        )
    else:
        typer.echo(corpus.digest)


@app.command("export-qrels")
def export_qrels(
    corpus: Path = typer.Argument(..., help="The corpus file."),
    file: str = typer.Argument(..., help="The TREC qrels file to write (replaced atomically)."),
    scale: float | None = typer.Option(
        None,
        "--scale",
        help="Multiply every grade by this to make fractional grades whole (trec_eval reads integers).",
    ),
) -> None:
    """Write the corpus judgements as TREC qrels (QID 0 DOCID GRADE), for trec_eval, pytrec_eval or
    ranx.

    Exit 2 when a grade is fractional (give --scale) or a case id or key holds
    whitespace, which TREC files cannot carry.
    """
    from ptah import load_corpus
    from ptah.core.trec import qrels_lines

    lines = qrels_lines(load_corpus(corpus), scale)
    write_text_atomically(file, "".join(line + "\n" for line in lines))
    typer.echo(f"wrote {plain(file)} ({len(lines)} judgements)")


@app.command()
def plan(
    corpus: Path = typer.Argument(..., help="The corpus file."),
    baseline: Path = typer.Option(
        ...,
        "--baseline",
        help="A report ptah wrote on this corpus: its per-case values "
        "give the spread of the paired differences.",
    ),
    detect: list[str] = typer.Option(
        ...,
        "--detect",
        help="NAME=X: a change of X in the measure NAME to detect, "
        "1e-6 <= X <= 1 (repeatable), e.g. --detect nDCG=0.02.",
    ),
    power: float = typer.Option(
        0.8,
        "--power",
        help="The chance of seeing the change when it is there, 1e-6 <= P <= 1 - 1e-6.",
    ),
    alpha: float = typer.Option(
        0.05, "--alpha", help="The two-sided level of the paired test, 1e-6 <= A <= 1 - 1e-6."
    ),
    json_output: bool = typer.Option(False, "--json", help="Print the plans as JSON."),
) -> None:
    """How many cases the corpus, and each slice (tag), needs to see a change of X with the given
    power.

    The paired normal approximation: n = ((z(1 - alpha/2) + z(power)) * s / X)^2,
    rounded up (never below the 6 cases at alpha 0.05 that the sign-flip test
    needs to reach p < alpha at all), where s is the standard deviation of the
    per-case paired differences the report measured (its later runs against its first, or its
    run against its baseline); the tests check it against a simulation of the
    sign-flip test and bootstrap interval a comparison uses. A report of one
    run alone has no pairs: s is taken as sqrt(2) x the spread of its per-case
    values (two independent runs; paired runs usually spread less, so the
    counts err high), and the output says so. A slice is planned with its own
    s; "underpowered" marks one with fewer cases than it needs. Exit 0; 2 for
    bad input or a report of another corpus.
    """
    from ptah import load_corpus
    from ptah.core.baseline import check_cases, check_comparable, rescore
    from ptah.core.slicing import check_settings, report_sample
    from ptah.core.slicing import plan as plan_measure
    from ptah.services.evaluate import load_baseline

    wanted = measure_values("--detect", detect, _change, "{} is already planned")
    try:
        check_settings(1.0, power, alpha)
    except ValueError as exc:
        raise InputError(f"--{exc}") from None
    loaded = load_corpus(corpus)
    report = load_baseline(baseline)
    check_comparable(loaded, report, str(baseline), str(corpus))
    check_cases(
        [case.id for case in loaded.cases], report.runs, str(baseline), f"the corpus {corpus}"
    )
    report = rescore(
        loaded, report
    ).report  # the per-case values its rankings give under the judgements now
    plans = []
    for measure, delta in wanted.items():
        try:
            sample = report_sample(report, measure)
        except KeyError:
            raise InputError(
                f"--detect {measure}: the report {baseline} does not measure {measure}; measure it "
                "there first (--measure)"
            ) from None
        plans.append(plan_measure(loaded, sample, delta, power, alpha))
    if json_output:
        typer.echo(
            json_text(
                {
                    "corpus": str(corpus),
                    "digest": loaded.digest,
                    "baseline": str(baseline),
                    "method": "paired normal approximation",
                    "plans": [p.as_dict() for p in plans],
                }
            )
        )
        return
    for index, found in enumerate(plans):
        typer.echo(("" if index == 0 else "\n") + _plan_text(found))


def _change(text: str) -> float:
    """The X of ``--detect NAME=X``: a number, 1e-6 <= X <= 1; ``ValueError`` saying so
    otherwise."""
    from ptah.core.slicing import check_settings

    try:
        delta = float(text)
    except ValueError:
        raise ValueError(
            f"the change to detect must be a number such as 0.02, not {text!r}"
        ) from None
    check_settings(delta, 0.5, 0.5)
    return delta


def _plan_text(found) -> str:
    """One measure's plan as a table: the whole corpus, then each slice."""
    lines = [
        f"{found.measure}: to see a change of {found.delta:g} with power {found.power:g} at alpha {found.alpha:g} "
        "(two-sided)",
        f"  spread: {plain(found.source)}",
        f"  {'slice':<24} {'cases':>6} {'needed':>7}  {'spread':>7}",
    ]
    for entry in (found.overall, *found.slices):
        name = "(all cases)" if entry.tag is None else entry.tag
        needed = "-" if entry.needed is None else f"{entry.needed:,}"
        deviation = "-" if entry.spread is None else f"{entry.spread:.4f}"
        note = (
            "  underpowered"
            if entry.underpowered
            else ""
            if entry.needed is not None
            else "  cannot say: fewer than 2 cases"
            if entry.cases < 2
            else "  cannot say: no spread"
        )
        lines.append(f"  {name:<24} {entry.cases:>6,} {needed:>7}  {deviation:>7}{note}")
    return "\n".join(lines)
