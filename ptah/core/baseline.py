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
  *Inconclusive* (not passed; the report's verdict ``inconclusive``, exit 4,
  unless another gate fails) when it fails on the current run's mean and
  passes on the current run's high bound (the baseline at its recorded
  value): the holes in the judgements decide it (:mod:`ptah.core.judged`).
"""

from __future__ import annotations

from typing import Any, Mapping

from ptah.core.errors import IncomparableBaseline, ReportError
from ptah.core.measures import DEFAULT_MEASURES, Measure
from ptah.core.provenance import provenance
from ptah.core.report import REPORT_FORMATS, Gate, Report, Run
from ptah.core.report_checks import check_consistency, is_measure
from ptah.core.verdicts import counted

MEASURES = tuple(m.key for m in DEFAULT_MEASURES)  # every report carries these

FLOAT_NOISE = 1e-12


def check_report_format(document: object, path: str) -> dict:
    """Refuse a parsed JSON document that is not an object whose ``format`` is ``ptah-report@1`` or ``@2``."""
    if not isinstance(document, dict):
        raise ReportError(f"{path}: not a ptah report (the top level is not a JSON object)")
    found = document.get("format")
    if found not in REPORT_FORMATS:
        shown = repr(found) if not isinstance(found, str) or len(found) <= 40 else f"a text of {len(found)} characters"
        expected = " or ".join(repr(f) for f in REPORT_FORMATS)
        raise ReportError(f"{path}: format is {shown}, not {expected}; pass a report that ptah wrote")
    return document


def read_report(parsed: object, path: str) -> dict:
    """Check that a parsed JSON document is a ptah report with what a baseline needs, and that its
    numbers agree with each other (``ptah.core.report_checks``)."""
    document = check_report_format(parsed, path)
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


def check_comparable(corpus_digest: str, baseline: Report, path: str) -> None:
    theirs = baseline.corpus["digest"]
    if theirs != corpus_digest:
        raise IncomparableBaseline(
            f"the baseline {path} measured a different corpus (digest {theirs}); "
            f"this corpus is {corpus_digest}. Measure its runs again on this corpus with `ptah report rebaseline {path} "
            "--corpus CORPUS --output NEW.json`, or evaluate the corpus it was made with."
        )


def check_measures(baseline: Report, thresholds: Mapping[str, float], path: str) -> None:
    """A drop gate needs its measure on the baseline's reference run: say how to get it, or refuse (exit 2)."""
    run = baseline.runs[0]
    for name in thresholds:
        if name not in run.means:
            raise IncomparableBaseline(
                f"the baseline {path} has no {name} to measure a drop against; "
                f"write a new baseline with the measure {name} requested"
            )


def _delta(current: float | None, baseline: float | None) -> float | None:
    if current is None or baseline is None:
        return None
    return current - baseline


def compare(run: Run, baseline_run: Run) -> dict:
    """Deltas (current - baseline) of every mean both carry, and every case whose measures or verdict
    changed (those that flipped between pass and fail first). ``current_high`` is the current mean's high
    bound (null when unknown)."""
    measures = [m for m in run.measures if str(m) in baseline_run.means]
    aggregates = {}
    for m in measures:
        now, before = run.means[str(m)].value, baseline_run.means[str(m)].value
        aggregates[m.key] = {"baseline": before, "current": now, "delta": _delta(now, before),
                             "current_high": run.means[str(m)].high}
    before_cases = {case.id: case for case in baseline_run.cases}
    changed: list[dict[str, Any]] = []
    for case in run.cases:
        old = before_cases.get(case.id)
        if old is None:
            continue
        deltas = {
            m.key: {"baseline": old.values[str(m)], "current": case.values[str(m)],
                    "delta": _delta(case.values[str(m)], old.values[str(m)])}
            for m in measures
        }
        if any(d["baseline"] != d["current"] for d in deltas.values()) or old.passed != case.passed:
            changed.append({"id": case.id, "passed": {"baseline": old.passed, "current": case.passed}, "metrics": deltas})
    # cases that flipped between pass and fail first, then file order
    changed.sort(key=lambda c: c["passed"]["baseline"] == c["passed"]["current"])
    return {
        "generation": baseline_run.generation.get("name"),
        "identity": baseline_run.generation.get("identity"),
        "provenance": provenance(run, baseline_run),  # another generation identity, another source snapshot
        "aggregates": aggregates,
        "cases_changed": changed,
    }


