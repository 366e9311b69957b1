"""What a rerank stage calls: a :class:`Reranker` scores (query, row text) pairs; a
:class:`RerankerKind` opens one.

A kind is chosen by the stage's ``kind:`` (:class:`ptah.core.spec.RerankSettings`)
in :mod:`ptah.adapters.rerankers.registry`. Opening may import a heavy library
(torch) or read a key; nothing else here does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from ptah.adapters.embedders.base import Embedder
    from ptah.core.spec import RerankSettings


@dataclass(frozen=True)
class RerankContext:
    """What a kind may need besides its settings: ``root`` (the specification's folder: relative
    model paths resolve against it), ``env`` (a service's key variable is read from it) and
    ``embedder`` (a generation's name -> its opened embedder)."""

    root: str
    env: Mapping[str, str]
    embedder: Callable[[str], Embedder]


@runtime_checkable
class Reranker(Protocol):
    """Scores the texts of one query's candidates.

    One member is optional, for rerankers that ask a service (read it through
    :func:`ptah.adapters.embedders.base.usage_of`): ``usage()`` -- a JSON dict
    of what was asked of the service since the last call (``requests``,
    ``retries``, ``documents``, ``server_seconds``, ``backoff_seconds``).
    """

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """One finite float64 score per text, in the texts' order; higher is better. The same for
        the same ``(query, texts)``: the batches a kind scores in depend only on the texts' order
        and ``batch_size``."""
        ...

    def describe(self) -> dict:
        """What scored, as JSON values: ``kind`` and, where known, ``model``, ``model_digest`` and
        library ``versions`` (the report keeps it beside the variant)."""
        ...


@runtime_checkable
class RerankerKind(Protocol):
    """One kind of reranker (``cross-encoder``, ``bi-encoder``, ``service`` or a plug-in's), named
    by ``kind:``."""

    name: str

    def open(self, settings: RerankSettings, context: RerankContext) -> Reranker:
        """The reranker, loaded; :class:`ptah.core.errors.InputError` (exit 2) for a setting it
        lacks, an :class:`~ptah.core.errors.OperationalError` (exit 3) when what it needs cannot be
        had."""
        ...


def batches(count: int, size: int) -> list[range]:
    """``range(count)`` cut in order into ranges of ``size`` (the last shorter): the batches a kind
    scores in."""
    return [range(start, min(count, start + size)) for start in range(0, count, max(1, size))]
