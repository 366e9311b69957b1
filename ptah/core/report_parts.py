"""A report's own typed members beside its runs, gates and comparisons: the corpus it measured and
each stale judgement. Each is a :class:`~ptah.core.parts.Part`, its JSON members its fields in
order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from ptah.core.parts import Part


@dataclass(frozen=True)
class StaleJudgement(Part):
    """A judgement of the record whose row's judging text no longer hashes to its digest under any
    measured generation's template: its case, its key, when it was judged and why it is stale."""

    case: str
    key: str
    judged_at: str
    why: str


@dataclass(frozen=True)
class ListedSlice(Part):
    """A tag's slice of the corpus: its digest and its case ids."""

    digest: str
    cases: tuple[str, ...]


@dataclass(frozen=True)
class ReportCorpus(Part):
    """The corpus a report measured: its path and name (None: it has none), digest, number of
    cases, the digest of its judgement record (None: no judgement; absent from a report of ptah
    before the record) and, for a corpus with tags, each tag's slice (None: no tags, absent)."""

    path: str | None
    name: str | None
    digest: str
    cases: int
    judgements: str | None = None
    slices: Mapping[str, ListedSlice] | None = None

    OPTIONAL: ClassVar[tuple[str, ...]] = ("judgements",)
    ABSENT_WHEN_NONE: ClassVar[tuple[str, ...]] = ("slices",)
