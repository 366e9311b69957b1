"""The client of a team's search service, on the embedding client's transport
(:class:`~ptah.adapters.embedders.http_client.ServiceClient`: pooled connections, a
whole-request deadline, retries, bounded answers, the key in the ``Authorization`` header only).

``POST {url}`` with ``batch_size`` queries a request::

    {"queries": [{"case": "pricing", "query": "how much is it", "k": 100}, ...]}

and the answer, one ranking a query, in the order asked
(:mod:`ptah.retriever.rankings`)::

    {"results": [{"case": "pricing", "keys": ["42", "17"], "scores": [0.83, 0.61]}, ...]}
"""

from __future__ import annotations

from collections.abc import Sequence

from ptah.adapters.embedders.http_client import Connection, ServiceClient
from ptah.retriever.rankings import BadRanking, Ranking, ranking_of

BYTES_PER_KEY = 256  # a key and its score, quoted, with a server's extras
ANSWER_BYTES = 1024 * 1024


class RetrieverClient(ServiceClient):
    """Asks one search service for each case's ranking (module docs)."""

    service = "retriever service"
    refused = "the answer was refused and the run not measured"

    def rankings(self, asked: Sequence[tuple[str, str, int]]) -> list[Ranking]:
        """Each ``(case, query, k)``'s ranking, in order, ``batch_size`` a request."""
        batches = [
            list(asked[start : start + self.batch_size])
            for start in range(0, len(asked), self.batch_size)
        ]
        answered = self.in_parallel(self._request, batches)
        return [ranking for batch in answered for ranking in batch]

    def _request(self, batch: list[tuple[str, str, int]]) -> list[Ranking]:
        body = {"queries": [{"case": c, "query": q, "k": k} for c, q, k in batch]}
        limit = ANSWER_BYTES + sum(k for _, _, k in batch) * BYTES_PER_KEY
        document = self.document(self.post(body, limit), constants=True)
        results = document.get("results") if isinstance(document, dict) else None
        if not isinstance(results, list):
            self.refuse('answered JSON without "results": [{"case", "keys", "scores"}, ...]')
        if len(results) != len(batch):
            self.refuse(f"answered {len(results)} rankings for {len(batch)} queries")
        rankings = []
        for (case, _, _), result in zip(batch, results):
            named = result.get("case", case) if isinstance(result, dict) else case
            if named != case:
                self.refuse(f"answered case {self.visible(str(named))} where case {case} was asked")
            try:
                rankings.append(ranking_of(result))
            except BadRanking as exc:
                self.refuse(f"{exc} (case {self.visible(case)})")
        return rankings


def connection(key: str | None, batch_size: int, concurrency: int, timeout_s: float) -> Connection:
    """How the client talks to the service, under the embedding client's retry policy."""
    from ptah.adapters.embedders.http_client import Policy

    return Connection(key, batch_size, concurrency, POLICY or Policy(), timeout_s)


POLICY = None  # tests set a Policy of fewer attempts
