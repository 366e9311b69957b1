"""Several runs side by side, typed: the report's ``comparison`` (:class:`Comparison`), every run
after the first against the first, built by :mod:`ptah.core.comparison` (what each member means)
and read by every renderer. The parts every comparison shares are in :mod:`ptah.core.compared`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ptah.core.compared import (
    CostDelta,
    Family,
    Flat,
    MeasureComparison,
    SliceComparison,
    by_key,
    measures_from_dict,
    plain_members,
    slices_from_dict,
    slices_member,
)


@dataclass(frozen=True)
class PairPassed(Flat):
    """Whether a changed case passed in the reference run and in the candidate."""

    reference: bool
    candidate: bool


@dataclass(frozen=True)
class PairValue(Flat):
    """A changed case's value of one measure in both runs, and candidate - reference (None when
    either is N/A)."""

    reference: float | None
    candidate: float | None
    delta: float | None


@dataclass(frozen=True)
class PairCaseChange:
    """A case whose values or verdict differ between the reference run and a candidate."""

    id: str
    passed: PairPassed
    flipped: bool
    metrics: Mapping[str, PairValue]  # by the measure's report key

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "passed": self.passed.to_dict(),
            "flipped": self.flipped,
            "metrics": plain_members(self.metrics),
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> PairCaseChange:
        return cls(
            data["id"],
            PairPassed.from_dict(data["passed"]),
            data["flipped"],
            by_key(data["metrics"], PairValue.from_dict),
        )


@dataclass(frozen=True)
class Flipped(Flat):
    """The changed cases that flipped between pass and fail, each way."""

    now_failing: int
    now_passing: int


@dataclass(frozen=True)
class PairComparison:
    """One candidate run against the reference run (a ``candidates`` entry): each shared measure's
    comparison, the flips, the time it costs more a query (None unless both were timed), the cases
    that changed (flips first) and, for a tagged corpus, each slice's comparison."""

    run: str | None
    channel: str | None
    measures: Mapping[str, MeasureComparison]
    flipped: Flipped
    cost: CostDelta | None
    cases_changed: tuple[PairCaseChange, ...]
    slices: Mapping[str, SliceComparison] | None = None

    def to_dict(self) -> dict:
        data: dict = {
            "run": self.run,
            "channel": self.channel,
            "measures": plain_members(self.measures),
            "flipped": self.flipped.to_dict(),
        }
        if self.cost is not None:
            data["cost"] = self.cost.to_dict()
        data["cases_changed"] = [change.to_dict() for change in self.cases_changed]
        return data | slices_member(self.slices)

    @classmethod
    def from_dict(cls, data: Mapping) -> PairComparison:
        cost = data.get("cost")
        return cls(
            data["run"],
            data["channel"],
            measures_from_dict(data["measures"]),
            Flipped.from_dict(data["flipped"]),
            None if cost is None else CostDelta.from_dict(cost),
            tuple(PairCaseChange.from_dict(change) for change in data["cases_changed"]),
            slices_from_dict(data.get("slices")),
        )


@dataclass(frozen=True)
class Bootstrap(Flat):
    """How the intervals were drawn."""

    resamples: int
    level: float
    method: str
    paired: bool


@dataclass(frozen=True)
class Permutation(Flat):
    """How the tests were drawn."""

    test: str
    statistic: str
    alternative: str
    exact_limit: int
    resamples: int


@dataclass(frozen=True)
class Statistics:
    """How a comparison's intervals and tests were drawn (``StatisticsSettings.as_dict``)."""

    seed: int
    bootstrap: Bootstrap
    permutation: Permutation
    alpha: float

    def to_dict(self) -> dict:
        return {
            "seed": self.seed,
            "bootstrap": self.bootstrap.to_dict(),
            "permutation": self.permutation.to_dict(),
            "alpha": self.alpha,
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> Statistics:
        return cls(
            data["seed"],
            Bootstrap.from_dict(data["bootstrap"]),
            Permutation.from_dict(data["permutation"]),
            data["alpha"],
        )


@dataclass(frozen=True)
class Comparison:
    """Several runs side by side: each candidate run against the reference (the first), per measure
    (:mod:`ptah.core.comparison`); ``statistics`` how they were drawn; ``family`` the correction of
    the slice tests (None without tags)."""

    reference: str | None
    statistics: Statistics
    candidates: tuple[PairComparison, ...]
    family: Family | None = None

    def to_dict(self) -> dict:
        data = {
            "reference": self.reference,
            "statistics": self.statistics.to_dict(),
            "candidates": [candidate.to_dict() for candidate in self.candidates],
        }
        if self.family is not None:
            data["family"] = self.family.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> Comparison:
        family = data.get("family")
        return cls(
            data["reference"],
            Statistics.from_dict(data["statistics"]),
            tuple(PairComparison.from_dict(candidate) for candidate in data["candidates"]),
            None if family is None else Family.from_dict(family),
        )
