"""``ptah inference evaluate``: the main job, rendered for people (rich) or machines (``--json``) by
:mod:`ptah.render`.

The request's options (``--generation`` … ``--ef-search``, ``--seed``) are made from their
declaration on :class:`~ptah.core.request.EvaluationRequest`, one typer option each, placed in the
command's signature; the command's own are the corpus, the outputs and the three drop spellings
``--max-recall-drop`` and friends.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Optional

import typer

from ptah.cli.display import SPEC_HELP, save_help
from ptah.core.errors import EXIT_INCONCLUSIVE, EXIT_NEGATIVE
from ptah.core.registry import Option, declared
from ptah.core.request import EvaluationRequest


def evaluate(
    corpus: Path = typer.Option(..., "--corpus", help="The evaluation corpus (YAML, format 1)."),
    max_recall_drop: float | None = typer.Option(
        None,
        "--max-recall-drop",
        help="Fail (exit 1) when mean recall fell by more than this (absolute, 0..1).",
    ),
    max_mrr_drop: float | None = typer.Option(
        None, "--max-mrr-drop", help="Fail (exit 1) when MRR fell by more than this."
    ),
    max_ndcg_drop: float | None = typer.Option(
        None, "--max-ndcg-drop", help="Fail (exit 1) when nDCG fell by more than this."
    ),
    output: str | None = typer.Option(
        None, "--output", "-o", help="Write the JSON report here (atomically)."
    ),
    trec_run: str | None = typer.Option(
        None,
        "--trec-run",
        help="Also write the reference generation's ranked results as a TREC run file.",
    ),
    json_output: bool = typer.Option(
        False, "--json", help="Print the JSON report instead of tables."
    ),
    spec: str | None = typer.Option(None, "--spec", metavar="PATH", help=SPEC_HELP),
    html: str | None = typer.Option(
        None, "--html", help="Also write a self-contained HTML report here."
    ),
    junit: str | None = typer.Option(
        None,
        "--junit",
        help="Also write JUnit XML here: a test case per corpus case and per gate, for CI.",
    ),
    markdown: str | None = typer.Option(
        None,
        "--markdown",
        help="Also write a Markdown summary here (a pull-request comment); appended to $GITHUB_STEP_SUMMARY when set.",
    ),
    save: list[str] | None = typer.Option(None, "--save", help=save_help()),
    **requested,
) -> None:
    """Measure a generation on a corpus: recall, MRR, nDCG, required and forbidden keys, baseline
    gates.

    With several runs (--generation A --generation B, or --channel), the first
    is the reference and each other is compared with it side by side: mean
    deltas, per-case wins/ties/losses, a paired bootstrap 95% interval and a
    paired sign-flip test p-value per measure, and the cases that changed.

    Exit 0 when every gate passes, 1 when one fails (a required key missed, a
    forbidden key leaked, a drop beyond a threshold), 2 on bad input, 3 when
    the generation cannot be measured (not built, incomplete or stale), 4 when
    the verdict is inconclusive: the unjudged rows of either run (the
    baseline's or this one's) could flip a drop gate, passing or failing, and
    the estimate under complete judgement does not settle it -- judge the
    sample the gate names (`ptah corpus sample CORPUS SIZE --baseline B
    ...`) and evaluate again (a failing gate wins: exit 1).
    """
    import ptah
    from ptah.cli.display import check_outputs, outputs, show_report
    from ptah.services.channels import check_record_run
    from ptah.services.evidence import run_inputs
    from ptah.services.project import read_spec

    values = {
        option.name: tuple(requested[option.name] or ())
        if option.kind is tuple
        else requested[option.name]
        for option in OPTIONS
    }
    values["max_drop"] = drops(
        {"recall": max_recall_drop, "MRR": max_mrr_drop, "nDCG": max_ndcg_drop},
        requested["max_drop"] or [],
    )
    EvaluationRequest.of(**values)  # a refused option is said before any file is looked for
    found = read_spec(spec)
    # a path ptah would refuse, or a file this run reads, is refused now, not after the evaluation
    inputs = run_inputs(found, corpus, (("the baseline report", requested["baseline"]),))
    spelled = {
        "--output": output,
        "--html": html,
        "--trec-run": trec_run,
        "--junit": junit,
        "--markdown": markdown,
    }
    saved = outputs(spelled, save, inputs)
    saves = [("--save", text.partition("=")[2]) for text in save or ()]
    # the rankings a retriever returned: a file of its own, beside the report's
    recorded: str | None = requested["record_run"]
    check_outputs(("--record-run", recorded), *spelled.items(), *saves, inputs=inputs)
    values["excerpts"] = values["excerpts"] or any(
        format == "html" for format, _ in saved
    )  # the page shows them
    request = EvaluationRequest.of(**values)
    check_record_run(found, request)  # a file no run would write is refused now, too
    with ptah.open_project(found) as project:
        loaded = project.load_corpus(corpus)
        report = project.evaluate(loaded, request)
    for format, path in saved:
        report.save(path, format, corpus=loaded)
    from ptah.cli.display import report_to_ci

    report_to_ci(report, loaded)
    show_report(report, json_output=json_output, written=tuple(path for _, path in saved))
    if not report.passed:
        raise typer.Exit(EXIT_INCONCLUSIVE if report.verdict == "inconclusive" else EXIT_NEGATIVE)


def drops(spelled: dict[str, float | None], given: list[str]) -> dict[str, float]:
    """The drop gates: ``--max-recall-drop X`` and friends, and each ``--max-drop NAME=X``
    (``NAME=X@TAG``: the slice of tag TAG); a measure named twice is refused (exit 2)."""
    from ptah.cli.display import measure_values

    found = {name: value for name, value in spelled.items() if value is not None}
    return measure_values(
        "--max-drop", given, float, "a drop of {} is already gated", found, tagged=True
    )


def _parameter(option: Option) -> inspect.Parameter:
    """The typer option of a request option: a list for names and for NAME=X pairs, else its own
    type."""
    many = option.kind in (tuple, dict)
    annotation = (
        Optional[list[str]]  # noqa: UP045 (typer reads Optional)
        if many
        else Optional[option.kind]  # noqa: UP045
        if option.default is None
        else option.kind
    )
    default = None if many or option.default is None else option.kind(option.default)
    shown = (
        option.help
        if option.low is None or option.high is None
        else f"{option.help} [{option.low}..{option.high}]"
    )
    return inspect.Parameter(
        option.name,
        inspect.Parameter.KEYWORD_ONLY,
        annotation=annotation,
        default=typer.Option(default, *option.spellings, help=shown),
    )


OPTIONS = declared(EvaluationRequest)
_own = [
    parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY)
    for parameter in inspect.signature(evaluate).parameters.values()
    if parameter.kind != parameter.VAR_KEYWORD
]
evaluate.__signature__ = inspect.Signature([*_own[:1], *map(_parameter, OPTIONS), *_own[1:]])  # type: ignore[attr-defined]
