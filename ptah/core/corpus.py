"""The evaluation corpus (format v1), its content digest and its slices.

A corpus is a set of cases, each with a query, an effective depth ``k`` and expectations:
``required`` keys (in the top k), graded ``relevant`` keys and ``forbidden`` keys (not in the top
k: leakage). The loader (:mod:`ptah.adapters.corpus_yaml`) validates a file; these objects hold
values that passed. The digest and the slices (``tags``, :data:`TAG_PATTERN`) are specified in
docs/corpus.md ("The digest", "Tags and slices"); why tags stay outside the digest:
docs/design.md ("The corpus digest").
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from ptah.core.judged import EMPTY, JudgementRecord

DIGEST_FORMAT = "ptah-corpus@1"
SLICE_DIGEST_FORMAT = "ptah-slice@1"

# Limits: oversized input is refused with a clear error, never truncated.
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_CASES = 50_000
MAX_QUERY_CHARS = 8_192
MAX_K = 1_000
MAX_KEYS_PER_CASE = 10_000
MAX_KEY_CHARS = 1_024
MAX_ID_CHARS = 512
MAX_GRADE = 1_000_000  # far below where nDCG's sums of grades would overflow to infinity
MAX_TAGS_PER_CASE = 16
MAX_TAG_CHARS = 32
MAX_SLICES = 200  # distinct tags a corpus; each is a slice measured, compared and tested
TAG_PATTERN = re.compile(
    r"[a-z0-9][a-z0-9._-]{0,31}"
)  # fullmatch; a tag fits a column, a file name and a URL

COMPOSITE_KEY_SEPARATOR = "\x1f"
# the marks a judgement can put on a key: the case lists it joins
REQUIRED, FORBIDDEN = "required", "forbidden"


@dataclass(frozen=True)
class Case:
    """One evaluation case, with its effective depth and grades.

    ``relevant`` maps each graded key to its grade (> 0); when the corpus
    declared ``required`` and no ``relevant``, each required key is graded 1.
    ``line`` is where the case starts in its file (for messages), if known.
    ``judged`` holds the keys its entry in the judgement record holds (outside
    the digest; see :mod:`ptah.core.judged`). ``tags`` names the slices the
    case belongs to, as written (outside the digest).
    """

    id: str
    query: str
    k: int
    required: tuple[str, ...] = ()
    relevant: Mapping[str, float] = field(default_factory=dict)
    forbidden: tuple[str, ...] = ()
    line: int | None = field(default=None, compare=False)
    judged: frozenset[str] = field(default=frozenset(), compare=False)
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "relevant", MappingProxyType(dict(self.relevant)))

    def expected_keys(self) -> frozenset[str]:
        """Every key the case names: required, relevant and forbidden."""
        return frozenset(self.required) | frozenset(self.relevant) | frozenset(self.forbidden)

    def canonical(self) -> dict:
        """This case's part of the canonical digest document: its effective ``k`` and grades (1
        for each required key when none are declared), every key list sorted."""
        return {
            "id": self.id,
            "query": self.query,
            "k": self.k,
            "required": sorted(self.required),
            "relevant": [[key, float(self.relevant[key])] for key in sorted(self.relevant)],
            "forbidden": sorted(self.forbidden),
        }


@dataclass(frozen=True)
class Corpus:
    """A validated corpus. ``cases`` keep the file's order for display."""

    cases: tuple[Case, ...]
    name: str | None = None
    description: str | None = None
    default_k: int | None = None
    path: str | None = field(default=None, compare=False)
    judgements: JudgementRecord = field(default=EMPTY, compare=False)
    # False: ``path`` only names the corpus (one kept by a server, say), and no command can be given
    # a file of it
    has_file: bool = field(default=True, compare=False)

    @property
    def digest(self) -> str:
        return corpus_digest(self.cases)

    def with_judgements(self, record: JudgementRecord) -> Corpus:
        """This corpus with its judgement record: each case also judges the keys the record holds
        for it."""
        cases = tuple(replace(case, judged=record.keys(case.id)) for case in self.cases)
        return replace(self, cases=cases, judgements=record)

    def grade_scale(self) -> tuple[float, ...]:
        """The grades above 0 the corpus uses, ascending (a required key without a grade counts as
        1); ``(1.0,)`` when it grades nothing. A judge offers these, so a new grade cannot outrank
        what the author wrote."""
        return tuple(
            sorted({grade for case in self.cases for grade in case.relevant.values() if grade > 0})
        ) or (1.0,)

    def lines(self) -> dict[str, int]:
        """Each case's line in its corpus file, where the loader knew it (JUnit's ``line``, the
        annotations' place)."""
        return {case.id: case.line for case in self.cases if case.line is not None}

    def slices(self) -> dict[str, tuple[Case, ...]]:
        """Each tag (in code point order) mapped to the cases carrying it, in corpus order."""
        found: dict[str, list[Case]] = {}
        for case in self.cases:
            for tag in case.tags:
                found.setdefault(tag, []).append(case)
        return {tag: tuple(found[tag]) for tag in sorted(found)}

    def case(self, case_id: str) -> Case:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)

    def expected_keys(self) -> frozenset[str]:
        keys: set[str] = set()
        for case in self.cases:
            keys |= case.expected_keys()
        return frozenset(keys)


