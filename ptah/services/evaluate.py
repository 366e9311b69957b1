"""The main job: evaluate runs on a corpus, compare them with a baseline, judge the gates.

:func:`evaluate` takes an :class:`~ptah.core.request.EvaluationRequest` and
returns a typed :class:`~ptah.core.report.Report`:

1. the baseline (when asked) is read, bounded, checked against the report
   schema and against itself, and must have measured the same corpus, or one
   that differs in judgements alone (exit 2); its runs are measured again from
   their stored rankings under the corpus now (:func:`ptah.core.baseline.rescore`);
2. the runs are planned -- every channel with every generation, channel-major
   (:mod:`ptah.services.channels`) -- and each is measured by its channel,
   sharing what runs share (a generation's vectors, a template's lexical index);
3. with two runs or more, each is compared with the first (the reference) side
   by side (:mod:`ptah.core.comparison`); with a baseline, each run is compared
   with the baseline's reference run and its drop gates judged
   (:mod:`ptah.core.baseline`);
4. the corpus's judgement record is checked against the rows' text: each
   judgement whose row changed since is listed
   (:func:`ptah.services.sections.stale_judgements`),
   a failed gate with ``fail_on_stale_judgements``;
5. with ``excerpts`` (an HTML page asked for, or the server), each ranked
   key's judging text is read, cut to an excerpt the pages show beside the key
   (:func:`ptah.core.report.excerpt`).

Typed errors for bad input (exit 2) and for what cannot be measured (exit 3);
a negative verdict is not an error: it is the report's ``verdict``.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ptah import __version__
from ptah.core.baseline import Evidence, check_cases, check_comparable, check_measures, rescore
from ptah.core.corpus import Corpus
from ptah.core.errors import InputError, ReportError
from ptah.core.parts import sections
from ptah.core.report import Gate, Report, read_only
from ptah.core.report_checks import check_consistency
from ptah.core.report_parts import ReportBaseline, ReportCorpus
from ptah.core.request import EvaluationRequest
from ptah.core.slicing import Slices, check_tests, corpus_slices, listed, slice_means
from ptah.core.spec import GenerationSettings
from ptah.services.channels import CHANNELS, RunPlan, Sides, check_record_run, plan_runs
from ptah.services.project import Opened
from ptah.services.sections import OWN_NAMES, Context, Verdicts, check_plans, cost, measure_plan

MAX_BASELINE_BYTES = 1024 * 1024 * 1024  # a report of 50,000 cases at k=100 is about 450 MB


def load_baseline(path: str | os.PathLike) -> Report:
    """Read a baseline report; ``ReportError`` (exit 2, naming the field) when it is not a ptah
    report that matches the report schema and agrees with itself (``ptah.adapters.report_json``,
    ``ptah.core.report_checks``)."""
    from ptah.adapters.files import read_bounded
    from ptah.adapters.report_json import (
        parse_report,
    )  # and the schema: only an evaluation with a baseline

    path = str(path)
    try:
        text = read_bounded(path, limit=MAX_BASELINE_BYTES, what="baseline report").decode("utf-8")
    except InputError as exc:  # missing, not a regular file, over the limit, unreadable
        raise ReportError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise ReportError(f"{path}: cannot be read: {exc}") from None
    document = parse_report(text, path)
    check_consistency(document, path)
    return Report.from_dict(document)


def evaluate(
    project: Opened,
    corpus: Corpus,
    request: EvaluationRequest = EvaluationRequest(),
    baseline_report: Report | None = None,
    given: Mapping[str, object] | None = None,
) -> Report:
    """Evaluate ``request``'s runs on ``corpus`` and return the report (see the module docs).

    ``baseline_report``: the baseline in hand (the server's earlier evaluation), named by
    ``request.baseline``; ``given``: what the caller hands a channel, by its name
    (:class:`~ptah.services.channels.Sides`).
    """
    started = time.perf_counter()
    context, plans = plan(project, corpus, request, baseline_report)
    context, measured = measure(context, plans, given or {})
    for section in sections():
        context = context.with_result(section.name, section.compute(context))
    found = [gate for section in sections() for gate in section.gates(context)]
    return report(context, found, measured, plans, time.perf_counter() - started)


def plan(
    project: Opened, corpus: Corpus, request: EvaluationRequest, baseline: Report | None
) -> tuple[Context, list[RunPlan]]:
    """The runs to measure and the context they will be measured in: the baseline read, checked
    and re-scored from its rankings, the corpus's slices, the paths a gate's command names."""
    check_record_run(project.spec, request)  # before the baseline is read
    if baseline is None and request.baseline is not None:
        baseline = load_baseline(request.baseline)
    member: ReportBaseline | None = None
    # the commands a gate's sentence names take the corpus's file, which it may not have
    commands_path = corpus.path if corpus.has_file else None
    paths = Evidence(
        corpus_path=commands_path, baseline_path=request.baseline, spec_path=project.spec_path
    )
    if baseline is not None:
        named = "report" if request.baseline is None else request.baseline  # may be unnamed
        check_comparable(corpus, baseline, named, commands_path, project.spec_path)
        ids = [case.id for case in corpus.cases]
        check_cases(ids, baseline.runs, named, f"the corpus {corpus.path}")
        rescored = rescore(corpus, baseline)  # its values from its rankings, never its numbers
        baseline = rescored.report
        check_measures(baseline, request.max_drop, named)
        member = ReportBaseline(request.baseline, rescored.measured, rescored.entry())
    spec = project.spec
    plans = plan_runs(spec, list(request.generations) or None, request.channels, request.variants)
    slices = corpus_slices(corpus)
    compared = len(plans) if baseline is not None else len(plans) - 1
    check_tests(slices, len(request.all_measures), compared)
    context = Context(project, corpus, request, (), baseline, slices, paths, member)
    return context, plans


@dataclass(frozen=True)
class Measured:
    """What measuring the runs leaves beside them: each run's stages, and the seconds of each
    step."""

    stages: tuple[dict, ...]
    timings: dict[str, float]


def measure(
    context: Context, plans: Sequence[RunPlan], given: Mapping[str, object] | None = None
) -> tuple[Context, Measured]:
    """Each planned run measured by its channel, sharing what runs share (a generation's vectors,
    a template's lexical index), with its stages' cost and its slices' means."""
    sides = Sides(
        context.project,
        context.corpus,
        context.request,
        channels=tuple(dict.fromkeys(plan.channel for plan in plans)),
        given=given or {},
    )
    check_plans(context.project, list(plans), sides)
    runs, stages, timings = [], [], {"total": 0.0}
    for planned in plans:
        run, staged = measure_plan(planned, sides)
        stages.append(staged)
        for step, seconds in sides.take_timings().items():
            timings[step] = timings.get(step, 0.0) + seconds
        if "rerank" in staged:
            timings["rerank"] = timings.get("rerank", 0.0) + staged["rerank"].seconds
        means = slice_means(run, context.slices) if context.slices else None
        runs.append(replace(run, cost=cost(staged, None), slices=means))
    context = replace(context, runs=tuple(runs))
    return context, Measured(tuple(stages), timings)


def report(
    context: Context, found: list[Gate], measured: Measured, plans: Sequence[RunPlan], total: float
) -> Report:
    """The report of the measured runs, their sections' results and gates."""
    project, corpus, results = context.project, context.corpus, context.results
    timings = measured.timings | {"total": total}
    runs = [
        replace(run, cost=cost(staged, total)) for run, staged in zip(context.runs, measured.stages)
    ]
    embedded = [
        project.spec.generation(planned.generation)
        for planned in plans
        if CHANNELS.get(planned.channel).needs_vectors
    ]
    verdicts: Verdicts = results["verdicts"]
    baseline = None
    if context.baseline_member is not None:
        baseline = replace(context.baseline_member, family=verdicts.family)
    return Report(
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        corpus=corpus_member(corpus, context.slices),
        runs=tuple(runs),
        gates=tuple(found),
        timings=read_only(timings),
        environment=read_only(environment(project, embedded)),
        baseline=baseline,
        comparisons=verdicts.comparisons,
        comparison=results["side_by_side"],
        stale_judgements=results["stale"].entries,
        excerpts=results["excerpts"],
        sections=read_only(
            {
                name: result
                for name, result in results.items()
                if name not in OWN_NAMES and result is not None  # None: nothing to report
            }
        ),
    )


def corpus_member(corpus: Corpus, slices: Slices) -> ReportCorpus:
    """The report's ``corpus``: what it is, and its slices."""
    judged = corpus.judgements.digest() if len(corpus.judgements) else None
    return ReportCorpus(
        path=corpus.path,
        name=corpus.name,
        digest=corpus.digest,
        cases=len(corpus.cases),
        judgements=judged,
        slices=listed(slices) if slices else None,
    )


def environment(project: Opened, embedded: Iterable[GenerationSettings] = ()) -> dict:
    """Versions and hardware, read without importing torch, with the libraries of the embedders
    ``embedded`` use: the installed ones where this process loaded the model, else those the store
    recorded when the generation was built (every query vector came from the cache: no model was
    loaded)."""
    from ptah.adapters.embedders.registry import REGISTRY

    libraries: dict = {}
    for settings in embedded:
        if project.loaded(settings):
            libraries |= REGISTRY.versions_of([settings])
            continue
        store = project.store()
        record = (
            None
            if store is None
            else store.generation(project.generation(settings.name).identity.identity)
        )
        libraries |= {
            name: version
            for name, version in (record.library_versions if record else {}).items()
            if name != "ptah"
        }
    return {
        "ptah": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        **libraries,
        "platform": platform.platform(),
        "cpu": _cpu_name(),
        "cpus": os.cpu_count(),
    }


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
