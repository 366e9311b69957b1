"""Building a generation: embed what is new or changed, delete what is gone.

The build compares each source row with what the store holds for the
generation's identity, by row identity *and* the SHA-256 of the exact text the
row's template renders to now:

* a row without a vector, or whose text digest differs from the stored one,
  is embedded;
* a vector whose row left the source (or the filter) is deleted;
* everything else is left alone -- the model is not even loaded when nothing
  needs embedding.

Crash safety. Vectors are written in batches of ``batch_rows`` rows, each
batch one transaction; a build killed at any moment (SIGKILL included) leaves
the store as of its last committed batch, and the next build embeds only what
is still missing. Two builds of one generation never run at once: the second
is refused (:class:`StoreUnavailable`, exit 3) by the store's build lock.

Identity. A generation whose settings changed has a new identity: its vectors
are built afresh under it, and the old identity's vectors stay in the store
(``ptah inference list`` shows them). The display name is outside the
identity, so renaming a generation re-registers the name and embeds nothing.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import asdict, dataclass
from typing import Callable, Iterator

import numpy as np

from ptah.adapters.embedders.base import usage_of
from ptah.adapters.stores.sqlite import GenerationRecord
from ptah.core.errors import ModelUnavailable
from ptah.core.identity import text_digest
from ptah.core.spec import SourceRow
from ptah.services.external import refuse_build
from ptah.services.probe import probe_for_build, stored_probe
from ptah.services.project import Generation, Project
from ptah.services.build_progress import BuildInterrupted, Embedded, with_row_progress

Progress = Callable[[int, int], None]
"""Called as ``progress(rows_embedded_so_far, rows_to_embed)``: once before the first batch, then after each commit
(and, when it has a ``rows`` attribute, ``rows(done, total)`` as rows are embedded between commits:
:mod:`ptah.services.build_progress`). A Ctrl-C from then on is :class:`BuildInterrupted`, saying what was embedded and what committed."""

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
    usage: dict | None = None  # what a service was asked (requests, retries, tokens, seconds); None: no service

    def as_dict(self) -> dict:
        values = asdict(self)
        if values["usage"] is None:  # a local model's summary reads as before services existed
            del values["usage"]
        return values


def build(
    project: Project,
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
            stored = snapshot.digests(identity)
        todo, gone, rows = _plan(project, template, stored)
        unchanged = rows - len(todo)
        del stored

        embedder = None
        if todo or record is None:
            embedder = project.embedder(settings)
            kept = probe_for_build(embedder, record.settings if record is not None else {}, generation.name)
            record = register_generation(store, generation, int(embedder.dimension), library_versions(settings), kept)
        else:
            kept = stored_probe(record.settings)
            record = register_generation(store, generation, record.dimension, record.library_versions, kept)
        deleted = store.delete_vectors(identity, gone)

        embedded = 0
        reached = Embedded(progress)  # rows embedded, committed or not
        try:
            if progress is not None:
                progress(0, len(todo))
            if todo:
                embedder = with_row_progress(embedder, reached, len(todo))
                for batch in _batches(_rows_to_embed(project, template, todo), batch_rows):
                    vectors = embed_batch(embedder, batch, record.dimension)
                    store.write_vectors(identity, [(row.identity, row.key, digest) for row, digest in batch], vectors)
                    embedded += len(batch)
                    if progress is not None:
                        progress(embedded, len(todo))
        except KeyboardInterrupt:
            raise BuildInterrupted(embedded, len(todo), reached.done) from None
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


def _plan(project: Project, template: str, stored: dict[str, tuple[str, str]]) -> tuple[set[str], list[str], int]:
    """Which rows need a vector (new, or text digest changed), which vectors are gone, how many rows there are.

    Only row identities are kept, never texts.
    """
    seen: set[str] = set()
    todo: set[str] = set()
    for row in project.source.rows(template):
        seen.add(row.identity)
        held = stored.get(row.identity)
        if held is None or held[1] != text_digest(row.text):
            todo.add(row.identity)
    gone = [row_identity for row_identity in stored if row_identity not in seen]
    return todo, gone, len(seen)


def _rows_to_embed(project: Project, template: str, todo: set[str]) -> Iterator[tuple[SourceRow, str]]:
    """The rows found to need a vector, read again with their text as it is now.

    Reading the source twice keeps only row identities in memory, never every
    text. Both passes read the source's one snapshot, so they agree.
    """
    for row in project.source.rows(template):
        if row.identity in todo:
            yield row, text_digest(row.text)


def _batches(rows: Iterator, size: int) -> Iterator[list]:
    while batch := list(itertools.islice(rows, size)):
        yield batch


def embed_batch(embedder, batch: list[tuple[SourceRow, str]], dimension: int) -> np.ndarray:
    vectors = np.asarray(embedder.embed_documents([row.text for row, _ in batch]), dtype=np.float32)
    if vectors.shape != (len(batch), dimension):
        raise ModelUnavailable(
            f"the model returned vectors of shape {vectors.shape} for {len(batch)} texts; expected ({len(batch)}, {dimension})."
        )
    if not np.isfinite(vectors).all():
        bad = batch[int(np.flatnonzero(~np.isfinite(vectors).all(axis=1))[0])][0]
        raise ModelUnavailable(f"the model returned a vector with NaN or infinite values for key {bad.key!r}.")
    return vectors


def register_generation(store, generation: Generation, dimension: int, library_versions,
                        probe: dict | None) -> GenerationRecord:
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
    if values.get("vectors") is None:  # a built generation's settings read as before external ones existed
        values.pop("vectors", None)
    if values.get("backend") == "torch" and values.get("quantize") is None:  # as before backend: existed
        values.pop("backend", None)
        values.pop("quantize", None)
    return values


def library_versions(settings) -> dict:
    from ptah.adapters.embedders.registry import REGISTRY

    return REGISTRY.library_versions(settings)
