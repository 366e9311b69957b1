"""Building a generation: embed what is new or changed, delete what is gone.

Each source row is compared with what the store holds for the generation's identity, by row
identity and the SHA-256 of the text its template renders now: a row without a vector, or whose
digest differs, is embedded; a vector whose row left the source (or the filter) is deleted;
nothing else is touched, and the model is not loaded when nothing needs embedding.

* Memory: a block of rows and one bit a row (12 MiB at 100,000,000 rows). A first pass over the
  source's digests in key order (:data:`~ptah.services.verify.BLOCK_ROWS` at a time, each block's
  stored digests asked of the store) marks the rows to embed; the vectors gone are found by a merge
  of both sides' row identities in code point order; a second pass in the same snapshot embeds the
  marked rows. No store read transaction stays open while the build writes (it would keep SQLite
  from checkpointing). A store without block digests
  (:func:`~ptah.adapters.stores.base.block_digests`) holds the generation's digests in memory.
* Crash safety: each batch of ``batch_rows`` rows is one transaction, so a killed build leaves the
  store as of its last batch and the next embeds only what is missing. A second build of one
  generation is refused by the store's build lock (:class:`StoreUnavailable`, exit 3).
* Identity: changed settings are a new identity, built afresh, the old one's vectors kept
  (``ptah inference list`` shows them); renaming a generation embeds nothing.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from ptah.adapters.embedders.base import usage_of
from ptah.adapters.sources.base import row_digests
from ptah.adapters.stores.base import block_digests
from ptah.adapters.stores.sqlite import GenerationRecord
from ptah.core.errors import ModelUnavailable
from ptah.core.provenance import text_digest
from ptah.core.spec import SourceRow
from ptah.services.build_progress import BuildInterrupted, Embedded, with_row_progress
from ptah.services.project import Generation, Opened, probe_for_build, refuse_build, stored_probe
from ptah.services.verify import in_blocks, lacking

if TYPE_CHECKING:
    from ptah.adapters.stores.base import Snapshot, Store

Progress = Callable[[int, int], None]
"""Called as ``progress(rows_embedded_so_far, rows_to_embed)``: once before the first batch, then
after each commit (and, when it has a ``rows`` attribute, ``rows(done, total)`` as rows are embedded
between commits: :mod:`ptah.services.build_progress`). A Ctrl-C from then on is
:class:`BuildInterrupted`, saying what was embedded and what committed."""

ROWS_PER_BATCH_FACTOR = 16
"""Default rows per committed batch, as a multiple of the generation's ``batch_size``.

