"""ptah's own report sections (:mod:`ptah.core.sections`), in the order they compute, and the
context they read.

1. ``evidence`` -- what each run's gates know beyond its rankings: the record's random samples of
   its holes, its model judges, the hole policy and the paths a settling command names;
2. ``verdicts`` -- with a baseline, each run compared with the baseline's reference run (and its
   slices); every run's gates;
3. ``p95`` -- the gate on each run's p95 time per query;
4. ``stale`` -- the judgements made on a row whose text changed since (a gate when asked);
5. ``side_by_side`` -- with two runs or more, each compared with the first;
6. ``excerpts`` -- each ranked key's judging text, cut for the pages (when asked).

Stale judgements: a judged row whose judging text changed since a person judged it.

Each judgement in a corpus's record (:mod:`ptah.core.judged`) carries the
SHA-256 of the row's *judging text* when it was judged
(:meth:`ptah.core.spec.Spec.judging_template`: ``source.judge_text``, else
every column any generation's template uses, labelled). :func:`stale_judgements`
reads the rows those judgements name from the source's snapshot and lists each
judgement whose digest no longer matches -- the row changed, or is gone. Which
generations an evaluation measures does not matter: a person judged the row.

Records written before the judging text pinned what one generation's template
rendered; such a judgement is read as fresh while its digest still matches
that rendering under any declared generation (both forms are read; judging
the row again, or ``ptah corpus pin``, writes the new form).

Only the rows of the table are read, once per template, and only when the
record holds a judgement.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ptah.adapters.sources.base import texts_of
from ptah.core.baseline import Evidence, compare, gates
from ptah.core.compared import Family
from ptah.core.comparison import against_baseline, compare_runs
from ptah.core.identity import text_digest
from ptah.core.judged import JudgementRecord
from ptah.core.plugins import hookimpl
from ptah.core.report import BaselineComparison, Comparison, Gate, excerpt, read_only
from ptah.core.report_parts import ReportBaseline, StaleJudgement
from ptah.core.request import gate_key
from ptah.core.slicing import correct, power_note, slice_comparisons, slice_gates
from ptah.services.project import Project

if TYPE_CHECKING:
    from ptah.core.calibration import ModelJudge
    from ptah.core.corpus import Corpus
    from ptah.core.report import Report, Run
    from ptah.core.request import EvaluationRequest
    from ptah.services.project import Project


Slices = Mapping[str, tuple[str, tuple[str, ...]]]


@dataclass(frozen=True)
class Context:
    """One evaluation's context (:class:`ptah.core.sections.Context`): the corpus, the request,
    the measured runs, the baseline re-scored (None without one), the corpus's slices, the paths
    a gate's settling command names, the project (its rows' texts), and the results so far."""

    project: Project
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
        from ptah.services.variants import p95_gates

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


def stale_judgements(project: Project, record: JudgementRecord) -> list[StaleJudgement]:
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
