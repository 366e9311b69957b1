"""A report's own typed members beside its runs, gates and comparisons: the corpus it measured, the
baseline it was compared with and each stale judgement. Each is a :class:`~ptah.core.parts.Part`, its JSON members its fields in
order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from ptah.core.compared import Family
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


@dataclass(frozen=True)
class Rescoring(Part):
    """How the baseline's runs measured again from their stored rankings differ from its file: the
    judgements added and changed since, the cases measured differently, and whether the judgements
    differ from those it measured under."""

    judgements_added: int
    judgements_changed: int
    cases_changed: int
    judged_since: bool


@dataclass(frozen=True)
class ReportBaseline(Part):
    """The baseline a report was compared with, beside its comparisons (the report's): its path
    (None: a report given without one), the digest of the corpus it measured, how it was re-scored
    (None: its numbers stood as written) and, for a corpus with tags, the family of the slice tests
    against it (None: none). The last two are absent when None."""

    path: str | None
    digest: str
    rescored: Rescoring | None = None
    family: Family | None = None

    ABSENT_WHEN_NONE: ClassVar[tuple[str, ...]] = ("rescored", "family")
