"""A build's progress: rows as the model embeds them, and what an interrupted build kept.

Rows. A build commits ``16 x batch_size`` rows at once (:mod:`ptah.services.build`) and calls
``progress(done, total)`` after each commit. A progress callback that also has a ``rows`` attribute
is told ``rows(done, total)`` as rows are embedded inside a batch, before their commit -- when the
embedder reports them: an ``embed_documents(texts, progress=...)`` that calls
``progress(rows_done_in_this_call)`` (the local sentence-transformers model does once per model
batch, an embedding service once per answered request). So a progress bar moves, and has a rate and
an ETA, from the first rows; ``done`` at a commit is what is kept.

Interruption. A build stopped by Ctrl-C (``KeyboardInterrupt``) while it
embeds raises :class:`BuildInterrupted`, still a ``KeyboardInterrupt``, whose
message says how many rows were embedded (what a progress bar showed) and how
many of them its commits kept: "interrupted: 64 of 298 rows embedded, 0 of them
committed; run the same command to resume" (the CLI prints it and exits 130).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ptah.adapters.embedders.base import Embedder


def reports_rows(embedder: Embedder) -> bool:
    """Whether the embedder's ``embed_documents`` takes a ``progress`` callback."""
    try:
        return "progress" in inspect.signature(embedder.embed_documents).parameters
    except (TypeError, ValueError, AttributeError):
        return False


class RowProgress:
    """The embedder, passing each ``embed_documents`` call's row counts on to ``rows(done,
    total)``."""

    def __init__(
        self, embedder: Any, rows: Callable[[int, int], None], total: int
    ):  # reports_rows(embedder)
        self._embedder, self._rows, self._total = embedder, rows, total
        self._done = 0  # rows embedded by earlier calls (each call is one committed batch)

    def embed_documents(self, texts: Sequence[str]):
        start = self._done
        vectors = self._embedder.embed_documents(
            texts, progress=lambda done: self._rows(start + done, self._total)
        )
        self._done += len(texts)
        return vectors

    def __getattr__(self, name: str):
        return getattr(self._embedder, name)


class Embedded:
    """How many rows were embedded so far, committed or not: the furthest ``rows(done, total)`` an
    embedder reported, passed on to ``progress.rows`` where there is one, and each commit's
    count."""

    def __init__(self, progress: Callable | None):
        self.done = 0
        self._rows = getattr(progress, "rows", None)

    def rows(self, done: int, total: int) -> None:
        self.done = max(self.done, done)
        if self._rows is not None:
            self._rows(done, total)


def with_row_progress(embedder: Embedder, embedded: Embedded, total: int) -> Embedder:
    """``embedder`` reporting rows to ``embedded.rows`` when it can; else ``embedder`` itself."""
    return RowProgress(embedder, embedded.rows, total) if reports_rows(embedder) else embedder


class BuildInterrupted(KeyboardInterrupt):
    """Ctrl-C during a build's embedding: ``embedded`` of ``total`` rows to embed were embedded,
    ``kept`` of them committed (the rest are embedded again by the next build)."""

    def __init__(self, kept: int, total: int, embedded: int | None = None):
        embedded = kept if embedded is None else max(embedded, kept)
        super().__init__(
            f"interrupted: {embedded:,} of {total:,} rows embedded, {kept:,} of them committed; "
            "run the same command to resume"
        )
        self.kept, self.total, self.embedded = kept, total, embedded
