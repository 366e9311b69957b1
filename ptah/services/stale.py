"""Stale judgements: a judged row whose text changed since a person judged it.

Each judgement in a corpus's record (:mod:`ptah.core.judged`) carries the
SHA-256 of the row's text when it was judged. :func:`stale_judgements` reads
the rows those judgements name from the source's snapshot, renders each with
the template of every generation the evaluation measured (the text a person
was shown is the text a generation embeds), and lists each judgement whose
recorded digest matches none of them -- the row changed, or is gone.

Only the rows of the table are read, once per template, and only when the
record holds a judgement.
"""

from __future__ import annotations

from typing import Iterable

from ptah.core.identity import text_digest
from ptah.core.judged import JudgementRecord
from ptah.services.project import Project


def stale_judgements(project: Project, record: JudgementRecord, generations: Iterable[str]) -> list[dict]:
    """``{case, key, judged_at, why}`` for each judgement whose row text no longer hashes to its digest,
    in case then key order."""
    wanted = {key for keys in record.cases.values() for key in keys}
    if not wanted:
        return []
    spec = project.spec
    templates = list(dict.fromkeys(spec.generation(name).template(spec.source) for name in generations))
    digests: dict[str, set[str]] = {}
    for template in templates:
        for row in project.source.rows(template):
            if row.key in wanted:
                digests.setdefault(row.key, set()).add(text_digest(row.text))
    stale = []
    for case_id in sorted(record.cases):
        for key, judgement in sorted(record.cases[case_id].items()):
            found = digests.get(key)
            if found is not None and judgement.text_sha256 in found:
                continue
            day = judgement.judged_at[:10]
            why = (f"judged {day}, row text changed since" if found is not None
                   else f"judged {day}, row no longer in the table")
            stale.append({"case": case_id, "key": key, "judged_at": judgement.judged_at, "why": why})
    return stale
