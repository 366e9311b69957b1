"""Verifying a generation against its source, and listing the generations of a store.

Definitions (over the source rows that pass the filter, and the vectors the
store holds under the generation's *current* identity):

* ``covered`` -- rows that have a vector; ``missing`` = rows - covered;
* ``fresh`` -- covered rows whose vector was computed from the exact text the
  row renders to now (equal SHA-256); ``stale`` = covered - fresh;
* ``orphans`` -- vectors whose row is no longer in the source (or the filter);
* coverage = covered / rows and freshness = fresh / covered, each ``None``
  (N/A) when its denominator is 0;
* ``complete`` means no row is missing, ``fresh_ok`` no vector is stale, and
  ``ok`` means complete, fresh and without orphans.

Offenders are listed by key, at most :data:`MAX_OFFENDERS` of each kind:
missing and stale ones in source order, orphans in key order.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Mapping

from ptah.core.errors import InputError, ModelUnavailable, SourceUnavailable
from ptah.core.identity import text_digest
from ptah.core.verification import MAX_OFFENDERS, VerifyResult
from ptah.services.project import Generation, Project

def verify(project: Project, name: str | None = None) -> VerifyResult:
    """Compare generation ``name`` (None: the active one) with the source, row by row.

    Reads the store in one snapshot, so a build running meanwhile is seen as
    of one commit. A generation never built under its current identity (or a
    project without a store) reads as one with no vectors. Raises
    :class:`SourceUnavailable` / :class:`StoreUnavailable` (exit 3) when either
    cannot be read, and :class:`StoreDamaged` (exit 3) when the store fails its
    own integrity check or a vector of the generation is not finite
    (``snapshot.check``: one read of the store, so verify costs about what a
    search's first read does) -- a damaged store is never reported as fresh.
    """
    generation = project.generation(name)
    if generation.settings.vectors is not None:  # coverage of the table's own vectors
        from ptah.services.external import read_external

        return read_external(project, generation, measure=False)[1]
    identity = generation.identity.identity
    stored: dict[str, tuple[str, str]] = {}
    built = False
    store = project.store()
    if store is not None:
        with store.snapshot() as snapshot:
            snapshot.check(identity)
            built = snapshot.generation(identity) is not None
            stored = snapshot.digests(identity)
    return verify_stored(project, generation, built=built, stored=stored)


def verify_stored(
    project: Project, generation: Generation, *, built: bool, stored: Mapping[str, tuple[str, str]]
) -> VerifyResult:
    """Compare the source with ``stored`` (``row identity -> (key, text SHA-256)``, as
    :meth:`StoreSnapshot.digests` reads it) -- for callers that read the store
    in their own snapshot. ``stored`` is not modified."""
    rows = covered = fresh = 0
    stale_keys: list[str] = []
    missing_keys: list[str] = []
    seen: set[str] = set()
    snapshot = hashlib.sha256()
    for row in project.source.rows(generation.settings.template(project.spec.source)):
        rows += 1
        digest = text_digest(row.text)
        snapshot.update(f"{len(row.identity)}:{row.identity}{digest}\n".encode("utf-8", "surrogatepass"))
        held = stored.get(row.identity)
        if held is None:
            _note(missing_keys, row.key)
            continue
        covered += 1
        seen.add(row.identity)
        if held[1] == digest:
            fresh += 1
        else:
            _note(stale_keys, row.key)
    orphans = len(stored) - covered
    orphan_keys = sorted(key for row_identity, (key, _) in stored.items() if row_identity not in seen) if orphans else []
    return VerifyResult(
        generation=generation.name,
        identity=generation.identity.identity,
        built=built,
        rows=rows,
        vectors=len(stored),
        covered=covered,
        fresh=fresh,
        stale=covered - fresh,
        missing=rows - covered,
        orphans=orphans,
        stale_keys=tuple(stale_keys),
        missing_keys=tuple(missing_keys),
        orphan_keys=tuple(orphan_keys[:MAX_OFFENDERS]),
        fingerprint="sha256:" + snapshot.hexdigest(),
    )


def _note(keys: list[str], key: str) -> None:
    if len(keys) < MAX_OFFENDERS:
        keys.append(key)


@dataclass(frozen=True)
class GenerationListing:
    """One line of ``ptah inference list``.

    ``status``: ``current`` -- the identity a declared generation has now,
    with a vector for every row; ``partial 34%`` -- that identity with some
    rows still missing a vector (a first build interrupted, or rows added
    since: the percentage is the coverage, rounded down, so it never reads
    100% while one row lacks a vector); ``superseded`` -- vectors of earlier
    settings (or of a generation no longer declared), kept in the store;
    ``not built`` -- declared, never built;
    ``model unavailable`` -- declared, but its model cannot be found, so its
    current identity is unknown (``identity`` is empty); ``external (the
    table's vectors)`` -- declared with ``vectors: {column: …}``: ``vectors``
    and ``covered`` count the rows passing the filter whose column holds a
    vector (the store keeps only its query cache).
    ``covered`` counts vectors whose row is in the source now, whatever its
    text; ``coverage`` = covered / rows (None when the source has no rows).
    """

    name: str
    identity: str
    model: str
    status: str
    dimension: int | None
    vectors: int
    rows: int
    covered: int
    created_at: str | None
    updated_at: str | None

    @property
    def coverage(self) -> float | None:
        return self.covered / self.rows if self.rows else None

    def as_dict(self) -> dict:
        return {**asdict(self), "coverage": self.coverage}


def list_generations(project: Project) -> list[GenerationListing]:
    """Every generation in the store, then every declared one never built, with coverage at a glance."""
    current: dict[str, str] = {}
    unavailable: list[str] = []
    external: list[GenerationListing] = []
    for name in project.spec.generations:
        try:
            generation = project.generation(name)
        except ModelUnavailable:
            unavailable.append(name)
            continue
        if generation.settings.vectors is not None:  # the table's vectors: listed from the column, not the store
            external.append(_external_listing(project, generation))
        else:
            current[generation.identity.identity] = name
    skipped = {listing.identity for listing in external}  # their store records hold only the query cache
    source_rows = {row.identity for row in project.source.rows(project.spec.source.text)}
    listings: list[GenerationListing] = []
    store = project.store()
    built: set[str] = set()
    if store is not None:
        with store.snapshot() as snapshot:
            for record in snapshot.generations():
                if record.identity in skipped:
                    continue
                held = snapshot.digests(record.identity)
                built.add(record.identity)
                covered = sum(1 for row_identity in held if row_identity in source_rows)
                listings.append(
                    GenerationListing(
                        name=current.get(record.identity, record.name),
                        identity=record.identity,
                        model=record.model,
                        status=_built_status(record.identity in current, len(source_rows), covered),
                        dimension=record.dimension,
                        vectors=len(held),
                        rows=len(source_rows),
                        covered=covered,
                        created_at=record.created_at,
                        updated_at=record.updated_at,
                    )
                )
    missing = [(identity, name, "not built") for identity, name in current.items() if identity not in built]
    missing += [("", name, "model unavailable") for name in unavailable]
    for identity, name, status in missing:
        settings = project.spec.generations[name]
        listings.append(GenerationListing(name, identity, settings.model, status, None, 0, len(source_rows), 0, None, None))
    return listings + external


def _built_status(declared: bool, rows: int, covered: int) -> str:
    """``current``, ``partial 34%`` (the coverage rounded down) or ``superseded``."""
    if not declared:
        return "superseded"
    return "current" if covered >= rows else f"partial {100 * covered // rows}%"


EXTERNAL_STATUS = "external (the table's vectors)"


def _external_listing(project: Project, generation: Generation) -> GenerationListing:
    """An external generation's line: its column's coverage, read from the source (never 'not built')."""
    from ptah.services.external import read_external

    identity, model = generation.identity.identity, generation.settings.model
    try:
        matrix, result, _ = read_external(project, generation, measure=False)
    except (InputError, SourceUnavailable):
        rows = project.source.count()
        return GenerationListing(generation.name, identity, model, "external (column unreadable: see verify)",
                                 None, 0, rows, 0, None, None)
    dimension = int(matrix.vectors.shape[1]) if result.covered else None
    return GenerationListing(generation.name, identity, model, EXTERNAL_STATUS, dimension, result.covered,
                             result.rows, result.covered, None, None)
