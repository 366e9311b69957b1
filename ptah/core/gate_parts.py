"""A drop gate's typed members: what the holes of both runs say of it (``holes``, docs/holes.md)
and the cases it needs to see its threshold (``power``). Each is a :class:`~ptah.core.parts.Part`,
its JSON members its fields in order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from ptah.core.parts import Part


@dataclass(frozen=True)
class HolesSample(Part):
    """The latest random sample of the holes: its seed, the holes it drew from, those it drew and
    the relevant among them."""

    seed: int | None  # None only where the evidence was built without the sample's seed
    population: int
    drawn: int
    relevant: int


@dataclass(frozen=True)
class HolesStratum(Part):
    """One stratum's judged sampled holes and the relevant among them."""

    judged: int
    relevant: int


@dataclass(frozen=True)
class HolesEstimate(Part):
    """The drop estimated under complete judgement, its interval and the interval's level."""

    drop: float
    interval: tuple[float, ...]
    level: float


@dataclass(frozen=True)
class JudgeAccount(Part):
    """One model judge's account in a gate: its agreement with the person's sample, the holes it
    graded, its U (None when it may not move U) and how far that moved U, and what it cost."""

    by: str
    name: str
    graded: int
    both: int
    model_only: int
    person_only: int
    neither: int
    sampled: int
    kappa: float | None
    tpr: float | None
    tpr_interval: tuple[float, ...] | None
    tnr: float | None
    tnr_interval: tuple[float, ...] | None
    fnr_upper: float | None
    fpr_upper: float | None
    used: bool
    why_not: str | None
    plausible_relevant: int | None
    moved: int | None
    cost: Mapping[str, int] | None = None

    OPTIONAL: ClassVar[tuple[str, ...]] = ("cost",)


@dataclass(frozen=True)
class GateHoles(Part):
    """What the holes of both runs say of a drop gate: their count, the flip count m (None: none
    would flip it), the plausible relevant holes U, the sample, the estimate, and the sample that
    would settle it when they leave it inconclusive, with its command."""

    policy: str
    holes: int
    flip_count: int | None
    flip_count_exact: bool
    direction: str | None
    plausible_relevant: int
    sample: HolesSample | None
    strata: Mapping[str, HolesStratum] | None
    estimate: HolesEstimate | None
    inconclusive: bool
    samples_ignored: tuple[str, ...]
    judges: tuple[JudgeAccount, ...] | None = None
    settling_sample: int | None = None
    command: str | None = None

    ABSENT_WHEN_NONE: ClassVar[tuple[str, ...]] = ("judges",)
    OPTIONAL: ClassVar[tuple[str, ...]] = ("direction", "strata", "estimate", "command")


@dataclass(frozen=True)
class GatePower(Part):
    """The cases a drop gate needs to see a drop of its threshold with ``power`` at level
    ``alpha`` (None: it cannot say), beside the ``cases`` it has. A note, never a verdict."""

    power: float
    alpha: float
    cases: int
    needed: int | None
    underpowered: bool
