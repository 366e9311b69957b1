"""The team's search the retriever tests gate: a Qdrant collection in local mode, filled with a
generation's vectors read from ptah's store, served over HTTP in the shape of
``ptah.retriever.service`` -- and the hostile answers such a service can give."""

from __future__ import annotations

import json
import threading
import time

import numpy as np

import ptah
from tests.http_servers import FakeService, JsonHandler

COLLECTION = "articles"


class TeamSearch:
    """A Qdrant collection (``:memory:``) of one generation's stored vectors, its queries embedded
    by the generation's own model, served at ``url`` (``faults``/``always``: hostile modes)."""

    def __init__(self, spec, generation: str):
        from qdrant_client import QdrantClient, models

        self.models = models
        self.project = ptah.open_project(spec)
        self.generation = self.project.generation(generation)
        store = self.project._opened.store()
        with store.snapshot() as snapshot:
            matrix = snapshot.matrix(self.generation.identity.identity)
        keys, vectors = list(matrix.keys), np.asarray(matrix.vectors, dtype=np.float32)
        self.dimension = int(vectors.shape[1])
        self.client = QdrantClient(":memory:")
        self.client.create_collection(
            COLLECTION,
            vectors_config=models.VectorParams(
                size=self.dimension, distance=models.Distance.COSINE
            ),
        )
        self.client.upsert(
            COLLECTION,
            points=[
                models.PointStruct(id=i, vector=vector.tolist(), payload={"key": key})
                for i, (key, vector) in enumerate(zip(keys, vectors))
            ],
        )
        self._lock = threading.Lock()
        self.service = FakeService(_handler)
        self.service.httpd.team = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.service.port}/search"

    def search(self, queries: list[str], k: int) -> list[list[tuple[str, float]]]:
        """Each query's top ``k`` rows by cosine, as (key, score): local mode searches exactly."""
        from ptah.services.search import embed_queries

        with self._lock:
            embedder = self.project._opened.embedder(self.generation.settings)
            vectors = embed_queries(embedder, self.generation, queries, self.dimension)
            found = []
            for vector in vectors:
                points = self.client.query_points(
                    COLLECTION,
                    query=vector.tolist(),
                    limit=k,
                    with_payload=True,
                ).points
                found.append([(point.payload["key"], float(point.score)) for point in points])
            return found

    def close(self) -> None:
        self.service.close()
        self.client.close()
        self.project.close()


def _answer(asked: list[dict], found: list[list[tuple[str, float]]], mode: str | None) -> list:
    results = [
        {
            "case": query["case"],
            "keys": [key for key, _ in ranked],
            "scores": [score for _, score in ranked],
        }
        for query, ranked in zip(asked, found)
    ]
    first = results[0]
    if mode == "nan":
        first["scores"][0] = float("nan")
    elif mode == "duplicate":
        first["keys"][1] = first["keys"][0]
    elif mode == "unknown":
        first["keys"][0] = "9999"
    elif mode == "numbers":
        first["keys"][0] = int(first["keys"][0])
    elif mode == "drifted":  # another answer than the collection's: the first two swapped
        first["keys"][:2] = first["keys"][1::-1]
        first["scores"][:2] = [first["scores"][0]] * 2
    elif mode == "scoreless":
        for result in results:
            del result["scores"]
    return results


def _handler(service):
    class Handler(JsonHandler):
        def do_POST(self):
            body = self.body()
            mode = service.next_mode()
            self.record(body, mode)
            if mode == "slow":
                time.sleep(3)
            if mode == "huge":
                self.answer(200, b'{"results": [' + b" " * 5_000_000 + b"]}")
                return
            team = self.server.team  # type: ignore[attr-defined]
            asked = body["queries"]
            found = team.search([q["query"] for q in asked], max(q["k"] for q in asked))
            results = _answer(asked, found, mode)
            if mode == "short":
                results = results[:-1]
            text = json.dumps({"results": results}, allow_nan=True)
            self.answer(200, text.encode())

    return Handler
