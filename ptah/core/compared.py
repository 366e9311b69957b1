"""The typed parts of a report's comparisons: a measure compared between two runs (its interval,
test and how to settle it), each slice's comparison under its family, and a run against the
baseline.

The comparisons themselves are :class:`ptah.core.side_by_side.Comparison` (the report's
``comparison``) and :class:`BaselineComparison` (each of ``baseline.comparisons``, built by
:func:`ptah.core.baseline.compare` and the verdicts section, read by the drop gates and every
renderer). Each part is a :class:`~ptah.core.parts.Part` (schema:
``ptah/schemas/report.schema.json``); what a member means is said where it is computed
(:mod:`ptah.core.comparison`, :mod:`ptah.core.baseline`, :mod:`ptah.core.slicing`). A member an
older report lacks (``ptah-report@1`` has no holes) reads None and is written back absent; one
absent by nature (a candidate's ``cost`` when a run was not timed, ``slices`` without tags) is
None and absent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, ClassVar, Self, cast

from ptah.core.measures import Measure


def written(data: dict, omitted: frozenset[str]) -> dict:
    """``data`` without the members ``omitted`` names."""
    return {key: value for key, value in data.items() if key not in omitted}


def omitted_of(data: Mapping, optional: Iterable[str]) -> frozenset[str]:
    """The members of ``optional`` that ``data`` lacks."""
    return frozenset(name for name in optional if name not in data)


def by_key(data: Mapping, read: Callable[[Any], Any]) -> Mapping:
    """A read-only mapping of each member of ``data`` read by ``read``, in order."""
    return MappingProxyType({key: read(value) for key, value in data.items()})


def plain_members(data: Mapping) -> dict:
    """Each member's JSON, in order."""
    return {key: value.to_dict() for key, value in data.items()}


class Flat:
    """A part whose JSON members are its fields, in order, each a JSON value."""

    def to_dict(self) -> dict:
        return {field.name: getattr(self, field.name) for field in fields(cast("Any", self))}

    @classmethod
    def from_dict(cls, data: Mapping) -> Self:
        return cls(*(data[field.name] for field in fields(cast("Any", cls))))


@dataclass(frozen=True)
class Interval(Flat):
    """A percentile bootstrap interval of the mean paired difference."""

    low: float
    high: float
    level: float


@dataclass(frozen=True)
class SignFlipResult(Flat):
    """A sign-flip test's two-sided p-value, how it was computed and over how many differences."""

    p_value: float
    method: str  # "exact" or "monte-carlo"
    nonzero: int
    patterns: int  # sign patterns enumerated (exact) or drawn (monte-carlo)


@dataclass(frozen=True)
class Settle(Flat):
    """How to settle a finding the holes could change: ``flip_count`` (m) of the ``plausible`` (U)
    holes change it; the ``sample`` expected to settle it and the ``command`` that draws it."""

    flip_count: int
    plausible: int
    sample: int
    command: str


@dataclass(frozen=True)
class MeasureComparison:
    """One measure of a candidate run against a reference run, paired by case
    (:mod:`ptah.core.comparison`): the means and their delta, the cases won, tied, lost and
    undefined, the interval, the test and the finding; ``judged``, ``settle`` and ``holes`` what
    the holes do to it (omitted in a ``ptah-report@1``). A slice's measure adds ``adjusted_p`` and
    ``survives`` under its family's correction (:mod:`ptah.core.slicing`; None elsewhere)."""

    reference: float | None
    candidate: float | None
    delta: float | None
    cases: int
    wins: int
    ties: int
    losses: int
    undefined: int
    interval: Interval | None
    test: SignFlipResult | None
    finding: str
    judged: str | None = None
    settle: Settle | None = None
    holes: int | None = None
    adjusted_p: float | None = None
    survives: bool | None = None
    omitted: frozenset[str] = frozenset()

    OPTIONAL: ClassVar[tuple[str, ...]] = ("judged", "settle", "holes")

    @property
    def judged_finding(self) -> str:
        """The finding on the judged values alone: ``judged``, or ``finding`` where a report
        lacks it."""
        return self.finding if self.judged is None else self.judged

    def to_dict(self) -> dict:
        data = {
            "reference": self.reference,
            "candidate": self.candidate,
            "delta": self.delta,
            "cases": self.cases,
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            "undefined": self.undefined,
            "interval": None if self.interval is None else self.interval.to_dict(),
            "test": None if self.test is None else self.test.to_dict(),
            "finding": self.finding,
            "judged": self.judged,
            "settle": None if self.settle is None else self.settle.to_dict(),
            "holes": self.holes,
        }
        if self.survives is not None:
            data |= {"adjusted_p": self.adjusted_p, "survives": self.survives}
        return written(data, self.omitted)

    @classmethod
    def from_dict(cls, data: Mapping) -> MeasureComparison:
        interval, test, settle = data["interval"], data["test"], data.get("settle")
        return cls(
            data["reference"],
            data["candidate"],
            data["delta"],
            data["cases"],
            data["wins"],
            data["ties"],
            data["losses"],
            data["undefined"],
            None if interval is None else Interval.from_dict(interval),
            None if test is None else SignFlipResult.from_dict(test),
            data["finding"],
            data.get("judged"),
            None if settle is None else Settle.from_dict(settle),
            data.get("holes"),
            data.get("adjusted_p"),
            data.get("survives"),
            omitted_of(data, cls.OPTIONAL),
        )


def measures_from_dict(data: Mapping) -> Mapping[str, MeasureComparison]:
    """Each measure's comparison, keyed by the measure's report key, in order."""
    return by_key(data, MeasureComparison.from_dict)


@dataclass(frozen=True)
class CostDelta(Flat):
    """The candidate run's time per query minus the reference's (or the baseline's), milliseconds."""

    p50_ms: float
    p95_ms: float


@dataclass(frozen=True)
class SliceComparison:
    """One slice's comparison (:mod:`ptah.core.slicing`): whether it was compared and why not, each
    measure's comparison over its cases (None when not compared), its cases now failing or
    worse."""

    digest: str
    cases: int
    comparable: bool
    why: str | None
    measures: Mapping[str, MeasureComparison] | None
    failing: tuple[str, ...]

    def to_dict(self) -> dict:
        return {
            "digest": self.digest,
            "cases": self.cases,
            "comparable": self.comparable,
            "why": self.why,
            "measures": None if self.measures is None else plain_members(self.measures),
            "failing": list(self.failing),
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> SliceComparison:
        measures = data["measures"]
        return cls(
            data["digest"],
            data["cases"],
            data["comparable"],
            data["why"],
            None if measures is None else measures_from_dict(measures),
            tuple(data["failing"]),
        )


def slices_from_dict(data: Mapping | None) -> Mapping[str, SliceComparison] | None:
    """Each slice's comparison by its tag (None: the corpus has no tags)."""
    return None if data is None else by_key(data, SliceComparison.from_dict)


def slices_member(slices: Mapping[str, SliceComparison] | None) -> dict:
    return {} if slices is None else {"slices": plain_members(slices)}


@dataclass(frozen=True)
class Family(Flat):
    """The family of one comparison section's slice tests and its correction: how many were tested
    and how many findings survive."""

    correction: str
    alpha: float
    tests: int
    surviving: int


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
