"""Measuring: the one per-case loop that turns a ranking into a
:class:`~ptah.core.report.CaseResult`, and the one place a :class:`~ptah.core.report.Run` and its
means are made.

Every channel (vector, exact or through an index; lexical; hybrid) ranks each
case its own way and hands the ranking here, so every number in a report is
measured by the same code:

* the case's results are its top ``k`` (score descending, ties by key);
* each measure (:mod:`ptah.core.measures`) is scored on the ranking: the
  default ones at the case's own ``k``, a fixed-depth one (``MAP@10``) at its
  depth -- which is why a ranking may run deeper than ``k``
  (:func:`ranking_depth`);
* a required key absent from the top k is a miss, placed where it ranked
  ("ranked 11th") or "not in the top N" when its rank is not known; a
  forbidden key in the top k is a hit (leakage); a case passes with neither;
* the holes (:mod:`ptah.core.judged`): each unjudged key of the top k with its
  rank, judged@k, and each measure's *high* bound -- the same formula with
  each hole in the measure's top (its depth) graded the case's highest grade.

Means are over cases, each case measured at its own depth; they carry their
numerator and denominator (:func:`ptah.core.measures.mean_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from ptah.core.corpus import Case
from ptah.core.judged import high_grades, holes, judged_at_k, judged_keys
from ptah.core.measures import DEFAULT_MEASURES, Mean, Measure, bounded_mean, mean_of
from ptah.core.ranking import NO_TIES, Ties
from ptah.core.report import (
    CaseResult,
    CaseTies,
    Hit,
    Hole,
    Miss,
    Result,
    Run,
)
from ptah.core.run_parts import (
    ForbiddenCounts,
    RequiredCounts,
    RunAnn,
    RunGeneration,
    Search,
    TieCounts,
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
