"""What happened to one case, in sentences the CI renderers share (JUnit, Markdown, workflow
annotations).

Every sentence holds the exact values (keys and case ids as the corpus wrote
them); each renderer escapes them for its own format.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ptah.core.compared import BaselineCaseChange
from ptah.core.report import CaseResult, Report, Run
from ptah.core.side_by_side import PairCaseChange


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


@dataclass(frozen=True)
class Changed:
    """A case that changed in ``run`` against ``against`` (the baseline's generation or the
    reference run): whether it ``flipped`` and is ``now`` ``failing`` or ``passing`` (None when it
    did not flip), its ``drop`` (the largest fall of any measure, 0 when none fell) and the case
    results ``before`` and ``after`` when the report holds them."""

    run: str
    against: str
    id: str
    flipped: bool
    now: str | None
    drop: float
    before: CaseResult | None
    after: CaseResult | None


def changes(report: Report) -> list[Changed]:
    """Every case that changed, against the baseline and between runs, flips first, then the largest
    drop."""
    found = []
    cases = [{case.id: case for case in run.cases} for run in report.runs]  # each run's, by id
    for index, comparison in enumerate(report.comparisons):  # one per run, in run order
        for change in comparison.cases_changed:
            found.append(
                _change(
                    report.runs[index].name,
                    f"baseline {comparison.generation}",
                    change,
                    change.passed.baseline,
                    change.passed.current,
                    None,
                    cases[index].get(change.id),
                )
            )
    if report.comparison is not None:
        reference = report.runs[0]
        for index, candidate in enumerate(
            report.comparison.candidates, start=1
        ):  # one per run after the first
            for moved in candidate.cases_changed:
                found.append(
                    _change(
                        report.runs[index].name,
                        reference.name,
                        moved,
                        moved.passed.reference,
                        moved.passed.candidate,
                        cases[0].get(moved.id),
                        cases[index].get(moved.id),
                    )
                )
    found.sort(key=lambda entry: (not entry.flipped, -entry.drop))
    return found


def _change(
    run: str,
    against: str,
    change: BaselineCaseChange | PairCaseChange,
    before: bool,
    after: bool,
    old: CaseResult | None,
    new: CaseResult | None,
) -> Changed:
    drops = [-entry.delta for entry in change.metrics.values() if entry.delta is not None]
    flipped = before != after
    now = ("passing" if after else "failing") if flipped else None
    return Changed(run, against, change.id, flipped, now, max([0.0, *drops]), old, new)
