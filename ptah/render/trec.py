"""A run of the report as TREC run lines (``QID Q0 DOCID RANK SCORE TAG``), for trec_eval,
pytrec_eval and ranx.

One line per ranked result of one run (``report.runs[i].cases[j].ranking``):
the case id as QID, the literal ``Q0``, the key as DOCID, the 1-based rank in
ptah's order (score descending, key ascending on ties), the score as Python's
shortest round-trip ``repr`` of the double (exactly the score in the report),
and the run's tag. A case with no results writes no line (trec_eval then
leaves the query out of its means unless run with ``-c``).

Ties: trec_eval ignores the RANK column. It re-sorts each query's lines by
score descending and breaks ties by DOCID *descending*, the opposite of
ptah's key-ascending rule. The true scores are written, never nudged apart,
so on a ranking with tied scores trec_eval may order (and, at a cutoff,
select) the tied keys differently from ptah, and its numbers may then differ.
The report flags every such tie (``CaseResult.ties``); without ties the
numbers agree.

Fields are separated by single spaces, so a case id, key or tag that is
empty or holds whitespace cannot be written (:func:`ptah.core.trec.check_fields`).
The qrels side -- a corpus's judgements -- is :func:`ptah.core.trec.qrels_lines`.
"""

from __future__ import annotations

import math

from ptah.core.errors import InputError
from ptah.core.report import Report
from ptah.core.trec import check_fields

DEFAULT_TAG = "ptah"


def run_lines(report: Report) -> list[str]:
    """The TREC run lines of the reference run (the report's first; see the module docs), tagged
    with its generation's name, else ``ptah``. Raises :class:`InputError` for case ids, keys or a
    tag that hold whitespace or are empty.
    """
    run = report.runs[0]  # a report holds one run at least (its schema)
    tag = run.generation.name or DEFAULT_TAG
    check_fields("tag", [tag])
    check_fields("case id", [case.id for case in run.cases])
    check_fields("key", [result.key for case in run.cases for result in case.ranking])
    lines: list[str] = []
    for case in run.cases:
        for rank, result in enumerate(case.ranking, start=1):
            score = float(result.score)
            if not math.isfinite(score):
                raise InputError(
                    f'case "{case.id}": key "{result.key}" has the score {score!r}, which a TREC run cannot rank'
                )
            lines.append(f"{case.id} Q0 {result.key} {rank} {score!r} {tag}")
    return lines


def pieces(report: Report, corpus=None) -> list[str]:
    """The ``trec`` format (:mod:`ptah.render.formats`)."""
    return [line + "\n" for line in run_lines(report)]
