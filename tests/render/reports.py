"""Small typed reports for the renderers' tests, built the way a reader builds them:
``Report.from_dict``."""

from __future__ import annotations

import copy
import io
from contextlib import redirect_stdout
from pathlib import Path

import xmlschema
from rich.console import Console

from ptah.core.report import Report
from ptah.render.layout import PlainConsole
from ptah.render.table import render

MEASURES = ("recall", "mrr", "ndcg", "MAP@10")


def mean(numerator: float, denominator: int, undefined: int = 0) -> dict:
    return {
        "value": numerator / denominator if denominator else None,
        "numerator": numerator,
        "denominator": denominator,
        "undefined": undefined,
    }


def case(case_id: str, metrics: dict, keys: list[str], *, missed: tuple[str, ...] = ()) -> dict:
    return {
        "id": case_id,
        "query": f"query {case_id}",
        "k": 2,
        "results": [{"key": key, "score": 0.9 - 0.1 * rank} for rank, key in enumerate(keys)],
        "metrics": metrics,
        "passed": not missed,
        "required": {
            "keys": list(missed),
            "missed": [{"key": key, "rank": None, "where": "not retrieved"} for key in missed],
        },
        "relevant": [{"key": "d1", "grade": 1.0}],
        "forbidden": {"keys": [], "hits": []},
        "ties": {
            "straddles_cutoff": False,
            "cutoff_score": None,
            "tied_outside": 0,
            "expected_tied": [],
        },
    }


def run(name: str, a: dict, b: dict, means: dict) -> dict:
    return {
        "generation": {
            "name": name,
            "identity": "sha256:0123456789abcdef0123",
            "model": "ptah/deterministic",
            "rows": 3,
            "verification": {"ok": True},
        },
        "search": {
            "channel": "vector",
            "mode": "exact",
            "similarity": "cosine",
            "ranking": "score descending, ties broken by key ascending",
        },
        "cases": [
            case("a", a, ["d1", "d2"]),
            case("b", b, ["d3", "d2"], missed=("d1",) if name == "worse" else ()),
        ],
        "aggregates": means
        | {
            "required": {"cases": 1, "failed": 1 if name == "worse" else 0},
            "forbidden": {"cases": 0, "leaking": 0, "rate": None},
            "ties": {"cases_flagged": 0},
            "cases": 2,
        },
    }


def document() -> dict:
    """One run measuring recall, MRR, nDCG and MAP@10 on two cases; MAP@10 is N/A on the second."""
    values = {"recall": 1.0, "mrr": 0.5, "ndcg": 0.6309, "MAP@10": 0.5}
    empty = {"recall": 0.0, "mrr": 0.0, "ndcg": 0.0, "MAP@10": None}
    means = {
        "recall": mean(1.0, 2),
        "mrr": mean(0.5, 2),
        "ndcg": mean(0.6309, 2),
        "MAP@10": mean(0.5, 1, 1),
    }
    return {
        "format": "ptah-report@1",
        "created_at": "2025-01-01T00:00:00Z",
        "corpus": {"path": "corpus.yaml", "cases": 2, "digest": "sha256:abc"},
        "runs": [run("base", values, empty, means)],
        "baseline": None,
        "gates": [
            {
                "name": "required",
                "generation": "base",
                "passed": True,
                "detail": "all required keys found",
            }
        ],
        "verdict": "pass",
        "comparison": None,
        "timings": {},
        "environment": {},
    }


def entry(reference: float, candidate: float, finding: str = "no clear difference") -> dict:
    return {
        "reference": reference,
        "candidate": candidate,
        "delta": candidate - reference,
        "cases": 2,
        "wins": 0,
        "ties": 1,
        "losses": 1,
        "undefined": 0,
        "interval": {"low": -1.0, "high": 0.0, "level": 0.95},
        "test": {"p_value": 0.5, "method": "exact", "nonzero": 1, "patterns": 2},
        "finding": finding,
    }


def compared() -> dict:
    """:func:`document` with a second, worse run compared side by side against it (MAP@10
    included)."""
    data = document()
    worse_values = {"recall": 0.0, "mrr": 0.0, "ndcg": 0.0, "MAP@10": 0.0}
    means = {
        "recall": mean(0.5, 2),
        "mrr": mean(0.25, 2),
        "ndcg": mean(0.3, 2),
        "MAP@10": mean(0.0, 1, 1),
    }
    data["runs"].append(
        run("worse", worse_values, {"recall": 0.0, "mrr": 0.0, "ndcg": 0.0, "MAP@10": None}, means)
    )
    data["comparison"] = {
        "reference": "base",
        "statistics": {
            "seed": 0,
            "alpha": 0.05,
            "bootstrap": {"level": 0.95, "resamples": 100, "method": "percentile", "paired": True},
            "permutation": {
                "alternative": "two-sided",
                "test": "sign-flip",
                "statistic": "mean difference",
                "exact_limit": 20,
                "resamples": 100,
            },
        },
        "candidates": [
            {
                "run": "worse",
                "channel": "vector",
                "measures": {
                    "recall": entry(0.5, 0.25),
                    "mrr": entry(0.25, 0.0),
                    "ndcg": entry(0.3155, 0.15),
                    "MAP@10": entry(0.5, 0.0, "worse"),
                },
                "flipped": {"now_failing": 1, "now_passing": 0},
                "cases_changed": [
                    {
                        "id": "a",
                        "passed": {"reference": True, "candidate": False},
                        "flipped": True,
                        "metrics": {
                            key: {"reference": 0.5, "candidate": 0.0, "delta": -0.5}
                            for key in MEASURES
                        },
                    }
                ],
            }
        ],
    }
    data["verdict"] = "fail"
    data["gates"][0]["passed"] = False
    return data


