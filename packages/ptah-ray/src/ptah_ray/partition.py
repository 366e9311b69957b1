"""One partition of a distributed build: a key range of the source, brought up to date in the store.

A :class:`PartitionWorker` lives as long as its actor: it opens the embedder
(through the embedder registry, any kind) at most once, when a row first needs
a vector, and the store once, as it starts. For each partition it is given it:

1. reads the partition's rows from the driver's exported snapshot
   (:class:`~ptah_ray.partitions.PartitionedSource`: the
   source's filter checks and read-only transaction, narrowed to the range),
   a block of :data:`~ptah.services.verify.BLOCK_ROWS` rows at a time;
2. asks the store for each block's stored digests by row identity, and
   embeds the new and changed rows, committing each batch of ``batch_rows``
   -- a ``DELETE`` of the rows replaced and a binary ``COPY`` -- in its own
   transaction as it goes, as the local build does;
3. deletes the vectors whose key lies in the range and whose row is gone:
   their number is the range's stored vectors (counted in SQL) less those the
   rows matched, and only when some are gone are the range's stored row
   identities streamed (a server-side cursor of a store snapshot, in code
   point order), merged with the range's own, and the unmatched deleted a
   block at a time.

Memory: a block of rows and a batch to embed, whatever the partition's size
(and the ``(key, row identity)`` of its rows whose key holds U+001F, which the
driver settles).

Nothing here imports Ray: the ``ray`` engine runs this class as an actor.
Killed at any moment, a worker leaves the store as of its last committed
batch; the next build (either engine) embeds exactly what is still missing.
"""

from __future__ import annotations

import functools
import os
import time
from contextlib import closing
from dataclasses import dataclass, field, replace

from ptah import GenerationSettings, PtahError, SourceSpec
from ptah.adapters.embedders.base import usage_of
from ptah.adapters.stores.pgvector import PgvectorStore
from ptah.core.corpus import COMPOSITE_KEY_SEPARATOR
from ptah.core.provenance import text_digest
from ptah.services.build import embed_batch
from ptah.services.project import probe_for_build
from ptah.services.verify import in_blocks, lacking
from ptah_ray.partitions import KeyRange, PartitionedSource
from ptah_ray.ranges import (
    count_in_range,
    stored_digests,
    stored_in_range_in_order,
)
from ptah_ray.sealed import Sealed, scrub


@dataclass(frozen=True)
class BuildPlan:
    """What every worker of one build shares: where to read and write, and how.

    Nothing in it shows a password (Ray may write an argument's ``repr`` into
    an error or a log): ``source`` holds the source's URL redacted, and the
    URLs the workers connect with are :class:`Sealed`. Make one with
    :meth:`sealing`.
    """

    source: SourceSpec  # its database URL redacted: the worker connects with source_url
    settings: GenerationSettings
    root: str
    source_url: Sealed
    store_url: Sealed
    identity: str
    dimension: int
    batch_rows: int
    snapshot: str  # the driver's exported snapshot id

    @classmethod
    def sealing(
        cls,
        source: SourceSpec,
        settings: GenerationSettings,
        root: str,
        store_url: str,
        identity: str,
        batch_rows: int,
    ) -> BuildPlan:
        """The plan of a build from ``source`` into the store at ``store_url``, its URLs sealed."""
        return cls(
            replace(source, database=source.redacted_database),
            settings,
            root,
            Sealed(source.database),
            Sealed(store_url),
            identity,
            0,
            batch_rows,
            "",
        )

    def connected_source(self) -> SourceSpec:
        """The source as a worker connects to it: its URL whole."""
        return replace(self.source, database=self.source_url.reveal())

    def scrub(self, text: str) -> str:
        """``text`` without the plan's passwords."""
        return scrub(text, self.source_url, self.store_url)


class WorkerFailed(RuntimeError):
    """What a worker raised, said without the build's passwords (the driver counts its partition as
    failed)."""


def _said_safely(method):
    """``method`` of a worker, whatever it raises said without the plan's passwords: a library's
    error may quote the URL it was given, and the error travels to the driver and into Ray's
    logs."""

    @functools.wraps(method)
    def guarded(self, *args):
        try:
            return method(self, *args)
        except Exception as exc:
            text = str(exc)
            clean = self.plan.scrub(text)
            if isinstance(exc, (PtahError, WorkerFailed)) and clean == text:
                raise  # the driver raises a ptah error as itself
            raise WorkerFailed(
                f"{type(exc).__name__}: {clean}" if clean else type(exc).__name__
            ) from None

    return guarded


