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
import heapq
import itertools
from collections.abc import Generator, Iterable, Iterator
from contextlib import closing, nullcontext
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, TypeVar

from ptah.adapters.sources.base import RowDigests, row_digests
from ptah.adapters.stores.base import BlockDigests, block_digests
from ptah.core.errors import InputError, ModelUnavailable, SourceUnavailable
from ptah.core.parts import MAX_OFFENDERS, VerifyResult
from ptah.services.project import Generation, Opened

if TYPE_CHECKING:
    from ptah.adapters.stores.base import Snapshot

_Item = TypeVar("_Item")


def verify(project: Opened, name: str | None = None) -> VerifyResult:
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
        from ptah.services.project import read_external

        return read_external(project, generation, measure=False)[1]
    store = project.store()
    if store is None:
        return verify_in(project, generation, None)
    with store.snapshot() as snapshot:
        snapshot.check(generation.identity.identity)
        return verify_in(project, generation, snapshot)


def verify_in(project: Opened, generation: Generation, snapshot: Snapshot | None) -> VerifyResult:
    """Compare the source with the generation's vectors in ``snapshot`` (open; None: a project
    without a store) -- for callers that read the store in their own snapshot.

    One pass over the source's rows in key order (:meth:`Source.digests`), a
    block of :data:`BLOCK_ROWS` at a time, each block's stored digests asked
    of the store by row identity; the rows gone are counted (the vectors less
    those covered) and, when there are any, the first :data:`MAX_OFFENDERS` by
    key found by asking the source about the store's rows in key order. The
    memory is a block, whatever the table's size.
    """
    identity = generation.identity.identity
    built = snapshot is not None and snapshot.generation(identity) is not None
    vectors = snapshot.vector_count(identity) if snapshot is not None and built else 0
    source, reads = (
        row_digests(project.source),
        None if snapshot is None else block_digests(snapshot),
    )
    rows = covered = fresh = 0
    stale_keys: list[str] = []
    missing_keys: list[str] = []
    fingerprint = hashlib.sha256()
    for block in in_blocks(source.digests(generation.settings.template(project.spec.source))):
        held = (
            reads.digests_of(identity, [row.identity for row in block])
            if reads is not None and vectors
            else {}
        )
        for key, row_identity, digest in block:
            rows += 1
            fingerprint.update(
                f"{len(row_identity)}:{row_identity}{digest}\n".encode("utf-8", "surrogatepass")
            )
            stored = held.get(row_identity)
            if stored is None:
                _note(missing_keys, key)
            elif stored[1] == digest:
                covered += 1
                fresh += 1
            else:
                covered += 1
                _note(stale_keys, key)
    orphans = vectors - covered
    return VerifyResult(
        generation=generation.name,
        identity=identity,
        built=built,
        rows=rows,
        vectors=vectors,
        covered=covered,
        fresh=fresh,
        stale=covered - fresh,
        missing=rows - covered,
        orphans=orphans,
        stale_keys=tuple(stale_keys),
        missing_keys=tuple(missing_keys),
        orphan_keys=_orphan_keys(source, reads, identity, orphans)
        if reads is not None and orphans
        else (),
        fingerprint="sha256:" + fingerprint.hexdigest(),
    )


BLOCK_ROWS = 2048  # rows compared at a time: a verification's memory


def in_blocks(items: Iterable[_Item], size: int | None = None) -> Iterator[list[_Item]]:
    """``items`` in consecutive lists of ``size`` (:data:`BLOCK_ROWS` when None; the last fewer,
    none empty)."""
    iterator = iter(items)
    while block := list(itertools.islice(iterator, size or BLOCK_ROWS)):
        yield block


def _orphan_keys(
    source: RowDigests, snapshot: BlockDigests, identity: str, orphans: int
) -> tuple[str, ...]:
    """The first :data:`MAX_OFFENDERS` keys, by key, of the generation's ``orphans`` vectors whose
    row the source lacks (:func:`lacking`, one row of each side held at a time; it stops once it has
    found all ``orphans``)."""
    with (
        closing(snapshot.stored_in_order(identity)) as stored,
        closing(lacking(stored, source)) as gone,
    ):
        return tuple(heapq.nsmallest(MAX_OFFENDERS, itertools.islice(gone, orphans)))


