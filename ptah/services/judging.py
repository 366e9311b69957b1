"""Filling the holes: the pooled worklist, judgements written into the corpus and its record, pins.

* :func:`make_worklist` -- the runs asked for are evaluated as ``evaluate`` would (a warm query
  cache is used), and each case's holes pooled (:mod:`ptah.core.worklist`) with their judging text;
* :func:`save_judgements` -- grades above 0, required and forbidden keys go into the corpus (edited
  in place, :mod:`ptah.adapters.corpus_edit`), every judgement into the record beside it
  (:mod:`ptah.adapters.judgements_yaml`) with the SHA-256 of the row's text and the UTC time;
* :func:`judge_key` -- one judgement from a script: the case must be in the corpus and the key a
  row of the source (exit 2 otherwise);
* :func:`candidates` -- the pooled top rows of a query not in the corpus yet (``ptah corpus add``);
* :func:`pin` -- every key the corpus names recorded with its text digest and corpus grade, so
  ``evaluate`` can say when a judged row changed.

A row's text is its *judging text* (:meth:`ptah.core.spec.Spec.judging_template`:
``source.judge_text``, else every column any generation's template uses, labelled), never one
generation's rendering, so a judgement stays fresh whichever generation is evaluated.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import time
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from ptah.adapters.corpus_edit import CorpusDocument
from ptah.adapters.corpus_yaml import load_corpus
from ptah.adapters.files import read_bounded
from ptah.adapters.judgements_yaml import TIME_FORMAT, read_record, record_path, write_record
from ptah.core.baseline import check_cases, check_comparable, rescore
from ptah.core.corpus import FORBIDDEN, MAX_GRADE, Case, Corpus
from ptah.core.errors import InputError, OperationalError, UnknownKey
from ptah.core.estimate import Unit, draw, units_of
from ptah.core.judged import Judgement, JudgementRecord, Sample, judged_keys, population_digest
from ptah.core.provenance import text_digest
from ptah.core.request import LEXICAL, VECTOR, EvaluationRequest
from ptah.core.spec import template_columns
from ptah.core.visible import abbreviated
from ptah.core.worklist import TEXT_CHARS, Hole, WorkCase, Worklist, judged_summary, pooled_holes
from ptah.services.evaluate import evaluate, load_baseline
from ptah.services.project import Opened

__all__ = [
    "RunsAsked",
    "Saved",
    "Verdict",
    "candidates",
    "draw_sample",
    "judge_key",
    "make_worklist",
    "pin",
    "read_worklist",
    "save_judgements",
    "still_unjudged",
]

MAX_WORKLIST_BYTES = 256 * 1024 * 1024
SAVE_WAIT_S = 60.0  # how long a save waits for another process saving to the same corpus folder


@dataclass(frozen=True)
class Verdict:
    """One judgement made: ``grade`` (0: not relevant), ``mark`` REQUIRED, FORBIDDEN or None, and
    the SHA-256 of the row text the person read."""

    case: str
    key: str
    grade: float
    mark: str | None
    text_sha256: str


@dataclass(frozen=True)
class Saved:
    """What a save wrote: the corpus digest before and after, the lines it added and changed, the
    record."""

    before: str
    after: str
    lines_added: int
    lines_changed: int
    record: str
    judgements: int


def now() -> str:
    return datetime.now(UTC).strftime(TIME_FORMAT)


def _known_texts(project: Opened, keys: AbstractSet[str], where: str) -> dict[str, str]:
    """The judging text of each of ``keys``; :class:`UnknownKey` (exit 2) when one is no row of the
    source."""
    texts = project.judging_texts(keys)
    unknown = sorted(keys - set(texts))
    if not unknown:
        return texts
    status = project.source.lookup(unknown)
    said = [
        f"key {key!r} is a row the filter excludes"
        if status.get(key) == "filtered"
        else f"key {key!r} is not in table {project.spec.source.table}"
        for key in unknown[:10]
    ]
    more = f" (and {len(unknown) - 10} more)" if len(unknown) > 10 else ""
    raise UnknownKey(f"{where}: " + "; ".join(said) + more + "; judge rows of the source only")


def make_worklist(
    project: Opened,
    corpus_path: str | os.PathLike,
    generations: Sequence[str] = (),
    channels: Sequence[str] = (VECTOR,),
    baseline: str | os.PathLike | None = None,
    variants: Sequence[str] = (),
) -> Worklist:
    """The pooled holes of the runs ``generations`` x ``channels`` on the corpus (see the module
    docs); with ``baseline`` (a report of this corpus), also the rows in its reference run's top k
    that nobody judged -- those the current runs no longer return could hide a regression (the
    report's baseline holes lost)."""
    return _worklist(project, corpus_path, generations, channels, baseline, variants)[0]


def _worklist(
    project: Opened,
    corpus_path: str | os.PathLike,
    generations: Sequence[str],
    channels: Sequence[str],
    baseline: str | os.PathLike | None = None,
    variants: Sequence[str] = (),
) -> tuple[Worklist, tuple[str, ...], dict[tuple[str, str], Unit]]:
    """The worklist, the identities of its runs (the baseline's reference run's too) and the strata
    of its holes (:func:`ptah.core.estimate.units_of`; ``variants``: the spec's variants, as runs of
    their own)."""
    corpus = load_corpus(corpus_path)
    record = read_record(corpus_path)
    report = evaluate(
        project,
        corpus,
        EvaluationRequest(
            generations=tuple(generations), channels=tuple(channels), variants=tuple(variants)
        ),
    )
    runs = _rankings(report)
    gone_allowed: set[str] = set()
    before = None
    if baseline is not None:
        reference = load_baseline(baseline)
        check_comparable(corpus, reference, str(baseline), str(corpus_path))
        check_cases(
            [case.id for case in corpus.cases],
            reference.runs[:1],
            str(baseline),
            f"the corpus {corpus_path}",
        )
        before = rescore(corpus, reference).report.runs[0]  # its holes under the judgements now
        runs.append(
            (f"baseline {before.name}", {case.id: list(case.keys) for case in before.cases})
        )
        current = {key for _, rankings in runs[:-1] for keys in rankings.values() for key in keys}
        gone_allowed = {key for case in before.cases for key in case.keys} - current
    pooled = pooled_holes(corpus, record, runs)
    spec = project.spec  # the worklist's text_of says what the judging text is
    text_of = (
        "source.judge_text"
        if spec.source.judge_text is not None
        else "columns " + ", ".join(template_columns(spec.judging_template()))
    )
    texts = _hole_texts(project, {key for _, found in pooled for key, _ in found}, gone_allowed)
    pooled = [
        (case_id, [(key, ranks) for key, ranks in found if key in texts])
        for case_id, found in pooled
    ]
    pooled = [
        (case_id, found) for case_id, found in pooled if found
    ]  # a baseline's row gone from the table
    cases = tuple(
        WorkCase(
            case_id,
            corpus.case(case_id).query,
            corpus.case(case_id).k,
            _holes(found, texts),
            judged_summary(corpus.case(case_id), record),
        )
        for case_id, found in pooled
    )
    worklist = Worklist(
        {"path": str(corpus_path), "digest": corpus.digest},
        {"path": str(record_path(corpus_path)), "digest": record.digest()},
        tuple(name for name, _ in runs),
        text_of,
        cases,
    )
    identities = [run.generation.identity for run in report.runs]
    if before is not None:
        identities.append(before.generation.identity)
    return worklist, tuple(dict.fromkeys(identities)), units_of(before, report.runs)


@dataclass(frozen=True)
class RunsAsked:
    """Which runs a sample is drawn from: generations, channels and variants as ``evaluate`` takes
    them, and the baseline whose reference run's holes join theirs."""

    generations: Sequence[str] = ()
    channels: Sequence[str] = (VECTOR,)
    variants: Sequence[str] = ()
    baseline: str | os.PathLike | None = None


def draw_sample(
    project: Opened,
    corpus_path: str | os.PathLike,
    size: int,
    seed: int,
    runs: RunsAsked = RunsAsked(),
) -> tuple[list[tuple[WorkCase, Hole]], Sample]:
    """``size`` holes of the runs and of the baseline's reference run, drawn at random within the
    strata of the side each favours and the gain it can make (:func:`ptah.core.estimate.draw`,
    reproducible from ``seed``), in a shuffled order (judging a first part of it judges a smaller
    stratified sample), and the :class:`Sample` to record."""
    worklist, identities, units = _worklist(
        project, corpus_path, runs.generations, runs.channels, runs.baseline, runs.variants
    )
    holes = {(case.id, hole.key): (case, hole) for case in worklist.cases for hole in case.holes}
    units = {pair: found for pair, found in units.items() if pair in holes}
    drawn = draw(units, size, seed)
    sample = Sample(seed, population_digest(units), len(drawn), identities, now())
    return [holes[pair] for pair in drawn], sample


def _rankings(report) -> list[tuple[str, dict[str, list[str]]]]:
    """Each run's name with each case's ranked keys, as :func:`ptah.core.worklist.pooled_holes`
    takes them."""
    return [
        (run.generation.name, {case.id: case.keys for case in run.cases}) for run in report.runs
    ]


def _holes(found: list[tuple[str, dict[str, int]]], texts: dict[str, str]) -> tuple[Hole, ...]:
    """The pooled holes of one case with their text (cut to show) and the whole text's SHA-256."""
    return tuple(
        Hole(key, ranks, abbreviated(texts[key], TEXT_CHARS), text_digest(texts[key]))
        for key, ranks in found
    )


def _hole_texts(
    project: Opened, keys: set[str], gone_allowed: AbstractSet[str] = frozenset()
) -> dict[str, str]:
    """The judging text of each ranked key; exit 3 when a row the runs ranked has left the source (a
    row only a baseline ranked, ``gone_allowed``, is left out instead)."""
    texts = project.judging_texts(keys)
    gone = sorted(keys - set(texts) - gone_allowed)
    if gone:
        raise OperationalError(
            f"the rows {', '.join(repr(k) for k in gone[:5])} were ranked but are no longer in "
            "the source; build the generation again, then list the holes"
        )
    return texts


def candidates(
    project: Opened,
    corpus_path: str | os.PathLike,
    case_id: str,
    query: str,
    k: int | None,
    generation: str | None = None,
    channels: Sequence[str] = (VECTOR, LEXICAL),
) -> WorkCase:
    """The pooled top rows of ``query`` in the runs ``generation`` x ``channels``, to judge for a
    new case."""
    corpus = load_corpus(corpus_path)
    if case_id in {case.id for case in corpus.cases}:
        raise InputError(
            f'{corpus_path}: case "{case_id}" exists already; choose another id or judge it with '
            "`ptah corpus judge`"
        )
    if not query.strip():
        raise InputError(lambda words: f"{words.option('query')}: give the text to search with")
    depth = k or corpus.default_k or 10
    probe = Corpus(cases=(Case(id=case_id, query=query, k=depth),), path=str(corpus_path))
    generations = () if generation is None else (generation,)
    report = evaluate(
        project, probe, EvaluationRequest(generations=generations, channels=tuple(channels))
    )
    pooled = pooled_holes(probe, JudgementRecord.empty(), _rankings(report))
    found = pooled[0][1] if pooled else []
    texts = _hole_texts(project, {key for key, _ in found})
    return WorkCase(case_id, query, depth, _holes(found, texts))


def read_worklist(path: str | os.PathLike) -> Worklist:
    """A worklist written by ``ptah corpus holes --output`` (bounded; exit 2 when it is not one)."""
    try:
        data = json.loads(
            read_bounded(path, limit=MAX_WORKLIST_BYTES, what="worklist").decode("utf-8")
        )
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(
            f"{path}: not a ptah worklist: {exc}; write one with `ptah corpus holes CORPUS --output FILE`"
        ) from None
    return Worklist.from_dict(data, str(path))


def still_unjudged(
    corpus_path: str | os.PathLike, worklist: Worklist
) -> list[tuple[WorkCase, Hole]]:
    """The worklist's rows that neither the corpus nor its record judges now (a resumed session asks
    only these); cases no longer in the corpus are left out."""
    corpus = load_corpus(corpus_path)
    record = read_record(corpus_path)
    cases = {case.id: case for case in corpus.cases}
    return [
        (listed, hole)
        for listed in worklist.cases
        if listed.id in cases
        for hole in listed.holes
        if hole.key not in judged_keys(cases[listed.id], record)
    ]


@contextlib.contextmanager
def saving(corpus_path: str | os.PathLike):
    """Hold the corpus's folder for one read-modify-write of the corpus and its record.

    Two judges saving at once would each read the record, add their own
    judgements and replace it, and the later would drop the earlier's: the
    save takes an exclusive ``flock`` on the folder (released when the
    process ends, however it ends) and waits up to :data:`SAVE_WAIT_S` for
    another save to finish, then exit 3.
    """
    try:
        import fcntl
    except ImportError:  # no flock on this platform: saves are not serialised
        yield
        return
    folder = os.path.dirname(os.path.abspath(corpus_path))
    fd = os.open(folder, os.O_RDONLY)
    try:
        deadline = time.monotonic() + SAVE_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise OperationalError(
                        f"{corpus_path}: another process has been saving judgements in its "
                        f"folder for {SAVE_WAIT_S:.0f} s; nothing was written, try again"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock


def save_judgements(
    corpus_path: str | os.PathLike,
    verdicts: Sequence[Verdict],
    new_case: tuple[str, str, int | None] | None = None,
    sample: Sample | None = None,
) -> Saved:
    """Write ``verdicts`` into the corpus and its record (module docs); ``new_case`` ``(id, query,
    k)`` is appended with them. The record is read (and so checked) before the corpus is written;
    the corpus is written first, so a record that cannot be written loses no grade. Saves to one
    corpus folder take turns (:func:`saving`), so judges running at once lose nothing. With
    ``sample``, the verdicts are its draws: it is added to the record's samples and each judgement
    names it."""
    with saving(corpus_path):
        record = read_record(corpus_path)
        document = CorpusDocument.open(corpus_path)
        before = document.corpus.digest
        if new_case is not None:
            case_id, query, k = new_case
            document.append_case(case_id, query, k, [(v.key, v.grade, v.mark) for v in verdicts])
            grades = [(v, v.grade if v.mark != FORBIDDEN else 0.0) for v in verdicts]
        else:
            grades = [(v, document.judge(v.case, v.key, v.grade, v.mark)) for v in verdicts]
        corpus = document.save()
        cases = {case_id: dict(keys) for case_id, keys in record.cases.items()}
        when = now()
        index = None if sample is None else len(record.samples)
        for verdict, grade in grades:
            cases.setdefault(verdict.case, {})[verdict.key] = Judgement(
                grade, verdict.text_sha256, when, index
            )
        samples = record.samples if sample is None else (*record.samples, sample)
        updated = replace(
            record, corpus=corpus.digest, cases=cases, samples=samples
        )  # models and usage kept
        path = write_record(corpus_path, updated)
        return Saved(
            before,
            corpus.digest,
            document.lines_added,
            document.lines_changed,
            str(path),
            len(updated),
        )


def judge_key(
    project: Opened,
    corpus_path: str | os.PathLike,
    case_id: str,
    key: str,
    grade: float,
    mark: str | None = None,
) -> Saved:
    """One judgement from a script: exit 2 for a case not in the corpus or a key that is no row."""
    corpus = load_corpus(corpus_path)
    if case_id not in {case.id for case in corpus.cases}:
        raise InputError(
            f'{corpus_path}: no case "{case_id}" in the corpus; a judgement names a case of the corpus '
            "(`ptah corpus add` appends a new one)"
        )
    texts = _known_texts(project, {key}, f'{corpus_path}: case "{case_id}"')
    return save_judgements(
        corpus_path, [Verdict(case_id, key, grade, mark, text_digest(texts[key]))]
    )


def pin(project: Opened, corpus_path: str | os.PathLike) -> tuple[int, str]:
    """Record every key the corpus names with its corpus grade (a forbidden key 0, a required key
    without a grade 1) and its row's current text digest; returns how many and the record's path."""
    with saving(corpus_path):
        corpus = load_corpus(corpus_path)
        record = read_record(corpus_path)
        keys = corpus.expected_keys()
        texts = _known_texts(project, keys, str(corpus_path))
        cases = {case_id: dict(judged) for case_id, judged in record.cases.items()}
        when = now()
        pinned = 0
        for case in corpus.cases:
            for key in sorted(case.expected_keys()):
                grade = case.relevant.get(key, 1.0 if key in case.required else 0.0)
                drawn = cases.get(case.id, {}).get(key)  # a key a sample drew stays that sample's
                cases.setdefault(case.id, {})[key] = Judgement(
                    float(grade), text_digest(texts[key]), when, drawn.sample if drawn else None
                )
                pinned += 1
        path = write_record(corpus_path, replace(record, corpus=corpus.digest, cases=cases))
        return pinned, str(path)


MAX_GRADES_BYTES = 16 * 1024 * 1024
_GRADE = re.compile(
    r" *(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)? *"
)  # float() alone reads 1_0 as 10


def off_scale(grade: float, scale: Sequence[float], new_grade: bool) -> str | None:
    """Why a grade above 0 the corpus does not use is refused (unless ``new_grade``): a judged 2
    beside an author's 1s would outrank their required keys; None when it is fine."""
    if grade > 0 and grade not in scale and not new_grade:
        return (
            f"grade {grade:g} is not on the corpus's scale ({', '.join(f'{g:g}' for g in scale)}); use one of "
            "those, or pass --new-grade to add it"
        )
    return None


def verdicts_from_file(
    path: str | os.PathLike,
    items: Sequence[tuple[WorkCase, Hole]],
    scale: Sequence[float],
    new_grade: bool = False,
) -> list[Verdict]:
    """Judgements of drawn ``items`` from a file of lines ``KEY<TAB>GRADE`` (every drawn hole of
    that key) or ``CASE<TAB>KEY<TAB>GRADE``; blank lines and lines starting with ``#`` are skipped,
    and so is a UTF-8 byte order mark before the first line. Lines for rows the sample did not draw
    are not used; drawn holes the file does not grade stay unjudged. A grade is a plain decimal
    number in ASCII digits (``1_0`` is not 10), on the corpus's ``scale`` (:func:`off_scale`); the
    same key given two different grades is refused naming both lines. Exit 2 naming the line
    otherwise."""
    try:
        text = read_bounded(path, limit=MAX_GRADES_BYTES, what="grades file").decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text: {exc}") from None
    given: dict[
        tuple[str, ...], tuple[float, int]
    ] = {}  # by (key,) or (case, key): the grade and its line
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        grade = float(fields[-1]) if _GRADE.fullmatch(fields[-1]) else math.nan
        if len(fields) not in (2, 3) or not math.isfinite(grade) or not 0 <= grade <= MAX_GRADE:
            raise InputError(
                f"{path}:{number}: write KEY<TAB>GRADE or CASE<TAB>KEY<TAB>GRADE with a grade from 0 to "
                f"{MAX_GRADE:,}, not {abbreviated(line, 80)!r}"
            )
        if problem := off_scale(grade, scale, new_grade):
            raise InputError(f"{path}:{number}: {problem}")
        named = tuple(fields[:-1])
        earlier, before = given.setdefault(named, (grade, number))
        if earlier != grade:
            shown = abbreviated("\t".join(named), 80)
            raise InputError(
                f"{path}:{number}: {shown!r} is graded {grade:g} here and {earlier:g} on line {before}; "
                "keep one of the two lines"
            )
    verdicts = []
    for case, hole in items:
        graded, _ = given.get((case.id, hole.key), given.get((hole.key,), (None, 0)))
        if graded is not None:
            verdicts.append(Verdict(case.id, hole.key, graded, None, hole.text_sha256))
    return verdicts
