"""A run of the report as TREC run lines (``QID Q0 DOCID RANK SCORE TAG``), for trec_eval,
pytrec_eval and ranx; the qrels side is :func:`ptah.core.trec.qrels_lines`.

One line per ranked result of one run: the case id, ``Q0``, the key, the 1-based rank in ptah's
order, the score as the shortest round-trip ``repr`` (exactly the report's), the run's tag. A
case with no results writes no line (trec_eval leaves it out of its means unless ``-c``). Fields
are single-space separated, so an empty value or one holding whitespace is refused
(:func:`ptah.core.trec.check_fields`).

trec_eval ignores RANK: it re-sorts by score and breaks ties by DOCID *descending*, the opposite of
ptah's rule. Scores are written true, never nudged apart, so on tied scores its numbers may differ
from ptah's; the report flags every such tie (``CaseResult.ties``), and without ties they agree.
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
