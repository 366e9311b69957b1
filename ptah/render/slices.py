"""What every format shows of a report's slices (:mod:`ptah.core.slicing`), built once: each format
marks it up.

Per run, each slice's means (:func:`mean_text`: the judged mean and the
mean with every hole relevant, smaller first, where the holes move it, and its
denominator) and judged@k; a slice of
fewer than :data:`ptah.core.slicing.MIN_CASES` cases is listed as not
measured. Per comparison (a candidate against the reference run, or a run
against the baseline's), each slice's tests per measure (:func:`slice_tests`:
the delta, the interval, p, the p that the family's correction adjusted and
whether the finding survives it), the slices not compared and why, and each
slice's cases now failing or worse; the family line (:func:`family_sentence`:
"27 slice tests, Holm at alpha 0.05: 1 finding survives"). A drop gate's power
note (:func:`power_phrase`) is said wherever the gate is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import NamedTuple

from ptah.core.compared import Family, MeasureComparison, SliceComparison
from ptah.core.measures import Mean, Measure
from ptah.core.report import Gate, Report
from ptah.core.run_parts import SliceMeans
from ptah.core.significance import p_value_text
from ptah.core.slicing import MIN_CASES
from ptah.core.verdicts import counted
from ptah.render.layout import bounded


class SliceTest(NamedTuple):
    """One slice's comparison on one measure, as the columns read."""

    tag: str
    cases: int
    key: str  # the measure's report key
    # the slice's comparison on the measure, with the family's adjusted_p and survives
    entry: MeasureComparison

    @property
    def label(self) -> str:
        return Measure.parse(self.key).label

    @property
    def adjusted(self) -> str:
        """The adjusted p as p reads (``~`` for a Monte Carlo test's), ``N/A`` without a test."""
        test, adjusted = self.entry.test, self.entry.adjusted_p
        return p_value_text(
            None if test is None or adjusted is None else replace(test, p_value=adjusted)
        )

    @property
    def survives(self) -> str:
        return "N/A" if self.entry.test is None else "yes" if self.entry.survives else "no"


# what a slice's mean a..b is, said once for every format
MEAN_RANGE = "a..b where the holes move it: judged and with every hole relevant, the smaller first"


def mean_text(mean: Mean | None) -> str:
    """A slice's mean with its bounds and its denominator: ``0.7500..0.8750 (4)``; ``N/A`` when not
    measured."""
    if mean is None:
        return "N/A"
    return f"{bounded(mean.value, mean.high)} ({mean.denominator})"


def measured(slices: Mapping[str, SliceMeans] | None) -> list[tuple[str, SliceMeans]]:
    """The slices of a run's ``slices`` member that have means, in the report's order (tags in code
    point order)."""
    return [(tag, entry) for tag, entry in (slices or {}).items() if entry.means is not None]


def unmeasured_phrase(
    slices: Mapping[str, SliceMeans] | None, quote: Callable[[object], str] = str
) -> str | None:
    """``not measured, fewer than 2 cases: estimates (1), taxes (1)``; None when every slice was
    measured."""
    small = [
        f"{quote(tag)} ({entry.cases})"
        for tag, entry in (slices or {}).items()
        if entry.means is None
    ]
    return f"not measured, fewer than {MIN_CASES} cases: " + ", ".join(small) if small else None


Slices = Mapping[str, SliceComparison]  # a comparison's slices, by tag


def slice_tests(slices: Slices | None) -> list[SliceTest]:
    """Every compared slice's test per measure, slice by slice."""
    return [
        SliceTest(tag, entry.cases, key, measure)
        for tag, entry in (slices or {}).items()
        if entry.measures
        for key, measure in entry.measures.items()
    ]


def not_compared(slices: Slices | None, quote: Callable[[object], str] = str) -> list[str]:
    """The slices not compared, a phrase per reason: ``estimates, taxes: fewer than 2 cases``."""
    why: dict[str | None, list[str]] = {}
    for tag, entry in (slices or {}).items():
        if not entry.comparable:
            why.setdefault(entry.why, []).append(quote(tag))
    return [f"{', '.join(tags)}: {reason}" for reason, tags in why.items()]


