"""A project as the use cases hold it: the specification, its source and its store, opened once per
process, with the probe of a served model and the generations whose vectors the table holds.

:func:`open_project` finds and loads ``ptah.yaml`` and wires the adapters it names; an
:class:`Opened` keeps what is worth loading once (each generation's identity, model and vectors
as one contiguous matrix). Whatever it says of its source uses the redacted URL. The public
``ptah.Project`` (:mod:`ptah._api`) holds one and calls the use cases with it; ``Opened`` is not
a second project class but what they read: the source and store, the loaded models and matrices.

* The probe (docs/specification.md, "Probe"): at build an embedder with a probe
  (:func:`ptah.adapters.embedders.base.probe_of`) embeds a fixed text, kept in the generation's
  settings under ``"probe"`` (left out of a report's, :func:`report_settings`). A later embedding
  build, and ``ptah inference search`` on an uncached query (:func:`checked_embedder`), refuse
  when it fails (exit 3, no override); a cold evaluation raises :class:`ProbeMismatch` (exit 3;
  ``--allow-stale`` measures anyway) when the server names another model or the probes' cosine is
  below :data:`TOLERANCE` (0.999); a warm one says the probe was not checked.
* External generations (``vectors: {column: …}``): vectors, keys and filter are read from the
  source's one snapshot, never the store, which keeps only their query cache under
  ``ptah-external@1``. Verification is coverage only (a NULL vector is missing; freshness,
  ``fresh``, ``stale`` and ``fresh_ok`` are null, :data:`FRESHNESS_NOTE` says why). A vector of
  length 1 (to :data:`UNIT_TOLERANCE`) is used as held, so it scores bit for bit as ptah's own;
  any other nonzero vector is scaled to unit length.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Literal, overload

import numpy as np

from ptah.adapters.embedders.base import probe_of
from ptah.adapters.embedders.registry import GenerationIdentity, generation_identity
from ptah.adapters.sources.base import Source, open_source, texts_of
from ptah.adapters.spec_yaml import find_spec, load_spec, refuse_store_in_source
from ptah.adapters.stores import registry as stores
from ptah.adapters.stores.base import Capabilities, Store
from ptah.adapters.stores.records import GenerationRecord, Matrix
from ptah.core.errors import InputError, NotBuilt, Said, StaleGeneration, Words, capital
from ptah.core.parts import MAX_OFFENDERS, VerifyResult
from ptah.core.ranking import normalize_rows
from ptah.core.spec import GenerationSettings, Spec
from ptah.core.visible import visible


@dataclass(frozen=True)
class Generation:
    """A generation as the specification declares it now: its settings and its identity."""

    settings: GenerationSettings
    identity: GenerationIdentity

    @property
    def name(self) -> str:
        return self.settings.name


@dataclass
class Opened:
    """An opened specification with its source and (lazily) its store: what the use cases take
    (and a build engine), behind the public ``ptah.Project``."""

    spec: Spec
    source: Source
    _store: Store | None = field(default=None, repr=False)
    _identities: dict = field(default_factory=dict, repr=False)
    _embedders: dict = field(default_factory=dict, repr=False)
    load_seconds: float = field(
        default=0.0, repr=False
    )  # spent loading embedders (:meth:`embedder`), in all
    _matrices: dict = field(default_factory=dict, repr=False)

    @property
    def root(self) -> str:
        return self.spec.root

    @property
    def spec_path(self) -> str | None:
        """The spec's file, as the commands a sentence names pass it (``--spec``); None for a spec
        without one."""
        return None if self.spec.path is None else str(self.spec.path)

    def generation(self, name: str | None = None) -> Generation:
        """The declared generation ``name`` (None: the active one) with its identity.

        Raises :class:`UnknownGeneration` (exit 2) for an undeclared name.
        """
        settings = self.spec.generation(name)
        if settings not in self._identities:
            self._identities[settings] = generation_identity(settings, self.spec.source, self.root)
        return Generation(settings, self._identities[settings])

    def judging_texts(self, keys: Iterable[str]) -> dict[str, str]:
        """The judging text of each of ``keys`` that is a row of the source, read by key."""
        return texts_of(self.source, self.spec.judging_template(), keys)

    @property
    def store_capabilities(self) -> Capabilities:
        """What the store can do (a vector index, lexical indexes), known before it is opened."""
        return stores.capabilities_of(self.spec.store)

    @overload
    def store(self, *, create: Literal[True]) -> Store: ...
    @overload
    def store(self, *, create: bool = False) -> Store | None: ...

    def store(self, *, create: bool = False) -> Store | None:
        """The store, opened once by its registered kind. ``create=False`` gives None when no store
        exists yet (nothing was ever built); readers never create one."""
        if self._store is None:
            refuse_store_in_source(
                self.spec
            )  # the servers asked, before anything is created or a model loaded
            self._store = stores.open_store(self.spec.store, create=create)
        return self._store

    def embedder(self, settings: GenerationSettings):
        """The embedder of these settings, loaded once per process (its seconds added to
        ``load_seconds``)."""
        if settings not in self._embedders:
            from ptah.adapters.embedders import open_embedder

            clock = time.perf_counter()
            self._embedders[settings] = open_embedder(settings, self.root)
            self.load_seconds += time.perf_counter() - clock
        return self._embedders[settings]

    def loaded(self, settings: GenerationSettings) -> bool:
        """Whether this process loaded the embedder of these settings (:meth:`embedder`)."""
        return settings in self._embedders

    def matrix(self, generation: Generation) -> Matrix:
        """The generation's vectors as one float32 matrix with unit-length rows, read once per
        process.

        The rows are read from one store snapshot. When the generation's
        settings did not normalise at build, the rows are normalised here
        (in place, once); a zero vector stays zero and scores 0 against
        everything. Raises :class:`NotBuilt` (exit 3) when the generation
        was never built with its current settings. An external generation's
        rows are the vectors its column holds (:func:`read_external`).
        """
        identity = generation.identity.identity
        if identity not in self._matrices and generation.settings.vectors is not None:
            # the table's own vectors, from the source
            self._matrices[identity] = read_external(self, generation)[0]
        if identity not in self._matrices:
            store = self.store()
            record = None
            if store is not None:
                with store.snapshot() as snapshot:
                    record = snapshot.generation(identity)
                    if record is not None:
                        matrix = snapshot.matrix(identity)
            if record is None:
                raise NotBuilt(generation.name, identity, self.spec_path)
            if not record.settings.get("normalize", True):
                normalize_rows(matrix.vectors)
            self._matrices[identity] = matrix
        return self._matrices[identity]

    def forget_matrices(self) -> None:
        """Drop the loaded matrices (after a build changed the vectors)."""
        self._matrices.clear()

    @contextmanager
    def fresh_source(self) -> Iterator[None]:
        """The source opened afresh for one piece of work (one snapshot of it) and closed after it,
        so that a long-lived project (a server's worker) holds no read transaction on the source
        between pieces of work; the store and the loaded matrices stay as they are."""
        self.source.close()
        self.source = open_source(self.spec.source, self.spec.root, str(self.spec.path))
        try:
            yield
        finally:
            self.source.close()

    def close(self) -> None:
        self.source.close()
        if self._store is not None:
            self._store.close()
            self._store = None
        self._matrices.clear()

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def open_project(spec: str | None = None, cwd: str | os.PathLike | None = None) -> Opened:
    """Find the specification (``--spec``, ``PTAH_SPEC``, else upward from ``cwd``), load it and
    wire it.

    The source kind that reads ``source.database`` opens it (:mod:`ptah.adapters.sources.base`:
    SQLite for ``sqlite:///``, PostgreSQL for ``postgresql://``); the store is opened on first use
    by the store kind that claims ``store`` (:mod:`ptah.adapters.stores.registry`: pgvector for
    ``postgresql://``, else a SQLite file). Raises :class:`SpecError` (exit 2) for a missing or
    invalid specification, :class:`SourceUnavailable` (exit 3) when the source cannot be opened and
    :class:`CapabilityUnavailable` (exit 3) when PostgreSQL support (psycopg) is not installed.
    """
    return project_of(read_spec(spec, cwd))


def read_spec(spec: str | None = None, cwd: str | os.PathLike | None = None) -> Spec:
    """The specification :func:`open_project` would use, loaded and checked (:class:`SpecError`,
    exit 2), with nothing opened yet."""
    return load_spec(find_spec(spec, cwd=cwd))


def project_of(spec: Spec) -> Opened:
    """A project over a specification already loaded (or built in code); its source is opened
    here."""
    return Opened(spec=spec, source=open_source(spec.source, spec.root, str(spec.path)))


TOLERANCE = 0.999
_KEY = "probe"


class ProbeMismatch(StaleGeneration):
    """The service's model no longer answers the probe as it did at build (exit 3; ``--allow-stale``
    measures)."""


def stored_probe(settings: Mapping) -> dict | None:
    """The probe kept with a generation's record settings, or None."""
    probe = settings.get(_KEY)
    return probe if isinstance(probe, dict) else None  # settings are read from JSON


def report_settings(settings: Mapping) -> dict:
    """A record's settings as reports show them: without the probe's vector."""
    return {name: value for name, value in settings.items() if name != _KEY}


def probe_for_build(embedder, previous: Mapping, name: str = "") -> dict | None:
    """The probe to keep with the record: the one kept already, else the embedder's now (None when
    it has none).

    A build that embeds into a generation holding a probe checks it first:
    vectors of two models in one generation would rank nonsense, so a failed
    check is :class:`ProbeMismatch` (exit 3) before anything is written, with
    no override.
    """
    kept = stored_probe(previous)
    if kept is not None:
        check(name, previous, embedder, allow_stale=False, advice=build_advice)
        return dict(kept)
    probe = probe_of(embedder)
    if probe is None:
        return None
    vector = np.asarray(probe["vector"], dtype=np.float32)
    return {
        "model": probe["model"],
        "sha256": hashlib.sha256(vector.tobytes()).hexdigest(),
        "vector": [float(value) for value in vector],
    }


def from_empty(words: Words) -> str:
    """What makes a generation whose probe failed whole again."""
    return f"build it again from empty (undeclare it, {words.prune()}, declare it again)"


def measure_advice(words: Words) -> str:
    return (
        f"To measure it as it is now, {from_empty(words)}; or pass "
        f"{words.option('allow_stale', True)} to measure it anyway."
    )


def search_advice(words: Words) -> str:
    return f"Nothing was searched; {from_empty(words)}."


def build_advice(words: Words) -> str:
    return (
        "Embedding more rows now would mix two models' vectors in one generation, so nothing was "
        f"embedded; {from_empty(words)}."
    )


def checked_embedder(project, generation, store):
    """``generation``'s embedder, its probe checked first against the one ``store`` keeps (exit 3 on
    a failure).

    For ``ptah inference search`` on a query the cache lacks: the query would
    otherwise be embedded by a model that may not be the one that made the rows.
    """
    embedder = project.embedder(generation.settings)
    record = store.generation(generation.identity.identity) if store is not None else None
    if record is not None:
        check(generation.name, record.settings, embedder, allow_stale=False, advice=search_advice)
    return embedder


def check(
    name: str, settings: Mapping, embedder, *, allow_stale: bool, advice: Said = measure_advice
) -> dict | None:
    """Embed the probe again and hold it against the stored one; the report's record of the check.

    None for an embedder that offers no probe (local models: their reports
    stay as they were). Raises :class:`ProbeMismatch` on a failed check
    unless ``allow_stale``.
    """
    kept = stored_probe(settings)
    probe = probe_of(embedder) if kept is not None else None
    if kept is None or probe is None:
        return None
    stored_vector = np.asarray(kept["vector"], dtype=np.float64)
    vector = np.asarray(probe["vector"], dtype=np.float64)
    norms = float(np.linalg.norm(stored_vector) * np.linalg.norm(vector))
    cosine = (
        float(stored_vector @ vector / norms)
        if vector.shape == stored_vector.shape and norms > 0
        else 0.0
    )
    same_model = probe["model"] == kept["model"]
    passed = same_model and cosine >= TOLERANCE
    result = {
        "checked": True,
        "passed": passed,
        "cosine": round(cosine, 6),
        "tolerance": TOLERANCE,
        "model_at_build": kept["model"],
        "model_now": probe["model"],
    }
    if not passed and not allow_stale:
        if not same_model:
            what = f"the server now answers as model {_named(probe['model'])}, at build as {_named(kept['model'])}"
        else:
            what = f"its probe vector's cosine with the one stored at build is {cosine:.6f}, below {TOLERANCE}"
        said = (
            f'generation "{name}": {what}, so the model behind the name may have changed and the '
            "stored vectors may not match new queries."
        )
        raise ProbeMismatch(
            lambda words: f"{said} {advice(words)}",
            what=said,
            remedy=lambda words: capital(from_empty(words)),
        )
    return result


def _named(model: str | None) -> str:
    return "(no model named)" if model is None else f'"{visible(model)}"'


NOT_CHECKED = {"checked": False, "reason": "every query came from the cache: no request was made"}


FRESHNESS_NOTE = "cannot be verified: the vectors are the table's"
UNIT_TOLERANCE = 1e-5


def is_external(generation: Generation) -> bool:
    return generation.settings.vectors is not None


def refuse_build(generation: Generation, instead: str = "nothing to build") -> None:
    """InputError (exit 2) for building an external generation, or (``instead`` saying what is used
    then) an index on one."""
    if is_external(generation):
        raise InputError(
            f'generation "{generation.name}" reads its vectors from column '
            f"{generation.settings.vectors} of the source table: its vectors are the table's; {instead}"
        )


def read_external(
    project: Opened, generation: Generation, *, measure: bool = True
) -> tuple[Matrix, VerifyResult, bool]:
    """The rows' vectors (rows with one, unit length), the coverage of the rows passing the filter,
    and whether the table's vectors all were unit length already (inner product then ranks as
    cosine).

    With ``measure``, a column without a single vector is :class:`StaleGeneration` (exit 3, even
    with --allow-stale): there is nothing to score and no dimension to embed the queries at.
    """
    column = generation.settings.vectors
    if column is None:
        raise InputError(
            f'generation "{generation.name}" names no column of vectors; it is built, not read'
        )
    read = project.source.vectors(column)
    covered = len(read.keys)
    if measure and not covered:
        raise StaleGeneration(
            f'generation "{generation.name}" has no vector to measure: none of the {read.rows} '
            f"rows passing the filter holds one in column {generation.settings.vectors}"
        )
    verification = VerifyResult(
        generation=generation.name,
        identity=generation.identity.identity,
        built=True,
        rows=read.rows,
        vectors=covered,
        covered=covered,
        fresh=covered,
        stale=0,
        missing=read.missing,
        orphans=0,
        stale_keys=(),
        missing_keys=tuple(read.missing_keys[:MAX_OFFENDERS]),
        orphan_keys=(),
        freshness_note=FRESHNESS_NOTE,
    )
    scaled = unit_rows(read.vectors)
    return Matrix(read.keys, read.identities, read.vectors), verification, not scaled


def verification_dict(result: VerifyResult) -> dict:
    """``result`` as a report holds it, freshness written in words instead of counts."""
    return result.as_dict() | {"fresh": None, "stale": None, "fresh_ok": None}


def unit_rows(vectors: np.ndarray) -> int:
    """Scale, in place, the rows whose length is not 1 to within float32 rounding; how many were not
    (a zero vector counts: it stays zero, and no measure ranks it as cosine would)."""
    if vectors.size == 0:
        return 0
    norms = np.linalg.norm(vectors.astype(np.float64), axis=1)
    off = np.abs(norms - 1.0) > UNIT_TOLERANCE
    scale = (norms > 0) & off
    if scale.any():
        vectors[scale] /= norms[scale, None].astype(np.float32)
    return int(off.sum())


def external_settings(generation: Generation) -> dict:
    """The settings a report shows for an external generation: how its queries are embedded, and its
    column."""
    settings = generation.settings
    return {
        "model": settings.model,
        "normalize": settings.normalize,
        "max_seq_length": settings.max_seq_length,
        "query_prefix": settings.query_prefix,
        "batch_size": settings.batch_size,
        "dimension": settings.dimension,
        "vectors": {"column": settings.vectors},
    }


def hold_table_index(project: Opened, generation: Generation, options, unit_vectors: bool):
    """For index modes: the table's own index on the column, searched in the source's snapshot; None
    for exact.

    InputError (exit 2) when the source has no index to offer (SQLite), or the
    column none whose operator class ranks by cosine (:mod:`ptah.adapters.sources.postgres_index`).
    """
    if not options.uses_index:
        return None
    column = generation.settings.vectors
    search_table = getattr(project.source, "index_search", None)
    if search_table is None:
        raise InputError(
            lambda words: (
                f'generation "{generation.name}" reads column {column} of table '
                f"{project.spec.source.table} in {project.spec.source.redacted_database}, where no "
                f"vector index exists to search; evaluate it with {words.option('search', 'exact')}"
            )
        )
    table_index = search_table(column, unit_vectors=unit_vectors)
    if table_index.index.kind != "hnsw" and options.ef_search is not None:
        raise InputError(
            lambda words: (
                f"{words.option('ef_search')} applies to HNSW; the index {table_index.index.name} on "
                f"table {project.spec.source.table}, column {column} is IVFFlat (it searches the "
                "server's ivfflat.probes lists)"
            )
        )
    from ptah.services.channels.index import IndexSearch

    described = table_index.describe(project.spec.source.table)
    if table_index.index.kind == "ivfflat":
        described["probes"] = table_index.probes()
    return IndexSearch(generation.identity.identity, described, options, table_index, ExitStack())


def cache_store(project: Opened, generation: Generation, dimension: int):
    """The store (created if needed) with the generation registered, so its query cache can hold the
    queries.

    The record holds no vectors: it is there for the cache's sake, with the
    dimension the table's vectors have now.
    """
    store = project.store(create=True)
    identity = generation.identity.identity
    with store.snapshot() as snapshot:
        record = snapshot.generation(identity)
    if record is None or record.dimension != dimension:
        store.register_generation(
            GenerationRecord(
                identity=identity,
                name=generation.name,
                model=generation.settings.model,
                settings=external_settings(generation),
                dimension=dimension,
                model_digest=generation.identity.model_digest,
                identity_parts=dict(generation.identity.parts),
                library_versions={},
            )
        )
    return store