One embedder call per committed batch: large enough that the model's own
length-sorted batching wastes little on padding, small enough that a killed
build loses only seconds of work.
"""


@dataclass(frozen=True)
class BuildSummary:
    """What one build did."""

    generation: str
    identity: str
    rows: int
    embedded: int
    deleted: int
    unchanged: int
    dimension: int
    seconds: float
    usage: dict | None = (
        None  # what a service was asked (requests, retries, tokens, seconds); None: no service
    )

    def as_dict(self) -> dict:
        values = asdict(self)
        if values["usage"] is None:  # a local model's summary reads as before services existed
            del values["usage"]
        return values


def build(
    project: Opened,
    name: str | None = None,
    progress: Progress | None = None,
    *,
    batch_rows: int | None = None,
) -> BuildSummary:
    """Bring generation ``name`` (None: the active one) up to date with the source.

    The model is the one the settings name, opened through the embedder
    registry (tests register theirs there); ``batch_rows`` is how many rows
    each committed batch holds (default ``16 x batch_size``). Returns counts
    of source rows, rows embedded, vectors deleted and rows left unchanged.
    """
    started = time.perf_counter()
    generation = project.generation(name)
    refuse_build(generation)
    settings = generation.settings
    identity = generation.identity.identity
    template = settings.template(project.spec.source)
    batch_rows = batch_rows or ROWS_PER_BATCH_FACTOR * settings.batch_size
    store = project.store(create=True)
    with store.build_lock(identity, settings.name):
        with store.snapshot() as snapshot:
            record = snapshot.generation(identity)
            rows, todo, gone, marks = _plan(project, identity, template, snapshot)
        unchanged = rows - todo

        embedder = None
        if todo or record is None:
            embedder = project.embedder(settings)
            kept = probe_for_build(
                embedder, record.settings if record is not None else {}, generation.name
            )
            record = register_generation(
                store, generation, int(embedder.dimension), library_versions(settings), kept
            )
        else:
            kept = stored_probe(record.settings)
            record = register_generation(
                store, generation, record.dimension, record.library_versions, kept
            )
        deleted = _delete_gone(project, store, identity, gone)

        embedded = 0
        reached = Embedded(progress)  # rows embedded, committed or not
        try:
            if progress is not None:
                progress(0, todo)
            if todo:
                assert embedder is not None, "opened above: there are rows to embed"
                embedder = with_row_progress(embedder, reached, todo)
                for batch in in_blocks(_rows_to_embed(project, template, marks), batch_rows):
                    vectors = embed_batch(embedder, batch, record.dimension)
                    store.write_vectors(
                        identity,
                        [(row.identity, row.key, digest) for row, digest in batch],
                        vectors,
                    )
                    embedded += len(batch)
                    if progress is not None:
                        progress(embedded, todo)
        except KeyboardInterrupt:
            raise BuildInterrupted(embedded, todo, reached.done) from None
        usage = usage_of(embedder)  # None: no service was asked
    project.forget_matrices()
    return BuildSummary(
        generation=settings.name,
        identity=identity,
        rows=rows,
        embedded=embedded,
        deleted=deleted,
        unchanged=unchanged,
        dimension=record.dimension,
        seconds=round(time.perf_counter() - started, 3),
        usage=usage,
    )


def _plan(
    project: Opened, identity: str, template: str, snapshot: Snapshot
) -> tuple[int, int, int, bytearray]:
    """``(rows, rows to embed, vectors gone, marks)``: one pass over the source's digests by blocks.
    New rows and rows whose text digest changed need a vector, marked with a bit each
    (``numpy.packbits`` of each block in turn); the vectors less those covered are gone."""
    reads = block_digests(snapshot)
    vectors = snapshot.vector_count(identity)
    rows = todo = covered = 0
    marks = bytearray()
    for block in in_blocks(row_digests(project.source).digests(template)):
        held = reads.digests_of(identity, [row.identity for row in block]) if vectors else {}
        needs = [held.get(row.identity, ("", ""))[1] != row.digest for row in block]
        marks += np.packbits(needs).tobytes()
        rows, todo, covered = rows + len(block), todo + sum(needs), covered + len(held)
    return rows, todo, vectors - covered, marks


def _delete_gone(project: Opened, store: Store, identity: str, gone: int) -> int:
    """Delete the ``gone`` vectors whose row left the source, a block at a time: the store's row
    identities merged with the source's (each block of stored ones asked of the source when it
    cannot sort its own)."""
    if not gone:
        return 0
    source = row_digests(project.source)
    deleted = 0
    with (
        store.snapshot() as snapshot,
        closing(block_digests(snapshot).stored_in_order(identity)) as stored,
        closing(
            lacking(((row_identity, row_identity) for row_identity, _ in stored), source)
        ) as found,
    ):
        for block in in_blocks(itertools.islice(found, gone)):
            deleted += store.delete_vectors(identity, block)
    return deleted


def _rows_to_embed(
    project: Opened, template: str, marks: bytearray
) -> Iterator[tuple[SourceRow, str]]:
    """The rows :func:`_plan` marked, read again with their text and its digest as they are now.

    Both passes read the source's one snapshot in key order, a block of the
    same size at a time, so they agree row for row; only texts of one block
    are held.
    """
    at = 0
    for block in in_blocks(project.source.rows(template)):
        width = (len(block) + 7) // 8
        needs = np.unpackbits(np.frombuffer(marks, np.uint8, width, at), count=len(block))
        at += width
        yield from ((row, text_digest(row.text)) for row, need in zip(block, needs) if need)


def embed_batch(embedder, batch: list[tuple[SourceRow, str]], dimension: int) -> np.ndarray:
    vectors = np.asarray(embedder.embed_documents([row.text for row, _ in batch]), dtype=np.float32)
    if vectors.shape != (len(batch), dimension):
        raise ModelUnavailable(
            f"the model returned vectors of shape {vectors.shape} for {len(batch)} texts; expected ({len(batch)}, {dimension})."
        )
    if not np.isfinite(vectors).all():
        bad = batch[int(np.flatnonzero(~np.isfinite(vectors).all(axis=1))[0])][0]
        raise ModelUnavailable(
            f"the model returned a vector with NaN or infinite values for key {bad.key!r}."
        )
    return vectors


def register_generation(
    store, generation: Generation, dimension: int, library_versions, probe: dict | None
) -> GenerationRecord:
    settings = generation.settings
    parts = dict(generation.identity.parts)
    record = GenerationRecord(
        identity=generation.identity.identity,
        name=settings.name,
        model=settings.model,
        settings=_settings_dict(settings) | ({"probe": probe} if probe is not None else {}),
        dimension=dimension,
        model_digest=generation.identity.model_digest,
        identity_parts=parts,
        library_versions=dict(library_versions),
    )
    store.register_generation(record)
    return record


def _settings_dict(settings) -> dict:
    values = asdict(settings)
    values.pop("name", None)
    if values.get("service") is None:  # a local model's settings read as before services existed
        values.pop("service", None)
    if (
        values.get("vectors") is None
    ):  # a built generation's settings read as before external ones existed
        values.pop("vectors", None)
    if (
        values.get("backend") == "torch" and values.get("quantize") is None
    ):  # as before backend: existed
        values.pop("backend", None)
        values.pop("quantize", None)
    return values


def library_versions(settings) -> dict:
    from ptah.adapters.embedders.registry import REGISTRY

    return REGISTRY.library_versions(settings)
