"""The retriever channel: a case's query answered by a search ptah did not build.

Its three forms, chosen by its settings (a variant's ``options:``, or what the
API hands ``Project.evaluate(corpus, retriever=...)``):

* ``run: FILE`` -- a recorded run: TREC, or JSON Lines of ranked keys per
  case (:mod:`ptah.retriever.rankings`), relative to the specification;
* ``url: URL`` -- a search service (:mod:`ptah.retriever.service`), with
  ``api_key_env``, ``timeout_s``, ``batch_size`` and ``max_concurrency``;
* a Python callable ``fn(query, k)`` returning keys best first, or
  ``(key, score)`` pairs (the API only).

Each case is asked for its ranking depth (a rerank stage's candidates when a
variant reranks). Every key answered must be a row of the source table as
the specification filters it, else :class:`UnknownRows` (exit 3, naming the
first few): an outside index that drifted from the table. Coverage and
freshness cannot be verified for an outside retriever; the run says so, and
its ``rows`` are the source table's as the specification filters it (the
rows it is gated against, as every run over the table reports), never a
count of an index ptah cannot see.
The run's identity is the digest of its rankings; with ``record_run`` the
rankings are written as JSON Lines that ``run:`` replays exactly.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ptah import CaseResult, InputError, OperationalError, Run, RunGeneration, Search, Verification
from ptah.core.errors import CredentialMissing
from ptah.core.parts import read_only
from ptah.core.report import make_run, measure_case, ranking_depth
from ptah.retriever import rankings as answers
from ptah.retriever.rankings import BadRanking, Ranking
from ptah.services.channels import RunPlan, Sides

RETRIEVER = "retriever"
NOT_VERIFIED = "coverage and freshness are not verified for an outside retriever"
OPTIONS = ("run", "url", "api_key_env", "timeout_s", "batch_size", "max_concurrency")
FORMS = {"run": "recorded run", "url": "service", "callable": "callable"}  # the run's search mode
DEFAULT_BATCH, DEFAULT_CONCURRENCY, DEFAULT_TIMEOUT_S = 16, 4, 60
Asked = Sequence[tuple[str, str, int]]  # (case, query, k) for each case


class UnknownRows(OperationalError):
    """An outside retriever answered keys that are no row of the source table (exit 3)."""


@dataclass(frozen=True)
class Retriever:
    """One outside retriever: its form, what it is (a file, a URL, a function), how to ask it and
    how to let it go once asked (a service's pooled connections)."""

    form: str
    where: str
    ask: Callable[[Asked], list[Ranking]]
    close: Callable[[], None] = lambda: None

    @property
    def shown(self) -> str:
        """``recorded run FILE``, ``service URL`` or ``callable NAME``."""
        return f"{FORMS[self.form]} {self.where}"


class RetrieverChannel:
    name = RETRIEVER
    needs_vectors = False
    outside = True  # record_run writes its rankings; its identity is their digest

    def measure(self, plan: RunPlan, sides: Sides) -> Run:
        retriever = retriever_of(plan, sides)
        cases = sides.corpus.cases
        asked = [(case.id, case.query, ranking_depth(case, sides.measures)) for case in cases]
        clock = time.perf_counter()
        try:
            found = retriever.ask(asked)
        finally:  # asked once: a service's connections are closed, answered or not
            retriever.close()
        sides.charge("retriever", clock)
        pairs = [(case.id, ranking) for case, ranking in zip(cases, found)]
        returned = {key for ranking in found for key in ranking.keys}
        _refuse_unknown(sides, pairs, returned, retriever)
        sides.check_keys(returned)
        digest = answers.digest(pairs)
        note = _recorded(sides, plan.name, pairs, digest)
        results = [_measured(case, ranking, sides) for case, ranking in zip(cases, found)]
        generation = RunGeneration(
            name=plan.name,
            identity=digest,
            model=f"an outside retriever ({retriever.shown})",
            settings=read_only({"form": retriever.form, retriever.form: retriever.where}),
            dimension=0,
            rows=sides.project.source.count(),  # the table's, as filtered: its index is not seen
            model_digest=None,
            versions=read_only({}),
            verification=Verification(read_only({}), True, False, digest, note),
            text_of=plan.generation,
        )
        mode = FORMS[retriever.form]
        search = Search(RETRIEVER, mode, "ranked by the retriever", ranking=RANKED)
        return make_run(generation, search, results, sides.measures)


RANKED = "the retriever's order; without scores, a row scores 1 / rank"


def _measured(case, ranking: Ranking, sides: Sides) -> CaseResult:
    count = len(ranking.keys)
    return measure_case(
        case,
        ranking.ranked(),
        measures=sides.measures,
        searched=count,
        unranked=f"not among the {count:,} rows the retriever returned",
    )


def retriever_of(plan: RunPlan, sides: Sides) -> Retriever:
    """The retriever a run asks: the API's (``retriever=``) for a plain run, else the variant's
    options, else those of the one variant of the specification that uses this channel."""
    given = sides.given.get(RETRIEVER) if plan.variant is None else None
    if callable(given):
        return _callable(given)
    if given is not None:
        return _configured(given, "retriever=", sides, plan.name)
    variant = plan.variant or _only_variant(sides)
    where = f"variants.{variant.name}.options"
    return _configured(variant.options, where, sides, plan.name)


def _only_variant(sides: Sides):
    spec = sides.project.spec
    found = [v for v in spec.variants.values() if v.channel == RETRIEVER]
    if len(found) != 1:
        raise InputError(
            f"{spec.path}: --channel retriever asks the one variant with channels: [retriever], and "
            f"the specification declares {len(found)}; pass --variant NAME"
        )
    return found[0]


def _configured(options: object, where: str, sides: Sides, run: str) -> Retriever:
    if not isinstance(options, Mapping):
        raise InputError(f"{where}: give a function, or options with run: FILE or url: URL")
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise InputError(
            f"{where}: {unknown[0]!r} is not a retriever option; write {', '.join(OPTIONS)}"
        )
    if ("run" in options) == ("url" in options):
        raise InputError(f"{where}: write run: FILE (a recorded run) or url: URL (a service), one")
    if "run" in options:
        return _recorded_run(str(options["run"]), sides, run)
    return _service(options, where)


def _recorded_run(named: str, sides: Sides, run: str) -> Retriever:
    from ptah.adapters.files import read_bounded

    path = os.path.join(sides.project.spec.root, os.path.expanduser(named))
    data = read_bounded(path, limit=answers.MAX_RUN_BYTES, what="recorded run")

    def ask(asked: Asked) -> list[Ranking]:
        found = answers.read_run(named, data, run)
        missing = [case for case, _, _ in asked if case not in found]
        if missing:
            raise InputError(
                f"{named}: ranks no case {', '.join(repr(c) for c in missing[: answers.LISTED])}"
                + (
                    f" and {len(missing) - answers.LISTED} more"
                    if len(missing) > answers.LISTED
                    else ""
                )
                + "; record the run on this corpus"
            )
        return [found[case] for case, _, _ in asked]

    return Retriever("run", named, ask)


def _service(options: Mapping, where: str) -> Retriever:
    from ptah.adapters.spec_fields import base_url_problem
    from ptah.retriever.service import RetrieverClient, connection

    url = str(options["url"])
    problem = base_url_problem(url)
    if problem:
        raise InputError(f"{where}.url: {problem}")
    key_env = options.get("api_key_env")
    key = None
    if key_env is not None:
        key = os.environ.get(str(key_env))
        if not key:
            raise CredentialMissing(
                f"{where}.api_key_env: the environment variable {key_env} is not set; set it to "
                "the retriever service's key"
            )
    numbers = {
        name: _whole(options, name, default, where)
        for name, default in (
            ("batch_size", DEFAULT_BATCH),
            ("max_concurrency", DEFAULT_CONCURRENCY),
            ("timeout_s", DEFAULT_TIMEOUT_S),
        )
    }
    client = RetrieverClient(
        url,
        connection(key, numbers["batch_size"], numbers["max_concurrency"], numbers["timeout_s"]),
    )
    return Retriever("url", url, client.rankings, client.close)


def _whole(options: Mapping, name: str, default: int, where: str) -> int:
    value = options.get(name, default)
    if isinstance(value, str) and value.isdigit():  # YAML options: come as written
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 3600:
        raise InputError(f"{where}.{name}: must be a whole number from 1 to 3,600, not {value!r}")
    return value


def _callable(function: Callable[..., Any]) -> Retriever:
    who = getattr(function, "__name__", type(function).__name__)

    def ask(asked: Asked) -> list[Ranking]:
        found = []
        for case, query, k in asked:
            try:
                answer = function(query, k)
            except Exception as exc:  # the caller's function: told, never a traceback
                raise OperationalError(
                    f"the retriever {who} raised {type(exc).__name__} on case {case!r}: {exc}"
                ) from None
            listed = answer if isinstance(answer, Mapping) else list(answer)
            try:
                found.append(answers.ranking_of(listed))
            except (BadRanking, TypeError) as exc:
                raise InputError(f"the retriever {who} {exc} (case {case!r})") from None
        return found

    return Retriever("callable", who, ask)


def _refuse_unknown(
    sides: Sides, pairs: list[tuple[str, Ranking]], returned: set[str], retriever: Retriever
) -> None:
    """Exit 3 when a key answered is no row of the source table (as filtered)."""
    status = sides.project.source.lookup(sorted(returned))
    unknown = sorted(key for key in returned if status.get(key) != "ok")
    if not unknown:
        return
    first = unknown[: answers.LISTED]
    where = {key: next(case for case, r in pairs if key in r.keys) for key in first}
    named = ", ".join(f"{key!r} (case {where[key]!r})" for key in first)
    more = f" and {len(unknown) - len(first)} more" if len(unknown) > len(first) else ""
    table = sides.project.spec.source.table
    raise UnknownRows(
        f"the retriever ({retriever.shown}) answered keys that are no row of "
        f"table {table}: {named}{more}; its index has drifted from the table"
    )


def _recorded(sides: Sides, run: str, pairs: list[tuple[str, Ranking]], digest: str) -> str:
    """Record the run's rankings when asked (every retriever run so far, one file); the run's
    note."""
    path = sides.request.record_run
    if path is None:
        return NOT_VERIFIED
    from ptah.adapters.files import write_pieces_atomically

    kept: dict = sides.once(("retriever", "recorded"), dict)
    before = sides.once(("retriever", "before"), lambda: _read_before(path))
    kept[run] = pairs
    pieces = [
        line for name, ranked in kept.items() for line in answers.recorded_lines(name, ranked)
    ]
    write_pieces_atomically(path, pieces)
    said = f"{NOT_VERIFIED}; its rankings ({digest}) are recorded in {path}"
    earlier = before.get(run)
    if earlier is None:
        return said
    old = answers.digest([(case, earlier[case]) for case, _ in pairs if case in earlier])
    if old == digest:
        return said + ", as they were"
    return said + f", replacing a recording that answered otherwise ({old})"


def _read_before(path: str) -> dict[str, dict[str, Ranking]]:
    """The rankings ``path`` recorded before this evaluation, by run (none when it cannot be
    read)."""
    from ptah.adapters.files import read_bounded

    if not os.path.isfile(path):
        return {}
    try:
        data = read_bounded(path, limit=answers.MAX_RUN_BYTES, what="recorded run")
        return answers.recorded_runs(path, data)
    except (InputError, OperationalError, UnicodeDecodeError):
        return {}  # another file; it is replaced
