"""Stale judgements: a judged row whose judging text changed since a person judged it.

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

from ptah.adapters.sources.base import texts_of
from ptah.core.identity import text_digest
from ptah.core.judged import JudgementRecord
from ptah.core.report_parts import StaleJudgement
from ptah.services.project import Project


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
