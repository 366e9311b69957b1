"""ptah's own report sections, in the order they compute, the context they read, and how one planned
run is measured.

1. ``evidence`` -- what each run's gates know beyond its rankings: the record's samples of its
   holes, its model judges, the hole policy and the paths a settling command names;
2. ``verdicts`` -- with a baseline, each run compared with the baseline's reference run (and its
   slices); every run's gates;
3. ``p95`` -- the gate on each run's p95 time per query (only when ``max_p95_ms`` is asked);
4. ``stale`` -- :func:`stale_judgements`: each judgement whose row's judging text
   (:meth:`ptah.core.spec.Spec.judging_template`) no longer has the SHA-256 recorded when it was
   judged, or whose row is gone, whichever generations are measured. A judgement of an older
   record (digest of one generation's template) is fresh while it matches under any declared
   generation. Rows are read only when the record holds a judgement, once per template;
5. ``side_by_side`` -- with two runs or more, each compared with the first;
6. ``excerpts`` -- each ranked key's judging text, cut for the pages (when asked).

:func:`measure_plan` runs a plan's stages: its channel's search (with a variant's own search
options), then a variant's rerank of each case's top ``candidates`` rows. :func:`cost` reports
each stage's seconds, share and p50/p95 time per query (docs/variants.md, "Cost: time per query"):
the batched search charges each query an equal share of its seconds less ``load_s`` (a model's
load), the rerank is timed per query, and a run's search seconds are what it spent after the runs
before it, whose vectors, indexes and cached queries it shares.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from ptah.adapters.sources.base import texts_of
from ptah.core.baseline import Evidence, compare, gates
from ptah.core.compared import Family
from ptah.core.comparison import against_baseline, compare_runs
from ptah.core.errors import CapabilityUnavailable, InputError, VariantUnavailable
from ptah.core.judged import JudgementRecord
from ptah.core.parts import Cost, RunVariant, SearchRerank, StageCost, VariantSearch, read_only
from ptah.core.plugins import hookimpl
from ptah.core.provenance import text_digest
from ptah.core.report import BaselineComparison, Comparison, Gate, Run, excerpt, make_run
from ptah.core.report_parts import ReportBaseline, StaleJudgement
from ptah.core.request import SearchOptions, gate_key
from ptah.core.slicing import correct, power_note, slice_comparisons, slice_gates
from ptah.services.channels import CHANNELS, RunPlan, Sides
from ptah.services.channels.index import check_search
from ptah.services.project import Opened

if TYPE_CHECKING:
    from ptah.core.calibration import ModelJudge
    from ptah.core.corpus import Corpus
    from ptah.core.report import Report, Run
    from ptah.core.request import EvaluationRequest
    from ptah.services.project import Opened


Slices = Mapping[str, tuple[str, tuple[str, ...]]]


@dataclass(frozen=True)
class Context:
    """One evaluation's context (:class:`ptah.core.parts.Context`): the corpus, the request,
    the measured runs, the baseline re-scored (None without one), the corpus's slices, the paths
    a gate's settling command names, the project (its rows' texts), and the results so far."""

    project: Opened
    corpus: Corpus
    request: EvaluationRequest
    runs: tuple[Run, ...]
    baseline: Report | None
    slices: Slices
    paths: Evidence
    baseline_member: ReportBaseline | None = None  # the report's baseline: path, digest, re-scoring
    results: Mapping[str, Any] = field(default_factory=dict)

    @property
    def reference(self) -> Run | None:
        """The baseline's reference run (its first), which every run is compared with."""
        return None if self.baseline is None else self.baseline.runs[0]

    def with_result(self, name: str, result: Any) -> Context:
        return replace(self, results={**self.results, name: result})

    @functools.cached_property
    def texts(self) -> Mapping[str, str]:
        """Each ranked key's judging text, read once (the excerpts and the model judges')."""
        from ptah.services.evidence import ranked_texts

        return ranked_texts(self.project, self.runs)


