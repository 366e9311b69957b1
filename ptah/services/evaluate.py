"""The main job: evaluate runs on a corpus, compare them with a baseline, judge the gates.

:func:`evaluate` takes an :class:`~ptah.core.request.EvaluationRequest` and
returns a typed :class:`~ptah.core.report.Report`:

1. the baseline (when asked) is read, bounded, checked against the report
   schema and against itself, and must have measured the same corpus, or one
   that differs in judgements alone (exit 2); its runs are measured again from
   their stored rankings under the corpus now (:mod:`ptah.core.rescore`);
2. the runs are planned -- every channel with every generation, channel-major
   (:mod:`ptah.services.channels`) -- and each is measured by its channel,
   sharing what runs share (a generation's vectors, a template's lexical index);
3. with two runs or more, each is compared with the first (the reference) side
   by side (:mod:`ptah.core.comparison`); with a baseline, each run is compared
   with the baseline's reference run and its drop gates judged
   (:mod:`ptah.core.baseline`);
4. the corpus's judgement record is checked against the rows' text: each
   judgement whose row changed since is listed (:mod:`ptah.services.stale`),
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
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ptah import __version__
from ptah.core.baseline import (
    Evidence,
    check_cases,
    check_comparable,
    check_measures,
    compare,
    gates,
)
from ptah.core.calibration import Agreement, ModelJudge
from ptah.core.comparison import against_baseline, compare_runs
from ptah.core.corpus import Corpus
from ptah.core.errors import InputError, ReportError
from ptah.core.estimate import Rates, Unit, draw, units_of
from ptah.core.identity import text_digest
from ptah.core.judged import JudgementRecord, judged_keys, population_digest
from ptah.core.report import BaselineComparison, Comparison, Gate, Report, Run, excerpt, read_only
from ptah.core.report_checks import check_consistency
from ptah.core.request import EvaluationRequest, gate_key
from ptah.core.rescore import rescore
from ptah.core.slicing import (
    check_tests,
    corpus_slices,
    correct,
    listed,
    power_note,
    slice_comparisons,
    slice_gates,
    slice_means,
)
from ptah.core.spec import GenerationSettings
from ptah.services.channels import Sides, channel, plan_runs
from ptah.services.corpora import registered_label
from ptah.services.project import Project
from ptah.services.stale import stale_judgements
from ptah.services.variants import check_plans, cost, measure_plan, p95_gates

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
    project: Project,
    corpus: Corpus,
    request: EvaluationRequest = EvaluationRequest(),
    baseline_report: Report | None = None,
) -> Report:
    """Evaluate ``request``'s runs on ``corpus`` and return the report (see the module docs).

    ``baseline_report``: the baseline in hand (the server's earlier evaluation), named by
    ``request.baseline``.
    """
    started = time.perf_counter()
    baseline = baseline_report
    if baseline is None and request.baseline is not None:
        baseline = load_baseline(request.baseline)
    # the commands a gate's sentence names take the corpus's file; a corpus the server registered
    # has none
    commands_path = (
        None if corpus.path == registered_label(corpus.name, corpus.digest) else corpus.path
    )
    paths = Evidence(
        corpus_path=commands_path, baseline_path=request.baseline, spec_path=project.spec_path
    )
    side_paths = replace(
        paths, baseline_path=None
    )  # a side-by-side finding draws from the runs compared
    rescored = None
    if baseline is not None:
        named = (
            "report" if request.baseline is None else request.baseline
        )  # a report in hand may be unnamed
        check_comparable(corpus, baseline, named, commands_path, project.spec_path)
        check_cases(
            [case.id for case in corpus.cases], baseline.runs, named, f"the corpus {corpus.path}"
        )
        rescored = rescore(
            corpus, baseline
        )  # its values from its rankings, never from the file's numbers
        baseline = rescored.report
        check_measures(baseline, request.max_drop, named)
    plans = plan_runs(
        project.spec, list(request.generations) or None, request.channels, request.variants
    )
    slices = corpus_slices(corpus)
    check_tests(
        slices, len(request.all_measures), len(plans) if baseline is not None else len(plans) - 1
    )
    sides = Sides(
        project, corpus, request, channels=tuple(dict.fromkeys(plan.channel for plan in plans))
    )
    check_plans(project, plans, sides)
    runs, stages, timings = [], [], {"total": 0.0}
    for plan in plans:
        run, staged = measure_plan(plan, sides)
        runs.append(run)
        stages.append(staged)
        for step, seconds in sides.take_timings().items():
            timings[step] = timings.get(step, 0.0) + seconds
        if "rerank" in staged:
            timings["rerank"] = timings.get("rerank", 0.0) + staged["rerank"].seconds
    runs = [
        replace(
            run,
            cost=read_only(cost(staged, None)),
            slices=read_only(slice_means(run, slices)) if slices else None,
        )
        for run, staged in zip(runs, stages)
    ]
    whole = {key: value for key, value in request.max_drop.items() if gate_key(key)[1] is None}
    comparisons, family = [], None
    if baseline is not None:
        first = baseline.runs[0]
        theirs = baseline.corpus.get("slices") or {}
        compared = [
            compare(run, first)
            | {
                "against": run.name,
                "significance": against_baseline(first, run, request.statistics, paths),
                "baseline_holes_lost": holes_lost(corpus, first, run),
            }
            | (
                {"slices": slice_comparisons(first, run, slices, request.statistics, theirs, paths)}
                if slices
                else {}
            )
            for run in runs
        ]
        if slices:
            family = correct(
                [entry["slices"] for entry in compared],
                request.correction,
                request.statistics.alpha,
            )
        comparisons = [BaselineComparison(read_only(entry)) for entry in compared]
    reference: Run | None = baseline.runs[0] if baseline is not None else None
    evidence = samples_of(corpus.judgements, runs, reference)
    # one read of the ranked rows' judging text serves the page's excerpts and the model judges'
    # freshness
    texts = ranked_texts(project, runs) if request.excerpts or corpus.judgements.models else {}
    judges = model_judges(corpus.judgements, runs, evidence, request.min_kappa, texts)
    verdicts = []
    for index, run in enumerate(runs):
        known = replace(
            evidence[run.name],
            policy=request.holes,
            judges=tuple(judges.get(run.name, ())),
            corpus_path=paths.corpus_path,
            baseline_path=paths.baseline_path,
            spec_path=paths.spec_path,
        )
        found = gates(
            run, comparisons[index].data if baseline is not None else None, whole, known, reference
        )
        if baseline is not None:
            assert reference is not None
            found += slice_gates(
                run,
                reference,
                {key: value for key, value in request.max_drop.items() if key not in whole},
                slices,
                baseline.corpus.get("slices") or {},
                named,
                known,
            )
            found = [
                power_note(gate, run, reference, slices, request.statistics.alpha) for gate in found
            ]
        verdicts += found
    verdicts += p95_gates(runs, request.max_p95_ms)
    stale = stale_judgements(project, corpus.judgements)
    if request.fail_on_stale_judgements:
        verdicts.append(
            Gate(
                "stale-judgements",
                None,
                not stale,
                f"{len(stale)} of {len(corpus.judgements)} judgements were made on a row whose text changed since",
            )
        )
    side_by_side = compare_runs(runs, request.statistics, side_paths)
    if side_by_side is not None and slices:
        for entry, run in zip(side_by_side["candidates"], runs[1:]):
            entry["slices"] = slice_comparisons(
                runs[0], run, slices, request.statistics, paths=side_paths
            )
        side_by_side["family"] = correct(
            [entry["slices"] for entry in side_by_side["candidates"]],
            request.correction,
            request.statistics.alpha,
        )
    timings["total"] = time.perf_counter() - started
    runs = [
        replace(run, cost=read_only(cost(staged, timings["total"])))
        for run, staged in zip(runs, stages)
    ]
    embedded = [
        project.spec.generation(plan.generation)
        for plan in plans
        if channel(plan.channel).needs_vectors
    ]
    return Report(
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        corpus=read_only(
            {
                "path": corpus.path,
                "name": corpus.name,
                "digest": corpus.digest,
                "cases": len(corpus.cases),
                "judgements": corpus.judgements.digest() if len(corpus.judgements) else None,
            }
            | ({"slices": listed(slices)} if slices else {})
        ),
        runs=tuple(runs),
        gates=tuple(verdicts),
        timings=read_only(timings),
        environment=read_only(environment(project, embedded)),
        baseline=None
        if rescored is None
        else read_only(
            {"path": request.baseline, "digest": rescored.measured}
            | ({"rescored": entry} if (entry := rescored.entry()) else {})
            | ({"family": family} if family else {})
        ),
        comparisons=tuple(comparisons),
        comparison=None if side_by_side is None else Comparison(read_only(side_by_side)),
        stale_judgements=tuple(read_only(entry) for entry in stale),
        excerpts=read_only({key: excerpt(text) for key, text in texts.items()})
        if request.excerpts
        else None,
    )


def ranked_texts(project: Project, runs: Sequence[Run]) -> dict[str, str]:
    """Each ranked key's judging text, read by key."""
    return project.judging_texts({key for run in runs for case in run.cases for key in case.keys})


def environment(project: Project, embedded: Iterable[GenerationSettings] = ()) -> dict:
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


def samples_of(
    record: JudgementRecord, runs: Sequence[Run], reference: Run | None = None
) -> dict[str, Evidence]:
    """For each run, what the record's random samples of holes say (:class:`Evidence`'s rates,
    latest, seed and ignored): every sample naming its generation that was drawn from exactly the
    holes its runs have now (with those judged since the draw) and whose seed draws exactly the keys
    it claims; the reason for each other.

    Exit 2 (:class:`InputError`) when a sample's seed over its population does not draw the keys the
    record says it drew: a recorded sample that is not the random one cannot bound anything."""
    found: dict[str, dict] = {
        run.name: {
            "judged": {},
            "relevant": {},
            "observed": [],
            "latest": None,
            "seed": None,
            "index": None,
            "samples": 0,
            "ignored": [],
        }
        for run in runs
    }
    for index in reversed(range(len(record.samples))):
        sample = record.samples[index]
        named = [run for run in runs if run.generation.get("identity") in sample.generations]
        if not named:
            continue
        base = (
            reference
            if reference is not None and reference.generation.get("identity") in sample.generations
            else None
        )
        identities = {run.generation.get("identity") for run in named} | (
            {base.generation.get("identity")} if base is not None else set()
        )
        judged = record.sampled(index)
        since = {
            (case.id, key)
            for run in (*named, *([base] if base else []))
            for case in run.cases
            for key in case.keys[: case.k]
            if (made := record.cases.get(case.id, {}).get(key))
            and made.judged_at >= sample.drawn_at
            and (made.sample is None or made.sample >= index)
        }  # an earlier sample's were judged before
        units = units_of(base, named, since)
        why = None
        if identities != set(sample.generations):
            why = (
                f"sample {index} (seed {sample.seed}) was drawn from the holes of {len(sample.generations)} runs; "
                "evaluate them together (with its baseline) to use it"
            )
        elif population_digest(units) != sample.population:
            why = (
                f"sample {index} (seed {sample.seed}) was drawn from other holes than these runs have now (the "
                "corpus, its record or the rankings changed since); draw a new one"
            )
        if why is not None:
            for run in named:
                found[run.name]["ignored"].append(why)
            continue
        check_drawn(record, index, units)
        for run in named:
            mine = units_of(reference, [run], since) if reference is not None else units
            entry = found[run.name]
            entry["samples"] += 1
            for case_id, key, judgement in judged:
                unit = mine.get((case_id, key))
                if unit is not None:
                    entry["judged"][unit.stratum] = entry["judged"].get(unit.stratum, 0) + 1
                    entry["relevant"][unit.stratum] = entry["relevant"].get(unit.stratum, 0) + (
                        judgement.grade > 0
                    )
                    entry["observed"].append(
                        (unit.stratum.split("/")[0], unit.rank, judgement.grade > 0)
                    )
            if entry["latest"] is None:
                strata: dict[str, list[int]] = {}
                drawn = {(case_id, key): judgement.grade for case_id, key, judgement in judged}
                for pair, (name, *_) in units.items():
                    counts = strata.setdefault(name, [0, 0, 0])
                    counts[0] += 1
                    counts[1] += pair in drawn
                    counts[2] += drawn.get(pair, 0) > 0
                entry["latest"] = {
                    name: (counts[0], counts[1], counts[2]) for name, counts in strata.items()
                }
                entry["seed"], entry["index"] = sample.seed, index
    return {
        name: Evidence(
            rates=Rates(entry["judged"], entry["relevant"], tuple(entry["observed"])),
            latest=entry["latest"],
            seed=entry["seed"],
            index=entry["index"],
            samples=entry["samples"],
            ignored=tuple(entry["ignored"]),
        )
        for name, entry in found.items()
    }


def check_drawn(record: JudgementRecord, index: int, units: Mapping[tuple[str, str], Unit]) -> None:
    """Refuse (exit 2) a recorded sample whose seed over its population does not draw every key it
    claims."""
    sample = record.samples[index]
    if sample.drawn > len(units):
        raise InputError(
            f"the judgement record's sample {index} (seed {sample.seed}) says it drew {sample.drawn:,} "
            f"holes from a population of {len(units):,}; a sample is never larger than its population"
        )
    drawn = set(draw(units, sample.drawn, sample.seed))
    claimed = [
        (case_id, key) for case_id, key, _ in record.sampled(index) if (case_id, key) not in drawn
    ]
    if claimed:
        case_id, key = claimed[0]
        raise InputError(
            f"the judgement record's sample {index} (seed {sample.seed}) claims case {case_id!r} key "
            f"{key!r}, which its seed does not draw from its population ({len(claimed):,} such keys); "
            "a sample's keys are the ones ptah drew: remove its sample tags or draw a new sample"
        )


def model_judges(
    record: JudgementRecord,
    runs: Sequence[Run],
    sampled: Mapping[str, Evidence],
    min_kappa: float,
    texts: Mapping[str, str],
) -> dict[str, list[ModelJudge]]:
    """For each run, every model judge of the record that graded its holes or the sample its U uses:
    the grades of its holes pinned to each row's judging text as it is now (``texts``: ranked key ->
    judging text), and its agreement with the person on that sample (pairs where both saw the same
    text) -- :mod:`ptah.core.calibration`."""
    if not record.models:
        return {}
    wanted = {hole.key for run in runs for case in run.cases for hole in case.holes or ()}
    now = {key: text_digest(texts[key]) for key in wanted if key in texts}
    found: dict[str, list[ModelJudge]] = {}
    for run in runs:
        holes = [(case.id, hole.key) for case in run.cases for hole in case.holes or ()]
        sample = sampled.get(run.name)
        for by, cases in sorted(record.models.items()):
            grades = {
                (case_id, key): judgement.grade
                for case_id, key in holes
                if (judgement := cases.get(case_id, {}).get(key))
                and judgement.text_sha256 == now.get(key)
            }
            why: str | None
            if sample is None or sample.index is None:  # no valid random sample of the run's holes
                agreement, why = (
                    Agreement(0, 0, 0, 0),
                    "no random sample of the holes judged by a person to check it on",
                )
            else:
                agreement = Agreement.of(
                    (person.grade, model.grade)
                    for case_id, key, person in record.sampled(sample.index)
                    if (model := cases.get(case_id, {}).get(key))
                    and model.text_sha256 == person.text_sha256
                )
                why = agreement.trusted(min_kappa)
            if grades or agreement.n:
                found.setdefault(run.name, []).append(
                    ModelJudge(by, agreement, grades, why, record.usage.get(by))
                )
    return found


def holes_lost(corpus: Corpus, reference: Run, run: Run) -> int | None:
    """The rows in the baseline's top k that nobody has judged and the current run no longer
    returns: they could hide a regression a gate passing on its mean does not see
    (docs/holes.md). None when the baseline does not list its holes (a ``ptah-report@1``)."""
    if any(case.holes is None for case in reference.cases):
        return None
    cases = {case.id: case for case in corpus.cases}
    now = {case.id: set(case.keys) for case in run.cases}
    return sum(
        1
        for before in reference.cases
        for hole in before.holes or ()
        if before.id in cases
        and hole.key not in judged_keys(cases[before.id])
        and hole.key not in now.get(before.id, set())
    )
