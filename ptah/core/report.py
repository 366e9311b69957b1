"""The typed report: one result object, built in one place, read back from every ``ptah-report@1``
and ``@2`` file; and the per-case loop that measures it.

:class:`Report` and its parts are frozen dataclasses: ``to_dict()`` is exactly the document
``ptah inference evaluate --output`` writes (``ptah/schemas/report.schema.json``), and
``Report.from_dict(d).to_dict() == d`` for every report written so far (an older one lacking a
member reads it None); ``to_json()`` is that document's text and ``save(path, format)`` writes
it in a registered format, both through the door (:mod:`ptah.core.formats`). A run's ``means``
and a case's ``values`` are keyed by the measure's string form (``nDCG``, ``MAP@10``), the JSON by
its report key (``ndcg``, ``MAP@10``). ``@2`` adds the
holes (:mod:`ptah.core.judged`): a case's ``judged``, ``holes`` and ``high``; a run's
``aggregates.judged``; ``high`` and ``high_numerator`` in every mean; the corpus's
``judgements``; ``stale_judgements``; the ``inconclusive`` verdict; and optional ``excerpts``
(:func:`excerpt`). The parts are typed in :mod:`ptah.core.parts` (a run's),
:mod:`ptah.core.compared` and :mod:`ptah.core.side_by_side` (comparisons),
:mod:`ptah.core.gate_parts` and :mod:`ptah.core.report_parts`; timings and environment are
read-only mappings kept as written.

Every channel hands its ranking to :func:`measure_case`, and :func:`make_run` makes the run:

* the results are the top ``k`` (score descending, ties by key);
* each measure is scored at the case's ``k``, a fixed-depth one at its depth (so a ranking may
  run deeper, :func:`ranking_depth`);
* a required key outside the top k is a miss, placed where it ranked ("ranked 11th") or "not in
  the top N"; a forbidden key in it is a hit; a case passes with neither;
* the holes: each unjudged key of the top k with its rank, judged@k, and each measure's *high*
  bound (each hole in the measure's depth graded the case's highest grade).

Means are over cases with their numerator and denominator (:func:`ptah.core.measures.mean_of`).
Each gate's verdict is a :class:`Gate`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from types import MappingProxyType
from typing import Any, Self

from ptah.core.compared import BaselineComparison
from ptah.core.corpus import Case, Corpus
from ptah.core.gate_parts import GateHoles, GatePower
from ptah.core.judged import high_grades, holes, judged_at_k, judged_keys
from ptah.core.measures import DEFAULT_MEASURES, Mean, Measure, bounded_mean, mean_of
from ptah.core.parts import (
    CaseAnn,
    Cost,
    ForbiddenCounts,
    RequiredCounts,
    RunAnn,
    RunGeneration,
    RunVariant,
    Search,
    SliceMeans,
    TieCounts,
    mean_from_dict,
    mean_to_dict,
    plain,
    read_only,
)
from ptah.core.ranking import NO_TIES, Ties
from ptah.core.report_parts import ReportBaseline, ReportCorpus, StaleJudgement
from ptah.core.side_by_side import Comparison


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
    its unjudged rows say (:mod:`ptah.core.estimate`): their count, the flip
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


__all__ = [
    "BaselineComparison",
    "CaseResult",
    "CaseTies",
    "Comparison",
    "Gate",
    "Hit",
    "Hole",
    "KnownMiss",
    "Miss",
    "Report",
    "Result",
    "Run",
]

REPORT_FORMAT = "ptah-report@2"
REPORT_FORMATS = ("ptah-report@1", REPORT_FORMAT)  # every format ptah reads
EXCERPT_CHARS = 100  # the report schema's maxLength of an excerpt


def excerpt(text: str) -> str:
    """A row's text as the pages show it beside its key: each line's words one space apart, the
    lines joined by `` · ``, cut to :data:`EXCERPT_CHARS` characters (the last an ellipsis when
    cut)."""
    flat = " · ".join(" ".join(line.split()) for line in text.splitlines() if line.strip())
    return flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1] + "…"


def _measure_keys(data: Mapping) -> dict[str, str]:
    """The report keys in ``data`` that name measures, mapped to each measure's string form, in
    order."""
    found = {}
    for key in data:
        try:
            measure = Measure.parse(key)
        except ValueError:
            continue
        if measure.key == key:
            found[key] = str(measure)
    return found


@dataclass(frozen=True, slots=True)
class Result:
    """One ranked row: its key and score."""

    key: str
    score: float


@dataclass(frozen=True, slots=True)
class Miss:
    """A required key absent from the top k: where it ranked (``rank`` None when not known) and the
    sentence."""

    key: str
    rank: int | None
    where: str


@dataclass(frozen=True, slots=True)
class Hit:
    """A forbidden key in the top k, at ``rank``."""

    key: str
    rank: int


@dataclass(frozen=True, slots=True)
class Hole:
    """An unjudged key in the top k, at ``rank`` (:mod:`ptah.core.judged`)."""

    key: str
    rank: int


@dataclass(frozen=True, slots=True)
class CaseTies:
    """What ties did to a case's top k (see :mod:`ptah.core.ranking`)."""

    straddles_cutoff: bool
    cutoff_score: float | None
    tied_outside: int
    expected_tied: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One case measured in one run.

    ``ranking`` holds the top k, best first; ``values`` each measure's value
    keyed by the measure's string form (None: N/A); ``missed`` the required
    keys absent from the top k; ``hits`` the forbidden keys present;
    ``highs`` each measure's high bound, ``holes`` the unjudged keys of the
    top k and ``judged`` judged@k (N/A: None) -- ``highs`` and ``holes`` are
    None when unknown (read from a ``ptah-report@1``).
    """

    id: str
    query: str
    k: int
    ranking: tuple[Result, ...]
    values: Mapping[str, float | None]
    passed: bool
    required: tuple[str, ...]
    missed: tuple[Miss, ...]
    relevant: tuple[tuple[str, float], ...]
    forbidden: tuple[str, ...]
    hits: tuple[Hit, ...]
    ties: CaseTies
    ann: CaseAnn | None = None  # --search both: the index against exact search for this case
    highs: Mapping[str, float | None] | None = None
    holes: tuple[Hole, ...] | None = None
    judged: float | None = None

    @property
    def keys(self) -> tuple[str, ...]:
        """The ranked keys, best first."""
        return tuple(result.key for result in self.ranking)

    def with_ann(self, ann: CaseAnn) -> CaseResult:
        """This case with the index-against-exact comparison of ``--search both``."""
        return replace(self, ann=ann)

    def to_dict(self) -> dict:
        data = {
            "id": self.id,
            "query": self.query,
            "k": self.k,
            "results": [{"key": r.key, "score": r.score} for r in self.ranking],
            "metrics": {Measure.parse(name).key: value for name, value in self.values.items()},
            "passed": self.passed,
            "required": {
                "keys": list(self.required),
                "missed": [{"key": m.key, "rank": m.rank, "where": m.where} for m in self.missed],
            },
            "relevant": [{"key": key, "grade": grade} for key, grade in self.relevant],
            "forbidden": {
                "keys": list(self.forbidden),
                "hits": [{"key": h.key, "rank": h.rank} for h in self.hits],
            },
            "ties": asdict(self.ties) | {"expected_tied": list(self.ties.expected_tied)},
        }
        if self.ann is not None:
            data["ann"] = self.ann.to_dict()
        if self.highs is not None:
            data["high"] = {Measure.parse(name).key: value for name, value in self.highs.items()}
        if self.holes is not None:
            data["judged"] = self.judged
            data["holes"] = [{"key": h.key, "rank": h.rank} for h in self.holes]
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> CaseResult:
        metrics = data["metrics"]
        ties = data["ties"]
        highs, holes = data.get("high"), data.get("holes")
        return cls(
            id=data["id"],
            query=data["query"],
            k=data["k"],
            ranking=tuple(Result(r["key"], r["score"]) for r in data["results"]),
            values=MappingProxyType(
                {name: metrics[key] for key, name in _measure_keys(metrics).items()}
            ),
            passed=data["passed"],
            required=tuple(data["required"]["keys"]),
            missed=tuple(Miss(m["key"], m["rank"], m["where"]) for m in data["required"]["missed"]),
            relevant=tuple((r["key"], r["grade"]) for r in data["relevant"]),
            forbidden=tuple(data["forbidden"]["keys"]),
            hits=tuple(Hit(h["key"], h["rank"]) for h in data["forbidden"]["hits"]),
            ties=CaseTies(
                ties["straddles_cutoff"],
                ties["cutoff_score"],
                ties["tied_outside"],
                tuple(ties["expected_tied"]),
            ),
            ann=CaseAnn.from_dict(data["ann"]) if data.get("ann") is not None else None,
            highs=None
            if highs is None
            else MappingProxyType({name: highs[key] for key, name in _measure_keys(highs).items()}),
            holes=None if holes is None else tuple(Hole(h["key"], h["rank"]) for h in holes),
            judged=data.get("judged"),
        )


@dataclass(frozen=True)
class Run:
    """One (channel, generation) measured: what was searched, every case, and the means.

    ``means`` is keyed by each measure's string form; ``required``,
    ``forbidden`` and ``ties`` are the expectation counts; ``ann`` the index's
    quality against exact search (``--search both``); ``judged`` the mean
    judged@k (None when unknown: a ``ptah-report@1``); ``variant`` a variant's
    executed controls (None for a run of --channel/--generation); ``cost`` its
    stages' times (None in a report written before they were measured);
    ``slices`` each tag's means (:mod:`ptah.core.slicing`; None without tags).
    """

    generation: RunGeneration
    search: Search
    cases: tuple[CaseResult, ...]
    means: Mapping[str, Mean]
    required: RequiredCounts
    forbidden: ForbiddenCounts
    ties: TieCounts
    ann: RunAnn | None = None
    judged: Mean | None = None
    variant: RunVariant | None = None
    cost: Cost | None = None
    slices: Mapping[str, SliceMeans] | None = None

    @property
    def holes(self) -> int:
        """How many holes the run's top k hold, over every case."""
        return sum(len(case.holes or ()) for case in self.cases)

    @property
    def name(self) -> str:
        return self.generation.name

    @property
    def channel(self) -> str:
        return self.search.channel

    @property
    def measures(self) -> tuple[Measure, ...]:
        return tuple(Measure.parse(name) for name in self.means)

    def to_dict(self, *, cases: bool = True) -> dict:
        """The run's JSON document; ``cases=False`` leaves ``cases`` empty, for a writer that adds
        them one by one."""
        aggregates: dict = {
            Measure.parse(name).key: mean_to_dict(mean) for name, mean in self.means.items()
        }
        aggregates["required"] = self.required.to_dict()
        aggregates["forbidden"] = self.forbidden.to_dict()
        aggregates["ties"] = self.ties.to_dict()
        aggregates["cases"] = len(self.cases)
        if self.ann is not None:
            aggregates["ann"] = self.ann.to_dict()
        if self.judged is not None:
            aggregates["judged"] = mean_to_dict(self.judged) | {"holes": self.holes}
        data = {"generation": self.generation.to_dict(), "search": self.search.to_dict()}
        if self.variant is not None:
            data["variant"] = self.variant.to_dict()
        if self.cost is not None:
            data["cost"] = self.cost.to_dict()
        if self.slices is not None:
            data["slices"] = {tag: entry.to_dict() for tag, entry in self.slices.items()}
        return data | {
            "cases": [case.to_dict() for case in self.cases] if cases else [],
            "aggregates": aggregates,
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> Run:
        aggregates = data["aggregates"]
        variant, cost, slices = data.get("variant"), data.get("cost"), data.get("slices")
        return cls(
            generation=RunGeneration.from_dict(data["generation"]),
            search=Search.from_dict(data["search"]),
            cases=tuple(CaseResult.from_dict(case) for case in data["cases"]),
            means=MappingProxyType(
                {
                    name: mean_from_dict(aggregates[key])
                    for key, name in _measure_keys(aggregates).items()
                }
            ),
            required=RequiredCounts.from_dict(aggregates["required"]),
            forbidden=ForbiddenCounts.from_dict(aggregates["forbidden"]),
            ties=TieCounts.from_dict(aggregates["ties"]),
            ann=RunAnn.from_dict(aggregates["ann"]) if aggregates.get("ann") is not None else None,
            judged=mean_from_dict(aggregates["judged"])
            if aggregates.get("judged") is not None
            else None,
            variant=None if variant is None else RunVariant.from_dict(variant),
            cost=None if cost is None else Cost.from_dict(cost),
            slices=None
            if slices is None
            else MappingProxyType({tag: SliceMeans.from_dict(e) for tag, e in slices.items()}),
        )


@dataclass(frozen=True)
class Report:
    """The result of one evaluation (see the module docs)."""

    created_at: str
    corpus: ReportCorpus
    runs: tuple[Run, ...]
    gates: tuple[Gate, ...]
    timings: Mapping[str, float]
    environment: Mapping
    baseline: ReportBaseline | None = None  # path, digest; see ``comparisons``
    # per run, against the baseline's reference run
    comparisons: tuple[BaselineComparison, ...] = ()
    comparison: Comparison | None = None  # several runs side by side (ptah.core.comparison)
    format: str = field(default=REPORT_FORMAT)
    # the judgements whose row's text changed since
    stale_judgements: tuple[StaleJudgement, ...] = ()
    # ranked key -> its judging text's excerpt; None: not recorded
    excerpts: Mapping[str, str] | None = None
    # a plugin section's result by its name (:mod:`ptah.core.parts`); read back as its JSON
    sections: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def verdict(self) -> str:
        """``pass`` when every gate passed; ``fail`` when one failed outright; else ``inconclusive``
        (the holes decide a drop gate)."""
        if all(gate.passed for gate in self.gates):
            return "pass"
        return (
            "fail"
            if any(not gate.passed and not gate.inconclusive for gate in self.gates)
            else "inconclusive"
        )

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def total_seconds(self) -> float:
        """The seconds the evaluation took in all: its timings' ``total`` (0 where it has none)."""
        return float(self.timings.get("total", 0.0) or 0.0)

    def to_dict(self, *, cases: bool = True) -> dict:
        """The report's JSON document; ``cases=False``: every run's ``cases`` empty (see
        :meth:`Run.to_dict`)."""
        baseline = None
        if self.baseline is not None:
            baseline = self.baseline.to_dict() | {
                "comparisons": [comparison.to_dict() for comparison in self.comparisons]
            }
        data = {
            "format": self.format,
            "created_at": self.created_at,
            "corpus": self.corpus.to_dict(),
            "runs": [run.to_dict(cases=cases) for run in self.runs],
            "baseline": baseline,
            "gates": [gate.to_dict() for gate in self.gates],
            "verdict": self.verdict,
            "comparison": None if self.comparison is None else self.comparison.to_dict(),
            "timings": plain(self.timings),
            "environment": plain(self.environment),
        }
        if self.format != REPORT_FORMATS[0]:
            data["stale_judgements"] = [stale.to_dict() for stale in self.stale_judgements]
        if self.excerpts is not None:
            data["excerpts"] = dict(self.excerpts)
        if self.sections:
            data["sections"] = {
                name: result.to_dict() if hasattr(result, "to_dict") else plain(result)
                for name, result in self.sections.items()
            }
        return data

    def to_json(self) -> str:
        """Exactly the text ``--output`` writes (the ``json`` format of
        :mod:`ptah.core.formats`)."""
        from ptah.core.formats import FORMATS

        return "".join(FORMATS.get("json").pieces(self))

    def save(
        self, path: str | os.PathLike, format: str = "json", *, corpus: Corpus | None = None
    ) -> None:
        """Write the report at ``path`` in a registered ``format`` (:mod:`ptah.core.formats`: json,
        html, junit, markdown, trec), atomically (devices and FIFOs written through); an unknown
        format is an InputError (exit 2), before anything is written. Give the measured ``corpus``
        for JUnit's file and line of each case."""
        from ptah.core.formats import FILE, FORMATS, WRITERS

        pieces = FORMATS.get(format).pieces(self, corpus)
        WRITERS.get(FILE).write(path, pieces)

    @classmethod
    def from_dict(cls, data: Mapping) -> Self:
        """The report a ``ptah-report@1`` or ``@2`` document holds (validate it first: see
        ``ptah.core.baseline``)."""
        baseline = data.get("baseline")
        return cls(
            format=data["format"],
            created_at=data["created_at"],
            corpus=ReportCorpus.from_dict(data["corpus"]),
            runs=tuple(Run.from_dict(run) for run in data["runs"]),
            gates=tuple(Gate.from_dict(gate) for gate in data["gates"]),
            timings=read_only(data["timings"]),
            environment=read_only(data["environment"]),
            baseline=None if baseline is None else ReportBaseline.from_dict(baseline),
            comparisons=()
            if baseline is None
            else tuple(BaselineComparison.from_dict(c) for c in baseline["comparisons"]),
            comparison=None
            if data.get("comparison") is None
            else Comparison.from_dict(data["comparison"]),
            stale_judgements=tuple(
                StaleJudgement.from_dict(stale) for stale in data.get("stale_judgements", ())
            ),
            excerpts=None
            if data.get("excerpts") is None
            else MappingProxyType(dict(data["excerpts"])),
            sections=read_only(data.get("sections") or {}),
        )


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``11th``, ``22nd``…"""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def placement_text(rank: int | None, searched: int) -> str:
    """Where a missed key ranked: ``ranked 11th`` or ``not in the top 1000``."""
    return f"ranked {ordinal(rank)}" if rank is not None else f"not in the top {searched}"


def ranking_depth(case: Case, measures: Sequence[Measure] = DEFAULT_MEASURES) -> int:
    """How deep a case's ranking must go: its own k, or deeper when a fixed-depth measure looks
    further."""
    return max([case.k, *(m.k for m in measures if m.k is not None)])


def measure_case(
    case: Case,
    ranked: Sequence[tuple[str, float]],
    *,
    measures: Sequence[Measure] = DEFAULT_MEASURES,
    searched: int,
    rank_of: Callable[[str], int | None] | None = None,
    ties: Ties | None = None,
    unranked: str | None = None,
) -> CaseResult:
    """Measure ``case`` on ``ranked``, ``(key, score)`` pairs best first, at least
    :func:`ranking_depth` deep (or every row there is).

    ``rank_of`` answers the full rank of a missed required key (None when it
    cannot say: the miss then reads ``unranked``, by default "not in the top
    ``searched``"); ``ties`` are the ranking's ties at depth k
    (:func:`ptah.core.ranking.find_ties`).
    """
    ranked = list(ranked)
    top = [key for key, _ in ranked[: case.k]]
    keys = [key for key, _ in ranked]
    positions = {key: rank for rank, key in enumerate(top, start=1)}
    missed = []
    for key in case.required:
        if key not in positions:
            rank = rank_of(key) if rank_of is not None else None
            missed.append(
                Miss(
                    key,
                    rank,
                    unranked if rank is None and unranked else placement_text(rank, searched),
                )
            )
    forbidden = set(case.forbidden)
    hits = tuple(Hit(key, positions[key]) for key in top if key in forbidden)
    values = {str(m): m.score(keys, case.relevant, case.k) for m in measures}
    judged = judged_keys(case)
    unjudged = holes(keys, judged, case.k)
    ties = ties or NO_TIES
    return CaseResult(
        id=case.id,
        query=case.query,
        k=case.k,
        ranking=tuple(Result(key, score) for key, score in ranked[: case.k]),
        values=MappingProxyType(values),
        passed=not missed and not hits,
        required=tuple(case.required),
        missed=tuple(missed),
        relevant=tuple(sorted(case.relevant.items())),
        forbidden=tuple(case.forbidden),
        hits=hits,
        ties=CaseTies(
            ties.straddles_cutoff, ties.cutoff_score, ties.tied_outside, tuple(ties.expected_tied)
        ),
        highs=MappingProxyType(high_bounds(case, keys, judged, values, measures)),
        holes=tuple(Hole(key, rank) for key, rank in unjudged),
        judged=judged_at_k(keys, judged, case.k),
    )


def high_bounds(
    case: Case,
    keys: Sequence[str],
    judged: frozenset[str],
    values: Mapping[str, float | None],
    measures: Sequence[Measure],
) -> dict[str, float | None]:
    """Each measure's high bound: its value with each hole in its top (its depth) graded the case's
    highest grade; the value itself where the measure's top holds no hole."""
    highs = {}
    grades_at: dict[
        int, dict[str, float] | None
    ] = {}  # measures of one depth share its holes and grades
    for m in measures:
        depth = m.depth(case.k)
        if depth not in grades_at:
            found = [key for key, _ in holes(keys, judged, depth)]
            grades_at[depth] = high_grades(case.relevant, found) if found else None
        grades = grades_at[depth]
        highs[str(m)] = m.score(keys, grades, case.k) if grades is not None else values[str(m)]
    return highs


def means(results: Sequence[CaseResult], measures: Sequence[Measure]) -> dict[str, Mean]:
    """Each measure's mean over the cases where it is defined, keyed by the measure's string form,
    with the mean of its high bounds beside (unknown when a case's is: read from a
    ``ptah-report@1``)."""
    if any(result.highs is None for result in results):
        return {str(m): mean_of(result.values[str(m)] for result in results) for m in measures}
    # every case's highs are known: checked above
    return {
        str(m): bounded_mean(
            (r.values[str(m)] for r in results),
            (r.highs[str(m)] for r in results),  # type: ignore[index]
        )
        for m in measures
    }


def make_run(
    generation: RunGeneration,
    search: Search,
    results: Sequence[CaseResult],
    measures: Sequence[Measure] = DEFAULT_MEASURES,
    ann: RunAnn | None = None,
) -> Run:
    """A run: what was searched, every case, the means and the expectation counts.

    ``forbidden.rate`` is leaking cases / cases that declare forbidden keys;
    N/A (None) when no case declares any.
    """
    with_required = [r for r in results if r.required]
    with_forbidden = [r for r in results if r.forbidden]
    leaking = sum(1 for r in with_forbidden if r.hits)
    return Run(
        generation=generation,
        search=search,
        cases=tuple(results),
        means=MappingProxyType(means(results, measures)),
        required=RequiredCounts(
            cases=len(with_required),
            failed=sum(1 for r in with_required if r.missed),
            keys_missed=sum(len(r.missed) for r in results),
        ),
        forbidden=ForbiddenCounts(
            cases=len(with_forbidden),
            leaking=leaking,
            hits=sum(len(r.hits) for r in results),
            rate=(leaking / len(with_forbidden)) if with_forbidden else None,
        ),
        ties=TieCounts(
            cases_flagged=sum(1 for r in results if r.ties.straddles_cutoff or r.ties.expected_tied)
        ),
        ann=ann,
        judged=mean_of(r.judged for r in results)
        if all(r.holes is not None for r in results)
        else None,
    )
