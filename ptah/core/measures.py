"""The measures ptah reports: one registry, the single source of names, labels, formulas and report
keys, and means with explicit denominators.

Every measure scores one case's ranking against its grades at a depth k:

* a *ranking* is a list of distinct keys, best first; only its first ``k`` entries count; rank i
  is 1-based;
* a key is *relevant* when its grade is > 0 (trec_eval's ``relevance_level`` 1); a key absent from
  ``grades`` is unjudged and gains 0;
* a case with no relevant key is N/A (``None``) for every measure -- never 0 or 1 -- and is left
  out of the mean's denominator.

Each :class:`MeasureKind` states its formula and its trec_eval 9.x counterpart, which it agrees
with to 1e-9 (tested on random rankings). A :class:`Measure` is a kind at a depth:
``Measure("nDCG")`` is measured at each case's own ``k`` (the defaults, reported as ``recall``,
``mrr``, ``ndcg``), ``Measure("MAP", 10)`` at 10, reported as ``MAP@10``; both parse back from
their string form. Adding a measure is one :func:`register` call (and a test against trec_eval).
A :class:`Mean` carries its numerator and denominator ("over 47 of 50 cases"); an empty one is
N/A.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from ptah.core.plugins import hookimpl
from ptah.core.registry import Registry

Score = Callable[[Sequence[str], Mapping[str, float], int], float]
"""``score(top, relevant, k)``: ``top`` is the ranking cut at k, ``relevant`` the grades > 0
(non-empty)."""
Parts = Callable[[Sequence[str], Mapping[str, float], int], tuple[float, float]]
"""``parts(top, relevant, k)``: the numerator and denominator whose ratio is the value."""


@dataclass(frozen=True)
class MeasureKind:
    """One registered measure.

    ``name`` is how people write it (``nDCG``, ``--measure nDCG@10``,
    ``--max-drop nDCG=0.02``); ``key`` its report key when measured at each
    case's own depth (``ndcg``); ``label`` its column heading; ``trec_eval``
    the trec_eval measure it agrees with; ``formula`` its definition in one
    line; ``default`` whether every evaluation reports it at the cases' own
    depths.
    """

    name: str
    key: str
    label: str
    trec_eval: str
    formula: str
    score: Score
    default: bool = False
    top_holes_first: bool = False
    # how relevant holes move the value (:mod:`ptah.core.estimate`): "sum", the value with a set S of
    # relevant keys added is (c + sum of each one's gain) / D(|S|); "first", the largest of each
    # relevant key's own value
    holes: str | None = None
    # a "sum" measure's numerator and denominator (value = numerator / denominator): the estimate's
    # parts
    parts: Parts | None = None

    def __call__(self, ranking: Sequence[str], grades: Mapping[str, float], k: int) -> float | None:
        """This measure of one ranking at depth k; None when no key is relevant."""
        top, relevant = _prepared(ranking, grades, k)
        if not relevant:
            return None
        return self.score(top, relevant, k)

    def split(
        self, ranking: Sequence[str], grades: Mapping[str, float], k: int
    ) -> tuple[float, float] | None:
        """The numerator and denominator of a "sum" measure of one ranking at depth k; None when no
        key is relevant or the measure has no parts."""
        top, relevant = _prepared(ranking, grades, k)
        if not relevant or self.parts is None:
            return None
        return self.parts(top, relevant, k)


MEASURES: Registry[MeasureKind] = Registry(
    "measure", unknown=ValueError, use="use one of", hook="register_measures"
)
_OWN: list[MeasureKind] = []  # ptah's own measures, registered through the door below


def register(kind: MeasureKind) -> MeasureKind:
    """Add a measure to the registry; its name and key must be new, in any case spelling (ValueError
    otherwise)."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", kind.name):
        raise ValueError(
            f"a measure name is letters, digits and _ starting with a letter, not {kind.name!r}"
        )
    for other in MEASURES:
        if kind.name.lower() in (other.name.lower(), other.key.lower()) or kind.key.lower() in (
            other.name.lower(),
            other.key.lower(),
        ):
            raise ValueError(
                f"measure {kind.name!r} (key {kind.key!r}) is already registered as {other.name!r}"
            )
    return MEASURES.register(kind.name, kind)


def unregister(name: str) -> None:
    """Remove a measure (for tests that register their own)."""
    MEASURES.unregister(name)


def kinds() -> Iterator[MeasureKind]:
    """Every registered measure, in registration order."""
    return iter(MEASURES)


def kind(name: str) -> MeasureKind:
    """The measure registered as ``name`` (or its report key, or any case spelling); ValueError
    otherwise."""
    if name in MEASURES:
        return MEASURES.get(name)
    for candidate in MEASURES:
        if name.lower() in (candidate.name.lower(), candidate.key.lower()):
            return candidate
    raise MEASURES.unknown(name if len(name) <= 40 else name[:40] + "…")


