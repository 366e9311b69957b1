"""How ``evaluate --search index|both`` reads for people: the index used, and what it costs against exact search."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ptah.cli.display import markup
from ptah.cli.evaluate import fmt as _fmt
from ptah.cli.evaluate import fmt_delta as _delta
from ptah.core.outcomes import MEASURES

LABELS = {"recall": "recall", "mrr": "RR", "ndcg": "nDCG"}


def render_index_search(console: Console, run: dict) -> None:
    """The index line; with ``--search both``, each case's ANN recall and deltas, then the means."""
    search = run["search"]
    index = search["index"]
    console.print(
        f"  searched with index {markup(index['name'])} ({markup(index['kind'])}, m {index['m']}, "
        f"ef_construction {index['ef_construction']}) at ef_search {search['ef_search']}"
    )
    ann = run["aggregates"].get("ann")
    if ann is None:
        return
    table = Table(show_edge=False, pad_edge=False, title="index against exact search", title_justify="left")
    for column in ("case", "ANN recall", *(f"Δ{LABELS[m]}" for m in MEASURES), "missed from exact top k"):
        table.add_column(column, justify="left" if column.startswith(("case", "missed")) else "right")
    for case in run["cases"]:
        entry = case["ann"]
        missed = ", ".join(markup(key) for key in entry["missed"][:5]) + (" …" if len(entry["missed"]) > 5 else "")
        table.add_row(markup(case["id"]), _fmt(entry["recall"]), *(_delta(entry["delta"][m]) for m in MEASURES), missed)
    console.print(table)
    recall = ann["recall"]
    console.print(f"  mean ANN recall {_fmt(recall['value'])}  ({recall['numerator']:.4f} / {recall['denominator']} cases)")
    for name in MEASURES:
        exact = ann["exact"][name]
        console.print(
            f"  mean {LABELS[name]:<6} index {_fmt(run['aggregates'][name]['value'])}  exact {_fmt(exact['value'])}  "
            f"delta {_delta(ann['delta'][name])}"
        )