def movement(drop: float) -> str:
    """How a mean moved, said with one sign: ``dropped 0.0625``, ``rose 0.0625`` or ``unchanged``."""
    if abs(drop) <= FLOAT_NOISE:
        return "unchanged"
    shown = f"{abs(drop):.4f}"
    return ("dropped " if drop > 0 else "rose ") + ("less than 0.0001" if shown == "0.0000" else shown)


def gates(run: Run, comparison: Mapping | None, thresholds: Mapping[str, float], corpus_path: str | None = None) -> list[Gate]:
    """The gate verdicts of one run (see the module docs); ``corpus_path`` names the corpus in the command that
    lists the holes deciding an inconclusive gate."""
    required, forbidden = run.required, run.forbidden
    result = [
        Gate("required", run.name, required["failed"] == 0,
             f"{required['failed']} of {counted(required['cases'], 'case')} missed a required key" if required["cases"] else
             "no required keys: no case names one"),
        Gate("forbidden", run.name, forbidden["leaking"] == 0,
             f"{forbidden['leaking']} of {counted(forbidden['cases'], 'case')} leaked a forbidden key" if forbidden["cases"] else
             "no forbidden keys: no case names one"),
    ]
    for name, threshold in thresholds.items():
        measure = Measure.parse(name)
        entry = (comparison or {}).get("aggregates", {}).get(measure.key, {})
        before, now, high = entry.get("baseline"), entry.get("current"), entry.get("current_high")
        drop_high, inconclusive = None, False
        if before is None or now is None:
            passed, drop = False, None
            detail = f"{measure.label} is N/A on one side, so its drop cannot be measured"
        else:
            drop = before - now
            passed = drop <= threshold + FLOAT_NOISE
            detail = f"{measure.label} {before:.4f} -> {now:.4f} ({movement(drop)}; a drop of {threshold:.4f} is allowed)"
            if high is not None:
                drop_high = before - high
                inconclusive = not passed and drop_high <= threshold + FLOAT_NOISE
            if inconclusive:
                detail += "; " + deciding_holes(run, measure, high, corpus_path)
        result.append(Gate(f"max-{measure.key}-drop", run.name, passed, detail, threshold, drop, drop_high, inconclusive))
    return result


MAX_CASES_NAMED = 5


def deciding_holes(run: Run, measure: Measure, high: float, corpus_path: str | None) -> str:
    """The sentence of an inconclusive drop gate: the high bound, how many holes in which cases decide it, and
    the command that lists them."""
    cases = [case for case in run.cases if case.holes and case.highs and case.highs[str(measure)] != case.values[str(measure)]]
    count = sum(len(case.holes or ()) for case in cases)
    named = ", ".join(repr(case.id) for case in cases[:MAX_CASES_NAMED])
    more = f" and {len(cases) - MAX_CASES_NAMED} more" if len(cases) > MAX_CASES_NAMED else ""
    generation = run.generation.get("text_of") or run.generation.get("name")
    channel = run.search.get("channel")
    where = f" --channel {channel}" if channel not in (None, "vector") else ""
    return (f"inconclusive: {measure.label} is {high:.4f} if every hole is relevant, within the allowed drop; "
            f"{counted(count, 'unjudged row')} in {counted(len(cases), 'case')} "
            f"({named}{more}) decide it: list them with `ptah corpus holes {corpus_path or 'CORPUS'} -g {generation}{where}`, "
            f"judge them, and evaluate again")
