"""Baselines and gates: comparing a report with an earlier one, and the verdict.

Comparability: two reports are comparable exactly when their corpus digests
match; otherwise :func:`check_comparable` raises ``IncomparableBaseline``
naming both digests.

Each run of the current report is compared with the baseline's *reference*
run (its first), so a new generation is measured against what was shipped.

Gates, each a ``{"name", "passed", ...}`` entry in the report:

* ``required`` -- every required key of every case is in its top k;
* ``forbidden`` -- no forbidden key appears in any top k;
* ``max-<measure>-drop`` (recall, mrr, ndcg), only with a baseline -- fails
  when ``baseline mean - current mean > threshold``. Thresholds are absolute,
  0 <= X <= 1. The comparison allows 1e-12 of floating-point noise so that a
  drop of exactly X passes. A mean that is N/A on either side fails the gate:
  a number that cannot be compared is never taken as no regression.
"""

from __future__ import annotations

import math
from typing import Mapping

from ptah.core.errors import IncomparableBaseline, InputError, ReportError
from ptah.core.outcomes import MEASURES, REPORT_FORMAT
from ptah.core.report_checks import check_consistency, is_measure

FLOAT_NOISE = 1e-12


def check_report_format(document: object, path: str) -> dict:
    """Refuse a parsed JSON document that is not an object whose ``format`` is ``ptah-report@1``."""
    if not isinstance(document, dict):
        raise ReportError(f"{path}: not a ptah report (the top level is not a JSON object)")
    found = document.get("format")
    if found != REPORT_FORMAT:
        shown = repr(found) if not isinstance(found, str) or len(found) <= 40 else f"a text of {len(found)} characters"
        raise ReportError(f"{path}: format is {shown}, not {REPORT_FORMAT!r}; pass a report written by ptah inference evaluate --output")
    return document


def read_report(document: object, path: str) -> dict:
    """Check that a parsed JSON document is a ``ptah-report@1`` with what a baseline needs, and that its
    numbers agree with each other (``ptah.core.report_checks``)."""
    check_report_format(document, path)
    digest = (document.get("corpus") or {}).get("digest") if isinstance(document.get("corpus"), dict) else None
    if not isinstance(digest, str):
        raise ReportError(f"{path}: corpus.digest is missing; the report is damaged")
    runs = document.get("runs")
    if not isinstance(runs, list) or not runs or not all(isinstance(r, dict) for r in runs):
        raise ReportError(f"{path}: runs is missing or empty; the report is damaged")
    for index, run in enumerate(runs):
        aggregates = run.get("aggregates")
        if not isinstance(aggregates, dict) or not all(isinstance(aggregates.get(m), dict) for m in MEASURES):
            raise ReportError(f"{path}: runs[{index}].aggregates lacks recall, mrr or ndcg; the report is damaged")
        for name in MEASURES:
            if "value" not in aggregates[name] or not is_measure(aggregates[name]["value"]):
                raise ReportError(f"{path}: runs[{index}].aggregates.{name}.value is not a number or null; the report is damaged")
        cases = run.get("cases")
        if not isinstance(cases, list):
            raise ReportError(f"{path}: runs[{index}].cases is missing; the report is damaged")
        for number, case in enumerate(cases):
            metrics = case.get("metrics") if isinstance(case, dict) else None
            if (not isinstance(case, dict) or not isinstance(case.get("id"), str) or not isinstance(metrics, dict)
                    or not all(is_measure(metrics.get(m)) for m in MEASURES)):
                raise ReportError(f"{path}: runs[{index}].cases[{number}] lacks a text id or its metrics; the report is damaged")
    check_consistency(document, path)
    return document


def check_comparable(corpus_digest: str, baseline: Mapping, path: str) -> None:
    theirs = baseline["corpus"]["digest"]
    if theirs != corpus_digest:
        raise IncomparableBaseline(
            f"the baseline {path} measured a different corpus (digest {theirs}); "
            f"this corpus is {corpus_digest}. Re-run the baseline on this corpus, or evaluate the corpus it was made with."
        )


