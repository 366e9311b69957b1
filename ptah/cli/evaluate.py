"""``ptah inference evaluate``: the main job, rendered for people (rich) or machines (``--json``) by :mod:`ptah.render`."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import List, Optional

import typer

from ptah.cli.display import save_help
from ptah.core.errors import EXIT_INCONCLUSIVE, EXIT_NEGATIVE


def evaluate(
    corpus: Path = typer.Option(..., "--corpus", help="The evaluation corpus (YAML, format 1)."),
    generation: Optional[List[str]] = typer.Option(None, "--generation", "-g", help="Generation to evaluate (repeatable; default: the spec's active one)."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="A previous report (--output) to compare with; its corpus digest must match."),
    max_recall_drop: Optional[float] = typer.Option(None, "--max-recall-drop", help="Fail (exit 1) when mean recall fell by more than this (absolute, 0..1)."),
    max_mrr_drop: Optional[float] = typer.Option(None, "--max-mrr-drop", help="Fail (exit 1) when MRR fell by more than this."),
    max_ndcg_drop: Optional[float] = typer.Option(None, "--max-ndcg-drop", help="Fail (exit 1) when nDCG fell by more than this."),
    max_drop: Optional[List[str]] = typer.Option(None, "--max-drop", help="NAME=X: fail (exit 1) when the mean of measure NAME (recall, MRR, nDCG, MAP@10, P@5, success@1…) fell by more than X (repeatable; --max-recall-drop X is --max-drop recall=X)."),
    measure: Optional[List[str]] = typer.Option(None, "--measure", help="Also report NAME@K (MAP@10, P@5, success@1, …) for every case, at depth K (repeatable)."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write the JSON report here (atomically)."),
    trec_run: Optional[str] = typer.Option(None, "--trec-run", help="Also write the reference generation's ranked results as a TREC run file."),
    json_output: bool = typer.Option(False, "--json", help="Print the JSON report instead of tables."),
    allow_stale: bool = typer.Option(False, "--allow-stale", help="Measure an incomplete or stale generation instead of refusing (recorded in the report)."),
    spec: Optional[str] = typer.Option(None, "--spec", help="The specification (default: $PTAH_SPEC, else ptah.yaml upward from here)."),
    channel: Optional[List[str]] = typer.Option(None, "--channel", help="vector (default), lexical (BM25 over the generation's text, no model) or hybrid (RRF of both); repeatable: each channel with each --generation is a run."),
    rrf_k: float = typer.Option(60.0, "--rrf-k", help="Hybrid: the reciprocal rank fusion constant c in 1 / (c + rank)."),
    rrf_depth: int = typer.Option(1000, "--rrf-depth", help="Hybrid: how many of each channel's top rows are fused."),
    bootstrap: int = typer.Option(10_000, "--bootstrap", help="Resamples for the paired bootstrap intervals and Monte Carlo sign-flip tests."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap and Monte Carlo draws (recorded in the report)."),
    html: Optional[str] = typer.Option(None, "--html", help="Also write a self-contained HTML report here."),
    junit: Optional[str] = typer.Option(None, "--junit", help="Also write JUnit XML here: a test case per corpus case and per gate, for CI."),
    markdown: Optional[str] = typer.Option(None, "--markdown", help="Also write a Markdown summary here (a pull-request comment); appended to $GITHUB_STEP_SUMMARY when set."),
    search: str = typer.Option("exact", "--search", help="exact (every row scored in memory), index (the pgvector HNSW index, as served) or both (index, with its ANN recall and deltas against exact)."),
    ef_search: Optional[int] = typer.Option(None, "--ef-search", help="Index search: hnsw.ef_search, 1..1000 (default 40)."),
    save: Optional[List[str]] = typer.Option(None, "--save", help=save_help()),
    fail_on_stale_judgements: bool = typer.Option(False, "--fail-on-stale-judgements", help="Fail (exit 1) when a judgement of the corpus's record (NAME.judged.yaml) was made on a row whose text changed since; they are listed either way."),
) -> None:
    """Measure a generation on a corpus: recall, MRR, nDCG, required and forbidden keys, baseline gates.

    With several runs (--generation A --generation B, or --channel), the first
    is the reference and each other is compared with it side by side: mean
    deltas, per-case wins/ties/losses, a paired bootstrap 95% interval and a
    paired sign-flip test p-value per measure, and the cases that changed.

    Exit 0 when every gate passes, 1 when one fails (a required key missed, a
    forbidden key leaked, a drop beyond a threshold), 2 on bad input, 3 when
    the generation cannot be measured (not built, incomplete or stale), 4 when
    the verdict is inconclusive: a drop gate fails on the measured means and
    passes on their high bounds (every unjudged row in the top k taken as
    relevant), so the holes in the judgements decide it -- list them with
    `ptah corpus holes CORPUS -g NAME`, judge them, and evaluate again (a
    failing gate wins: exit 1).
    """
    import ptah
    from ptah.core.comparison import StatisticsSettings
    from ptah.core.request import EvaluationRequest, Fusion, SearchOptions
    from ptah.cli.display import outputs, show_report

    # a path ptah would refuse is refused now, not after the evaluation
    saved = outputs({"--output": output, "--html": html, "--trec-run": trec_run, "--junit": junit,
                     "--markdown": markdown}, save)
    with options("--search / --ef-search"):
        search_options = SearchOptions(search, ef_search)
    with options("--rrf-k / --rrf-depth"):
        fusion = Fusion(k=rrf_k, depth=rrf_depth)
    with options("--bootstrap / --seed"):
        statistics = StatisticsSettings(resamples=bootstrap, seed=seed)
    with options("--measure / --max-drop"):
        request = EvaluationRequest(
            generations=tuple(generation or ()),
            channels=tuple(channel or ()),
            measures=tuple(measure or ()),
            max_drop=drops({"recall": max_recall_drop, "MRR": max_mrr_drop, "nDCG": max_ndcg_drop}, max_drop or []),
            baseline=str(baseline) if baseline else None,
            allow_stale=allow_stale,
            search=search_options,
            fusion=fusion,
            statistics=statistics,
            fail_on_stale_judgements=fail_on_stale_judgements,
        )
    with ptah.open_project(spec) as project:
        loaded = project.load_corpus(corpus)
        report = project.evaluate(loaded, request)
    for format, path in saved:
        report.save(path, format, corpus=loaded)
    from ptah.cli.ci import report_to_ci

    report_to_ci(report, loaded)
    show_report(report, json_output=json_output, written=tuple(path for _, path in saved))
    if not report.passed:
        raise typer.Exit(EXIT_INCONCLUSIVE if report.verdict == "inconclusive" else EXIT_NEGATIVE)


def drops(spelled: dict[str, float | None], given: List[str]) -> dict[str, float]:
    """The drop gates: ``--max-recall-drop X`` and friends, and each ``--max-drop NAME=X``; a measure named twice
    is refused (exit 2)."""
    from ptah.core.errors import InputError
    from ptah.core.measures import Measure
    from ptah.core.visible import abbreviated

    result = {name: value for name, value in spelled.items() if value is not None}
    for text in given:
        name, sep, value = text.partition("=")
        try:
            measure = str(Measure.parse(name))
            threshold = float(value)
        except ValueError as exc:
            detail = str(exc) if sep and name else "write NAME=X, e.g. --max-drop nDCG=0.02"
            raise InputError(f"--max-drop {abbreviated(text)}: {detail}") from None
        if measure in result:
            raise InputError(f"--max-drop {abbreviated(text)}: a drop of {measure} is already gated")
        result[measure] = threshold
    return result


@contextmanager
def options(flags: str):
    """Name the options a value came from in the refusal of a bad one (the API's messages name settings)."""
    from ptah.core.errors import InputError

    try:
        yield
    except InputError as exc:
        if exc.message.startswith("--"):
            raise
        raise InputError(f"{flags}: {exc.message}", problems=exc.problems) from None
