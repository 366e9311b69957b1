"""The typed parts every comparison of a report shares: a measure compared between two runs, with
its interval, test and how to settle it, and each slice's comparison under its family.

The comparisons themselves are :class:`ptah.core.side_by_side.Comparison` (the report's
``comparison``) and :class:`ptah.core.baseline_comparison.BaselineComparison` (each of
``baseline.comparisons``). Every part is a frozen dataclass whose fields are its JSON members in the
order written; ``to_dict`` is that JSON and ``from_dict`` reads it back (schema:
``ptah/schemas/report.schema.json``, which ``tests/core/test_compared_schema.py`` holds to these
fields). What each member means is said where it is computed (:mod:`ptah.core.comparison`,
:mod:`ptah.core.baseline`, :mod:`ptah.core.slicing`).

A member that a report of an older ptah lacks (``ptah-report@1`` has no holes) is named in the
part's ``omitted`` and written back absent, so ``from_dict(d).to_dict() == d``; its field reads
None. A member absent by nature (a candidate's ``cost`` when a run was not timed, ``slices``
without tags) is None and absent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, ClassVar, Self, cast


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
