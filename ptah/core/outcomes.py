"""Measuring cases into report parts (being replaced by the typed report in ptah.core.report).

A report is a JSON document (schema: ``ptah/schemas/report.schema.json``). Its
parts are built here from pure values; the services add what only I/O can
know (timings, environment, the generation's verification) and write it.

Shape, in brief::

    {"format": "ptah-report@1",
     "corpus": {path, name, digest, cases},
     "runs": [RUN, ...],          # one per generation evaluated; the first is the reference
     "baseline": null | {...},    # see ptah.core.baseline
     "comparison": null | {...},  # runs side by side with significance; see ptah.core.comparison
     "gates": [...], "verdict": "pass" | "fail",
     "timings": {...}, "environment": {...}}

    RUN = {"generation": {name, identity, model, settings, dimension, rows, verification},
           "search": {channel, mode, similarity, ranking},
           "cases": [CASE, ...],
           "aggregates": {recall, mrr, ndcg: MEAN, required: {...}, forbidden: {...}, ties: {...}}}

    MEAN = {"value": float | null, "numerator": float, "denominator": int, "undefined": int}

Means are over cases, each case measured at its own depth ``k``; that is why
the flat names ``recall``, ``mrr`` and ``ndcg`` carry no ``@k``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from ptah.core.corpus import Case, Corpus
from ptah.core.metrics import CaseMetrics, Mean, mean_of
from ptah.core.ranking import Ties

REPORT_FORMAT = "ptah-report@1"
MEASURES = ("recall", "mrr", "ndcg")
RANKING_RULE = "score descending, ties broken by key ascending"


@dataclass(frozen=True)
class CaseOutcome:
    """One case evaluated: its ranked results (top k), measures and tie flags."""

    case: Case
    ranked: tuple[tuple[str, float], ...]
    metrics: CaseMetrics
    ties: Ties
    matched: int | None = None  # rows the query matched at all, when a channel ranks only those (lexical, hybrid)

    @property
    def passed(self) -> bool:
        """No required key missed and no forbidden key leaked."""
        return not self.metrics.required_missed and not self.metrics.forbidden_hits

    def measure(self, name: str) -> float | None:
        return {"recall": self.metrics.recall, "mrr": self.metrics.rr, "ndcg": self.metrics.ndcg}[name]


def mean_dict(mean: Mean) -> dict:
    return {"value": mean.value, "numerator": mean.numerator, "denominator": mean.denominator, "undefined": mean.undefined}


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``11th``, ``22nd``…"""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def placement_text(rank: int | None, searched: int) -> str:
    """Where a missed key ranked: ``ranked 11th`` or ``not in the top 1000``."""
    return f"ranked {ordinal(rank)}" if rank is not None else f"not in the top {searched}"


def case_dict(outcome: CaseOutcome, searched: int) -> dict:
    case, metrics = outcome.case, outcome.metrics
    return {
        "id": case.id,
        "query": case.query,
        "k": case.k,
        "results": [{"key": key, "score": score} for key, score in outcome.ranked],
        "metrics": {name: outcome.measure(name) for name in MEASURES},
        "passed": outcome.passed,
        "required": {
            "keys": list(case.required),
            "missed": [
                {"key": p.key, "rank": p.rank, "where": placement_text(p.rank, searched if outcome.matched is None else outcome.matched)}
                for p in metrics.required_missed
            ],
        },
        "relevant": [{"key": key, "grade": grade} for key, grade in sorted(case.relevant.items())],
        "forbidden": {
            "keys": list(case.forbidden),
            "hits": [{"key": p.key, "rank": p.rank} for p in metrics.forbidden_hits],
        },
        "ties": {
            "straddles_cutoff": outcome.ties.straddles_cutoff,
            "cutoff_score": outcome.ties.cutoff_score,
            "tied_outside": outcome.ties.tied_outside,
            "expected_tied": list(outcome.ties.expected_tied),
        },
    }


def aggregates(outcomes: Sequence[CaseOutcome]) -> dict:
    """Means of the three measures with explicit denominators, and the expectation counts.

    ``forbidden.rate`` is leaking cases / cases that declare forbidden keys;
    N/A (null) when no case declares any.
    """
    result: dict = {name: mean_dict(mean_of(o.measure(name) for o in outcomes)) for name in MEASURES}
    with_required = [o for o in outcomes if o.case.required]
    with_forbidden = [o for o in outcomes if o.case.forbidden]
    leaking = sum(1 for o in with_forbidden if o.metrics.forbidden_hits)
    result["required"] = {
        "cases": len(with_required),
        "failed": sum(1 for o in with_required if o.metrics.required_missed),
        "keys_missed": sum(len(o.metrics.required_missed) for o in outcomes),
    }
    result["forbidden"] = {
        "cases": len(with_forbidden),
        "leaking": leaking,
        "hits": sum(len(o.metrics.forbidden_hits) for o in outcomes),
        "rate": (leaking / len(with_forbidden)) if with_forbidden else None,
    }
    result["ties"] = {"cases_flagged": sum(1 for o in outcomes if o.ties.any)}
    result["cases"] = len(outcomes)
    return result


def run_dict(generation: dict, search: dict, outcomes: Sequence[CaseOutcome], searched: int) -> dict:
    """One generation's part of the report. ``searched`` is how deep misses were looked for."""
    return {
        "generation": generation,
        "search": {**search, "ranking": RANKING_RULE},
        "cases": [case_dict(o, searched) for o in outcomes],
        "aggregates": aggregates(outcomes),
    }


def corpus_dict(corpus: Corpus) -> dict:
    return {"path": corpus.path, "name": corpus.name, "digest": corpus.digest, "cases": len(corpus.cases)}


def report_dict(
    corpus: Corpus,
    runs: Iterable[dict],
    *,
    baseline: dict | None,
    gates: list[dict],
    timings: dict,
    environment: dict,
    created_at: str,
    comparison: dict | None = None,
) -> dict:
    gates = list(gates)
    return {
        "format": REPORT_FORMAT,
        "created_at": created_at,
        "corpus": corpus_dict(corpus),
        "runs": list(runs),
        "baseline": baseline,
        "gates": gates,
        "verdict": "pass" if all(g["passed"] for g in gates) else "fail",
        "comparison": comparison,
        "timings": timings,
        "environment": environment,
    }