@dataclass(frozen=True)
class RunsEvidence:
    """Each run's :class:`Evidence`, by run name: one value per run for its gates."""

    runs: Mapping[str, Evidence]

    def of(self, run: Run) -> Evidence:
        return self.runs[run.name]

    def to_dict(self) -> dict:
        return {
            name: {"samples": known.samples, "ignored": list(known.ignored)}
            for name, known in self.runs.items()
        }


class EvidenceSection:
    name = "evidence"

    def compute(self, context: Context) -> RunsEvidence:
        from ptah.services.evidence import model_judges, samples_of

        record, request = context.corpus.judgements, context.request
        sampled = samples_of(record, context.runs, context.reference)
        texts = context.texts if record.models else {}
        judges = model_judges(record, context.runs, sampled, request.min_kappa, texts)
        return RunsEvidence(
            {
                run.name: replace(
                    sampled[run.name],
                    policy=request.holes,
                    judges=_judges(judges, run),
                    corpus_path=context.paths.corpus_path,
                    baseline_path=context.paths.baseline_path,
                    spec_path=context.paths.spec_path,
                )
                for run in context.runs
            }
        )

    def gates(self, context: Context) -> Sequence[Gate]:
        return ()


def _judges(judges: Mapping[str, list[ModelJudge]], run: Run) -> tuple[ModelJudge, ...]:
    return tuple(judges.get(run.name, ()))


@dataclass(frozen=True)
class Verdicts:
    """Each run against the baseline's reference run (empty without a baseline), and the family
    of the slice tests (None without slices)."""

    comparisons: tuple[BaselineComparison, ...] = ()
    family: Family | None = None

    def to_dict(self) -> dict:
        return {
            "comparisons": [entry.to_dict() for entry in self.comparisons],
            "family": None if self.family is None else self.family.to_dict(),
        }


class VerdictsSection:
    name = "verdicts"

    def compute(self, context: Context) -> Verdicts:
        reference = context.reference
        if reference is None:
            return Verdicts()
        from ptah.services.evidence import holes_lost

        assert context.baseline is not None
        statistics, slices = context.request.statistics, context.slices
        theirs = context.baseline.corpus.slices or {}
        compared = [
            replace(
                compare(run, reference),
                significance=against_baseline(reference, run, statistics, context.paths),
                baseline_holes_lost=holes_lost(context.corpus, reference, run),
            )
            for run in context.runs
        ]
        if not slices:
            return Verdicts(tuple(compared))
        corrected, family = correct(
            [
                slice_comparisons(reference, run, slices, statistics, theirs, context.paths)
                for run in context.runs
            ],
            context.request.correction,
            statistics.alpha,
        )
        return Verdicts(
            tuple(
                replace(entry, slices=MappingProxyType(found))
                for entry, found in zip(compared, corrected)
            ),
            family,
        )

    def gates(self, context: Context) -> Sequence[Gate]:
        verdicts: Verdicts = context.results[self.name]
        evidence: RunsEvidence = context.results["evidence"]
        request, reference = context.request, context.reference
        whole = {key: value for key, value in request.max_drop.items() if gate_key(key)[1] is None}
        sliced = {key: value for key, value in request.max_drop.items() if key not in whole}
        found: list[Gate] = []
        for index, run in enumerate(context.runs):
            known = evidence.of(run)
            if reference is None:
                found += gates(run, None, whole, known, None)
                continue
            assert context.baseline is not None
            comparison = verdicts.comparisons[index]
            mine = gates(run, comparison, whole, known, reference) + slice_gates(
                run,
                reference,
                sliced,
                context.slices,
                context.baseline.corpus.slices or {},
                context.paths.baseline_path or "report",
                known,
            )
            alpha = request.statistics.alpha
            found += [power_note(gate, run, reference, context.slices, alpha) for gate in mine]
        return found


