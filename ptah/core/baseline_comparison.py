"""A run against the baseline, typed: each of the report's ``baseline.comparisons``
(:class:`BaselineComparison`), built by :func:`ptah.core.baseline.compare` and the verdicts section
(what each member means), read by the drop gates and every renderer. The parts every comparison
shares are in :mod:`ptah.core.compared`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from ptah.core.compared import (
    CostDelta,
    Flat,
    MeasureComparison,
    SliceComparison,
    by_key,
    measures_from_dict,
    omitted_of,
    plain_members,
    slices_from_dict,
    slices_member,
    written,
)
from ptah.core.measures import Measure


@dataclass(frozen=True)
class BaselineMean:
    """One mean of a run against the baseline's reference run: both, the delta (current - baseline)
    and the current mean's high bound (``current_high``: None when unknown; omitted in a
    ``ptah-report@1``)."""

    baseline: float | None
    current: float | None
    delta: float | None
    current_high: float | None = None
    omitted: frozenset[str] = frozenset()

    OPTIONAL: ClassVar[tuple[str, ...]] = ("current_high",)

    def to_dict(self) -> dict:
        data = {
            "baseline": self.baseline,
            "current": self.current,
            "delta": self.delta,
            "current_high": self.current_high,
        }
        return written(data, self.omitted)

    @classmethod
    def from_dict(cls, data: Mapping) -> BaselineMean:
        return cls(
            data["baseline"],
            data["current"],
            data["delta"],
            data.get("current_high"),
            omitted_of(data, cls.OPTIONAL),
        )


@dataclass(frozen=True)
class BaselinePassed(Flat):
    """Whether a changed case passed in the baseline's reference run and now."""

    baseline: bool
    current: bool


@dataclass(frozen=True)
class BaselineValue(Flat):
    """A changed case's value of one measure in the baseline and now, and current - baseline."""

    baseline: float | None
    current: float | None
    delta: float | None


@dataclass(frozen=True)
class BaselineCaseChange:
    """A case whose values or verdict differ from the baseline's."""

    id: str
    passed: BaselinePassed
    metrics: Mapping[str, BaselineValue]  # by the measure's report key

    @property
    def flipped(self) -> bool:
        return self.passed.baseline != self.passed.current

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "passed": self.passed.to_dict(),
            "metrics": plain_members(self.metrics),
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> BaselineCaseChange:
        return cls(
            data["id"],
            BaselinePassed.from_dict(data["passed"]),
            by_key(data["metrics"], BaselineValue.from_dict),
        )


@dataclass(frozen=True)
class Provenance:
    """Where the baseline came from against the run (:mod:`ptah.core.provenance`)."""

    same_identity: bool
    same_source: bool | None
    notes: tuple[str, ...]

    def to_dict(self) -> dict:
        return {
            "same_identity": self.same_identity,
            "same_source": self.same_source,
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> Provenance:
        return cls(data["same_identity"], data["same_source"], tuple(data["notes"]))


@dataclass(frozen=True)
class BaselineComparison:
    """One current run against the baseline's reference run (:func:`ptah.core.baseline.compare`):
    the baseline run's generation and identity, where it came from, each mean's delta, the cases
    that changed, the run compared (``against``), each measure's paired ``significance``, the
    baseline's holes this run no longer returns, the time it costs more a query (None: ptah does not
    measure it against a baseline; a report may hold it) and, for a tagged corpus, each slice's
    comparison.
    Reports of an older ptah may lack the members in :attr:`OPTIONAL`."""

    generation: str | None
    identity: str | None
    provenance: Provenance | None
    aggregates: Mapping[str, BaselineMean]
    cases_changed: tuple[BaselineCaseChange, ...]
    against: str | None = None
    significance: Mapping[str, MeasureComparison] | None = None
    baseline_holes_lost: int | None = None
    cost: CostDelta | None = None
    slices: Mapping[str, SliceComparison] | None = None
    omitted: frozenset[str] = frozenset()

    OPTIONAL: ClassVar[tuple[str, ...]] = (
        "identity",
        "provenance",
        "against",
        "significance",
        "baseline_holes_lost",
    )

    def delta(self, measure: str) -> float | None:
        entry = self.aggregates.get(Measure.parse(measure).key)
        return None if entry is None else entry.delta

    def to_dict(self) -> dict:
        data = {
            "generation": self.generation,
            "identity": self.identity,
            "provenance": None if self.provenance is None else self.provenance.to_dict(),
            "aggregates": plain_members(self.aggregates),
            "cases_changed": [change.to_dict() for change in self.cases_changed],
            "against": self.against,
            "significance": None if self.significance is None else plain_members(self.significance),
            "baseline_holes_lost": self.baseline_holes_lost,
        }
        data = written(data, self.omitted)
        if self.cost is not None:
            data["cost"] = self.cost.to_dict()
        return data | slices_member(self.slices)

    @classmethod
    def from_dict(cls, data: Mapping) -> BaselineComparison:
        provenance, significance, cost = (
            data.get("provenance"),
            data.get("significance"),
            data.get("cost"),
        )
        return cls(
            data["generation"],
            data.get("identity"),
            None if provenance is None else Provenance.from_dict(provenance),
            by_key(data["aggregates"], BaselineMean.from_dict),
            tuple(BaselineCaseChange.from_dict(change) for change in data["cases_changed"]),
            data.get("against"),
            None if significance is None else measures_from_dict(significance),
            data.get("baseline_holes_lost"),
            None if cost is None else CostDelta.from_dict(cost),
            slices_from_dict(data.get("slices")),
            omitted_of(data, cls.OPTIONAL),
        )
