"""The ``openai`` embedder kind: a generation embedded by a server speaking the OpenAI embeddings
API.

It handles generations whose specification names ``provider: openai``
(:mod:`ptah.adapters.spec_generations`): OpenAI itself, or Ollama, vLLM, TEI,
infinity, LiteLLM… by ``base_url``. Its identity parts are the provider, the
model name as sent, the dimensions asked (``null``: the model's own) and the
normalised base URL (:func:`normalised_base_url`), so the same model name on
another server is another generation.

Opening reads the key from the variable ``api_key_env`` names (a missing
variable is :class:`CredentialMissing`, exit 2, naming it); ptah opens an
embedder only when texts must be embedded, so a warm evaluate needs no key.
When ``dimensions`` is not set, opening embeds :data:`PROBE_TEXT` once to
learn the dimension. Vectors are L2-normalised here when ``normalize`` is
true, whatever the server did. The HTTP client is
:mod:`ptah.adapters.embedders.http_client` (httpx, imported only when texts
must be embedded); the generation's ``timeout_s`` bounds each request,
:data:`POLICY` sets the retries.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import numpy as np

from ptah.adapters.embedders.base import l2_normalize, service_key
from ptah.core.spec import GenerationSettings

if TYPE_CHECKING:
    from ptah.adapters.embedders.http_client import Policy

KIND = "openai"
PROBE_TEXT = "ptah probe: the quick brown fox jumps over the lazy dog"
POLICY: Policy | None = (
    None  # the client's retries and request sizes (None: its defaults); tests lower them
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalised_base_url(url: str) -> str:
    """``scheme://host:port/path``: scheme and host lower-cased, the port always written, no
    trailing ``/``.

    The specification refuses credentials, a query and a fragment, so none is here to drop.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = parts.port or _DEFAULT_PORTS.get(scheme, 0)
    return f"{scheme}://{host}:{port}{parts.path.rstrip('/')}"


class OpenAICompatibleKind:
    """Generations with ``provider: openai``; identity: provider, model, dimensions, normalised base
    URL."""

    name = KIND

    def claims(self, settings: GenerationSettings) -> bool:
        return settings.service is not None and settings.service.provider == "openai"

    def identity_parts(
        self, settings: GenerationSettings, root: str, *, cache_dir: Path | None = None
    ) -> dict:
        service = settings.service
        assert service is not None  # claimed only with a service
        return {
            "provider": service.provider,
            "name": settings.model,
            "dimensions": settings.dimension,
            "base_url": normalised_base_url(service.base_url),
        }

    def open(
        self, settings: GenerationSettings, root: str, *, env: Mapping[str, str] | None = None
    ) -> ServiceEmbedder:
        return ServiceEmbedder(settings, os.environ if env is None else env)

    def versions(self) -> dict[str, str | None]:
        # what the server runs cannot be seen from here; the HTTP client does not change a vector
        return {}


class ServiceEmbedder:
    """Embeds through an :class:`EmbeddingsClient`; :meth:`usage` says what it cost, :meth:`probe`
    what it serves."""

    def __init__(
        self, settings: GenerationSettings, env: Mapping[str, str], *, policy: Policy | None = None
    ):
        service = settings.service
        assert service is not None
        key = service_key(service, env, f'generation "{settings.name}": ')
        # the HTTP client (httpx, ssl, threads) is imported only when texts must be embedded:
        # choosing the kind and computing the identity, which every warm evaluate does, need none of
        # it
        from ptah.adapters.embedders.http_client import Connection, EmbeddingsClient, Policy

        self.settings = settings
        connection = Connection(
            key,
            settings.batch_size,
            service.max_concurrency,
            policy or POLICY or Policy(),
            service.timeout_s,
        )
        self.client = EmbeddingsClient(
            service.base_url, settings.model, settings.dimension, connection
        )
        self._probe: np.ndarray | None = None
        if self.client.dimension is None:
            self._probe = self.client.embed([PROBE_TEXT])[0]  # the first probe() answers with it
        assert self.client.dimension is not None, "the client takes it from its first answer"
        self.dimension = int(self.client.dimension)

    def usage(self) -> dict:
        """What this embedder asked of the server since it was opened or last asked this
        (:meth:`Usage.as_dict`)."""
        usage, self.client.usage = self.client.usage, type(self.client.usage)()
        return usage.as_dict(self.client.max_concurrency)

    def probe(self) -> dict:
        """:data:`PROBE_TEXT` embedded now (bare, no prefix, as served) and the model name the
        server answered with."""
        vector, self._probe = self._probe, None
        if vector is None:
            vector = self.client.embed([PROBE_TEXT])[0]
        return {"model": self.client.served_model, "vector": [float(value) for value in vector]}

    def embed_documents(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """The texts' vectors; ``progress(texts answered so far)`` after each request answered."""
        return self._embed(texts, self.settings.document_prefix, progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.settings.query_prefix)

    def _embed(
        self, texts: Sequence[str], prefix: str, progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.client.embed([prefix + text for text in texts], progress)
        return l2_normalize(vectors) if self.settings.normalize else vectors
