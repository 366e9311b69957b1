"""``ptah corpus judge-model CORPUS NAME``: a model judge grades the holes (docs/judges.md).

The pairs it grades: every hole of the runs asked for (the pooled worklist of
:mod:`ptah.services.judging`) and every key a person judged from a random
sample of holes (what calibrates the judge), each as (the case's query, the
row's whole judging text). A pair the judge already graded on the same text is
not asked again. The grades go into the judgement record's ``models:`` section
under ``model:NAME@IDENTITY`` -- never into the corpus, never as a person's
judgement -- pinned to the SHA-256 of the text the model saw; refused answers
are counted by reason, never recorded. The record is written every
:data:`CHUNK` pairs (atomically, under the save lock judges share), so an
interruption or a failing service keeps what was graded and a second run asks
only the rest. At most the judge's ``max_requests`` pairs are asked an
invocation.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ptah.adapters.judgements_yaml import read_record, record_path, write_record
from ptah.core.errors import InputError
from ptah.core.judged import Judgement
from ptah.core.provenance import text_digest
from ptah.core.request import VECTOR
from ptah.services.judging import make_worklist, now, saving
from ptah.services.project import Opened

CHUNK = 50


@dataclass
class ModelJudged:
    """What one invocation did: the judge's ``by``, the pairs there were, those graded before on the
    same text (kept), graded now, refused (by reason), left for another invocation (the spend cap),
    and the usage."""

    by: str
    pairs: int
    kept: int = 0
    graded: int = 0
    relevant: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    left: int = 0
    usage: dict = field(default_factory=dict)
    record: str = ""


def judge_with_model(
    project: Opened,
    corpus_path: str | os.PathLike,
    name: str,
    generations: Sequence[str] = (),
    channels: Sequence[str] = (VECTOR,),
    variants: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> ModelJudged:
    """Grade the holes of the runs with the spec's judge ``name`` (module docs); exit 2 for an
    undeclared judge."""
    from ptah.adapters.corpus_yaml import load_corpus
    from ptah.adapters.judges import JudgeContext, open_judge

    settings = project.spec.judges.get(name)
    if settings is None:
        declared = ", ".join(project.spec.judges) or "none"
        raise InputError(
            f'{project.spec.path}: no judge "{name}" under judges: (declared: {declared})'
        )
    corpus = load_corpus(corpus_path)
    worklist = make_worklist(project, corpus_path, generations, channels, variants=variants)
    record = read_record(corpus_path)
    wanted = {(case.id, hole.key): case.query for case in worklist.cases for hole in case.holes}
    queries = {case.id: case.query for case in corpus.cases}
    for index in range(len(record.samples)):
        wanted.update(
            {
                (case_id, key): queries[case_id]
                for case_id, key, _ in record.sampled(index)
                if case_id in queries
            }
        )
    texts = project.judging_texts({key for _, key in wanted})
    scale = (0.0, *corpus.grade_scale())
    context = JudgeContext(
        project.spec.root,
        os.environ,
        lambda generation: project.embedder(project.spec.generation(generation)),
        scale,
    )
    judge = open_judge(name, settings, context)
    pins = {pair: text_digest(texts[pair[1]]) for pair in wanted if pair[1] in texts}
    held = record.models.get(judge.by, {})
    todo = [
        pair
        for pair in sorted(pins)
        if (found := held.get(pair[0], {}).get(pair[1])) is None or found.text_sha256 != pins[pair]
    ]
    result = ModelJudged(
        judge.by, len(pins), kept=len(pins) - len(todo), record=str(record_path(corpus_path))
    )
    asked, result.left = todo[: settings.max_requests], max(0, len(todo) - settings.max_requests)
    try:
        for start in range(0, len(asked), CHUNK):
            chunk = asked[start : start + CHUNK]
            answers = judge.grades([(wanted[pair], texts[pair[1]]) for pair in chunk])
            graded = {pair: grade for pair, grade in zip(chunk, answers) if grade is not None}
            _save(corpus_path, judge.by, graded, pins)
            result.graded += len(graded)
            result.relevant += sum(1 for grade in graded.values() if grade > 0)
            if progress is not None:
                progress(start + len(chunk), len(asked))
    finally:
        result.usage = judge.usage() or {}
        refused = result.usage.pop("refused", None)
        result.refused = dict(refused) if isinstance(refused, dict) else {}
        if judge.off_scale:
            result.refused["a grade off the corpus's scale"] = (
                result.refused.get("a grade off the corpus's scale", 0) + judge.off_scale
            )
        _add_usage(corpus_path, judge.by, result)
    return result


COUNTED = ("requests", "retries", "pairs", "server_prompt_tokens", "server_completion_tokens")


def _add_usage(corpus_path: str | os.PathLike, by: str, result: ModelJudged) -> None:
    """Add what this invocation cost to the record's ``usage`` of ``by`` (the counts only), when it
    asked anything."""
    spent = {
        name: result.usage[name]
        for name in COUNTED
        if isinstance(result.usage.get(name), int) and not isinstance(result.usage.get(name), bool)
    }
    spent["refused"] = sum(result.refused.values())
    spent.setdefault("pairs", result.graded + spent["refused"])
    if not (spent["pairs"] or spent.get("requests")):  # nothing was asked, nothing was spent
        return
    with saving(corpus_path):
        record = read_record(corpus_path)
        usage = {judge: dict(counts) for judge, counts in record.usage.items()}
        mine = usage.setdefault(by, {})
        for name, count in spent.items():
            mine[name] = mine.get(name, 0) + count
        write_record(corpus_path, replace(record, usage=usage))


def _save(
    corpus_path: str | os.PathLike,
    by: str,
    graded: dict[tuple[str, str], float],
    pins: dict[tuple[str, str], str],
) -> None:
    """Add ``graded`` to the record's grades by ``by``, each pinned to the text it was graded on."""
    if not graded:
        return
    with saving(corpus_path):
        record = read_record(corpus_path)
        models = {
            judge: {case_id: dict(keys) for case_id, keys in cases.items()}
            for judge, cases in record.models.items()
        }
        mine = models.setdefault(by, {})
        when = now()
        for (case_id, key), grade in graded.items():
            mine.setdefault(case_id, {})[key] = Judgement(grade, pins[(case_id, key)], when)
        write_record(corpus_path, replace(record, models=models))