def failing_phrases(slices: Slices | None, quote: Callable[[object], str] = str) -> list[str]:
    """Each slice's cases now failing or worse on a measure: ``billing (3 of 4): stop-paying,
    pricing, plan-refund``."""
    return [
        f"{quote(tag)} ({len(entry.failing)} of {entry.cases}): "
        + ", ".join(map(quote, entry.failing))
        for tag, entry in (slices or {}).items()
        if entry.failing
    ]


def family_sentence(family: Family) -> str:
    """``27 slice tests, Holm at alpha 0.05: 1 finding survives``; without a correction, the
    findings at p < alpha."""
    tests, surviving, alpha = family.tests, family.surviving, f"{family.alpha:.4g}"
    found = counted(surviving, "finding")
    if family.correction == "holm":
        return f"{counted(tests, 'slice test')}, Holm at alpha {alpha}: {found} {'survives' if surviving == 1 else 'survive'}"
    return f"{counted(tests, 'slice test')}, no correction: {found} at p < {alpha}"


def survivors(slices: Slices | None, quote: Callable[[object], str] = str) -> list[str]:
    """The findings that survive the correction: ``billing nDCG -0.3208 worse``."""
    return [
        f"{quote(test.tag)} {test.label} {test.entry.delta:+.4f} {test.entry.finding}"
        for test in slice_tests(slices)
        if test.entry.survives
    ]


def baseline_family(report: Report) -> Family | None:
    """The family of the slice tests against the baseline (None without one, or without tags)."""
    return None if report.baseline is None else report.baseline.family


def family_lines(report: Report, quote: Callable[[object], str] = str) -> list[str]:
    """One line per family of slice tests: how many tests, the correction, and each finding that
    survives it: ``slices vs title-body: 27 slice tests, Holm at alpha 0.05: 1 finding survives
    (hybrid billing nDCG -0.3208 worse)``."""
    lines = []
    comparison = report.comparison
    if comparison is not None and comparison.family is not None:
        found = [
            f"{quote(candidate.run)} {found}"
            for candidate in comparison.candidates
            for found in survivors(candidate.slices, quote)
        ]
        lines.append(
            f"slices vs {quote(comparison.reference)}: {family_sentence(comparison.family)}"
            + (f" ({'; '.join(found)})" if found else "")
        )
    family = baseline_family(report)
    if family is not None:
        found = [
            f"{quote(each.against or '')} {found}"
            for each in report.comparisons
            for found in survivors(each.slices, quote)
        ]
        lines.append(
            f"slices vs the baseline: {family_sentence(family)}"
            + (f" ({'; '.join(found)})" if found else "")
        )
    return lines


def gate_slice(gate: Gate, slices: Mapping) -> str | None:
    """The tag of a slice's drop gate (``max-recall-drop@billing``: ``billing``); None for a whole
    run's gate, ``max-DCG@5-drop`` included."""
    name, _, tag = gate.name.rpartition("@")
    return tag if gate.is_drop_gate and name.endswith("-drop") and tag in slices else None


def power_phrase(gate: Gate) -> str | None:
    """A drop gate's note when its corpus (or slice) is underpowered for its threshold:
    ``underpowered: needs 120 cases to see a drop of 0.02 (power 0.8, alpha 0.05), has 25``; None
    otherwise (a note, never a verdict), and None for a gate that failed conclusively: the drop it
    saw is real whatever the power to see one."""
    power = gate.power
    if power is None or not power.underpowered or not (gate.passed or gate.inconclusive):
        return None
    return (
        f"underpowered: needs {power.needed:,} cases to see a drop of {gate.threshold:.4g} "
        f"(power {power.power:.4g}, alpha {power.alpha:.4g}), has {power.cases:,}"
    )
