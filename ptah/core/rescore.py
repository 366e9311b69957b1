"""A baseline measured again from its own rankings under the current corpus (docs/holes.md,
"A new baseline after the corpus changed").

A baseline report keeps each case's ranking (its top k), query and depth. A
gate reads the baseline's values from those rankings, never from the numbers
the file holds: :func:`rescore` measures every stored ranking again with the
per-case loop every fresh run uses (:func:`ptah.core.report.measure_case`,
:func:`ptah.core.report.make_run`), under the current corpus and its
judgement record. So a judgement added since (a grade in the corpus, a 0 in
the record) re-scores the baseline instead of breaking it, and a value edited
by hand never reaches a gate.

A baseline is comparable with a corpus of another digest when they differ in
their judgements alone: the same case ids, queries and depths
(:func:`difference` names the first way they differ otherwise).

What the file cannot tell: a fixed-depth measure looking deeper than a case's
k (``MAP@10`` at k 5) needs ranks the report does not keep, so its value is
the stored one raised to the kept top k's value where that is higher (each
registered measure only grows with the rows below k); a missed required key
keeps the rank the file gives it, and a key required since reads "not in the
top k".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from ptah.core.corpus import Case, Corpus, slice_digest
from ptah.core.measures import Measure
from ptah.core.ranking import Ties
from ptah.core.report import CaseResult, Report, Run, make_run, measure_case
from ptah.core.report_parts import Rescoring

NOISE = 1e-12  # a recomputed value this close to the stored one is the same value


@dataclass(frozen=True)
class Rescored:
    """A baseline measured again (:func:`rescore`): the report with its runs re-measured, the digest
    it measured, the judgements added and changed since (over every run's cases), and the cases
    whose values or verdict differ from what the file stored."""

    report: Report
    measured: str
    added: int
    changed: int
    cases_changed: int

    @property
    def judged_since(self) -> bool:
        """Whether the judgements differ from those the baseline measured under: the corpus's digest
        (which then differs in judgements alone), or a judgement of its record that the baseline's
        top k did not have."""
        return self.measured != self.report.corpus.digest or bool(self.added or self.changed)

    def entry(self) -> Rescoring | None:
        """The report's ``baseline.rescored`` member; None when the file's numbers stand as they
        were."""
        if not self.judged_since and not self.cases_changed:
            return None
        return Rescoring(
            judgements_added=self.added,
            judgements_changed=self.changed,
            cases_changed=self.cases_changed,
            judged_since=self.judged_since,
        )


def difference(corpus: Corpus, baseline: Report) -> str | None:
    """How the baseline's cases differ from ``corpus``'s beyond their judgements: the first case
    missing on either side, asking another query or looking to another depth; None when they differ
    in judgements alone."""
    cases = {case.id: case for case in corpus.cases}
    for run in baseline.runs:
        for stored in run.cases:
            case = cases.get(stored.id)
            if case is None:
                return f'its case "{stored.id}" is not in the corpus'
            if stored.query != case.query:
                return f'case "{stored.id}" asks another query now'
            if stored.k != case.k:
                return f'case "{stored.id}" looked {stored.k} deep and looks {case.k} deep now'
        held = {stored.id for stored in run.cases}
        for case_id in cases:
            if case_id not in held:
                return f'case "{case_id}" of the corpus is not in it'
    return None


def rescore(corpus: Corpus, baseline: Report) -> Rescored:
    """``baseline`` with every run re-measured from its stored rankings under ``corpus`` and its
    judgement record (module docs), its corpus member saying ``corpus``'s digest and each slice's
    digest over the same cases now. The baseline holds exactly ``corpus``'s cases
    (:func:`difference` is None)."""
    cases = {case.id: case for case in corpus.cases}
    runs = tuple(rescore_run(cases, run) for run in baseline.runs)
    added: set[tuple[str, str]] = set()
    changed: set[tuple[str, str]] = set()
    for run in baseline.runs:
        for stored in run.cases:
            new, regraded = judgement_changes(cases[stored.id], stored)
            added |= {(stored.id, key) for key in new}
            changed |= {(stored.id, key) for key in regraded}
    differing = sum(
        1
        for before, after in zip(baseline.runs, runs)
        for old, new in zip(before.cases, after.cases)
        if _differs(old, new)
    )
    slices = {
        tag: replace(entry, digest=slice_digest(tag, [cases[case_id] for case_id in entry.cases]))
        if all(case_id in cases for case_id in entry.cases)
        else entry
        for tag, entry in (baseline.corpus.slices or {}).items()
    }
    described = replace(
        baseline.corpus,
        digest=corpus.digest,
        slices=MappingProxyType(slices) if slices else baseline.corpus.slices,
    )
    report = replace(baseline, runs=runs, corpus=described)
    return Rescored(report, baseline.corpus.digest, len(added), len(changed), differing)


def rescore_run(cases: Mapping[str, Case], run: Run) -> Run:
    """``run`` re-measured from its stored rankings: every case by :func:`rescore_case`, its means
    and counts made again; what it describes (generation, search, variant, cost) kept as written."""
    results = [rescore_case(cases[stored.id], stored, run.measures) for stored in run.cases]
    made = make_run(run.generation, run.search, results, run.measures, run.ann)
    return replace(made, variant=run.variant, cost=run.cost, slices=run.slices)


def rescore_case(case: Case, stored: CaseResult, measures: Sequence[Measure]) -> CaseResult:
    """The stored case measured again on its stored ranking under ``case`` (its grades and judged
    keys now): its values, highs, holes, judged@k, misses and hits; ties and the index comparison
    kept as written."""
    ties = Ties(stored.ties.cutoff_score, stored.ties.tied_outside, stored.ties.expected_tied)
    ranked = [(result.key, result.score) for result in stored.ranking]
    result = measure_case(case, ranked, measures=measures, searched=case.k, ties=ties)
    placed = {miss.key: miss for miss in stored.missed}
    values, highs = dict(result.values), dict(result.highs or {})
    if len(ranked) >= case.k:  # the ranking was cut at k: a measure looking deeper lacks its rows
        for m in measures:
            name, before = str(m), stored.values.get(str(m))
            now = values[name]
            if m.depth(case.k) > case.k and before is not None and now is not None:
                values[name] = larger = max(now, before)
                highs[name] = max(highs.get(name) or 0.0, larger)
    return replace(
        result,
        values=MappingProxyType(values),
        highs=MappingProxyType(highs),
        ann=stored.ann,
        missed=tuple(placed.get(miss.key, miss) for miss in result.missed),
    )


def judgement_changes(case: Case, stored: CaseResult) -> tuple[set[str], set[str]]:
    """The keys judged for ``case`` now that the stored case did not judge (as far as it tells: the
    keys it names, and its top k less its holes), and those whose grade or role (required,
    forbidden) changed since. A key the record judges outside the stored top k is left out: no
    number of the baseline depends on it."""
    grades = dict(stored.relevant)
    named = set(grades) | set(stored.required) | set(stored.forbidden)
    known = named | (
        set(stored.keys) - {hole.key for hole in stored.holes}
        if stored.holes is not None
        else set()
    )
    now = case.expected_keys() | (case.judged & set(stored.keys))
    added = set(now - known)
    changed = {
        key
        for key in named
        if (grades.get(key), key in stored.required, key in stored.forbidden)
        != (case.relevant.get(key), key in case.required, key in case.forbidden)
    }
    return added, changed


def _differs(old: CaseResult, new: CaseResult) -> bool:
    """Whether a re-measured case's values or verdict differ from what the file stored."""
    if old.passed != new.passed or set(old.values) != set(new.values):
        return True
    for name, value in new.values.items():
        before = old.values[name]
        if before is None or value is None:
            if (before is None) != (value is None):
                return True
        elif not math.isclose(before, value, abs_tol=NOISE):
            return True
    return False
