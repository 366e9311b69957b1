"""Power planning: how many cases a corpus -- and each of its slices -- needs to see a change of a
given size.

The method is the paired normal approximation. A comparison of two runs tests
the mean of the per-case paired differences ``d_i = candidate_i -
reference_i`` (:mod:`ptah.core.comparison`); with ``s`` the standard deviation
of those differences (the sample one, n - 1 in the denominator), the cases
needed to see a true mean difference ``delta`` with probability ``power`` in a
two-sided test at level ``alpha`` are::

    n = ceil(((z(1 - alpha / 2) + z(power)) * s / delta) ** 2)

with ``z`` the standard normal quantile -- but never fewer than the smallest n
at which the comparison's sign-flip test can reach p < alpha at all (its
smallest p over n differences is 2 / 2^n: 6 cases at alpha 0.05). The tests
check the count against a simulation of the sign-flip test and the bootstrap
interval the comparison draws (:mod:`ptah.core.significance`): at the planned
n, the share of simulated corpora whose test finds the change is within 10%
of ``power``.

Where ``s`` comes from (:func:`report_sample`): a report of two or more runs
pairs each later run with the first, as its comparison does, and the plan
takes the largest ``s`` among those pairs (the count holds for each of them);
a report of one run compared with a baseline pairs it with the baseline's
reference run (its ``cases_changed`` list the cases whose values moved; every
other case moved by 0). A report of one run alone has no pairs: then ``s`` is
taken as ``sqrt(2)`` times the standard deviation of the run's per-case
values -- the spread of the difference of two *independent* runs of that
spread. Two generations measured on the same questions agree on which are
hard, so their paired differences usually spread less and those counts err
high; the plan says which basis it used.

A slice's count uses the slice's own ``s`` over its own cases; one with fewer
than two values (or ``s`` = 0: the runs never differ there) cannot say.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from ptah.core.comparison import paired_differences
from ptah.core.corpus import Corpus, slice_digest
from ptah.core.measures import Measure
from ptah.core.report import Report

PAIRED, INDEPENDENT = "paired", "independent"
_NORMAL = statistics.NormalDist()


SMALLEST = 1e-6  # of a change, a power, an alpha: below it a quantile is 1.0 or a count overflows


def check_settings(delta: float, power: float, alpha: float) -> None:
    """``ValueError`` (a sentence) unless ``SMALLEST`` <= delta <= 1 and ``SMALLEST`` <= power,
    alpha <= 1 - ``SMALLEST``: the range in which every quantile and count :func:`cases_for_spread`
    takes is a finite number (alpha 1e-300 makes ``1 - alpha / 2`` equal 1, a change of 1e-300 makes
    the count overflow)."""
    for name, value, top in (
        ("the change to detect", delta, 1.0),
        ("power", power, 1 - SMALLEST),
        ("alpha", alpha, 1 - SMALLEST),
    ):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not SMALLEST <= value <= top
        ):
            raise ValueError(f"{name} must be from {SMALLEST:g} to {top:g}, not {value!r}")


def fewest_cases(alpha: float) -> int:
    """The smallest n whose sign-flip test can reach p < ``alpha``: 2 / 2^n < alpha."""
    n = 1
    while 2.0 ** (1 - n) >= alpha:
        n += 1
    return n


def cases_for_spread(spread: float, delta: float, power: float, alpha: float) -> int | None:
    """The cases needed when the paired differences have standard deviation ``spread`` (module
    docs); None when ``spread`` is 0 (nothing varies, nothing to plan) or not finite."""
    check_settings(delta, power, alpha)
    if not math.isfinite(spread) or spread <= 0:
        return None
    z = _NORMAL.inv_cdf(1 - alpha / 2) + _NORMAL.inv_cdf(power)
    needed = math.ceil(
        round((z * spread / delta) ** 2, 9)
    )  # rounding: 16.000000000001 is 16 cases, not 17
    return max(needed, fewest_cases(alpha))


def spread(differences: Sequence[float]) -> float | None:
    """The sample standard deviation of ``differences``; None for fewer than two."""
    return statistics.stdev(differences) if len(differences) >= 2 else None


def cases_needed(
    differences: Sequence[float], delta: float, power: float, alpha: float
) -> int | None:
    """The cases needed to see a mean paired difference of ``delta`` with probability ``power`` at
    two-sided level ``alpha``, from the spread of the paired ``differences`` measured (module docs);
    None when it cannot say: fewer than two differences, or all equal. ``ValueError`` for a setting
    out of range."""
    check_settings(delta, power, alpha)
    found = spread(differences)
    return None if found is None else cases_for_spread(found, delta, power, alpha)


@dataclass(frozen=True)
class Sample:
    """What a report measured of one measure, for planning: per pairing, each case's paired
    difference (basis ``paired``), or the single run's per-case values (basis ``independent``);
    ``source`` says which, in words."""

    measure: str
    basis: str
    source: str
    values: tuple[
        Mapping[str, float], ...
    ]  # per pairing: case id -> difference (or value); undefined cases absent

    def spread(self, case_ids: Sequence[str]) -> tuple[int, float | None]:
        """Over ``case_ids``: how many cases have a value, and the spread of the paired differences
        (the largest over the pairings; sqrt(2) x the values' for the independent basis); None when
        it cannot say."""
        found: list[tuple[float, int]] = []
        count = 0
        for values in self.values:
            held = [values[case_id] for case_id in case_ids if case_id in values]
            count = max(count, len(held))
            deviation = spread(held)
            if deviation is not None:
                found.append((deviation, len(held)))
        if not found:
            return count, None
        deviation, count = max(found)
        return count, deviation * math.sqrt(2) if self.basis == INDEPENDENT else deviation


def report_sample(report: Report, measure: str) -> Sample:
    """The paired differences (or single-run values) of ``measure`` a report holds (module docs).
    ``KeyError`` when the report's first run does not carry the measure."""
    name = str(Measure.parse(measure))
    reference = report.runs[0]
    if name not in reference.means:
        raise KeyError(name)
    if len(report.runs) >= 2:
        pairings = [
            paired_differences(reference, run, name) for run in report.runs[1:] if name in run.means
        ]
        if pairings:
            others = ", ".join(run.name for run in report.runs[1:] if name in run.means)
            return Sample(
                name,
                PAIRED,
                f"paired differences of {others} against {reference.name}",
                tuple(pairings),
            )
    if len(report.runs) == 1 and report.comparisons:
        key = Measure.parse(name).key
        compared = report.comparisons[0]
        if key in compared.aggregates:
            moved = {case.id: case.metrics[key].delta for case in compared.cases_changed}
            differences = {
                case.id: delta
                for case in reference.cases
                if case.values.get(name) is not None
                and (delta := moved.get(case.id, 0.0)) is not None
            }
            baseline = compared.generation or "the baseline"
            return Sample(
                name,
                PAIRED,
                f"paired differences of {reference.name} against {baseline}",
                (differences,),
            )
    values = {
        case.id: value for case in reference.cases if (value := case.values.get(name)) is not None
    }
    return Sample(
        name,
        INDEPENDENT,
        f"{reference.name} alone has no pairs, so the spread is sqrt(2) x its per-case "
        "values', as for two independent runs (paired runs usually spread less, so these "
        "counts err high)",
        (values,),
    )


@dataclass(frozen=True)
class SlicePlan:
    """The plan for the whole corpus (``tag`` None) or one slice: cases with a value, their spread,
    and the cases needed (None: cannot say)."""

    tag: str | None
    digest: str
    cases: int
    spread: float | None
    needed: int | None

    @property
    def underpowered(self) -> bool:
        return self.needed is not None and self.cases < self.needed

    def as_dict(self) -> dict:
        return asdict(self) | {"underpowered": self.underpowered}


@dataclass(frozen=True)
class MeasurePlan:
    """One measure's plan: the change to detect, the settings, the basis, and the corpus's and each
    slice's plan."""

    measure: str
    delta: float
    power: float
    alpha: float
    basis: str
    source: str
    overall: SlicePlan
    slices: tuple[SlicePlan, ...]

    def as_dict(self) -> dict:
        return {
            "measure": self.measure,
            "delta": self.delta,
            "power": self.power,
            "alpha": self.alpha,
            "basis": self.basis,
            "source": self.source,
            "corpus": self.overall.as_dict(),
            "slices": [plan.as_dict() for plan in self.slices],
        }


def plan(corpus: Corpus, sample: Sample, delta: float, power: float, alpha: float) -> MeasurePlan:
    """The cases ``corpus`` and each of its slices need to see a change of ``delta`` in ``sample``'s
    measure."""
    check_settings(delta, power, alpha)

    def one(tag: str | None, digest: str, case_ids: list[str]) -> SlicePlan:
        count, deviation = sample.spread(case_ids)
        needed = (
            None
            if deviation is None or count < 2
            else cases_for_spread(deviation, delta, power, alpha)
        )
        return SlicePlan(tag, digest, count, deviation, needed)

    overall = one(None, corpus.digest, [case.id for case in corpus.cases])
    slices = tuple(
        one(tag, slice_digest(tag, cases), [case.id for case in cases])
        for tag, cases in corpus.slices().items()
    )
    return MeasurePlan(
        sample.measure,
        float(delta),
        float(power),
        float(alpha),
        sample.basis,
        sample.source,
        overall,
        slices,
    )
