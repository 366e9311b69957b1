"""The ``service`` reranker: ``POST {base_url}/rerank`` in the API shape most rerank servers speak.

``service.provider`` names the shape (:data:`ptah.core.spec.RERANK_APIS`):

* ``cohere`` (Cohere, Jina, infinity): ``{"model", "query", "documents", "top_n": len(documents),
  "return_documents": false}`` answered by ``{"results": [{"index", "relevance_score"}, ...],
  "model"?}``;
* ``tei`` (text-embeddings-inference, which serves one model): ``{"query", "texts", "truncate":
  true}`` (a text past the model's limit is cut, as a local model cuts it) answered by
  ``[{"index", "score"}, ...]``.

Documents go ``batch_size`` at a time, ``max_concurrency`` requests in flight, on the service
client's policy (:class:`ptah.adapters.embedders.http_client.ServiceClient`; the key read from
``api_key_env``). An answer is refused in one sentence (exit 3) unless it holds exactly one finite
number per document, each index once, from the model asked for when it names one. httpx is
imported only when a reranker is opened.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ptah.adapters.embedders.base import service_key
from ptah.adapters.rerankers.base import RerankContext
from ptah.core.errors import InputError
from ptah.core.spec import RERANK_APIS, RerankSettings

if TYPE_CHECKING:
    from ptah.adapters.embedders.http_client import Policy
    from ptah.adapters.rerankers.rerank_client import RerankClient

KIND = "service"
POLICY: Policy | None = None  # the client's retries (None: its defaults); tests lower them


class ServiceKind:
    name = KIND
    service = True  # asks a rerank service: the specification reads its endpoint

    def open(self, settings: RerankSettings, context: RerankContext) -> ServiceReranker:
        service = settings.service
        if service is None:
            raise InputError(
                "the service reranker needs service: the base_url and api of a rerank server"
            )
        if service.provider not in RERANK_APIS:
            raise InputError(
                f"the service reranker speaks the api {' or '.join(RERANK_APIS)}, not "
                f'"{service.provider}"'
            )
        if service.provider == "cohere" and not settings.model:
            raise InputError(
                "the service reranker with api cohere needs model: the model the server is asked for"
            )
        key = service_key(service, context.env)
        # httpx, ssl and threads only once a service reranks
        from ptah.adapters.embedders.http_client import Connection, Policy
        from ptah.adapters.rerankers.rerank_client import RerankClient

        connection = Connection(
            key,
            settings.batch_size,
            service.max_concurrency,
            POLICY or Policy(),
            service.timeout_s,
        )
        client = RerankClient(service.base_url, settings.model, service.provider, connection)
        return ServiceReranker(settings, client)


class ServiceReranker:
    """Scores through a :class:`RerankClient`; :meth:`usage` says what it cost."""

    def __init__(self, settings: RerankSettings, client: RerankClient):
        self.settings, self.client = settings, client
        self._documents = 0

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        scores = self.client.scores(query, texts)
        self._documents += len(texts)
        return scores

    def usage(self) -> dict:
        """What was asked of the server since it was opened or last asked this."""
        usage, self.client.usage = self.client.usage, type(self.client.usage)()
        documents, self._documents = self._documents, 0
        return {
            "requests": usage.requests,
            "retries": usage.retries,
            "documents": documents,
            "server_seconds": round(usage.server_s, 3),
            "backoff_seconds": round(usage.backoff_s, 3),
        }

    def describe(self) -> dict:
        service = self.settings.service
        assert service is not None
        return {
            "kind": KIND,
            "api": service.provider,
            "model": self.settings.model,
            "endpoint": self.client.endpoint,
        }
