"""The verdict parts of a report: each gate's verdict (the comparisons it reads are
:mod:`ptah.core.compared` and :mod:`ptah.core.side_by_side`).

Re-exported by :mod:`ptah.core.report`, which builds and reads them with the
rest of the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from ptah.core.gate_parts import GateHoles, GatePower


def counted(count: int, word: str) -> str:
    """A count and its noun, singular or plural as the count asks: ``1 case``, ``0 cases``, ``2
    holes``."""
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


def all_of(count: int, word: str) -> str:
    """Every one of a count, said right for one too: ``the one attempt``, ``all 3 attempts``."""
    return f"the one {word}" if count == 1 else f"all {counted(count, word)}"


@dataclass(frozen=True)
class KnownMiss:
    """A required key the run missed in a case whose baseline missed it too: where each ranked
    (``rank`` None: not known) and the sentences (``ranked 11th``, ``not in the top 5``)."""

    case: str
    key: str
    baseline_rank: int | None
    baseline_where: str
    current_rank: int | None
    current_where: str


@dataclass(frozen=True)
class Gate:
    """One gate's verdict: ``required``, ``forbidden`` or ``max-NAME-drop`` (with its threshold and
    the drop).

    A drop gate that fails on the current run's mean carries ``holes``, what
    its unjudged rows say (:mod:`ptah.core.flips`): their count, the flip
    count m, the plausible relevant holes U, the sample judged, the policy;
    it is ``inconclusive`` (and not ``passed``) when m <= U under the
    ``bound`` policy: the holes may decide it. The ``required`` gate against a
    baseline carries its ``known_misses``, which it does not fail on.
    """

    name: str
    generation: str | None
    passed: bool
    detail: str
    threshold: float | None = None
    drop: float | None = None
    drop_high: float | None = None
    inconclusive: bool = False
    holes: GateHoles | None = None
    power: GatePower | None = (
        None  # a drop gate's cases needed to see its threshold, beside the cases it has
    )
    known_misses: tuple[KnownMiss, ...] = ()

    @property
    def is_drop_gate(self) -> bool:
        return self.threshold is not None

    def to_dict(self) -> dict:
        data: dict = {"name": self.name, "generation": self.generation}
        if self.is_drop_gate:
            data |= {"threshold": self.threshold, "drop": self.drop}
            if self.drop_high is not None or self.inconclusive:
                data |= {"drop_high": self.drop_high, "inconclusive": self.inconclusive}
            if self.holes is not None:
                data["holes"] = self.holes.to_dict()
            if self.power is not None:
                data["power"] = self.power.to_dict()
        if self.known_misses:
            data["known_misses"] = [asdict(miss) for miss in self.known_misses]
        return data | {"passed": self.passed, "detail": self.detail}

    @classmethod
    def from_dict(cls, data: Mapping) -> Gate:
        return cls(
            data["name"],
            data.get("generation"),
            data["passed"],
            data["detail"],
            data.get("threshold"),
            data.get("drop"),
            data.get("drop_high"),
            data.get("inconclusive", False),
            None if data.get("holes") is None else GateHoles.from_dict(data["holes"]),
            None if data.get("power") is None else GatePower.from_dict(data["power"]),
            tuple(KnownMiss(**miss) for miss in data.get("known_misses", ())),
        )