def _delta(current: float | None, baseline: float | None) -> float | None:
    if current is None or baseline is None:
        return None
    return current - baseline


def compare(run: Mapping, baseline_run: Mapping) -> dict:
    """Deltas (current - baseline) of every aggregate, and every case whose measures or verdict changed
    (those that flipped between pass and fail first)."""
    aggregates = {}
    for name in MEASURES:
        now = run["aggregates"][name]["value"]
        before = baseline_run["aggregates"][name]["value"]
        aggregates[name] = {"baseline": before, "current": now, "delta": _delta(now, before)}
    before_cases = {c.get("id"): c for c in baseline_run["cases"] if isinstance(c, dict)}
    changed = []
    for case in run["cases"]:
        old = before_cases.get(case["id"])
        if old is None:
            continue
        old_metrics = old.get("metrics") or {}
        deltas = {
            name: {"baseline": old_metrics.get(name), "current": case["metrics"][name], "delta": _delta(case["metrics"][name], old_metrics.get(name))}
            for name in MEASURES
        }
        if any(d["baseline"] != d["current"] for d in deltas.values()) or old.get("passed") != case["passed"]:
            changed.append({"id": case["id"], "passed": {"baseline": old.get("passed"), "current": case["passed"]}, "metrics": deltas})
    # cases that flipped between pass and fail first, then file order
    changed.sort(key=lambda c: c["passed"]["baseline"] == c["passed"]["current"])
    return {
        "generation": (baseline_run.get("generation") or {}).get("name"),
        "identity": (baseline_run.get("generation") or {}).get("identity"),
        "aggregates": aggregates,
        "cases_changed": changed,
    }


def check_thresholds(thresholds: Mapping[str, float | None], has_baseline: bool) -> dict[str, float]:
    """The drop thresholds that were given, checked: 0 <= X <= 1, and only with a baseline."""
    given = {name: value for name, value in thresholds.items() if value is not None}
    for name, value in given.items():
        if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value <= 1):
            raise InputError(f"--max-{name}-drop must be between 0 and 1 (an absolute drop), not {value}")
    if given and not has_baseline:
        flags = ", ".join(f"--max-{name}-drop" for name in given)
        raise InputError(f"{flags} needs --baseline REPORT to measure a drop against")
    return given


def gates(run: Mapping, comparison: Mapping | None, thresholds: Mapping[str, float]) -> list[dict]:
    """The gate verdicts of one run (see the module docs)."""
    generation = (run.get("generation") or {}).get("name")
    required = run["aggregates"]["required"]
    forbidden = run["aggregates"]["forbidden"]
    result = [
        {
            "name": "required",
            "generation": generation,
            "passed": required["failed"] == 0,
            "detail": f"{required['failed']} of {required['cases']} cases missed a required key",
        },
        {
            "name": "forbidden",
            "generation": generation,
            "passed": forbidden["leaking"] == 0,
            "detail": f"{forbidden['leaking']} of {forbidden['cases']} cases leaked a forbidden key",
        },
    ]
    for name, threshold in thresholds.items():
        entry = (comparison or {}).get("aggregates", {}).get(name, {})
        before, now = entry.get("baseline"), entry.get("current")
        if before is None or now is None:
            passed, drop = False, None
            detail = f"{name} is N/A on one side, so its drop cannot be measured"
        else:
            drop = before - now
            passed = drop <= threshold + FLOAT_NOISE
            detail = f"{name} {before:.4f} -> {now:.4f} (drop {drop:+.4f}, allowed {threshold:.4f})"
        result.append(
            {"name": f"max-{name}-drop", "generation": generation, "threshold": threshold, "drop": drop, "passed": passed, "detail": detail}
        )
    return result