def lacking(stored: Iterator[tuple[str, str]], source: RowDigests) -> Generator[str, None, None]:
    """The second member of each ``stored`` pair (row identity, key or identity), in row identity
    order, whose row ``source`` lacks: merged with the source's identities, both by row identity;
    each block of ``stored`` asked of the source instead when it cannot sort its identities. Close
    it to end the source's read early."""
    rows = source.identities()
    if rows is None:
        for block in in_blocks(stored):
            present = source.lookup_identities([row_identity for row_identity, _ in block])
            yield from (second for row_identity, second in block if present[row_identity] != "ok")
        return
    with closing(rows):
        current = next(rows, None)
        for row_identity, second in stored:
            while current is not None and current < row_identity:
                current = next(rows, None)
            if current != row_identity:
                yield second


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


def list_generations(project: Opened) -> list[GenerationListing]:
    """Every generation in the store, then every declared one never built, with coverage at a
    glance."""
    current: dict[str, str] = {}
    unavailable: list[str] = []
    external: list[GenerationListing] = []
    for name in project.spec.generations:
        try:
            generation = project.generation(name)
        except ModelUnavailable:
            unavailable.append(name)
            continue
        if (
            generation.settings.vectors is not None
        ):  # the table's vectors: listed from the column, not the store
            external.append(_external_listing(project, generation))
        else:
            current[generation.identity.identity] = name
    skipped = {
        listing.identity for listing in external
    }  # their store records hold only the query cache
    listings: list[GenerationListing] = []
    store = project.store()
    built: set[str] = set()
    with store.snapshot() if store is not None else nullcontext() as snapshot:
        records: list = []
        vectors: dict[str, int] = {}
        reads = None if snapshot is None else block_digests(snapshot)
        if snapshot is not None:
            records = [
                record for record in snapshot.generations() if record.identity not in skipped
            ]
            vectors = {
                record.identity: snapshot.vector_count(record.identity) for record in records
            }
        covered = dict.fromkeys(
            vectors, 0
        )  # vectors whose row is in the source, counted a block of rows at a time
        rows = 0
        for block in in_blocks(project.source.rows(project.spec.source.text)):
            rows += len(block)
            identities = [row.identity for row in block]
            for identity, count in vectors.items():
                if count and reads is not None:
                    covered[identity] += len(reads.digests_of(identity, identities))
    for record in records:
        built.add(record.identity)
        listings.append(
            GenerationListing(
                name=current.get(record.identity, record.name),
                identity=record.identity,
                model=record.model,
                status=_built_status(record.identity in current, rows, covered[record.identity]),
                dimension=record.dimension,
                vectors=vectors[record.identity],
                rows=rows,
                covered=covered[record.identity],
                created_at=record.created_at,
                updated_at=record.updated_at,
            )
        )
    missing = [
        (identity, name, "not built") for identity, name in current.items() if identity not in built
    ]
    missing += [("", name, "model unavailable") for name in unavailable]
    for identity, name, status in missing:
        settings = project.spec.generations[name]
        listings.append(
            GenerationListing(name, identity, settings.model, status, None, 0, rows, 0, None, None)
        )
    return listings + external


def _built_status(declared: bool, rows: int, covered: int) -> str:
    """``current``, ``partial 34%`` (the coverage rounded down) or ``superseded``."""
    if not declared:
        return "superseded"
    return "current" if covered >= rows else f"partial {100 * covered // rows}%"


EXTERNAL_STATUS = "external (the table's vectors)"


def _external_listing(project: Opened, generation: Generation) -> GenerationListing:
    """An external generation's line: its column's coverage, read from the source (never 'not
    built')."""
    from ptah.services.project import read_external

    identity, model = generation.identity.identity, generation.settings.model
    try:
        matrix, result, _ = read_external(project, generation, measure=False)
    except (InputError, SourceUnavailable):
        rows = project.source.count()
        return GenerationListing(
            generation.name,
            identity,
            model,
            "external (column unreadable: see verify)",
            None,
            0,
            rows,
            0,
            None,
            None,
        )
    dimension = int(matrix.vectors.shape[1]) if result.covered else None
    return GenerationListing(
        generation.name,
        identity,
        model,
        EXTERNAL_STATUS,
        dimension,
        result.covered,
        result.rows,
        result.covered,
        None,
        None,
    )
