"""What happened to one case, in sentences the CI renderers share (JUnit, Markdown, workflow
annotations).

Every sentence holds the exact values (keys and case ids as the corpus wrote
them); each renderer escapes them for its own format.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ptah.core.report import CaseResult, Report, Run


def problems(case: CaseResult) -> list[str]:
    """Why a case failed, one sentence per problem: ``required key '42' missed (ranked 14th, top 5
    searched)``."""
    found = [
        f"required key {miss.key!r} missed ({miss.where}; k = {case.k})" for miss in case.missed
    ]
    found += [
        f"forbidden key {hit.key!r} leaked at rank {hit.rank} (k = {case.k})" for hit in case.hits
    ]
    return found


def whereabouts(case: CaseResult | None) -> str:
    """Where a case's expected keys went: its problems, else the rank of its first required or
    relevant key."""
    if case is None:
        return "not measured"
    found = problems(case)
    if found:
        return "; ".join(found)
    expected = list(case.required) or [key for key, _ in case.relevant]
    keys = case.keys
    for key in expected:
        if key in keys:
            return f"{key!r} at rank {keys.index(key) + 1}"
    # not "judged": a judged key (DESIGN, "Judged keys and holes") may be forbidden or graded 0
    return "no required or relevant key in the top k" if expected else "no required or relevant key"


def failed_cases(report: Report) -> Iterator[tuple[Run, CaseResult]]:
    """Every failed case of every run, in run order, then corpus order."""
    for run in report.runs:
        for case in run.cases:
            if not case.passed:
                yield run, case


def changes(report: Report) -> list[dict]:
    """Every case that changed, against the baseline and between runs, flips first, then the largest
    drop.

    Each entry: ``run``, ``against`` (the baseline's generation or the
    reference run), ``id``, ``flipped``, ``now`` (``failing``, ``passing`` or
    None), ``drop`` (the largest fall of any measure, 0 when none fell) and
    ``before``/``after`` (the case results when the report holds them).
    """
    found = []
    cases = [{case.id: case for case in run.cases} for run in report.runs]  # each run's, by id
    for index, comparison in enumerate(report.comparisons):  # one per run, in run order
        for change in comparison.data["cases_changed"]:
            passed = change["passed"]
            found.append(
                _change(
                    report.runs[index].name,
                    f"baseline {comparison.generation}",
                    change,
                    passed["baseline"],
                    passed["current"],
                    None,
                    cases[index].get(change["id"]),
                )
            )
    if report.comparison is not None:
        reference = report.runs[0]
        for index, candidate in enumerate(
            report.comparison.candidates, start=1
        ):  # one per run after the first
            for change in candidate["cases_changed"]:
                passed = change["passed"]
                found.append(
                    _change(
                        report.runs[index].name,
                        reference.name,
                        change,
                        passed["reference"],
                        passed["candidate"],
                        cases[0].get(change["id"]),
                        cases[index].get(change["id"]),
                    )
                )
    found.sort(key=lambda entry: (not entry["flipped"], -entry["drop"]))
    return found


def _change(run: str, against: str, change: Mapping, before: bool, after: bool, old, new) -> dict:
    drops = [-entry["delta"] for entry in change["metrics"].values() if entry["delta"] is not None]
    flipped = before != after
    return {
        "run": run,
        "against": against,
        "id": change["id"],
        "flipped": flipped,
        "now": ("passing" if after else "failing") if flipped else None,
        "drop": max([0.0, *drops]),
        "before": old,
        "after": new,
    }
