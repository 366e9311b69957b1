"""A build's progress: rows as the model embeds them, and what an interrupted build kept.

Rows. 
A build commits ``16 x batch_size`` rows at once (:mod:`ptah.services.build`)
and calls ``progress(done, total)`` after each commit. A progress callback
that also has a ``rows`` attribute is told ``rows(done, total)`` as rows are
embedded inside a batch, before their commit -- when the embedder reports
them: an ``embed_documents(texts, progress=...)`` that calls
``progress(rows_done_in_this_call)`` (the local sentence-transformers model
does once per model batch, an embedding service once per answered request). So a progress bar moves, and has a rate and an
ETA, from the first rows; ``done`` at a commit is what is kept.

Interruption. A build stopped by Ctrl-C (``KeyboardInterrupt``) while it
embeds raises :class:`BuildInterrupted`, still a ``KeyboardInterrupt``, whose
message says how many rows its commits kept: "interrupted: 1,024 of 3,000
rows kept; run the same command to resume" (the CLI prints it and exits 130).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from ptah.adapters.embedders.base import Embedder


def reports_rows(embedder: Embedder) -> bool:
    """Whether the embedder's ``embed_documents`` takes a ``progress`` callback."""
    try:
        return "progress" in inspect.signature(embedder.embed_documents).parameters
    except (TypeError, ValueError, AttributeError):
        return False


class RowProgress:
    """The embedder, passing each ``embed_documents`` call's row counts on to ``rows(done, total)``."""

    def __init__(self, embedder: Any, rows: Callable[[int, int], None], total: int):  # reports_rows(embedder)
        self._embedder, self._rows, self._total = embedder, rows, total
        self._done = 0  # rows embedded by earlier calls (each call is one committed batch)

    def embed_documents(self, texts: Sequence[str]):
        start = self._done
        vectors = self._embedder.embed_documents(texts, progress=lambda done: self._rows(start + done, self._total))
        self._done += len(texts)
        return vectors

    def __getattr__(self, name: str):
        return getattr(self._embedder, name)


def with_row_progress(embedder: Embedder, progress: Callable | None, total: int) -> Embedder:
    """``embedder`` reporting rows to ``progress.rows`` when both can; else ``embedder`` itself."""
    rows = getattr(progress, "rows", None)
    return RowProgress(embedder, rows, total) if rows is not None and reports_rows(embedder) else embedder


class BuildInterrupted(KeyboardInterrupt):
    """Ctrl-C during a build's embedding: ``kept`` of ``total`` rows to embed were committed."""

    def __init__(self, kept: int, total: int):
        super().__init__(f"interrupted: {kept:,} of {total:,} rows kept; run the same command to resume")
        self.kept, self.total = kept, total