def report(data: dict | None = None) -> Report:
    return Report.from_dict(copy.deepcopy(data if data is not None else document()))


def sliced_entry(
    reference: float,
    candidate: float,
    p: float,
    adjusted: float,
    finding: str = "no clear difference",
    survives: bool = False,
) -> dict:
    """One slice's test on one measure: :func:`entry` with the family's adjusted p and whether it
    survives."""
    return entry(reference, candidate, finding) | {
        "test": {"p_value": p, "method": "exact", "nonzero": 2, "patterns": 4},
        "adjusted_p": adjusted,
        "survives": survives,
        "holes": 0,
    }


def sliced() -> dict:
    """:func:`compared` over a tagged corpus: ``billing`` holds both cases, ``de`` one (listed, not
    measured); the candidate's slice tests are a family of four under Holm, MAP@10 surviving; a
    slice drop gate, underpowered."""
    data = compared()
    data["corpus"]["slices"] = {
        "billing": {"digest": "sha256:b111", "cases": ["a", "b"]},
        "de": {"digest": "sha256:d222", "cases": ["b"]},
    }
    small = {"digest": "sha256:d222", "cases": 1, "means": None, "judged": None}
    base, worse = data["runs"]
    base["slices"] = {
        "billing": {
            "digest": "sha256:b111",
            "cases": 2,
            "judged": mean(1.0, 2),
            "means": {
                "recall": mean(1.0, 2) | {"high": 0.75, "high_numerator": 1.5},
                "mrr": mean(0.5, 2),
                "ndcg": mean(0.6309, 2),
                "MAP@10": mean(0.5, 1, 1),
            },
        },
        "de": small,
    }
    worse["slices"] = {
        "billing": {
            "digest": "sha256:b111",
            "cases": 2,
            "judged": mean(0.5, 2),
            "means": {
                "recall": mean(0.5, 2),
                "mrr": mean(0.25, 2),
                "ndcg": mean(0.3, 2),
                "MAP@10": mean(0.0, 1, 1),
            },
        },
        "de": small,
    }
    candidate = data["comparison"]["candidates"][0]
    candidate["slices"] = {
        "billing": {
            "digest": "sha256:b111",
            "cases": 2,
            "comparable": True,
            "why": None,
            "failing": ["a"],
            "measures": {
                "recall": sliced_entry(0.5, 0.25, 0.5, 1.0),
                "mrr": sliced_entry(0.25, 0.0, 0.25, 0.75),
                "ndcg": sliced_entry(0.3155, 0.15, 0.5, 1.0),
                "MAP@10": sliced_entry(0.5, 0.0, 0.01, 0.04, "worse", True),
            },
        },
        "de": {
            "digest": "sha256:d222",
            "cases": 1,
            "comparable": False,
            "why": "fewer than 2 cases",
            "measures": None,
            "failing": [],
        },
    }
    data["comparison"]["family"] = {"correction": "holm", "alpha": 0.05, "tests": 4, "surviving": 1}
    data["gates"].append(
        {
            "name": "max-ndcg-drop@billing",
            "generation": "worse",
            "threshold": 0.02,
            "drop": 0.01,
            "passed": True,
            "detail": "nDCG dropped 0.0100, within 0.0200",
            "power": {"power": 0.8, "alpha": 0.05, "cases": 2, "needed": 120, "underpowered": True},
        }
    )
    return data


def plain_text(value: Report | None, draw=render) -> str:
    """What ``draw`` (the terminal report) prints of ``value`` where output is not a terminal:
    ptah's plain text."""
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        draw(value, PlainConsole())
    return buffer.getvalue()


def plain_lines(value: Report) -> list[str]:
    return plain_text(value).splitlines()


def rich_lines(value: Report, width: int, draw=render) -> list[str]:
    """What ``draw`` prints of ``value`` on a rich console ``width`` cells wide, without colour."""
    buffer = io.StringIO()
    draw(value, Console(file=buffer, width=width, highlight=False, color_system=None))
    return buffer.getvalue().splitlines()


def valid_junit(text: str) -> str:
    """``text``, once the JUnit schema the CI systems read (``tests/render/junit.xsd``) holds it
    valid."""
    xmlschema.XMLSchema(str(Path(__file__).resolve().parent / "junit.xsd")).validate(text)
    return text
