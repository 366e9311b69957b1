"""The report's ``comparison`` for people: means side by side, significance, and the cases that changed."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ptah.cli.display import markup, plain
from ptah.cli.evaluate import LABELS
from ptah.cli.evaluate import fmt as _number
from ptah.cli.evaluate import fmt_delta as _delta
from ptah.core.outcomes import MEASURES
from ptah.core.significance import p_value_text

FINDING_STYLE = {"better": "green", "worse": "red"}


def _interval(interval: dict | None) -> str:
    return "N/A" if interval is None else f"{interval['low']:+.4f}..{interval['high']:+.4f}"


def _cases(count: int) -> str:
    return f"{count} case" if count == 1 else f"{count} cases"


def headline(candidate: dict, reference: str, measure: str, level: float) -> str:
    """One sentence: which run is better on ``measure``, by how much, and whether it is more than noise."""
    entry = candidate["measures"][measure]
    name, label, reference = plain(candidate["run"]), LABELS[measure], plain(reference)
    if entry["test"] is None or entry["delta"] is None:
        return f"{name} vs {reference}: {label} cannot be compared (no case defines it on both sides)"
    p = p_value_text(entry["test"])
    spread = f"{round(level * 100)}% CI {_interval(entry['interval'])}, p {p if p.startswith('<') else '= ' + p}"
    counts = f"{_cases(entry['wins'])} better, {entry['losses']} worse, {entry['ties']} tied"
    if entry["finding"] == "no clear difference":
        return f"{name} vs {reference}: {label} {entry['delta']:+.4f} is within noise ({spread}; {counts})"
    return f"{name} is {entry['finding']} than {reference} on {label} by {abs(entry['delta']):.4f} ({spread}; {counts})"


def render_comparison(comparison: dict, console: Console) -> None:
    """Print the means of every run with deltas against the reference, then each candidate's statistics."""
    statistics = comparison["statistics"]
    bootstrap, permutation = statistics["bootstrap"], statistics["permutation"]
    level = bootstrap["level"]
    reference = comparison["reference"]
    console.print(
        f"\n[bold]side by side[/bold] against [bold]{markup(reference)}[/bold] (the reference): paired by case; "
        f"{round(level * 100)}% CI by paired bootstrap ({bootstrap['resamples']:,} resamples, seed {statistics['seed']}); "
        f"p by {permutation['alternative']} {permutation['test']} test "
        f"(exact up to {permutation['exact_limit']} non-zero differences, else Monte Carlo, marked ~)"
    )
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("run")
    table.add_column("channel")
    for measure in MEASURES:
        table.add_column(LABELS[measure], justify="right")
        table.add_column("delta", justify="right")
    first = comparison["candidates"][0]["measures"]
    table.add_row(markup(reference), "reference", *[cell for m in MEASURES for cell in (_number(first[m]["reference"]), "")])
    for candidate in comparison["candidates"]:
        measures = candidate["measures"]
        cells = [cell for m in MEASURES for cell in (_number(measures[m]["candidate"]), _delta(measures[m]["delta"]))]
        table.add_row(markup(candidate["run"]), markup(candidate["channel"] or ""), *cells)
    console.print(table)
    for candidate in comparison["candidates"]:
        _render_candidate(console, candidate, reference, level)


def _render_candidate(console: Console, candidate: dict, reference: str, level: float) -> None:
    console.print(f"\n[bold]{markup(candidate['run'])}[/bold] vs [bold]{markup(reference)}[/bold]")
    table = Table(show_edge=False, pad_edge=False)
    for column in ("measure", "delta", f"{round(level * 100)}% CI", "p", "cases", "wins", "ties", "losses", "finding"):
        table.add_column(column, justify="left" if column in ("measure", "p", "finding") else "right")
    for measure in MEASURES:
        entry = candidate["measures"][measure]
        style = FINDING_STYLE.get(entry["finding"], "dim")
        table.add_row(
            LABELS[measure], _delta(entry["delta"]), _interval(entry["interval"]), p_value_text(entry["test"]),
            str(entry["cases"]), str(entry["wins"]), str(entry["ties"]), str(entry["losses"]),
            f"[{style}]{entry['finding']}[/{style}]",
        )
    console.print(table)
    for measure in MEASURES:
        console.print("  " + headline(candidate, reference, measure, level), highlight=False, markup=False)
    flipped = candidate["flipped"]
    changed = candidate["cases_changed"]
    if not changed:
        console.print("  no case changed")
        return
    console.print(
        f"  cases changed: {len(changed)} ({flipped['now_failing']} now failing, {flipped['now_passing']} now passing)"
    )
    for change in changed:
        deltas = ", ".join(f"{LABELS[m]} {_delta(change['metrics'][m]['delta'])}" for m in MEASURES)
        flip = ""
        if change["flipped"]:
            flip = " [red]now failing[/red]" if not change["passed"]["candidate"] else " [green]now passing[/green]"
        console.print(f"    {markup(change['id'])}: {deltas}{flip}")
