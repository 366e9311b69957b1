"""``ptah inference evaluate``: the main job, rendered for people (rich) or machines (``--json``)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from ptah.cli.display import json_text, markup
from ptah.core.errors import EXIT_NEGATIVE
from ptah.core.outcomes import MEASURES

LABELS = {"recall": "recall", "mrr": "MRR", "ndcg": "nDCG"}


def evaluate(
    corpus: Path = typer.Option(..., "--corpus", help="The evaluation corpus (YAML, format 1)."),
    generation: Optional[List[str]] = typer.Option(None, "--generation", "-g", help="Generation to evaluate (repeatable; default: the spec's active one)."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="A previous report (--output) to compare with; its corpus digest must match."),
    max_recall_drop: Optional[float] = typer.Option(None, "--max-recall-drop", help="Fail (exit 1) when mean recall fell by more than this (absolute, 0..1)."),
    max_mrr_drop: Optional[float] = typer.Option(None, "--max-mrr-drop", help="Fail (exit 1) when MRR fell by more than this."),
    max_ndcg_drop: Optional[float] = typer.Option(None, "--max-ndcg-drop", help="Fail (exit 1) when nDCG fell by more than this."),
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
    search: str = typer.Option("exact", "--search", help="exact (every row scored in memory), index (the pgvector HNSW index, as served) or both (index, with its ANN recall and deltas against exact)."),
    ef_search: Optional[int] = typer.Option(None, "--ef-search", help="Index search: hnsw.ef_search, 1..1000 (default 40)."),
) -> None:
    """Measure a generation on a corpus: recall, MRR, nDCG, required and forbidden keys, baseline gates.

    With several runs (--generation A --generation B, or --channel), the first
    is the reference and each other is compared with it side by side: mean
    deltas, per-case wins/ties/losses, a paired bootstrap 95% interval and a
    paired sign-flip test p-value per measure, and the cases that changed.

    Exit 0 when every gate passes, 1 when one fails (a required key missed, a
    forbidden key leaked, a drop beyond a threshold), 2 on bad input, 3 when
    the generation cannot be measured (not built, incomplete or stale).
    """
    from ptah.adapters.corpus_yaml import load_corpus
    from ptah.core.comparison import StatisticsSettings
    from ptah.services.channels import Fusion
    from ptah.services.evaluate import evaluate as run_evaluation
    from ptah.services.evaluate import write_report
    from ptah.services.index_search import SearchOptions
    from ptah.services.project import open_project

    from ptah.adapters.files import check_output

    for option, value in (("--output", output), ("--html", html), ("--trec-run", trec_run)):
        if value is not None:  # a path ptah would refuse is refused now, not after the evaluation
            check_output(value, option)
    search_options = SearchOptions(search, ef_search)
    statistics = StatisticsSettings(resamples=bootstrap, seed=seed)
    fusion = Fusion(k=rrf_k, depth=rrf_depth)
    loaded = load_corpus(corpus)
    with open_project(spec) as project:
        report = run_evaluation(
            project,
            loaded,
            list(generation) if generation else None,
            baseline_path=str(baseline) if baseline else None,
            thresholds={"recall": max_recall_drop, "mrr": max_mrr_drop, "ndcg": max_ndcg_drop},
            allow_stale=allow_stale,
            channels=list(channel) if channel else None,
            fusion=fusion,
            statistics=statistics,
            search=search_options,
        )
    if output is not None:
        write_report(report, output)
    if html is not None:
        from ptah.adapters.html_report import write_html

        write_html(report, html)
    if trec_run is not None:
        from ptah.adapters.files import write_text_atomically
        from ptah.core.trec import run_lines

        write_text_atomically(trec_run, "".join(line + "\n" for line in run_lines(report)))
    if json_output:
        typer.echo(json_text(report))
    else:
        render(report, Console(highlight=False))
    if report["verdict"] != "pass":
        raise typer.Exit(EXIT_NEGATIVE)


def fmt(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.4f}"


def fmt_delta(delta: float | None) -> str:
    if delta is None:
        return "N/A"
    colour = "green" if delta > 0 else "red" if delta < 0 else "dim"
    return f"[{colour}]{delta:+.4f}[/{colour}]"


def render(report: dict, console: Console) -> None:
    """The human report: a table of cases per run, the means with denominators, deltas, the verdict.

    Every value that came from a file or the source (ids, keys, names, paths)
    passes through :func:`markup`: controls made visible, rich markup escaped.
    """
    corpus = report["corpus"]
    console.print(f"corpus {markup(corpus['path'])} ({corpus['cases']} cases, {markup(corpus['digest'])})")
    comparisons = (report.get("baseline") or {}).get("comparisons") or []
    for index, run in enumerate(report["runs"]):
        _render_run(console, run, comparisons[index] if index < len(comparisons) else None)
    if report.get("comparison"):
        from ptah.cli.comparison_view import render_comparison

        render_comparison(report["comparison"], console)
    for gate in report["gates"]:
        mark = "[green]pass[/green]" if gate["passed"] else "[red]FAIL[/red]"
        console.print(f"  {mark} {markup(gate['name'])} ({markup(gate['generation'])}): {markup(gate['detail'])}")
    failed = [g for g in report["gates"] if not g["passed"]]
    if failed:
        console.print(f"[bold red]verdict: FAIL[/bold red] — {len(failed)} of {len(report['gates'])} gates failed")
    else:
        console.print(f"[bold green]verdict: pass[/bold green] — all {len(report['gates'])} gates passed")


def _render_run(console: Console, run: dict, comparison: dict | None) -> None:
    generation = run["generation"]
    verification = generation["verification"]
    stale = "" if verification["ok"] else " [yellow](incomplete or stale, measured with --allow-stale)[/yellow]"
    console.print(
        f"\ngeneration [bold]{markup(generation['name'])}[/bold] {markup(generation['identity'][:19])}… "
        f"model {markup(generation['model'])}, {generation['rows']} rows, "
        f"{markup(run['search']['mode'])} {markup(run['search']['similarity'])}{stale}"
    )
    table = Table(show_edge=False, pad_edge=False)
    for column in ("case", "k", "recall", "RR", "nDCG", "status"):
        table.add_column(column, justify="right" if column in ("k", "recall", "RR", "nDCG") else "left")
    for case in run["cases"]:
        metrics = case["metrics"]
        table.add_row(markup(case["id"]), str(case["k"]), fmt(metrics["recall"]), fmt(metrics["mrr"]), fmt(metrics["ndcg"]), _status(case))
    console.print(table)
    aggregates = run["aggregates"]
    for name in MEASURES:
        mean = aggregates[name]
        line = f"  mean {LABELS[name]:<6} {fmt(mean['value'])}  ({mean['numerator']:.4f} / {mean['denominator']} cases)"
        if comparison is not None:
            entry = comparison["aggregates"][name]
            line += f"  baseline {fmt(entry['baseline'])}  delta {fmt_delta(entry['delta'])}"
            significance = (comparison.get("significance") or {}).get(name)
            if significance and significance["interval"] and significance["test"]:
                from ptah.core.significance import p_value_text

                low, high = significance["interval"]["low"], significance["interval"]["high"]
                line += f"  CI {low:+.4f}..{high:+.4f}  p {p_value_text(significance['test'])}  {significance['finding']}"
        console.print(line)
    forbidden = aggregates["forbidden"]
    if forbidden["cases"]:
        console.print(f"  forbidden leakage {forbidden['leaking']} of {forbidden['cases']} cases (rate {fmt(forbidden['rate'])})")
    if run["search"].get("index"):  # --search index|both: the index, and with both its ANN recall against exact
        from ptah.cli.ann_view import render_index_search

        render_index_search(console, run)
    if comparison is not None and comparison["cases_changed"]:
        console.print(f"  cases changed against baseline ({markup(comparison['generation'])}):")
        for change in comparison["cases_changed"]:
            deltas = ", ".join(f"{LABELS[m]} {fmt_delta(change['metrics'][m]['delta'])}" for m in MEASURES)
            flip = ""
            if change["passed"]["baseline"] != change["passed"]["current"]:
                flip = " [red]now failing[/red]" if not change["passed"]["current"] else " [green]now passing[/green]"
            console.print(f"    {markup(change['id'])}: {deltas}{flip}")


def _status(case: dict) -> str:
    problems = [f"missed {markup(repr(m['key']))} ({markup(m['where'])})" for m in case["required"]["missed"]]
    problems += [f"leaked {markup(repr(h['key']))} (rank {h['rank']})" for h in case["forbidden"]["hits"]]
    ties = case["ties"]
    note = " [yellow]tie at cutoff[/yellow]" if ties["straddles_cutoff"] or ties["expected_tied"] else ""
    if problems:
        return "[red]FAIL[/red] " + "; ".join(problems) + note
    return "[green]ok[/green]" + note
