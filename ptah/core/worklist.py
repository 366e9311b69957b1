"""The pooled worklist of holes: what ``ptah corpus holes`` lists and ``ptah corpus judge`` walks
through.

For each case, the union of the holes (:mod:`ptah.core.judged`) in the top k
of every run asked for, each with the rank every run gave it, the row's
judging text (cut to :data:`TEXT_CHARS` characters) and the SHA-256 of the
whole text, and what the case already judges; best rank first (ties: the
rank of the earlier run, then the key). Cases without a hole are left out.

As JSON (``--output``, ``--json``)::

    {"format": "ptah-worklist@1",
     "corpus": {"path": P, "digest": "sha256:…"}, "judgements": {"path": P, "digest": "sha256:…"},
     "runs": [NAME, …], "text_of": GENERATION, "holes": N,
     "cases": [{"id": ID, "query": Q, "k": K, "judged": ['"7" required (grade 1)', '"5" not relevant', …],
                "holes": [{"key": KEY, "ranks": {RUN: RANK, …}, "text": T, "text_sha256": H}, …]}, …]}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from ptah.core.corpus import Case, Corpus
from ptah.core.errors import InputError
from ptah.core.judged import JudgementRecord, holes, judged_keys

WORKLIST_FORMAT = "ptah-worklist@1"
TEXT_CHARS = 600


@dataclass(frozen=True)
class Hole:
    """An unjudged row in a case's top k: its key, the rank each run gave it, its text (cut) and its
    SHA-256."""

    key: str
    ranks: Mapping[str, int]
    text: str
    text_sha256: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranks", MappingProxyType(dict(self.ranks)))

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "ranks": dict(self.ranks),
            "text": self.text,
            "text_sha256": self.text_sha256,
        }


@dataclass(frozen=True)
class WorkCase:
    """A case with holes: its query, depth and holes, and what the corpus and its record already
    judge for it (``judged``: ``"7" required (grade 1)``, ``"3" grade 2``, ``"9" forbidden``, ``"5"
    not relevant``, shown beside each hole)."""

    id: str
    query: str
    k: int
    holes: tuple[Hole, ...]
    judged: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "query": self.query,
            "k": self.k,
            "judged": list(self.judged),
            "holes": [hole.to_dict() for hole in self.holes],
        }


def judged_summary(case: Case, record: JudgementRecord) -> tuple[str, ...]:
    """What is already judged for ``case``, one short phrase a key, the key quoted so that a key
    ``1`` never reads as a count (:attr:`WorkCase.judged`): ``"7" required (grade 1)``, ``"3" grade
    2``."""
    said = [f'"{key}" required (grade {case.relevant.get(key, 1.0):g})' for key in case.required]
    said += [
        f'"{key}" grade {grade:g}'
        for key, grade in case.relevant.items()
        if key not in case.required
    ]
    said += [f'"{key}" forbidden' for key in case.forbidden]
    named = case.expected_keys()
    said += [
        f'"{key}" not relevant'
        for key, judgement in sorted(record.cases.get(case.id, {}).items())
        if key not in named and judgement.grade == 0
    ]
    return tuple(said)


@dataclass(frozen=True)
class Worklist:
    corpus: Mapping[str, str | None]  # path, digest
    judgements: Mapping[str, str | None]  # path, digest
    runs: tuple[str, ...]
    text_of: str
    cases: tuple[WorkCase, ...]

    @property
    def count(self) -> int:
        return sum(len(case.holes) for case in self.cases)

    def to_dict(self) -> dict:
        return {
            "format": WORKLIST_FORMAT,
            "corpus": dict(self.corpus),
            "judgements": dict(self.judgements),
            "runs": list(self.runs),
            "text_of": self.text_of,
            "holes": self.count,
            "cases": [case.to_dict() for case in self.cases],
        }

    @classmethod
    def from_dict(cls, data: object, where: str) -> Worklist:
        """A worklist read back from its JSON; :class:`InputError` (exit 2) naming what is wrong."""
        try:
            if not isinstance(data, dict) or data.get("format") != WORKLIST_FORMAT:
                raise InputError(
                    f"{where}: not a ptah worklist (format {WORKLIST_FORMAT}); write one with "
                    "`ptah corpus holes CORPUS --output FILE`"
                )
            cases = tuple(
                WorkCase(
                    _text(case["id"]),
                    _text(case["query"]),
                    _count(case["k"]),
                    tuple(
                        Hole(
                            _text(hole["key"]),
                            {_text(run): _count(rank) for run, rank in hole["ranks"].items()},
                            _text(hole["text"]),
                            _sha256(hole["text_sha256"]),
                        )
                        for hole in case["holes"]
                    ),
                    tuple(_text(said) for said in case.get("judged", ())),
                )
                for case in data["cases"]
            )
            return cls(
                {"path": data["corpus"].get("path"), "digest": _text(data["corpus"]["digest"])},
                {
                    "path": data["judgements"].get("path"),
                    "digest": data["judgements"].get("digest"),
                },
                tuple(_text(run) for run in data["runs"]),
                _text(data["text_of"]),
                cases,
            )
        except InputError:
            raise
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"{where}: not a ptah worklist: {type(exc).__name__} {exc}; write one with "
                "`ptah corpus holes CORPUS --output FILE`"
            ) from None


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not text")
    return value


def _sha256(value: object) -> str:
    if not isinstance(value, str) or len(value) != 64 or value.strip("0123456789abcdef"):
        raise ValueError(f"{value!r} is not a SHA-256: 64 lowercase hex digits")
    return value


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{value!r} is not a whole number of at least 1")
    return value


def pooled_holes(
    corpus: Corpus, record: JudgementRecord, runs: Sequence[tuple[str, Mapping[str, Sequence[str]]]]
) -> list[tuple[str, list[tuple[str, dict[str, int]]]]]:
    """For each case with holes, in corpus order: ``(case id, [(key, {run: rank}), …])``, best rank
    first.

    ``runs`` are ``(run name, {case id: ranked keys})``; a key is a hole of a
    case when some run ranks it in the case's top k and neither the corpus
    nor the record judges it (:func:`ptah.core.judged.judged_keys`).
    """
    pooled = []
    for case in corpus.cases:
        judged = judged_keys(case, record)
        found: dict[str, dict[str, int]] = {}
        for name, rankings in runs:
            for key, rank in holes(list(rankings.get(case.id, ())), judged, case.k):
                found.setdefault(key, {})[name] = rank
        if found:
            order = {name: index for index, (name, _) in enumerate(runs)}

            def best(item: tuple[str, dict[str, int]]) -> tuple:
                key, ranks = item
                rank = min(ranks.values())
                return rank, min(order[n] for n, r in ranks.items() if r == rank), key  # noqa: B023

            pooled.append((case.id, sorted(found.items(), key=best)))
    return pooled
