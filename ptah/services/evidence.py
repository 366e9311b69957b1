"""What each run's gates know beyond its rankings, and the files a run reads.

* :func:`samples_of` -- the judgement record's random samples of a run's holes, each checked to be
  the draw its seed makes (:func:`check_drawn`);
* :func:`model_judges` -- its model judges and their agreement with a person;
* :func:`holes_lost` -- the baseline's holes a run no longer returns;
* :func:`run_inputs` -- the files a run reads, so that a command can refuse an output naming one
  (:func:`ptah.adapters.files.check_apart`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from ptah.adapters.judgements_yaml import record_path
from ptah.adapters.stores.registry import DEFAULT as SQLITE_STORE
from ptah.adapters.stores.registry import store_kind
from ptah.core.baseline import Evidence
from ptah.core.calibration import Agreement, ModelJudge
from ptah.core.corpus import Corpus
from ptah.core.errors import InputError
from ptah.core.estimate import Rates, Unit, draw, units_of
from ptah.core.judged import JudgementRecord, judged_keys, population_digest
from ptah.core.provenance import text_digest
from ptah.core.report import Run
from ptah.core.spec import Spec, sqlite_database_path
from ptah.services.project import Opened


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
        named = [run for run in runs if run.generation.identity in sample.generations]
        if not named:
            continue
        base = (
            reference
            if reference is not None and reference.generation.identity in sample.generations
            else None
        )
        identities = {run.generation.identity for run in named} | (
            {base.generation.identity} if base is not None else set()
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
    returns: they could hide a regression a gate passing on its mean does not see (DESIGN.md). None
    when the baseline does not list its holes (a ``ptah-report@1``)."""
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


def ranked_texts(project: Opened, runs: Sequence[Run]) -> dict[str, str]:
    """Each ranked key's judging text, read by key."""
    return project.judging_texts({key for run in runs for case in run.cases for key in case.keys})


def run_inputs(
    spec: Spec | None = None,
    corpus: str | os.PathLike | None = None,
    reports: tuple[tuple[str, str | os.PathLike | None], ...] = (),
) -> list[tuple[str, str]]:
    """The files a run reads, as ``(what, path)`` for :func:`~ptah.adapters.files.check_apart`: the specification, its
    SQLite source database and store, the corpus and its judgement record (``NAME.judged.yaml``,
    there or not), and ``reports`` (``(what, path)``: the baseline report, the reports a command
    re-reads; a None path left out)."""
    found: list[tuple[str, str]] = []
    if spec is not None:
        found.append(("the specification", spec.path))
        database = sqlite_database_path(spec.source.database, spec.root)
        if database is not None:
            found.append(("the source database", database))
        if store_kind(spec.store) == SQLITE_STORE:
            found.append(("the store", spec.store))
    if corpus is not None:
        found += [
            ("the corpus", os.fspath(corpus)),
            ("the corpus's judgement record", str(record_path(corpus))),
        ]
    found += [(what, os.fspath(report)) for what, report in reports if report is not None]
    return found
