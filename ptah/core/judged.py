"""Judged keys and holes: the judgement record, judged@k and the holes of a ranking.

Definitions (pinned in docs/holes.md, "Holes, judged@k and the bounds"):

* a key in a case's top k is *judged* when the corpus names it for that case
  (``required``, ``relevant`` or ``forbidden``) or the case's entry in the
  judgement record holds it; otherwise it is a *hole*;
* **judged@k** of a case is the judged keys among its top min(k, n) divided by
  min(k, n), n the length of its ranking; N/A (None) when the ranking is empty.

The judgement record of ``NAME.yaml`` is ``NAME.judged.yaml`` beside it (read
and written by :mod:`ptah.adapters.judgements_yaml`): for each case, each key a
person looked at, with its grade (0: judged not relevant), the SHA-256 of the
row's text when it was judged (:func:`ptah.core.provenance.text_digest`) and the
time. It does not change the corpus digest; it has its own.

Digest
------
The SHA-256 of a canonical JSON document, printed ``sha256:<64 hex>``, by the
corpus digest's rule (object keys sorted, no whitespace, non-ASCII written as
itself, UTF-8)::

    {"cases":[{"id":ID,"judgements":[{"grade":G,"judged_at":T,"key":KEY,"text_sha256":H},...]},...],
     "format":"ptah-judged@1"}

cases sorted by id and judgements by key (code point order), grades as the
shortest round-trip repr of a double (``1`` and ``1.0`` are the same). A case
with no judgement is left out; a judgement's ``sample`` and the record's
``samples`` (random samples of holes drawn for judging) are members only when
there are some, so a record without samples keeps its digest; so is
``models`` (a model judge's grades: ``[{"by": ID, "cases": [...]}, ...]``
sorted by ``by``, its cases as above). Outside the digest: the record's ``corpus``
and ``usage`` members (informative), comments and formatting.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ptah.core.corpus import Case

JUDGED_VERSION = 1
JUDGED_DIGEST_FORMAT = "ptah-judged@1"


@dataclass(frozen=True, slots=True)
class Judgement:
    """One key a person looked at for one case: its grade (0: not relevant), the row text's SHA-256
    then, and when."""

    grade: float
    text_sha256: str
    judged_at: str
    sample: int | None = (
        None  # the index of the random sample (JudgementRecord.samples) that drew it
    )


@dataclass(frozen=True, slots=True)
class Sample:
    """A random sample of holes drawn for judging: the seed, the digest of the population of (case,
    key) holes it was drawn from (:func:`population_digest`), how many were drawn, the identities of
    the runs whose holes made the population, and when (UTC)."""

    seed: int
    population: str
    drawn: int
    generations: tuple[str, ...]
    drawn_at: str


def population_digest(pairs: Iterable[tuple[str, str]]) -> str:
    """``sha256:`` of the canonical JSON of the sorted, distinct (case id, key) pairs of a
    population of holes."""
    text = json.dumps(sorted(set(pairs)), separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _frozen_cases(
    cases: Mapping[str, Mapping[str, Judgement]],
) -> Mapping[str, Mapping[str, Judgement]]:
    return MappingProxyType(
        {case_id: MappingProxyType(dict(keys)) for case_id, keys in cases.items()}
    )


def _canonical_cases(cases: Mapping[str, Mapping[str, Judgement]]) -> list[dict]:
    """The canonical form of case id -> key -> judgement: the cases that hold one, by id; their
    judgements by key."""
    return [
        {
            "id": case_id,
            "judgements": [
                {
                    "key": key,
                    "grade": float(j.grade),
                    "text_sha256": j.text_sha256,
                    "judged_at": j.judged_at,
                }
                | ({} if j.sample is None else {"sample": j.sample})
                for key, j in sorted(cases[case_id].items())
            ],
        }
        for case_id in sorted(cases)
        if cases[case_id]
    ]


@dataclass(frozen=True, slots=True)
class JudgementRecord:
    """A corpus's judgement record: case id -> key -> :class:`Judgement`."""

    version: int = JUDGED_VERSION
    corpus: str | None = None
    cases: Mapping[str, Mapping[str, Judgement]] = field(default_factory=dict)
    samples: tuple[Sample, ...] = ()
    # a model judge's grades (docs/judges.md): judge id (``model:NAME@IDENTITY``, the
    # ``by`` of each) -> case id -> key -> Judgement. They never make a key judged and never enter
    # the corpus; they may move U.
    models: Mapping[str, Mapping[str, Mapping[str, Judgement]]] = field(default_factory=dict)
    # what each model judge cost, summed over its invocations: judge id -> {requests, retries,
    # pairs, server_prompt_tokens, server_completion_tokens, refused}. Informative, like ``corpus``:
    # outside the digest.
    usage: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cases", _frozen_cases(self.cases))
        object.__setattr__(self, "samples", tuple(self.samples))
        object.__setattr__(
            self,
            "models",
            MappingProxyType({by: _frozen_cases(cases) for by, cases in self.models.items()}),
        )
        object.__setattr__(
            self,
            "usage",
            MappingProxyType(
                {by: MappingProxyType(dict(spent)) for by, spent in self.usage.items()}
            ),
        )

    def sampled(self, index: int) -> list[tuple[str, str, Judgement]]:
        """The (case id, key, judgement) of every judgement sample ``index`` drew."""
        return [
            (case_id, key, judgement)
            for case_id, keys in self.cases.items()
            for key, judgement in keys.items()
            if judgement.sample == index
        ]

    @classmethod
    def empty(cls) -> JudgementRecord:
        return cls()

    def keys(self, case_id: str) -> frozenset[str]:
        """The keys the record holds for ``case_id`` (empty when none)."""
        return frozenset(self.cases.get(case_id, ()))

    def __len__(self) -> int:
        return sum(len(keys) for keys in self.cases.values())

    def canonical_document(self) -> bytes:
        """The exact bytes the digest hashes (see module docs)."""
        document: dict = {"format": JUDGED_DIGEST_FORMAT, "cases": _canonical_cases(self.cases)}
        models = {by: cases for by, cases in self.models.items() if any(cases.values())}
        if models:  # a model's grade is drawn by no sample, so its judgements never carry one
            document["models"] = [
                {"by": by, "cases": _canonical_cases(cases)} for by, cases in sorted(models.items())
            ]
        if self.samples:
            document["samples"] = [
                {
                    "seed": x.seed,
                    "population": x.population,
                    "drawn": x.drawn,
                    "generations": list(x.generations),
                    "drawn_at": x.drawn_at,
                }
                for x in self.samples
            ]
        text = json.dumps(
            document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
        return text.encode("utf-8")

    def digest(self) -> str:
        """``sha256:`` followed by the hex SHA-256 of :meth:`canonical_document`."""
        return "sha256:" + hashlib.sha256(self.canonical_document()).hexdigest()


EMPTY = JudgementRecord()


def judged_keys(case: Case, record: JudgementRecord | None = None) -> frozenset[str]:
    """The keys judged for ``case``: required, relevant and forbidden, and those its record entry
    holds (``record``'s, else those the case was loaded with:
    :meth:`ptah.core.corpus.Corpus.with_judgements`)."""
    return case.expected_keys() | (case.judged if record is None else record.keys(case.id))


def holes(
    ranking: Sequence[str], judged: frozenset[str] | set[str], k: int
) -> tuple[tuple[str, int], ...]:
    """``(key, rank)`` of each unjudged key in the top min(k, n), rank 1-based, best first."""
    return tuple((key, rank) for rank, key in enumerate(ranking[:k], start=1) if key not in judged)


def judged_at_k(ranking: Sequence[str], judged: frozenset[str] | set[str], k: int) -> float | None:
    """Judged keys among the top min(k, n) / min(k, n); None (N/A) when the ranking is empty."""
    top = ranking[:k]
    if not top:
        return None
    return sum(1 for key in top if key in judged) / len(top)


def high_grades(relevant: Mapping[str, float], hole_keys: Sequence[str]) -> dict[str, float]:
    """The grades of the high bound: ``relevant`` plus each hole at the case's highest grade.

    A case with no relevant key has no highest grade: its grades stay as they
    are (every measure stays N/A on both bounds).
    """
    top = max((g for g in relevant.values() if g > 0), default=None)
    if top is None:
        return dict(relevant)
    return {**relevant, **{key: top for key in hole_keys}}
