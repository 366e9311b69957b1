"""Embedders: sentence-transformers (imported lazily), the deterministic test embedder, and plugins'
kinds.

The kind that handles a model comes from :mod:`ptah.adapters.embedders.registry`.
Importing this package imports neither torch nor sentence-transformers, nor
loads any plugin; only opening an embedder of such a kind does.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from numbers import Integral
from typing import TYPE_CHECKING

from ptah.core.spec import GenerationSettings

if TYPE_CHECKING:
    from ptah.adapters.embedders.base import Embedder


LOADING: ContextVar[Callable[[str], None] | None] = ContextVar("ptah_loading", default=None)
"""Told "loading all-MiniLM-L6-v2 …" (the model's last path part) just before :func:`open_embedder`
opens a model with a kind that loads it into this process (its ``loads_model`` is true:
sentence-transformers), so that a person knows what the seconds of silence are. The command line
prints it on stderr (not under ``--quiet``); None, the default: nothing is said."""


def open_embedder(settings: GenerationSettings, root: str) -> Embedder:
    """The embedder for ``settings``, opened by the kind that handles its model (announced to
    :data:`LOADING`).

    Raises :class:`ModelUnavailable` when the model cannot be found or loaded
    offline, :class:`UnknownModelKind` when no kind handles it.
    """
    from ptah.adapters.embedders.base import Embedder
    from ptah.adapters.embedders.registry import kind_for
    from ptah.core.errors import PluginError

    kind = kind_for(settings)
    loading = LOADING.get()
    if loading is not None and getattr(kind, "loads_model", False):
        loading(f"loading {settings.model.rstrip('/').rsplit('/', 1)[-1]} …")
    embedder = kind.open(settings, root)
    dimension = getattr(embedder, "dimension", None)
    if (
        not isinstance(embedder, Embedder)
        or not isinstance(dimension, Integral)
        or isinstance(dimension, bool)
        or dimension < 1
    ):
        raise PluginError(
            f'the embedder kind "{kind.name}" opened {embedder!r} for model "{settings.model}"; '
            "open() returns an object with a positive int dimension, embed_documents() and "
            "embed_queries()"
        )
    return embedder