class P95Section:
    name = "p95"

    def compute(self, context: Context) -> None:
        return None

    def gates(self, context: Context) -> Sequence[Gate]:
        return p95_gates(list(context.runs), context.request.max_p95_ms)


@dataclass(frozen=True)
class Stale:
    """Each judgement made on a row whose judging text changed since, and the record's size."""

    entries: tuple[StaleJudgement, ...]
    judgements: int

    def to_dict(self) -> dict:
        return {
            "entries": [entry.to_dict() for entry in self.entries],
            "judgements": self.judgements,
        }


class StaleSection:
    name = "stale"

    def compute(self, context: Context) -> Stale:
        record = context.corpus.judgements
        found = stale_judgements(context.project, record)
        return Stale(tuple(found), len(record))

    def gates(self, context: Context) -> Sequence[Gate]:
        if not context.request.fail_on_stale_judgements:
            return ()
        stale: Stale = context.results[self.name]
        count = len(stale.entries)
        said = (
            f"{count} of {stale.judgements} judgements were made on a row whose text changed since"
        )
        return (Gate("stale-judgements", None, not stale.entries, said),)


class SideBySideSection:
    name = "side_by_side"

    def compute(self, context: Context) -> Comparison | None:
        paths = replace(context.paths, baseline_path=None)  # a finding draws from the runs compared
        statistics, slices = context.request.statistics, context.slices
        found = compare_runs(list(context.runs), statistics, paths)
        if found is None or not slices:
            return found
        first = context.runs[0]
        corrected, family = correct(
            [
                slice_comparisons(first, run, slices, statistics, paths=paths)
                for run in context.runs[1:]
            ],
            context.request.correction,
            statistics.alpha,
        )
        candidates = tuple(
            replace(candidate, slices=MappingProxyType(sliced))
            for candidate, sliced in zip(found.candidates, corrected)
        )
        return replace(found, candidates=candidates, family=family)

    def gates(self, context: Context) -> Sequence[Gate]:
        return ()


class ExcerptsSection:
    name = "excerpts"

    def compute(self, context: Context) -> Mapping[str, str] | None:
        if not context.request.excerpts:
            return None
        return read_only({key: excerpt(text) for key, text in context.texts.items()})

    def gates(self, context: Context) -> Sequence[Gate]:
        return ()


OWN: tuple[Any, ...] = (
    EvidenceSection(),
    VerdictsSection(),
    P95Section(),
    StaleSection(),
    SideBySideSection(),
    ExcerptsSection(),
)


OWN_NAMES = frozenset(section.name for section in OWN)


@hookimpl
def register_sections(register: Callable) -> None:
    for section in OWN:
        register(section)


def stale_judgements(project: Opened, record: JudgementRecord) -> list[StaleJudgement]:
    """The case, key, judged_at and why of each judgement whose row's judging text no longer hashes
    to its digest, in case then key order."""
    wanted = {key for keys in record.cases.values() for key in keys}
    if not wanted:
        return []
    spec = project.spec
    judging = spec.judging_template()
    legacy = [
        template
        for template in dict.fromkeys(g.template(spec.source) for g in spec.generations.values())
        if template != judging
    ]
    digests: dict[str, set[str]] = {}
    for template in (judging, *legacy):
        for key, text in texts_of(project.source, template, wanted).items():
            digests.setdefault(key, set()).add(text_digest(text))
    stale = []
    for case_id in sorted(record.cases):
        for key, judgement in sorted(record.cases[case_id].items()):
            found = digests.get(key)
            if found is not None and judgement.text_sha256 in found:
                continue
            day = judgement.judged_at[:10]
            why = (
                f"judged {day}, row text changed since"
                if found is not None
                else f"judged {day}, row no longer in the table"
            )
            stale.append(StaleJudgement(case_id, key, judgement.judged_at, why))
    return stale


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
    run = CHANNELS.get(plan.channel).measure(plan, within)
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