def canonical_document(cases: tuple[Case, ...] | list[Case]) -> bytes:
    """The exact bytes the digest hashes: ``{"cases":[CASE,...],"format":"ptah-corpus@1"}``, the
    cases sorted by id, keys sorted, no whitespace, non-ASCII unescaped, UTF-8; a grade is the
    shortest round-trip ``repr`` of its double (``1.0``)."""
    return _canonical({"format": DIGEST_FORMAT}, cases)


def _canonical(head: dict, cases: tuple[Case, ...] | list[Case]) -> bytes:
    """``head`` with the cases' canonical forms sorted by id, serialised as
    :func:`canonical_document` says."""
    document = head | {"cases": [case.canonical() for case in sorted(cases, key=lambda c: c.id)]}
    text = json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def corpus_digest(cases: tuple[Case, ...] | list[Case]) -> str:
    """``sha256:`` followed by the hex SHA-256 of :func:`canonical_document`."""
    return "sha256:" + hashlib.sha256(canonical_document(cases)).hexdigest()


def slice_digest(tag: str, cases: tuple[Case, ...] | list[Case]) -> str:
    """The slice digest of ``tag`` over ``cases``: ``sha256:`` and the 64 hex digits of
    ``{"cases":[CASE,...],"format":"ptah-slice@1","tag":TAG}``, serialised as
    :func:`canonical_document` is."""
    return (
        "sha256:"
        + hashlib.sha256(_canonical({"format": SLICE_DIGEST_FORMAT, "tag": tag}, cases)).hexdigest()
    )


def join_key(components: list[str] | tuple[str, ...]) -> str:
    """A key as the corpus spells it: components joined with U+001F."""
    return COMPOSITE_KEY_SEPARATOR.join(components)


def shown_key(key: str) -> str:
    """A key as people read it: a composite key's components joined with `` · `` (``1 · pruning``);
    any other key as it is. (Files, JSON and YAML keep the U+001F.)"""
    return key.replace(COMPOSITE_KEY_SEPARATOR, " · ")


def composite_spellings(key: str, width: int) -> list[str]:
    """The composite keys of ``width`` components that ``key`` would be were one of its other
    separators (``|``, ``:``, ``/``, a space...) U+001F: ``1|pruning`` -> ``1\x1fpruning``. None for
    a key of one component."""
    if width < 2 or COMPOSITE_KEY_SEPARATOR in key:
        return []
    return [
        key.replace(mark, COMPOSITE_KEY_SEPARATOR)
        for mark in dict.fromkeys(key)
        if not mark.isalnum() and key.count(mark) == width - 1
    ]
