"""A report's own typed members beside its runs, gates and comparisons: each stale judgement.
Each is a :class:`~ptah.core.parts.Part`, its JSON members its fields in order."""

from __future__ import annotations

from dataclasses import dataclass

from ptah.core.parts import Part


@dataclass(frozen=True)
class StaleJudgement(Part):
    """A judgement of the record whose row's judging text no longer hashes to its digest under any
    measured generation's template: its case, its key, when it was judged and why it is stale."""

    case: str
    key: str
    judged_at: str
    why: str
