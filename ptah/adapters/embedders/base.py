"""The one small interface every embedder offers, and the kind that opens it.

Documents and queries are embedded separately so asymmetric models can give
each its own prefix (``document_prefix`` / ``query_prefix``); the embedder
applies the prefix itself, so callers pass the bare texts. Results are
``float32`` matrices of shape ``(len(texts), dimension)``, C-contiguous, and
L2-normalised when the generation's ``normalize`` is true.

An :class:`EmbedderKind` is what a registry holds
(:mod:`ptah.adapters.embedders.registry`): it says which models it handles,
what of a model the generation identity covers, which library versions its
vectors depend on, and opens the :class:`Embedder`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from ptah.core.errors import CredentialMissing

if TYPE_CHECKING:
    from ptah.core.spec import GenerationSettings, ServiceSettings


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors for one generation.

    Two members are optional, for embedders that ask a service (read them through :func:`usage_of`
    and :func:`probe_of`, never directly): ``usage()`` -- a JSON dict of what was asked of the
    server since the embedder was opened or ``usage()`` last called (``requests``, ``retries``,
    ``texts``, ``characters``, ``server_prompt_tokens``, ``server_seconds`` summed over
    ``max_concurrency`` requests in flight, ``backoff_seconds``); ``probe()`` -- ``{"model": served
    name or None, "vector": [floats]}``, a fixed text embedded now, so a later run can tell whether
    the model behind the name changed.
    """

    dimension: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of source rows' texts, ``document_prefix`` applied."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of search queries, ``query_prefix`` applied."""
        ...


@runtime_checkable
class EmbedderKind(Protocol):
    """One kind of embedder, e.g. ``sentence-transformers`` or ``ptah/deterministic``.

    ``name`` is recorded in every generation identity as the model's ``kind``,
    so it never changes once vectors were built with it. Only :meth:`open` may
    import a heavy library (torch and the like); the other methods run on
    every command that names a generation, so they read files and package
    metadata only.
    """

    name: str

    def claims(self, settings: GenerationSettings) -> bool:
        """Whether this kind handles the generation's ``model``."""
        ...

    def identity_parts(
        self, settings: GenerationSettings, root: str, *, cache_dir: Path | None = None
    ) -> dict:
        """What of the model the generation identity covers (JSON values; ``kind`` is added by
        ptah).

        ``root`` is the specification's folder (for relative paths);
        ``cache_dir`` a folder for caches that only save time (``None``: ptah's default).
        """
        ...

    def open(self, settings: GenerationSettings, root: str) -> Embedder:
        """The embedder, loaded; raises :class:`ptah.core.errors.ModelUnavailable` when it cannot
        be."""
        ...

    def versions(self) -> dict[str, str | None]:
        """Installed versions of the libraries its vectors depend on, read without importing
        them."""
        ...


def usage_of(embedder: object) -> dict | None:
    """The embedder's optional ``usage()`` (see :class:`Embedder`); None for one that reports
    none."""
    usage = getattr(embedder, "usage", None)
    return usage() if callable(usage) else None


def probe_of(embedder: object) -> dict | None:
    """The embedder's optional ``probe()`` (see :class:`Embedder`); None for one that offers
    none."""
    probe = getattr(embedder, "probe", None)
    return probe() if callable(probe) else None


def installed_versions(*names: str) -> dict[str, str | None]:
    """``{name: version}`` of installed distributions (``None`` when absent); imports none of
    them."""
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def as_matrix(vectors: object, dimension: int) -> np.ndarray:
    """``vectors`` as a C-contiguous float32 ``(n, dimension)`` matrix (``(0, dimension)`` when
    empty)."""
    matrix = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
    if matrix.size == 0:
        return np.zeros((0, dimension), dtype=np.float32)
    return matrix.reshape(-1, dimension)


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    """Each row scaled to unit length; an all-zero row stays zero."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.ascontiguousarray(
        np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0), dtype=np.float32
    )


def service_key(service: ServiceSettings, env: Mapping[str, str], who: str = "") -> str | None:
    """The key of ``service`` read from the variable its ``api_key_env`` names (None when it names
    none); :class:`CredentialMissing` (exit 2) naming the variable when it is not set. ``who``
    begins the sentence (``generation "docs": ``)."""
    if service.api_key_env is None:
        return None
    key = env.get(service.api_key_env)
    if not key:
        raise CredentialMissing(
            f"{who}the environment variable {service.api_key_env} that should hold the key of "
            f"{service.base_url} is not set; set it, or name another with api_key_env"
        )
    return key