@dataclass(frozen=True)
class Measure:
    """A measure at a depth: ``Measure("MAP", 10)`` is ``MAP@10``; ``Measure("nDCG")`` is nDCG at
    each case's k.

    ``str(Measure.parse(text)) == text`` for every canonical text, and
    ``Measure.parse(str(m)) == m`` for every measure.
    """

    name: str
    k: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", kind(self.name).name)
        if self.k is not None and (
            isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1
        ):
            raise ValueError(f"depth of {self.name} must be an integer >= 1, got {self.k!r}")

    @property
    def kind(self) -> MeasureKind:
        return kind(self.name)

    @property
    def key(self) -> str:
        """Its key in a report's means and case values: ``ndcg`` at each case's depth, ``MAP@10`` at
        a fixed one."""
        return self.kind.key if self.k is None else f"{self.name}@{self.k}"

    @property
    def label(self) -> str:
        return self.kind.label if self.k is None else f"{self.kind.label}@{self.k}"

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}@{self.k}"

    @classmethod
    def parse(cls, text: str) -> Measure:
        """The measure ``text`` names: ``NAME`` or ``NAME@K`` (``MAP@10``, ``recall``, ``mrr``);
        ValueError otherwise."""
        match = re.fullmatch(r"([A-Za-z][A-Za-z0-9_]*)(?:@([1-9][0-9]{0,5}))?", text)
        if match is None:
            shown = text if len(text) <= 40 else text[:40] + "…"
            raise ValueError(
                f"cannot read measure {shown!r}; write NAME or NAME@K with NAME one of "
                f"{', '.join(MEASURES.names())} and K a positive integer, e.g. nDCG@10"
            )
        return cls(match.group(1), int(match.group(2)) if match.group(2) else None)

    def depth(self, case_k: int) -> int:
        """The depth this measure looks at for a case of depth ``case_k``."""
        return case_k if self.k is None else self.k

    def score(
        self, ranking: Sequence[str], grades: Mapping[str, float], case_k: int | None = None
    ) -> float | None:
        """This measure of one ranking; None when no key is relevant."""
        k = case_k if self.k is None else self.k
        if k is None:
            raise ValueError(f"{self.name} is measured at each case's own depth; give case_k")
        return self.kind(ranking, grades, k)


def registry_order(names: Iterable[str]) -> list[str]:
    """``names`` (string forms or report keys) in the registry's order: by kind as registered, each
    kind at its cases' own depth first, then by depth; a name no registered measure reads keeps its
    place after them."""
    order = {kind.name: index for index, kind in enumerate(MEASURES)}

    def place(name: str) -> tuple[int, int]:
        try:
            measure = Measure.parse(name)
        except ValueError:
            return len(order), 0
        return order[measure.name], measure.k or 0

    return sorted(names, key=place)


# --- the measures -----------------------------------------------------------


def _recall_parts(top: Sequence[str], relevant: Mapping[str, float], k: int) -> tuple[float, float]:
    return float(sum(1 for key in top if key in relevant)), float(len(relevant))