@dataclass
class PartitionResult:
    """What one partition did; ``unsplittable``: ``(key, row identity)`` of its rows whose key holds
    U+001F inside a component (the driver settles their vectors, since a stored key cannot be cut
    back by range)."""

    index: int
    rows: int = 0
    embedded: int = 0
    deleted: int = 0
    unsplittable: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    worker: str = ""


class PartitionWorker:
    """Brings partitions of one build up to date; loads the model once, when first needed."""

    def __init__(self, plan: BuildPlan):
        self.plan = plan
        self._embedder = None
        self._store: PgvectorStore | None = None
        self.index = -1  # the partition running now (progress)
        self.scanned = 0  # rows of it read so far
        self.embedded = 0

    @_said_safely
    def open(self) -> None:
        """Connect to the store: the driver asks it of each actor as it starts, before it cuts the
        snapshot."""
        self._opened()

    def _opened(self) -> PgvectorStore:
        if self._store is None:
            self._store = PgvectorStore(self.plan.store_url.reveal(), create=False)
        return self._store

    @_said_safely
    def describe(self) -> tuple[int, dict | None]:
        """The model's dimension and the probe to keep with a generation registered for the first
        time."""
        embedder = self.embedder()
        return int(embedder.dimension), probe_for_build(embedder, {})

    def begin(self, snapshot: str, dimension: int) -> None:
        """The driver's exported snapshot, and the dimension the generation is registered with."""
        self.plan = replace(self.plan, snapshot=snapshot, dimension=dimension)

    def embedder(self):
        if self._embedder is None:
            from ptah.adapters.embedders import open_embedder

            self._embedder = open_embedder(self.plan.settings, self.plan.root)
        return self._embedder

    def progress(self) -> tuple[int, int, int]:
        """``(partition index, rows read, rows embedded)`` of the partition running now (or that ran
        last)."""
        return self.index, self.scanned, self.embedded

    def usage(self) -> dict | None:
        """What a service was asked by this worker's embedder so far (None: no service, or no model
        loaded)."""
        return None if self._embedder is None else usage_of(self._embedder)

    @_said_safely
    def run(self, index: int, within: KeyRange) -> PartitionResult:
        """Bring the rows of key range ``within`` up to date; ``index`` names the partition in the
        result."""
        started = time.perf_counter()
        plan = self.plan
        store = self._opened()
        result = PartitionResult(index, worker=f"pid {os.getpid()} on {os.uname().nodename}")
        self.index, self.scanned, self.embedded = index, 0, 0
        width = len(plan.source.key_fields)
        template = plan.settings.template(plan.source)
        todo: list = []
        with PartitionedSource(
            plan.connected_source(), plan.root, snapshot=plan.snapshot, within=within
        ) as source:
            vectors = count_in_range(store, plan.identity, source.key_kinds, within)
            covered = 0  # the range's stored vectors whose row is here
            for block in in_blocks(source.rows(template)):
                held = stored_digests(store, plan.identity, [row.identity for row in block])
                for row in block:
                    self.scanned += 1
                    splits = (
                        row.key.count(COMPOSITE_KEY_SEPARATOR) == width - 1
                    )  # else no range holds its stored key
                    if not splits:
                        result.unsplittable.append((row.key, row.identity))
                    stored = held.get(row.identity)
                    covered += splits and stored is not None
                    if stored != (digest := text_digest(row.text)):
                        todo.append((row, digest))
                while len(todo) >= plan.batch_rows:
                    self._write(todo[: plan.batch_rows])
                    todo = todo[plan.batch_rows :]
            if todo:
                self._write(todo)
            if vectors > covered:
                result.deleted = self._delete_gone(source, within)
        result.rows, result.embedded = self.scanned, self.embedded
        result.seconds = round(time.perf_counter() - started, 3)
        return result

    def _delete_gone(self, source: PartitionedSource, within: KeyRange) -> int:
        """Delete the range's vectors whose row the range lacks, a block at a time: the store's row
        identities of the range merged with the source's, both in code point order."""
        deleted, store = 0, self._opened()
        with (
            closing(
                stored_in_range_in_order(store, self.plan.identity, source.key_kinds, within)
            ) as stored,
            closing(
                lacking(((row_identity, row_identity) for row_identity in stored), source)
            ) as gone,
        ):
            for block in in_blocks(gone):
                deleted += store.delete_vectors(self.plan.identity, block)
        return deleted

    def _write(self, batch: list) -> None:
        vectors = embed_batch(self.embedder(), batch, self.plan.dimension)
        rows = [(row.identity, row.key, digest) for row, digest in batch]
        self._opened().write_vectors(self.plan.identity, rows, vectors)
        self.embedded += len(batch)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
