"""Measuring one planned run as its stages: the channel's search, then a variant's rerank; and what
each cost.

A run of ``--channel``/``--generation`` is its channel's search. A variant's
run (:class:`~ptah.core.spec.Variant`) searches with its own vector search
options when it names them, and, with a rerank stage, has its channel rank
each case's top ``candidates`` rows (:mod:`ptah.services.rerank`). The run
is named by the variant and keeps its executed controls (``variant``).

Cost (docs/variants.md, "Cost: time per query"): every stage's seconds, its share of the
evaluation's time, and its time per query over the cases, p50 and p95. The search stage works on
batches of queries (one matrix product scores a block of them), so it is timed per batch: each query
is charged an equal share of the stage's seconds, less the seconds it spent loading a model
(``load_s``: a cold run's p50 and p95 would measure the load, not a query). The rerank stage is
timed per query. A run's own time per query adds the two. Stages share what earlier runs made (a
generation's vectors, a template's lexical index, the query cache): a run's search seconds are what
*it* spent, after the runs before it. Times are reported, and gated only when asked
(``max_p95_ms``).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from ptah.core.errors import CapabilityUnavailable, InputError, VariantUnavailable
from ptah.core.parts import read_only
from ptah.core.report import Run, make_run
from ptah.core.request import SearchOptions
from ptah.core.run_parts import Cost, RunVariant, SearchRerank, StageCost, VariantSearch
from ptah.core.verdicts import Gate
from ptah.services.channels import RunPlan, Sides, channel
from ptah.services.channels.index import check_search


@dataclass
class Stage:
    """One stage of a run: its seconds, each query's seconds, how they were timed, a service's
    usage, and the seconds it spent loading a model (in ``seconds``, never in a query's: a cold
    run's p50 and p95 are not the model's load)."""

    seconds: float
    per_query: list[float]
    timed: str
    usage: Mapping | None = None
    load_s: float | None = None


def search_options(plan: RunPlan, sides: Sides) -> SearchOptions:
    """The vector search a plan runs with: its variant's when it names one, else the request's."""
    variant = plan.variant
    if variant is None or variant.search is None:
        return sides.request.search
    return SearchOptions(variant.search, variant.ef_search)


def check_plans(project, plans: list[RunPlan], sides: Sides) -> None:
    """Refuse, before any work, index search where it cannot be (:func:`check_search`): exit 3 for
    the request's search, :class:`VariantUnavailable` (exit 2) for a variant's own."""
    for options in dict.fromkeys(search_options(plan, sides) for plan in plans):
        group = [plan for plan in plans if search_options(plan, sides) == options]
        try:
            check_search(
                project,
                options,
                [plan.channel for plan in group],
                [plan.generation for plan in group],
            )
        except CapabilityUnavailable as exc:
            if options == sides.request.search:
                raise
            raise _unavailable(group, exc) from None


def _unavailable(group: list[RunPlan], exc: CapabilityUnavailable) -> VariantUnavailable:
    """The variants of ``group`` ask for a search that ``exc`` refused (exit 2)."""
    names = ", ".join(plan.name for plan in group)
    return VariantUnavailable(lambda words: f"variant {names}: {exc.said(words)}")


def measure_plan(plan: RunPlan, sides: Sides) -> tuple[Run, dict[str, Stage]]:
    """Measure ``plan``'s run, stage by stage (module docs); its run and stages."""
    from ptah.services.rerank import rerank

    variant = plan.variant
    rerank_settings = None if variant is None else variant.rerank
    depth = None
    if rerank_settings is not None:
        depth = rerank_settings.candidates
        short = [case for case in sides.corpus.cases if case.k > depth]
        if short:
            raise InputError(
                f'variant "{plan.name}": rerank candidates ({depth}) must be at least each case\'s k; case '
                f'"{short[0].id}" asks for {short[0].k} (write candidates: {max(c.k for c in short)} or more)'
            )
    within = sides.within(search_options(plan, sides), depth)
    loaded = sides.project.load_seconds
    clock = time.perf_counter()
    run = channel(plan.channel).measure(plan, within)
    searched = time.perf_counter() - clock
    loaded = sides.project.load_seconds - loaded  # the first run that needs a model loads it
    cases = len(sides.corpus.cases)
    stages = {
        "search": Stage(
            searched,
            [max(0.0, searched - loaded) / cases] * cases,
            "per batch",
            None,
            loaded or None,
        )
    }
    if variant is None:
        return run, stages
    controls = RunVariant(
        name=variant.name,
        channels=tuple(variant.channels),
        channel=variant.channel,
        generation=plan.generation,
        search=_search_controls(within.request.search),
        rerank=None,
    )
    if rerank_settings is None:
        return replace(
            run, generation=replace(run.generation, name=plan.name), variant=controls
        ), stages
    clock = time.perf_counter()
    reranked = rerank(plan, sides, run, rerank_settings)
    stages["rerank"] = Stage(
        time.perf_counter() - clock, reranked.seconds, "per query", reranked.controls.usage
    )
    controls = replace(controls, rerank=reranked.controls)
    parts = {"candidates": run.generation.identity, "rerank": rerank_settings.controls()}
    identity = (
        "sha256:"
        + hashlib.sha256(
            json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
    )
    generation = replace(
        run.generation, name=plan.name, identity=identity
    )  # its rankings are its own
    search = replace(
        run.search, rerank=SearchRerank(rerank_settings.kind, rerank_settings.candidates)
    )
    final = make_run(generation, search, reranked.results, sides.measures)
    return replace(final, variant=controls), stages


def _search_controls(options: SearchOptions) -> VariantSearch:
    return VariantSearch(options.mode, options.effective_ef_search if options.uses_index else None)


def cost(stages: dict[str, Stage], total: float | None) -> Cost:
    """The report's ``cost`` of a run from its stages, ``total`` the evaluation's seconds (None: not
    yet known)."""
    per_query = (
        np.sum([stage.per_query for stage in stages.values()], axis=0) if stages else np.zeros(0)
    )
    return Cost(
        MappingProxyType(
            {
                name: StageCost(
                    stage.seconds,
                    stage.seconds / total if total else None,
                    *_percentiles(stage.per_query),
                    stage.timed,
                    read_only(stage.usage) if stage.usage else None,
                    stage.load_s or None,
                )
                for name, stage in stages.items()
            }
        ),
        *_percentiles(per_query),
    )


def _percentiles(seconds) -> tuple[float | None, float | None]:
    """The p50 and p95 of ``seconds``, in milliseconds (None: no time)."""
    if len(seconds) == 0:
        return None, None
    p50, p95 = np.percentile(np.asarray(seconds, dtype=np.float64) * 1000.0, [50, 95])
    return float(p50), float(p95)


def p95_gates(runs: list[Run], limit: float | None) -> list[Gate]:
    """``max_p95_ms``: each run whose p95 time per query exceeds ``limit`` milliseconds fails its
    gate."""
    if limit is None:
        return []
    gates = []
    for run in runs:
        p95 = None if run.cost is None else run.cost.p95_ms
        passed = p95 is not None and p95 <= limit
        gates.append(
            Gate(
                "max-p95-ms",
                run.name,
                passed,
                f"p95 time per query {p95:,.1f} ms {'<=' if passed else '>'} {limit:,.1f} ms"
                if p95 is not None
                else "no query was timed",
            )
        )
    return gates