def _recall(top: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    found, total = _recall_parts(top, relevant, k)
    return found / total


def _reciprocal_rank(top: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    for rank, key in enumerate(top, start=1):
        if key in relevant:
            return 1.0 / rank
    return 0.0


_LOG2S = tuple(math.log2(rank + 1) for rank in range(257))  # log2(rank + 1), by rank


def _ndcg_parts(top: Sequence[str], relevant: Mapping[str, float], k: int) -> tuple[float, float]:
    ideal = sorted(relevant.values(), reverse=True)[:k]
    deepest = max(len(top), len(ideal))
    log2s = (
        _LOG2S if deepest < len(_LOG2S) else [math.log2(rank + 1) for rank in range(deepest + 1)]
    )
    # the keys gaining nothing are left out of the sum: adding 0.0 changes no partial sum
    dcg = sum(
        (relevant[key] / log2s[rank] for rank, key in enumerate(top, start=1) if key in relevant),
        0.0,
    )
    idcg = sum(grade / log2s[rank] for rank, grade in enumerate(ideal, start=1))
    return dcg, idcg


def _ndcg(top: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    dcg, idcg = _ndcg_parts(top, relevant, k)
    return dcg / idcg


def _average_precision(top: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    found, total = 0, 0.0
    for rank, key in enumerate(top, start=1):
        if key in relevant:
            found += 1
            total += found / rank
    return total / len(relevant)


def _precision_parts(
    top: Sequence[str], relevant: Mapping[str, float], k: int
) -> tuple[float, float]:
    return float(sum(1 for key in top if key in relevant)), float(k)


def _precision(top: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    found, total = _precision_parts(top, relevant, k)
    return found / total


def _success(top: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    return 1.0 if any(key in relevant for key in top) else 0.0


_OWN.append(
    MeasureKind(
        "recall",
        "recall",
        "recall",
        "recall.k",
        "|relevant keys in the top k| / |relevant keys|",
        _recall,
        default=True,
        top_holes_first=True,
        holes="sum",
        parts=_recall_parts,
    )
)
_OWN.append(
    MeasureKind(
        "MRR",
        "mrr",
        "MRR",
        "recip_rank (run cut at k)",
        "1 / rank of the first relevant key in the top k, else 0",
        _reciprocal_rank,
        default=True,
        top_holes_first=True,
        holes="first",
    )
)
_OWN.append(
    MeasureKind(
        "nDCG",
        "ndcg",
        "nDCG",
        "ndcg_cut.k",
        "sum of grade / log2(rank + 1) over the top k, divided by the same sum over all grades sorted descending and cut at k",
        _ndcg,
        default=True,
        top_holes_first=True,
        holes="sum",
        parts=_ndcg_parts,
    )
)
_OWN.append(
    MeasureKind(
        "MAP",
        "map",
        "MAP",
        "map_cut.k",
        "sum of precision at the rank of each relevant key in the top k, divided by |relevant keys|",
        _average_precision,
        top_holes_first=True,
    )
)
_OWN.append(
    MeasureKind(
        "P",
        "p",
        "P",
        "P.k",
        "|relevant keys in the top k| / k (k even when fewer rows were ranked)",
        _precision,
        top_holes_first=True,
        holes="sum",
        parts=_precision_parts,
    )
)
_OWN.append(
    MeasureKind(
        "success",
        "success",
        "success",
        "success.k",
        "1 when a relevant key is in the top k, else 0 (hit rate)",
        _success,
        top_holes_first=True,
        holes="first",
    )
)


def _own_measure(name: str) -> Measure:
    """One of ptah's own measures at each case's depth, made without a lookup: importing this
    module must not fill the registry (the door imports this module to fill it)."""
    measure = object.__new__(Measure)
    object.__setattr__(measure, "name", name)
    object.__setattr__(measure, "k", None)
    return measure


DEFAULT_MEASURES = tuple(_own_measure(kind.name) for kind in _OWN if kind.default)
"""The measures every evaluation reports, each at the case's own depth."""


def _prepared(
    ranking: Sequence[str], grades: Mapping[str, float], k: int
) -> tuple[Sequence[str], dict[str, float]]:
    """The ranking cut at k and the relevant keys' grades, after checking both."""
    top = _top(ranking, k)
    relevant: dict[str, float] = {}
    for key, grade in grades.items():
        if not 0 <= grade < math.inf:  # finite and >= 0; NaN fails every comparison
            raise ValueError(f"grade of {key!r} must be a finite number >= 0, got {grade!r}")
        if grade > 0:
            relevant[key] = float(grade)
    return top, relevant


def checked(
    rankings: Sequence[Sequence[str]], grades: Mapping[str, float], k: int
) -> tuple[list[Sequence[str]], dict[str, float]]:
    """Each ranking cut at k and the relevant keys' grades, checked as calling a kind checks
    them (ValueError otherwise): for a caller that measures the same rankings under many
    grades, calling a kind's ``score`` itself."""
    top, relevant = _prepared(rankings[0], grades, k)
    return [top, *(_top(ranking, k) for ranking in rankings[1:])], relevant


def _top(ranking: Sequence[str], k: int) -> Sequence[str]:
    """The ranking cut at k, after checking k and that its keys are distinct."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"depth k must be an integer >= 1, got {k!r}")
    top = ranking[:k]
    if len(set(top)) != len(top):
        raise ValueError(
            "a ranking must hold distinct keys; remove the duplicates before measuring"
        )
    return top


@hookimpl
def register_measures(register: Callable) -> None:
    for kind in _OWN:
        register(kind)


MEASURES.adding(register)


@dataclass(frozen=True)
class Mean:
    """An arithmetic mean with its parts: ``numerator`` / ``denominator``.

    ``denominator`` counts the values that were defined; ``undefined`` counts
    those that were N/A and left out. ``value`` is None (N/A) when nothing was
    defined -- never 0 or 1. ``high_numerator`` sums the same cases' high
    bounds (:mod:`ptah.core.judged`); None when unknown (a ``ptah-report@1``).
    """

    numerator: float
    denominator: int
    undefined: int = 0
    high_numerator: float | None = None

    @property
    def value(self) -> float | None:
        if self.denominator == 0:
            return None
        return self.numerator / self.denominator

    @property
    def high(self) -> float | None:
        """The mean of the cases' high bounds; None when unknown or N/A."""
        if self.denominator == 0 or self.high_numerator is None:
            return None
        return self.high_numerator / self.denominator


def mean_of(values: Iterable[float | None]) -> Mean:
    """The mean of the defined values; None values are counted in ``undefined``.

    The numerator is summed with ``math.fsum`` (correctly rounded), so a mean
    does not depend on the order of the cases. A NaN raises ``ValueError``.
    """
    defined: list[float] = []
    undefined = 0
    for value in values:
        if value is None:
            undefined += 1
        elif math.isnan(value):
            raise ValueError("cannot average NaN; a measure produced NaN")
        else:
            defined.append(value)
    return Mean(numerator=math.fsum(defined), denominator=len(defined), undefined=undefined)


def bounded_mean(values: Iterable[float | None], highs: Iterable[float | None]) -> Mean:
    """:func:`mean_of` the values, with the high bounds of the same cases summed beside (a high
    bound is defined exactly where its value is)."""
    mean = mean_of(values)
    return Mean(
        mean.numerator,
        mean.denominator,
        mean.undefined,
        math.fsum(h for h in highs if h is not None),
    )
