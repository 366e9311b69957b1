"""The public Python API (``import ptah``): projects, corpora, evaluations and their reports.

The CLI is a client of this module: it parses options, calls these
functions and renders what they return. Everything here sits on the use
cases in :mod:`ptah.services`; errors are the typed ones of
:mod:`ptah.core.errors`, each with the exit code the CLI would use.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ptah.core.corpus import Corpus
from ptah.core.report import Report
from ptah.core.request import EvaluationRequest
from ptah.core.spec import Spec

if TYPE_CHECKING:  # the services load when a method first needs them
    from ptah.core.parts import VerifyResult
    from ptah.services import project as projects
    from ptah.services.build import BuildSummary
    from ptah.services.index_search import IndexSummary
    from ptah.services.project import Generation
    from ptah.services.prune import PruneResult
    from ptah.services.verify import GenerationListing


def load_corpus(path: str | os.PathLike) -> Corpus:
    """Read and validate a corpus file (format 1); :class:`CorpusError` (exit 2) lists every
    problem."""
    from ptah.adapters.corpus_yaml import load_corpus as load

    return load(path)


def load_report(path: str | os.PathLike) -> Report:
    """Read a report written earlier (``--output``), checked as a baseline is."""
    from ptah.services.evaluate import load_baseline

    return load_baseline(path)


def open_project(
    spec: str | os.PathLike | Spec | None = None, *, cwd: str | os.PathLike | None = None
) -> Project:
    """Open a project: a ``ptah.yaml`` path (None: ``$PTAH_SPEC``, else found upward from ``cwd``)
    or a Spec.

    Use it as a context manager, or call :meth:`Project.close`, to release
    the source and store connections.
    """
    from ptah.services import project as projects

    if isinstance(spec, Spec):
        return Project(projects.project_of(spec))
    return Project(projects.open_project(None if spec is None else os.fspath(spec), cwd=cwd))


class Project:
    """An opened specification: its generations, and the use cases on them (the one project class
    of the API; the use cases take what it holds, a :class:`ptah.services.project.Opened`)."""

    def __init__(self, opened: projects.Opened) -> None:
        self._opened = opened  # the source, the store and what is loaded once: what use cases take

    @property
    def spec(self) -> Spec:
        return self._opened.spec

    @property
    def generations(self) -> tuple[str, ...]:
        """The declared generations' names, in the specification's order."""
        return tuple(self._opened.spec.generations)

    def load_corpus(self, path: str | os.PathLike) -> Corpus:
        """Read and validate a corpus as :func:`load_corpus` does."""
        return load_corpus(path)

    def evaluate(
        self,
        corpus: Corpus | str | os.PathLike,
        request: EvaluationRequest | None = None,
        *,
        baseline_report: Report | None = None,
        **options: Any,
    ) -> Report:
        """Measure generations on a corpus and judge the gates.

        ``corpus`` is a loaded :class:`Corpus` or a path. Give a ready
        ``request``, or its options as keywords (``generations``, ``channels``,
        ``max_drop``, ``search``, ``ef_search``, ``bootstrap`` …: every option
        :class:`EvaluationRequest` declares, by the name the server's body
        gives it), never both (TypeError). A negative verdict is not an
        error: it is ``report.verdict``. ``baseline_report``: a baseline report
        in hand (``request.baseline`` then only names it).

        A keyword named after a registered channel hands that channel a value
        (``retriever=fn``: a function ``fn(query, k)`` answering keys best
        first, docs/retriever.md); with no ``channels`` asked, that channel
        is the run.
        """
        from ptah.services.channels import CHANNELS
        from ptah.services.evaluate import evaluate

        names = set(CHANNELS.names())
        given = {name: options.pop(name) for name in list(options) if name in names}
        if given and request is None and not options.get("channels"):
            options["channels"] = tuple(given)

        if request is not None and options:
            raise TypeError(
                f"evaluate() takes a request or its options as keywords, not both; "
                f"put {', '.join(options)} in the request"
            )
        if request is None:
            request = EvaluationRequest.of(**options)
        if not isinstance(corpus, Corpus):
            corpus = self.load_corpus(corpus)
        return evaluate(self._opened, corpus, request, baseline_report, given)

    def build(
        self,
        generation: str | None = None,
        *,
        progress: Callable[[int, int], None] | None = None,
        engine: str = "local",
        **engine_options: Any,
    ) -> BuildSummary:
        """Embed the rows that are new or changed and drop the vectors of rows gone (None: the
        active one).

        ``progress(done, total)`` is called before the first batch and after
        each committed batch. Returns what the build did (rows, embedded,
        deleted, unchanged, seconds). ``engine`` names another registered
        engine (:mod:`ptah.services.engines`; an add-on's, such as ptah-ray's
        ``ray``), which takes the ``engine_options`` it declares.
        """
        from ptah.services.engines import run_build

        summary = run_build(self._opened, generation, progress, engine=engine, **engine_options)
        self._opened.forget_matrices()
        return summary

    def generation(self, name: str | None = None) -> Generation:
        """The declared generation ``name`` (None: the active one): ``.name``, ``.settings``,
        ``.identity.identity``."""
        return self._opened.generation(name)

    def list_generations(self) -> list[GenerationListing]:
        """The generations in the store and the declared ones: identity, model, vectors, rows,
        coverage."""
        from ptah.services.verify import list_generations

        return list_generations(self._opened)

    def index(
        self, generation: str | None = None, *, m: int = 16, ef_construction: int = 64
    ) -> IndexSummary:
        """Build (or replace) a generation's HNSW index (a store with
        ``capabilities.vector_index``)."""
        from ptah.services.index_search import build_index

        return build_index(self._opened, generation, m=m, ef_construction=ef_construction)

    def prune(self, keep: Sequence[str] = (), *, dry_run: bool = False) -> PruneResult:
        """Remove superseded generations from the store, keeping every declared one and those
        ``keep`` names (a stored name or identity); ``dry_run`` removes nothing. Returns
        ``.removed`` and ``.kept``."""
        from ptah.services.prune import prune

        return prune(self._opened, tuple(keep), dry_run=dry_run)

    def verify(self, generation: str | None = None) -> VerifyResult:
        """Coverage and freshness of a generation against the source (``.ok`` when complete and
        fresh)."""
        from ptah.services.verify import verify

        return verify(self._opened, generation)

    def search(
        self, query: str, k: int = 10, *, generation: str | None = None
    ) -> list[tuple[str, float]]:
        """The top ``k`` rows for ``query`` as ``(key, cosine score)`` pairs, best first."""
        from ptah.services.search import search

        (ranked,) = search(self._opened, generation, [query], k)
        return list(ranked)

    def fresh_source(self) -> AbstractContextManager[None]:
        """The source opened afresh for one piece of work and closed after it, so that a long-lived
        project (a server's worker) holds no read transaction between pieces of work."""
        return self._opened.fresh_source()

    def close(self) -> None:
        self._opened.close()

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
