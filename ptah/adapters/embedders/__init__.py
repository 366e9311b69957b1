"""Embedders: sentence-transformers (imported lazily) and the deterministic test embedder.

Importing this package imports neither torch nor sentence-transformers; only
building a :class:`SentenceTransformerEmbedder` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ptah.core.spec import GenerationSettings

if TYPE_CHECKING:
    from ptah.adapters.embedders.base import Embedder


def open_embedder(settings: GenerationSettings, root: str) -> Embedder:
    """The embedder for ``settings``: deterministic for ``ptah/deterministic``, else sentence-transformers.

    Raises :class:`ModelUnavailable` when the model cannot be found or loaded offline.
    """
    if settings.is_deterministic:
        from ptah.adapters.embedders.deterministic import DeterministicEmbedder

        return DeterministicEmbedder.from_settings(settings)
    from ptah.adapters.embedders.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(settings, root)
