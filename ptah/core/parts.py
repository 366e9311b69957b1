"""The parts of a report, typed: the :class:`Part` base, the sections that compute them, and a run's
members.

* :class:`Part` -- a frozen dataclass whose fields are its JSON members, in order; one
  ``to_dict``/``from_dict`` serves all, led by each field's type (another part, a
  :class:`~ptah.core.measures.Mean`, a tuple or mapping of them; ``Mapping`` alone is free-form
  JSON, kept read-only). A member in ``ABSENT_WHEN_NONE`` is absent when None; one in
  ``OPTIONAL`` may be missing from an older report, reads None, is kept in ``omitted`` and written
  back absent, so ``from_dict(d).to_dict() == d``.
* :class:`Section` -- a ``name``, ``compute(context)`` (a frozen result, or None, which later
  sections read as ``context.results[name]``) and ``gates(context)``, asked once every section has
  computed. Sections come through the door (hook ``register_sections``) in the order registered;
  a plugin's result is written under ``sections.NAME`` by its ``to_dict()``.
* A run's members (schema ``run``): what was searched (:class:`RunGeneration`, :class:`Search`), a
  variant's controls, the cost, its slices' means, the index against exact search, the expectation
  counts, and the verification: coverage = rows with a vector / rows; freshness = vectors made from
  the text the row holds now / vectors (None when it cannot be verified). Free-form where the
  schema is: a generation's ``settings`` and ``versions``, a service's ``probe`` and ``usage``, a
  reranker's ``scorer`` and ``options``.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cache
from types import MappingProxyType
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Protocol,
    Self,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    runtime_checkable,
)

from ptah.core.compared import Flat, written
from ptah.core.measures import Mean
from ptah.core.registry import Registry

if TYPE_CHECKING:
    from ptah.core.corpus import Corpus
    from ptah.core.report import Gate, Report, Run
    from ptah.core.request import EvaluationRequest


def read_only(value: Any) -> Any:
    """A read-only deep copy of JSON data: mappings become read-only, lists tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: read_only(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(read_only(item) for item in value)
    return value


def plain(value: Any) -> Any:
    """JSON data back from :func:`read_only`: dicts and lists."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [plain(item) for item in value]
    return value


def mean_to_dict(mean: Mean) -> dict:
    data = {
        "value": mean.value,
        "numerator": mean.numerator,
        "denominator": mean.denominator,
        "undefined": mean.undefined,
    }
    if mean.high_numerator is not None:
        data |= {"high": mean.high, "high_numerator": mean.high_numerator}
    return data


def mean_from_dict(data: Mapping) -> Mean:
    return Mean(
        numerator=data["numerator"],
        denominator=data["denominator"],
        undefined=data["undefined"],
        high_numerator=data.get("high_numerator"),
    )


def to_json(value: Any) -> Any:
    """A field's JSON."""
    if isinstance(value, (Part, Flat)):
        return value.to_dict()
    if isinstance(value, Mean):
        return mean_to_dict(value)
    if isinstance(value, Mapping):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [to_json(item) for item in value]
    return value


def from_json(hint: Any, value: Any) -> Any:
    """The JSON ``value`` read as a field typed ``hint``."""
    if value is None:
        return None
    if get_origin(hint) in (Union, types.UnionType):
        hint = next(arg for arg in get_args(hint) if arg is not type(None))
    origin = get_origin(hint) or hint
    if isinstance(origin, type) and issubclass(origin, (Part, Flat)):
        return origin.from_dict(value)
    if origin is Mean:
        return mean_from_dict(value)
    if origin is tuple:
        return tuple(from_json(get_args(hint)[0], item) for item in value)
    if origin is Mapping and get_args(hint):
        return MappingProxyType(
            {key: from_json(get_args(hint)[1], item) for key, item in value.items()}
        )
    return read_only(value)


@cache
def _hints(cls: Any) -> dict[str, Any]:
    return get_type_hints(cls)


@dataclass(frozen=True)
class Part:
    """A part whose JSON members are its fields, in order (see the module docs)."""

    # the members the part was read without, written back absent
    omitted: frozenset[str] = field(default=frozenset(), kw_only=True, repr=False, compare=False)

    ABSENT_WHEN_NONE: ClassVar[tuple[str, ...]] = ()
    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict:
        data = {}
        for member in fields(self):
            value = getattr(self, member.name)
            if member.name == "omitted" or member.name in self.omitted:
                continue
            if value is None and member.name in self.ABSENT_WHEN_NONE:
                continue
            data[member.name] = to_json(value)
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> Self:
        hints = _hints(cast("Any", cls))
        names = [member.name for member in fields(cast("Any", cls)) if member.name != "omitted"]
        values = {name: from_json(hints[name], data.get(name)) for name in names}
        return cls(**values, omitted=frozenset(name for name in names if name not in data))


class Context(Protocol):
    """What every section may read: the corpus, the request, the measured runs, the baseline
    (re-scored from its rankings; None without one) and the results of the sections before."""

    @property
    def corpus(self) -> Corpus: ...

    @property
    def request(self) -> EvaluationRequest: ...

    @property
    def runs(self) -> tuple[Run, ...]: ...

    @property
    def baseline(self) -> Report | None: ...

    @property
    def results(self) -> Mapping[str, Any]: ...


@runtime_checkable
class Section(Protocol):
    """A part of the report (see the module docs)."""

    name: str

    def compute(self, context: Any) -> Any: ...

    def gates(self, context: Any) -> Sequence[Gate]: ...


SECTIONS: Registry[Section] = Registry("report section", hook="register_sections")


def register_section(section: Section) -> Section:
    """Add a section after those registered; its name must be new."""
    return SECTIONS.register(section.name, section)


def sections() -> tuple[Section, ...]:
    """Every registered section, in the order registered."""
    return tuple(SECTIONS)


RANKING_RULE = "score descending, ties broken by key ascending"


@dataclass(frozen=True)
class Verification(Part):
    """A generation's verification when measured: ``ok``, whether stale vectors were allowed, the
    text fingerprint (a lexical index's, or a table's own vectors'), and ``note``, what the run's
    channel could not verify, one line every renderer prints under the run (an outside
    retriever's coverage and freshness); ``checks`` the verification's counts
    (:class:`ptah.services.verify.VerifyResult`), written before them."""

    checks: Mapping
    ok: bool
    allow_stale: bool
    fingerprint: str | None = None
    note: str | None = None

    REST: ClassVar[str] = "checks"  # the members besides the named ones
    ABSENT_WHEN_NONE: ClassVar[tuple[str, ...]] = ("fingerprint", "note")

    def to_dict(self) -> dict:
        return plain(self.checks) | written(super().to_dict(), frozenset(["checks"]))

    @classmethod
    def from_dict(cls, data: Mapping) -> Self:
        named = ("ok", "allow_stale", "fingerprint", "note")
        rest = {key: value for key, value in data.items() if key not in named}
        return replace(super().from_dict({**data, "checks": rest}), checks=read_only(rest))


@dataclass(frozen=True)
class RunGeneration(Part):
    """What a run searched: the generation's name (the run's), identity, model, settings, size and
    verification; a service's ``probe`` and ``usage``; a lexical index's ``index`` and the
    generation whose text it indexes (``text_of``)."""

    name: str
    identity: str
    model: str
    settings: Mapping
    dimension: int
    rows: int
    model_digest: str | None
    versions: Mapping | None
    verification: Verification
    queries_from_cache: int | None = None
    probe: Mapping | None = None
    usage: Mapping | None = None
    index: Mapping | None = None
    text_of: str | None = None

    OPTIONAL: ClassVar[tuple[str, ...]] = ("model_digest", "versions")
    ABSENT_WHEN_NONE: ClassVar[tuple[str, ...]] = (
        "queries_from_cache",
        "probe",
        "usage",
        "index",
        "text_of",
    )


@dataclass(frozen=True)
class SearchIndex(Part):
    """The index a search went through: its name, kind and shape (hnsw: ``m``,
    ``ef_construction``; ivfflat: ``lists``, ``probes``), operator class and, for a table's own
    index, the table and column."""

    name: str
    kind: str
    m: int | None = None
    ef_construction: int | None = None
    lists: int | None = None
    probes: int | None = None
    operator_class: str | None = None
    table: str | None = None
    column: str | None = None

    ABSENT_WHEN_NONE: ClassVar[tuple[str, ...]] = (
        "m",
        "ef_construction",
        "lists",
        "probes",
        "table",
        "column",
    )


@dataclass(frozen=True)
class SearchFusion(Part):
    """A hybrid run's fusion: the method, its k, the depth fused and the channels."""

    method: str
    k: float
    depth: int
    channels: tuple[str, ...]


@dataclass(frozen=True)
class SearchRerank(Part):
    """A reranked run's rerank stage: its kind and the candidates it reranked."""

    kind: str
    candidates: int


@dataclass(frozen=True)
class Search(Part):
    """How a run searched: its channel, mode and similarity; the index (index and both), the hybrid
    fusion, the rerank stage; and the ranking rule."""

    channel: str
    mode: str
    similarity: str
    index: SearchIndex | None = None
    ef_search: int | None = None
    fusion: SearchFusion | None = None
    rerank: SearchRerank | None = None
    ranking: str = RANKING_RULE

    ABSENT_WHEN_NONE: ClassVar[tuple[str, ...]] = ("index", "ef_search", "fusion", "rerank")


@dataclass(frozen=True)
class VariantSearch(Part):
    """A variant's vector search: its mode and, through an index, ef_search."""

    mode: str
    ef_search: int | None


@dataclass(frozen=True)
class RerankService(Part):
    """The service a reranker asked: its API, address and time-out."""

    api: str
    base_url: str
    timeout_s: float


@dataclass(frozen=True)
class VariantRerank(Part):
    """A variant's rerank stage as executed: its settings (:meth:`ptah.core.spec.Rerank.controls`),
    what scored and a service's usage."""

    kind: str
    candidates: int
    generation: str | None
    model: str | None
    service: RerankService | None
    batch_size: int | None
    options: Mapping | None = None
    scorer: Mapping | None = None
    usage: Mapping | None = None

    ABSENT_WHEN_NONE: ClassVar[tuple[str, ...]] = ("options", "usage")


@dataclass(frozen=True)
class RunVariant(Part):
    """A variant's executed controls: the channels fused, the channel they make, the generation,
    the vector search and the rerank stage."""

    name: str
    channels: tuple[str, ...]
    channel: str
    generation: str
    search: VariantSearch
    rerank: VariantRerank | None


@dataclass(frozen=True)
class StageCost(Part):
    """One stage's cost: its seconds, share of the evaluation's time, time per query (p50, p95,
    milliseconds), how it was timed; a service's ``usage`` and a model's ``load_s``."""

    seconds: float
    share: float | None
    p50_ms: float | None
    p95_ms: float | None
    timed: str
    usage: Mapping | None = None
    load_s: float | None = None

    ABSENT_WHEN_NONE: ClassVar[tuple[str, ...]] = ("usage", "load_s")


@dataclass(frozen=True)
class Cost(Part):
    """What a run cost: each stage's, and the time per query over every stage."""

    stages: Mapping[str, StageCost]
    p50_ms: float | None
    p95_ms: float | None


@dataclass(frozen=True)
class SliceMeans(Part):
    """One slice of a run: its digest and case count and, from 2 cases, its means (keyed by the
    measure's report key) and judged@k."""

    digest: str
    cases: int
    means: Mapping[str, Mean] | None
    judged: Mean | None


@dataclass(frozen=True)
class RunAnn(Part):
    """``--search both``: the mean ANN recall, exact search's means and the deltas index - exact,
    keyed by the measure's report key."""

    recall: Mean
    exact: Mapping[str, Mean]
    delta: Mapping[str, float | None]


@dataclass(frozen=True)
class CaseAnn(Part):
    """``--search both``, one case: its ANN recall, exact search's values, the deltas and the keys
    of the exact top k the index missed."""

    recall: float | None
    exact: Mapping[str, float | None]
    delta: Mapping[str, float | None]
    missed: tuple[str, ...]


@dataclass(frozen=True)
class RequiredCounts(Part):
    """Cases declaring required keys, those that missed one, and the keys missed."""

    cases: int
    failed: int
    keys_missed: int


@dataclass(frozen=True)
class ForbiddenCounts(Part):
    """Cases declaring forbidden keys, those leaking one, the hits, and leaking / cases (None when
    no case declares any)."""

    cases: int
    leaking: int
    hits: int
    rate: float | None


@dataclass(frozen=True)
class TieCounts(Part):
    """Cases whose top k a tie straddles or whose expected keys tie."""

    cases_flagged: int


MAX_OFFENDERS = 10


@dataclass(frozen=True)
class VerifyResult:
    """Coverage and freshness of one generation (each count defined in
    :mod:`ptah.services.verify`)."""

    generation: str
    identity: str
    built: bool
    rows: int
    vectors: int
    covered: int
    fresh: int
    stale: int
    missing: int
    orphans: int
    stale_keys: tuple[str, ...]
    missing_keys: tuple[str, ...]
    orphan_keys: tuple[str, ...]
    freshness_note: str | None = (
        None  # set when freshness cannot be verified (an external generation): why
    )
    # the source snapshot as this generation renders it: SHA-256 over each row's identity and text
    # digest, in source order (the report's verification.fingerprint; a baseline's tells another
    # snapshot). Not in as_dict.
    fingerprint: str | None = None

    @property
    def coverage(self) -> float | None:
        return self.covered / self.rows if self.rows else None

    @property
    def freshness(self) -> float | None:
        return self.fresh / self.covered if self.covered and self.freshness_note is None else None

    @property
    def complete(self) -> bool:
        return self.missing == 0

    @property
    def fresh_ok(self) -> bool:
        return self.stale == 0

    @property
    def ok(self) -> bool:
        return self.complete and self.fresh_ok and self.orphans == 0

    def as_dict(self) -> dict:
        values = asdict(self)
        for name in ("stale_keys", "missing_keys", "orphan_keys"):
            values[name] = list(values[name])
        values.update(
            coverage=self.coverage,
            freshness=self.freshness,
            complete=self.complete,
            fresh_ok=self.fresh_ok,
            ok=self.ok,
        )
        if (
            self.freshness_note is None
        ):  # a built generation's verification reads as before external ones existed
            del values["freshness_note"]
        del values["fingerprint"]
        return values
