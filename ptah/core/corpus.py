"""The evaluation corpus (format v1) and its content digest.

A corpus is a set of cases; each case has a query, an effective depth ``k``
and expectations: ``required`` keys (must appear in the top k), graded
``relevant`` keys (for the ranked measures) and ``forbidden`` keys (must not
appear in the top k -- a ptah extension, reported as leakage).

The loader (``ptah.adapters.corpus_yaml``) validates the file and builds these
objects; the objects here hold values that already passed validation.

Digest
------
The digest is the SHA-256 of a canonical JSON document, printed as
``sha256:<64 hex digits>``. The canonical document is::

    {"cases":[CASE,...],"format":"ptah-corpus@1"}

with the cases sorted by ``id`` (Unicode code point order), and each CASE::

    {"forbidden":[KEY,...],"id":ID,"k":K,"query":QUERY,
     "relevant":[[KEY,GRADE],...],"required":[KEY,...]}

where ``k`` is the *effective* depth (a case's own ``k``, or ``default_k``),
``relevant`` holds the *effective* grades (the declared ones, or grade 1 for
each required key when none are declared), and every key list is sorted by
code point. A GRADE is written as a JSON number in Python's shortest
round-trip ``repr`` of the IEEE-754 double (``1.0``, ``0.5``, ``2.0``), so a
grade written ``1`` and one written ``1.0`` are the same. The document is
serialised with object keys sorted, no whitespace (separators ``,`` and
``:``), non-ASCII characters written as themselves (not escaped), and encoded
as UTF-8. Queries and keys are taken exactly as written: no trimming, no case
folding, no Unicode normalisation.

Outside the digest: ``name``, ``description``, ``default_k`` itself (only the
depths it resolves to count), the cases' ``tags``, YAML formatting, quoting,
comments, mapping key order and the order of the cases.

Tags and slices
---------------
A case may carry ``tags`` (a ptah addition): each 1 to 32 characters of
lowercase ASCII letters, digits, ``-``, ``_`` and ``.``, starting with a letter
or a digit (:data:`TAG_PATTERN`), at most 16 a case, none twice; a case keeps
them in the order written. The cases carrying a tag are its *slice*
(:meth:`Corpus.slices`). Tags are outside the corpus digest -- renaming a
slice does not make two measurements incomparable -- but each slice has a
*slice digest* (:func:`slice_digest`), the SHA-256 of::

    {"cases":[CASE,...],"format":"ptah-slice@1","tag":TAG}

serialised as the corpus's canonical document is, CASE as above (sorted by
id). A baseline's slice is compared only with a slice of the same digest: the
same tag over the same cases, with the same contents.
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


@dataclass(frozen=True)
class Case:
    """One evaluation case, with its effective depth and grades.

    ``relevant`` maps each graded key to its grade (> 0); when the corpus
    declared ``required`` and no ``relevant``, each required key is graded 1.
    ``line`` is where the case starts in its file (for messages), if known.
    ``judged`` holds the keys its entry in the judgement record holds (outside
    the digest; see :mod:`ptah.core.judged`). ``tags`` names the slices the
    case belongs to, as written (outside the digest; see the module docs).
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
        """This case's part of the canonical digest document (see module docs)."""
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
    """The exact bytes the digest hashes (see module docs)."""
    return _canonical({"format": DIGEST_FORMAT}, cases)


def _canonical(head: dict, cases: tuple[Case, ...] | list[Case]) -> bytes:
    """``head`` with the cases' canonical forms sorted by id, serialised as the module docs say."""
    document = head | {"cases": [case.canonical() for case in sorted(cases, key=lambda c: c.id)]}
    text = json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def corpus_digest(cases: tuple[Case, ...] | list[Case]) -> str:
    """``sha256:`` followed by the hex SHA-256 of :func:`canonical_document`."""
    return "sha256:" + hashlib.sha256(canonical_document(cases)).hexdigest()


def slice_digest(tag: str, cases: tuple[Case, ...] | list[Case]) -> str:
    """The slice digest of ``tag`` over ``cases`` (see the module docs): ``sha256:`` and 64 hex
    digits."""
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
